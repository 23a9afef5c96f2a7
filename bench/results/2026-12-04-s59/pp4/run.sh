#!/bin/sh
# s59 pp4/: the per-part attention numerics' fourth version (the one landed): k_attn_md16 a block per (token,
# head), warp p taking part p through am_part_max / am_part_sum as k_attn_one's warps do (pp3/'s warp a head with
# every part's pairs in registers used 128 registers: CSA at 16 / 64 tokens 33.7 / 78.0 against 30.0 / 62.6 us);
# k_attn_one as pp3/'s. One round each (the session's device time): attention alone against 9dc41f3's build,
# decode at batch 1 / 16 / 64, after the whole GPU suite with the quick memchecks (the base's dsv4 set aside: the
# logits change by design).
# Pack: BASE=/tmp/baseH KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pp4
snap() { (cd "$R" && tar czf "$OUT_SAVE/r.tgz" $(find . -type f)); } # what has run comes back if the call is cut
mv $B/dsv4.base $B/dsv4.base.off
VERIFY_TIMEOUT=300 sh scripts/gpu_verify.sh
mv $B/dsv4.base.off $B/dsv4.base
snap
call_kernels attn 1 "new=$B/bench_kernels;base=$B/bench_kernels.base" "--attn-only --batch 1,16,64"
snap
call_ab 1 "new=$B/bench_cpu --overlap;base=$B/bench_cpu.base --overlap" "b1:--batch 1" "b16:--batch 16" "b64:--batch 64"
python3 - "$R" <<'PY'
import sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for v in ("new", "base"):
    for r in (1,):
        for ln in open(f"{sys.argv[1]}/attn-{v}-{r}.txt"):
            f = ln.split()
            if f and f[0] in ("CSA", "HCA"):
                d[(f[0] + f[1] + ")", int(f[3]), int(f[4]))][v].append(float(f[6]))
for k, x in d.items():
    n, b = x["new"], x["base"]
    print(*k, "new", *n, "base", *b, "%+.1f%%" % (100 * (sum(n) / sum(b) - 1)))
PY
call_end
