#!/bin/sh
# s47 call 1: q laid out in pair rows (heads h and h + 8 interleaved by words, each 32 dimensions' units in the
# order an m16n8k16 A quad takes them) for k_attn_qk (written so by k_attn_qpack) and k_attn_one (its own
# shared-memory copy): the A quads load as they are, no register moves (SASS: k_attn_qk<4, true> 1,608 -> 1,376
# instructions, k_attn_one<true> 4,848 -> 4,696); the same values into the same MMAs. The whole suite (logits
# against main's b92ec8c byte for byte), memcheck of the two kernels, the attention tables new / base 2 rounds,
# decode batch 1 / 16 / 64 new / base 2 rounds, and ncu's source counters on k_attn_qk at 64 tokens and on
# k_idx_topk in a decode step at 16 tokens x 128k (its 112 KB of code run once a token: the no_inst share).
# Pack: BASE=<b92ec8c's build-gpu> NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pair
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh | tail -14
call_memcheck k_attn_qk "--attn-only --batch 4 --reps 1"
call_memcheck k_attn_one "--attn-only --batch 1 --reps 1"
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16,64"
for f in "$R"/attn-*.txt; do echo "== $(basename "$f")"; grep -E "^(CSA|HCA)" "$f" | awk '{print $1, $2, $3, $4, $5, $7, $9}'; done
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16" "b64:--batch 64"
timeout 150 ncu --section WarpStateStats --section SourceCounters --section SpeedOfLight --section LaunchStats \
  --section Occupancy -k 'regex:k_attn_qk' --launch-skip 3 --launch-count 1 -o "$R/qk" \
  $B/bench_kernels --attn-only --batch 64 --reps 1 > "$R/prof-qk.log" 2>&1
echo "ncu qk rc=$?"
[ -d /tmp/f8 ] || $B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
timeout 200 ncu --section WarpStateStats --section SourceCounters --section SpeedOfLight --section LaunchStats \
  --section Occupancy -k 'regex:k_idx_topk' --launch-skip 24 --launch-count 2 -o "$R/topk" \
  $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 16 --decode 8 --batch 16 \
  --context 131072 > "$R/prof-topk.log" 2>&1
echo "ncu topk rc=$?"
for k in qk topk; do
  if [ -f "$R/$k.ncu-rep" ]; then
    ncu -i "$R/$k.ncu-rep" --page details > "$R/det-$k.txt" 2>&1
    ncu -i "$R/$k.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip > "$R/src-$k.csv.gz"
    rm -f "$R/$k.ncu-rep"
    grep -E "^  [a-z].*k_|Duration|Warp Cycles Per Issued|Issued Warp|Eligible Warps|Registers Per|Grid Size" "$R/det-$k.txt" | head -20
    python3 bench/ncu_stalls.py "$R/src-$k.csv.gz" 12 > "$R/stalls-$k.txt" 2>&1; head -40 "$R/stalls-$k.txt"
  fi
done
call_end
