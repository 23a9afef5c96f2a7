#!/bin/sh
# On the GPU machine (after scripts/gpu_pack.sh BASE=<a build-gpu of an earlier commit>): decode timings
# of .gpu/bench_cpu against .gpu/bench_cpu.base on one checkpoint, each case run new then base,
# AB_REPEAT times (default 2) alternating: the run-to-run noise is 3-5 %, so a few-percent change needs
# both orders seen twice. One line per run into $OUT/ab.txt and a JSON per run ($OUT/ab-NAME[-base]-I.json).
#
#   sh scripts/gpu_ab.sh "b1-c128k:--batch 1 --context 131072" "b16:--batch 16" ...
#
# Each argument is NAME:ARGS (ARGS: more bench_cpu options). The checkpoint: AB_MODEL (default: an
# 8-layer Flash-shaped sparse one made here, AB_LAYERS layers; filled at load with --fill-random; a sparse
# AB_MODEL (dsv4 mkmodel --sparse) needs AB_FILL=1 for that, or every run fails: s56 nvfp4/'s first try);
# AB_NUMERICS (default reference), AB_DECODE steps (default 16), AB_BACKEND (default cuda; cpu checks the
# script here on a small fixture: AB_MODEL=tests/fixtures/q_stock AB_BACKEND=cpu). Unpacks the
# bundle when it is not yet (scripts/gpu_env.sh). AB_BINS compares other builds or knobs instead of new
# against base, alternating in its order: "NAME=COMMAND;NAME=COMMAND;..." (a COMMAND may begin with env
# VAR=VALUE; tags NAME-CASE, "new" just CASE), e.g.
#   AB_BINS="new=.gpu/bench_cpu;noside=env DSV4_HC_SIDE=0 .gpu/bench_cpu;base=.gpu/bench_cpu.base"
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh # $OUT, LD_LIBRARY_PATH, B=.gpu, the bundle unpacked
if [ -z "${AB_BINS:-}" ]; then
  [ -x $B/bench_cpu.base ] || { echo "gpu_ab: no $B/bench_cpu.base (pack with BASE=...)"; exit 1; }
  AB_BINS="new=$B/bench_cpu;base=$B/bench_cpu.base"
fi
model=${AB_MODEL:-}
fill=
if [ "${AB_FILL:-0}" = 1 ]; then fill=--fill-random; fi
if [ -z "$model" ]; then
  model=$(mktemp -d)/flash
  $B/dsv4 mkmodel --preset flash --layers "${AB_LAYERS:-8}" --sparse -o "$model" > /dev/null 2>&1 ||
    { echo "gpu_ab: mkmodel failed"; exit 1; }
  fill=--fill-random
fi
for i in $(seq 1 "${AB_REPEAT:-2}"); do
  for case in "$@"; do
    name=${case%%:*} args=${case#*:}
    IFS=';'
    for v in $AB_BINS; do
      IFS=' '
      vn=${v%%=*} cmd=${v#*=}
      tag=$name; [ "$vn" = new ] || tag=$name-$vn
      # shellcheck disable=SC2086
      timeout 200 $cmd -m "$model" --prompt 16 --decode "${AB_DECODE:-16}" --backend "${AB_BACKEND:-cuda}" \
        --numerics "${AB_NUMERICS:-reference}" $fill $args --json "$OUT/ab-$tag-$i.json" > "$OUT/ab-$tag-$i.txt" 2>&1
      r=$(grep -m1 '^model ' "$OUT/ab-$tag-$i.txt" | sed 's/.*decode [0-9]* steps: //; s/ (graphs.*//')
      echo "$tag ($i): ${r:-FAILED, see ab-$tag-$i.txt}" | tee -a "$OUT/ab.txt"
    done
  done
done
