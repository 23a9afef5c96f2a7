#!/usr/bin/env python3
"""Writes tests/server/tokenizer.json: a small byte-level BPE (512 ids) for the server tests.

The server tests run `dsv4 serve` on a synthetic checkpoint from `dsv4 mkmodel --preset tiny` (vocabulary
512), so they need a tokenizer whose ids all fit below 512. This one is trained with HF `tokenizers` on a
few English sentences, with DeepSeek-V3's normalizer, pre-tokenizer and decoder (the sections V4 ships,
copied as data as tools/train_tiny.py does) and V4's special-token strings as special added tokens in the
order of tools/train_tiny.py (BOS 0, EOS 1, pad 2, ...), so the chat encoding renders into real ids.

    .venv/bin/python tests/server/make_tokenizer.py      # deterministic; rewrites tests/server/tokenizer.json
"""
import json
import os

from tokenizers import AddedToken, Tokenizer, trainers
from tokenizers import pre_tokenizers as tk_pre

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 512

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

SPECIAL_TOKENS = [
    "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>", "<｜User｜>", "<｜Assistant｜>",
    "<think>", "</think>", "｜DSML｜", "<｜latest_reminder｜>",
    "<｜action｜>", "<｜query｜>", "<｜authority｜>", "<｜domain｜>", "<｜title｜>", "<｜read_url｜>",
]

TEXT = [
    "What is 17*23? Number only.", "The answer is 391.", "Hello, how are you today?",
    "You are a helpful assistant.", "Tell me a story about a cat and a dog.",
    "The weather in Paris is sunny, the weather in London is rainy.",
    "Call the tool get_weather with the city name.", "invoke name parameter string true false",
    "tool_calls function arguments {\"city\": \"Paris\"}",
    "Count from one to ten: one two three four five six seven eight nine ten.",
    "The quick brown fox jumps over the lazy dog.",
    "Streaming responses arrive in chunks; every chunk carries a delta with new content.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 42 100 256 391 512 1000 2024.",
    "Reasoning step by step: first multiply, then add, finally check the result again.",
    "Please summarize the following paragraph in a single sentence without any lists.",
    "Requests, tokens, latency, throughput, batch, queue, memory, pages, metrics, health.",
]


def main():
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
        vocab_size=VOCAB, min_frequency=0, show_progress=False,
        special_tokens=[AddedToken(s, special=True, normalized=False) for s in SPECIAL_TOKENS],
        initial_alphabet=tk_pre.ByteLevel.alphabet())
    tok.train_from_iterator(TEXT * 4, trainer=trainer)
    for i, s in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s), i)
    assert tok.get_vocab_size() <= VOCAB, tok.get_vocab_size()
    out = os.path.join(HERE, "tokenizer.json")
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(json.loads(tok.to_str()), ensure_ascii=False, indent=1))
        f.write("\n")
    print(f"{out}: {tok.get_vocab_size()} tokens")


if __name__ == "__main__":
    main()
