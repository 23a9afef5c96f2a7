#!/bin/sh
# s72 mem/ (main at the bundle's commit: the reservation's size in the start-up log): dsv4 serve on 4 Flash-shaped
# layers (--fill-random) at four context / chunk settings, each serving 8 requests at concurrency 1 (dsv4 bench);
# the log's reservation, KV pool and warm-up lines against SERVER.md's sizes (0.7 / 1.6 / 11 / 2.9 GB).
# Run: sh scripts/gpu_multi.sh mem=bench/results/2026-12-06-s72/mem/run.sh
# Pack: AS=mem LEAN= sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin mem
. scripts/serve_wait.sh
$B/dsv4 mkmodel --preset flash --layers 4 --sparse -o /tmp/f4 > /dev/null 2>&1
for cfg in 4096:2048 131072:2048 1048576:2048 1048576:512; do
  ctx=${cfg%%:*} ch=${cfg#*:}
  SB_CTX=$ctx serve_bench "serve-$ctx-$ch" 1 -m /tmp/f4 --fill-random --max-running-requests 16 \
    --chunked-prefill-size "$ch"
  echo "== context $ctx, chunk $ch"
  grep -E "working memory|KV pool|warm-up|error" "$R/serve-$ctx-$ch.log" | head -5
done
call_end
