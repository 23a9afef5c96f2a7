#!/usr/bin/env python3
"""Make broken copies of a good checkpoint, one per kind of damage.

usage: corrupt.py GOOD_DIR OUT_DIR
Writes OUT_DIR/<case>/ for each case below (python3 standard library only, so
it runs in CI without the oracle's virtualenv) and prints one line per case:
"<case> <text the error message must contain>".
"""
import json
import os
import shutil
import struct
import sys


def read_st(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return header, data


def write_st(path, header, data):
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        f.write(data)


def resolve(h, name):
    """The tensor's key in header h: official name or transformers' "model." spelling."""
    for k in (name, "model." + name):
        if k in h:
            return k
    return None


def main():
    good, out = sys.argv[1], sys.argv[2]
    files = sorted(f for f in os.listdir(good) if f.endswith(".safetensors"))
    index = os.path.exists(os.path.join(good, "model.safetensors.index.json"))
    first = files[0]
    cases = []

    def fresh(name):
        d = os.path.join(out, name)
        shutil.copytree(good, d)
        return d

    # 1. truncated shard: cut the last file in its data section
    d = fresh("truncated")
    p = os.path.join(d, files[-1])
    os.truncate(p, os.path.getsize(p) // 2)
    cases.append(("truncated", files[-1]))

    # 2. header offsets out of range
    d = fresh("offsets")
    p = os.path.join(d, first)
    h, data = read_st(p)
    name = next(k for k in h if k != "__metadata__")
    b, e = h[name]["data_offsets"]
    h[name]["data_offsets"] = [b + len(data), e + len(data)]
    write_st(p, h, data)
    cases.append(("offsets", name))

    # 3. missing tensor (also removed from the index, so only binding notices)
    d = fresh("missing")
    target = "layers.0.attn.wkv.weight"
    for f in files:
        p = os.path.join(d, f)
        h, data = read_st(p)
        k = resolve(h, target)
        if k:
            del h[k]
            write_st(p, h, data)
    if index:
        ip = os.path.join(d, "model.safetensors.index.json")
        ix = json.load(open(ip))
        for k in (target, "model." + target):
            ix["weight_map"].pop(k, None)
        json.dump(ix, open(ip, "w"))
    cases.append(("missing", target))

    # 4. wrong shape: transpose a 2-D matrix's shape (same byte size)
    # 5. wrong dtype: a BF16 [a, b] matrix relabelled U8 [a, 2b] (same byte size)
    for case, target in (("shape", "layers.1.attn.wq_a.weight"), ("dtype", "layers.1.ffn.gate.weight")):
        d = fresh(case)
        for f in files:
            p = os.path.join(d, f)
            h, data = read_st(p)
            k = resolve(h, target)
            if not k:
                continue
            t = h[k]
            if case == "shape":
                t["shape"] = [t["shape"][1], t["shape"][0]]
            else:
                size = {"BF16": 2, "F16": 2, "F32": 4}[t["dtype"]]
                t["dtype"] = "U8"
                t["shape"] = [t["shape"][0], t["shape"][1] * size]
            write_st(p, h, data)
        cases.append((case, target))

    # 6. inconsistent config
    d = fresh("config")
    cp = os.path.join(d, "config.json")
    cfg = json.load(open(cp))
    cfg["o_groups"] = cfg["num_attention_heads"] + 1
    json.dump(cfg, open(cp, "w"))
    cases.append(("config", "o_groups"))

    # 7. config that is not JSON
    d = fresh("config_json")
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write('{"vocab_size": 12,,}')
    cases.append(("config_json", "config.json"))

    # 8. header length larger than the file
    d = fresh("header_len")
    p = os.path.join(d, first)
    with open(p, "r+b") as f:
        f.write(struct.pack("<Q", 1 << 40))
    cases.append(("header_len", first))

    # 9. no weights at all
    d = fresh("empty")
    for f in os.listdir(d):
        if f.endswith(".safetensors") or f.endswith(".index.json"):
            os.remove(os.path.join(d, f))
    cases.append(("empty", "safetensors"))

    for c, m in cases:
        print(c, m)


if __name__ == "__main__":
    main()
