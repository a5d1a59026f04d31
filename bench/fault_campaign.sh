#!/usr/bin/env bash
# The fault campaign (bench/fault_campaign.py): faults injected into a training job on 8 local ranks under
# megascale-run's driver, a table per fault kind, then ETTR against the torchrun-style baseline. Results go in
# docs/reliability.md. Usage: bench/fault_campaign.sh [BUILD_DIR] [fault_campaign.py options]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
cmake --build "$build" --target megascale-run megascale-train megascale-selfcheck >/dev/null
exec /usr/bin/python3 bench/fault_campaign.py "$build" "$@"
