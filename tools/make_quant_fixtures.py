#!/usr/bin/env python3
"""Generate golden QUANTIZED test fixtures: tiny random DeepSeek-V4 checkpoints in the layouts of
the two real releases, with transformers' float64 logits on the exactly dequantized weights.

Usage (from the repository root):

    .venv/bin/python tools/make_quant_fixtures.py [--out tests/fixtures] [--only q_stock,q_mma,q_nvfp4]
                                                  [--max-tries 20] [--skip-decode-check]

Reuses tools/make_fixtures.py (imported as a module, not modified): official config keys, the
official<->transformers name mapping, the random init scheme (keyed by official tensor name),
the seed checks (indexer/router top-k gaps, f32 vs f64, decode vs full, SwiGLU clamp, logit std)
and the from_pretrained cross-check.  Deterministic: running it again reproduces byte-identical
files (same library versions assumed).

Fixtures (MODEL.md §1.1, §2.3-2.5, §2.8):

  q_stock   DeepSeek's stock format.  FP8 E4M3 ("F8_E4M3") for attn.{wq_a,wq_b,wkv,wo_a,wo_b},
            attn.indexer.wq_b, ffn.shared_experts.{w1,w2,w3} (and mtp.0.{e,h}_proj), each with
            `<prefix>.scale` "F8_E8M0" [ceil(out/128), ceil(in/128)] (UE8M0 byte e -> 2^(e-127));
            ONE of them (FP8_F32_SCALE) carries an "F32" block scale instead, as the -Base
            checkpoint does.  Routed experts `ffn.experts.E.w{1,2,3}.weight` are MXFP4: "I8"
            [out, in/2], byte [o][j] = element 2j in the LOW nibble, 2j+1 in the HIGH nibble,
            E2M1 codes, with `.scale` "F8_E8M0" [out, in/32].  Everything else as in tiny_a/b
            (BF16 / F32 / I64).  config.json adds quantization_config and expert_dtype "fp4".
  q_nvfp4   NVIDIA ModelOpt's NVFP4 variant: as stock, except the routed experts of layers
            0..L-1 are NVFP4: `.weight` "U8" [out, in/2] (same nibble packing), `.weight_scale`
            "F8_E4M3" [out, in/16] (row-major, unswizzled), `.weight_scale_2` "F32" [] and
            `.input_scale` "F32" []; W = e2m1 * e4m3(weight_scale) * weight_scale_2.  The MTP
            block mtp.0.* keeps the stock formats (its experts stay MXFP4).  config.json adds the
            ModelOpt keys inside quantization_config; hf_quant_config.json holds the same.
            Layers 0/1 experts sit in the LAST shard, one weight_scale_2 in another shard than its
            weight, and one 16-block (layers.1.ffn.experts.0.w1, row 3, cols 16..31) is shrunk
            so that its E4M3 block scale is subnormal.

meta.json records the seed checks, per-format formulas, the tensor inventory (pattern -> dtype
and shape), quantisation error, encoder-check counts and `dequant_samples` (exact float64
dequantized values at a few positions per format, for unit tests of a decoder).

Quantisation (from the float64 random weights of make_fixtures' init scheme):
  FP8 (E8M0 scale)  per 128x128 block (the last block of a dim may be partial): amax over the
                    block, s = 2^ceil(log2(amax/448)), q = e4m3_rne(clamp(x/s, +-448)).
  FP8 (F32 scale)   s = float32(amax/448) (not a power of two), q = e4m3_rne(clamp(x/s, +-448)).
  MXFP4             per 32 along in: s = 2^ceil(log2(amax/6)), q = e2m1_rne(clamp(x/s, +-6)).
  NVFP4             s2 = float32(amax_tensor/(448*6)); per 16 along in:
                    bs = e4m3_rne(min(amax_block/(6*s2), 448)), q = e2m1_rne(clamp(x/(bs*s2), +-6));
                    input_scale = float32(U(2,20)/(448*6)) (unused by W4A16 engines).
  Round-to-nearest-even everywhere (E2M1: ties to the even code); a negative value keeps its
  sign bit even when it rounds to zero (E4M3 0x80, E2M1 code 8 = -0), as hardware casts do.
  The E4M3 encoder is checked byte for byte against torch's float8_e4m3fn cast, the E2M1
  encoder against an independent float32 bit-manipulation rounding.

Oracle: the shard FILE BYTES are parsed back (own safetensors parser) and every tensor decoded
in float64 from those bytes (own E4M3/E8M0/E2M1 tables); the dequantized values (exact in
float64) are loaded into transformers' DeepseekV4ForCausalLM (float64, eager attention +
eager experts); one full-prompt forward gives logits.bin (T x vocab, float32 LE).  The seed
checks run on that dequantized model.  As an independent check of names/config, the
dequantized weights are also written (F64, official names, no quantization_config) to a
temporary directory and loaded with from_pretrained.
"""

import collections
import copy
import json
import math
import os
import re
import shutil
import struct
import sys
import tempfile

import numpy as np
import torch

import safetensors
import safetensors.torch

from transformers.models.deepseek_v4 import DeepseekV4ForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402

# ----------------------------------------------------------------------------------------
# Fixture definitions
# ----------------------------------------------------------------------------------------

QUANT_CONFIG = {"quant_method": "fp8", "fmt": "e4m3", "scale_fmt": "ue8m0",
                "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
MODELOPT_PRODUCER = {"name": "modelopt", "version": "0.0.0+dsv4-fixture"}
MODELOPT_EXCLUDE = ["*.attn.*", "*.ffn.shared_experts.*", "head", "mtp.*"]

QFIXTURES = {
    "q_stock": dict(
        base_seed=4000,
        T=300,
        prefill=150,                    # 150 % 4 = 2, 150 % 128 = 22
        layout="stock",
        # shard k gets the tensors whose name matches one of its regexes (first match wins)
        shards=[
            (r"^embed\.weight$", r"^layers\.[01]\."),
            (r"^layers\.[23]\.",),
            (r"^head\.weight$", r"^norm\.weight$", r"^hc_head_"),
        ],
        # FP8 weights whose block scale is F32 (as in the -Base checkpoint) instead of E8M0
        f32_scale=["layers.1.attn.wq_a.weight"],
        config=dict(
            vocab_size=256, hidden_size=160, num_hidden_layers=4, num_nextn_predict_layers=0,
            num_attention_heads=8, head_dim=64, qk_rope_head_dim=16, q_lora_rank=96,
            o_groups=4, o_lora_rank=48, sliding_window=32,
            compress_ratios=[0, 4, 128, 4, 0],
            index_n_heads=16, index_head_dim=32, index_topk=16,
            n_routed_experts=16, num_experts_per_tok=4, moe_intermediate_size=64,
            num_hash_layers=2, hc_mult=4,
        ),
    ),
    # the stock format with every dimension the GPU's tensor-core paths take whole (multiples of 128:
    # hidden, expert width, LoRA ranks): the routed experts on the tensor cores (w4a16 and
    # --moe-backend w4a8) end to end against the oracle; the other fixtures' odd sizes take the
    # CUDA-core fallbacks
    "q_mma": dict(
        base_seed=6100,
        T=264,
        prefill=133,                    # 133 % 4 = 1, 133 % 128 = 5
        layout="stock",
        shards=[
            (r"^embed\.weight$", r"^layers\.[01]\."),
            (r"^layers\.[23]\.", r"^head\.weight$", r"^norm\.weight$", r"^hc_head_"),
        ],
        f32_scale=[],
        config=dict(
            vocab_size=256, hidden_size=256, num_hidden_layers=4, num_nextn_predict_layers=0,
            num_attention_heads=4, head_dim=64, qk_rope_head_dim=16, q_lora_rank=128,
            o_groups=2, o_lora_rank=128, sliding_window=32,
            compress_ratios=[0, 4, 128, 4, 0],
            index_n_heads=16, index_head_dim=32, index_topk=16,
            n_routed_experts=16, num_experts_per_tok=4, moe_intermediate_size=128,
            num_hash_layers=1, hc_mult=4,
        ),
    ),
    "q_nvfp4": dict(
        base_seed=5000,
        T=280,
        prefill=139,                    # 139 % 4 = 3, 139 % 128 = 11
        layout="nvfp4",
        # as in NVIDIA's dump, the first layers' experts sit in the LAST shard; one NVFP4
        # weight_scale_2 is deliberately in another shard than its weight
        shards=[
            (r"^embed\.weight$", r"^layers\.[01]\.(?!ffn\.experts\.)"),
            (r"^layers\.3\.", r"^layers\.2\.(?!ffn\.experts\.1\.w2\.weight_scale_2$)", r"^head\.weight$",
             r"^norm\.weight$", r"^hc_head_", r"^mtp\.0\."),
            (r"^layers\.[01]\.ffn\.experts\.", r"^layers\.2\.ffn\.experts\.1\.w2\.weight_scale_2$"),
        ],
        f32_scale=[],
        # (row, col_start, col_end, factor): shrink one 16-block of the float64 source so that its
        # E4M3 block scale is subnormal (exercises e4m3 subnormal decoding of weight_scale)
        tiny_blocks={"layers.1.ffn.experts.0.w1.weight": (3, 16, 32, 2.0 ** -16)},
        config=dict(
            vocab_size=256, hidden_size=96, num_hidden_layers=4, num_nextn_predict_layers=1,
            num_attention_heads=4, head_dim=64, qk_rope_head_dim=16, q_lora_rank=144,
            o_groups=2, o_lora_rank=80, sliding_window=48,
            compress_ratios=[0, 0, 4, 128, 0],
            index_n_heads=16, index_head_dim=32, index_topk=20,
            n_routed_experts=12, num_experts_per_tok=4, moe_intermediate_size=64,
            num_hash_layers=1, hc_mult=3,
        ),
    ),
}

FP8_RE = re.compile(r"^(layers\.\d+|mtp\.0)\.(attn\.(wq_a|wq_b|wkv|wo_a|wo_b)|attn\.indexer\.wq_b|"
                    r"ffn\.shared_experts\.w[123])\.weight$|^mtp\.0\.[eh]_proj\.weight$")
EXPERT_RE = re.compile(r"^(layers\.\d+|mtp\.0)\.ffn\.experts\.\d+\.w[123]\.weight$")

E4M3_MAX = 448.0
E2M1_MAX = 6.0
E2M1_GRID = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def official_config_q(fx):
    off = mf.official_config(fx["config"])
    qc = dict(copy.deepcopy(QUANT_CONFIG))
    if fx["layout"] == "nvfp4":
        n = off["num_hidden_layers"]
        qc.update({
            "quant_algo": "MIXED_PRECISION",
            "moe_quant_algo": "NVFP4",
            "group_size": 16,
            "producer": dict(MODELOPT_PRODUCER),
            "exclude_modules": list(MODELOPT_EXCLUDE),
            "quantized_layers": {f"layers.{L}.ffn.experts": {"quant_algo": "NVFP4", "group_size": 16}
                                 for L in range(n)},
        })
    off["quantization_config"] = qc
    off["expert_dtype"] = "fp4"
    return off


def hf_quant_config(off):
    qc = off["quantization_config"]
    return {"producer": dict(qc["producer"]),
            "quantization": {"quant_algo": qc["quant_algo"],
                             "exclude_modules": list(qc["exclude_modules"]),
                             "quantized_layers": copy.deepcopy(qc["quantized_layers"])}}


def plain_config(off):
    return {k: v for k, v in off.items() if k not in ("quantization_config", "expert_dtype")}


def weight_format(name, fx):
    """'fp8' | 'fp8_f32scale' | 'mxfp4' | 'nvfp4' | None (plain BF16/F32/I64)."""
    if FP8_RE.match(name):
        return "fp8_f32scale" if name in fx["f32_scale"] else "fp8"
    if EXPERT_RE.match(name):
        return "nvfp4" if fx["layout"] == "nvfp4" and name.startswith("layers.") else "mxfp4"
    assert name not in fx["f32_scale"]
    return None


# ----------------------------------------------------------------------------------------
# Number formats: encoders (float64 -> codes) and decoders (codes -> float64)
# ----------------------------------------------------------------------------------------

def pow2_ceil_exp(r):
    """Exact ceil(log2(r)) for positive float64 r (array)."""
    f, e = np.frexp(r)                       # r = f * 2^e, f in [0.5, 1)
    return np.where(f == 0.5, e - 1, e).astype(np.int64)


def e4m3_encode(x):
    """float64 -> E4M3 (fn) byte, round to nearest even, saturating clamp to +-448."""
    x = np.asarray(x, dtype=np.float64)
    sign = np.signbit(x)
    a = np.minimum(np.abs(x), E4M3_MAX)
    code = np.empty(a.shape, dtype=np.int64)
    sub = a < 2.0 ** -6
    code[sub] = np.rint(a[sub] * 2.0 ** 9).astype(np.int64)           # 8 -> 0x08 = 2^-6, continuous
    an = a[~sub]
    _, k = np.frexp(an)
    e = k - 1                                                           # an in [2^e, 2^(e+1))
    mant = np.rint((np.ldexp(an, -e) - 1.0) * 8.0).astype(np.int64)     # 8 carries into the exponent
    code[~sub] = (e + 7) * 8 + mant
    assert code.max(initial=0) <= 0x7E
    return (code | (sign.astype(np.int64) << 7)).astype(np.uint8)


def e4m3_table():
    t = np.empty(256, dtype=np.float64)
    for c in range(256):
        s = -1.0 if c & 0x80 else 1.0
        e, m = (c >> 3) & 15, c & 7
        if e == 15 and m == 7:
            t[c] = np.nan
        elif e == 0:
            t[c] = s * m * 2.0 ** -9
        else:
            t[c] = s * (1.0 + m / 8.0) * 2.0 ** (e - 7)
    return t


E4M3_TABLE = e4m3_table()
E2M1_TABLE = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float64)


def e2m1_encode(x):
    """float64 -> E2M1 nibble code (bit 3 = sign), round to nearest, ties to the even code,
    saturating clamp to +-6."""
    x = np.asarray(x, dtype=np.float64)
    sign = np.signbit(x)
    a = np.minimum(np.abs(x), E2M1_MAX)
    lo = np.searchsorted(E2M1_GRID, a, side="right") - 1               # grid[lo] <= a
    hi = np.minimum(lo + 1, 7)
    dlo = a - E2M1_GRID[lo]
    dhi = E2M1_GRID[hi] - a
    up = (dhi < dlo) | ((dhi == dlo) & (hi % 2 == 0) & (hi != lo))
    idx = np.where(up, hi, lo)
    return (idx | (sign.astype(np.int64) << 3)).astype(np.uint8)


def e2m1_reference(x):
    """Independent E2M1 rounding (for checking e2m1_encode): float32 bit manipulation."""
    a = np.minimum(np.abs(np.asarray(x, dtype=np.float64)), 6.0)
    a32 = a.astype(np.float32)
    assert np.array_equal(a32.astype(np.float64), a), "E2M1 check needs float32-exact inputs"
    bits = a32.view(np.uint32).astype(np.int64)
    # normals (>= 1): keep 1 mantissa bit of 23, round half to even
    keep = ((bits >> 22) & 1)
    rn = (bits + 0x1FFFFF + keep) & ~0x3FFFFF
    val = np.where(a >= 1.0, rn.astype(np.uint32).view(np.float32).astype(np.float64),
                   np.rint(a * 2.0) / 2.0)          # subnormal range: multiples of 0.5
    val = np.minimum(val, 6.0)
    return val


def e8m0_decode(b):
    b = np.asarray(b, dtype=np.int64)
    assert (b != 255).all(), "E8M0 NaN"
    return np.ldexp(1.0, b - 127)


def pack_nibbles(codes):
    """[out, in] nibble codes -> [out, in/2] bytes: element 2j low nibble, 2j+1 high nibble."""
    assert codes.shape[1] % 2 == 0
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)


def unpack_nibbles(packed):
    packed = np.asarray(packed, dtype=np.uint8)
    out = np.empty((packed.shape[0], packed.shape[1] * 2), dtype=np.uint8)
    out[:, 0::2] = packed & 0x0F
    out[:, 1::2] = packed >> 4
    return out


# ----------------------------------------------------------------------------------------
# Quantisers: float64 [out, in] -> stored torch tensors {suffix: tensor}, plus check counters
# ----------------------------------------------------------------------------------------

CHECKS = collections.Counter()


def check_e4m3_vs_torch(v, codes):
    """v: float64 values already clamped to +-448; codes: our encoding."""
    t = torch.from_numpy(np.ascontiguousarray(v)).to(torch.float8_e4m3fn).view(torch.uint8).numpy()
    bad = np.flatnonzero(t.reshape(-1) != codes.reshape(-1))
    assert bad.size == 0, f"E4M3 encoder differs from torch at {bad.size} values, e.g. " \
                          f"{v.reshape(-1)[bad[:5]]} ours {codes.reshape(-1)[bad[:5]]} torch {t.reshape(-1)[bad[:5]]}"
    CHECKS["e4m3_values_checked_against_torch"] += v.size


def check_e2m1(v, codes, bits_reference=False):
    """codes must be a nearest grid point of clamp(|v|, 6), ties to the even code, with v's sign;
    with bits_reference (float32-exact v only) also compare with e2m1_reference."""
    a = np.minimum(np.abs(v), E2M1_MAX).reshape(-1)
    c = codes.reshape(-1).astype(np.int64)
    dist = np.abs(a[:, None] - E2M1_GRID[None, :])
    best = dist.min(axis=1)
    mine = dist[np.arange(a.size), c & 7]
    assert np.array_equal(mine, best), "E2M1 encoder: not a nearest grid point"
    ties = (dist == best[:, None]).sum(axis=1) > 1
    assert ((c[ties] & 7) % 2 == 0).all(), "E2M1 encoder: tie not to the even code"
    assert np.array_equal(c >= 8, np.signbit(v).reshape(-1)), "E2M1 sign bit"
    CHECKS["e2m1_values_checked_nearest_ties_even"] += v.size
    if bits_reference:
        assert np.array_equal(e2m1_reference(v), np.abs(E2M1_TABLE[codes])), "E2M1 vs bit reference"
        CHECKS["e2m1_values_checked_against_f32_bit_rounding"] += v.size


def u8_as(arr, dtype):
    return torch.from_numpy(np.ascontiguousarray(arr, dtype=np.uint8)).view(dtype).contiguous()


def quant_fp8(w, f32_scale=False):
    O, I = w.shape
    bo, bi = -(-O // 128), -(-I // 128)
    codes = np.empty((O, I), dtype=np.uint8)
    sexp = np.empty((bo, bi), dtype=np.int64)
    sf32 = np.empty((bo, bi), dtype=np.float32)
    for r in range(bo):
        for c in range(bi):
            blk = w[r * 128:(r + 1) * 128, c * 128:(c + 1) * 128]
            amax = max(float(np.abs(blk).max()), 1e-30)
            if f32_scale:
                s = np.float32(amax / E4M3_MAX)
                assert s > 0 and np.isfinite(s)
                sf32[r, c] = s
                v = np.clip(blk / np.float64(s), -E4M3_MAX, E4M3_MAX)
            else:
                k = int(pow2_ceil_exp(np.float64(amax / E4M3_MAX)))
                assert -127 <= k <= 127
                sexp[r, c] = k
                v = np.clip(np.ldexp(blk, -k), -E4M3_MAX, E4M3_MAX)
            q = e4m3_encode(v)
            check_e4m3_vs_torch(v, q)
            codes[r * 128:(r + 1) * 128, c * 128:(c + 1) * 128] = q
    out = {"weight": u8_as(codes, torch.float8_e4m3fn)}
    if f32_scale:
        out["scale"] = torch.from_numpy(sf32.copy())
    else:
        out["scale"] = u8_as(sexp + 127, torch.float8_e8m0fnu)
    return out


def quant_mxfp4(w):
    O, I = w.shape
    assert I % 32 == 0
    blk = w.reshape(O, I // 32, 32)
    amax = np.maximum(np.abs(blk).max(axis=2), 1e-30)
    k = pow2_ceil_exp(amax / E2M1_MAX)
    assert (k >= -127).all() and (k <= 127).all()
    v = np.clip(np.ldexp(blk, -k[:, :, None]), -E2M1_MAX, E2M1_MAX).reshape(O, I)
    codes = e2m1_encode(v)
    check_e2m1(v, codes)
    return {"weight": torch.from_numpy(pack_nibbles(codes)).view(torch.int8).contiguous(),
            "scale": u8_as(k + 127, torch.float8_e8m0fnu)}


def quant_nvfp4(w, input_amax):
    O, I = w.shape
    assert I % 16 == 0
    s2 = np.float32(np.abs(w).max() / (E4M3_MAX * E2M1_MAX))
    assert s2 > 0 and np.isfinite(s2)
    s2d = np.float64(s2)
    blk = w.reshape(O, I // 16, 16)
    want = np.minimum(np.abs(blk).max(axis=2) / (E2M1_MAX * s2d), E4M3_MAX)
    bcode = e4m3_encode(want)
    check_e4m3_vs_torch(want, bcode)
    bs = E4M3_TABLE[bcode]
    assert (bs > 0).all(), "NVFP4 block scale rounded to zero"
    v = np.clip(blk / (bs * s2d)[:, :, None], -E2M1_MAX, E2M1_MAX).reshape(O, I)
    codes = e2m1_encode(v)
    check_e2m1(v, codes)
    return {"weight": torch.from_numpy(pack_nibbles(codes)).contiguous(),
            "weight_scale": u8_as(bcode, torch.float8_e4m3fn),
            "weight_scale_2": torch.tensor(s2, dtype=torch.float32),
            "input_scale": torch.tensor(np.float32(input_amax / (E4M3_MAX * E2M1_MAX)), dtype=torch.float32)}


def self_test_codecs():
    """Exhaustive decode tables against torch; encoder spot checks incl. ties and saturation."""
    allb = torch.arange(256, dtype=torch.int64).to(torch.uint8)
    tt = allb.view(torch.float8_e4m3fn).double().numpy()
    assert np.array_equal(np.isnan(tt), np.isnan(E4M3_TABLE))
    ok = ~np.isnan(tt)
    assert np.array_equal(tt[ok], E4M3_TABLE[ok]) and np.array_equal(np.signbit(tt[ok]), np.signbit(E4M3_TABLE[ok]))
    te = allb[:255].view(torch.float8_e8m0fnu).double().numpy()
    assert np.array_equal(te, e8m0_decode(np.arange(255)))
    # every E4M3 code round-trips; midpoints between neighbours round to the even code
    fin = np.array([c for c in range(256) if not np.isnan(E4M3_TABLE[c])])
    assert np.array_equal(e4m3_encode(E4M3_TABLE[fin]) & 0x7F, fin & 0x7F)
    pos = np.array(sorted(set(E4M3_TABLE[:0x7F])))
    mids = (pos[:-1] + pos[1:]) / 2
    check_e4m3_vs_torch(np.concatenate([mids, -mids, pos, [448.0, -448.0]]),
                        e4m3_encode(np.concatenate([mids, -mids, pos, [448.0, -448.0]])))
    rng = np.random.default_rng(12345)
    r = rng.standard_normal(100000) * np.exp2(rng.integers(-12, 9, 100000))
    r = np.clip(r, -448, 448)
    check_e4m3_vs_torch(r, e4m3_encode(r))
    # E2M1: all codes round-trip, midpoints, random
    assert np.array_equal(e2m1_encode(E2M1_TABLE[:8]), np.arange(8))
    m2 = (E2M1_GRID[:-1] + E2M1_GRID[1:]) / 2       # .25 .75 1.25 1.75 2.5 3.5 5
    assert np.array_equal(E2M1_TABLE[e2m1_encode(m2)], [0, 1, 1, 2, 2, 4, 4])
    r = np.round(rng.standard_normal(100000) * 3, 6).astype(np.float32).astype(np.float64)
    check_e2m1(np.clip(r, -6, 6), e2m1_encode(np.clip(r, -6, 6)), bits_reference=True)
    m2 = np.concatenate([m2, -m2, E2M1_GRID, -E2M1_GRID])
    check_e2m1(m2, e2m1_encode(m2), bits_reference=True)
    assert e2m1_encode(np.array([7.0, -100.0])).tolist() == [7, 15]


# ----------------------------------------------------------------------------------------
# safetensors bytes: parse and decode (independent of torch's fp8 dtypes)
# ----------------------------------------------------------------------------------------

ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I64": 8, "I8": 1, "U8": 1, "F8_E4M3": 1, "F8_E8M0": 1}


def parse_st(buf):
    """bytes of one .safetensors file -> {name: (dtype, shape, raw bytes)} (checks the layout)."""
    n = struct.unpack("<Q", buf[:8])[0]
    header = json.loads(buf[8:8 + n])
    data = buf[8 + n:]
    out, spans = {}, []
    for k, v in header.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        assert e - b == math.prod(v["shape"]) * ITEMSIZE[v["dtype"]], k
        spans.append((b, e))
        out[k] = (v["dtype"], list(v["shape"]), data[b:e])
    spans.sort()
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    return out


def raw_array(dt, shape, raw):
    np_dt = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I8": "u1", "U8": "u1",
             "F8_E4M3": "u1", "F8_E8M0": "u1", "BF16": "<u2"}[dt]
    a = np.frombuffer(raw, dtype=np_dt).reshape(shape)
    if dt == "BF16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dt == "F32":
        return a.astype(np.float64)
    return a.copy()


def decode_all(entries):
    """{name: (dtype, shape, raw)} of all shards -> ({weight name: float64/int64 array},
    {weight name: format}); every stored tensor must be consumed exactly once."""
    used = set()
    out, fmts = {}, {}

    def take(n):
        assert n in entries and n not in used, n
        used.add(n)
        return entries[n]

    for name in sorted(entries):
        if not name.endswith(".weight") and name.endswith((".scale", ".weight_scale", ".weight_scale_2",
                                                           ".input_scale")):
            continue
        dt, shape, raw = take(name)
        prefix = name[:-len(".weight")] if name.endswith(".weight") else None
        if dt == "F8_E4M3":
            sdt, sshape, sraw = take(prefix + ".scale")
            O, I = shape
            assert sshape == [-(-O // 128), -(-I // 128)], (name, sshape)
            codes = raw_array(dt, shape, raw)
            assert not np.isnan(E4M3_TABLE[codes]).any(), name
            if sdt == "F8_E8M0":
                s = e8m0_decode(raw_array(sdt, sshape, sraw))
                fmts[name] = "fp8"
            else:
                assert sdt == "F32", (name, sdt)
                s = raw_array(sdt, sshape, sraw)
                assert np.isfinite(s).all() and (s > 0).all()
                fmts[name] = "fp8_f32scale"
            sfull = np.repeat(np.repeat(s, 128, axis=0), 128, axis=1)[:O, :I]
            out[name] = E4M3_TABLE[codes] * sfull
        elif dt == "I8":
            sdt, sshape, sraw = take(prefix + ".scale")
            O, I2 = shape
            assert sdt == "F8_E8M0" and sshape == [O, I2 * 2 // 32], (name, sdt, sshape)
            nib = unpack_nibbles(raw_array(dt, shape, raw))
            s = e8m0_decode(raw_array(sdt, sshape, sraw))
            out[name] = E2M1_TABLE[nib] * np.repeat(s, 32, axis=1)
            fmts[name] = "mxfp4"
        elif dt == "U8":
            O, I2 = shape
            wdt, wshape, wraw = take(prefix + ".weight_scale")
            s2dt, s2shape, s2raw = take(prefix + ".weight_scale_2")
            idt, ishape, iraw = take(prefix + ".input_scale")
            assert wdt == "F8_E4M3" and wshape == [O, I2 * 2 // 16], (name, wdt, wshape)
            assert s2dt == "F32" and s2shape == [] and idt == "F32" and ishape == [], name
            nib = unpack_nibbles(raw_array(dt, shape, raw))
            bs = E4M3_TABLE[raw_array(wdt, wshape, wraw)]
            s2 = float(raw_array(s2dt, s2shape, s2raw))
            isc = float(raw_array(idt, ishape, iraw))
            assert np.isfinite(bs).all() and (bs >= 0).all() and s2 > 0 and isc > 0 and math.isfinite(s2)
            # exact in float64: e2m1 (<= 2 significant bits) * e4m3 (<= 4) * f32 (<= 24)
            out[name] = E2M1_TABLE[nib] * np.repeat(bs, 16, axis=1) * s2
            fmts[name] = "nvfp4"
        else:
            assert dt in ("BF16", "F32", "I64"), (name, dt)
            out[name] = raw_array(dt, shape, raw)
            fmts[name] = None
    assert used == set(entries), set(entries) - used
    return out, fmts


# ----------------------------------------------------------------------------------------
# Build one candidate (seed): quantize, serialise to shard bytes, decode bytes -> model
# ----------------------------------------------------------------------------------------

def shard_index(name, shards):
    for i, pats in enumerate(shards):
        if any(re.search(p, name) for p in pats):
            return i
    raise AssertionError(f"tensor {name} matches no shard")


def build_q(name, fx, seed):
    off = official_config_q(fx)
    poff = plain_config(off)
    mf.check_constraints(name, poff, fx["T"])
    cfg = mf.hf_config(poff)
    torch.manual_seed(seed)
    model = DeepseekV4ForCausalLM(cfg).double().eval()
    sd = model.state_dict()
    hf_shapes = {k: tuple(v.shape) for k, v in sd.items()}
    mapping = mf.hf_to_official_shapes(hf_shapes, poff["moe_intermediate_size"])
    shapes = {k: v[0] for k, v in mapping.items()}
    if poff["num_nextn_predict_layers"]:
        ms = mf.mtp_shapes(poff)
        assert not set(ms) & set(shapes)
        shapes.update(ms)
    for n in fx["f32_scale"]:
        assert FP8_RE.match(n) and n in shapes, n

    stored = {}          # stored tensor name -> torch tensor
    fmts = {}            # weight name -> format
    src = {}             # weight name -> float64 source (before quantisation)
    for n in sorted(shapes):
        shape = tuple(shapes[n])
        arr = mf.random_tensor(seed, n, shape, poff["n_routed_experts"])
        if n in fx.get("tiny_blocks", {}):
            r, c0, c1, fac = fx["tiny_blocks"][n]
            arr[r, c0:c1] *= fac
        f = weight_format(n, fx)
        fmts[n] = f
        if f is None:
            dt = mf.storage_dtype(n, {})
            stored[n] = torch.from_numpy(np.ascontiguousarray(arr)).to(mf.DTYPES[dt]).contiguous()
            continue
        src[n] = arr
        prefix = n[:-len(".weight")]
        if f in ("fp8", "fp8_f32scale"):
            q = quant_fp8(arr, f32_scale=(f == "fp8_f32scale"))
        elif f == "mxfp4":
            q = quant_mxfp4(arr)
        else:
            input_amax = mf.rng_for(seed, prefix + ".input_scale").uniform(2.0, 20.0)
            q = quant_nvfp4(arr, input_amax)
        for suf, t in q.items():
            stored[f"{prefix}.{suf}"] = t

    # serialise exactly as the files will be written
    K = len(fx["shards"])
    groups = [dict() for _ in range(K)]
    for n in sorted(stored):
        groups[shard_index(n, fx["shards"])][n] = stored[n]
    assert all(groups), "empty shard"
    blobs = [safetensors.torch.save(g, metadata={"format": "pt"}) for g in groups]

    # the oracle sees only what the bytes say
    entries = {}
    for b in blobs:
        for k, v in parse_st(b).items():
            assert k not in entries
            entries[k] = v
    deq, fmts2 = decode_all(entries)
    assert set(deq) == set(shapes)
    for n in shapes:
        assert fmts2[n] == fmts[n], (n, fmts2[n], fmts[n])
        assert tuple(deq[n].shape) == tuple(shapes[n]), n
        if fmts[n] is None:
            assert np.array_equal(deq[n], stored[n].to(torch.float64 if stored[n].is_floating_point()
                                                       else torch.int64).numpy()), n

    official = {n: torch.from_numpy(np.ascontiguousarray(deq[n])) for n in mapping}
    hf_sd = mf.official_to_hf(official, mapping, hf_shapes)
    missing, unexpected = model.load_state_dict(hf_sd, strict=True)
    assert not missing and not unexpected
    sd2 = model.state_dict()
    for oname, (shape, hf_name, sl) in mapping.items():
        t = sd2[hf_name] if sl is None else sd2[hf_name][sl[0], sl[1]:sl[2]]
        assert torch.equal(t, official[oname].to(t.dtype)), oname

    rng = np.random.default_rng([seed, 0x1D5])
    ids = torch.from_numpy(rng.integers(0, poff["vocab_size"], size=fx["T"]).astype(np.int64))[None, :]
    return dict(off=off, poff=poff, cfg=cfg, model=model, stored=stored, fmts=fmts, src=src,
                deq=deq, groups=groups, blobs=blobs, mapping=mapping, ids=ids)


# ----------------------------------------------------------------------------------------
# Writing, meta
# ----------------------------------------------------------------------------------------

OUR_FILES = ("config.json", "hf_quant_config.json", "ids.txt", "logits.bin", "meta.json")


def write_q_fixture(outdir, name, fx, b, logits):
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):   # remove only files this script produces
        if (f.startswith("model") and (f.endswith(".safetensors") or f.endswith(".index.json"))) \
                or f in OUR_FILES:
            os.remove(os.path.join(d, f))
    off = b["off"]
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(json.dumps(off, indent=2) + "\n")
    files = ["config.json"]
    if fx["layout"] == "nvfp4":
        with open(os.path.join(d, "hf_quant_config.json"), "w") as f:
            f.write(json.dumps(hf_quant_config(off), indent=2) + "\n")
        files.append("hf_quant_config.json")
    with open(os.path.join(d, "ids.txt"), "w") as f:
        f.write(",".join(str(int(x)) for x in b["ids"][0].tolist()) + "\n")
    logits.numpy().astype("<f4").tofile(os.path.join(d, "logits.bin"))
    K = len(b["blobs"])
    weight_map, total = {}, 0
    for i, (g, blob) in enumerate(zip(b["groups"], b["blobs"])):
        fn = f"model-{i + 1:05d}-of-{K:05d}.safetensors"
        with open(os.path.join(d, fn), "wb") as f:
            f.write(blob)
        files.append(fn)
        for n, t in g.items():
            weight_map[n] = fn
            total += t.numel() * t.element_size()
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        f.write(json.dumps(index, indent=2) + "\n")
    files.append("model.safetensors.index.json")
    for f in files + ["ids.txt", "logits.bin"]:
        os.chmod(os.path.join(d, f), 0o644)

    # re-read the WRITTEN files, resolve every tensor through the index, decode again
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        wm = json.load(f)["weight_map"]
    entries = {}
    per_file = {}
    for fn in sorted(set(wm.values())):
        with open(os.path.join(d, fn), "rb") as f:
            per_file[fn] = parse_st(f.read())
    for n, fn in wm.items():
        entries[n] = per_file[fn][n]
    assert sum(len(v) for v in per_file.values()) == len(wm)
    deq, _ = decode_all(entries)
    for n, v in b["deq"].items():
        assert np.array_equal(deq[n], v) and np.array_equal(np.signbit(deq[n]), np.signbit(v)), n
    # and safetensors' own reader agrees with the stored tensors
    for fn in sorted(set(wm.values())):
        with safetensors.safe_open(os.path.join(d, fn), "pt") as g:
            for k in g.keys():
                t = g.get_tensor(k)
                s = b["stored"][k]
                assert t.dtype == s.dtype and t.shape == s.shape
                assert torch.equal(t.contiguous().view(torch.uint8) if t.dim() else t.reshape(1).view(torch.uint8),
                                   s.contiguous().view(torch.uint8) if s.dim() else s.reshape(1).view(torch.uint8)), k
    return d, files


def dequantized_from_pretrained_check(b, logits):
    """Names/config check: the dequantized weights as F64 (official names, no quantization_config)
    loaded with transformers' from_pretrained must give the oracle logits."""
    tmp = tempfile.mkdtemp(prefix="dsv4_qfx_")
    try:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(b["poff"], f)
        tens = {}
        for n in b["mapping"]:
            a = b["deq"][n]
            tens[n] = torch.from_numpy(np.ascontiguousarray(a)) if a.dtype == np.int64 else \
                torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))
        safetensors.torch.save_file(tens, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
        return mf.from_pretrained_check(tmp, b["ids"], logits)
    finally:
        shutil.rmtree(tmp)


def name_pattern(n):
    n = re.sub(r"^layers\.\d+\.", "layers.L.", n)
    return re.sub(r"\.experts\.\d+\.", ".experts.E.", n)


def inventory(stored, groups):
    inv = collections.defaultdict(set)
    for n, t in stored.items():
        dt = {torch.float8_e4m3fn: "F8_E4M3", torch.float8_e8m0fnu: "F8_E8M0", torch.int8: "I8",
              torch.uint8: "U8", torch.bfloat16: "BF16", torch.float32: "F32", torch.int64: "I64"}[t.dtype]
        inv[name_pattern(n)].add(f"{dt} {list(t.shape)}")
    return {k: sorted(v) for k, v in sorted(inv.items())}


def quant_stats(b):
    """Per format: relative RMS error of the dequantized weights vs the float64 source, plus
    scale ranges.  Informational."""
    acc = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for n, s in b["src"].items():
        f = b["fmts"][n]
        e = acc[f]
        e[0] += float(((b["deq"][n] - s) ** 2).sum())
        e[1] += float((s ** 2).sum())
        e[2] += 1
    res = {f: {"tensors": v[2], "rel_rms_error": mf.sig(math.sqrt(v[0] / v[1]), 3)} for f, v in sorted(acc.items())}
    e8 = [int(x) for n, t in b["stored"].items() if t.dtype == torch.float8_e8m0fnu
          for x in t.view(torch.uint8).reshape(-1).tolist()]
    res["e8m0_scale_byte_range"] = [min(e8), max(e8)]
    s2 = [float(t) for n, t in b["stored"].items() if n.endswith(".weight_scale_2")]
    if s2:
        res["nvfp4_weight_scale_2_range"] = [mf.sig(min(s2)), mf.sig(max(s2))]
        ws = np.concatenate([t.view(torch.uint8).numpy().reshape(-1) for n, t in b["stored"].items()
                             if n.endswith(".weight_scale")])
        res["nvfp4_weight_scale_e4m3_byte_range"] = [int(ws.min()), int(ws.max())]
        res["nvfp4_weight_scale_subnormal_count"] = int(((ws & 0x78) == 0).sum())
    w8 = np.concatenate([t.view(torch.uint8).numpy().reshape(-1) for n, t in b["stored"].items()
                         if n.endswith(".weight") and t.dtype == torch.float8_e4m3fn])
    res["fp8_weight_subnormal_code_fraction"] = mf.sig(float(((w8 & 0x78) == 0).mean()), 3)
    res["fp8_weight_max_abs_code_count"] = int(((w8 & 0x7F) == 0x7E).sum())
    nib = np.zeros(16, dtype=np.int64)
    for n, t in b["stored"].items():
        if t.dtype in (torch.int8, torch.uint8) and n.endswith(".weight"):
            nib += np.bincount(unpack_nibbles(t.view(torch.uint8).numpy()).reshape(-1), minlength=16)
    res["e2m1_code_histogram"] = nib.tolist()
    return res


def partial_blocks(b):
    out = []
    for n in sorted(b["src"]):
        if b["fmts"][n] in ("fp8", "fp8_f32scale"):
            O, I = b["src"][n].shape
            if O % 128 or I % 128:
                out.append(f"{n} [{O},{I}]")
    return out


def dequant_samples(b, fx):
    """A few exactly dequantized weights (float64, JSON round-trips exactly) per quantized format,
    including the last row/column (partial FP8 blocks), for unit tests of the decoders."""
    picks = []
    by_fmt = collections.defaultdict(list)
    for n in sorted(b["src"]):
        by_fmt[b["fmts"][n]].append(n)
    for f in sorted(by_fmt):
        picks.append(by_fmt[f][0])
        picks.append(by_fmt[f][-1])
    picks += [n for n in fx.get("tiny_blocks", {})] + list(fx["f32_scale"])
    out = {}
    for n in sorted(set(picks)):
        w = b["deq"][n]
        O, I = w.shape
        pos = [(0, 0), (0, 1), (1, 0), (O - 1, I - 1), (O // 2, I // 3), (O - 1, 0), (0, I - 1)]
        if n in fx.get("tiny_blocks", {}):
            r, c0, c1, _ = fx["tiny_blocks"][n]
            pos += [(r, c) for c in range(c0, c1)]
        out[n] = {"format": b["fmts"][n], "shape": [O, I],
                  "values": [[o, i, float(w[o, i])] for o, i in dict.fromkeys(pos)]}
    return out


def make_q_fixture(outdir, name, fx, max_tries, do_decode):
    def build_eval(seed):
        CHECKS.clear()
        self_test_codecs()
        b = build_q(name, fx, seed)
        logits, res, reasons = mf.evaluate(name, fx, b["cfg"], b["model"], b["ids"], do_decode)
        return b, logits, res, reasons

    b, logits, res, seed, rejected = mf.search_seed(name, fx, max_tries, build_eval)

    d, files = write_q_fixture(outdir, name, fx, b, logits.float())
    fp_diff, n_fp32 = dequantized_from_pretrained_check(b, logits)
    print(f"[{name}] from_pretrained (dequantized F64 copy) vs oracle max |diff| = {fp_diff:.3g}", flush=True)
    assert fp_diff < 1e-4, f"{name}: from_pretrained logits differ by {fp_diff}"

    off = b["off"]
    nv = fx["layout"] == "nvfp4"
    fmt_counts = collections.Counter(f or "plain" for f in b["fmts"].values())
    formats = {
        "fp8": {"applies_to": "attn.{wq_a,wq_b,wkv,wo_a,wo_b}, attn.indexer.wq_b, ffn.shared_experts.{w1,w2,w3}"
                              + (", mtp.0.{e_proj,h_proj}" if off["num_nextn_predict_layers"] else "")
                              + " (layers and mtp.0)",
                "weight": "<prefix>.weight F8_E4M3 [out, in]",
                "scale": "<prefix>.scale F8_E8M0 [ceil(out/128), ceil(in/128)]; byte e -> 2^(e-127)",
                "dequant": "W[o][i] = e4m3(weight[o][i]) * scale[o/128][i/128]",
                "quantize": "per 128x128 block (last block of a dim partial): s = 2^ceil(log2(amax/448)), "
                            "q = e4m3_rne(clamp(x/s, -448, 448))"},
        "mxfp4": {"applies_to": ("mtp.0.ffn.experts.E.{w1,w2,w3}" if nv else
                                 "ffn.experts.E.{w1,w2,w3} (layers" +
                                 (" and mtp.0)" if off["num_nextn_predict_layers"] else ")")),
                  "weight": "<prefix>.weight I8 [out, in/2]; byte [o][j]: element 2j = low nibble, 2j+1 = high nibble",
                  "scale": "<prefix>.scale F8_E8M0 [out, in/32]",
                  "e2m1_table": E2M1_TABLE.tolist(),
                  "dequant": "W[o][i] = e2m1(nibble) * 2^(scale[o][i/32]-127)",
                  "quantize": "per 32 along in: s = 2^ceil(log2(amax/6)), q = e2m1_rne(clamp(x/s, -6, 6)), "
                              "ties to even code, sign bit kept for negatives rounding to 0 (code 8)"},
    }
    if fx["f32_scale"]:
        formats["fp8_f32scale"] = {
            "applies_to": fx["f32_scale"],
            "scale": "<prefix>.scale F32 [ceil(out/128), ceil(in/128)] (as in the -Base checkpoint)",
            "dequant": "W[o][i] = e4m3(weight[o][i]) * scale[o/128][i/128] (not a power of two: the "
                       "product is exact in float64, NOT always in float32)",
            "quantize": "s = float32(amax/448), q = e4m3_rne(clamp(x/s, -448, 448))"}
    if nv:
        formats["nvfp4"] = {
            "applies_to": "layers.L.ffn.experts.E.{w1,w2,w3} for every L in 0..num_hidden_layers-1",
            "weight": "<prefix>.weight U8 [out, in/2], same nibble packing and E2M1 code as mxfp4",
            "weight_scale": "<prefix>.weight_scale F8_E4M3 [out, in/16], row-major, unswizzled",
            "weight_scale_2": "<prefix>.weight_scale_2 F32 [] (0-d), per tensor; w1 and w3 of an expert "
                              "have DIFFERENT values here (each tensor's own amax)",
            "input_scale": "<prefix>.input_scale F32 [] (0-d), positive, unused by weight-only dequant",
            "dequant": "W[o][i] = e2m1(nibble) * e4m3(weight_scale[o][i/16]) * weight_scale_2 (exact in float64; "
                       "in float32 one rounding of the last product)",
            "quantize": "s2 = float32(amax_tensor/2688); bs = e4m3_rne(min(amax_block16/(6*s2), 448)); "
                        "q = e2m1_rne(clamp(x/(bs*s2), -6, 6))"}
    meta = {
        "fixture": name,
        "generator": "tools/make_quant_fixtures.py",
        "layout": "DeepSeek stock FP8 + MXFP4" if not nv else
                  "NVIDIA ModelOpt NVFP4 routed experts (layers), stock FP8 elsewhere, MXFP4 MTP experts",
        "seed": seed,
        "rejected_seeds": rejected,
        "T": fx["T"],
        "vocab": off["vocab_size"],
        "ids_file": "ids.txt",
        "logits_file": "logits.bin",
        "logits_layout": "T x vocab, little-endian float32, row t = next-token logits after token t",
        "oracle": "transformers DeepseekV4ForCausalLM in float64 (eager attention + eager experts) holding the "
                  "EXACT float64 dequantization of the stored bytes (decoded from the written files), one "
                  "full-prompt forward with use_cache=False; no FP8 activation quantisation, no FP8/FP4 "
                  "simulation, no MTP",
        **mf.result_meta(res, fx, "from_pretrained_dequantized_f64_vs_oracle_max_abs_diff", fp_diff),
        "init": "make_fixtures.random_tensor (float64 source, keyed by official name), then quantized as below; "
                "plain tensors rounded to BF16/F32 as in tiny_a",
        "quantization": {
            "formats": formats,
            "weight_format_counts": dict(sorted(fmt_counts.items())),
            "exceptions": {"f32_block_scale": [n[:-len(".weight")] + ".scale" for n in fx["f32_scale"]]},
            "fp8_matrices_with_partial_blocks": partial_blocks(b),
            "stats": quant_stats(b),
            "encoder_checks": dict(sorted(CHECKS.items())),
            "dequant_samples": dequant_samples(b, fx),
            "rounding": "round to nearest even; saturating clamp before rounding; negative values keep the "
                        "sign bit when they round to zero (E4M3 0x80, E2M1 code 8)",
        },
        "sharding": {"files": sorted(set(f for f in files if f.endswith(".safetensors"))),
                     "rules": [list(s) for s in fx["shards"]],
                     "note": "always resolve tensor -> file through model.safetensors.index.json" +
                             ("; layers.0/1 routed experts are in the LAST shard and "
                              "layers.2.ffn.experts.1.w2.weight_scale_2 is in another shard than its weight"
                              if nv else "")},
        "tensor_inventory": inventory(b["stored"], b["groups"]),
        "n_tensors": len(b["stored"]),
        "mtp_tensors": sum(1 for n in b["stored"] if n.startswith("mtp.")),
        "files": {f: {"bytes": os.path.getsize(os.path.join(d, f)), "sha256": mf.sha256(os.path.join(d, f))}
                  for f in files + ["ids.txt", "logits.bin"]},
        "versions": mf.versions(),
    }
    with open(os.path.join(d, "meta.json"), "w") as f:
        f.write(json.dumps(meta, indent=2) + "\n")
    os.chmod(os.path.join(d, "meta.json"), 0o644)
    return d


def main():
    mf.cli_main(__doc__, QFIXTURES, make_q_fixture)


if __name__ == "__main__":
    main()
