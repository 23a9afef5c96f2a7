#!/bin/sh
# s73 fin/ (after ps/): the parts' sums by st.async only where ps/ measured them faster - one token, parts of up to 96
# rows or more (CSA; HCA from ~64k) - the barrier elsewhere (2-3 tokens +1.5-4.9 %, HCA 4k +2.9 % with them).
# *.base: a0984e27's build (the source of 241d6aea). DSV4_ATTN_ONE_ASYNC=0 never, =2 wherever it fits.
# - the attention alone at 1-3 tokens, 4k / 32k / 64k / 128k (HCA 64k: the first HCA shape of 96-row parts);
# - decode at batch 1, 4k and 128k, against the barrier and the base build;
# - the whole GPU suite (scripts/gpu_verify.sh: every GPU test, its memchecks, the logits against the base build).
# Pack: AS=fin BASE=/tmp/base-s73 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin fin
A0="env DSV4_ATTN_ONE_ASYNC=0" A2="env DSV4_ATTN_ONE_ASYNC=2"
call_kernels attn 2 "new=$B/bench_kernels;a0=$A0 $B/bench_kernels;a2=$A2 $B/bench_kernels;base=$B/bench_kernels.base" \
  "--attn-only --batch 1,2,3 --contexts 4096,32768,65536,131072"
call_attn_ab a0 a2 base new
call_snap
call_ab 2 "new=$B/bench_cpu --overlap;a0=$A0 $B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" \
  "b1x4k:--batch 1 --context 4096" "b1x128k:--batch 1 --context 131072"
sort "$R/ab.txt" | uniq
call_snap
call_memcheck k_attn_one "--attn-only --batch 1,2 --contexts 4096,65536,131072 --reps 1"
env DSV4_ATTN_ONE_ASYNC=2 timeout 150 compute-sanitizer --tool memcheck --kernel-name kns=k_attn_one --error-exitcode 3 \
  $B/bench_kernels --attn-only --batch 2,3 --contexts 4096,131072 --reps 1 > "$R/san-k_attn_one-a2.txt" 2>&1
echo "== memcheck k_attn_one (DSV4_ATTN_ONE_ASYNC=2) exit $?"; grep "ERROR SUMMARY" "$R/san-k_attn_one-a2.txt"
call_verify VERIFY_TIMEOUT=380
call_end
