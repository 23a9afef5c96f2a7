#!/bin/sh
# s58 pipes/: which shared unit k_moe16's loop at one token uses (KERNEL_NOTES' next step after il2/): ncu on the
# routed gate / up and down kernels (MXFP4, one plane, one row block, 8-pair tiles) in bench_kernels
# --experts-only --batch 1 - SpeedOfLight, ComputeWorkloadAnalysis (the pipes), MemoryWorkloadAnalysis (shared
# memory and L1 / L2 / DRAM) and the pipes' instruction shares. det-pipes.txt is the details page; the key lines
# printed. ncu locks the clocks (~1.35 GHz).
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pipes
timeout 240 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section Occupancy --metrics 'regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active,regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active' \
  --kernel-name-base demangled -k 'regex:k_moe16<.int.4, .int.1, .bool.[01], .int.1, .int.1, .int.8>' \
  --launch-skip 8 --launch-count 2 -o "$R/pipes" $B/bench_kernels --experts-only --batch 1 --reps 8 > "$R/prof-pipes.log" 2>&1
echo "== ncu exit $?"
if [ -f "$R/pipes.ncu-rep" ]; then
  ncu -i "$R/pipes.ncu-rep" --page details > "$R/det-pipes.txt" 2>&1
  rm -f "$R/pipes.ncu-rep"
  grep -E "k_moe16|Duration|Issue Slots Busy|Executed Ipc|SM Busy|Memory Throughput|DRAM Throughput|L1/TEX Hit|Shared|pipe_(alu|fma|fmaheavy|lsu|tensor|xu|adu|cbu|uniform|fp16)" "$R/det-pipes.txt" | head -120
else
  tail -5 "$R/prof-pipes.log"
fi
call_end
