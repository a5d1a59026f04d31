#!/usr/bin/env bash
# Sets up, builds and runs the main job on the embedded defaults: a 4-rank local all-reduce benchmark
# (nccl-tests format, data checked) over shared memory and over TCP, then a short demo of the C API.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"

for transport in shm tcp; do
  echo "== all_reduce_perf, 4 ranks, MEGASCALE_TRANSPORT=$transport"
  MEGASCALE_TRANSPORT=$transport build/launcher/megascale-run -n 4 build/bench/all_reduce_perf -b 8 -e 64M -f 4 -c 1
done
echo "== demo"
build/launcher/megascale-run -n 4 build/examples/demo
