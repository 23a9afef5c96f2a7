#!/usr/bin/env python3
"""The headline figures of one gpu_suite.sh results directory as one JSON
(bench/results/h200-*.json): the decode step per batch beside its roofline
and the baseline of the same call, per layer and extrapolated to 43 layers,
the kernels' figures, prefill beside the measured MMA rate, and serving.

    python3 bench/h200_summary.py [--numerics reference] bench/results/<dir> > bench/results/h200-<name>.json

Reads what the suite wrote there: bench-flash-b*.json (and -base), kernels.json,
inspect-flash.txt, flash-layers.txt, ref-b*.json, prefill4k*.json,
serve-flash-c*.json; a file that is missing leaves its part out. Python's
standard library only.

A run's file may carry a suffix (bench-flash-b16-c131072.json, ...-plain,
...): it is reported as a variant of its batch, with its own -base file if
there is one. Its numerics and layer count come from the file (bench_cpu
writes both), else from --numerics (default plain, gpu_suite.sh's default)
and flash-layers.txt.
"""
import glob
import json
import os
import re
import sys

FLASH_LAYERS = 43  # DeepSeek-V4-Flash


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main(d, default_numerics):
    out = {"source": os.path.normpath(d)}
    k = load(os.path.join(d, "kernels.json")) or {"results": []}
    res = k["results"]
    copy = next((r["gb_s"] for r in res if r["kind"] == "copy"), None)
    out["device"] = k.get("device")
    out["copy_gb_s"] = copy
    rate = next((r for r in res if r["kind"] == "mma_rate"), None)
    if rate:
        out["mma_rate_tflops"] = {"bf16": rate["bf16_tflops"], "fp8_e4m3": rate["fp8_tflops"]}
    head = {r["batch"]: r["us"] / 1e3 for r in res if r["kind"] == "linear" and r["name"].startswith("lm head")}
    suite_layers = None
    try:
        with open(os.path.join(d, "flash-layers.txt")) as f:
            suite_layers = int(re.search(r"(\d+) layers", f.read()).group(1))
    except (OSError, AttributeError):
        pass
    mb = {}
    head_mb = None
    try:
        with open(os.path.join(d, "inspect-flash.txt")) as f:
            txt = f.read()
        for m in re.finditer(r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s*$", txt, re.M):
            mb[int(m.group(1))] = float(m.group(2))
        m = re.search(r"head \+ final norm\s+([\d.]+)", txt)
        head_mb = float(m.group(1)) * 1024 ** 3 / 1e6 if m else None
    except OSError:
        pass
    steps = []
    runs = []
    for f in glob.glob(os.path.join(d, "bench-flash-b*.json")):
        m = re.match(r"bench-flash-b(\d+)(?:-(.+))?\.json$", os.path.basename(f))
        if not m or (m.group(2) or "").endswith("base"):
            continue
        runs.append((int(m.group(1)), m.group(2) or "", f))
    for _, variant, f in sorted(runs):
        r = load(f)
        if not r:
            continue
        b = r["batch"]
        layers = r.get("layers", suite_layers)
        numerics = r.get("numerics") or ("plain" if "plain" in variant.split("-") else default_numerics)
        e = {"batch": b, "layers": layers, "numerics": numerics, "ms_per_step": r["decode_ms_per_step"],
             "tok_s": r["decode_tok_s"]}
        if variant:
            e["variant"] = variant
        if r.get("context", 0) > r.get("prompt", 0):
            e["context"] = r["context"]
        base = load(f[:-5] + "-base.json")
        if base:
            e["baseline_ms_per_step"] = base["decode_ms_per_step"]
        if b in mb and copy:
            e["roofline_ms_per_step"] = mb[b] / copy
            e["x_roofline"] = e["ms_per_step"] / e["roofline_ms_per_step"]
        if layers and b in head:
            per = (e["ms_per_step"] - head[b]) / layers
            e["ms_per_layer"] = per
            if b in mb and head_mb and copy:
                e["floor_ms_per_layer"] = (mb[b] - head_mb) / layers / copy
                e["x_floor_per_layer"] = per / e["floor_ms_per_layer"]
            s43 = head[b] + FLASH_LAYERS * per
            e["extrapolated_43_layers"] = {"ms_per_step": s43, "tok_s": b * 1e3 / s43}
        ref = load(os.path.join(d, "ref-b%d.json" % b))
        if ref:
            e["reference_ms_per_step"] = ref["decode_ms_per_step"]
            rb = load(os.path.join(d, "ref-b%d-base.json" % b))
            if rb:
                e["reference_baseline_ms_per_step"] = rb["decode_ms_per_step"]
        steps.append(e)
    out["decode_step"] = steps
    out["experts"] = [{kk: r[kk] for kk in ("numerics", "batch", "experts", "bytes", "us", "of_copy") if kk in r}
                      for r in res if r["kind"] == "experts"]
    out["attention"] = [{kk: v for kk, v in r.items() if kk != "kind"} for r in res if r["kind"] == "attention"]
    out["indexer"] = [{kk: v for kk, v in r.items() if kk != "kind"} for r in res if r["kind"] == "indexer"]
    out["hc_pre"] = [{kk: v for kk, v in r.items() if kk != "kind"} for r in res if r["kind"] == "hc_pre"]
    pf = load(os.path.join(d, "prefill4k.json"))
    if pf:
        p = {"prompt": pf["prompt"], "model": pf["model"], "tok_s": pf["prefill_tok_s"]}
        pb = load(os.path.join(d, "prefill4k-base.json"))
        if pb:
            p["baseline_tok_s"] = pb["prefill_tok_s"]
        out["prefill"] = p
    serve = []
    for f in sorted(glob.glob(os.path.join(d, "serve-flash-c*.json")), key=lambda p: int(re.findall(r"c(\d+)", p)[-1])):
        r = load(f)
        for x in (r or {}).get("results", []):
            serve.append({"concurrency": x["concurrency"], "ttft_ms_p50": x["ttft_ms"]["p50"],
                          "tpot_ms_p50": x["tpot_ms"]["p50"], "output_tok_s": x["output_token_throughput"]})
    out["serve"] = serve
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    num = "plain"
    if len(args) == 3 and args[0] == "--numerics" and args[1] in ("plain", "reference"):
        num = args[1]
        args = args[2:]
    if len(args) != 1:
        sys.exit("usage: h200_summary.py [--numerics plain|reference] RESULTS_DIR")
    main(args[0], num)
