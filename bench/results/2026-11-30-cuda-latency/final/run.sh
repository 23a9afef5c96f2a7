#!/bin/sh
# v22 record (HEAD cef6515 against 01d5440 in the same call): bits; 8 Flash layers decode at batch 1/8/16/64
# (reference; plain at 1 and 16), long contexts, the op-family profile, two MoE ring variants, bench_kernels
cd .gpu && tar xJf bundle.tar.xz && cd ..
export LD_LIBRARY_PATH=$PWD/.gpu/lib
B=.gpu; R=/tmp/final; rm -rf $R; mkdir -p $R; touch $R/.start
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,power.limit --format=csv > $R/gpu.txt 2>&1
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/f2 >/dev/null 2>&1
ids=$(seq -s, 3 43)
for num in reference plain; do
  for pf in 41 12; do
    for bin in dsv4 dsv4.base; do
      $B/$bin logits -m /tmp/f2 --fill-random --backend cuda --numerics $num --ids $ids --prefill $pf -o /tmp/l-$bin-$num-$pf.bin 2>>$R/logits.err
    done
    if cmp -s /tmp/l-dsv4-$num-$pf.bin /tmp/l-dsv4.base-$num-$pf.bin; then r=identical; else r=DIFFERENT; fi
    echo "logits $num prefill $pf (41 tokens, 2 Flash layers, --fill-random): $r" | tee -a $R/bits.txt
  done
done
$B/dsv4 mkmodel --preset flash --layers 8 --sparse -o /tmp/f8 >/dev/null 2>&1
run() { # name binary args...
  n=$1; b=$2; shift 2
  timeout 150 $B/$b -m /tmp/f8 --prompt 16 --decode 32 --backend cuda --numerics reference --fill-random "$@" --json $R/bench-$n.json > $R/bench-$n.txt 2>&1
  echo "$n: $(grep -m1 '^model ' $R/bench-$n.txt | sed 's/.*decode 32 steps: //; s/ (graphs.*//')" | tee -a $R/summary.txt
}
for bs in 1 8 16 64; do
  run flash-b$bs bench_cpu --batch $bs
  run flash-b$bs-base bench_cpu.base --batch $bs
done
run flash-b1-plain bench_cpu --batch 1 --numerics plain
run flash-b16-plain bench_cpu --batch 16 --numerics plain
for c in 4096 32768 131072; do run flash-b1-c$c bench_cpu --batch 1 --context $c; done
for c in 32768 131072; do run flash-b16-c$c bench_cpu --batch 16 --context $c; done
run flash-b64-c32768 bench_cpu --batch 64 --context 32768
for v in nobr nobr4; do for bs in 1 16 64; do run flash-b$bs-$v bench_cpu.$v --batch $bs; done; done
for bs in 1 16; do
  timeout 150 $B/bench_cpu -m /tmp/f8 --prompt 16 --decode 8 --batch $bs --backend cuda --numerics reference --fill-random --profile $R/profile-flash-b$bs.json > $R/profile-flash-b$bs.txt 2>&1
done
timeout 100 stdbuf -oL $B/bench_kernels --json $R/kernels.json > $R/kernels.txt 2>&1; echo "kernels rc=$?" >> $R/summary.txt
cd $R && tar czf $OUT/final.tgz $(find . -type f -newer .start)
