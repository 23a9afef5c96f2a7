"""What the sessions' summary.py scripts share (standard library only): reading a call directory's
summary.txt (the bench_cpu model line each run.sh abbreviates), bench_kernels' routed-experts rows, the
op-family profile and dsv4 bench's JSON; and the per-layer roofline of every figure: the weight bytes of a
Flash layer at v22's measured 4,226 GB/s copy (0.055 / 0.292 / 0.83 ms at batch 1 / 16 / 64), the LM
head's 0.26 ms taken out of a step first, 8 layers."""
import csv
import glob
import gzip
import json
import os
import re
import statistics
from collections import defaultdict

FLOOR = {1: 0.055, 16: 0.292, 64: 0.83}
HEAD_MS, LAYERS = 0.26, 8


def rows(path):
    """(name, kind, value) per line of a summary.txt, in file order: kind "prefill_4096_tok_s" for a
    4,096-token prefill, "decode_ms_per_step" for a decode step; other lines skipped."""
    out = []
    for line in open(path):
        name, _, rest = line.partition(": ")
        m = re.search(r"4096 tokens each: ([\d.]+) tok/s", rest)
        if m:
            out.append((name.strip(), "prefill_4096_tok_s", float(m.group(1))))
            continue
        m = re.search(r"([\d.]+) ms/step", rest)
        if m:
            out.append((name.strip(), "decode_ms_per_step", float(m.group(1))))
    return out


def values(path):
    """name -> value of a summary.txt (a name seen twice: its last value)."""
    return {name: v for name, _, v in rows(path)}


def pick(d, pat):
    """The values of d whose names match pat in full, by name."""
    return [v for k, v in sorted(d.items()) if re.fullmatch(pat, k)]


def ab(path, cases, ctx=True):
    """A call's new / base runs alternating (summary.txt names b<B>-c<C>-new-<i> / -base-<i>, or b<B>-new-<i>
    without the context, ctx False): per (batch, context) both lists and the change of their sums."""
    v = values(path)
    out = {}
    for b, c in cases:
        tag = f"b{b}-c{c}" if ctx else f"b{b}"
        new, base = pick(v, rf"{tag}-new-\d"), pick(v, rf"{tag}-base-\d")
        out[f"batch {b}, context {c or 16}"] = {"new": new, "base": base, "change": round(sum(new) / sum(base) - 1, 4)}
    return out


def ab_rounds(path, third=False, ctx=False, case=None):
    """scripts/gpu_ab.sh's ab.txt ("case[-variant] (round): X ms/step, ..."): case -> variant ("new" for the bare
    case) -> ms per step by round; third: bench_cpu's mean from the third step on (since s35: "..., Y ms/step
    from the third"), rounds without it left out; ctx: a case's context ("b1-4k") part of the case, not a
    variant; case: the cases' pattern instead (a call's second A/B with cases of its own, s56's "rb-b8")."""
    out = {}
    case = case or (r"b\d+(?:-\d+k)?" if ctx else r"b\d+[a-z0-9]*")
    for line in open(path):
        m = re.match(rf"({case})(?:-(\S+))? \((\d+)\): ([\d.]+) ms/step(?:.*?([\d.]+) ms/step from the third)?",
                     line)
        if m and (m.group(5) or not third):
            out.setdefault(m.group(1), {}).setdefault(m.group(2) or "new", []).append(
                float(m.group(5) if third else m.group(4)))
    return out


def call_rounds(d, call, ctx=False, case=None):
    """A call's ab.txt (d/call/ab.txt) from the third step: case -> variant -> {"from_third": [ms a step, by
    round], "from_third_mean": their mean}; ctx, case: ab_rounds'."""
    out = {}
    for c, vs in ab_rounds(os.path.join(d, call, "ab.txt"), third=True, ctx=ctx, case=case).items():
        for v, runs in vs.items():
            out.setdefault(c, {})[v] = {"from_third": runs, "from_third_mean": round(statistics.mean(runs), 4)}
    return out


def means(rounds):
    """call_rounds' result as case -> variant -> mean ms a step from the third."""
    return {c: {v: r["from_third_mean"] for v, r in vs.items()} for c, vs in rounds.items()}


def machine(d):
    """A call's GPU as its machine.txt names it (nvidia-smi's CSV line under its header)."""
    lines = [ln.strip() for ln in open(os.path.join(d, "machine.txt")) if ln.strip()]
    return lines[1] if lines[0].startswith("name,") else lines[0]


def verdicts(d, names):
    """The gtest-style verdict lines ([  PASSED  ] / [  FAILED  ]) of a call's gzipped test outputs d/name."""
    return {n: [ln.strip() for ln in gzip.open(os.path.join(d, n), "rt") if re.match(r"\[  (PASSED|FAILED)", ln)]
            for n in names if os.path.exists(os.path.join(d, n))}


def call_lines(d, call, name):
    """A call's file d/call/name as stripped lines (none if it is missing)."""
    p = os.path.join(d, call, name)
    return [ln.strip() for ln in open(p)] if os.path.exists(p) else []


def suite(d, call):
    """A gpu_verify.sh call's pass lines (d/call/suite.txt.gz): each section's result, the logits checks, the
    memchecks."""
    p = os.path.join(d, call, "suite.txt.gz")
    keep = re.compile(r"^(==|logits|suite rc|-- memcheck|\[  PASSED|\[  FAILED|exit)")
    return [ln.rstrip("\n") for ln in gzip.open(p, "rt") if keep.match(ln)] if os.path.exists(p) else []


def experts_alone(d, call):
    """A call's bench_kernels --experts-only files (experts-VARIANT-ROUND.txt, gpu_call.sh's call_kernels): the
    reference-numerics rows as variant -> round -> {tokens: us a call}."""
    out = {}
    for f in sorted(os.listdir(os.path.join(d, call))):
        m = re.match(r"experts-(\w+)-(\d+)\.txt$", f)
        if m:
            rows = experts(os.path.join(d, call, f), r"ref\.").get("ref.", {})
            out.setdefault(m.group(1), {})[m.group(2)] = {int(b[6:]): r["us"] for b, r in rows.items()}
    return out


def prefills(call_dir, pat=r"pf-(.+)-(\d+)\.txt"):
    """A call's bench_cpu prefill outputs (files matching pat, the variant its first group; "prefill N tokens
    each: X tok/s (Y ms)"): variant -> {"ms": [...], "tok_s": [...], "mean_ms"} in file order."""
    out = {}
    for f in sorted(os.listdir(call_dir)):
        m = re.fullmatch(pat, f)
        t = re.search(r"prefill \d+ tokens each: ([\d.]+) tok/s \(([\d.]+) ms\)",
                      open(os.path.join(call_dir, f)).read()) if m else None
        if t:
            r = out.setdefault(m.group(1), {"ms": [], "tok_s": []})
            r["ms"].append(float(t.group(2)))
            r["tok_s"].append(float(t.group(1)))
    for r in out.values():
        r["mean_ms"] = round(statistics.mean(r["ms"]), 2)
    return out


def ktrace_step(path):
    """bench/ktrace.py's first line: the step, the replay, the time outside it (us, medians)."""
    m = re.match(r"step .*? ([\d.]+) us: the replay ([\d.]+), from its end to the next's start ([\d.]+)",
                 open(path).readline())
    return {"step_us": float(m.group(1)), "replay_us": float(m.group(2)), "outside_us": float(m.group(3))}


def ncu_us(text):
    """The kernel durations (us) in an `ncu --metrics gpu__time_duration.sum` log, in launch order."""
    return [float(x) for x in re.findall(r"gpu__time_duration\.sum\s+us\s+([\d.]+)", text)]


# a bench_kernels --attn-only row: kind (CSA / HCA), rows, batch, context, us a call (the default layout's)
ATTN_ROW = r"(CSA|HCA) \((\d+) rows\)\s+(\d+)\s+(\d+)\s+[\d.]+\s+([\d.]+)"


def attn(path):
    """bench_kernels' attention rows: 'CSA 640 rows, context 4096' -> bB -> us a call (the default layout)."""
    res = {}
    for line in open(path):
        m = re.match(ATTN_ROW, line)
        if m:
            res.setdefault(f"{m.group(1)} {m.group(2)} rows, context {m.group(4)}", {})["b" + m.group(3)] = \
                float(m.group(5))
    return res


# the layouts the sessions' JSON describe their figures with
AB_WHAT = "decode ms per step by case (bN: batch N, 8 Flash layers, reference numerics, prompt 16, 32 steps) and " \
          "variant, alternating (scripts/gpu_ab.sh)"
EXPERTS_WHAT = "the routed experts alone (bench_kernels --experts-only, reference numerics' row: 256 MXFP4 experts, " \
               "top-6 random routing, us a call and % of the copy bandwidth measured in the same run)"


def experts_ref(path):
    """The reference-numerics row of bench_kernels' experts table: batch_B -> us, % of copy."""
    return experts(path, kinds=r"ref\.")["ref."]


def indexer_rows(path):
    """bench_kernels' indexer tables, row by row: (table: 'indexer' / 'indexer, FP4 keys', 'top-512 of N', batch,
    context, us a call)."""
    tab = None
    for line in open(path):
        if line.startswith("indexer"):
            tab = line.split("  ")[0].strip()
            continue
        m = re.match(r"(top-\d+ of \d+)\s+(\d+)\s+(\d+)\s+[\d.]+\s+([\d.]+)", line) if tab else None
        if m:
            yield tab, m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4))
        elif tab and not line.strip():
            tab = None


def indexer_all(path):
    """Both of bench_kernels' indexer tables: '<table>: top-512 of N, context C' -> bB -> us a call."""
    res = {}
    for tab, top, b, c, us in indexer_rows(path):
        res.setdefault(f"{tab}: {top}, context {c}", {})[f"b{b}"] = us
    return res


def table_rounds(d, call, reader):
    """A call's bench_kernels tables (d/call/attn-<variant>-<round>.txt) read by reader (attn, indexer, ...): row ->
    bB -> variant -> [us a call, by round]."""
    out = {}
    for f in sorted(glob.glob(os.path.join(d, call, "attn-*-*.txt"))):
        v, _ = os.path.basename(f)[5:-4].rsplit("-", 1)
        for row, by_b in reader(f).items():
            for b, us in by_b.items():
                out.setdefault(row, {}).setdefault(b, {}).setdefault(v, []).append(us)
    return out


def indexer(path):
    """bench_kernels' 'indexer, FP4 keys' rows: 'top-512 of N, context C' -> bB -> us a call."""
    res = {}
    for tab, top, b, c, us in indexer_rows(path):
        if tab == "indexer, FP4 keys":
            res.setdefault(f"{top}, context {c}", {})[f"b{b}"] = us
    return res


def call_ab(d, call):
    """ab_rounds of a session directory d's call (d/call/ab.txt)."""
    return ab_rounds(os.path.join(d, call, "ab.txt"))


def probe_runs(call_dir, file_re, row_re, key, col):
    """A probe's table across runs: key(row match) -> "probe" / "cluster" -> float(column col) by run, over the
    files of call_dir whose names match file_re (its group 1 "1": the probe's run) and their rows matching
    row_re."""
    res = {}
    for name in sorted(os.listdir(call_dir)):
        m = re.fullmatch(file_re, name)
        if not m:
            continue
        for line in open(os.path.join(call_dir, name)):
            f = re.match(row_re, line)
            if f:
                res.setdefault(key(f), {}).setdefault("probe" if m.group(1) == "1" else "cluster", []).append(
                    float(f.group(col)))
    return res


def experts(path, kinds=r"ref\.|MXFP4|ref\. w4a8"):
    """bench_kernels' routed-experts rows: kind -> batch_B -> us, % of copy."""
    res = {}
    for line in open(path):
        m = re.match(r"experts \((" + kinds + r")\)\s+(\d+)\s+[\d.]+\s+([\d.]+)\s+\d+\s+(\d+)%", line)
        if m:
            res.setdefault(m.group(1), {})[f"batch_{m.group(2)}"] = {"us": float(m.group(3)),
                                                                     "of_copy_pct": int(m.group(4))}
    return res


def profile(path, section):
    """bench_cpu --profile: the op families' ms per step of a section ("decode", "prefill")."""
    fam, on = {}, False
    for line in open(path):
        if line.startswith(section + ":"):
            on = True
            continue
        if on:
            m = re.match(r"\s+(\S.*?)\s{2,}([\d.]+)\s+([\d.]+)%", line)
            if m:
                fam[m.group(1)] = float(m.group(2))
            elif fam:
                break
    return fam


def serve(call_dir, name="serve-flash"):
    """dsv4 bench's JSON per concurrency (NAME-c*.json: serve-flash, and since v63 serve-flash-long[-lt])."""
    out = {}
    for f in sorted(glob.glob(os.path.join(call_dir, name + "-c*.json"))):
        r = json.load(open(f))["results"][0]
        out[f"concurrency_{r['concurrency']}"] = {
            "completed": r["completed"], "failed": r["failed"], "ttft_ms_p50": round(r["ttft_ms"]["p50"], 1),
            "tpot_ms_p50": round(r["tpot_ms"]["p50"], 2), "output_tok_s": round(r["output_token_throughput"], 1)}
    return out


def x_floor(ms, b, digits=3):
    """A step's per-layer time against the per-layer floor at batch b."""
    return round((ms - HEAD_MS) / LAYERS / FLOOR[b], digits)


def head(call_dir, what, extra=None):
    """A closing call's figures (its summary.txt: d<B>-c<C>-<i> decode runs, pf-<i> prefills; dsv4 bench's
    JSON): what, the commands, decode ms per step by (batch, context), the fastest run's x floor, the 4,096-token
    prefills, the served figures; extra's keys after the prefills."""
    v = values(os.path.join(call_dir, "summary.txt"))
    out = {
        "what": what,
        "decode_command": "bench_cpu -m <8 Flash layers, mkmodel --preset flash --sparse> --backend cuda "
                          "--fill-random --numerics reference --prompt 16 --decode 32 --batch B [--context C]",
        "decode_ms": {f"batch {b}, context {c or 16}": pick(v, rf"d{b}-c{c}-\d")
                      for b, c in ((1, 0), (1, 4096), (8, 0), (16, 0), (64, 0), (16, 131072))},
        "x_floor_min": {b: x_floor(min(pick(v, rf"d{b}-c0-\d")), b) for b in (1, 16, 64)},
        "prefill_4096_tok_s": pick(v, r"pf-\d"),
    }
    if pick(v, r"pf-lt-\d"):  # since v63: --prefill-gemm cublaslt beside ours, both after a warm prefill
        out["prefill_4096_cublaslt_tok_s"] = pick(v, r"pf-lt-\d")
    if not out["decode_ms"]["batch 1, context 4096"]:  # closing calls before s38 did not run it
        del out["decode_ms"]["batch 1, context 4096"]
    out.update(extra or {})
    out["serve_command"] = ("TESTS=0 SANITIZE=0 KERNELS=0 FIXTURES=0 SERVE_FLASH=1 SERVE_LAYERS=8 sh "
                            "scripts/gpu_suite.sh (dsv4 serve on 8 Flash layers, dsv4 bench: 64-token prompts, 32 out)")
    out["serve"] = serve(call_dir)
    for name in ("serve-flash-long", "serve-flash-long-lt"):  # 4,000-token prompts (SERVE_LONG=1, since v63)
        s = serve(call_dir, name)
        if s:
            out[name.replace("-", "_")] = s
    return out


def linears(path, names=("wq_b", "wo_a group", "wo_b")):
    """bench_kernels' FP8 linear rows: name -> bB -> {plain us (the unquantised activations' kernels: mma.cu's F16
    path or k_wgf8), reference us}."""
    res = {}
    for line in open(path):
        m = re.match(r"(.+?) \(FP8\)\s+(\d+)\s+[\d.]+\s+([\d.]+)\s+\d+\s+\d+%\s+([\d.]+)", line)
        if m and m.group(1) in names:
            res.setdefault(m.group(1), {})["b" + m.group(2)] = {"plain_us": float(m.group(3)),
                                                                "reference_us": float(m.group(4))}
    return res


def lin_rounds(call_dir):
    """A call's bench_kernels --linear-only files (lin-VARIANT-ROUND.txt, gpu_call.sh's call_kernels lin ...):
    ('name, tokens' -> variant -> [reference us, by round], the copy rates the runs measured)."""
    out, copy = {}, []
    for f in sorted(glob.glob(os.path.join(call_dir, "lin-*-*.txt"))):
        v = os.path.basename(f)[4:-4].rsplit("-", 1)[0]
        for ln in open(f):
            m = re.search(r"copy (\d+) GB/s", ln)
            if m:
                copy.append(int(m.group(1)))
            m = re.match(r"(\S.*?\S)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+%\s+([\d.]+)", ln)
            if m:
                out.setdefault(f"{m.group(1)}, {m.group(2)}", {}).setdefault(v, []).append(float(m.group(3)))
    return out, copy


def ix_phases(path):
    """k_idx_topk's phase lines (a -DIX_TRACE build: "ixtrace N n passes p c0 c1 ..."): candidates -> {passes,
    cycles after the wait by phase (medians of the calls)}."""
    runs = {}
    for line in open(path):
        m = re.match(r"ixtrace N (\d+) passes (\d+)((?: -?\d+)+)", line)
        if m:
            runs.setdefault(int(m.group(1)), (int(m.group(2)), []))[1].append([int(x) for x in m.group(3).split()])
    out = {}
    for n, (p, rs) in sorted(runs.items()):
        med = [int(statistics.median(c)) for c in zip(*rs)][1:]  # the first is the wait (printing makes it long)
        out[str(n)] = {"passes": p, "keys_and_bounds": med[0], "select_passes": med[1:1 + p], "output": med[-1],
                       "after_wait": sum(med)}
    return out


def indexer_tables(path):
    """bench_kernels' two indexer tables: 'indexer' / 'indexer, FP4 keys' -> 'top-512 of N' -> bB -> us a call."""
    res = {}
    for tab, top, b, _, us in indexer_rows(path):
        res.setdefault(tab, {}).setdefault(top, {})[f"b{b}"] = us
    return res


def ffn(path, replay=30):
    """The first top-k layer's FFN in one replay of a node trace (bench/ktrace.c's CSV): each kernel from the
    gate's pack to the routed experts' down pass, and the shared expert's, as [start, end] us from the replay's
    first kernel."""
    rows = list(csv.DictReader(gzip.open(path, "rt")))
    byg = defaultdict(list)
    for r in rows:
        if r["graph_id"] != "0":
            byg[r["graph_id"]].append(r)
    rs = sorted(byg[max(byg, key=lambda k: len(byg[k]))], key=lambda r: int(r["start_ns"]))
    n = len({r["graph_node_id"] for r in rs})
    rep = sorted(rs[replay * n:(replay + 1) * n], key=lambda r: int(r["graph_node_id"]))
    t0 = min(int(r["start_ns"]) for r in rep)
    i = next(j for j, r in enumerate(rep) if "k_route" in r["name"])
    out = []
    for r in rep[i - 8:i + 7]:
        name = r["name"]
        for key in ("k_mma_pack_bf16", "k_mma_bf16", "k_route", "k_moe_plan", "k_moe_pack16", "k_moe16", "k_wg8_pack",
                    "k_wg8", "k_swiglu"):
            if key in name:
                name = key
                break
        else:
            continue
        out.append({"kernel": name, "grid": r["grid"], "us": [round((int(r["start_ns"]) - t0) / 1e3, 2),
                                                              round((int(r["end_ns"]) - t0) / 1e3, 2)]})
    return out


ATTN13_WHAT = ("the attention alone (bench_kernels --attn-only --batch 1,2,3 --contexts 4096,32768,131072; 64 heads "
               "of 512, BF16 rows, reference numerics), µs a call by round")
DECODE_OVL_WHAT = ("decode on 8 Flash-shaped layers (reference numerics, --fill-random, 16-token prompt, 64 steps, "
                   "--overlap), ms a step from the third, by round")


def attn_call(d, name, what, machine):
    """A one-pass attention A/B call (s68 on): its attention tables by round, its decode rounds, attn-ab.txt and
    bits.txt as lines."""
    return {"what": what, "machine": machine, "attention_us": table_rounds(d, name, attn),
            "decode_ms": call_rounds(d, name), "attn_ab": call_lines(d, name, "attn-ab.txt"),
            "bits": call_lines(d, name, "bits.txt")}


def trace_events(path):
    """A node trace's (bench/ktrace.c CSV) graph kernels: (start us, end us, name, grid, stream), by start."""
    ev = []
    for r in csv.DictReader(gzip.open(path, "rt")):
        if r["graph_id"] != "0":
            m = re.match(r"_Z(\d+)", r["name"])
            n = r["name"][len(m.group(0)):len(m.group(0)) + int(m.group(1))] if m else r["name"]
            ev.append((int(r["start_ns"]) / 1e3, int(r["end_ns"]) / 1e3, n, r["grid"], r["stream"]))
    ev.sort()
    return ev


def wo_a_start(path):
    """A node trace's wo_a launches (the k_mma_fp8s / k_mma_fp8 within 12 kernels after a k_attn_one): medians of its
    start less its pack's start (k_mma_pack of 8 groups on its stream, where there is one) and less the attention's
    end, of its duration, of the attention's, and of the attention's start to wo_a's end, in us."""
    ev = trace_events(path)
    pk, at, dur, ad, span = [], [], [], [], []
    for i, (s0, e0, n, _, st) in enumerate(ev):
        if n in ("k_mma_fp8s", "k_mma_fp8"):
            p = [x for x in ev[max(0, i - 12):i] if x[2] == "k_mma_pack" and x[4] == st and "x8x" in x[3]]
            a = [x for x in ev[max(0, i - 12):i] if x[2] == "k_attn_one"]
            if a:
                if p:
                    pk.append(s0 - p[-1][0])
                at.append(s0 - a[-1][1]), dur.append(e0 - s0)
                ad.append(a[-1][1] - a[-1][0]), span.append(e0 - a[-1][0])
    med = statistics.median
    out = {"launches": len(at)}
    if pk:
        out["start_after_pack_start_us"] = round(med(pk), 1)
    out.update({"start_after_attention_end_us": round(med(at), 1), "duration_us": round(med(dur), 1),
                "attention_us": round(med(ad), 2), "attention_start_to_wo_a_end_us": round(med(span), 2)})
    return out
