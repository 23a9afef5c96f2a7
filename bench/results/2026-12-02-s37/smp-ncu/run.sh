#!/bin/sh
# s37 call 9: where k_sample's sampling time goes at one row of 129,280 ids (ncu, one launch each: temperature 1,
# then t 0.7 / top-p 0.9; bench_kernels --sample-only --batch 1 runs each setting's warm-up and 50 launches in
# turn). Pack: LEAN=1 NOTOK=1 (call 6's code: main).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin smp-ncu
for k in 51:t1 102:topp; do
  skip=${k%%:*} tag=${k#*:}
  timeout 200 ncu --launch-skip $skip --launch-count 1 -k k_sample --section SpeedOfLight --section WarpStateStats \
    --section SourceCounters --section LaunchStats --section Occupancy $B/bench_kernels --sample-only --batch 1 \
    > $R/ncu-$tag.txt 2>&1
  timeout 200 ncu --launch-skip $skip --launch-count 1 -k k_sample --section SourceCounters --page source \
    --print-source sass --csv $B/bench_kernels --sample-only --batch 1 > $R/ncu-$tag-sass.csv 2>&1
  gzip -9 $R/ncu-$tag-sass.csv
  echo "== $tag"; grep -E "Duration|Warp Cycles Per Issued|Stall|Issued Ipc|Top" $R/ncu-$tag.txt | head -20
done
call_end
