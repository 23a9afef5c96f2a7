#!/bin/sh
# s53: s52's prepared call, run as it was (its header: what it measures and its pack line).
cd "$(dirname "$0")/../../../.." && exec sh bench/results/2026-12-04-s52/next/run.sh
