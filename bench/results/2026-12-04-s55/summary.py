#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s55: measurements of s54's prepared knobs, three that did not
pay, and the part count of the HCA layers' BF16 compressor projections) as one JSON:
    python3 bench/results/2026-12-04-s55/summary.py > bench/results/h200-2026-12-04-s55.json
Reads the decode A/Bs of next/, exp1/ to exp5/, final/ and ldsm/, final/'s prefills, the suites, ldsm/'s
experts alone and the logits checks;
standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_lines, call_rounds, experts_alone, means, prefills, suite, x_floor  # noqa: E402


final = call_rounds(D, "final")
print(json.dumps({
    "session": "s55, 2026-12-04",
    "machine": "one H200 a call",
    "decode_setup": "8 Flash-shaped layers (dsv4 mkmodel --preset flash --layers 8 --sparse), reference numerics, "
                    "--fill-random, 16-token prompt, 64 decode steps, bench_cpu --overlap; ms a step from the third "
                    "step on; rounds alternating in one call; each folder's run.sh is the call",
    "next": {"what": "s54's prepared call: DSV4_QNR_SIDE=0 (qm: a CSA layer's query heads' norm-RoPE on the main "
                     "queue) against the default (qs); bench_cpu --stagger (stag) against the sequences in step",
             "decode_ms": means(call_rounds(D, "next"))},
    "exp1": {"what": "k_embed16 under programmatic dependent launch (new; emb0: as before) and the routed experts' "
                     "Y memset skipped where every expert is this rank's (new; yz: kept); base: f386fb5",
             "decode_ms": means(call_rounds(D, "exp1")), "bits": call_lines(D, "exp1", "bits.txt")},
    "exp2": {"what": "BF16 linears of 16 row tiles or more at most P parts along K (p8: the default rule, p4, p2)",
             "decode_ms": means(call_rounds(D, "exp2"))},
    "exp3": {"what": "the cap of 4 parts by the weights it takes: t32 (a CSA layer's compressor projections), t16 "
                     "(and an HCA layer's), t8 (and the indexer compressor's and the router's gate); p8: none",
             "decode_ms": means(call_rounds(D, "exp3"))},
    "exp4": {"what": "the review's mends (new: test_ops_cuda passed, logits byte for byte against f386fb5); "
                     "DSV4_QPRIO=1 (qp: stream priorities, the main queue first), t16, both",
             "decode_ms": means(call_rounds(D, "exp4")), "bits": call_lines(D, "exp4", "bits.txt")},
    "exp5": {"what": "the cap on an HCA layer's compressor projections alone (hca: 16-31 row tiles) against t16 "
                     "and none (new); b16s: batch 16 staggered",
             "decode_ms": means(call_rounds(D, "exp5"))},
    "final": {"what": "the session's tree (mends; BF16 weights of 512-1,023 rows at most 4 parts) against "
                      "f386fb5's build (base) and the cap off (nocap); the whole suite with quick memchecks; the "
                      "warm 4,096-token prefill",
              "decode_ms": final,
              "x_floor": {f"b{b}": {v: x_floor(final[f"b{b}"][v]["from_third_mean"], b) for v in ("new", "base")}
                          for b in (1, 16, 64)},
              "prefill_4096": prefills(os.path.join(D, "final")),
              "suite": suite(D, "final")},
    "ldsm": {"what": "k_moe16's weight words by ldmatrix.x4 (ldsm.diff, on b454fe8; not kept): new against b454fe8's "
                     "build (base); the whole suite with quick memchecks, logits byte for byte; the routed experts "
                     "alone in us a call by tokens (bench_kernels --experts-only, reference numerics), two rounds",
             "decode_ms": means(call_rounds(D, "ldsm")),
             "experts_alone_us": experts_alone(D, "ldsm"),
             "bits": call_lines(D, "ldsm", "bits.txt"),
             "suite": suite(D, "ldsm")},
}, indent=1))
