#!/bin/sh
# s42 call 4: lt.cu with cuBLASLt on the first n - n % 8 tokens (the tokens' scale rows 16-byte aligned; the rest
# on wg8.cu). test_ops_cuda; gpu_bits.sh against 584bcea's build (the default path's logits unchanged: k_wg8_pack's
# codes now from act_codes4); the logits' sensitivity on a 2-layer Flash-shaped checkpoint, 296 and 300 tokens
# as one prefill: cuBLASLt and mma.cu's F16 path (DSV4_WG8=0, another order of the same sums) each against the
# default; the 4,096-token prefill on 8 layers, ours / cuBLASLt alternating (3 rounds) and at 2,048.
# Pack: BASE=/tmp/w584/build-gpu NOTOK=1 sh scripts/gpu_pack.sh.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin lt2
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$R/machine.txt" 2>&1
timeout 240 $B/test_ops_cuda > "$R/ops.txt" 2>&1; echo "test_ops_cuda exit $?"
grep -E "cuBLASLt|FAIL|PASSED|FAILED" "$R/ops.txt" | head -20
grep -E "act_quant" "$R/ops.txt" | grep -E " n=(200|130|150|160|140|127) " | head -12
BITS_REPEAT=2 timeout 200 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "gpu_bits exit $?"; cat "$R/bits.txt"
T=/tmp/ltm; mkdir -p $T
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o $T/f2 > /dev/null 2>&1
for n in 296 300; do
  ids=$(seq -s, 3 $((n + 2)))
  for g in ours cublaslt f16; do
    e=; a=ours; [ $g = f16 ] && e="env DSV4_WG8=0"; [ $g = cublaslt ] && a=cublaslt
    timeout 120 $e $B/dsv4 logits -m $T/f2 --fill-random --backend cuda --numerics reference --ids "$ids" --prefill $n \
      --prefill-gemm $a -o $T/l-$g.bin 2>> "$R/logits.err" || echo "logits $g $n failed"
  done
  for g in cublaslt f16; do
    python3 - "$T/l-ours.bin" "$T/l-$g.bin" "$g $n" <<'PY' | tee -a "$R/logits.txt"
import sys, numpy as np
a = np.fromfile(sys.argv[1], dtype=np.float32); b = np.fromfile(sys.argv[2], dtype=np.float32)
V = 129280; a = a.reshape(-1, V); b = b.reshape(-1, V)
d = np.abs(a - b).max(axis=1) / np.abs(a).max(axis=1)
print(f"{sys.argv[3]} tokens against the default: max |d| / max |logit| per token: median {np.median(d):.2e}, "
      f"max {d.max():.2e}; greedy picks equal {np.mean(a.argmax(1) == b.argmax(1)) * 100:.1f} %; finite {np.isfinite(b).all()}")
PY
  done
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
for p in 4096:1 4096:2 4096:3 2048:1; do
  for g in ours cublaslt; do
    timeout 150 $B/bench_cpu -m /tmp/f8 --backend cuda --numerics reference --fill-random --prompt ${p%:*} --decode 2 \
      --prefill-gemm $g > "$R/pf-$g-${p%:*}-${p#*:}.txt" 2>&1
    echo "prefill ${p%:*} $g (${p#*:}): $(grep -oE 'prefill [0-9]+ tokens each[^)]*\)' "$R/pf-$g-${p%:*}-${p#*:}.txt")"
  done
done
call_end
