#!/bin/sh
# On the GPU machine: several prepared device calls in one, each from its own bundle (a machine's start costs more
# device time than most calls). Each argument is NAME=RUN: the call's run.sh (bench/results/<session>/<call>/run.sh,
# which sources scripts/gpu_call.sh) and its bundle .gpu/NAME.tar.xz (packed here with AS=NAME sh
# scripts/gpu_pack.sh). In turn: .gpu emptied but for the bundles, NAME's unpacked as the one gpu_env.sh knows, the
# call run with OUT=$OUT/NAME (its r.tgz comes back there; the device returns 8 files, so 8 calls at most).
#
#   sh scripts/gpu_multi.sh owl=bench/results/2026-12-05-s64/owl/run.sh pfx2=bench/results/2026-12-05-s64/pfx2/run.sh
#
# A run.sh kept on another branch can be copied into this tree (untracked) for the call: the binaries come from its
# bundle, the tree gives the scripts and the fixtures.
set -u
cd "$(dirname "$0")/.."
O=${OUT:-/tmp/dsv4-gpu-out}
for a in "$@"; do
  name=${a%%=*} run=${a#*=}
  if [ ! -f ".gpu/$name.tar.xz" ] || [ ! -f "$run" ]; then
    echo "gpu_multi: $name: no .gpu/$name.tar.xz or no $run"
    continue
  fi
  find .gpu -mindepth 1 -maxdepth 1 ! -name '*.tar.xz' -exec rm -rf {} +
  cp ".gpu/$name.tar.xz" .gpu/bundle.tar.xz
  mkdir -p "$O/$name"
  echo "== gpu_multi: $name ($run)"
  OUT=$O/$name sh "$run"
done
find .gpu -mindepth 1 -maxdepth 1 ! -name '*.tar.xz' -exec rm -rf {} +
rm -f .gpu/bundle.tar.xz
