#!/usr/bin/env python3
"""Writes the expected token ids of the tokenizer corpus, made by HF `tokenizers`.

For every document tests/text/corpus/<doc>.txt and each tokenizer file
(DeepSeek-V3's from ../shared/data/deepseek-v3-tokenizer/, DeepSeek-V4's
fetched by tests/text/fetch_v4_tokenizer.sh), writes
tests/text/expected/<v3|v4>/<doc>.ids: the ids of
`Tokenizer.encode(text, add_special_tokens=False)`, comma-separated on one line
with a final newline, exactly what `dsv4 tokenize` prints. It also checks that
HF decodes them back to the document, and records the versions in meta.json.

It also writes tests/text/variants/: a small byte-level BPE trained by HF on
the corpus (base.json), and variants.json: patches to it that exercise what
DeepSeek's files do not (other Split behaviours, invert, String patterns,
Digits, ByteLevel with its GPT-2 regex and prefix space, Oniguruma-only regex
syntax, added tokens with lstrip / rstrip / single_word / normalized, ids in
the file that HF does not use, ignore_merges, "a b" merges), each with texts
and the ids HF gives them (and HF's decode of the ids when it is not the text).

Run with the oracle's virtualenv (never by CI); deterministic:
    .venv/bin/python tools/make_tokenizer_fixtures.py [--v4 PATH]
"""
import argparse
import copy
import hashlib
import json
import os
import random
import subprocess
import sys

import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "text", "corpus")
EXPECTED = os.path.join(ROOT, "tests", "text", "expected")
V3 = os.path.join(ROOT, "..", "shared", "data", "deepseek-v3-tokenizer", "tokenizer.json")
VARIANTS = os.path.join(ROOT, "tests", "text", "variants")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--v4", help="DeepSeek-V4 tokenizer.json (default: fetch it)")
    args = ap.parse_args()
    v4 = args.v4 or subprocess.run([os.path.join(ROOT, "tests", "text", "fetch_v4_tokenizer.sh")],
                                   check=True, capture_output=True, text=True).stdout.strip()
    docs = sorted(f for f in os.listdir(CORPUS) if f.endswith(".txt"))
    meta = {"tokenizers": tokenizers.__version__, "documents": {}, "files": {}}
    for name, path in (("v3", V3), ("v4", v4)):
        tok = Tokenizer.from_file(path)
        meta["files"][name] = {"sha256": sha256(path)}
        out_dir = os.path.join(EXPECTED, name)
        os.makedirs(out_dir, exist_ok=True)
        for d in docs:
            with open(os.path.join(CORPUS, d), "rb") as f:
                raw = f.read()
            text = raw.decode("utf-8")
            ids = tok.encode(text, add_special_tokens=False).ids
            back = tok.decode(ids, skip_special_tokens=False)
            if back != text:
                sys.exit("%s/%s: HF does not decode its own ids back to the document" % (name, d))
            with open(os.path.join(out_dir, d[:-4] + ".ids"), "w") as f:
                f.write(",".join(map(str, ids)) + "\n")
            meta["documents"].setdefault(d, {})[name] = len(ids)
    for d in docs:
        with open(os.path.join(CORPUS, d), "rb") as f:
            meta["documents"][d]["sha256"] = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(EXPECTED, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote %d documents x 2 tokenizers to %s" % (len(docs), EXPECTED))
    make_variants(docs, json.load(open(V3, encoding="utf-8")))


def split(rx, behavior="Isolated", invert=False, string=False):
    return {"type": "Split", "pattern": {("String" if string else "Regex"): rx}, "behavior": behavior,
            "invert": invert}


def byte_level(prefix=False, regex=False):
    return {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True, "use_regex": regex}


def seq(*stages):
    return {"type": "Sequence", "pretokenizers": list(stages)}


def added(content, special=False, normalized=None, lstrip=False, rstrip=False, single_word=False, id=0):
    return {"id": id, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": (not special) if normalized is None else normalized, "special": special}


def make_variants(docs, v3):
    texts = []
    for d in docs:
        with open(os.path.join(CORPUS, d), encoding="utf-8") as f:
            texts.append(f.read())
    # A small byte-level BPE, trained by HF on the corpus.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=800, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    base = json.loads(tok.to_str())
    base["normalizer"] = {"type": "Sequence", "normalizers": []}
    n = len(base["model"]["vocab"])

    ds_tokens = [added(t["content"], t["special"], t["normalized"]) for t in v3["added_tokens"][:20]]
    ds_tokens += [added("<think>"), added("</think>"), added("｜DSML｜")]
    flags = [
        added("[MASK]", special=True, lstrip=True, rstrip=True),
        added("word", single_word=True),
        added("  "),
        added("ab", rstrip=True),
        added("<think>", special=True, lstrip=True),
        added("<thinking>"),
        added("the", single_word=True, lstrip=True, rstrip=True, normalized=False),
        added("\n\n"),
        added("ab", special=True, lstrip=True, normalized=False),   # same content again: replaces the first
        added("é", single_word=True),
        added("Ġx"),                                             # decodes through the byte map
    ]
    for i, t in enumerate(flags):
        t["id"] = n + 1000 + 7 * i  # HF ignores these ids and numbers from the vocabulary size
    llm_letters = ("\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-Ֆ"
                   "Ⴀ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝ\u1f5f-\u1f7d"
                   "ᾀ-ᾴᾶ-ᾼῂ-ῄῆ-ῌ\u1fd0-\u1fd3\u1fd6-\u1fdbῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤℨℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄ"
                   "Ⰰ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+")
    qwen = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
            r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    # Oniguruma syntax that PCRE2 reads differently or not at all.
    onig = (r"\w+|\W|\d\D|\h+|[\S\d]+|[^\s\w]|\p{Lu}\p{Ll}*|\P{L}{2}|[\p{Han}\p{Hiragana}]+"
            r"|^\s|\s$|(?m:a.b)|\u00e9|\pN|[\d-]+|\p{^L}\p{Letter}")
    variants = [
        ("deepseek", {"pre_tokenizer": v3["pre_tokenizer"], "added_tokens": ds_tokens}),
        ("gpt2", {"pre_tokenizer": byte_level(True, True)}),
        ("behaviors1", {"pre_tokenizer": seq(split(r"\p{N}", "Removed"), split(" ", "MergedWithPrevious", string=True),
                                             byte_level(False, True))}),
        ("behaviors2", {"pre_tokenizer": seq({"type": "Digits", "individual_digits": True},
                                             split(r"\s+", "MergedWithNext"), split("[a-z]+", "Contiguous", True),
                                             byte_level(True, False))}),
        ("behaviors3", {"pre_tokenizer": seq({"type": "Digits", "individual_digits": False},
                                             split("[aeiou]", "MergedWithPrevious", True), split("x*"),
                                             split(r"\S+", "Removed", True), split(".", "MergedWithNext", string=True),
                                             byte_level(False, False))}),
        ("deepseek_llm", {"pre_tokenizer": seq(split("[\r\n]"), split(llm_letters), split(r"\s?[!-/:-~！-／：-～‘-‟　-。]+"),
                                               split(r"\s+$"), split("[一-龥ࠀ-一가-퟿]+"),
                                               {"type": "Digits", "individual_digits": True}, byte_level())}),
        ("qwen", {"pre_tokenizer": seq(split(qwen), byte_level())}),
        ("oniguruma", {"pre_tokenizer": seq(split(onig), byte_level())}),
        ("added_flags", {"added_tokens": flags}),
        ("ignore_merges", {"model": {"ignore_merges": True}}),
        # the test turns the [a, b] merges of base.json into "#version" + "a b" strings
        ("string_merges", {"model": {"merges": "as strings"}}),
    ]
    rng = random.Random(4)
    words = " ".join(texts).split()

    def rand_text(tokens):
        out = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.25 and tokens:
                out.append(rng.choice(tokens))
            elif r < 0.4:
                out.append(rng.choice([" ", "  ", "\n", "\t", " \n ", "\r\n", "\u3000", "\u00a0", "x", "ab", "é"]))
            elif r < 0.55:
                out.append("".join(chr(rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x2ff),
                                                   rng.randint(0x3040, 0x30ff), rng.randint(0x4e00, 0x4eff),
                                                   rng.randint(0x1f600, 0x1f64f), rng.randint(0x660, 0x669),
                                                   rng.randint(0x31350, 0x31360), rng.randint(0x300, 0x36f)]))
                                   for _ in range(rng.randint(1, 6))))
            else:
                out.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 5))))
        return "".join(out)

    out = []
    os.makedirs(VARIANTS, exist_ok=True)
    for name, patch in variants:
        d = copy.deepcopy(base)
        for k, v in patch.items():
            if k == "model":
                d["model"].update(v)
            else:
                d[k] = v
        if d["model"]["merges"] == "as strings":
            d["model"]["merges"] = ["#version: 0.2"] + [" ".join(m) for m in base["model"]["merges"]]
        t = Tokenizer.from_str(json.dumps(d))
        tokens = [a["content"] for a in d.get("added_tokens", [])]
        cases = [x[:120] for x in texts] + [rand_text(tokens) for _ in range(30)]
        rows = []
        for c in cases:
            ids = t.encode(c, add_special_tokens=False).ids
            row = {"text": c, "ids": ids}
            back = t.decode(ids, skip_special_tokens=False)
            if back != c:  # stripped spaces (lstrip / rstrip) do not come back
                row["decoded"] = back
            rows.append(row)
        out.append({"name": name, "patch": patch, "cases": rows})
    with open(os.path.join(VARIANTS, "base.json"), "w", encoding="utf-8") as f:
        json.dump(base, f, ensure_ascii=False, separators=(",", ":"))
    with open(os.path.join(VARIANTS, "variants.json"), "w", encoding="utf-8") as f:
        # one case per line
        f.write("[\n")
        for vi, v in enumerate(out):
            f.write('{"name": %s,\n "patch": %s,\n "cases": [\n' % (json.dumps(v["name"]),
                                                                   json.dumps(v["patch"], ensure_ascii=False)))
            rows = [json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in v["cases"]]
            f.write(",\n".join(rows) + "]}" + (",\n" if vi + 1 < len(out) else "\n"))
        f.write("]\n")
    print("wrote %d tokenizer variants to %s" % (len(variants), VARIANTS))


if __name__ == "__main__":
    main()
