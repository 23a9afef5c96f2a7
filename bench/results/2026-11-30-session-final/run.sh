#!/bin/sh
# The session's closing measurement, one device call (run from the repository root after
# `BASE=<build-gpu of dec2164> sh scripts/gpu_pack.sh`; dec2164 is the session's starting point):
# logits against the base bit for bit; 8 Flash layers (sparse, --fill-random), reference numerics: decode
# at batch 1 / 8 / 16 / 64 alternating with the base build, batch 1 and 16 with temperature 1 sampling,
# batch 1 and 16 at a 32k context, 4k-token prefill beside the base, the op-family profile at 1 and 16;
# bench_kernels; dsv4 serve driven by dsv4 bench at concurrency 1 / 8 / 16 / 64. Results: $OUT/final.tgz.
set -u
. scripts/gpu_env.sh
R=/tmp/final; rm -rf $R; mkdir -p $R
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } > $R/machine.txt
OUT=$R sh scripts/gpu_bits.sh > /dev/null 2>&1; el "bits: $(grep -c identical $R/bits.txt) of 4 identical"
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
$B/dsv4 inspect -m /tmp/f8 > $R/inspect-flash.txt; echo 8 > $R/flash-layers.txt
run() { # name binary args...
  n=$1 b=$2; shift 2
  timeout 120 $B/$b -m /tmp/f8 --prompt 16 --decode 32 --backend cuda --numerics reference --fill-random "$@" \
    --json $R/bench-$n.json > $R/bench-$n.txt 2>&1
  el "$n: $(grep -m1 '^model ' $R/bench-$n.txt | sed 's/.*decode 32 steps: //; s/ (graphs.*//')"
}
for bs in 1 8 16 64; do run flash-b$bs bench_cpu --batch $bs; run flash-b$bs-base bench_cpu.base --batch $bs; done
for bs in 1 16; do run flash-b$bs-r2 bench_cpu --batch $bs; run flash-b$bs-r2-base bench_cpu.base --batch $bs; done
for bs in 1 16; do run flash-b$bs-t1 bench_cpu --batch $bs --temperature 1; done
for bs in 1 16; do run flash-b$bs-c32768 bench_cpu --batch $bs --context 32768; done
for b in bench_cpu bench_cpu.base; do
  t=prefill4k; [ $b = bench_cpu.base ] && t=prefill4k-base
  timeout 120 $B/$b -m /tmp/f8 --prompt 4096 --decode 2 --batch 1 --backend cuda --numerics reference --fill-random \
    --json $R/$t.json > $R/$t.txt 2>&1; el "$t: $(grep -m1 '^model ' $R/$t.txt | sed 's/.*each: //; s/  decode.*//')"
done
for bs in 1 16; do
  timeout 120 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 8 --batch $bs --backend cuda --numerics reference --fill-random \
    --profile $R/profile-flash-b$bs.json --profile-steps 3 > $R/profile-flash-b$bs.txt 2>&1
done
el profiles
timeout 150 $B/bench_kernels --json $R/kernels.json > $R/kernels.txt 2>&1; el "kernels rc=$?"
mv $B/dsv4.base $B/dsv4.base.off # (gpu_suite.sh would compare the logits again)
OUT=$R TESTS=0 SANITIZE=0 KERNELS=0 FIXTURES=0 FLASH_LAYERS=0 SERVE_FLASH=1 timeout 200 sh scripts/gpu_suite.sh > $R/serve.txt 2>&1
el "serve: $(grep -c . $R/serve.txt) lines"
tar czf $OUT/final.tgz -C /tmp final
