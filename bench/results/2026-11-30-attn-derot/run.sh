#!/bin/sh
# The command of this directory's device call (the run tool's one line, here as lines). Packed with
# `sh scripts/gpu_pack.sh` (no BASE), then the base as wrappers running the same binaries with the
# de-rotation in the rope kernel after the attention:
#   for b in bench_cpu dsv4; do
#     printf '#!/bin/sh\nDSV4_ATTN_DEROT=0 exec "$(dirname "$0")/%s" "$@"\n' $b > .gpu/$b.base; chmod +x .gpu/$b.base
#   done
R=$OUT; export OUT=/tmp/r; mkdir -p $OUT
(TESTS=1 SANITIZE=quick TIMINGS=0 timeout 300 sh scripts/gpu_suite.sh > $OUT/suite.txt 2>&1; echo "suite rc $?" >> $OUT/suite.txt)
AB_REPEAT=5 timeout 200 sh scripts/gpu_ab.sh "b1:--batch 1" > $OUT/ab-out.txt 2>&1
AB_REPEAT=2 timeout 100 sh scripts/gpu_ab.sh "b16:--batch 16" >> $OUT/ab-out.txt 2>&1
tar czf $R/r.tgz -C /tmp r
