#!/bin/sh
# The command of this directory's device call (the run tool's one line, here as lines), after
# `BASE=<build-gpu of dec2164> sh scripts/gpu_pack.sh` on wip/norm-rope (8421984): the GPU tests and
# a quick memcheck with the base build's logits compared first (gpu_suite.sh runs gpu_bits.sh when a
# base rides along), bench_kernels once, then scripts/gpu_ab.sh at batch 1 (three pairs) and 16 (one).
R=$OUT; export OUT=/tmp/r; mkdir -p $OUT
(TESTS=1 SANITIZE=quick KERNELS=1 FIXTURES=0 BASELINE=1 timeout 330 sh scripts/gpu_suite.sh > $OUT/suite.txt 2>&1; echo "suite rc $?" >> $OUT/suite.txt)
AB_REPEAT=3 timeout 170 sh scripts/gpu_ab.sh "b1:--batch 1" > $OUT/ab-out.txt 2>&1
AB_REPEAT=1 timeout 50 sh scripts/gpu_ab.sh "b16:--batch 16" >> $OUT/ab-out.txt 2>&1
tar czf $R/r.tgz -C /tmp r
