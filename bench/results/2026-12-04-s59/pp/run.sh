#!/bin/sh
# s59 pp/: reference numerics' attention with per-part maxima (MODEL_NOTES, "Reference numerics' attention
# weights") - the CPU's attn_parts and every GPU path (k_attn, k_attn_md + k_attn_hpv, k_attn_md16 + k_attn_pv /
# k_attn_pvw, k_attn_one) - through the whole GPU suite with the quick memchecks. The logits change by design:
# the base build's dsv4 is set aside so that gpu_bits.sh checks repeatability only.
# Pack: BASE=/tmp/baseH KTRACE=1 NOTOK=1 sh scripts/gpu_pack.sh
set -u
cd "$(dirname "$0")/../../../.."
. scripts/gpu_call.sh
call_begin pp
mv $B/dsv4.base $B/dsv4.base.off
VERIFY_TIMEOUT=540 sh scripts/gpu_verify.sh
mv $B/dsv4.base.off $B/dsv4.base
call_end
