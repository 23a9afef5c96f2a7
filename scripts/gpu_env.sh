# Sourced from the repository root by the GPU machine's scripts (gpu_suite.sh, gpu_bits.sh, gpu_ab.sh):
# $OUT (default /tmp/dsv4-gpu-out) made, the bundle's libraries on LD_LIBRARY_PATH, B=.gpu, and
# scripts/gpu_pack.sh's bundle unpacked there if it is not yet.
OUT=${OUT:-/tmp/dsv4-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
B=.gpu
if [ -f $B/bundle.tar.xz ] && [ ! -x $B/dsv4 ]; then tar xJf $B/bundle.tar.xz -C $B; fi
