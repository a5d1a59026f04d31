#!/usr/bin/env bash
# Runs an NCCL all-reduce over this machine's GPUs through libnccl-net-megascale.so and checks that NCCL really
# used our plugin for the traffic between ranks. Needs 2+ GPUs and the CUDA toolkit with NCCL; not part of CI.
#   scripts/nccl_plugin_allreduce.sh [build-dir] [-b min] [-e max] [-n iters]
# P2P and SHM are disabled so that every byte between GPUs goes through the network plugin.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
plugin=$build/nccl_plugin/libnccl-net-megascale.so
program=$build/examples/nccl_plugin_allreduce
if [ ! -x "$program" ] || [ ! -f "$plugin" ]; then
  echo "building $program and $plugin"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target nccl_plugin_allreduce nccl-net-megascale
fi
[ -x "$program" ] || { echo "nccl_plugin_allreduce was not built: needs the CUDA toolkit and NCCL (/usr/local/cuda)" >&2; exit 2; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
env NCCL_NET_PLUGIN="$plugin" NCCL_NET=megascale NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" \
    "$program" "$@" >"$log" 2>&1 || status=$?
grep -v "NCCL INFO" "$log" || true
if ! grep -q "NET/megascale: transport" "$log"; then
  echo "FAILED: NCCL did not initialize the megascale plugin; its log says:" >&2
  grep -E "NET/Plugin|NCCL WARN|Using network" "$log" >&2 || tail -20 "$log" >&2
  exit 1
fi
grep -E "Using network|NET/megascale: device" "$log" | head -4
[ $status -eq 0 ] && echo "nccl_plugin_allreduce: all-reduce through libnccl-net-megascale.so: OK"
exit $status
