#!/usr/bin/env python3
"""The baseline a user would otherwise reach for: transformers' eager DeepseekV4ForCausalLM, timed on
the same GPU and the same (DeepSeek-V4-Flash) shapes as `bench_cpu`'s Flash runs.

    python3 bench/hf_baseline.py [--layers 4] [--batch 1,8,16,64] [--prompt 16] [--decode 8]
                                 [--dtype bf16] [--device cuda|cpu] [--tiny] [--json FILE] [--seed 0]

For each batch size B: prefill B sequences of P random tokens (use_cache=True), then D decode steps of
one token per sequence, each feeding back the argmax of its logits; every decode step is timed
(CUDA events around forward + argmax, synchronised; time.perf_counter on the CPU). Reported: ms per step
(median, mean), per layer (median / N: the embedding, HC head, norm and LM head are included in the step),
tokens/s, the prefill time, peak memory, library versions and the GPU. An out-of-memory batch size is
recorded, not fatal. The JSON is rewritten after every batch size, so a run cut short keeps what it had.

Model: the first N layers of DeepSeek-V4-Flash (MODEL.md §1; `dsv4 mkmodel --preset flash --layers N`:
compress ratios 0, 0, then 4 / 128 alternating; the first 3 layers hash-routed), vocabulary 129,280,
random weights. It is built on the meta device (nothing materialised on the host), moved with
`to_empty` and then every parameter and buffer is initialised on the device: matrices N(0, 1/in) as
mkmodel does, norms 1, the embedding N(0, 1), sinks N(0, 1), compressor position biases N(0, 0.25),
HC base 0 and scale 1, router bias 0, `tid2eid` random distinct experts per token; the RoPE buffers
(non-persistent, garbage after `to_empty`) are recomputed by building a fresh rotary module the way
transformers does. Parameters that `from_pretrained(dtype=bfloat16)` keeps in float32
(`_keep_in_fp32_modules_strict`) are float32 here too, where transformers can run them that way: 5.17's
RMSNorm cannot (a float32 norm weight hands a float32 activation to a BF16 linear, so from_pretrained's own
BF16 model fails its first forward); a probe on a tiny model finds this, and then every tensor stays as
V4's __init__ makes it under a BF16 default dtype (what `_from_config(dtype=bfloat16)` gives). The JSON's
keep_fp32_note says which.

Weights are BF16, every matrix: transformers' path for the checkpoint's FP8 (E4M3, 128x128 UE8M0 blocks)
and FP4 expert formats (the finegrained-fp8 quantizer) runs its matmuls in kernels fetched from the
Hugging Face hub at run time (kernels-community/finegrained-fp8, DeepGEMM), which the GPU machine cannot
reach; so the BF16 model reads about 2x the attention / shared-expert bytes and ~3.8x the routed-expert
bytes that dsv4 reads from the FP8 + MXFP4 checkpoint. The JSON says so.

Before timing, a check on a tiny 6-layer config (every layer type) on the CPU (--no-verify skips it;
seconds): the meta-built model equals (a) in float32, a normally materialised model given the same weights
(all 28 non-persistent RoPE buffers and the logits identical), and (b) in BF16, `from_pretrained(dtype=
bfloat16)` of its own save_pretrained output (every tensor, its dtype, the buffers and the logits identical;
where that model cannot run, a normal `_from_config(dtype=bfloat16)` build instead); (c) its logits are
finite and prefill + one-token decode steps (the timed path) match its full forward within 1e-3.

Needs only torch and transformers (>= 5.8 with `transformers.models.deepseek_v4`); no network.
"""

import argparse
import contextlib
import copy
import gc
import inspect
import json
import math
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
import traceback

import torch
from torch import nn

import transformers
from transformers.models.deepseek_v4 import DeepseekV4Config, DeepseekV4ForCausalLM

# ----------------------------------------------------------------------------------------------
# Shapes: the Flash preset of `dsv4 mkmodel` (src/model/mkmodel.c preset_shapes / config_json) and
# its tiny preset (same structure)
# ----------------------------------------------------------------------------------------------

FLASH = dict(vocab=129280, dim=4096, heads=64, head_dim=512, rope_dim=64, q_lora=1024, o_groups=8,
             o_lora=1024, window=128, idx_heads=64, idx_dim=128, idx_topk=512, experts=256, topk=6,
             inter=2048, hc=4, hash_layers=3)
TINY = dict(vocab=512, dim=128, heads=8, head_dim=64, rope_dim=16, q_lora=64, o_groups=4, o_lora=32,
            window=32, idx_heads=16, idx_dim=32, idx_topk=16, experts=16, topk=4, inter=64, hc=4,
            hash_layers=3)

ROPE_SCALING = {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536,
                "beta_fast": 32, "beta_slow": 1}
RATIO_TO_TYPE = {0: "sliding_attention", 4: "compressed_sparse_attention",
                 128: "heavily_compressed_attention"}

WEIGHTS_NOTE = (
    "BF16 weights (random, N(0, 1/in) matrices as dsv4 mkmodel): the DeepSeek-V4-Flash checkpoint holds FP8 "
    "E4M3 (128x128 UE8M0 blocks) attention / shared-expert matrices and MXFP4 routed experts; transformers' "
    "FP8/FP4 path (finegrained-fp8 quantizer, expert_dtype fp4) runs its matmuls in kernels fetched from the "
    "Hugging Face hub at run time (kernels-community/finegrained-fp8, DeepGEMM), which the offline GPU machine "
    "cannot reach, so this baseline is BF16: ~2x the FP8 bytes and ~3.8x the MXFP4 expert bytes that dsv4 reads "
    "per token. Parameters transformers keeps in float32 (_keep_in_fp32_modules_strict: HC, norms, sinks, "
    "position biases, router bias) are float32 as from_pretrained(dtype=bfloat16) leaves them, where a forward runs "
    "that way (see keep_fp32_note).")


def layer_ratio(l):
    return 0 if l < 2 else (4 if l % 2 == 0 else 128)


def official_config(s, n_layers):
    """The official config.json keys (MODEL.md §1.1; what `dsv4 mkmodel` writes), without
    quantization_config (the weights here are BF16)."""
    return {
        "architectures": ["DeepseekV4ForCausalLM"],
        "model_type": "deepseek_v4",
        "vocab_size": s["vocab"],
        "hidden_size": s["dim"],
        "num_hidden_layers": n_layers,
        "num_nextn_predict_layers": 0,
        "num_attention_heads": s["heads"],
        "num_key_value_heads": 1,
        "head_dim": s["head_dim"],
        "qk_rope_head_dim": s["rope_dim"],
        "q_lora_rank": s["q_lora"],
        "o_groups": s["o_groups"],
        "o_lora_rank": s["o_lora"],
        "sliding_window": s["window"],
        "compress_ratios": [layer_ratio(l) for l in range(n_layers)] + [0],  # + the (absent) MTP layer's
        "compress_rope_theta": 160000.0,
        "rope_theta": 10000.0,
        "rope_scaling": dict(ROPE_SCALING),
        "max_position_embeddings": 1048576,
        "index_n_heads": s["idx_heads"],
        "index_head_dim": s["idx_dim"],
        "index_topk": s["idx_topk"],
        "n_routed_experts": s["experts"],
        "n_shared_experts": 1,
        "num_experts_per_tok": s["topk"],
        "moe_intermediate_size": s["inter"],
        "scoring_func": "sqrtsoftplus",
        "topk_method": "noaux_tc",
        "norm_topk_prob": True,
        "routed_scaling_factor": 1.5,
        "num_hash_layers": min(s["hash_layers"], n_layers),
        "swiglu_limit": 10.0,
        "hc_mult": s["hc"],
        "hc_sinkhorn_iters": 20,
        "hc_eps": 1e-6,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "tie_word_embeddings": False,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "use_cache": True,
    }


def native_config(off):
    """The same model in transformers' own DeepseekV4Config keys (what save_pretrained writes):
    layer_types, mlp_layer_types, compress_rates, rope_parameters {main, compress}, partial_rotary_factor."""
    n = off["num_hidden_layers"]
    prf = off["qk_rope_head_dim"] / off["head_dim"]
    c = {k: v for k, v in off.items()
         if k not in ("compress_ratios", "num_hash_layers", "qk_rope_head_dim", "rope_scaling", "topk_method",
                      "architectures", "model_type")}
    c["layer_types"] = [RATIO_TO_TYPE[r] for r in off["compress_ratios"][:n]]
    c["mlp_layer_types"] = ["hash_moe"] * off["num_hash_layers"] + ["moe"] * (n - off["num_hash_layers"])
    c["compress_rates"] = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
    c["partial_rotary_factor"] = prf
    rs = off["rope_scaling"]
    c["rope_parameters"] = {
        "main": {"rope_type": "default", "rope_theta": off["rope_theta"], "partial_rotary_factor": prf},
        "compress": {"rope_type": "yarn", "rope_theta": off["compress_rope_theta"], "partial_rotary_factor": prf,
                     "factor": rs["factor"], "original_max_position_embeddings": rs["original_max_position_embeddings"],
                     "beta_fast": rs["beta_fast"], "beta_slow": rs["beta_slow"], "attention_factor": 1.0},
    }
    return c


def check_config(cfg, off):
    """What transformers made of the keys; a list of mismatches (empty when it is the intended model)."""
    n = off["num_hidden_layers"]
    bad = []

    def want(name, got, exp):
        if got != exp:
            bad.append(f"{name}: got {got!r}, want {exp!r}")

    for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "head_dim", "q_lora_rank",
              "o_groups", "o_lora_rank", "sliding_window", "index_n_heads", "index_head_dim", "index_topk",
              "n_routed_experts", "n_shared_experts", "num_experts_per_tok", "moe_intermediate_size", "hc_mult",
              "hc_sinkhorn_iters", "swiglu_limit", "routed_scaling_factor", "scoring_func", "tie_word_embeddings"):
        want(k, getattr(cfg, k, None), off[k])
    want("layer_types", list(getattr(cfg, "layer_types", []) or []),
         [RATIO_TO_TYPE[r] for r in off["compress_ratios"][:n]])
    nh = off["num_hash_layers"]
    want("mlp_layer_types", list(getattr(cfg, "mlp_layer_types", []) or []), ["hash_moe"] * nh + ["moe"] * (n - nh))
    rates = getattr(cfg, "compress_rates", None) or {}
    want("compress_rates", {k: rates.get(k) for k in ("compressed_sparse_attention", "heavily_compressed_attention")},
         {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128})
    want("qk_rope_head_dim", getattr(cfg, "qk_rope_head_dim", None), off["qk_rope_head_dim"])
    rp = getattr(cfg, "rope_parameters", None) or {}
    main, comp = rp.get("main") or {}, rp.get("compress") or {}
    want("rope main type", main.get("rope_type"), "default")
    want("rope main theta", float(main.get("rope_theta", -1)), off["rope_theta"])
    want("rope compress type", comp.get("rope_type"), "yarn")
    want("rope compress theta", float(comp.get("rope_theta", -1)), off["compress_rope_theta"])
    want("rope compress factor", float(comp.get("factor", -1)), float(ROPE_SCALING["factor"]))
    want("rope compress original_max_position_embeddings", comp.get("original_max_position_embeddings"),
         ROPE_SCALING["original_max_position_embeddings"])
    want("rope compress attention_factor", float(comp.get("attention_factor", -1)), 1.0)
    for part, d in (("main", main), ("compress", comp)):
        prf = d.get("partial_rotary_factor", getattr(cfg, "partial_rotary_factor", None))
        want(f"rope {part} partial_rotary_factor", prf, off["qk_rope_head_dim"] / off["head_dim"])
    return bad


def make_config(off, experts_impl):
    """DeepseekV4Config from the official keys (transformers >= 5.8 folds compress_ratios, num_hash_layers,
    qk_rope_head_dim and rope_scaling into its own fields), else from its native keys; checked either way."""
    errors = []
    for how, keys in (("official config.json keys", off), ("transformers-native keys", native_config(off))):
        try:
            cfg = DeepseekV4Config(**copy.deepcopy(keys))  # it edits nested dicts in place
        except Exception as e:  # noqa: BLE001 - a key this version refuses: try the other spelling
            errors.append(f"{how}: {type(e).__name__}: {e}")
            continue
        bad = check_config(cfg, off)
        if bad:
            errors.append(f"{how}: " + "; ".join(bad))
            continue
        cfg._attn_implementation = "eager"  # the only attention V4 has in transformers
        if experts_impl != "default":
            cfg._experts_implementation = experts_impl
        return cfg, how
    raise SystemExit("hf_baseline: cannot express the model as a DeepseekV4Config:\n  " + "\n  ".join(errors))


# ----------------------------------------------------------------------------------------------
# Building the model: meta device, to_empty, initialise everything on the device
# ----------------------------------------------------------------------------------------------

@contextlib.contextmanager
def default_dtype(dt):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dt)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def construct(cfg, dtype):
    """DeepseekV4ForCausalLM(cfg) with `dtype` as the default dtype, as _from_config / from_pretrained build
    it (modules that V4 creates as float32 stay float32). Under a `torch.device("meta")` context this
    allocates nothing."""
    if hasattr(DeepseekV4ForCausalLM, "_from_config"):
        return DeepseekV4ForCausalLM._from_config(cfg, dtype=dtype)
    with default_dtype(dtype):
        return DeepseekV4ForCausalLM(cfg)


def fp32_pattern(model, dtype):
    """from_pretrained(dtype=bf16|fp16) loads every tensor whose name matches one of
    `_keep_in_fp32_modules_strict` (an unanchored regex search) as float32."""
    if dtype not in (torch.bfloat16, torch.float16):
        return None
    keep = list(getattr(model, "_keep_in_fp32_modules_strict", None) or [])
    if not keep:
        return None
    return re.compile("|".join("(?:" + k.replace("*", ".*") + ")" for k in keep))


def set_dtypes(model, dtype, keep_fp32):
    """On the meta model: with keep_fp32, float tensors named by _keep_in_fp32_modules_strict -> float32 (as
    from_pretrained leaves them); the rest as constructed. No gradients."""
    pat = fp32_pattern(model, dtype) if keep_fp32 else None
    for mname, mod in model.named_modules():
        for kind in ("_parameters", "_buffers"):
            table = getattr(mod, kind)
            for n, t in list(table.items()):
                if t is None:
                    continue
                full = f"{mname}.{n}" if mname else n
                want = t.dtype
                if t.is_floating_point() and pat is not None and pat.search(full):
                    want = torch.float32
                if want != t.dtype:
                    t2 = torch.empty_like(t, dtype=want, device="meta")
                    table[n] = nn.Parameter(t2, requires_grad=False) if kind == "_parameters" else t2
    model.requires_grad_(False)


def rebuild_nonpersistent(model, cfg):
    """Non-persistent buffers are not in a state_dict and hold garbage after to_empty. Recompute them as
    transformers does: build a fresh module of the same class from the config (on the CPU, outside the meta
    context) and copy its buffers and float attributes (e.g. the RoPE attention scaling). Returns the names."""
    done = []
    for mname, mod in model.named_modules():
        np_names = [n for n in getattr(mod, "_non_persistent_buffers_set", ()) if mod._buffers.get(n) is not None]
        if not np_names:
            continue
        try:
            with torch.device("cpu"):
                fresh = type(mod)(cfg)
        except Exception as e:  # noqa: BLE001
            raise RuntimeError(f"cannot rebuild the non-persistent buffers of {mname} ({type(mod).__name__}): {e}")
        for n in np_names:
            src = fresh._buffers[n]
            dst = mod._buffers[n]
            if src.shape != dst.shape:
                raise RuntimeError(f"{mname}.{n}: fresh shape {tuple(src.shape)} != {tuple(dst.shape)}")
            dst.copy_(src.to(device=dst.device, dtype=dst.dtype))
            done.append(f"{mname}.{n}" if mname else n)
        for k, v in vars(fresh).items():
            if isinstance(v, float) and not k.startswith("_"):
                setattr(mod, k, v)
    return done


def _leaf(name):
    return name.rsplit(".", 1)[-1]


@torch.no_grad()
def init_weights(model, seed):
    """Every parameter and persistent buffer, on its device, with the scheme of `dsv4 mkmodel`.
    Returns {"rules": {rule: count}, "fallback": [names initialised by a generic rule]}."""
    dev = next(model.parameters()).device
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    rules, fallback = {}, []
    owner = {}
    for mname, mod in model.named_modules():
        for n in list(mod._parameters) + list(mod._buffers):
            owner[f"{mname}.{n}" if mname else n] = mod
    seen = set()
    entries = list(model.named_parameters(remove_duplicate=False)) + [
        (n, b) for n, b in model.named_buffers(remove_duplicate=False)]
    np_names = set()
    for mname, mod in model.named_modules():
        for n in getattr(mod, "_non_persistent_buffers_set", ()):
            np_names.add(f"{mname}.{n}" if mname else n)
    for name, t in entries:
        if name in np_names or id(t) in seen:
            continue
        seen.add(id(t))
        mod, leaf = owner[name], _leaf(name)
        cls = type(mod).__name__

        def normal(std, rule):
            t.normal_(0.0, std, generator=g)
            rules[rule] = rules.get(rule, 0) + 1

        def const(v, rule):
            t.fill_(v)
            rules[rule] = rules.get(rule, 0) + 1

        if leaf == "tid2eid":  # hash routing: k distinct experts per token id
            E = getattr(model.config, "n_routed_experts")
            V, k = t.shape
            for a in range(0, V, 16384):
                b = min(V, a + 16384)
                t[a:b] = torch.rand(b - a, E, device=dev, generator=g).topk(k, dim=-1).indices.to(t.dtype)
            rules["tid2eid"] = rules.get("tid2eid", 0) + 1
        elif not t.is_floating_point():
            const(0, "zero (integer)")
            fallback.append(name)
        elif cls.endswith("RMSNorm") and leaf == "weight":
            const(1.0, "norm weight = 1")
        elif isinstance(mod, nn.Embedding):
            normal(1.0, "embedding N(0,1)")
        elif leaf == "sinks":
            normal(1.0, "sinks N(0,1)")
        elif leaf == "position_bias":
            normal(0.5, "position_bias N(0,0.5^2)")
        elif leaf in ("e_score_correction_bias",):
            const(0.0, "router bias 0")
        elif leaf in ("base", "hc_base"):
            const(0.0, "HC base 0")
        elif leaf in ("scale", "hc_scale"):
            const(1.0, "HC scale 1")
        elif t.dim() >= 2:
            normal(1.0 / math.sqrt(t.shape[-1]), "matrix N(0,1/in)")
        else:
            const(0.0, "zero (unrecognised vector)")
            fallback.append(name)
    return {"rules": rules, "fallback": fallback}


def build_model(cfg, dtype, device, seed, keep_fp32=True):
    """Meta construction -> dtypes as from_pretrained (keep_fp32) or as constructed -> to_empty(device) ->
    init on the device -> RoPE buffers recomputed. Returns (model, info)."""
    t0 = time.perf_counter()
    with torch.device("meta"):
        model = construct(cfg, dtype)
    set_dtypes(model, dtype, keep_fp32)
    if model.lm_head.weight is model.model.embed_tokens.weight:
        raise RuntimeError("lm_head is tied to the embedding; V4 has a separate head")
    t1 = time.perf_counter()
    model.to_empty(device=device)
    t2 = time.perf_counter()
    init = init_weights(model, seed)
    rebuilt = rebuild_nonpersistent(model, model.config)
    model.eval()
    if device.type == "cuda":
        torch.cuda.synchronize()
    t3 = time.perf_counter()
    meta_left = [n for n, t in list(model.named_parameters()) + list(model.named_buffers()) if t.is_meta]
    if meta_left:
        raise RuntimeError(f"tensors left on the meta device: {meta_left[:5]}")
    info = {
        "construct_s": round(t1 - t0, 3), "to_empty_s": round(t2 - t1, 3), "init_s": round(t3 - t2, 3),
        "init_rules": init["rules"], "init_fallback": init["fallback"], "recomputed_buffers": rebuilt,
        "param_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
        "buffer_bytes": sum(b.numel() * b.element_size() for b in model.buffers()),
        "param_dtypes": dict(sorted(_dtype_bytes(model).items())),
        "keep_fp32_strict": keep_fp32,
        "experts_implementation": getattr(model.config, "_experts_implementation", None),
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
    }
    return model, info


def fmt_bytes(n):
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.2f} MiB"


def _dtype_bytes(model):
    out = {}
    for p in model.parameters():
        k = str(p.dtype).replace("torch.", "")
        out[k] = out.get(k, 0) + p.numel() * p.element_size()
    return out


# ----------------------------------------------------------------------------------------------
# Running: version-independent forward (the cache keyword changed from past_key_values to cache in 5.2x)
# ----------------------------------------------------------------------------------------------

class Runner:
    def __init__(self, model):
        self.model = model
        params = inspect.signature(model.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"
        self.keep_kw = ("logits_to_keep" if "logits_to_keep" in params
                        else "num_logits_to_keep" if "num_logits_to_keep" in params else None)

    def new_cache(self):
        from transformers import DynamicCache
        try:
            return DynamicCache(config=self.model.config)
        except TypeError:
            return None  # the model makes its own; read it back from the output

    def forward(self, ids, cache, last_only):
        kw = {"use_cache": True, self.cache_kw: cache}
        if last_only and self.keep_kw:
            kw[self.keep_kw] = 1
        out = self.model(input_ids=ids, **kw)
        c = None
        for k in ("cache", "past_key_values"):
            c = getattr(out, k, None) if k in out else None
            if c is not None:
                break
        return out.logits, (c if c is not None else cache)


@torch.inference_mode()
def probe_keep_fp32(experts_impl, dtype):
    """Whether a BF16 model with from_pretrained's float32 tensors runs. transformers 5.17's RMSNorm returns
    `weight * x.to(input_dtype)`, so a float32 norm weight makes a float32 activation that the next BF16
    linear refuses: from_pretrained(dtype=bfloat16) itself cannot run a forward there (fixed by 5.24's
    `(weight * x).to(input_dtype)`). Then the baseline keeps every tensor as constructed (BF16 but for
    what V4's __init__ makes float32), which is what _from_config(dtype=bfloat16) gives.
    Returns (ok, message)."""
    if dtype not in (torch.bfloat16, torch.float16):
        return True, "float32 model: nothing to keep"
    cfg, _ = make_config(official_config(TINY, 6), experts_impl)
    m, _ = build_model(cfg, dtype, torch.device("cpu"), 0, keep_fp32=True)
    try:
        m(input_ids=torch.arange(2, 42).view(2, 20), use_cache=False)
        return True, "from_pretrained's float32 tensors kept"
    except RuntimeError as e:
        return False, (f"transformers {transformers.__version__}: a {str(dtype).replace('torch.', '')} forward with "
                       f"from_pretrained's float32 tensors fails ({str(e).splitlines()[0][:160]}); tensors kept as "
                       "constructed (as _from_config(dtype=...) makes them)")


# ----------------------------------------------------------------------------------------------
# Verification of the meta-device build (tiny configs, CPU)
# ----------------------------------------------------------------------------------------------

def _state(model):
    return {k: v for k, v in model.state_dict().items()}


def _nonpersistent(model):
    out = {}
    for mname, mod in model.named_modules():
        for n in getattr(mod, "_non_persistent_buffers_set", ()):
            b = mod._buffers.get(n)
            if b is not None:
                out[f"{mname}.{n}" if mname else n] = b
    return out


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


@torch.inference_mode()
def verify(experts_impl, seed, log):
    """Returns a dict of results (ok: False if the meta build is wrong)."""
    keep_fp32, _ = probe_keep_fp32(experts_impl, torch.bfloat16)
    res = {"bf16_keep_fp32_strict": keep_fp32}
    failures = []
    torch.manual_seed(seed)
    cpu = torch.device("cpu")
    off = official_config(TINY, 6)  # every layer type, hash and top-k MoE
    cfg, _ = make_config(off, experts_impl)
    gen = torch.Generator().manual_seed(seed + 1)
    T = 136  # > window (32); 34 ratio-4 rows > index_topk (16); one ratio-128 row
    ids = torch.randint(2, off["vocab_size"], (2, T), generator=gen)

    # (a) float32: normally materialised model vs meta + to_empty + init, same weights
    ref = construct(copy.deepcopy(cfg), torch.float32).eval()
    meta, _ = build_model(copy.deepcopy(cfg), torch.float32, cpu, seed)
    ref_np, meta_np = _nonpersistent(ref), _nonpersistent(meta)
    if set(ref_np) != set(meta_np) or not ref_np:
        failures.append(f"non-persistent buffer names differ: {sorted(set(ref_np) ^ set(meta_np))}")
    bad_np = [k for k in ref_np if k in meta_np and not _same(ref_np[k], meta_np[k])]
    if bad_np:
        failures.append(f"non-persistent buffers differ from a normal build: {bad_np}")
    ref.load_state_dict(_state(meta), strict=True)
    lr = ref(input_ids=ids, use_cache=False).logits
    lm = meta(input_ids=ids, use_cache=False).logits
    finite = bool(torch.isfinite(lm).all())
    res["fp32_vs_materialised"] = {
        "nonpersistent_buffers": sorted(ref_np), "buffers_equal": not bad_np,
        "logits_max_abs_diff": float((lr - lm).abs().max()), "logits_finite": finite,
        "logit_std": float(lm.float().std()),
    }
    if not finite:
        failures.append("float32 logits not finite")
    if not torch.equal(lr, lm):
        failures.append(f"float32 logits differ from the materialised model by {float((lr - lm).abs().max()):.3g}")
    log(f"verify (a) float32, meta build vs normal build with the same weights: buffers "
        f"{'equal' if not bad_np else 'DIFFER'} ({len(ref_np)} non-persistent), logits max |diff| "
        f"{res['fp32_vs_materialised']['logits_max_abs_diff']:.3g}, std {res['fp32_vs_materialised']['logit_std']:.3f}")

    # (c) prefill + one-token decode steps (the timed path) against the full forward, float32
    runner = Runner(meta)
    P = 66  # 66 % 4 = 2: decode crosses ratio-4 and the ratio-128 boundary
    cache = runner.new_cache()
    logits, cache = runner.forward(ids[:, :P], cache, last_only=False)
    rows = [logits[:, -1]]
    for t in range(P, T - 1):
        logits, cache = runner.forward(ids[:, t:t + 1], cache, last_only=True)
        rows.append(logits[:, -1])
    inc = torch.stack(rows, dim=1)
    full = lm[:, P - 1:T - 1]
    d = float((inc - full).abs().max())
    res["fp32_decode_vs_full"] = {"prefill": P, "decode_steps": T - 1 - P, "max_abs_diff": d}
    if not (d < 1e-3):
        failures.append(f"prefill + decode differs from the full forward by {d:.3g}")
    log(f"verify (c) float32, prefill {P} + {T - 1 - P} decode steps vs full forward: max |diff| {d:.3g}")
    del ref, meta

    # (b) bfloat16: meta build vs from_pretrained(dtype=bfloat16) of its own save_pretrained output (or, where
    # that cannot run a forward, vs a normal _from_config(dtype=bfloat16) build given the same weights)
    tmp = tempfile.mkdtemp(prefix="hf_baseline_verify_")
    with contextlib.suppress(Exception):
        transformers.utils.logging.disable_progress_bar()
    key = "bf16_vs_from_pretrained" if keep_fp32 else "bf16_vs_materialised"
    try:
        mb, _ = build_model(copy.deepcopy(cfg), torch.bfloat16, cpu, seed, keep_fp32=keep_fp32)
        sm = _state(mb)
        if keep_fp32:
            mb.save_pretrained(tmp)
            other, info = DeepseekV4ForCausalLM.from_pretrained(
                tmp, output_loading_info=True, attn_implementation="eager", dtype=torch.bfloat16,
                **({"experts_implementation": experts_impl} if experts_impl != "default" else {}))
            lost = {k: v for k, v in info.items() if v}
            if lost:
                failures.append(f"from_pretrained loading info not clean: {lost}")
        else:
            other = construct(copy.deepcopy(cfg), torch.bfloat16)
            other.load_state_dict(sm, strict=True)
        other.eval()
        so = _state(other)
        names_diff = sorted(set(sm) ^ set(so))
        dt_diff = [k for k in sm if k in so and sm[k].dtype != so[k].dtype]
        val_diff = [k for k in sm if k in so and sm[k].dtype == so[k].dtype and not torch.equal(sm[k], so[k])]
        npm, npo = _nonpersistent(mb), _nonpersistent(other)
        np_diff = [k for k in npm if k not in npo or not _same(npm[k], npo[k])]
        lb = mb(input_ids=ids, use_cache=False).logits
        lo = other(input_ids=ids, use_cache=False).logits
        res[key] = {
            "state_names_differ": names_diff, "dtypes_differ": dt_diff, "values_differ": val_diff,
            "nonpersistent_differ": np_diff, "logits_equal": bool(torch.equal(lb, lo)),
            "logits_max_abs_diff": float((lb.float() - lo.float()).abs().max()),
            "logits_finite": bool(torch.isfinite(lb).all()),
            "float32_tensors": sorted({re.sub(r"\.\d+\.", ".N.", k) for k, v in sm.items()
                                      if v.dtype == torch.float32}),
        }
        r = res[key]
        if names_diff or dt_diff or val_diff or np_diff:
            failures.append(f"bf16 meta build differs: names {names_diff[:3]}, dtypes {dt_diff[:3]}, values "
                            f"{val_diff[:3]}, non-persistent {np_diff[:3]}")
        if not r["logits_equal"]:
            failures.append(f"bf16 logits differ by {r['logits_max_abs_diff']:.3g}")
        if not r["logits_finite"]:
            failures.append("bf16 logits not finite")
        log(f"verify (b) bfloat16, meta build vs {'from_pretrained' if keep_fp32 else 'a normal bf16 build'} of "
            f"the same weights: {len(sm)} tensors, dtypes {'equal' if not dt_diff else 'DIFFER'}, values "
            f"{'equal' if not val_diff else 'DIFFER'}, buffers {'equal' if not np_diff else 'DIFFER'}, logits "
            f"{'identical' if r['logits_equal'] else 'DIFFER'}")
        del mb, other
    except Exception as e:  # noqa: BLE001
        res[key] = {"error": f"{type(e).__name__}: {e}"}
        failures.append(f"bf16 check raised {type(e).__name__}: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    gc.collect()
    res["ok"] = not failures
    res["failures"] = failures
    return res


# ----------------------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------------------

class Clock:
    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def start(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def stop_ms(self, s):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            e.synchronize()
            return s.elapsed_time(e)
        return (time.perf_counter() - s) * 1000.0


def is_oom(e):
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(e, oom)) or "out of memory" in str(e).lower()


@torch.inference_mode()
def run_batch(runner, device, B, P, D, warmup, vocab, seed, n_layers):
    clock = Clock(device)
    g = torch.Generator(device="cpu").manual_seed(seed * 1000003 + B)
    ids = torch.randint(2, vocab, (B, P), generator=g).to(device)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
    cache = runner.new_cache()
    s = clock.start()
    logits, cache = runner.forward(ids, cache, last_only=True)
    nxt = logits[:, -1].argmax(-1, keepdim=True)
    prefill_ms = clock.stop_ms(s)
    first = logits[:, -1].float()
    finite = bool(torch.isfinite(first).all())
    lstd = float(first.std())
    steps = []
    for i in range(warmup + D):
        s = clock.start()
        logits, cache = runner.forward(nxt, cache, last_only=True)
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        ms = clock.stop_ms(s)
        if i >= warmup:
            steps.append(ms)
        finite = finite and bool(torch.isfinite(logits).all())
    med, mean = statistics.median(steps), statistics.fmean(steps)
    r = {
        "batch": B, "prompt": P, "decode_steps": D, "warmup_steps": warmup,
        "prefill_ms": round(prefill_ms, 3), "prefill_tok_s": round(B * P / (prefill_ms / 1000.0), 2),
        "decode_ms_per_step_median": round(med, 3), "decode_ms_per_step_mean": round(mean, 3),
        "decode_ms_per_step_min": round(min(steps), 3), "decode_ms_per_step_max": round(max(steps), 3),
        "decode_ms_per_layer_median": round(med / n_layers, 4), "decode_ms_per_layer_mean": round(mean / n_layers, 4),
        "decode_tok_s": round(B / (med / 1000.0), 2), "decode_step_ms": [round(x, 3) for x in steps],
        "logits_finite": finite, "prefill_last_logit_std": round(lstd, 4),
    }
    if device.type == "cuda":
        r["peak_memory_bytes"] = torch.cuda.max_memory_allocated(device)
        r["peak_memory_gib"] = round(r["peak_memory_bytes"] / 2**30, 2)
    del cache, logits
    return r


def gpu_info(device):
    if device.type != "cuda":
        return {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads()}
    p = torch.cuda.get_device_properties(device)
    return {"name": torch.cuda.get_device_name(device), "capability": list(torch.cuda.get_device_capability(device)),
            "total_memory_bytes": p.total_memory, "cuda": torch.version.cuda,
            "driver_free_bytes_at_start": torch.cuda.mem_get_info(device)[0]}


def parse_batches(vals):
    out = []
    for v in vals or ["1,8,16,64"]:
        for x in str(v).split(","):
            if x.strip():
                out.append(int(x))
    if not out or min(out) < 1:
        raise SystemExit("hf_baseline: --batch needs positive integers")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=4, help="first N Flash layers (default 4)")
    ap.add_argument("--batch", action="append", help="batch sizes, repeatable or comma list (default 1,8,16,64)")
    ap.add_argument("--prompt", type=int, default=16, help="prompt tokens per sequence (default 16)")
    ap.add_argument("--decode", type=int, default=8, help="timed decode steps (default 8)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed decode steps before the timed ones (default 1)")
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16",
                    help="weight dtype (default bf16; fp32 for small checks)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--tiny", action="store_true", help="tiny config of the same structure (CPU smoke run)")
    ap.add_argument("--experts", default="default",
                    help="transformers experts implementation: default (transformers' choice: grouped_mm), "
                         "eager, grouped_mm, batched_mm")
    ap.add_argument("--no-verify", action="store_true", help="skip the tiny meta-build check on the CPU")
    ap.add_argument("--json", help="write the results here (rewritten after each batch size)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    batches = parse_batches(a.batch)
    if a.layers < 1 or a.prompt < 1 or a.decode < 1 or a.warmup < 0:
        raise SystemExit("hf_baseline: --layers, --prompt, --decode must be >= 1, --warmup >= 0")
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("hf_baseline: --device cuda but torch sees no GPU (use --device cpu)")
    device = torch.device(a.device)
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[a.dtype]

    def log(msg):
        print(msg, flush=True)

    shapes = TINY if a.tiny else FLASH
    off = official_config(shapes, a.layers)
    out = {
        "tool": "bench/hf_baseline.py",
        "what": "transformers DeepseekV4ForCausalLM (eager PyTorch, attention eager), decode timed per step",
        "model": ("tiny (dsv4 mkmodel tiny preset shapes)" if a.tiny else "DeepSeek-V4-Flash shapes") +
                 f", first {a.layers} layers, compress ratios {off['compress_ratios'][:a.layers]}, "
                 f"{off['num_hash_layers']} hash-routed",
        "dtype": a.dtype, "weights_note": WEIGHTS_NOTE,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__},
        "device": gpu_info(device), "seed": a.seed,
        "args": {k: v for k, v in vars(a).items()}, "batches": batches,
        "config_keys": off, "results": [],
    }
    out["args"]["batch"] = batches

    def save():
        if a.json:
            d = os.path.dirname(os.path.abspath(a.json))
            os.makedirs(d, exist_ok=True)
            tmp = a.json + ".tmp"
            with open(tmp, "w") as f:
                json.dump(out, f, indent=1)
            os.replace(tmp, a.json)

    log(f"hf-baseline: torch {torch.__version__}, transformers {transformers.__version__}, "
        f"{out['device'].get('name', out['device'].get('cpu'))}")
    keep_fp32, why = probe_keep_fp32(a.experts, dtype)
    out["keep_fp32_strict"] = keep_fp32
    out["keep_fp32_note"] = why
    if not keep_fp32:
        log(f"hf-baseline: note: {why}")
    if not a.no_verify:
        t0 = time.perf_counter()
        v = verify(a.experts, a.seed, log)
        v["seconds"] = round(time.perf_counter() - t0, 2)
        out["verify"] = v
        save()
        if not v["ok"]:
            for f in v["failures"]:
                log(f"verify FAILED: {f}")
            raise SystemExit(2)
        log(f"verify: meta-device build OK ({v['seconds']} s)")

    cfg, how = make_config(off, a.experts)
    out["config_from"] = how
    out["transformers_config"] = {k: getattr(cfg, k, None) for k in
                                  ("layer_types", "mlp_layer_types", "compress_rates", "rope_parameters",
                                   "partial_rotary_factor", "qk_rope_head_dim")}
    try:
        model, info = build_model(cfg, dtype, device, a.seed, keep_fp32=keep_fp32)
    except Exception as e:  # noqa: BLE001
        out["build_error"] = f"{type(e).__name__}: {e}"
        out["build_oom"] = is_oom(e)
        save()
        log(f"hf-baseline: building the model failed: {out['build_error']}")
        raise SystemExit(3)
    out["build"] = info
    if device.type == "cuda":
        info["memory_allocated_after_build_bytes"] = torch.cuda.memory_allocated(device)
    log(f"hf-baseline: model {fmt_bytes(info['param_bytes'])} of parameters "
        f"({', '.join(f'{k} {fmt_bytes(v)}' for k, v in info['param_dtypes'].items())}), experts "
        f"{info['experts_implementation']}, attention {info['attn_implementation']}, config from {how}; built in "
        f"{info['construct_s'] + info['to_empty_s'] + info['init_s']:.1f} s")
    if info["init_fallback"]:
        log(f"hf-baseline: note: generic init for {info['init_fallback']}")
    save()

    runner = Runner(model)
    out["cache_keyword"] = runner.cache_kw
    # one untimed pass first (CUDA context, cuBLAS handles, allocator): batch 1, P tokens, 2 steps
    try:
        run_batch(runner, device, 1, a.prompt, 2, 0, off["vocab_size"], a.seed + 7, a.layers)
    except Exception as e:  # noqa: BLE001
        log(f"hf-baseline: warm-up failed: {type(e).__name__}: {e}")
    for B in batches:
        try:
            r = run_batch(runner, device, B, a.prompt, a.decode, a.warmup, off["vocab_size"], a.seed, a.layers)
            out["results"].append(r)
            mem = f", peak {r['peak_memory_gib']} GiB" if "peak_memory_gib" in r else ""
            log(f"hf-baseline batch {B:3d}: decode {r['decode_ms_per_step_median']:.2f} ms/step median "
                f"({r['decode_ms_per_step_mean']:.2f} mean), {r['decode_ms_per_layer_median']:.3f} ms/layer, "
                f"{r['decode_tok_s']:.1f} tok/s; prefill {a.prompt} tokens {r['prefill_ms']:.1f} ms "
                f"({r['prefill_tok_s']:.1f} tok/s){mem}{'' if r['logits_finite'] else '; LOGITS NOT FINITE'}")
        except Exception as e:  # noqa: BLE001
            oom = is_oom(e)
            out["results"].append({"batch": B, "error": "out of memory" if oom else f"{type(e).__name__}",
                                   "message": str(e)[:2000],
                                   "traceback": None if oom else traceback.format_exc()[-4000:]})
            log(f"hf-baseline batch {B:3d}: {'OUT OF MEMORY' if oom else 'FAILED'}: {str(e).splitlines()[0][:200]}")
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
        save()
    if a.json:
        log(f"hf-baseline: wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
