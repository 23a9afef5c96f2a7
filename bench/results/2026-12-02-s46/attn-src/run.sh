#!/bin/sh
# s46 call 3 (pack: sh scripts/gpu_pack.sh, with the V4 tokenizer): (a) where the batch-64 attention chain's warps
# wait, SASS line by line: ncu's warp-state sampling and source counters on k_attn_qk, k_attn_md16 and k_attn_pvw
# of bench_kernels' first attention case (CSA, 4k context: 640 rows a token, as at any context past 2k) at 64
# tokens (src-*.csv.gz: bench/ncu_stalls.py reads them; det.txt the sections); (b) dsv4 serve with 4,000-token
# prompts at concurrency 4 (8 prompts, 32 output tokens) with --chunked-prefill-size 2048 (the default), 1024 and
# 512: what the chunk does to TTFT and to the decoding requests' inter-token latency.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin attn-src
timeout 200 ncu --section WarpStateStats --section SourceCounters --section SchedulerStats --section SpeedOfLight \
  --section LaunchStats --section Occupancy --section InstructionStats -k 'regex:k_attn_(qk|md16|pvw)' \
  --launch-skip 3 --launch-count 3 -o "$R/rep" $B/bench_kernels --attn-only --batch 64 --reps 1 > "$R/prof.log" 2>&1
echo "ncu rc=$?"
ncu -i "$R/rep.ncu-rep" --page details > "$R/det.txt" 2>&1
ncu -i "$R/rep.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip > "$R/src.csv.gz"
rm -f "$R/rep.ncu-rep"
grep -E "^  [a-z].*k_attn|Duration|Warp Cycles Per Issued|Issued Warp|Eligible Warps|Active Warps|DRAM Through|Registers Per|Executed Ipc A|Theoretical Occ" "$R/det.txt" | head -40
python3 bench/ncu_stalls.py "$R/src.csv.gz" 12 > "$R/stalls.txt" 2>&1; head -60 "$R/stalls.txt"
. scripts/serve_wait.sh
rm -rf /tmp/flash-serve
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/flash-serve > /dev/null 2>&1
for ch in 2048 1024 512; do
  $B/dsv4 serve --port 0 --tokenizer $B/tokenizer-v4.json --max-running-requests 64 --context-length 8192 \
    --chunked-prefill-size $ch -m /tmp/flash-serve --fill-random > "$R/serve-ch$ch.log" 2>&1 &
  spid=$!
  port=$(serve_wait "$R/serve-ch$ch.log" $spid 600 0.5)
  if [ -n "$port" ]; then
    timeout 200 $B/dsv4 bench --url "http://127.0.0.1:$port" --concurrency 4 --num-prompts 8 --input-len 4000 \
      --output-len 32 --vocab-range 1000,100000 --json "$R/long-ch$ch.json" > "$R/long-ch$ch.txt" 2>&1
    echo "== chunk $ch"; tail -6 "$R/long-ch$ch.txt"
  else tail -3 "$R/serve-ch$ch.log"; fi
  kill $spid 2>/dev/null; wait $spid 2>/dev/null
done
call_end
