#!/bin/sh
# s59 pp3/: the per-part attention numerics' third version (the one landed). k_attn_md16 loads every pair of
# every part at once (up to MD_PK = 3 a lane and part: parts of up to 192 rows) and takes the parts' maxima and
# sums from registers; a part's sum adds a lane's pairs lo + 2 l + 64 k counted from the part's first row (pp/'s
# order; pp2/ counted from the token's first row, which made k_attn_md16 find each pair's part by comparison:
# 5.9 against 4.4 us at 16 tokens, ncu16/). k_attn_one stores its maxima and sums at their heads' owners before
# its one cluster barrier (pp2/). Timed as ppt/ (attention alone, two rounds; decode, two rounds) against
# 9dc41f3's build, then the whole GPU suite with the quick memchecks (the base's dsv4 set aside: the logits
# change by design).
# Pack: BASE=/tmp/baseH KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pp3
call_kernels attn 2 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16,64"
call_ab 2 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16" "b64:--batch 64" "b16c32k:--batch 16 --context 32768"
mv $B/dsv4.base $B/dsv4.base.off
VERIFY_TIMEOUT=420 sh scripts/gpu_verify.sh
mv $B/dsv4.base.off $B/dsv4.base
python3 - "$R" <<'PY'
import sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for v in ("new", "base"):
    for r in (1, 2):
        for ln in open(f"{sys.argv[1]}/attn-{v}-{r}.txt"):
            f = ln.split()
            if f and f[0] in ("CSA", "HCA"):
                d[(f[0] + f[1] + ")", int(f[3]), int(f[4]))][v].append(float(f[6]))
for k, x in d.items():
    n, b = x["new"], x["base"]
    print(*k, "new", *n, "base", *b, "%+.1f%%" % (100 * (sum(n) / sum(b) - 1)))
PY
call_end
