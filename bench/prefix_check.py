#!/usr/bin/env python3
"""The prefix cache end to end, on any backend: the same requests to two running `dsv4 serve`s - one with
--prefix-cache on, one off - must give the same texts and logprobs, while the first reports cached tokens.

    python3 bench/prefix_check.py --on http://127.0.0.1:P1 --off http://127.0.0.1:P2 [--vocab-range 1000,100000]

Only the standard library (the device has no openai client). The requests, all greedy with logprobs, token-id
prompts: a long shared prefix with different endings (sequential, then 8 at once), the same prompt twice, n = 4
choices of one prompt, and a prompt then the same prompt extended. Prints one line per group and exits 1 on
any difference.
"""
import argparse
import json
import random
import sys
import threading
import urllib.request


def post(base, body):
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def ask(base, prompt, n=1, max_tokens=16):
    return post(base, {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "logprobs": 1, "n": n,
                       "ignore_eos": True})


def key(resp):
    return [(c["index"], c["text"], c["logprobs"]["tokens"], c["logprobs"]["token_logprobs"])
            for c in sorted(resp["choices"], key=lambda c: c["index"])]


def cached(resp):
    return (resp.get("usage", {}).get("prompt_tokens_details") or {}).get("cached_tokens", 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--on", required=True)
    ap.add_argument("--off", required=True)
    ap.add_argument("--vocab-range", default="1000,100000")
    ap.add_argument("--prefix", type=int, default=1500, help="shared prefix tokens")
    args = ap.parse_args()
    lo, hi = map(int, args.vocab_range.split(","))
    rng = random.Random(7)
    ids = lambda n: [rng.randrange(lo, hi) for _ in range(n)]
    shared = ids(args.prefix)
    bad = 0

    def compare(name, prompts, n=1, concurrent=False):
        nonlocal bad
        want = [ask(args.off, p, n) for p in prompts]
        got = [None] * len(prompts)
        if concurrent:
            ts = [threading.Thread(target=lambda i=i: got.__setitem__(i, ask(args.on, prompts[i], n)))
                  for i in range(len(prompts))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        else:
            got = [ask(args.on, p, n) for p in prompts]
        diff = sum(key(g) != key(w) for g, w in zip(got, want))
        bad += diff
        print(f"prefix-check {name}: {len(prompts)} requests, {diff} different, cached tokens "
              f"{[cached(g) for g in got]} of {[g['usage']['prompt_tokens'] for g in got]}", flush=True)
        return got

    compare("shared prefix, one at a time", [shared + ids(40) for _ in range(4)])
    compare("shared prefix, 8 at once", [shared + ids(40) for _ in range(8)], concurrent=True)
    p = shared + ids(200)
    compare("the same prompt twice", [p, p])
    compare("n = 4 choices", [ids(700)], n=4)
    conv = ids(600)
    compare("a prompt, then the prompt extended", [conv, conv + ids(50)])
    print(f"prefix-check: {'OK' if bad == 0 else f'{bad} DIFFERENT'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
