#!/bin/sh
# s66 p16/ (one H100 or H200; branch wip/parts16): DSV4_ATTN_PARTS 16 against main's 8 (a numerics change on
# every reference attention path: the CPU's and every kernel's parts move together). With 16 parts a block of
# k_attn_one copies at most 48 of CSA's 640 rows, not 80 (s65's one lever for CSA 1 x 4k < 10 us; ~-0.9 us
# predicted from s60's phase trace); the chain at 3-64 tokens runs clusters of 16 parts (non-portable).
# In order: the attention against main's build (two rounds), k_attn_one's phases at one token (an AF_TRACE build,
# carried as .gpu/bktrace.tar.xz so that gpu_multi.sh keeps it), the whole suite with its memchecks (the logits
# change by design: the base's dsv4 set aside, gpu_bits.sh checks repeatability only, as s59's pp/ did), then
# decode at batch 1, 1 x 4k and 16 against main (two rounds).
# Pack (on the branch): AS=p16 BASE=<main's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin p16
call_kernels attn 2 "p16=$B/bench_kernels;main=$B/bench_kernels.base" "--attn-only --batch 1,3,8,16,32,64"
call_attn_ab p16 main
call_snap
if [ -f .gpu/bktrace.tar.xz ]; then xz -dc .gpu/bktrace.tar.xz > $B/bench_kernels.trace && chmod +x $B/bench_kernels.trace; fi
[ -x $B/bench_kernels.trace ] && call_aftrace trace16
call_snap
mv $B/dsv4.base $B/dsv4.base.off
call_verify VERIFY_TIMEOUT=330
mv $B/dsv4.base.off $B/dsv4.base
call_ab 2 "p16=$B/bench_cpu --overlap;main=$B/bench_cpu.base --overlap" "b1:--batch 1" "b1x4k:--batch 1 --context 4096" \
  "b16:--batch 16"
cat "$R/ab.txt" 2>/dev/null
call_end
