#!/bin/sh
# s65: one call, two bundles (a machine's start costs more device time than either run):
# 1. owl/ - s64's prepared first run of k_attn_ow (branch wip/one-wg at b7fb6cf; owl/run.sh is that branch's
#    bench/results/2026-12-05-s64/owl/run.sh): .gpu/owl.tar.xz, packed there with BASE = main's build at 2171877.
# 2. pfx2/ - bench/results/2026-12-05-s64/pfx2/run.sh (main at d3862f4): .gpu/pfx2.tar.xz, packed on main with
#    BASE = main's build at 2171877 and the V4 tokenizer.
# Each writes its own r.tgz ($OUT/owl/r.tgz, $OUT/pfx2/r.tgz).
set -u
cd "$(dirname "$0")/../../.."
O=${OUT:-/tmp/dsv4-gpu-out}
use() { # NAME: .gpu holds only the packed bundles, then NAME's as the one gpu_env.sh unpacks
  find .gpu -mindepth 1 -maxdepth 1 ! -name '*.tar.xz' -exec rm -rf {} +
  cp .gpu/$1.tar.xz .gpu/bundle.tar.xz
}
use owl
mkdir -p "$O/owl"
OUT=$O/owl sh bench/results/2026-12-05-s65/owl/run.sh
use pfx2
mkdir -p "$O/pfx2"
OUT=$O/pfx2 sh bench/results/2026-12-05-s64/pfx2/run.sh
