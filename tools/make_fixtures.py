#!/usr/bin/env python3
"""Generate golden test fixtures for the dsv4 engine from tiny random DeepSeek-V4 models.

Usage (from the repository root):

    .venv/bin/python tools/make_fixtures.py [--out tests/fixtures] [--only tiny_a,tiny_b,tiny_c]
                                            [--max-tries 20] [--skip-decode-check]

Needs torch (CPU is enough), transformers >= 5.8 (with `transformers.models.deepseek_v4`),
safetensors and numpy.  The output is deterministic: running the script again reproduces
byte-identical files (same library versions assumed).

For every fixture `NAME` it writes `OUT/NAME/`:

  config.json          (tiny_a, tiny_b) the OFFICIAL DeepSeek-V4 config keys (as in the released config.json,
                       MODEL.md §1.1, without quantization_config), NOT transformers'
                       save_pretrained output.
  model.safetensors    (tiny_a) or model-0000N-of-0000K.safetensors + model.safetensors.index.json
                       (tiny_b): random weights under the official checkpoint names (MODEL.md
                       §2.2-2.4, no `model.` prefix, nn.Linear [out, in] shapes).  Float weights
                       are BF16 where the official dtype is BF16, FP8 or FP4 (FP8/FP4 are not
                       used yet), F32 where it is F32, I64 for ffn.gate.tid2eid; meta.json lists
                       the deliberate exceptions (F32/F16 in tiny_b).  tiny_b also carries
                       random `mtp.0.*` tensors (ignored by transformers).
  (tiny_c instead)     the TRANSFORMERS layout: written by transformers' own
                       `DeepseekV4ForCausalLM.save_pretrained(dir, safe_serialization=True,
                       max_shard_size=...)` of a float32 model whose state_dict was randomised in
                       place (same init scheme, keyed by the official names): config.json and
                       generation_config.json as transformers writes them (layer_types,
                       mlp_layer_types, compress_rates, rope_parameters {main, compress},
                       partial_rotary_factor, ...), model-0000N-of-0000K.safetensors +
                       model.safetensors.index.json with transformers' reverse-converted names
                       (`model.` prefix + official layer names, `model.embed_tokens.weight`,
                       `model.hc_head.hc_fn`, `model.norm.weight`, `head.weight`,
                       `model.layers.L.attn.norm.weight` for the official attn.kv_norm.weight,
                       per-expert `model.layers.L.ffn.experts.E.w{1,2,3}.weight`), every float
                       tensor F32, tid2eid I64.  meta.json lists the saved name patterns.  The
                       script checks that the files hold exactly the generated values.
  ids.txt              the prompt: T token ids, comma separated, one line.
  logits.bin           T x vocab little-endian float32; row t = next-token logits after token t,
                       from ONE full-prompt forward of transformers' DeepseekV4ForCausalLM in
                       float64 (eager attention, eager experts) on exactly the stored weight
                       values.
  meta.json            seed, sizes, measured quality numbers (see below), dtype exceptions,
                       library versions.

Seed selection (MODEL.md §9): a seed is accepted only if
  * the smallest relative gap between the k-th and (k+1)-th largest VISIBLE lightning-indexer
    score, over every query row (with more than index_topk visible rows) of every ratio-4
    layer, is >= 1e-5 (relative to the row's max |score|),
  * the same holds for the MoE router selection (scores + bias) of every non-hash layer,
  * float32 and float64 full-forward logits agree within 1e-4 (max abs),
  * prefill of a prefix + one-token decode steps (DynamicCache) agrees with the full forward
    within 1e-4,
  * logits are finite with std in [0.5, 2],
  * the SwiGLU clamp (gate > 10 or |up| > 10) fires for >= 1% of routed-expert elements in at
    least one layer.
Otherwise the next seed is tried.  After writing, the checkpoint is re-loaded with
`DeepseekV4ForCausalLM.from_pretrained` (transformers' own official-name conversion) and its
logits are compared with the oracle as an independent check of names, shapes and config.

Numerics note: transformers' "float64" model still does some internal math in float32
(weighted/unweighted RMSNorm normalisation, the mHC mixing coefficients, indexer scores,
compressor softmax, RoPE angles), so the oracle is float64 except for float32-rounding there.
It implements none of the FP8/FP4 simulations of MODEL.md §3.10 nor FP8 activation
quantisation: compare an engine against these fixtures with those disabled.
"""

import argparse
import collections
import copy
import hashlib
import json
import os
import re
import sys
import time
import zlib

import numpy as np
import torch

import safetensors
from safetensors.torch import save_file

import transformers
from transformers.models.deepseek_v4 import DeepseekV4Config, DeepseekV4ForCausalLM
from transformers.models.deepseek_v4 import modeling_deepseek_v4 as hfm

# ----------------------------------------------------------------------------------------
# Fixture definitions
# ----------------------------------------------------------------------------------------

ROPE_SCALING = {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536,
                "beta_fast": 32, "beta_slow": 1}

FIXTURES = {
    "tiny_a": dict(
        base_seed=1000,
        T=300,
        prefill=150,            # decode check: prefill 150 (150 % 4 = 2), then 150 decode steps
        shards=None,            # one file model.safetensors
        dtype_exceptions={},
        config=dict(
            vocab_size=512, hidden_size=128, num_hidden_layers=6, num_nextn_predict_layers=0,
            num_attention_heads=8, head_dim=64, qk_rope_head_dim=16, q_lora_rank=64,
            o_groups=4, o_lora_rank=32, sliding_window=32,
            compress_ratios=[0, 0, 4, 128, 4, 128, 0],
            index_n_heads=16, index_head_dim=32, index_topk=16,
            n_routed_experts=16, num_experts_per_tok=4, moe_intermediate_size=32,
            num_hash_layers=3, hc_mult=4,
        ),
    ),
    "tiny_b": dict(
        base_seed=2000,
        T=520,
        prefill=259,            # 259 % 4 = 3, 259 % 128 = 3
        # shard k gets the tensors whose name matches one of its prefixes
        shards=[
            ("embed.weight", "layers.0.", "layers.1."),
            ("layers.2.", "layers.3.", "layers.4."),
            ("head.weight", "norm.weight", "hc_head_", "mtp.0."),
        ],
        # official BF16/FP8 tensors deliberately stored in another float dtype
        dtype_exceptions={
            r"^embed\.weight$": "F32",
            r"^head\.weight$": "F16",
            r"^layers\.\d+\.attn\.wo_b\.weight$": "F16",
            r"^layers\.2\.attn\.compressor\.wkv\.weight$": "F32",
            r"^layers\.0\.attn_norm\.weight$": "F16",
            r"^layers\.3\.ffn\.shared_experts\.w2\.weight$": "F32",
        },
        config=dict(
            vocab_size=384, hidden_size=96, num_hidden_layers=5, num_nextn_predict_layers=1,
            num_attention_heads=6, head_dim=64, qk_rope_head_dim=16, q_lora_rank=48,
            o_groups=2, o_lora_rank=48, sliding_window=64,
            compress_ratios=[0, 4, 128, 4, 128, 0],
            index_n_heads=16, index_head_dim=32, index_topk=24,
            n_routed_experts=12, num_experts_per_tok=6, moe_intermediate_size=48,
            num_hash_layers=2, hc_mult=3,
        ),
    ),
    # written by transformers' own save_pretrained (see hf_native_config / write_hf_fixture)
    "tiny_c": dict(
        base_seed=3000,
        T=280,                      # 280 // 64 = 4 HCA rows, 280 // 4 = 70 CSA rows > index_topk
        prefill=139,                # 139 % 4 = 3, 139 % 64 = 11
        layout="transformers",
        max_shard_size="700KB",     # -> several shards + model.safetensors.index.json
        dtype_exceptions={},
        config=dict(                # transformers-native DeepseekV4Config keys
            vocab_size=320, hidden_size=64, num_hidden_layers=5, num_nextn_predict_layers=0,
            num_attention_heads=4, num_key_value_heads=1, head_dim=32, partial_rotary_factor=0.25,
            q_lora_rank=32, o_groups=2, o_lora_rank=16, sliding_window=24,
            layer_types=["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention",
                         "compressed_sparse_attention", "heavily_compressed_attention"],
            compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 64},
            mlp_layer_types=["hash_moe", "hash_moe", "moe", "moe", "moe"],
            index_n_heads=16, index_head_dim=16, index_topk=12,
            n_routed_experts=10, n_shared_experts=1, num_experts_per_tok=3, moe_intermediate_size=24,
            scoring_func="sqrtsoftplus", norm_topk_prob=True, routed_scaling_factor=2.0, swiglu_limit=7.0,
            hc_mult=2, hc_sinkhorn_iters=12, hc_eps=1e-6, rms_norm_eps=1e-6,
            rope_theta=10000, compress_rope_theta=160000,
            rope_parameters={
                "main": {"rope_type": "default", "rope_theta": 10000, "partial_rotary_factor": 0.25},
                "compress": {"rope_type": "yarn", "rope_theta": 160000, "partial_rotary_factor": 0.25,
                             "factor": 16, "original_max_position_embeddings": 65536,
                             "beta_fast": 32, "beta_slow": 1, "attention_factor": 1.0},
            },
            max_position_embeddings=1048576, hidden_act="silu", attention_bias=False, attention_dropout=0.0,
            tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, initializer_range=0.02, use_cache=True,
        ),
    ),
    # transformers-native too, the shapes tools/sweep_oracle.py found the others do not cover: a prompt
    # shorter than one state page (256 tokens), norm_topk_prob false (transformers renormalises anyway),
    # one hyper-connection stream, compress rates 8 / 32, hash layers between top-k ones, index keys of 16
    # (not a multiple of the FP4 block), one output group, the compressed layers' RoPE without YaRN
    # (transformers' default)
    "tiny_d": dict(
        base_seed=7000,
        T=200,                      # 200 // 32 = 6 HCA rows, 200 // 8 = 25 CSA rows > index_topk
        prefill=97,                 # 97 % 8 = 1, 97 % 32 = 1
        layout="transformers",
        max_shard_size="700KB",
        dtype_exceptions={},
        config=dict(
            vocab_size=256, hidden_size=64, num_hidden_layers=5, num_nextn_predict_layers=0,
            num_attention_heads=8, num_key_value_heads=1, head_dim=32, partial_rotary_factor=0.25,
            q_lora_rank=32, o_groups=1, o_lora_rank=24, sliding_window=16,
            layer_types=["compressed_sparse_attention", "sliding_attention", "heavily_compressed_attention",
                         "compressed_sparse_attention", "heavily_compressed_attention"],
            compress_rates={"compressed_sparse_attention": 8, "heavily_compressed_attention": 32},
            mlp_layer_types=["moe", "hash_moe", "moe", "hash_moe", "moe"],
            index_n_heads=16, index_head_dim=16, index_topk=10,
            n_routed_experts=9, n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=24,
            scoring_func="sqrtsoftplus", norm_topk_prob=False, routed_scaling_factor=2.5, swiglu_limit=5.0,
            hc_mult=1, hc_sinkhorn_iters=3, hc_eps=1e-6, rms_norm_eps=1e-5,
            rope_theta=10000, compress_rope_theta=160000,
            rope_parameters={
                "main": {"rope_type": "default", "rope_theta": 10000, "partial_rotary_factor": 0.25},
                "compress": {"rope_type": "default", "rope_theta": 160000, "partial_rotary_factor": 0.25},
            },
            max_position_embeddings=1048576, hidden_act="silu", attention_bias=False, attention_dropout=0.0,
            tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, initializer_range=0.02, use_cache=True,
        ),
    ),
}

# Acceptance thresholds
MIN_INDEXER_GAP = 1e-5
MIN_ROUTER_GAP = 1e-5
MAX_F32_DIFF = 1e-4
MAX_DECODE_DIFF = 1e-4
MIN_CLAMP_FRAC = 0.01
LOGIT_STD_RANGE = (0.5, 2.0)

# Expert weight gains: pre-activations of w1/w3 get std ~EXPERT_GAIN (inputs are RMS-normed),
# so the SwiGLU clamp at 10 fires for a few % of elements; silu(min(g,10))*clamp(u) then has
# RMS ~16 for gain 5, which w2's std compensates.
EXPERT_GAIN = 5.0
EXPERT_ACT_RMS = 16.0

DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "I64": torch.int64}


def official_config(spec):
    """The official config.json keys (MODEL.md §1.1 order), with tiny shapes from `spec`."""
    c = spec
    return {
        "architectures": ["DeepseekV4ForCausalLM"],
        "model_type": "deepseek_v4",
        "vocab_size": c["vocab_size"],
        "hidden_size": c["hidden_size"],
        "num_hidden_layers": c["num_hidden_layers"],
        "num_nextn_predict_layers": c["num_nextn_predict_layers"],
        "num_attention_heads": c["num_attention_heads"],
        "num_key_value_heads": 1,
        "head_dim": c["head_dim"],
        "qk_rope_head_dim": c["qk_rope_head_dim"],
        "q_lora_rank": c["q_lora_rank"],
        "o_groups": c["o_groups"],
        "o_lora_rank": c["o_lora_rank"],
        "sliding_window": c["sliding_window"],
        "compress_ratios": list(c["compress_ratios"]),
        "compress_rope_theta": 160000,
        "rope_theta": 10000,
        "rope_scaling": dict(ROPE_SCALING),
        "max_position_embeddings": 1048576,
        "index_n_heads": c["index_n_heads"],
        "index_head_dim": c["index_head_dim"],
        "index_topk": c["index_topk"],
        "n_routed_experts": c["n_routed_experts"],
        "n_shared_experts": 1,
        "num_experts_per_tok": c["num_experts_per_tok"],
        "moe_intermediate_size": c["moe_intermediate_size"],
        "scoring_func": "sqrtsoftplus",
        "topk_method": "noaux_tc",
        "norm_topk_prob": True,
        "routed_scaling_factor": 1.5,
        "num_hash_layers": c["num_hash_layers"],
        "swiglu_limit": 10.0,
        "hc_mult": c["hc_mult"],
        "hc_sinkhorn_iters": 20,
        "hc_eps": 1e-6,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "tie_word_embeddings": False,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "initializer_range": 0.02,
        "torch_dtype": "bfloat16",
        "use_cache": True,
    }


def check_constraints(name, off, T):
    n = off["num_hidden_layers"]
    r = off["compress_ratios"]
    assert len(r) == n + 1 and r[-1] == 0, f"{name}: compress_ratios must have n+1 entries, last 0"
    assert {0, 4, 128} <= set(r[:n]), f"{name}: every layer type must be present"
    assert 0 < off["num_hash_layers"] < n, f"{name}: need hash and top-k MoE layers"
    assert off["index_topk"] < T // 4, f"{name}: index_topk must be < T/4"
    assert off["sliding_window"] < T, f"{name}: window must be shorter than the prompt"
    assert T >= 256, f"{name}: need at least two ratio-128 rows"
    assert off["index_n_heads"] >= 16, f"{name}: index_n_heads >= 16"
    assert off["num_attention_heads"] % off["o_groups"] == 0


def hf_config(off):
    cfg = DeepseekV4Config(**copy.deepcopy(off))  # transformers edits nested dicts in place
    cfg._attn_implementation = "eager"
    cfg._experts_implementation = "eager"
    return cfg


def hf_native_config(spec):
    """DeepseekV4Config from transformers-native keys (layer_types, mlp_layer_types, compress_rates,
    rope_parameters {main, compress}, partial_rotary_factor): what save_pretrained writes back."""
    cfg = DeepseekV4Config(**copy.deepcopy(spec))
    for k in ("layer_types", "mlp_layer_types", "compress_rates", "rope_parameters", "partial_rotary_factor"):
        assert getattr(cfg, k) == spec[k], (k, getattr(cfg, k), spec[k])
    assert cfg.qk_rope_head_dim == round(spec["head_dim"] * spec["partial_rotary_factor"])
    cfg._attn_implementation = "eager"
    cfg._experts_implementation = "eager"
    return cfg


def check_constraints_hf(name, c, T):
    n = c["num_hidden_layers"]
    lt, mt, rates = c["layer_types"], c["mlp_layer_types"], c["compress_rates"]
    assert len(lt) == n and len(mt) == n
    assert set(lt) == {"sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"}, \
        f"{name}: every layer type must be present"
    assert set(mt) == {"hash_moe", "moe"}, f"{name}: need hash and top-k MoE layers"
    assert c["index_topk"] < T // rates["compressed_sparse_attention"], f"{name}: index_topk must be < T/4"
    assert c["sliding_window"] < T, f"{name}: window must be shorter than the prompt"
    assert T >= 2 * rates["heavily_compressed_attention"], f"{name}: need at least two HCA rows"
    assert c["index_n_heads"] >= 16, f"{name}: index_n_heads >= 16"
    assert c["num_attention_heads"] % c["o_groups"] == 0
    assert c["num_nextn_predict_layers"] == 0, f"{name}: transformers has no MTP weights to save"


# ----------------------------------------------------------------------------------------
# Name mapping: transformers state_dict  <->  official checkpoint names (MODEL.md §2.9)
# ----------------------------------------------------------------------------------------

GLOBAL_MAP = {
    "model.embed_tokens.weight": "embed.weight",
    "lm_head.weight": "head.weight",
    "model.norm.weight": "norm.weight",
    "model.hc_head.hc_fn": "hc_head_fn",
    "model.hc_head.hc_base": "hc_head_base",
    "model.hc_head.hc_scale": "hc_head_scale",
}

LAYER_MAP = {  # suffix after "model.layers.L."  ->  suffix after "layers.L."
    "attn_hc.fn": "hc_attn_fn",
    "attn_hc.base": "hc_attn_base",
    "attn_hc.scale": "hc_attn_scale",
    "ffn_hc.fn": "hc_ffn_fn",
    "ffn_hc.base": "hc_ffn_base",
    "ffn_hc.scale": "hc_ffn_scale",
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_a_proj.weight": "attn.wq_a.weight",
    "self_attn.q_a_norm.weight": "attn.q_norm.weight",
    "self_attn.q_b_proj.weight": "attn.wq_b.weight",
    "self_attn.kv_proj.weight": "attn.wkv.weight",
    "self_attn.kv_norm.weight": "attn.kv_norm.weight",
    "self_attn.sinks": "attn.attn_sink",
    "self_attn.o_a_proj.weight": "attn.wo_a.weight",
    "self_attn.o_b_proj.weight": "attn.wo_b.weight",
    "self_attn.compressor.position_bias": "attn.compressor.ape",
    "self_attn.compressor.kv_proj.weight": "attn.compressor.wkv.weight",
    "self_attn.compressor.gate_proj.weight": "attn.compressor.wgate.weight",
    "self_attn.compressor.kv_norm.weight": "attn.compressor.norm.weight",
    "self_attn.compressor.indexer.q_b_proj.weight": "attn.indexer.wq_b.weight",
    "self_attn.compressor.indexer.scorer.weights_proj.weight": "attn.indexer.weights_proj.weight",
    "self_attn.compressor.indexer.position_bias": "attn.indexer.compressor.ape",
    "self_attn.compressor.indexer.kv_proj.weight": "attn.indexer.compressor.wkv.weight",
    "self_attn.compressor.indexer.gate_proj.weight": "attn.indexer.compressor.wgate.weight",
    "self_attn.compressor.indexer.kv_norm.weight": "attn.indexer.compressor.norm.weight",
    "mlp.gate.weight": "ffn.gate.weight",
    "mlp.gate.e_score_correction_bias": "ffn.gate.bias",
    "mlp.gate.tid2eid": "ffn.gate.tid2eid",
    "mlp.shared_experts.gate_proj.weight": "ffn.shared_experts.w1.weight",
    "mlp.shared_experts.up_proj.weight": "ffn.shared_experts.w3.weight",
    "mlp.shared_experts.down_proj.weight": "ffn.shared_experts.w2.weight",
    # stacked experts, split per expert (see hf_to_official_shapes)
    "mlp.experts.gate_up_proj": None,
    "mlp.experts.down_proj": None,
}

LAYER_RE = re.compile(r"^model\.layers\.(\d+)\.(.+)$")


def hf_to_official_shapes(hf_shapes, inter, layer_prefix="layers.{L}.", global_map=GLOBAL_MAP):
    """Map {hf_name: shape} -> {official_name: (shape, hf_name, slice_spec)}.

    Every hf_name must be matched by exactly one rule; no official name may be produced
    twice.  slice_spec is None (whole tensor) or (expert, row_start, row_end).
    """
    out = {}

    def put(name, val):
        assert name not in out, f"official name produced twice: {name}"
        out[name] = val

    for hf_name, shape in hf_shapes.items():
        shape = tuple(shape)
        if hf_name in global_map:
            put(global_map[hf_name], (shape, hf_name, None))
            continue
        m = LAYER_RE.match(hf_name)
        assert m, f"unmapped transformers tensor: {hf_name}"
        L, suffix = int(m.group(1)), m.group(2)
        assert suffix in LAYER_MAP, f"unmapped transformers tensor: {hf_name}"
        prefix = layer_prefix.format(L=L)
        if suffix == "mlp.experts.gate_up_proj":
            E, two_i, d = shape
            assert two_i == 2 * inter
            for e in range(E):
                put(f"{prefix}ffn.experts.{e}.w1.weight", ((inter, d), hf_name, (e, 0, inter)))
                put(f"{prefix}ffn.experts.{e}.w3.weight", ((inter, d), hf_name, (e, inter, 2 * inter)))
        elif suffix == "mlp.experts.down_proj":
            E, d, i = shape
            assert i == inter
            for e in range(E):
                put(f"{prefix}ffn.experts.{e}.w2.weight", ((d, i), hf_name, (e, 0, d)))
        else:
            put(prefix + LAYER_MAP[suffix], (shape, hf_name, None))
    return out


def official_to_hf(official, mapping, hf_shapes):
    """Assemble a float64 transformers state_dict from official tensors; every official tensor
    in `mapping` must be consumed exactly once and every hf tensor element be written."""
    hf = {}
    written = {}
    used = set()
    for oname, (shape, hf_name, sl) in mapping.items():
        t = official[oname]
        assert tuple(t.shape) == shape, (oname, t.shape, shape)
        assert oname not in used
        used.add(oname)
        if hf_name not in hf:
            dt = torch.int64 if t.dtype == torch.int64 else torch.float64
            hf[hf_name] = torch.zeros(hf_shapes[hf_name], dtype=dt)
            written[hf_name] = torch.zeros(hf_shapes[hf_name], dtype=torch.int32)
        if sl is None:
            hf[hf_name].copy_(t.to(hf[hf_name].dtype))
            written[hf_name] += 1
        else:
            e, a, b = sl
            hf[hf_name][e, a:b].copy_(t.to(hf[hf_name].dtype))
            written[hf_name][e, a:b] += 1
    for k, w in written.items():
        assert bool((w == 1).all()), f"{k}: not every element written exactly once"
    assert set(hf) == set(hf_shapes), set(hf) ^ set(hf_shapes)
    return hf


# ----------------------------------------------------------------------------------------
# Random weights, by official name
# ----------------------------------------------------------------------------------------

def storage_dtype(name, exceptions):
    """Checkpoint dtype: official BF16/FP8/FP4 -> BF16 (FP8/FP4 not used yet), official F32 -> F32."""
    if name.endswith("ffn.gate.tid2eid"):
        return "I64"
    f32 = (
        re.search(r"(^|\.)hc_(attn|ffn|head)_(fn|base|scale)$", name)
        or name.endswith("attn.attn_sink")
        or name.endswith(".ape")
        or name.endswith("ffn.gate.bias")
    )
    dt = "F32" if f32 else "BF16"
    for pat, alt in exceptions.items():
        if re.search(pat, name):
            assert dt == "BF16", f"exception only for BF16 tensors: {name}"
            dt = alt
    return dt


def rng_for(seed, name):
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def random_tensor(seed, name, shape, n_experts):
    """float64 numpy array (or int64 for tid2eid) with the init scheme for `name`."""
    rng = rng_for(seed, name)
    leaf = re.sub(r"^(mtp\.0\.|layers\.\d+\.)", "", name)
    fan_in = shape[-1] if len(shape) >= 2 else None
    if leaf == "ffn.gate.tid2eid":
        V, k = shape
        return np.argsort(rng.random((V, n_experts)), axis=1)[:, :k].astype(np.int64)
    if leaf == "embed.weight":
        return rng.normal(0.0, 1.0, shape)
    if leaf.endswith("norm.weight"):           # all RMSNorm weights
        return 1.0 + rng.normal(0.0, 0.1, shape)
    if re.fullmatch(r"hc_(attn|ffn|head)_fn", leaf):
        return rng.normal(0.0, 1.0 / np.sqrt(fan_in), shape)
    if re.fullmatch(r"hc_(attn|ffn|head)_base", leaf):
        return rng.normal(0.0, 0.5, shape)
    if re.fullmatch(r"hc_(attn|ffn|head)_scale", leaf):
        return rng.uniform(0.5, 1.5, shape)
    if leaf == "attn.attn_sink":
        return rng.normal(0.0, 1.0, shape)
    if leaf.endswith(".ape"):
        return rng.normal(0.0, 0.5, shape)
    if leaf == "ffn.gate.bias":
        return rng.normal(0.0, 0.3, shape)
    if re.fullmatch(r"ffn\.(experts\.\d+|shared_experts)\.w[13]\.weight", leaf):
        return rng.normal(0.0, EXPERT_GAIN / np.sqrt(fan_in), shape)
    if re.fullmatch(r"ffn\.(experts\.\d+|shared_experts)\.w2\.weight", leaf):
        return rng.normal(0.0, 1.0 / (EXPERT_ACT_RMS * np.sqrt(fan_in)), shape)
    assert leaf.endswith(".weight") and len(shape) == 2, f"no init rule for {name}"
    return rng.normal(0.0, 1.0 / np.sqrt(fan_in), shape)   # projections, router, head


def make_official_tensors(seed, shapes, n_experts, exceptions, float_dtype=None):
    """{name: shape} -> {name: torch tensor in its storage dtype}, plus {name: dtype str}.
    float_dtype (e.g. "F32") overrides the storage dtype of every float tensor."""
    tensors, dtypes = {}, {}
    for name in sorted(shapes):
        shape = tuple(shapes[name])
        arr = random_tensor(seed, name, shape, n_experts)
        dt = storage_dtype(name, exceptions)
        if float_dtype is not None and dt != "I64":
            dt = float_dtype
        t = torch.from_numpy(np.ascontiguousarray(arr))
        tensors[name] = t.to(DTYPES[dt]).contiguous()
        dtypes[name] = dt
    return tensors, dtypes


def mtp_shapes(off):
    """Official mtp.0.* names/shapes: a ratio-0 non-hash layer + e/h proj, norms, hc head."""
    sub = copy.deepcopy(off)
    sub.update(num_hidden_layers=1, compress_ratios=[0, 0], num_hash_layers=0, num_nextn_predict_layers=0)
    m = DeepseekV4ForCausalLM(hf_config(sub))
    hf_shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    gmap = {"model.norm.weight": "mtp.0.norm.weight", "model.hc_head.hc_fn": "mtp.0.hc_head_fn",
            "model.hc_head.hc_base": "mtp.0.hc_head_base", "model.hc_head.hc_scale": "mtp.0.hc_head_scale",
            "model.embed_tokens.weight": "__shared_embed", "lm_head.weight": "__shared_head"}
    mp = hf_to_official_shapes(hf_shapes, off["moe_intermediate_size"], layer_prefix="mtp.0.", global_map=gmap)
    shapes = {k: v[0] for k, v in mp.items() if not k.startswith("__")}
    D = off["hidden_size"]
    shapes.update({"mtp.0.e_proj.weight": (D, D), "mtp.0.h_proj.weight": (D, D),
                   "mtp.0.enorm.weight": (D,), "mtp.0.hnorm.weight": (D,)})
    assert "mtp.0.ffn.gate.bias" in shapes and "mtp.0.ffn.gate.tid2eid" not in shapes
    assert not any(".compressor." in k or ".indexer." in k for k in shapes)
    return shapes


# ----------------------------------------------------------------------------------------
# Measurements
# ----------------------------------------------------------------------------------------

def topk_gap(v, k):
    """Relative gap between the k-th and (k+1)-th largest entries of each row of v (float64)."""
    s = torch.sort(v, dim=-1, descending=True).values
    gap = s[..., k - 1] - s[..., k]
    scale = v.abs().amax(dim=-1).clamp_min(1e-30)
    return gap / scale


class Probes:
    """Forward hooks: indexer scores, router gaps, SwiGLU clamp fractions."""

    def __init__(self, model, cfg):
        self.cfg = cfg
        self.handles = []
        self.indexer = {}    # layer -> dict
        self.router = {}     # layer -> min rel gap
        self.clamp = {}      # layer -> counters
        layers = model.model.layers
        limit = cfg.swiglu_limit
        for L, layer in enumerate(layers):
            attn, mlp = layer.self_attn, layer.mlp
            if attn.compressor is not None and hasattr(attn.compressor, "indexer"):
                self.handles.append(attn.compressor.indexer.scorer.register_forward_hook(self._indexer_hook(L)))
            if isinstance(mlp.gate, hfm.DeepseekV4TopKRouter):
                self.handles.append(mlp.gate.register_forward_hook(self._router_hook(L)))
            c = self.clamp.setdefault(L, dict(routed_gate=0, routed_up=0, routed_n=0,
                                              shared_gate=0, shared_up=0, shared_n=0))
            experts = mlp.experts
            orig = experts._apply_gate

            def wrapped(gate_up, _orig=orig, _c=c):
                g, u = gate_up.chunk(2, dim=-1)
                _c["routed_gate"] += int((g > limit).sum())
                _c["routed_up"] += int((u.abs() > limit).sum())
                _c["routed_n"] += g.numel()
                return _orig(gate_up)

            experts._apply_gate = wrapped
            self.handles.append(("apply_gate", experts))
            sh = mlp.shared_experts

            def gh(mod, inp, out, _c=c):
                _c["shared_gate"] += int((out > limit).sum())
                _c["shared_n"] += out.numel()

            def uh(mod, inp, out, _c=c):
                _c["shared_up"] += int((out.abs() > limit).sum())

            self.handles.append(sh.gate_proj.register_forward_hook(gh))
            self.handles.append(sh.up_proj.register_forward_hook(uh))

    def _indexer_hook(self, L):
        k = self.cfg.index_topk
        ratio = self.cfg.compress_rates["compressed_sparse_attention"]

        def hook(mod, inp, out):
            sc = out[0].double()                      # [S, Tc]
            S, Tc = sc.shape
            nvis = (torch.arange(S) + 1) // ratio      # visible rows per query (full forward)
            cols = torch.arange(Tc)
            best, rows = float("inf"), 0
            where = None
            for s in range(S):
                n = int(nvis[s])
                if n <= k:
                    continue
                rows += 1
                g = float(topk_gap(sc[s, :n], k))
                if g < best:
                    best, where = g, s
            zeros = int(((sc == 0) & (cols[None, :] < nvis[:, None])).sum())
            self.indexer[L] = dict(min_rel_gap=best, rows_with_selection=rows, argmin_query=where,
                                   exact_zero_visible_scores=zeros)

        return hook

    def _router_hook(self, L):
        k = self.cfg.num_experts_per_tok

        def hook(mod, inp, out):
            logits = out[0].double()
            sel = mod.score_fn(logits) + mod.e_score_correction_bias.double()
            self.router[L] = float(topk_gap(sel, k).min())

        return hook

    def remove(self):
        for h in self.handles:
            if isinstance(h, tuple):
                del h[1]._apply_gate      # drop the instance override
            else:
                h.remove()

    def clamp_fractions(self):
        res = {}
        for L, c in self.clamp.items():
            res[str(L)] = {
                "routed_gate_gt_limit": c["routed_gate"] / max(c["routed_n"], 1),
                "routed_abs_up_gt_limit": c["routed_up"] / max(c["routed_n"], 1),
                "shared_gate_gt_limit": c["shared_gate"] / max(c["shared_n"], 1),
                "shared_abs_up_gt_limit": c["shared_up"] / max(c["shared_n"], 1),
            }
        return res


@torch.no_grad()
def full_logits(model, ids):
    return model(input_ids=ids, use_cache=False).logits[0]


@torch.no_grad()
def decode_logits(model, ids, prefill):
    T = ids.shape[1]
    out = model(input_ids=ids[:, :prefill], use_cache=True)
    cache = out.cache if hasattr(out, "cache") else out.past_key_values
    rows = [out.logits[0]]
    for t in range(prefill, T):
        out = model(input_ids=ids[:, t:t + 1], cache=cache, use_cache=True)
        cache = out.cache if hasattr(out, "cache") else out.past_key_values
        rows.append(out.logits[0])
    return torch.cat(rows, dim=0)


def sig(x, n=4):
    return float(f"{x:.{n}g}")


# ----------------------------------------------------------------------------------------
# One fixture
# ----------------------------------------------------------------------------------------

def build(name, fx, seed):
    """Build the float64 oracle model for `seed`; return everything needed to evaluate/write."""
    off = official_config(fx["config"])
    cfg = hf_config(off)
    torch.manual_seed(seed)   # transformers' own init is overwritten below, but keep it seeded
    model = DeepseekV4ForCausalLM(cfg).double().eval()
    sd = model.state_dict()
    hf_shapes = {k: tuple(v.shape) for k, v in sd.items()}
    nonpersistent = [n for n, _ in model.named_buffers() if n not in sd]
    assert all(n.endswith("inv_freq") for n in nonpersistent), nonpersistent

    inter = off["moe_intermediate_size"]
    mapping = hf_to_official_shapes(hf_shapes, inter)
    shapes = {k: v[0] for k, v in mapping.items()}
    if off["num_nextn_predict_layers"]:
        assert off["num_nextn_predict_layers"] == 1
        ms = mtp_shapes(off)
        assert not set(ms) & set(shapes)
        shapes.update(ms)
    tensors, dtypes = make_official_tensors(seed, shapes, off["n_routed_experts"], fx["dtype_exceptions"])

    hf_sd = official_to_hf(tensors, mapping, hf_shapes)
    missing, unexpected = model.load_state_dict(hf_sd, strict=True)
    assert not missing and not unexpected
    # round trip: what the model holds is exactly the stored values
    sd2 = model.state_dict()
    for oname, (shape, hf_name, sl) in mapping.items():
        t = sd2[hf_name] if sl is None else sd2[hf_name][sl[0], sl[1]:sl[2]]
        assert torch.equal(t, tensors[oname].to(t.dtype)), oname

    rng = np.random.default_rng([seed, 0x1D5])
    ids = torch.from_numpy(rng.integers(0, off["vocab_size"], size=fx["T"]).astype(np.int64))[None, :]
    return off, cfg, model, tensors, dtypes, ids


def build_hf_native(name, fx, seed):
    """tiny_c: a float32 transformers model (what save_pretrained will store) whose state_dict is
    randomised in place with the same init scheme, keyed by the official names of its tensors."""
    spec = fx["config"]
    cfg = hf_native_config(spec)
    torch.manual_seed(seed)   # transformers' own init is overwritten below, but keep it seeded
    model = DeepseekV4ForCausalLM(cfg).float().eval()
    sd = model.state_dict()
    hf_shapes = {k: tuple(v.shape) for k, v in sd.items()}
    nonpersistent = [n for n, _ in model.named_buffers() if n not in sd]
    assert all(n.endswith("inv_freq") for n in nonpersistent), nonpersistent

    mapping = hf_to_official_shapes(hf_shapes, spec["moe_intermediate_size"])
    shapes = {k: v[0] for k, v in mapping.items()}
    tensors, dtypes = make_official_tensors(seed, shapes, spec["n_routed_experts"], {}, float_dtype="F32")

    hf_sd = official_to_hf(tensors, mapping, hf_shapes)
    missing, unexpected = model.load_state_dict(hf_sd, strict=True)
    assert not missing and not unexpected
    sd2 = model.state_dict()
    for oname, (shape, hf_name, sl) in mapping.items():
        t = sd2[hf_name] if sl is None else sd2[hf_name][sl[0], sl[1]:sl[2]]
        assert t.dtype == tensors[oname].dtype and torch.equal(t, tensors[oname]), oname
    for k, v in sd2.items():   # every parameter and buffer is randomised (none left at its init)
        assert v.dtype == (torch.int64 if k.endswith("tid2eid") else torch.float32), (k, v.dtype)
        if v.dtype == torch.float32 and v.numel() > 1:
            assert float(v.std()) > 0, f"{k} is constant"

    rng = np.random.default_rng([seed, 0x1D5])
    ids = torch.from_numpy(rng.integers(0, spec["vocab_size"], size=fx["T"]).astype(np.int64))[None, :]
    return cfg, model, tensors, dtypes, ids


def evaluate(name, fx, cfg, model, ids, do_decode):
    t0 = time.time()
    probes = Probes(model, cfg)
    try:
        l64 = full_logits(model, ids)
    finally:
        probes.remove()
    t_full = time.time() - t0
    m32 = copy.deepcopy(model).float()
    l32 = full_logits(m32, ids).double()
    del m32
    res = {
        "logits_std": float(l64.std()),
        "logits_mean": float(l64.mean()),
        "logits_max_abs": float(l64.abs().max()),
        "finite": bool(torch.isfinite(l64).all()),
        "f32_vs_f64_max_abs_diff": float((l32 - l64).abs().max()),
        "indexer": {str(k): v for k, v in sorted(probes.indexer.items())},
        "indexer_min_rel_gap": min(v["min_rel_gap"] for v in probes.indexer.values()),
        "router_min_rel_gap_per_layer": {str(k): v for k, v in sorted(probes.router.items())},
        "router_min_rel_gap": min(probes.router.values()),
        "clamp": probes.clamp_fractions(),
        "seconds_full_forward_f64": t_full,
    }
    res["max_routed_clamp_frac"] = max(max(v["routed_gate_gt_limit"], v["routed_abs_up_gt_limit"])
                                       for v in res["clamp"].values())
    if do_decode:
        t0 = time.time()
        ld = decode_logits(model, ids, fx["prefill"])
        res["decode_vs_full_max_abs_diff"] = float((ld - l64).abs().max())
        res["seconds_decode_check"] = time.time() - t0
    else:
        res["decode_vs_full_max_abs_diff"] = None
    reasons = []
    if not res["finite"]:
        reasons.append("non-finite logits")
    if not (LOGIT_STD_RANGE[0] <= res["logits_std"] <= LOGIT_STD_RANGE[1]):
        reasons.append(f"logits std {res['logits_std']:.3g}")
    if res["indexer_min_rel_gap"] < MIN_INDEXER_GAP:
        reasons.append(f"indexer gap {res['indexer_min_rel_gap']:.3g}")
    if res["router_min_rel_gap"] < MIN_ROUTER_GAP:
        reasons.append(f"router gap {res['router_min_rel_gap']:.3g}")
    if res["f32_vs_f64_max_abs_diff"] > MAX_F32_DIFF:
        reasons.append(f"f32 vs f64 {res['f32_vs_f64_max_abs_diff']:.3g}")
    if do_decode and res["decode_vs_full_max_abs_diff"] > MAX_DECODE_DIFF:
        reasons.append(f"decode vs full {res['decode_vs_full_max_abs_diff']:.3g}")
    if res["max_routed_clamp_frac"] < MIN_CLAMP_FRAC:
        reasons.append(f"clamp fraction {res['max_routed_clamp_frac']:.3g}")
    return l64, res, reasons


def shard_of(name, shards):
    for i, prefixes in enumerate(shards):
        if any(name.startswith(p) for p in prefixes):
            return i
    raise AssertionError(f"tensor {name} matches no shard")


def write_fixture(outdir, name, fx, off, tensors, ids, logits):
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):   # remove only files this script produces
        if (f.startswith("model") and (f.endswith(".safetensors") or f.endswith(".index.json"))) \
                or f in ("config.json", "ids.txt", "logits.bin", "meta.json"):
            os.remove(os.path.join(d, f))
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(json.dumps(off, indent=2) + "\n")
    with open(os.path.join(d, "ids.txt"), "w") as f:
        f.write(",".join(str(int(x)) for x in ids[0].tolist()) + "\n")
    logits.numpy().astype("<f4").tofile(os.path.join(d, "logits.bin"))

    files = []
    if fx["shards"] is None:
        fn = "model.safetensors"
        save_file(dict(sorted(tensors.items())), os.path.join(d, fn), metadata={"format": "pt"})
        files.append(fn)
    else:
        K = len(fx["shards"])
        groups = [dict() for _ in range(K)]
        for n in sorted(tensors):
            groups[shard_of(n, fx["shards"])][n] = tensors[n]
        weight_map = {}
        total = 0
        for i, g in enumerate(groups):
            fn = f"model-{i + 1:05d}-of-{K:05d}.safetensors"
            save_file(g, os.path.join(d, fn), metadata={"format": "pt"})
            files.append(fn)
            for n, t in g.items():
                weight_map[n] = fn
                total += t.numel() * t.element_size()
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            f.write(json.dumps(index, indent=2) + "\n")
        files.append("model.safetensors.index.json")
    for f in files:
        os.chmod(os.path.join(d, f), 0o644)   # safetensors creates files 0600
    return d, files


# transformers' save_pretrained reverses its official->transformers conversion mapping, but the
# renames anchored at the start of an official name (embed, head, hc_head_*) only partly apply
# under the `model.` prefix, and the reverse of `.norm.` -> `.kv_norm.` also renames the main
# attention's kv norm.  Saved name -> official name:
SAVED_GLOBAL = {
    "model.embed_tokens.weight": "embed.weight",
    "head.weight": "head.weight",
    "model.norm.weight": "norm.weight",
    "model.hc_head.hc_fn": "hc_head_fn",
    "model.hc_head.hc_base": "hc_head_base",
    "model.hc_head.hc_scale": "hc_head_scale",
}


def saved_to_official(name):
    if name in SAVED_GLOBAL:
        return SAVED_GLOBAL[name]
    assert name.startswith("model.layers."), f"unexpected saved tensor name {name}"
    name = name[len("model."):]
    assert not name.endswith(".attn.kv_norm.weight"), name
    return re.sub(r"^(layers\.\d+\.attn)\.norm\.weight$", r"\1.kv_norm.weight", name)


def name_pattern(name):
    return re.sub(r"\.experts\.\d+\.", ".experts.E.", re.sub(r"^model\.layers\.\d+\.", "model.layers.L.", name))


def write_hf_fixture(outdir, name, fx, model32, tensors, ids, logits):
    """tiny_c: transformers' own save_pretrained of the randomised float32 model, then verify that
    the files hold exactly the generated values under the expected names."""
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):   # remove only files this script produces
        if (f.startswith("model") and (f.endswith(".safetensors") or f.endswith(".index.json"))) \
                or f in ("config.json", "generation_config.json", "ids.txt", "logits.bin", "meta.json"):
            os.remove(os.path.join(d, f))
    assert next(iter(model32.parameters())).dtype == torch.float32
    model32.save_pretrained(d, safe_serialization=True, max_shard_size=fx["max_shard_size"])
    with open(os.path.join(d, "ids.txt"), "w") as f:
        f.write(",".join(str(int(x)) for x in ids[0].tolist()) + "\n")
    logits.numpy().astype("<f4").tofile(os.path.join(d, "logits.bin"))

    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        weight_map = json.load(f)["weight_map"]
    shard_files = sorted(set(weight_map.values()))
    assert len(shard_files) >= 2, shard_files
    written = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    assert written == shard_files, (written, shard_files)
    saved = {}    # saved name -> (dtype, shape, file)
    seen = set()
    for fn in shard_files:
        with safetensors.safe_open(os.path.join(d, fn), "pt") as g:
            for k in g.keys():
                assert weight_map[k] == fn and k not in saved
                t = g.get_tensor(k)
                sl = g.get_slice(k)
                saved[k] = (sl.get_dtype(), list(sl.get_shape()), fn)
                o = saved_to_official(k)
                assert o in tensors and o not in seen, (k, o)
                seen.add(o)
                assert t.dtype == tensors[o].dtype and torch.equal(t, tensors[o]), f"{k}: values differ"
    assert seen == set(tensors), set(tensors) ^ seen
    assert set(weight_map) == set(saved)

    with open(os.path.join(d, "config.json")) as f:
        conf = json.load(f)
    spec = fx["config"]
    for k in ("layer_types", "mlp_layer_types", "compress_rates", "rope_parameters", "partial_rotary_factor",
              "routed_scaling_factor", "swiglu_limit", "hc_sinkhorn_iters", "sliding_window", "index_topk"):
        assert conf[k] == spec[k], (k, conf[k], spec[k])
    for k in ("compress_ratios", "num_hash_layers", "rope_scaling"):
        assert k not in conf, f"legacy key {k} in transformers' config.json"
    assert conf["dtype"] == "float32", conf.get("dtype")

    files = shard_files + ["model.safetensors.index.json", "config.json", "generation_config.json"]
    for f in files:
        os.chmod(os.path.join(d, f), 0o644)   # safetensors creates files 0600
    return d, files, saved


@torch.no_grad()
def from_pretrained_check(d, ids, ref):
    """Load the written checkpoint through transformers' own conversion mapping."""
    m, info = DeepseekV4ForCausalLM.from_pretrained(d, dtype=torch.float64, attn_implementation="eager",
                                                    experts_implementation="eager", output_loading_info=True)
    m.eval()
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")), info
    # transformers keeps `_keep_in_fp32_modules_strict` (norms, HC, sinks, ape, router bias) in
    # float32 under from_pretrained; values are identical, only the arithmetic differs there.
    fp32_params = sorted({n for n, p in m.named_parameters() if p.dtype != torch.float64})
    diff = float((full_logits(m, ids) - ref).abs().max())
    return diff, len(fp32_params)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def search_seed(name, fx, max_tries, build_eval):
    """The first seed from fx["base_seed"] whose fixture passes every check: build_eval(seed) returns
    (built, logits, res, reasons). Returns (built, logits, res, seed, rejected); every try is printed."""
    rejected = []
    for seed in range(fx["base_seed"], fx["base_seed"] + max_tries):
        t0 = time.time()
        built, logits, res, reasons = build_eval(seed)
        print(f"[{name}] seed {seed}: std {res['logits_std']:.3f} idx-gap {res['indexer_min_rel_gap']:.3g} "
              f"router-gap {res['router_min_rel_gap']:.3g} f32 {res['f32_vs_f64_max_abs_diff']:.3g} "
              f"decode {res['decode_vs_full_max_abs_diff']} clamp {res['max_routed_clamp_frac']:.3g} "
              f"({time.time() - t0:.1f}s) {'REJECT: ' + '; '.join(reasons) if reasons else 'ok'}", flush=True)
        if not reasons:
            return built, logits, res, seed, rejected
        rejected.append({"seed": seed, "reasons": reasons})
    raise SystemExit(f"{name}: no acceptable seed in {max_tries} tries")


def result_meta(res, fx, fp_key, fp_diff):
    """The meta.json entries every generator writes about the accepted seed's checks, in their order:
    logits statistics through the thresholds (fp_key names the from_pretrained comparison)."""
    ix = res["indexer"]
    return {
        "logits_std": sig(res["logits_std"]),
        "logits_mean": sig(res["logits_mean"]),
        "logits_max_abs": sig(res["logits_max_abs"]),
        "indexer_min_rel_gap": sig(res["indexer_min_rel_gap"]),
        "indexer_per_layer": {k: {"min_rel_gap": sig(v["min_rel_gap"]),
                                  "rows_with_selection": v["rows_with_selection"],
                                  "argmin_query": v["argmin_query"],
                                  "exact_zero_visible_scores": v["exact_zero_visible_scores"]}
                              for k, v in ix.items()},
        "router_min_rel_gap": sig(res["router_min_rel_gap"]),
        "router_min_rel_gap_per_layer": {k: sig(v) for k, v in res["router_min_rel_gap_per_layer"].items()},
        "f32_vs_f64_max_abs_diff": sig(res["f32_vs_f64_max_abs_diff"], 3),
        "decode_check": {"prefill": fx["prefill"], "decode_steps": fx["T"] - fx["prefill"],
                         "max_abs_diff_vs_full": None if res["decode_vs_full_max_abs_diff"] is None
                         else sig(res["decode_vs_full_max_abs_diff"], 3)},
        fp_key: sig(fp_diff, 3),
        "swiglu_clamp_fractions": {L: {k: sig(v, 3) for k, v in c.items()} for L, c in res["clamp"].items()},
        "thresholds": {"min_indexer_rel_gap": MIN_INDEXER_GAP, "min_router_rel_gap": MIN_ROUTER_GAP,
                       "max_f32_vs_f64": MAX_F32_DIFF, "max_decode_vs_full": MAX_DECODE_DIFF,
                       "min_routed_clamp_fraction": MIN_CLAMP_FRAC, "logits_std_range": list(LOGIT_STD_RANGE)},
    }


def versions():
    return {"transformers": transformers.__version__, "torch": torch.__version__,
            "numpy": np.__version__, "safetensors": safetensors.__version__,
            "python": sys.version.split()[0]}


def cli_main(doc, fixtures, make):
    """The generators' command line: --out, --only, --max-tries, --skip-decode-check; make(outdir, name,
    fx, max_tries, do_decode) writes one fixture and returns its directory."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(here), "tests", "fixtures"))
    ap.add_argument("--only", default=",".join(fixtures))
    ap.add_argument("--max-tries", type=int, default=20)
    ap.add_argument("--skip-decode-check", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    t0 = time.time()
    for name in args.only.split(","):
        d = make(args.out, name, fixtures[name], args.max_tries, not args.skip_decode_check)
        print(f"[{name}] written to {d}", flush=True)
    print(f"done in {time.time() - t0:.1f}s")


def make_fixture(outdir, name, fx, max_tries, do_decode):
    fx_T = fx["T"]
    hf_layout = fx.get("layout") == "transformers"
    if hf_layout:
        check_constraints_hf(name, fx["config"], fx_T)
    else:
        off0 = official_config(fx["config"])
        check_constraints(name, off0, fx_T)
    def build_eval(seed):
        if hf_layout:
            cfg, model32, tensors, dtypes, ids = build_hf_native(name, fx, seed)
            model = copy.deepcopy(model32).double()   # float64 oracle of exactly the float32 values
            built = (None, cfg, model32, tensors, dtypes, ids)
        else:
            off, cfg, model, tensors, dtypes, ids = build(name, fx, seed)
            built = (off, cfg, None, tensors, dtypes, ids)
        logits, res, reasons = evaluate(name, fx, cfg, model, ids, do_decode)
        return built, logits, res, reasons

    (off, cfg, model32, tensors, dtypes, ids), logits, res, seed, rejected = search_seed(name, fx, max_tries,
                                                                                          build_eval)

    if hf_layout:
        d, files, saved = write_hf_fixture(outdir, name, fx, model32, tensors, ids, logits.float())
    else:
        d, files = write_fixture(outdir, name, fx, off, tensors, ids, logits.float())
    fp_diff, n_fp32 = from_pretrained_check(d, ids, logits)
    print(f"[{name}] from_pretrained vs oracle max |diff| = {fp_diff:.3g}", flush=True)
    assert fp_diff < 1e-4, f"{name}: from_pretrained logits differ by {fp_diff}"

    exceptions = {n: dt for n, dt in sorted(dtypes.items())
                  if any(re.search(p, n) for p in fx["dtype_exceptions"])}
    dtype_counts = {}
    for dt in dtypes.values():
        dtype_counts[dt] = dtype_counts.get(dt, 0) + 1
    meta = {
        "fixture": name,
        "generator": "tools/make_fixtures.py",
        "seed": seed,
        "rejected_seeds": rejected,
        "T": fx_T,
        "vocab": cfg.vocab_size,
        "ids_file": "ids.txt",
        "logits_file": "logits.bin",
        "logits_layout": "T x vocab, little-endian float32, row t = next-token logits after token t",
        "oracle": "transformers DeepseekV4ForCausalLM, model.double(), eager attention + eager experts, "
                  "one full-prompt forward with use_cache=False; no FP8/FP4 simulation, no FP8 "
                  "activation quantisation, no MTP",
        **result_meta(res, fx, "from_pretrained_vs_oracle_max_abs_diff", fp_diff),
        "init": {"embed": "N(0,1)", "projections/router/head": "N(0,1/fan_in)",
                 "expert_w1_w3 (routed+shared)": f"N(0,({EXPERT_GAIN})^2/fan_in)",
                 "expert_w2 (routed+shared)": f"N(0,1/({EXPERT_ACT_RMS}^2*fan_in))",
                 "norm weights": "1+N(0,0.1^2)", "hc fn": "N(0,1/fan_in)", "hc base": "N(0,0.5^2)",
                 "hc scale": "U(0.5,1.5)", "attn_sink": "N(0,1)", "ape": "N(0,0.5^2)",
                 "ffn.gate.bias": "N(0,0.3^2)", "tid2eid": "distinct random expert ids per row"},
        "storage_dtypes": {"rule": "BF16 where official is BF16/FP8/FP4; F32 where official is F32; "
                                   "I64 for ffn.gate.tid2eid",
                           "counts": dict(sorted(dtype_counts.items())),
                           "exceptions": exceptions},
        "n_tensors": len(tensors),
        "mtp_tensors": sum(1 for n in tensors if n.startswith("mtp.")),
        "files": {f: {"bytes": os.path.getsize(os.path.join(d, f)), "sha256": sha256(os.path.join(d, f))}
                  for f in files + ["config.json", "ids.txt", "logits.bin"]},
        "versions": versions(),
    }
    if hf_layout:
        patterns = {}
        for k, (dt, shape, fn) in saved.items():
            patterns.setdefault(name_pattern(k), set()).add(dt)
        meta["oracle"] = ("transformers DeepseekV4ForCausalLM, the randomised float32 model saved by "
                          "save_pretrained, cast with .double(); eager attention + eager experts, "
                          "one full-prompt forward with use_cache=False; no FP8/FP4 simulation, no FP8 "
                          "activation quantisation, no MTP")
        meta["storage_dtypes"] = {
            "rule": "transformers save_pretrained of a float32 model: F32 for every float tensor, "
                    "I64 for tid2eid",
            "counts": dict(sorted(collections.Counter(v[0] for v in saved.values()).items())),
            "exceptions": {}}
        meta["n_tensors"] = len(saved)
        meta["files"] = {f: {"bytes": os.path.getsize(os.path.join(d, f)), "sha256": sha256(os.path.join(d, f))}
                         for f in files + ["ids.txt", "logits.bin"]}
        meta["layout"] = {
            "writer": f"DeepseekV4ForCausalLM.save_pretrained(safe_serialization=True, "
                      f"max_shard_size={fx['max_shard_size']!r})",
            "saved_name_to_official": "strip the leading 'model.' of model.layers.*; "
                                      "model.layers.L.attn.norm.weight -> layers.L.attn.kv_norm.weight; " + ", ".join(
                f"{k} -> {v}" for k, v in SAVED_GLOBAL.items() if k != v),
            "saved_name_patterns": {p: "/".join(sorted(v)) for p, v in sorted(patterns.items())},
        }
    with open(os.path.join(d, "meta.json"), "w") as f:
        f.write(json.dumps(meta, indent=2) + "\n")
    return d


def main():
    cli_main(__doc__, FIXTURES, make_fixture)


if __name__ == "__main__":
    main()
