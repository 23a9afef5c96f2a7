#!/usr/bin/env python3
"""The SASS of two builds' CUDA kernels compared, without a GPU.

    python3 scripts/sass_diff.py BASE_BINARY NEW_BINARY [REGEX] [--pair BASE_NAME=NEW_NAME ...] [--show]

For each kernel whose demangled name matches REGEX (default: every kernel): its instruction count in each build
and how many instructions differ (a line diff of the two instruction lists, addresses and encodings dropped).
"same" means ptxas emitted the same instructions in the same order: the kernel runs as it did, so a change
that leaves a shipped kernel "same" needs no device time to show that it did not slow it. A kernel whose
template gained a parameter has another name; --pair names the two to compare (demangled, as the table
prints them). --show prints the diff of each pair that differs.

cuobjdump is not in this machine's CUDA toolkit; the first run installs PyPI's nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm into build/sass-venv (DSV4_CUOBJDUMP=PATH uses another, with nvdisasm beside it).
"""
import difflib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "build", "sass-venv")
PINS = ["nvidia-cuda-cuobjdump==13.5.37", "nvidia-cuda-nvdisasm==13.5.37"]  # -sass runs nvdisasm


def cuobjdump():
    if os.environ.get("DSV4_CUOBJDUMP"):
        return os.environ["DSV4_CUOBJDUMP"]
    for d, _, files in os.walk(VENV):
        if "cuobjdump" in files and d.endswith("bin"):
            return os.path.join(d, "cuobjdump")
    print(f"sass_diff: installing {' '.join(PINS)} into {VENV}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "-q", *PINS], check=True)
    return cuobjdump()


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def kernels(binary):
    """{demangled name: [instruction, ...]} of every kernel in binary's sm_90a code."""
    r = subprocess.run([cuobjdump(), "-sass", binary], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"sass_diff: cuobjdump -sass {binary} failed: {r.stderr.strip()}")
    text = r.stdout
    funcs, cur = {}, None
    for line in text.splitlines():
        if "Function : " in line:
            cur = line.split("Function : ", 1)[1].strip()
            funcs[cur] = []
        elif cur is not None:
            m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;", line)
            if m:
                funcs[cur].append(re.sub(r"\s+", " ", m.group(1)))
    names = list(funcs)
    return {d: funcs[n] for n, d in zip(names, demangle(names))}


def main():
    args = sys.argv[1:]
    show = "--show" in args
    args = [a for a in args if a != "--show"]
    pairs = []
    while "--pair" in args:
        i = args.index("--pair")
        a, _, b = args[i + 1].partition("=")
        pairs.append((a, b))
        del args[i:i + 2]
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    base, new = kernels(args[0]), kernels(args[1])
    rx = re.compile(args[2] if len(args) == 3 else ".")
    rows = [(n, n) for n in sorted(base) if n in new and rx.search(n)] + pairs
    only = [(n, "base") for n in sorted(base) if n not in new and rx.search(n)] + \
           [(n, "new") for n in sorted(new) if n not in base and rx.search(n)]
    differ = 0
    for a, b in rows:
        if a not in base or b not in new:
            print(f"{a} = {b}: not in {'the base' if a not in base else 'the new build'}")
            differ += 1
            continue
        x, y = base[a], new[b]
        d = [l for l in difflib.unified_diff(x, y, lineterm="", n=0) if l[:1] in "+-" and l[:3] not in ("+++", "---")]
        name = a if a == b else f"{a} = {b}"
        print(f"{len(x):6d} {len(y):6d}  {'same' if not d else f'{len(d)} differ'}  {name}")
        if d:
            differ += 1
            if show:
                print("\n".join(difflib.unified_diff(x, y, a, b, lineterm="", n=2)))
    for n, side in only:
        print(f"{len(base.get(n, new.get(n, []))):6d}  only in the {side} build: {n}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
