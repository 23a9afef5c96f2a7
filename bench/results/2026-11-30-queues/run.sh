#!/bin/sh
# The command of this directory's device call (the run tool's one line, here as lines). Packed with
# `sh scripts/gpu_pack.sh` (no BASE), then the base as wrappers running the same binaries on one queue:
#   for b in bench_cpu dsv4; do
#     printf '#!/bin/sh\nDSV4_CUDA_QUEUES=1 exec "$(dirname "$0")/%s" "$@"\n' $b > .gpu/$b.base; chmod +x .gpu/$b.base
#   done
# gpu_suite.sh runs gpu_bits.sh first (dsv4 against dsv4.base: two queues against one), then the GPU tests
# and a quick memcheck; gpu_ab.sh alternates bench_cpu (two queues) with bench_cpu.base (one).
R=$OUT; export OUT=/tmp/r; mkdir -p $OUT
(TESTS=1 SANITIZE=quick TIMINGS=0 timeout 300 sh scripts/gpu_suite.sh > $OUT/suite.txt 2>&1; echo "suite rc $?" >> $OUT/suite.txt)
AB_REPEAT=3 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" "b16:--batch 16" > $OUT/ab-out.txt 2>&1
tar czf $R/r.tgz -C /tmp r
