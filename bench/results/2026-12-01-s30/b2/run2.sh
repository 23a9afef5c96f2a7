#!/bin/sh
# Batch 2's regression attributed: main (e42312a's code) against main with indexer.cu as at 2b5a380 (noidx: without
# f7504de, as .gpu/bench_cpu.base: BASE=/tmp/noidx sh scripts/gpu_pack.sh) and with hc.cu as at 2b5a380 (nohc:
# without b4ed7cf, .gpu-base0/bench_cpu.xz), 4 rounds alternating; carry .gpu and .gpu-base0.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin b2r
[ -x .gpu-base0/bench_cpu ] || xz -dk .gpu-base0/bench_cpu.xz
AB_REPEAT=4 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;noidx=$B/bench_cpu.base;nohc=.gpu-base0/bench_cpu" timeout 300 sh scripts/gpu_ab.sh "b2:--batch 2"
timeout 60 $B/bench_kernels --attn-only --batch 2 > $R/attn-new.txt 2>&1; timeout 60 $B/bench_kernels.base --attn-only --batch 2 > $R/attn-noidx.txt 2>&1
grep -A4 "^indexer, FP4" $R/attn-new.txt $R/attn-noidx.txt
call_end
