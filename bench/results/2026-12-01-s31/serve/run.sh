#!/bin/sh
# v51 (main) served: dsv4 serve on 8 Flash layers (the layout made at load through be->moe_prepare, as the server
# loads) driven by dsv4 bench at concurrency 1 / 8 / 16 / 64 (gpu_suite.sh's SERVE_FLASH, as gpu_head.sh runs it).
# gpu_pack.sh; carry .gpu.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin serve
TESTS=0 SANITIZE=0 KERNELS=0 FIXTURES=0 SERVE_FLASH=1 SERVE_LAYERS=8 timeout 200 sh scripts/gpu_suite.sh > $R/serve.txt 2>&1
echo "serve rc=$?"
grep -A1 "conc" $R/serve.txt | grep -v "^--" | grep -v conc
call_end
