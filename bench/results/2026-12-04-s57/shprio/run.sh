#!/bin/sh
# s57 shprio/: the shared expert's launches ahead of the routed experts' waiting blocks. kt/'s batch-4 trace had
# the shared expert's SwiGLU (on the second queue) start 56 us late in every layer: the routed gate / up's 4,608
# blocks were ahead of it at the block scheduler, so SwiGLU, w2's pack and w2 ran after them, on the path to
# hc_post. DSV4_SHPRIO (the experiment's knob): 1, every shared-expert launch at the greatest priority; 2, those
# after its gate / up; decode graphs instantiated with node priorities honoured. Three rounds at batch 1 / 4 / 16
# / 64 (sp0 the default), then node traces at batch 4 and 16 with 2.
# Pack: KTRACE=1 NOTOK=1 LEAN=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin shprio
call_ab 3 "sp0=$B/bench_cpu --overlap;sp1=env DSV4_SHPRIO=1 $B/bench_cpu --overlap;sp2=env DSV4_SHPRIO=2 $B/bench_cpu --overlap" \
  "b1:--batch 1" "b4:--batch 4" "b16:--batch 16" "b64:--batch 64"
(export DSV4_SHPRIO=2; call_trace sp2-b4 "--batch 4"; call_trace sp2-b16 "--batch 16")
call_trace sp0-b16 "--batch 16"
call_end
