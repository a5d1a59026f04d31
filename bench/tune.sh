#!/usr/bin/env bash
# Regenerates collectives/tuning_table.inc: times ring, halving-doubling and direct all-reduce for 2..8 ranks
# and sizes 8 B..16 MiB on this machine and keeps the fastest per range. Rebuild afterwards.
#   bench/tune.sh [BUILD_DIR]   (env: RANKS="2 3 4 5 6 7 8" MAX=16M ITERS=50)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/tune.py "${1:-build}" collectives/tuning_table.inc
