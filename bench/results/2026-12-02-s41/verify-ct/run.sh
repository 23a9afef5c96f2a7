#!/bin/sh
# Prepared in s41, NOT run (the device time ran out): the first call of the next session. 1f1e3e3 (the scores'
# whole-tile copy within a page and the epilogue without the heads-past-nh tests) passed gpu_bits.sh,
# test_ops_cuda and memcheck on the scores in ct/, not the full suite, and its decode was not timed. Run from
# wip/ix-short (one commit on main: the scores kernels leave at once where a token's candidates are at most the
# top-k - contexts to 2k tokens, the 16-token prompts of b1 / b16 - after the PDL wait), whose effect shows at
# the short-prompt cases while 1f1e3e3's shows at the long contexts. This call: the suite (logits against
# 584bcea's build, with the 2,100-token cases), decode new / base at batch 1 (16 tokens, 4k), batch 16 (16
# tokens), 16 x 32k, 16 x 128k, 64 x 32k (2 rounds), the indexer alone at 16 / 64 tokens with the scores' tiles
# a block bounded at 8 / 16 / 32 (DSV4_IXT_TMAX: every block converts the query again; at 64 x 128k ~270 MB of
# L2 reads for the query against 143 MB of keys at 16) - ~420 s; the head figures (gpu_head.sh) in a call of
# their own. Pack (wip/ix-short): BASE=<584bcea's build> NOTOK=1 (git worktree add /tmp/w584 584bcea; cmake -S
# /tmp/w584 -B /tmp/w584/build-gpu -DDSV4_CUDA=ON -DCMAKE_BUILD_TYPE=Release; cmake --build /tmp/w584/build-gpu
# -j2 --target dsv4 bench_cpu bench_kernels; or BASE=<main's build> to time wip/ix-short alone).
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin verify-ct
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b1-4k:--batch 1 --context 4096" "b16:--batch 16" \
  "b16-32k:--batch 16 --context 32768" "b16-128k:--batch 16 --context 131072" "b64-32k:--batch 64 --context 32768"
call_kernels attn 1 "t16=$B/bench_kernels;t8=env DSV4_IXT_TMAX=8 $B/bench_kernels;t32=env DSV4_IXT_TMAX=32 $B/bench_kernels" \
  "--attn-only --batch 16,64"
call_end
