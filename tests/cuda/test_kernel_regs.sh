#!/bin/sh
# The registers ptxas gives the kernels whose occupancy is part of their design, checked on the CPU at build
# time (no GPU needed): nvcc --resource-usage over their source with the build's flags. The routed experts'
# reference decode kernels (k_moe16 with one activation plane, one n tile, one row block a block: MXFP4 and
# NVFP4, gate / up and down, every ring) run four 128-thread blocks an SM, so at most 128 registers and no
# spills; s27's launch bounds once took them to 130 (three blocks an SM) and only a device run could see it. So
# do those with two row blocks a block (Flash's decode from batch 7 on since s56): MXFP4's down projection was at
# 130 until its activation scales came through a ring of their own (s56 xring2/: 3.9 % a step at batch 64). Their
# gate / up has spilt 8 bytes since it was written (two values stored in the prologue, loaded after the loops:
# s56 read the SASS); more than that is a failure.
# DSV4_NVCC and DSV4_NVCC_FLAGS (the build's device flags and include paths) come from tests/CMakeLists.txt;
# skipped (77) in a build without the CUDA backend.
set -eu
: "${DSV4_SRC:?the source tree}"
if [ -z "${DSV4_NVCC:-}" ] || [ ! -x "$DSV4_NVCC" ]; then
  echo "skip: this build has no CUDA backend"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck disable=SC2086 # the flags are words
"$DSV4_NVCC" ${DSV4_NVCC_FLAGS:-} --resource-usage -c "$DSV4_SRC/src/backend/cuda/moe_mma.cu" -o "$tmp/moe_mma.o" \
  > "$tmp/ru.txt" 2>&1 ||
  fail "nvcc: $(tail -5 "$tmp/ru.txt")"
# per kernel: name, registers, spill stores (ptxas's "Function properties" line, then its "Used N registers")
awk '/Function properties for/ { name = $NF; next }
     name != "" && /bytes spill stores/ { spill = $5; next }
     name != "" && /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($i == "Used") print name, $(i + 1), spill; name = "" }' \
  "$tmp/ru.txt" > "$tmp/regs.txt"
# k_moe16<K, NP = 1, DOWN, NTT = 1, RB = 1, BP>: _Z7k_moe16ILi<K>ELi1ELb<DOWN>ELi1ELi1ELi<BP>E...; and
# k_moe16<K, 1, DOWN, 1, RB = 2, 8>
grep -E '^_Z7k_moe16ILi[0-9]+ELi1ELb[01]ELi1ELi1ELi[0-9]+E|^_Z7k_moe16ILi[0-9]+ELi1ELb[01]ELi1ELi2ELi8E' "$tmp/regs.txt" \
  > "$tmp/moe.txt" || true
n=$(wc -l < "$tmp/moe.txt")
[ "$n" -ge 8 ] || fail "found $n of k_moe16's reference decode kernels in ptxas's report (names changed?)"
bad=$(awk '$2 > 128 || $3 > 8 || ($3 > 0 && $1 !~ /^_Z7k_moe16ILi4ELi1ELb0ELi1ELi2ELi8E/)' "$tmp/moe.txt")
[ -z "$bad" ] || fail "k_moe16's reference decode kernels over 128 registers or spilling (name, registers, spill bytes):
$bad"
echo "ok   $n k_moe16 reference decode kernels at 128 registers or fewer, no spills but gate / up's 8 bytes with two row blocks: $(awk '{print $2}' "$tmp/moe.txt" | sort -n | uniq | tr '\n' ' ')"
# No wgmma chain serialised by ptxas in the files that issue wgmma: C7513 / C7515 ("wgmma.mma_async instructions are
# serialized due to ..."), C7520 (a wgmma on a path ptxas cannot prove warpgroup-uniform). Each makes ptxas wait for
# every wgmma before the next (WARPGROUP.DEPBAR after each HGMMA): k_attn_pvw's stage was so until its fragments were
# pinned to registers of their own (C7513: one register quad rewritten for each step). C7519 (an arrive injected) is
# information, not a wait.
for f in attn linear mma wg8; do
  # shellcheck disable=SC2086
  "$DSV4_NVCC" ${DSV4_NVCC_FLAGS:-} --resource-usage -c "$DSV4_SRC/src/backend/cuda/$f.cu" -o "$tmp/$f.o" \
    > "$tmp/ru-$f.txt" 2>&1 || fail "nvcc $f.cu: $(tail -5 "$tmp/ru-$f.txt")"
done
ser=$(grep -hE '\((C7513|C7515|C7520)\)' "$tmp/ru.txt" "$tmp"/ru-*.txt | sed -E "s/.*\((C75[0-9]+)\).*function '([^']+)'.*/\1 \2/" | sort -u)
[ -z "$ser" ] || fail "ptxas serialises wgmma (code, kernel):
$ser"
echo "ok   no wgmma serialised by ptxas in attn.cu, linear.cu, mma.cu, moe_mma.cu, wg8.cu"
