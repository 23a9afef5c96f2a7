#!/bin/sh
# call 3: prepack/ found batch 1 25 % slower with the packs in their producers (batch 16 / 64 even): hc_split's
# pack wrote the padding tokens (7 at batch 1) in one block, serially. Now the pads are plain stores spread
# over the last block's threads (wg8_pack_pad), and DSV4_PREPACK is a mask of the three kinds (1 hc_split's
# pack of h, 2 the rmsnorm op's, 4 norm_rope's BF16 rows). Logits against c9a9cc1 (*.base, bit for bit), a
# memcheck of decode on 2 Flash layers at batch 1 and 3, decode at batch 1 / 8 with every mask value that
# leaves one kind out, none, and the base, three rounds.
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_env.sh
R=/tmp/r3; rm -rf $R; mkdir -p $R; touch $R/.start
OUT_SAVE=$OUT; export OUT=$R
timeout 60 sh scripts/gpu_bits.sh > /dev/null 2>&1; echo "bits rc=$?"; cat $R/bits.txt
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 > /dev/null 2>&1
for b in 1 3; do
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 $B/bench_cpu -m /tmp/f2 --fill-random --prompt 4 --decode 3 --batch $b --backend cuda > $R/memcheck-b$b.txt 2>&1
  echo "memcheck flash 2 layers batch $b: rc $? $(grep 'ERROR SUMMARY' $R/memcheck-b$b.txt)"
done
AB_REPEAT=3 AB_DECODE=32 AB_BINS="new=$B/bench_cpu;nohc=env DSV4_PREPACK=6 $B/bench_cpu;nonorm=env DSV4_PREPACK=5 $B/bench_cpu;norows=env DSV4_PREPACK=3 $B/bench_cpu;nopre=env DSV4_PREPACK=0 $B/bench_cpu;base=$B/bench_cpu.base" \
  timeout 400 sh scripts/gpu_ab.sh "b1:--batch 1" "b8:--batch 8"
OUT=$OUT_SAVE
cd $R && tar czf $OUT/r.tgz $(find . -type f -newer .start)
