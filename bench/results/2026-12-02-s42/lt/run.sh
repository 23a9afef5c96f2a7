#!/bin/sh
# s42 call 3: --prefill-gemm cublaslt (lt.cu), first run. test_ops_cuda (the new cuBLASLt cases among all);
# bench_kernels --linear-only at 128 / 1,024 / 4,096 tokens (ours and cuBLASLt in the same run); the logits of a
# 2-layer Flash-shaped checkpoint with and without it (300 tokens as one prefill: max |d| / max |logit|, greedy
# picks); the 4,096-token prefill on 8 layers, ours and cuBLASLt alternating (2 rounds). Pack: NOTOK=1 (main +
# the change, no base).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin lt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$R/machine.txt" 2>&1
timeout 240 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "test_ops_cuda exit $?"
grep -E "cuBLASLt|lt.cu|FAIL|PASSED|FAILED" "$R/ops.txt" | head -30
grep -E "linear FP8.* n=(200|130|150|160|140|127) " "$R/ops.txt" | head -12
call_kernels lin 1 "ours=$B/bench_kernels" "--linear-only --batch 128,1024,4096"
grep -E "FP8" "$R/lin-ours-1.txt"
T=/tmp/ltm; mkdir -p $T
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o $T/f2 > /dev/null 2>&1
ids=$(seq -s, 3 302)
for g in ours cublaslt; do
  timeout 120 $B/dsv4 logits -m $T/f2 --fill-random --backend cuda --numerics reference --ids "$ids" --prefill 300 \
    --prefill-gemm $g -o $T/l-$g.bin 2>> "$R/logits.err"; echo "logits $g exit $?"
done
python3 - "$T/l-ours.bin" "$T/l-cublaslt.bin" <<'PY' | tee "$R/logits.txt"
import sys, numpy as np
a = np.fromfile(sys.argv[1], dtype=np.float32); b = np.fromfile(sys.argv[2], dtype=np.float32)
V = 129280; a = a.reshape(-1, V); b = b.reshape(-1, V)
d = np.abs(a - b).max(axis=1) / np.abs(a).max(axis=1)
print(f"tokens {a.shape[0]}: max |d| / max |logit| per token: median {np.median(d):.2e}, max {d.max():.2e}; "
      f"greedy picks equal {np.mean(a.argmax(1) == b.argmax(1)) * 100:.1f} %; finite {np.isfinite(b).all()}")
PY
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for r in 1 2; do
  for g in ours cublaslt; do
    timeout 150 $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt 4096 --decode 2 \
      --prefill-gemm $g > "$R/pf-$g-$r.txt" 2>&1
    echo "prefill $g ($r): $(grep -iE 'prefill' "$R/pf-$g-$r.txt" | head -2 | tr '\n' ' ')"
  done
done
call_end
