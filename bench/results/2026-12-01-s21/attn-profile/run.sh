#!/bin/sh
# call 3: where the attention's time goes on BF16 rows (85ca2a7): ncu's sections on the four tensor-core kernels
# (q pack, scores, weights, weighted sum) of a CSA layer at 4k (bench_kernels --attn-only: its first case;
# launches 1-4 are the warm-up, 5-8 the first timed call) at batch 1, 16 and 64, and nsys's timeline of the
# batch-1 calls (the chain's gaps with programmatic dependent launch, which ncu's serialised replay hides)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
for b in 1 16 64; do
  timeout 120 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats -k 'regex:k_attn_(qpack|qk|md16|pv)' --launch-skip 4 \
    --launch-count 4 $B/bench_kernels --attn-only --batch $b --reps 2 > $R/ncu-b$b.txt 2>&1
  echo "== batch $b"
  grep -E "^  k_attn|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Waves Per SM|Grid Size|Block Size|Issue Slots Busy|Eligible Warps|No Eligible|Dynamic Shared" $R/ncu-b$b.txt | head -64
done
if command -v nsys >/dev/null; then
  timeout 120 nsys profile -o $R/a1 -f true $B/bench_kernels --attn-only --batch 1 --reps 20 > $R/nsys.txt 2>&1
  timeout 100 nsys stats -r cuda_gpu_trace -f csv -o $R/a1-trace $R/a1.nsys-rep >> $R/nsys.txt 2>&1
  rm -f $R/a1.nsys-rep $R/a1.sqlite
  python3 - $R/a1-trace_cuda_gpu_trace.csv <<'PY' | tee $R/a1-chain.txt
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r.get("Name", "").startswith("k_attn")]
# the first timed calls of the first case: after the warm-up's four kernels, 8 chains of four
ch = rows[4:4 + 32]
for i in range(0, len(ch), 4):
    t0 = int(ch[i]["Start (ns)"])
    print(" | ".join(f"{r['Name'].split('(')[0].split('<')[0]} +{(int(r['Start (ns)']) - t0) / 1e3:.1f} {int(r['Duration (ns)']) / 1e3:.1f}us" for r in ch[i:i + 4]),
          f"| end +{(int(ch[i + 3]['Start (ns)']) + int(ch[i + 3]['Duration (ns)']) - t0) / 1e3:.1f}")
PY
  gzip -f $R/a1-trace*.csv
else echo "no nsys"; fi
gzip -f $R/ncu-b*.txt
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)
