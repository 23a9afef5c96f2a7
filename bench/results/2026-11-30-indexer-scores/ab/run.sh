#!/bin/sh
# scripts/gpu_ab.sh's first GPU run (7a32395 against b11a713): decode at batch 1 / 16 with 16-token and 128k
# contexts, new and base alternating twice; and the bits
cd .gpu && tar xJf bundle.tar.xz && cd ..
R=/tmp/r7; rm -rf $R; mkdir -p $R
OUT=$R sh scripts/gpu_bits.sh
OUT=$R sh scripts/gpu_ab.sh "b1:--batch 1" "b1-c128k:--batch 1 --context 131072" "b16-c128k:--batch 16 --context 131072"
cd $R && tar czf $OUT/r7.tgz .
