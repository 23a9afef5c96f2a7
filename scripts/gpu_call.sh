#!/bin/sh
# Sourced by a device call's run.sh (bench/results/<session>/<call>/run.sh), from the repository root, for the
# frame every such record repeated: scripts/gpu_env.sh, a fresh results folder $R that the scripts write into
# ($OUT points there meanwhile), and at the end every file written there packed as the tool's $OUT/r.tgz.
#
#   cd "$(dirname "$0")/../../../.."
#   . scripts/gpu_call.sh
#   call_begin r7
#   sh scripts/gpu_verify.sh
#   AB_REPEAT=2 sh scripts/gpu_ab.sh "b1:--batch 1"
#   call_end
set -u
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
call_begin() {
  R=/tmp/$1
  rm -rf "$R" && mkdir -p "$R"
  OUT_SAVE=$OUT
  export OUT="$R"
}
call_end() {
  OUT=$OUT_SAVE
  (cd "$R" && tar czf "$OUT/r.tgz" $(find . -type f))
}
