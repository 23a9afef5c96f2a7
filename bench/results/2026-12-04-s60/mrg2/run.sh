#!/bin/sh
# s60 mrg2/: what mrg/ left. mrg/'s suite passed with the logits byte for byte against main's build, but its
# 330 s ran out in the quick memchecks (at test_overlap), leaving the Flash-shaped memchecks (batch 16: k_attn_md16
# at Flash's 64 heads) undone - and the sanitizer left running behind the timeout disturbed the "new" timings that
# followed (CSA 1 x 4k 16.6 us against 10.5 with DSV4_ATTN_ONE_EJ=0 in the same binary). So: the Flash-shaped
# memchecks and test_overlap's, memcheck on the attention kernels alone at 1 / 16 / 64 tokens, then k_attn_one's
# early join at 1 token (new, EJ off, main's build) alone three rounds and in decode at batch 1 two rounds.
# Outcome: every memcheck clean; the early join 0.8-0.9 us slower on CSA at 1 token, 0.1-0.3 faster on HCA, decode
# at batch 1 unchanged - not landed (its diff against f74653a: onejoin.diff here).
# Pack (on tmp/s60-merge): BASE=/tmp/baseP KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh   (as mrg/'s)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin mrg2
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); } # what has run comes back if the call is cut
$B/dsv4 mkmodel --preset flash --layers 2 --sparse -o /tmp/dsv4-san-f2 > /dev/null 2>&1
for b in 16 1 64; do
  DSV4_SRC=$PWD timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 $B/bench_cpu -m /tmp/dsv4-san-f2 \
    --fill-random --prompt 4 --decode 3 --batch $b --backend cuda > "$R/san-flash-b$b.txt" 2>&1
  echo "== memcheck flash 2 layers reference batch $b: exit $? $(grep 'ERROR SUMMARY' "$R/san-flash-b$b.txt" | tail -1)"
done
DSV4_SRC=$PWD DSV4_TEST_BACKEND=cuda timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 $B/test_overlap > "$R/san-overlap.txt" 2>&1
echo "== memcheck test_overlap: exit $? $(grep 'ERROR SUMMARY' "$R/san-overlap.txt" | tail -1)"
call_memcheck k_attn_one "--attn-only --batch 1 --reps 1"
call_memcheck k_attn_md16 "--attn-only --batch 16,64 --reps 1"
call_memcheck k_attn_pv "--attn-only --batch 16,64 --reps 1"
snap
call_kernels attn 3 "new=$B/bench_kernels;ej0=env DSV4_ATTN_ONE_EJ=0 $B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1"
python3 - "$R" <<'PY'
import sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for v in ("new", "ej0", "base"):
    for r in (1, 2, 3):
        try:
            for ln in open(f"{sys.argv[1]}/attn-{v}-{r}.txt"):
                f = ln.split()
                if f and f[0] in ("CSA", "HCA"):
                    d[(f[0] + f[1] + ")", int(f[3]), int(f[4]))][v].append(float(f[6]))
        except OSError:
            pass
for k, x in d.items():
    n, e, b = x["new"], x["ej0"], x["base"]
    if n and b:
        print(*k, "new", *n, "ej0", *e, "base", *b, "%+.1f%%" % (100 * (sum(n) / sum(b) - 1)))
PY
snap
call_ab 2 "new=$B/bench_cpu --overlap;ej0=env DSV4_ATTN_ONE_EJ=0 $B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1"
call_end
