#!/usr/bin/env bash
# Ours against Open MPI (shared memory) and Gloo (TCP loopback), alternately in one run, for 2, 4 and 8 ranks,
# fp32 sum, out-of-place, sizes 8 B to 256 MiB; prints one side-by-side table with ratios, the machine's memcpy
# bandwidth measured in the same run, and the issue's targets as PASS/FAIL.
#   bench/compare.sh [BUILD_DIR]   (env: RANKS="2 4 8" REPEATS=3 MAX=256M ITERS=10)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/compare.py "${1:-build}"
