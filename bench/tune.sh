#!/usr/bin/env bash
# Regenerates collectives/tuning_table.inc: times ring, pipelined ring, halving-doubling, direct and double-tree
# all-reduce (and hierarchical across hosts) for each shape, sizes 8 B..16 MiB, and keeps the fastest per range;
# rows of other shapes stay. Prints the ring's latency and rate fit, the cost model's figures for this cluster. Rebuild after.
#   bench/tune.sh [BUILD_DIR]   (env: RANKS="2 3 4 5 6 7 8" ranks per host, HOSTS=1, MAX=16M, ITERS=50,
#                                LAUNCH="srun -N 4 -n {n}": starts {n} ranks spread over HOSTS hosts)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/tune.py "${1:-build}" collectives/tuning_table.inc
