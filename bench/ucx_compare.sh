#!/usr/bin/env bash
# Our ucx transport against UCX's own ucx_perftest (Debian ucx-utils), in one run, on the same UCX transports
# (issue 18): tag bandwidth at 64 MiB (target >= 90% of ucx_perftest's) and 8 B tag latency (target <= 1.2x).
# Ours: sendrecv_perf --net-plugin between 2 processes (its "transport" columns are the bare ucx transport, its
# "plugin" columns the NCCL net plugin over it); latency is one-way (half a ping-pong) in both tools.
# Both pin their two processes to CPUs 0 and 1: left to the scheduler, latency here jumps between 0.2 and 0.6 us
# from run to run for either tool.
#   UCX_TLS_LIST="shm,self tcp" bench/ucx_compare.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tls_list=${UCX_TLS_LIST:-"shm,self tcp"}
command -v ucx_perftest >/dev/null || { echo "ucx_compare: ucx_perftest is missing (apt install ucx-utils)" >&2; exit 1; }
[ -x "$build/bench/sendrecv_perf" ] || { echo "ucx_compare: build $build first" >&2; exit 1; }

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, kernel $(uname -r)"
echo "# UCX $(ucx_info -v | awk '/Version/ {print $3}'); ucx_perftest on 127.0.0.1; ours: MEGASCALE_TRANSPORT=ucx sendrecv_perf"

port=$((20000 + RANDOM % 20000))
# perftest TEST SIZE ITERS: prints "latency_us bandwidth_GBps" from ucx_perftest's Final line (MB there is 2^20 B).
perftest() {
  port=$((port + 1))
  timeout 120 taskset -c 0 ucx_perftest -p "$port" >/dev/null 2>&1 &
  local server=$!
  local line=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.3
    line=$(timeout 120 taskset -c 1 ucx_perftest 127.0.0.1 -p "$port" -t "$1" -s "$2" -n "$3" 2>/dev/null | grep '^Final:' || true)
    [ -n "$line" ] && break
  done
  wait "$server" 2>/dev/null || true
  [ -n "$line" ] || { echo "ucx_compare: ucx_perftest $1 gave no result" >&2; exit 1; }
  echo "$line" | awk '{printf "%.3f %.3f\n", $4, $7 * 1048576 / 1e9}'
}

printf '# %-9s %14s %14s %8s %14s %14s %8s %12s\n' "UCX_TLS" "perftest lat" "ours lat" "ratio" \
  "perftest bw" "ours bw" "ratio" "plugin bw"
printf '# %-9s %14s %14s %8s %14s %14s %8s %12s\n' "" "8 B (us)" "8 B (us)" "<=1.2" "64 MiB (GB/s)" \
  "64 MiB (GB/s)" ">=0.90" "(GB/s)"
# ours SIZE: "latency_us bandwidth_GBps plugin_bandwidth_GBps" at SIZE from one sendrecv_perf run.
ours() {
  local out
  # shellcheck disable=SC2016 # $MEGASCALE_RANK is each rank's, expanded by its own shell
  out=$(MEGASCALE_TRANSPORT=ucx timeout 600 "$build/launcher/megascale-run" -n 2 \
        sh -c 'exec taskset -c "$MEGASCALE_RANK" "$0" "$@"' "$build/bench/sendrecv_perf" \
        --net-plugin "$build/nccl_plugin/libnccl-net-megascale.so" -b "$1" -e "$1" -n 40 2>&1) ||
    { echo "$out" >&2; exit 1; }
  echo "$out" | grep -q "Out of bounds values : 0 OK" || { echo "$out" >&2; exit 1; }
  echo "$out" | awk -v s="$1" '$2 == s {print $3, $4, $6}'
}
min() { awk -v a="$1" -v b="$2" 'BEGIN {print (b == "" || a < b) ? a : b}'; }
max() { awk -v a="$1" -v b="$2" 'BEGIN {print (b == "" || a > b) ? a : b}'; }

median() { tr ' ' '\n' | sort -g | awk 'NF {v[n++] = $1} END {print v[int(n / 2)]}'; }

verdict=0
for tls in $tls_list; do
  export UCX_TLS=$tls
  ucx_lat="" ucx_bw="" ours_lat="" ours_bw="" plugin_bw="" lat_ratios="" bw_ratios=""
  # Paired tries: this VM drifts between fast and slow states for minutes (ucx_perftest's own 8 B shared-memory
  # latency moves between 0.15 and 0.65 us, its 64 MiB bandwidth between 4.5 and 7.5 GB/s), so each try runs
  # both tools back to back and the verdict is the median of the 5 tries' own ratios. A try of ours is one
  # sendrecv_perf run (the best of its 5 rounds); a try of ucx_perftest the best of 3 runs.
  for _ in 1 2 3 4 5; do
    try_ucx_lat="" try_ucx_bw=""
    for _ in 1 2 3; do
      read -r lat _ < <(perftest tag_lat 8 50000)
      try_ucx_lat=$(min "$lat" "$try_ucx_lat")
      read -r _ bw < <(perftest tag_bw 67108864 40)
      try_ucx_bw=$(max "$bw" "$try_ucx_bw")
    done
    read -r try_ours_lat _ _ < <(ours 8)
    read -r _ try_ours_bw pbw < <(ours 67108864)
    lat_ratios+=" $(awk -v a="$try_ours_lat" -v b="$try_ucx_lat" 'BEGIN {print a / b}')"
    bw_ratios+=" $(awk -v a="$try_ours_bw" -v b="$try_ucx_bw" 'BEGIN {print a / b}')"
    ucx_lat=$(min "$try_ucx_lat" "$ucx_lat")
    ucx_bw=$(max "$try_ucx_bw" "$ucx_bw")
    ours_lat=$(min "$try_ours_lat" "$ours_lat")
    ours_bw=$(max "$try_ours_bw" "$ours_bw")
    plugin_bw=$(max "$pbw" "$plugin_bw")
  done
  lat_ratio=$(echo "$lat_ratios" | median | awk '{printf "%.2f", $1}')
  bw_ratio=$(echo "$bw_ratios" | median | awk '{printf "%.2f", $1}')
  printf '  %-9s %14s %14s %8s %14s %14s %8s %12s\n' "$tls" "$ucx_lat" "$ours_lat" "$lat_ratio" "$ucx_bw" \
    "$ours_bw" "$bw_ratio" "$plugin_bw"
  awk -v l="$lat_ratio" -v b="$bw_ratio" 'BEGIN {exit !(l <= 1.2 && b >= 0.90)}' || verdict=1
done
echo "# figures: the best of all tries; ratios: the median of the tries' own ratios (ours / ucx_perftest)"
if [ "$verdict" -eq 0 ]; then echo "# targets: met"; else echo "# targets: NOT met"; fi
