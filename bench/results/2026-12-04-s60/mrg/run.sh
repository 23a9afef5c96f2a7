#!/bin/sh
# s60 mrg/: s59's two prepared branches in one call, as a temporary merge (tmp/s60-merge: wip/md16-global +
# wip/one-join-early). Both claim main's bits, so first the whole suite with main's dsv4 as the base: the logits
# byte for byte. Then attention alone at 1 / 16 / 64 tokens (new, new with k_attn_one's early join off, main's
# build), one round, and decode at batch 1 / 16 / 64 (new, main), one round (pp4/ did the same in one call).
# tmp/s60-merge was main (f74653a) + wip/md16-global (landed after this call and mrg2/) + wip/one-join-early (not
# landed; its diff is mrg2/onejoin.diff). Pack (on that merge): BASE=/tmp/baseP KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh   (/tmp/baseP: main's build, 88a7072's kernels)
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin mrg
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); } # what has run comes back if the call is cut
VERIFY_TIMEOUT=330 sh scripts/gpu_verify.sh
snap
call_kernels attn 1 "new=$B/bench_kernels;ej0=env DSV4_ATTN_ONE_EJ=0 $B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16,64"
python3 - "$R" <<'PY'
import sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for v in ("new", "ej0", "base"):
    for r in (1, 2):
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
call_ab 1 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16" "b64:--batch 64"
call_end
