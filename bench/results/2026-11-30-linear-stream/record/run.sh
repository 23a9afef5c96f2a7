set -u
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
. scripts/gpu_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > $R/machine.txt
printf '#!/bin/sh\nDSV4_MMA_STREAM=0 exec "$(dirname "$0")/bench_cpu" "$@"\n' > $B/bench_cpu.base; chmod +x $B/bench_cpu.base
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 200 $B/test_ep > $R/ep.txt 2>&1; echo "ep exit $?"
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 > /dev/null 2>&1
$B/dsv4 inspect -m /tmp/f8 > $R/inspect-flash.txt 2>&1
timeout 100 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --batch 1 --backend cuda --numerics reference --fill-random --profile $R/profile-b1.json --profile-steps 3 > $R/profile-b1.txt 2>&1
DSV4_MMA_STREAM=0 timeout 100 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 16 --batch 1 --backend cuda --numerics reference --fill-random --profile $R/profile-b1-off.json --profile-steps 3 > $R/profile-b1-off.txt 2>&1
OUT=$R AB_MODEL=/tmp/f8 AB_REPEAT=2 timeout 400 sh scripts/gpu_ab.sh "b1:--batch 1 --fill-random" "b8:--batch 8 --fill-random" "b16:--batch 16 --fill-random" "b1-c32k:--batch 1 --context 32768 --fill-random"
tar czf $OUT/r.tgz -C /tmp r
