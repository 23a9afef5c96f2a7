#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-06, s71: k_attn_one's s70 defaults under the whole GPU suite, dsv4
tune on the current kernels, the 5-8 token rows of the tuning table, the experts' words transposed: moew2/ ran in s72) as one JSON:
    python3 bench/results/2026-12-06-s71/summary.py > bench/results/mixed-2026-12-06-s71.json
Standard library only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(D := os.path.dirname(os.path.abspath(__file__))))
from summary_lib import (DECODE_OVL_WHAT, attn, call_lines, call_rounds, experts_alone, prefills, suite,  # noqa: E402
                         table_rounds)

H100 = "H100 80GB HBM3, 1,980 MHz (copy 3,021 GB/s in h200t/'s runs); asked of an H200"
out = {
    "session": "s71, 2026-12-06",
    "h200t": {"what": "c34e4e77 (k_attn_one's s70 defaults) against 1f5e2a9 (base): the attention alone (bench_kernels "
                      "--attn-only --batch 1,2,3 --contexts 4096,131072; 64 heads of 512, BF16 rows, reference "
                      "numerics), µs a call by round; then dsv4 tune (tune-dev.json)",
              "machine": H100, "attention_us": table_rounds(D, "h200t", attn),
              "attn_ab": call_lines(D, "h200t", "attn-ab.txt"),
              "tune": json.load(open(os.path.join(D, "h200t", "tune-dev.json")))["attention"]},
    "h200v": {"what": "c34e4e77: the whole GPU suite (scripts/gpu_verify.sh: every CUDA test, the logits byte for byte "
                      "against 1f5e2a9, compute-sanitizer)", "machine": H100, "suite": suite(D, "h200v"),
              "bits": call_lines(D, "h200v", "bits.txt")},
}
if os.path.exists(os.path.join(D, "tun8", "ab.txt")):
    out["tun8"] = {"what": "c34e4e77 with tune8.json (parts32 / 16 rows to 4 tokens, parts64 / 64 rows at 5-8) against "
                           "the built-in table (parts32 / 16 to 8): the attention alone at 4-8 tokens, 4k / 32k / 128k, "
                           "µs a call by round; " + DECODE_OVL_WHAT + " at batch 6 / 8",
                   "machine": H100, "attention_us": table_rounds(D, "tun8", attn),
                   "attn_ab": call_lines(D, "tun8", "attn-ab.txt"), "decode_ms": call_rounds(D, "tun8")}
if os.path.exists(os.path.join(D, "moew", "ab.txt")):
    out["moew"] = {"what": "moew.diff on 827a9bb9 (the experts' FP4 words transposed within each 128-column group, one "
                           "16-byte shared load a row, 64-byte stage rows, the two-row-block reference kernels under "
                           "launch bounds of four blocks an SM; not landed) against c34e4e77's kernels (base): "
                           "test_ops_cuda in four configurations, the logits byte for byte, memcheck on k_moe16; the "
                           "experts alone (bench_kernels --experts-only, reference numerics), µs a call by round; "
                           + DECODE_OVL_WHAT + " at batch 1 / 16; a warm 4,096-token prefill",
                   "machine": "H100 80GB HBM3, 1,980 MHz (copy 3,026 GB/s in moew/'s runs); asked of an H200",
                   "checks": call_lines(D, "moew", "bits.txt") + [ln for ln in call_lines(D, "moew", "san-k_moe16.txt")
                                                                if "ERROR SUMMARY" in ln],
                   "experts_us": experts_alone(D, "moew"), "decode_ms": call_rounds(D, "moew"),
                   "prefill_4096": prefills(os.path.join(D, "moew"))}
if os.path.exists(os.path.join(D, "moew2", "ab.txt")):
    out["moew2"] = {"what": "moew2.diff on 188af2d7 (moew's layout with launch bounds of four blocks an SM on every "
                            "one-tile reference k_moe16; run in s72 and landed as a5b8b567) against c34e4e77's kernels "
                            "(base): test_ops_cuda in four configurations, the logits byte for byte, memcheck on "
                            "k_moe16; the experts alone (bench_kernels --experts-only, reference numerics), µs a call "
                            "by round; " + DECODE_OVL_WHAT + " at batch 1 / 16",
                    "machine": "H100 80GB HBM3, 1,980 MHz; asked of an H200",
                    "checks": call_lines(D, "moew2", "bits.txt") + [
                        ln for ln in call_lines(D, "moew2", "san-k_moe16.txt") if "ERROR SUMMARY" in ln],
                    "experts_us": experts_alone(D, "moew2"), "decode_ms": call_rounds(D, "moew2")}
print(json.dumps(out, indent=1, ensure_ascii=False))
