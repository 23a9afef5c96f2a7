#!/bin/sh
# s62 hf/ (PREPARED, NOT run): the baseline a user would otherwise reach for, again, in the same call as dsv4 on the
# same shapes - the last such pair is v7's (2026-11-29), and PERFORMANCE's at-a-glance table sets today's dsv4
# beside that old call's transformers figures. Runs on main's build (any kernels): no A/B, no pack variant.
# transformers' eager DeepseekV4ForCausalLM (bench/hf_baseline.py: BF16 weights, the first 4 Flash layers, a
# 16-token prompt, 8 timed one-token steps after one warm-up) and dsv4 on the same 4 layers (mkmodel --preset flash
# --layers 4 --sparse, reference numerics, --fill-random, a 16-token prompt, 64 steps, ms a step from the third on),
# batch 1 / 8 / 16. Per layer: dsv4's (step - 0.26) / 4 as PERFORMANCE computes it; transformers' step / 4 (its
# embedding, HC head and LM head included, as hf_baseline.py's JSON says).
# Pack: LEAN=1 sh scripts/gpu_pack.sh (dsv4 and bench_cpu are all it runs). ~3-5 minutes.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin hf
[ -d /tmp/f4 ] || $B/dsv4 mkmodel --preset flash --layers 4 --sparse -o /tmp/f4 > /dev/null 2>&1
for b in 1 8 16; do
  timeout 150 $B/bench_cpu -m /tmp/f4 --backend cuda --numerics reference --fill-random --prompt 16 --decode 64 \
    --overlap --batch $b > "$R/dsv4-b$b.txt" 2>&1
  echo "dsv4 batch $b: $(grep -oE '[0-9.]+ ms/step from the third' "$R/dsv4-b$b.txt")"
done
call_snap
PYTHONUNBUFFERED=1 timeout 420 python3 bench/hf_baseline.py --layers 4 --batch 1,8,16 --prompt 16 --decode 8 \
  --json "$R/hf.json" > "$R/hf.txt" 2>&1
echo "== hf_baseline exit $?"
tail -15 "$R/hf.txt"
call_end
