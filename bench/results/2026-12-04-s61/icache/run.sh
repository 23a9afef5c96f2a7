#!/bin/sh
# s61 icache/: rot/'s per-warp stamps put k_attn_one's weights phase at one token at ~650 cycles for a max over 80
# scores, ~750 for the sum and weights, ~450 for a loop storing a zero head's fragments - far more than their
# instructions' latency. Is it fetching their code (each phase's code runs once a block)? An AF_REP2 build runs
# the weights phase and the weighted sum twice in a row: if the second run is much shorter, the first waits for
# its instructions. (A measurement's build: its outputs are not the kernel's.)
# Pack, here (the AF_REP2 object compiled into build-trace by hand, then build-trace restored):
#   nvcc ... -DAF_TRACE -DAF_REP2 -c src/backend/cuda/attn.cu -o build-trace/.../attn.cu.o; make bench_kernels
#   BASE=build-trace KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh; xz -9 -c <that bench_kernels> > .gpu/bk-rep.xz
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin icache
xz -dc .gpu/bk-rep.xz > $B/bench_kernels.rep && chmod +x $B/bench_kernels.rep
timeout 200 $B/bench_kernels.rep --attn-only --batch 1 --reps 8 > "$R/trace-rep.txt" 2>&1
echo "== trace rep exit $?"
python3 bench/af_trace.py "$R/trace-rep.txt" > "$R/trace-rep.tab" 2>&1; cat "$R/trace-rep.tab"
gzip -9 -n "$R/trace-rep.txt"
call_end
