#!/usr/bin/env bash
# What only a GPU shows, in one script of at most 5 minutes (run on a machine with an NVIDIA GPU, the project's
# build carried over or built here): the card, our CUDA kernels bit for bit against the host kernels, every
# collective x dtype on device buffers with 2 and 4 ranks on the GPU, and all_reduce_perf on device buffers
# (1 KiB - 1 GiB). Without a GPU it exits non-zero in one line. Its output goes in docs/performance.md with the
# card's name. Not yet here (issue 61 goes on): NCCL side by side on the same GPU and NCCL loading our plugin,
# the PyTorch backend on CUDA tensors.
#
#   scripts/gpu-check.sh [BUILD_DIR]    (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L fails); nothing to check" >&2
  exit 1
fi
started=$SECONDS
echo "== card"
nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv,noheader
nproc | sed 's/^/cpu cores: /'
if [ ! -x "$build/launcher/megascale-run" ] || [ ! -x "$build/tests/collectives/cuda_space_test" ]; then
  echo "== building ($build)"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
  timeout 240 cmake --build "$build" -j "$(nproc)" --target megascale-run collective_check cuda_space_test all_reduce_perf
fi
run=("$build/launcher/megascale-run")
status=0
step() {  # step NAME COMMAND...: runs it under a 60 s limit, says PASS or FAIL with its time
  local name=$1 t0=$SECONDS
  shift
  echo "== $name"
  if timeout 60 "$@"; then echo "PASS $name ($((SECONDS - t0)) s)"; else echo "FAIL $name ($((SECONDS - t0)) s)"; status=1; fi
}
step "kernels: every dtype x op on the GPU = the host kernels" "$build/tests/collectives/cuda_space_test"
for ranks in 2 4; do
  step "collectives: every collective x dtype x op on device buffers, $ranks ranks on the GPU" \
    env MEGASCALE_TRANSPORT=shm "${run[@]}" -n "$ranks" "$build/tests/collectives/collective_check" --memory device 0 1 1000 70001
done
step "all_reduce_perf on device buffers, 2 ranks, 1 KiB - 1 GiB (staged through pinned host memory)" \
  env MEGASCALE_TRANSPORT=shm "${run[@]}" -n 2 "$build/bench/all_reduce_perf" -b 1K -e 1G -f 4 -n 5 -c 1 --memory device
echo "gpu-check: $((SECONDS - started)) s, $([ $status -eq 0 ] && echo "all passed" || echo "FAILED")"
exit $status
