#!/usr/bin/env bash
# A *_perf tool asked for device buffers where there is no GPU fails and says what is missing. Skipped (77) on a
# machine with a GPU, where scripts/gpu-check.sh runs the tools on device buffers.
# usage: device_without_gpu.sh MEGASCALE_RUN PERF_TOOL
set -u
if compgen -G "/dev/nvidia[0-9]*" > /dev/null; then
  echo "SKIPPED: this machine has a GPU (scripts/gpu-check.sh runs the tools on device buffers there)"
  exit 77
fi
exec bash "$(dirname "$0")/expect_failure.sh" "--memory device needs a GPU: cuda: " "$1" -n 1 "$2" -b 8 -e 8 --memory device
