#!/usr/bin/env bash
# The whole fault campaign in one run: on 8 local ranks under megascale-run's driver (bench/fault_campaign.py),
# then on 4 emulated hosts x 2 ranks with spares (bench/cluster_fault_campaign.py, needs root for the network
# namespaces): the memory checkpoint's cost, a table per fault kind, then ETTR against the torchrun-style
# baseline on each. Results go in docs/reliability.md. Usage: bench/fault_campaign.sh [BUILD_DIR] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
seed=${2:-$(date +%s)}
cmake --build "$build" --target megascale-run megascale-train megascale-selfcheck megascale-store >/dev/null
echo "# fault campaign, one run, seed $seed, $(date -u +%FT%TZ)"
/usr/bin/python3 bench/fault_campaign.py "$build" --seed "$seed" --cost-pairs 7
if [ "$(id -u)" -eq 0 ]; then
  /usr/bin/python3 bench/cluster_fault_campaign.py "$build" --seed "$seed"
else
  echo "# the emulated hosts need root (ip netns): run as root for the second half"
fi
echo "# done $(date -u +%FT%TZ)"
