#!/bin/sh
# s77 snap/: s75's snap/run.sh as it is, on an H200 only (the machine's name checked first: an H100 ran it in s75,
# and no H200 has been lent since s68). The tree is main at d93bcf82 (s76's HEAD: the code s75's snap/ timed plus
# 488134db, the same SASS), s57 = *.base (0fd1e38b: the code of PERFORMANCE's "At a glance" H200 table).
# Pack (in a checkout of d93bcf82): AS=snap BASE=/tmp/build-s57 sh scripts/gpu_pack.sh (with the tokenizer);
# no .gpu/mainbk.tar.xz (the linears' section is skipped).
# Run: sh scripts/gpu_multi.sh snap=bench/results/2026-12-06-s77/snap/run.sh (~9 min)
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "snap: not an H200 ($(nvidia-smi --query-gpu=name --format=csv,noheader)): nothing run"
  exit 0
fi
exec sh "$(dirname "$0")/../../2026-12-06-s75/snap/run.sh"
