#!/usr/bin/env bash
# All-reduce over the udp transport against tcp on the same emulated hosts (issue 40): HOSTS hosts x 1 rank
# around the ECN-marking switch (testbed/ecn_switch, every port RATE), SIZE per rank, all_reduce_perf's busbw
# (median of REPEATS, alternating), without loss and with LOSS% random loss on every host's link (nftables).
# The link bound is RATE's payload share; the ratios are udp / tcp.
#   bench/udp_allreduce.sh [BUILD_DIR]   (root; ~3 min; env: HOSTS=4 RATE=500mbit SIZE=64M LOSS=1 REPEATS=3 ITERS=2)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
HOSTS=${HOSTS:-4} RATE=${RATE:-500mbit} SIZE=${SIZE:-64M} LOSS=${LOSS:-1} REPEATS=${REPEATS:-3} ITERS=${ITERS:-2}
source testbed/emulated_cluster.sh
source bench/cluster_runs.sh
bench_start udp_allreduce
EMU_SWITCH_BIN=$build/testbed/ecn_switch/megascale-ecn-switch
rate_mbps=$(($(rate_bits "$RATE") / 1000000))
export MEGASCALE_TIMEOUT_MS=120000 MEGASCALE_UDP_LINE_MBPS=$rate_mbps
cluster_up "$HOSTS"
switch_up 0 "$RATE"
start_store
factor=$(awk -v n="$HOSTS" 'BEGIN { print 2 * (n - 1) / n }')
echo "# all-reduce over udp and tcp: $HOSTS hosts x 1 rank, $SIZE, switch ports at $RATE; $(nproc) cores, $(date -u +%F)"
echo "# link bound: $(awk -v m="$rate_mbps" 'BEGIN { printf "%.4f", m / 8 / 1000 }') GB/s busbw (line rate, headers included)"
printf "%-8s %12s %12s %9s\n" loss "udp GB/s" "tcp GB/s" "udp/tcp"
for loss in 0 "$LOSS"; do
  for ((i = 0; i < HOSTS; i++)); do link_loss "$i" 0 "$loss"; done
  declare -A runs=([udp]="" [tcp]="")
  for ((k = 0; k < REPEATS; k++)); do
    for transport in udp tcp; do
      MEGASCALE_TRANSPORT=$transport ours 1 "$tmp/out" "$build/bench/all_reduce_perf" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 1 ||
        { echo "# $transport failed at $loss% loss:"; failure_tails "$tmp/out"; continue; }
      runs[$transport]+="$(busbw "$tmp/out" "$factor") "
    done
  done
  u=$(tr ' ' '\n' <<< "${runs[udp]}" | grep . | median || echo 0)
  t=$(tr ' ' '\n' <<< "${runs[tcp]}" | grep . | median || echo 0)
  printf "%-8s %12.4f %12.4f %9s\n" "$loss%" "$u" "$t" "$(ratio "$u" "$t")"
done
switch_down 0
echo "# switch: $(grep "$(switch_port 0 0) " "$EMU_SWITCH_OUT.0")"
