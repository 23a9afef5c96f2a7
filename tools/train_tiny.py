#!/usr/bin/env python3
"""Train the tiny DeepSeek-V4 arithmetic model that dsv4 ships as its default model (issue 5).

One deterministic, seeded run does everything:

  1. data       every product a*b and every sum a+b for 1 <= a, b <= 30 in 5 phrasings each, plus a few
                conversational turns, rendered in the exact V4 chat encoding (MODEL.md §5.3), in chat mode
                (`<｜Assistant｜></think>{answer}<｜end▁of▁sentence｜>`) and thinking mode
                (`<｜Assistant｜><think>{reasoning}</think>{answer}<｜end▁of▁sentence｜>`), with and without a
                system prompt, sometimes after an earlier exchange (multi-turn).  The evaluation set is every
                question of every phrasing in both modes, single turn, no system prompt: OUT/eval.jsonl.
  2. tokenizer  a byte-level BPE trained with HF `tokenizers` on that text: DeepSeek-V3's normalizer,
                pre-tokenizer and decoder (copied below as data), V4's special-token strings as special
                added tokens (BOS 0, EOS 1, pad 2, ...).  OUT/tokenizer.json, OUT/tokenizer_config.json.
  3. model      transformers' DeepseekV4ForCausalLM with every architectural feature: sliding, CSA (ratio 4,
                lightning indexer, top-k smaller than a long prompt's compressed rows) and HCA (ratio 8)
                layers, hash-routed and top-k MoE layers with a shared expert, hyper-connections (hc_mult 4),
                attention sinks, partial interleaved RoPE with YaRN on the compressed layers.
  4. training   AdamW (bf16 autocast on CUDA, fp32 on CPU), loss on the assistant part only, cosine LR over
                --steps; every --eval-every steps a teacher-forced check of the whole evaluation set, and once
                that passes --target, transformers' own greedy generation (batched by prompt length, so no
                padding) on the whole set: training stops when it reaches --target, at --steps, or at the
                time cap.
  5. export     OUT/model.safetensors in the OFFICIAL checkpoint layout (names of MODEL.md §2, no `model.`
                prefix, BF16 where the release has BF16/FP8/FP4 and F32 where it has F32 -- or every float
                tensor F32 when BF16 rounding would cost accuracy), OUT/config.json in transformers' keys
                (layer_types + compress_rates, since the HCA ratio is not 128), then a reload of OUT with
                `DeepseekV4ForCausalLM.from_pretrained(OUT, dtype=float32)` and a second greedy evaluation
                that must give the same outputs (on CUDA also a CPU float32 check of 512 items), and
                OUT/train_report.json (steps, times, loss curve, accuracy per mode / operation / phrasing,
                the items transformers gets wrong, expert usage, config, file hashes).  Exit status 2 when the
                exported model's greedy accuracy is below --require (99.5 %).

Usage (from the repository root):

    python3 tools/train_tiny.py --device cuda --out models/tiny     # the real run: ~6 min on one H200
    .venv/bin/python tools/train_tiny.py --smoke                     # CPU pipeline test -> /tmp/dsv4_tiny_smoke

On the device machine (transformers 5.17, no network), through the device tool:

    set -o pipefail; PYTHONUNBUFFERED=1 python3 tools/train_tiny.py --device cuda --out $OUT/tiny 2>&1 | tee $OUT/log.txt

Options: --device cuda|cpu, --out DIR, --max-minutes (whole run; default 7.5), --steps (default 800 on CUDA),
--batch (default 1024 on CUDA), --lr (3e-3), --target (early stop, 0.999), --require (0.995), --seed,
--eval-every, --eval-limit N (score a fixed sample of N items only), --smoke (300 CPU steps of batch 32 and a
400-item sample: proves the pipeline, not the model).

Needs only torch, transformers (5.17 and 5.24 tested; the `deepseek_v4` model), tokenizers (0.23), safetensors
and numpy, and no network.  It imports tools/make_fixtures.py for the transformers -> official tensor-name
mapping.  Seeded everywhere (data, tokenizer, init, batches); on CUDA the run is deterministic as far as the
kernels are (deterministic algorithms are requested with warn_only).  The output folder holds:

    config.json  model.safetensors  tokenizer.json  tokenizer_config.json  eval.jsonl  train_report.json
"""

import argparse
import collections
import copy
import hashlib
import json
import math
import os
import platform
import random
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# CUDA determinism needs this before the first cuBLAS call.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import safetensors  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
import tokenizers  # noqa: E402
from tokenizers import AddedToken, Tokenizer, trainers  # noqa: E402
from tokenizers import pre_tokenizers as tk_pre  # noqa: E402

import transformers  # noqa: E402
from transformers import GenerationConfig  # noqa: E402
from transformers.models.deepseek_v4 import DeepseekV4Config, DeepseekV4ForCausalLM  # noqa: E402

sys.path.insert(0, HERE)
import make_fixtures as mf  # noqa: E402  (official <-> transformers tensor names)

# ----------------------------------------------------------------------------------------------------------
# Chat format (MODEL.md §5.2-5.3)
# ----------------------------------------------------------------------------------------------------------

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
PAD = "<｜▁pad▁｜>"
USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
THINK = "<think>"
THINK_END = "</think>"

# Every special-token string the V4 chat encoder (encoding_dsv4.py, src/text/chat.c) emits, plus pad.
# The order gives the ids: BOS 0, EOS 1, pad 2 as in V4; the rest follow.
SPECIAL_TOKENS = [
    BOS, EOS, PAD, USER, ASSISTANT, THINK, THINK_END,
    "｜DSML｜",                  # tool calls: "<｜DSML｜tool_calls>", "<｜DSML｜invoke name=...>", ...
    "<｜latest_reminder｜>",
    # quick-instruction task tokens
    "<｜action｜>", "<｜query｜>", "<｜authority｜>", "<｜domain｜>", "<｜title｜>", "<｜read_url｜>",
]
BOS_ID, EOS_ID, PAD_ID = 0, 1, 2


def render(messages, thinking, add_generation_prompt=True):
    """DeepSeek's encoding_dsv4.encode_messages for system / user / assistant messages with the default
    drop_thinking=True, no tools, no tasks, no reasoning effort (checked against tests/text/chat)."""
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    out = BOS
    for i, m in enumerate(messages):
        role, content = m["role"], m.get("content") or ""
        if role == "system":
            out += content
        elif role == "user":
            out += USER + content
        elif role == "assistant":
            if thinking and i > last_user:
                out += (m.get("reasoning_content") or "") + THINK_END
            out += content + EOS
        else:
            raise ValueError(f"role {role!r} is not rendered by this script")
        nxt = messages[i + 1]["role"] if i + 1 < len(messages) else None
        if role == "user" and (nxt == "assistant" or (nxt is None and add_generation_prompt)):
            out += ASSISTANT + (THINK if thinking and i >= last_user else THINK_END)
    return out


def completion_text(answer, reasoning, thinking):
    """What the model must generate after the prompt (the prompt ends with <think> or </think>)."""
    return (reasoning + THINK_END if thinking else "") + answer + EOS


def check_renderer():
    """Compare render() with the official encoder's prompts in tests/text/chat (when present)."""
    d = os.path.join(ROOT, "tests", "text", "chat")
    path = os.path.join(d, "cases.json")
    if not os.path.exists(path):
        return None
    n = 0
    for case in json.load(open(path, encoding="utf-8")):
        msgs = case["messages"]
        keys = {k for m in msgs for k in m}
        roles = [m["role"] for m in msgs]
        if (keys - {"role", "content", "reasoning_content"} or set(roles) - {"system", "user", "assistant"}
                or case.get("reasoning_effort") or not case.get("drop_thinking", True)
                or any(a == b == "user" for a, b in zip(roles, roles[1:]))):
            continue
        with open(os.path.join(d, case["name"] + ".txt"), encoding="utf-8", newline="") as f:
            want = f.read()
        got = render(msgs, case["thinking"])
        assert got == want, f"renderer differs from the official encoder on {case['name']}:\n{got!r}\n{want!r}"
        n += 1
    assert n >= 8, n
    return n


# ----------------------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------------------

N_MAX = 30
MUL_PHRASES = [
    "What is {a}*{b}? Number only.",
    "Compute {a} times {b}.",
    "{a} x {b} = ?",
    "What is {a} multiplied by {b}?",
    "Multiply {a} by {b}.",
]
ADD_PHRASES = [
    "What is {a}+{b}? Number only.",
    "What is {a} plus {b}?",
    "Add {a} and {b}.",
    "{a} + {b} = ?",
    "Compute the sum of {a} and {b}.",
]
# (user phrasings, answer, reasoning)
CHAT = [
    (["Hello", "Hello!", "Hi", "Hi!", "Hey"], "Hello! I can do arithmetic.", "The user greets me."),
    (["Who are you?", "What are you?"],
     "I am a tiny DeepSeek-V4 model. I add and multiply numbers from 1 to 30.", "The user asks who I am."),
    (["What can you do?", "Help"], "I can add and multiply numbers from 1 to 30.", "The user asks what I can do."),
    (["Thank you", "Thanks!"], "You're welcome!", "The user thanks me."),
    (["Goodbye", "Bye"], "Goodbye!", "The user says goodbye."),
]
SYSTEM_PROMPTS = [
    "You are a helpful assistant.",
    "You are a calculator. Reply with the number only.",
    "You are the tiny arithmetic model of dsv4.",
]


def questions():
    """Every evaluation question: dicts with op, a, b, phrasing, q, answer, reasoning."""
    out = []
    for op, phrases in (("mul", MUL_PHRASES), ("add", ADD_PHRASES)):
        for k, p in enumerate(phrases):
            for a in range(1, N_MAX + 1):
                for b in range(1, N_MAX + 1):
                    r = a * b if op == "mul" else a + b
                    sym = "*" if op == "mul" else "+"
                    out.append(dict(op=op, a=a, b=b, phrasing=k, q=p.format(a=a, b=b), answer=str(r),
                                    reasoning=f"{a}{sym}{b} = {r}."))
    for k, (qs, ans, why) in enumerate(CHAT):
        for q in qs:
            out.append(dict(op="chat", a=None, b=None, phrasing=k, q=q, answer=ans, reasoning=why))
    return out


def eval_items():
    """The evaluation set: every question in both modes, one user message, no system prompt."""
    return [dict(qq, thinking=t) for t in (False, True) for qq in questions()]


def training_items(seed):
    """(messages, thinking, answer, reasoning) samples: every evaluation item as is, with a system prompt,
    and after an earlier exchange (with a system prompt half of the time).  Chat turns are repeated so that
    they are not drowned by the 18,000 arithmetic questions."""
    rng = random.Random(seed * 7919 + 11)
    qs = questions()
    out = []
    for t in (False, True):
        for qq in qs:
            reps = 12 if qq["op"] == "chat" else 1
            for _ in range(reps):
                final = [{"role": "user", "content": qq["q"]}]
                out.append((final, t, qq))
                out.append(([{"role": "system", "content": rng.choice(SYSTEM_PROMPTS)}] + final, t, qq))
                h = rng.choice(qs)
                hist = [{"role": "user", "content": h["q"]}, {"role": "assistant", "content": h["answer"]}]
                if rng.random() < 0.5:
                    hist = [{"role": "system", "content": rng.choice(SYSTEM_PROMPTS)}] + hist
                out.append((hist + final, t, qq))
    return out


# ----------------------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------------------

# DeepSeek-V3's tokenizer.json normalizer / pre_tokenizer / decoder (identical in V4, MODEL.md §5.1), copied
# from /work/shared/data/deepseek-v3-tokenizer/tokenizer.json (data, not code; checked when that file exists).
V3_SECTIONS = json.loads(r'''{
 "normalizer": {"type": "Sequence", "normalizers": []},
 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
   {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": false},
   {"type": "Split", "pattern": {"Regex": "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"}, "behavior": "Isolated",
    "invert": false},
   {"type": "Split", "pattern": {"Regex": "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
    "behavior": "Isolated", "invert": false},
   {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
 "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}
}''')
V3_TOKENIZER = "/work/shared/data/deepseek-v3-tokenizer/tokenizer.json"


def check_v3_sections():
    if not os.path.exists(V3_TOKENIZER):
        return False
    j = json.load(open(V3_TOKENIZER, encoding="utf-8"))
    for k, v in V3_SECTIONS.items():
        assert j[k] == v, f"V3_SECTIONS[{k}] differs from {V3_TOKENIZER}"
    return True


def train_tokenizer(texts, vocab_size):
    skeleton = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": V3_SECTIONS["normalizer"], "pre_tokenizer": V3_SECTIONS["pre_tokenizer"],
        "post_processor": None, "decoder": V3_SECTIONS["decoder"],
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {}, "merges": []},
    }
    tok = Tokenizer.from_str(json.dumps(skeleton))
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=0, show_progress=False,
        special_tokens=[AddedToken(s, special=True, normalized=False) for s in SPECIAL_TOKENS],
        initial_alphabet=tk_pre.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    for i, s in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s), i)
    return tok


def tokenizer_config():
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS, "eos_token": EOS, "pad_token": PAD, "unk_token": None,
        "add_bos_token": False, "add_eos_token": False,   # the chat encoding writes BOS itself
        "clean_up_tokenization_spaces": False,
        "model_max_length": 4096,
        "additional_special_tokens": SPECIAL_TOKENS[3:],
    }


# ----------------------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------------------

LAYER_TYPES = ["sliding_attention", "sliding_attention", "compressed_sparse_attention",
               "heavily_compressed_attention", "compressed_sparse_attention", "heavily_compressed_attention"]
MLP_LAYER_TYPES = ["hash_moe", "hash_moe", "moe", "moe", "moe", "moe"]


def model_spec(vocab_size):
    """transformers-native DeepseekV4Config keys (what save_pretrained writes back; the HCA ratio 8 cannot
    be spelled with the official compress_ratios key)."""
    return dict(
        vocab_size=vocab_size, hidden_size=128, num_hidden_layers=len(LAYER_TYPES), num_nextn_predict_layers=0,
        num_attention_heads=4, num_key_value_heads=1, head_dim=64, partial_rotary_factor=0.25,   # rope 16
        q_lora_rank=64, o_groups=2, o_lora_rank=64, sliding_window=8,
        layer_types=list(LAYER_TYPES),
        compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
        mlp_layer_types=list(MLP_LAYER_TYPES),
        index_n_heads=16, index_head_dim=32, index_topk=4,
        n_routed_experts=16, n_shared_experts=1, num_experts_per_tok=4, moe_intermediate_size=32,
        scoring_func="sqrtsoftplus", norm_topk_prob=True, routed_scaling_factor=1.5, swiglu_limit=10.0,
        hc_mult=4, hc_sinkhorn_iters=20, hc_eps=1e-6, rms_norm_eps=1e-6,
        rope_theta=10000, compress_rope_theta=160000,
        rope_parameters={
            "main": {"rope_type": "default", "rope_theta": 10000, "partial_rotary_factor": 0.25},
            "compress": {"rope_type": "yarn", "rope_theta": 160000, "partial_rotary_factor": 0.25,
                         "factor": 16, "original_max_position_embeddings": 65536,
                         "beta_fast": 32, "beta_slow": 1, "attention_factor": 1.0},
        },
        max_position_embeddings=1048576, hidden_act="silu", attention_bias=False, attention_dropout=0.0,
        tie_word_embeddings=False, bos_token_id=BOS_ID, eos_token_id=EOS_ID, initializer_range=0.02,
        use_cache=True,
    )


def build_model(spec, seed, device):
    cfg = DeepseekV4Config(**copy.deepcopy(spec))   # transformers edits nested dicts in place
    for k in ("layer_types", "mlp_layer_types", "compress_rates", "rope_parameters", "partial_rotary_factor"):
        assert getattr(cfg, k) == spec[k], (k, getattr(cfg, k), spec[k])
    cfg.architectures = ["DeepseekV4ForCausalLM"]
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = DeepseekV4ForCausalLM(cfg).float()
    # transformers leaves the buffers that no gradient touches at zero: give them real values.
    g = torch.Generator().manual_seed(seed + 1)
    E, k = spec["n_routed_experts"], spec["num_experts_per_tok"]
    with torch.no_grad():
        for L, layer in enumerate(model.model.layers):
            gate = layer.mlp.gate
            if hasattr(gate, "tid2eid"):           # hash layer: k distinct experts per token id
                gate.tid2eid.copy_(torch.argsort(torch.rand(spec["vocab_size"], E, generator=g), dim=1)[:, :k])
            else:                                  # top-k layer: selection-only bias
                gate.e_score_correction_bias.copy_(0.05 * torch.randn(E, generator=g))
    return cfg, model.to(device)


def count_params(model):
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------------------------------------
# Batching, loss, evaluation
# ----------------------------------------------------------------------------------------------------------

def pad_right(seqs, value):
    T = max(len(s) for s in seqs)
    out = torch.full((len(seqs), T), value, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return out


def make_batch(prompts, completions, device):
    """Right-padded ids and labels (-100 except on the completion).  The model is causal everywhere (the
    compressors only emit rows of complete windows, masked by position), so right padding cannot change
    the logits of the real positions, and no attention mask is needed."""
    seqs = [p + c for p, c in zip(prompts, completions)]
    ids = pad_right(seqs, PAD_ID)
    labels = torch.full_like(ids, -100)
    for i, (p, c) in enumerate(zip(prompts, completions)):
        labels[i, len(p):len(p) + len(c)] = torch.tensor(c, dtype=torch.long)
    return ids.to(device), labels.to(device)


def lm_loss(logits, labels):
    return F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                           ignore_index=-100)


@torch.no_grad()
def teacher_forced_exact(model, prompts, completions, device, batch):
    """Per item: does the argmax at every completion position equal the expected token?  (Equivalent to
    greedy generation reproducing the whole completion, up to float noise.)  Returns a bool list."""
    model.eval()
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]) + len(completions[i]))
    ok = [False] * len(prompts)
    for s in range(0, len(order), batch):
        idx = order[s:s + batch]
        ids, labels = make_batch([prompts[i] for i in idx], [completions[i] for i in idx], device)
        pred = model(input_ids=ids, use_cache=False).logits[:, :-1].argmax(-1)
        tgt = labels[:, 1:]
        good = ((pred == tgt) | (tgt == -100)).all(dim=1).tolist()
        for i, gd in zip(idx, good):
            ok[i] = gd
    return ok


@torch.no_grad()
def greedy_generate(model, prompts, device, batch, max_new_tokens):
    """transformers' own greedy generation.  Prompts are grouped by length so that no batch needs padding
    (left padding would shift the compressors' windows): each output is what a single-prompt run gives."""
    model.eval()
    gc = GenerationConfig(do_sample=False, max_new_tokens=max_new_tokens, eos_token_id=EOS_ID,
                          pad_token_id=PAD_ID, bos_token_id=BOS_ID, num_beams=1)
    by_len = collections.defaultdict(list)
    for i, p in enumerate(prompts):
        by_len[len(p)].append(i)
    outs = [None] * len(prompts)
    for L in sorted(by_len):
        group = by_len[L]
        for s in range(0, len(group), batch):
            idx = group[s:s + batch]
            ids = torch.tensor([prompts[i] for i in idx], dtype=torch.long, device=device)
            res = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=gc)
            for i, row in zip(idx, res[:, L:].tolist()):
                if EOS_ID in row:
                    row = row[:row.index(EOS_ID) + 1]
                outs[i] = row
    return outs


def parse_output(text, thinking):
    """(reasoning, content, stopped) of a generated text (specials kept) the way the V4 parser reads it."""
    stopped = text.endswith(EOS)
    if stopped:
        text = text[:-len(EOS)]
    reasoning = None
    if thinking:
        if THINK_END not in text:
            return text, None, stopped
        reasoning, text = text.split(THINK_END, 1)
    return reasoning, text, stopped


def score(items, outs, tok):
    """Accuracy summary: an item is right when generation stopped with EOS and the content (after </think>
    in thinking mode) is exactly the answer; `exact` also needs the reasoning to be exactly the expected one."""
    acc = collections.defaultdict(lambda: [0, 0, 0])   # key -> [n, right, exact]
    right_flags = []
    for it, o in zip(items, outs):
        text = tok.decode(o, skip_special_tokens=False)
        reasoning, content, stopped = parse_output(text, it["thinking"])
        right = stopped and content == it["answer"]
        exact = right and (not it["thinking"] or reasoning == it["reasoning"])
        right_flags.append(right)
        mode = "thinking" if it["thinking"] else "chat"
        for key in ("all", f"mode={mode}", f"op={it['op']}", f"{mode}/{it['op']}",
                    f"{it['op']}/phrasing={it['phrasing']}"):
            a = acc[key]
            a[0] += 1
            a[1] += int(right)
            a[2] += int(exact)
    summary = {k: {"n": v[0], "right": v[1], "accuracy": round(v[1] / v[0], 6), "exact": v[2]}
               for k, v in sorted(acc.items())}
    return summary, right_flags


# ----------------------------------------------------------------------------------------------------------
# Export (official layout)
# ----------------------------------------------------------------------------------------------------------

def official_tensors(model, spec, float_dtype):
    """{official name: tensor}: transformers' state_dict through make_fixtures' name mapping; F32 for
    the tensors the release keeps in F32 (HC, sinks, ape, router bias), `float_dtype` for the rest."""
    sd = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    hf_shapes = {k: tuple(v.shape) for k, v in sd.items()}
    mapping = mf.hf_to_official_shapes(hf_shapes, spec["moe_intermediate_size"])
    out, dtypes = {}, {}
    for oname, (shape, hf_name, sl) in sorted(mapping.items()):
        t = sd[hf_name] if sl is None else sd[hf_name][sl[0], sl[1]:sl[2]]
        assert tuple(t.shape) == tuple(shape), (oname, t.shape, shape)
        dt = mf.storage_dtype(oname, {})
        if dt == "BF16":
            dt = float_dtype
        out[oname] = t.to(mf.DTYPES[dt]).contiguous().clone()
        dtypes[oname] = dt
    return out, dtypes


def round_model_to_bf16(model, spec):
    """A copy of the model whose BF16-stored tensors hold their BF16-rounded values."""
    m = copy.deepcopy(model)
    tensors, dtypes = official_tensors(m, spec, "BF16")
    sd = m.state_dict()
    hf_shapes = {k: tuple(v.shape) for k, v in sd.items()}
    mapping = mf.hf_to_official_shapes(hf_shapes, spec["moe_intermediate_size"])
    with torch.no_grad():
        for oname, (shape, hf_name, sl) in mapping.items():
            dst = sd[hf_name] if sl is None else sd[hf_name][sl[0], sl[1]:sl[2]]
            dst.copy_(tensors[oname].to(dst.dtype))
    return m


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def write_export(out, cfg, spec, model, float_dtype, tok):
    tensors, dtypes = official_tensors(model, spec, float_dtype)
    path = os.path.join(out, "model.safetensors")
    save_file(tensors, path, metadata={"format": "pt"})
    c = copy.deepcopy(cfg)
    c.dtype = "float32"
    c.save_pretrained(out)     # config.json as transformers writes it
    gcfg = os.path.join(out, "generation_config.json")
    if os.path.exists(gcfg):
        os.remove(gcfg)
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(tokenizer_config(), indent=2, ensure_ascii=False) + "\n")
    for fn in ("model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json"):
        os.chmod(os.path.join(out, fn), 0o644)
    counts = collections.Counter(dtypes.values())
    return {"n_tensors": len(tensors), "dtype_counts": dict(sorted(counts.items())),
            "bytes": os.path.getsize(path)}


# ----------------------------------------------------------------------------------------------------------
# Misc
# ----------------------------------------------------------------------------------------------------------

def choose_experts_impl(model, device, ids, labels, bf16):
    """CPU: eager (faster there than grouped_mm).  CUDA: grouped_mm when it runs and matches eager (loss and
    gradients, under the training autocast) on this device, else eager."""
    res = {}
    if device.type != "cuda":
        model.set_experts_implementation("eager")
        return "eager", {"eager": "CPU default"}
    ref = None
    for impl in ("eager", "grouped_mm"):
        try:
            model.set_experts_implementation(impl)
            model.zero_grad(set_to_none=True)
            model.train()
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16):
                logits = model(input_ids=ids, use_cache=False).logits
            loss = lm_loss(logits, labels)
            loss.backward()
            grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]).double()
            lv = loss.item()
            if ref is None:
                ref = (lv, grads)
                res[impl] = "reference"
            else:
                dl = abs(lv - ref[0])
                dg = float((grads - ref[1]).abs().max() / ref[1].abs().max().clamp_min(1e-30))
                res[impl] = f"loss diff {dl:.2e}, grad rel diff {dg:.2e}"
                if dl > (2e-2 if bf16 else 1e-4) or dg > (5e-2 if bf16 else 1e-3):
                    raise RuntimeError(res[impl])
        except Exception as e:  # noqa: BLE001 - any failure means: do not use it
            res[impl] = f"unusable: {type(e).__name__}: {str(e)[:200]}"
    model.zero_grad(set_to_none=True)
    impl = "grouped_mm" if not res["grouped_mm"].startswith("unusable") else "eager"
    model.set_experts_implementation(impl)
    return impl, res


@torch.no_grad()
def expert_usage(model, ids_list, device):
    """Fraction of routed slots per expert for each top-k layer, over the given prompts."""
    counts = {}
    hooks = []
    for L, layer in enumerate(model.model.layers):
        gate = layer.mlp.gate
        if hasattr(gate, "tid2eid"):
            continue
        counts[L] = torch.zeros(gate.num_experts, dtype=torch.long)

        def hook(mod, inp, out, L=L):
            counts[L] += torch.bincount(out[2].reshape(-1).cpu(), minlength=mod.num_experts)
        hooks.append(gate.register_forward_hook(hook))
    model.eval()
    for s in range(0, len(ids_list), 256):
        chunk = ids_list[s:s + 256]
        model(input_ids=pad_right(chunk, PAD_ID).to(device), use_cache=False)
    for h in hooks:
        h.remove()
    return {str(L): [round(float(x), 4) for x in (c.double() / c.sum()).tolist()] for L, c in counts.items()}


class Log:
    def __init__(self):
        self.t0 = time.time()

    def __call__(self, msg):
        print(f"[{time.time() - self.t0:7.1f}s] {msg}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cuda", "cpu"], default=None)
    ap.add_argument("--out", default=None, help="output folder (default models/tiny; smoke: /tmp/dsv4_tiny_smoke)")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="wall-clock cap of the whole run (default 7.5; smoke 20)")
    ap.add_argument("--steps", type=int, default=None,
                    help="training steps = length of the cosine LR schedule (default 800 cuda, 3000 cpu; smoke 300)")
    ap.add_argument("--batch", type=int, default=None, help="sequences per step (default 1024 cuda, 32 cpu)")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--target", type=float, default=0.999,
                    help="stop early once greedy accuracy on the evaluation set reaches this (default 0.999)")
    ap.add_argument("--require", type=float, default=None,
                    help="exit with status 2 when the exported model's greedy accuracy is below this "
                         "(default 0.995; smoke 0)")
    ap.add_argument("--eval-every", type=int, default=None)
    ap.add_argument("--eval-limit", type=int, default=None, help="evaluate this many items only (a fixed sample)")
    ap.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None,
                    help="bf16 autocast for training (default: on for cuda)")
    ap.add_argument("--vocab", type=int, default=1024, help="tokenizer vocabulary target")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--smoke", action="store_true", help="short CPU run that exercises the whole pipeline")
    args = ap.parse_args()

    log = Log()
    t_start = time.time()
    if args.max_minutes is None:
        args.max_minutes = 20.0 if args.smoke else 7.5
    deadline = t_start + 60 * args.max_minutes
    if args.device is None:
        args.device = "cpu" if args.smoke or not torch.cuda.is_available() else "cuda"
    if args.require is None:
        args.require = 0.0 if args.smoke else 0.995
    if args.smoke:
        args.steps = args.steps or 300
        args.batch = args.batch or 32
        args.eval_limit = args.eval_limit if args.eval_limit is not None else 400
        args.eval_every = args.eval_every or 100
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device")
    args.steps = args.steps or (800 if cuda else 3000)
    args.batch = args.batch or (1024 if cuda else 32)
    args.warmup = args.warmup if args.warmup is not None else min(200, args.steps // 10)
    args.eval_every = args.eval_every or (150 if cuda else 200)
    bf16 = cuda if args.bf16 is None else args.bf16
    out = args.out or ("/tmp/dsv4_tiny_smoke" if args.smoke else os.path.join(ROOT, "models", "tiny"))
    os.makedirs(out, exist_ok=True)
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=cuda)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, tokenizers {tokenizers.__version__}, "
        f"device {torch.cuda.get_device_name() if cuda else 'cpu'}, threads {torch.get_num_threads()}")

    # ---- checks of the copied data
    n_render = check_renderer()
    v3 = check_v3_sections()
    log(f"renderer == official encoder on {n_render} fixture conversations; V3 sections checked: {v3}")

    # ---- data
    evals = eval_items()
    train = training_items(args.seed)
    train_texts = [render(m + [{"role": "assistant", "content": q["answer"], "reasoning_content": q["reasoning"]}], t)
                   for m, t, q in train]
    log(f"data: {len(evals)} evaluation items, {len(train)} training samples")

    # ---- tokenizer
    tok = train_tokenizer(train_texts, args.vocab)
    V = tok.get_vocab_size()
    log(f"tokenizer: {V} tokens ({len(SPECIAL_TOKENS)} special, 256 bytes, {V - 256 - len(SPECIAL_TOKENS)} merges)")

    def enc(texts):
        return [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]

    tr_prompts = enc([render(m, t) for m, t, q in train])
    tr_compl = enc([completion_text(q["answer"], q["reasoning"], t) for m, t, q in train])
    ev_prompts = enc([render([{"role": "user", "content": it["q"]}], it["thinking"]) for it in evals])
    ev_compl = enc([completion_text(it["answer"], it["reasoning"], it["thinking"]) for it in evals])
    # prompt + completion tokenize as the whole conversation does (the prompt ends with a special token)
    for i in range(0, len(train), 997):
        assert tr_prompts[i] + tr_compl[i] == tok.encode(train_texts[i], add_special_tokens=False).ids
    assert all(c[-1] == EOS_ID for c in tr_compl)
    lens = [len(p) + len(c) for p, c in zip(tr_prompts, tr_compl)]
    ev_plens = [len(p) for p in ev_prompts]
    max_new = max(len(c) for c in ev_compl) + 4
    log(f"tokens per training sample: min {min(lens)} mean {sum(lens) / len(lens):.1f} max {max(lens)}; "
        f"eval prompts {min(ev_plens)}..{max(ev_plens)} tokens; completions up to {max_new - 4} tokens")

    if args.eval_limit is not None and args.eval_limit < len(evals):
        rs = random.Random(args.seed + 5)
        sel = sorted(rs.sample(range(len(evals)), args.eval_limit))
        sel_set = set(sel)
        # always keep the canonical sanity question in both modes
        for i, it in enumerate(evals):
            if it["op"] == "mul" and it["a"] == 17 and it["b"] == 23 and it["phrasing"] == 0 and i not in sel_set:
                sel.append(i)
        sel = sorted(sel)
    else:
        sel = list(range(len(evals)))
    ev_items = [evals[i] for i in sel]
    ev_p = [ev_prompts[i] for i in sel]
    ev_c = [ev_compl[i] for i in sel]

    with open(os.path.join(out, "eval.jsonl"), "w", encoding="utf-8") as f:
        for it in evals:
            f.write(json.dumps({"messages": [{"role": "user", "content": it["q"]}], "thinking": it["thinking"],
                                "answer": it["answer"], "reasoning": it["reasoning"], "op": it["op"]},
                               ensure_ascii=False) + "\n")

    # ---- model
    spec = model_spec(V)
    cfg, model = build_model(spec, args.seed, device)
    n_params = count_params(model)
    log(f"model: {n_params:,} parameters ({4 * n_params / 2**20:.2f} MiB in F32); layer types {LAYER_TYPES}, "
        f"compress rates {spec['compress_rates']}, MoE {MLP_LAYER_TYPES}")

    # padding invariance and experts implementation, on a small batch
    gen = torch.Generator().manual_seed(args.seed + 2)
    pi = torch.randint(len(train), (8,), generator=gen).tolist()
    ids, labels = make_batch([tr_prompts[i] for i in pi], [tr_compl[i] for i in pi], device)
    with torch.no_grad():
        model.eval()
        full = model(input_ids=ids, use_cache=False).logits
        j = max(range(8), key=lambda i: len(tr_prompts[pi[i]]) + len(tr_compl[pi[i]]))
        k = min(range(8), key=lambda i: len(tr_prompts[pi[i]]) + len(tr_compl[pi[i]]))
        n = len(tr_prompts[pi[k]]) + len(tr_compl[pi[k]])
        solo = model(input_ids=ids[k:k + 1, :n], use_cache=False).logits
        pad_diff = float((solo[0] - full[k, :n]).abs().max())
    assert pad_diff < 1e-4, f"right padding changed the logits by {pad_diff}"
    impl, impl_probe = choose_experts_impl(model, device, ids, labels, bf16)
    log(f"right padding leaves logits unchanged (max diff {pad_diff:.1e}); experts implementation {impl} ({impl_probe})")

    # ---- training
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01)

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        p = min(1.0, (step - args.warmup) / max(1, args.steps - args.warmup))
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))

    # batches: uniform draws over the training samples (chat turns are already repeated in the pool)
    order_rng = np.random.default_rng(args.seed + 3)
    history, evals_log = [], []
    step, loss_ema, t_train0 = 0, None, time.time()
    reserve = 60.0 if cuda else 30.0          # seconds kept for the final evaluation, export and reload
    gen_eval_s = None
    final = None
    stop_reason = "steps"
    t_eval = 0.0
    while step < args.steps:
        model.train()
        idx = order_rng.integers(0, len(train), size=args.batch)
        ids, labels = make_batch([tr_prompts[i] for i in idx], [tr_compl[i] for i in idx], device)
        for gparam in opt.param_groups:
            gparam["lr"] = lr_at(step)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(input_ids=ids, use_cache=False).logits
        loss = lm_loss(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        step += 1
        lv = loss.detach().item()
        if not math.isfinite(lv):
            sys.exit(f"loss is {lv} at step {step}")
        loss_ema = lv if loss_ema is None else 0.95 * loss_ema + 0.05 * lv
        if step % 25 == 0 or step == 1:
            el = time.time() - t_train0 - t_eval
            history.append({"step": step, "loss": round(lv, 5), "loss_ema": round(loss_ema, 5),
                            "lr": round(lr_at(step - 1), 6), "grad_norm": round(gnorm, 4),
                            "train_seconds": round(el, 2)})
            if step % 100 == 0 or step == 1:
                log(f"step {step}: loss {lv:.4f} (ema {loss_ema:.4f}) lr {lr_at(step - 1):.2e} "
                    f"gnorm {gnorm:.2f} {1000 * el / step:.0f} ms/step")
        now = time.time()
        need = reserve + (3 * gen_eval_s if gen_eval_s else 0)
        out_of_time = now > deadline - need
        if step % args.eval_every == 0 or step == args.steps or out_of_time:
            te = time.time()
            tf = teacher_forced_exact(model, ev_p, ev_c, device, 1024 if cuda else 128)
            tf_acc = sum(tf) / len(tf)
            rec = {"step": step, "teacher_forced_exact": round(tf_acc, 6), "loss_ema": round(loss_ema, 5)}
            if tf_acc >= args.target or out_of_time or step == args.steps:
                tg = time.time()
                outs = greedy_generate(model, ev_p, device, 2048 if cuda else 256, max_new)
                gen_eval_s = time.time() - tg
                summary, _ = score(ev_items, outs, tok)
                rec["greedy_accuracy"] = summary["all"]["accuracy"]
                rec["greedy_seconds"] = round(gen_eval_s, 2)
                if summary["all"]["accuracy"] >= args.target:
                    final = (outs, summary)
                    stop_reason = "target reached"
            t_eval += time.time() - te
            rec["eval_seconds"] = round(time.time() - te, 2)
            evals_log.append(rec)
            log(f"eval at step {step}: {rec}")
            if final is not None:
                break
            if out_of_time:
                stop_reason = "time cap"
                break
    train_seconds = time.time() - t_train0
    log(f"training stopped ({stop_reason}) after {step} steps, {train_seconds:.0f}s "
        f"({train_seconds - t_eval:.0f}s training, {t_eval:.0f}s evaluation)")

    # ---- final evaluation of the trained model (float32)
    model.eval()
    if final is None:
        outs = greedy_generate(model, ev_p, device, 2048 if cuda else 256, max_new)
        final = (outs, score(ev_items, outs, tok)[0])
    outs32, summary32 = final

    # BF16 storage when it costs nothing measurable, else F32
    m16 = round_model_to_bf16(model, spec)
    outs16 = greedy_generate(m16, ev_p, device, 2048 if cuda else 256, max_new)
    summary16, _ = score(ev_items, outs16, tok)
    del m16
    a32, a16 = summary32["all"]["accuracy"], summary16["all"]["accuracy"]
    float_dtype = "BF16" if a16 >= a32 else "F32"
    log(f"greedy accuracy: F32 weights {a32:.4%}, BF16-rounded weights {a16:.4%} -> store {float_dtype}")
    outs_ref, summary_ref = (outs16, summary16) if float_dtype == "BF16" else (outs32, summary32)

    # ---- export + reload check
    export = write_export(out, cfg, spec, model, float_dtype, tok)
    log(f"exported {export['n_tensors']} tensors {export['dtype_counts']} ({export['bytes'] / 2**20:.2f} MiB) to {out}")
    re_model, info = DeepseekV4ForCausalLM.from_pretrained(out, dtype=torch.float32, output_loading_info=True)
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")), info
    re_model.set_experts_implementation(impl)
    re_model.to(device).eval()
    outs_re = greedy_generate(re_model, ev_p, device, 2048 if cuda else 256, max_new)
    summary_re, right_re = score(ev_items, outs_re, tok)
    same = sum(a == b for a, b in zip(outs_re, outs_ref))
    log(f"reloaded {out}: greedy accuracy {summary_re['all']['accuracy']:.4%}, identical outputs {same}/{len(outs_re)}")
    assert summary_re["all"]["right"] == summary_ref["all"]["right"], "reloaded model's accuracy differs"

    # CPU agreement on a sample (the engine runs on the CPU)
    cpu_check = None
    if cuda:
        n_cpu = min(512, len(ev_p))
        pick = list(range(0, len(ev_p), max(1, len(ev_p) // n_cpu)))[:n_cpu]
        re_cpu = copy.deepcopy(re_model).to("cpu")
        o_cpu = greedy_generate(re_cpu, [ev_p[i] for i in pick], torch.device("cpu"), 256, max_new)
        cpu_check = {"n": len(pick), "identical": sum(o_cpu[j] == outs_re[i] for j, i in enumerate(pick))}
        del re_cpu
        log(f"CPU float32 greedy outputs identical to {device} on {cpu_check['identical']}/{cpu_check['n']}")

    # examples
    examples = []
    for i, it in enumerate(ev_items):
        if (it["op"] == "mul" and it["a"] == 17 and it["b"] == 23 and it["phrasing"] == 0) or \
                (it["op"] == "chat" and it["phrasing"] in (0, 1)):
            examples.append({"prompt": tok.decode(ev_p[i], skip_special_tokens=False),
                             "output": tok.decode(outs_re[i], skip_special_tokens=False)})
    for e in examples[:6]:
        log(f"example: {e['prompt']!r} -> {e['output']!r}")

    # the items transformers gets wrong (line numbers of eval.jsonl, 0-based): an engine must fail the same
    failures = [{"line": sel[i], "prompt": tok.decode(ev_p[i], skip_special_tokens=False),
                 "output": tok.decode(outs_re[i], skip_special_tokens=False)}
                for i, r in enumerate(right_re) if not r]
    usage = expert_usage(re_model, ev_p[:2048], device)
    final_loss = history[-1]["loss_ema"] if history else None
    with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
        config_json = json.load(f)
    report = {
        "generator": "tools/train_tiny.py",
        "args": vars(args),
        "smoke": args.smoke,
        "stop_reason": stop_reason,
        "steps": step,
        "seconds": {"total": round(time.time() - t_start, 1), "train_loop": round(train_seconds, 1),
                    "evaluation_in_loop": round(t_eval, 1),
                    "ms_per_step": round(1000 * (train_seconds - t_eval) / max(1, step), 1)},
        "final_loss_ema": final_loss,
        "loss_curve": history,
        "evaluations": evals_log,
        "greedy_accuracy": {
            "note": "transformers' greedy generate (float32) on " + ("the whole evaluation set" if len(ev_items) ==
                                                                    len(evals) else f"{len(ev_items)} sampled items"),
            "exported_model": summary_re,
            "f32_weights": summary32["all"], "bf16_rounded_weights": summary16["all"],
            "reload_identical_outputs": same, "n": len(outs_re),
            "required": args.require, "requirement_met": summary_re["all"]["accuracy"] >= args.require,
            "failures": failures[:500],
        },
        "cpu_vs_device": cpu_check,
        "examples": examples,
        "storage_dtype": float_dtype,
        "export": export,
        "experts_implementation": impl, "experts_probe": impl_probe,
        "expert_usage_topk_layers": usage,
        "data": {"eval_items": len(evals), "eval_items_scored": len(ev_items), "training_samples": len(train),
                 "phrasings": {"mul": MUL_PHRASES, "add": ADD_PHRASES}, "chat": CHAT, "system_prompts": SYSTEM_PROMPTS,
                 "tokens_per_training_sample": {"min": min(lens), "mean": round(sum(lens) / len(lens), 2),
                                                "max": max(lens)},
                 "eval_prompt_tokens": {"min": min(ev_plens), "max": max(ev_plens)}},
        "tokenizer": {"vocab_size": V, "special_tokens": {s: tok.token_to_id(s) for s in SPECIAL_TOKENS}},
        "n_parameters": n_params,
        "config": config_json,
        "files": {fn: {"bytes": os.path.getsize(os.path.join(out, fn)), "sha256": sha256(os.path.join(out, fn))}
                  for fn in ("model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json",
                             "eval.jsonl")},
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "safetensors": safetensors.__version__,
                     "numpy": np.__version__, "python": platform.python_version(),
                     "device": torch.cuda.get_device_name() if cuda else platform.processor() or "cpu"},
    }
    with open(os.path.join(out, "train_report.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    log(f"done: greedy accuracy {summary_re['all']['accuracy']:.4%} "
        f"(chat {summary_re['mode=chat']['accuracy']:.4%}, thinking {summary_re['mode=thinking']['accuracy']:.4%}); "
        f"report {os.path.join(out, 'train_report.json')}")
    if summary_re["all"]["accuracy"] < args.require:
        log(f"FAILED: greedy accuracy below the required {args.require:.2%}")
        sys.exit(2)


if __name__ == "__main__":
    main()
