#!/usr/bin/env python3
"""This directory's figures (session of 2026-12-04, s51: v69 and v70) as one JSON:
    python3 bench/results/2026-12-04-s51/summary.py > bench/results/h200-2026-12-04-v70.json
Reads the decode A/Bs of next/, hcmix/, hcmix2/, final/, tok16/ and bits16/ and the bits checks of hcmix/,
final/, bits/ and bits16/;
standard library only."""
import json
import os
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(D))
from summary_lib import call_rounds, x_floor  # noqa: E402


def lines(call, name):
    p = os.path.join(D, call, name)
    return [ln.strip() for ln in open(p)] if os.path.exists(p) else []


nxt = call_rounds(D, "next")
fin = call_rounds(D, "final")
b16 = call_rounds(D, "bits16")
print(json.dumps({
    "version": "v70",
    "machine": "one NVIDIA H200 per call (calls landed on different machines: compare within a call only)",
    "decode_command": "bench_cpu -m <dsv4 mkmodel --preset flash --layers 8 --sparse> --backend cuda --numerics "
                      "reference --fill-random --prompt 16 --decode 64 --overlap --batch B [--context C]",
    "v69_one8_everywhere": {
        "what": "k_attn_one with 8 heads a block at every part size (DSV4_ATTN_ONE8_ROWS=96, CSA's 96-row parts "
                "too: r96) against v68's bound of 64 rows (r64), the same binary (5bcd680), three rounds",
        "decode_ms": nxt,
        "batch1_x_floor": {v: x_floor(nxt["b1"][v]["from_third_mean"], 1) for v in ("r96", "r64")},
    },
    "v70_hc_post_mix": {
        "what": "hc_post making the next hc_pre's / hc_head's mixing logits (k_hc_mix off the chain) at up to 8 "
                "tokens: hcmix/ (weights staged by four hc_stage passes) and hcmix2/ (by cp.async), mix against "
                "DSV4_HC_POST_MIX=0 (nomix), the same binary, three rounds; final/: after every hc_post (m2, the "
                "default since), after the routed experts only (m1) and never (m0), two rounds",
        "hcmix_decode_ms": call_rounds(D, "hcmix"),
        "hcmix2_decode_ms": call_rounds(D, "hcmix2"),
        "final_decode_ms": fin,
        "batch1_x_floor_final": {v: x_floor(fin["b1"][v]["from_third_mean"], 1) for v in ("m2", "m0")},
        "tok16_what": "the mixing at up to 16 tokens (t16, the default since) against 8 (t8), the same binary: "
                      "tok16/ three rounds, bits16/ two",
        "tok16_decode_ms": call_rounds(D, "tok16"),
        "bits16_decode_ms": b16,
        "batch16_x_floor_bits16": {v: x_floor(b16["b16"][v]["from_third_mean"], 16) for v in ("t16", "t8")},
    },
    "verified": {
        "suite_final": "the whole GPU suite (scripts/gpu_verify.sh) with the mixing after the experts: every test, "
                       "9 memchecks 0 errors (final/suite.txt.gz)",
        "bits_hcmix": lines("hcmix", "bits.txt"),
        "bits_final": lines("final", "bits.txt"),
        "bits_default": lines("bits", "bits.txt"),
        "bits_16_tokens": lines("bits16", "bits.txt"),
    },
}, indent=1))
