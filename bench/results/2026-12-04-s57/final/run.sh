#!/bin/sh
# s57 final/ (prepared, NOT run: the session's device time was spent): s57's three landed changes together (the
# one-row-block tile read, the down projection's two row blocks from batch 4, 2-pair tiles at batch 4 only), each
# measured alone against its predecessor, now against s56's end (9dc41f3's build): decode at batch 1 / 4 / 5 / 6 /
# 8 / 12 / 16 / 64, three rounds; then dsv4 serve on the 8 layers driven by dsv4 bench at concurrency 1 / 8 / 16 /
# 64 (64 in, 32 out), the tree and then 9dc41f3's build, one server each (s56 serve/'s call with concurrency 8).
# Between them, 2-pair tiles forced at 1-3 tokens (bp-bN cases: summary_lib's call_rounds with case=r"bp-b\d+").
# Pack: BASE=<9dc41f3's build-gpu> KTRACE=1 sh scripts/gpu_pack.sh (with the tokenizer, for serving)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
. scripts/serve_wait.sh # serve_bench
call_begin final
call_ab 3 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b4:--batch 4" "b5:--batch 5" \
  "b6:--batch 6" "b8:--batch 8" "b12:--batch 12" "b16:--batch 16" "b64:--batch 64"
# 2-pair tiles (their B copied by 8 lanes instead of 32: at 1 token 7 of 8 pair slots are zero-filled copies)
# forced at 1-3 tokens, where they were last measured in s28 (2.5 % slower alone at 1 token, before XR and the
# rest): the tree's choice (new) against DSV4_MOE_BP=1, three rounds
call_ab 3 "new=$B/bench_cpu --overlap;bp1=env DSV4_MOE_BP=1 $B/bench_cpu --overlap" "bp-b1:--batch 1" "bp-b2:--batch 2" \
  "bp-b3:--batch 3"
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/fs > /dev/null 2>&1
serve_bench serve-new "1 8 16 64" -m /tmp/fs --fill-random
SB_BIN=$B/dsv4.base serve_bench serve-base "1 8 16 64" -m /tmp/fs --fill-random
call_end
