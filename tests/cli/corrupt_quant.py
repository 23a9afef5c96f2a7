#!/usr/bin/env python3
"""Make broken copies of a good QUANTIZED checkpoint (tests/fixtures/q_stock, q_nvfp4 made by
tools/make_quant_fixtures.py), one per kind of damage to the quantization data.

usage: corrupt_quant.py GOOD_DIR OUT_DIR
Writes OUT_DIR/<case>/ for each case that applies to GOOD_DIR (python3 standard library only, so
it runs in CI without the oracle's virtualenv) and prints one line per case:
"<case> <text the error message must contain>" (a tensor name prefix or a config key).

Cases:
  scale_nan          E8M0 byte 255 (NaN) in the block scale of an FP8 weight
  scale_f32_inf      +Inf in an F32 FP8 block scale            (only if the checkpoint has one)
  scale_f32_nan      NaN in an F32 FP8 block scale              (only if the checkpoint has one)
  scale_shape        an FP8 block scale with its shape transposed (same byte size)
  expert_scale_shape a routed expert's scale (.scale / .weight_scale) with its shape transposed
  nvfp4_no_scale2    an NVFP4 expert without .weight_scale_2    (only for NVFP4 checkpoints)
  input_scale_nan    an NVFP4 expert's .input_scale NaN         (only for NVFP4 checkpoints, as the next three)
  input_scale_neg    an NVFP4 expert's .input_scale -1
  input_scale_bf16   an NVFP4 expert's .input_scale stored as a BF16 scalar
  input_scale_two    an NVFP4 expert's .input_scale with two F32 values
  moe_quant_algo     config.json quantization_config.moe_quant_algo = "INT3"
  quant_method       config.json quantization_config.quant_method = "int3"
  hf_quant_algo      hf_quant_config.json quantized_layers[layers.1.ffn.experts].quant_algo = "INT3"
                     (only if the checkpoint has hf_quant_config.json)
  two_formats        layers.1.ffn.experts.0.w1 stored in two formats at once: MXFP4 `.scale` and
                     NVFP4 `.weight_scale` side by side
Tensors are added or removed by rewriting the shard compactly (valid safetensors, no holes) and
the index is updated, so only the quantization-aware binding can notice.
"""
import json
import math
import os
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corrupt import read_st, write_st  # noqa: E402  (same safetensors read/write as corrupt.py)

ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I64": 8, "I32": 4, "I8": 1, "U8": 1,
            "F8_E4M3": 1, "F8_E8M0": 1}


class Ckpt:
    """A copy of the checkpoint in directory d: tensor -> shard through the index."""

    def __init__(self, d):
        self.d = d
        self.ip = os.path.join(d, "model.safetensors.index.json")
        if os.path.exists(self.ip):
            with open(self.ip) as f:
                self.index = json.load(f)
            self.wm = self.index["weight_map"]
        else:
            self.index = None
            self.wm = {}
            for fn in sorted(f for f in os.listdir(d) if f.endswith(".safetensors")):
                h, _ = read_st(os.path.join(d, fn))
                for k in h:
                    if k != "__metadata__":
                        self.wm[k] = fn

    def file_of(self, name):
        return os.path.join(self.d, self.wm[name])

    def header(self, name):
        h, _ = read_st(self.file_of(name))
        return h[name]

    def patch_bytes(self, name, rel_offset, new):
        """Overwrite bytes of tensor `name` at rel_offset (header unchanged)."""
        p = self.file_of(name)
        with open(p, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
        b, e = self.header(name)["data_offsets"]
        assert b + rel_offset + len(new) <= e
        with open(p, "r+b") as f:
            f.seek(8 + n + b + rel_offset)
            f.write(new)

    def set_shape(self, name, shape):
        p = self.file_of(name)
        h, data = read_st(p)
        assert math.prod(shape) == math.prod(h[name]["shape"])
        h[name]["shape"] = list(shape)
        write_st(p, h, data)

    def _rewrite(self, path, tensors):
        """tensors: {name: (dtype, shape, bytes)} -> a compact safetensors file."""
        h, data = read_st(path)
        header = {"__metadata__": h["__metadata__"]} if "__metadata__" in h else {}
        out = bytearray()
        for k, (dt, shape, raw) in tensors.items():
            assert len(raw) == math.prod(shape) * ITEMSIZE[dt], k
            header[k] = {"dtype": dt, "shape": list(shape), "data_offsets": [len(out), len(out) + len(raw)]}
            out += raw
        write_st(path, header, bytes(out))

    def _load(self, path):
        h, data = read_st(path)
        return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
                for k, v in h.items() if k != "__metadata__"}

    def drop(self, name):
        p = self.file_of(name)
        t = self._load(p)
        del t[name]
        self._rewrite(p, t)
        del self.wm[name]
        self._save_index()

    def add(self, name, dtype, shape, raw, like):
        """Add a tensor to the shard that holds `like`."""
        assert name not in self.wm
        p = self.file_of(like)
        t = self._load(p)
        t[name] = (dtype, list(shape), raw)
        self._rewrite(p, dict(sorted(t.items())))
        self.wm[name] = self.wm[like]
        self._save_index()

    def _save_index(self):
        if self.index is None:
            return
        self.index["weight_map"] = dict(sorted(self.wm.items()))
        with open(self.ip, "w") as f:
            json.dump(self.index, f, indent=2)


def edit_json(path, fn):
    with open(path) as f:
        j = json.load(f)
    fn(j)
    with open(path, "w") as f:
        json.dump(j, f, indent=2)


def main():
    good, out = sys.argv[1], sys.argv[2]
    g = Ckpt(good)
    names = sorted(g.wm)
    hdr = {n: g.header(n) for n in names}
    cases = []

    def fresh(case):
        d = os.path.join(out, case)
        shutil.copytree(good, d)
        return Ckpt(d)

    def prefix(n):
        return n.rsplit(".", 1)[0]

    fp8 = [n for n in names if n.endswith(".weight") and hdr[n]["dtype"] == "F8_E4M3"]
    e8_scaled = [n for n in fp8 if hdr.get(prefix(n) + ".scale", {}).get("dtype") == "F8_E8M0"]
    f32_scaled = [n for n in fp8 if hdr.get(prefix(n) + ".scale", {}).get("dtype") == "F32"]
    assert e8_scaled, "no FP8 weight with an E8M0 scale: not a quantized checkpoint"

    # 1. NaN UE8M0 scale byte
    w = "layers.0.attn.wkv.weight" if "layers.0.attn.wkv.weight" in e8_scaled else e8_scaled[0]
    c = fresh("scale_nan")
    c.patch_bytes(prefix(w) + ".scale", 0, b"\xff")
    cases.append(("scale_nan", prefix(w)))

    # 2, 3. Inf / NaN F32 block scale
    if f32_scaled:
        s = prefix(f32_scaled[0]) + ".scale"
        nel = math.prod(hdr[s]["shape"])
        c = fresh("scale_f32_inf")
        c.patch_bytes(s, 0, struct.pack("<f", float("inf")))
        cases.append(("scale_f32_inf", prefix(s)))
        c = fresh("scale_f32_nan")
        c.patch_bytes(s, 4 * (nel - 1), struct.pack("<I", 0x7FC00000))
        cases.append(("scale_f32_nan", prefix(s)))

    # 4. FP8 block scale with the wrong shape (transposed, same byte size)
    s = next(prefix(n) + ".scale" for n in e8_scaled
             if len(set(hdr[prefix(n) + ".scale"]["shape"])) == 2 and prefix(n).startswith("layers.1."))
    c = fresh("scale_shape")
    c.set_shape(s, hdr[s]["shape"][::-1])
    cases.append(("scale_shape", prefix(s)))

    # 5. routed expert scale with the wrong shape
    e = "layers.2.ffn.experts.0.w2"
    s = e + ".weight_scale" if e + ".weight_scale" in hdr else e + ".scale"
    assert s in hdr and hdr[s]["shape"][0] != hdr[s]["shape"][1], s
    c = fresh("expert_scale_shape")
    c.set_shape(s, hdr[s]["shape"][::-1])
    cases.append(("expert_scale_shape", e))

    # 6. NVFP4 expert without weight_scale_2
    e = "layers.1.ffn.experts.0.w1"
    nvfp4 = e + ".weight_scale_2" in hdr
    if nvfp4:
        c = fresh("nvfp4_no_scale2")
        c.drop(e + ".weight_scale_2")
        cases.append(("nvfp4_no_scale2", e))

    # 6b. NVFP4 .input_scale (read by no path here, Blackwell's W4A4 activation scale): bad values and storage
    s = e + ".input_scale"
    if nvfp4 and s in hdr:
        for case, val in (("input_scale_nan", struct.pack("<I", 0x7FC00000)),
                          ("input_scale_neg", struct.pack("<f", -1.0))):
            c = fresh(case)
            c.patch_bytes(s, 0, val)
            cases.append((case, s))
        for case, dt, shape, raw in (("input_scale_bf16", "BF16", [], b"\x80\x3f"),
                                     ("input_scale_two", "F32", [2], struct.pack("<2f", 1.0, 1.0))):
            c = fresh(case)
            c.drop(s)
            c.add(s, dt, shape, raw, like=e + ".weight")
            cases.append((case, s))

    # 7, 8. unknown quantization algorithm / method in config.json
    c = fresh("moe_quant_algo")
    edit_json(os.path.join(c.d, "config.json"),
              lambda j: j["quantization_config"].__setitem__("moe_quant_algo", "INT3"))
    cases.append(("moe_quant_algo", "moe_quant_algo"))
    c = fresh("quant_method")
    edit_json(os.path.join(c.d, "config.json"),
              lambda j: j["quantization_config"].__setitem__("quant_method", "int3"))
    cases.append(("quant_method", "quant_method"))

    # 9. unknown quant_algo in hf_quant_config.json
    if os.path.exists(os.path.join(good, "hf_quant_config.json")):
        c = fresh("hf_quant_algo")
        edit_json(os.path.join(c.d, "hf_quant_config.json"),
                  lambda j: j["quantization"]["quantized_layers"]["layers.1.ffn.experts"]
                  .__setitem__("quant_algo", "INT3"))
        cases.append(("hf_quant_algo", "quant_algo"))

    # 10. one expert stored in two formats: MXFP4 .scale and NVFP4 .weight_scale side by side
    c = fresh("two_formats")
    wshape = hdr[e + ".weight"]["shape"]
    rows, cols = wshape[0], wshape[1] * 2
    if nvfp4:   # add an MXFP4 scale (E8M0 1.0) next to the NVFP4 tensors
        c.add(e + ".scale", "F8_E8M0", [rows, cols // 32], b"\x7f" * (rows * cols // 32), like=e + ".weight")
    else:       # add an NVFP4 block scale (E4M3 1.0) next to the MXFP4 tensors
        c.add(e + ".weight_scale", "F8_E4M3", [rows, cols // 16], b"\x38" * (rows * cols // 16),
              like=e + ".weight")
    cases.append(("two_formats", e))

    for case, want in cases:
        print(case, want)


if __name__ == "__main__":
    main()
