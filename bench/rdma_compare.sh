#!/usr/bin/env bash
# The RDMA transports next to tcp between two emulated hosts on the same link (testbed/emulated_cluster.sh), in
# one run: all_reduce_perf and sendrecv_perf over MEGASCALE_TRANSPORT=tcp, ucx (UCX_TLS=tcp: UCX's own tcp on the
# same veth) and ib (the emulated RoCE device of testbed/roce on each host's rail0), alternating transports
# within each repeat; time and busbw per size, medians of REPEATS, busbw ratios to tcp. The emulated device is
# a user-space NIC sharing this machine's cores: its speed is no target; that every transport moves correct data
# across the hosts is (a wrong element fails the run).
#   bench/rdma_compare.sh [BUILD_DIR]   (root; env: RATE=1gbit MIN=8 MAX=16M FACTOR=8 REPEATS=3 ITERS=5
#                                        TRANSPORTS="tcp ucx ib" TOOLS="all_reduce sendrecv")
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
RATE=${RATE:-1gbit} MIN=${MIN:-8} MAX=${MAX:-16M} FACTOR=${FACTOR:-8} REPEATS=${REPEATS:-3} ITERS=${ITERS:-5}
TRANSPORTS=${TRANSPORTS:-"tcp ucx ib"} TOOLS=${TOOLS:-"all_reduce sendrecv"}
source testbed/emulated_cluster.sh
source bench/cluster_runs.sh
bench_start rdma_compare roce
export MEGASCALE_TIMEOUT_MS=120000
cluster_up 2 1
hosts_rate "$RATE"
start_store

echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, kernel $(uname -r)"
echo "# 2 emulated hosts x 1 rank, one link at $RATE (network namespaces, veth, a bridge, HTB), MTU $EMU_MTU"
echo "# ucx: UCX $(ucx_info -v 2>/dev/null | sed -n 's/^# *Version *//p' | head -1), UCX_TLS=tcp;" \
     "ib: emulated RoCE (testbed/roce, UDP over rail0), MEGASCALE_IB_QPS_PER_CONNECTION=${MEGASCALE_IB_QPS_PER_CONNECTION:-2}"

# run TRANSPORT TOOL OUTPUT: one sweep between the hosts over TRANSPORT.
run() {
  local transport=$1 tool=$2 output=$3
  case $transport in
    tcp) MEGASCALE_TRANSPORT=tcp ours 1 "$output" "$build/bench/${tool}_perf" -b "$MIN" -e "$MAX" -f "$FACTOR" -n "$ITERS" -w 1 ;;
    ucx) MEGASCALE_TRANSPORT=ucx UCX_TLS=tcp UCX_NET_DEVICES=rail0 \
           ours 1 "$output" "$build/bench/${tool}_perf" -b "$MIN" -e "$MAX" -f "$FACTOR" -n "$ITERS" -w 1 ;;
    ib) MEGASCALE_TRANSPORT=ib LD_LIBRARY_PATH="$build/testbed/roce" EMU_ROCE_NETDEVS=rail0 \
          ours 1 "$output" "$build/bench/${tool}_perf" -b "$MIN" -e "$MAX" -f "$FACTOR" -n "$ITERS" -w 1 ;;
  esac
}

declare -A times  # [tool,transport,size] = the times of the repeats (us, out of place)
for ((k = 0; k < REPEATS; k++)); do
  for tool in $TOOLS; do
    for transport in $TRANSPORTS; do
      if ! run "$transport" "$tool" "$tmp/out" || ! grep -q "Out of bounds values : 0 OK" "$tmp/out"; then
        echo "# $tool over $transport failed:"
        tail -n 8 "$tmp/out" | sed 's/^/#   /'
        exit 1
      fi
      while read -r size time; do
        times[$tool,$transport,$size]+="$time "
      done < <(sed 's/^\[[0-9]*\] //' "$tmp/out" | awk '$1 ~ /^[0-9]+$/ && NF >= 9 {print $1, $6}')
    done
  done
done

for tool in $TOOLS; do
  echo
  echo "## ${tool}_perf, 2 ranks on 2 hosts: time (us) and busbw (GB/s), median of $REPEATS; ratios are busbw / tcp's"
  header=$(printf '%10s' size)
  for transport in $TRANSPORTS; do header+=$(printf ' %11s %9s' "$transport us" "GB/s"); done
  for transport in $TRANSPORTS; do [ "$transport" = tcp ] || header+=$(printf ' %8s' "$transport/tcp"); done
  echo "$header"
  for size in $(printf '%s\n' "${!times[@]}" | awk -F, -v t="$tool" '$1 == t {print $3}' | sort -un); do
    line=$(printf '%10s' "$size")
    declare -A bw=()
    for transport in $TRANSPORTS; do
      t=$(tr ' ' '\n' <<< "${times[$tool,$transport,$size]:-}" | grep . | median)
      bw[$transport]=$(awk -v s="$size" -v t="$t" 'BEGIN { printf "%.6g", (t > 0 ? s / t / 1e3 : 0) }')
      line+=$(printf ' %11.1f %9.4f' "$t" "${bw[$transport]}")
    done
    for transport in $TRANSPORTS; do [ "$transport" = tcp ] || line+=$(printf ' %8s' "$(ratio "${bw[$transport]}" "${bw[tcp]:-0}")"); done
    echo "$line"
  done
done
