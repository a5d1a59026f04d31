#!/usr/bin/env bash
# Collectives across emulated hosts (testbed/emulated_cluster.sh), in one run, alternating, medians, ratios:
#  1. point to point between two hosts: megascale's TCP transport (sendrecv_perf, both directions at once)
#     against iperf3 --bidir on the same link, at each rate of RATES; target >= 90% of iperf3;
#  2. HOSTS hosts x 2 ranks, 2 rails per host at RAIL_RATE: SIZE all-reduce and all-gather busbw of our
#     hierarchical algorithm, our flat ring (same transports), Gloo (ring) and Open MPI (tcp on both rails,
#     shared memory inside a host), with the bound the links allow; targets: hierarchical >= 1.8x our flat
#     ring, >= 90% of the bound, ahead of Gloo and Open MPI.
# RAIL_RATE is 250 Mbit/s: the emulated hosts share this machine's cores, and at 500 Mbit/s x 2 rails x 4 hosts
# (16 shaped TCP flows through veth, bridges and HTB, plus 8 ranks) two cores run out first (hierarchical at
# 89-92% of the link bound there, 95-97% at 250 Mbit/s), so the bound would measure the CPU, not the links.
#   bench/multihost_compare.sh [BUILD_DIR]   (root; env: RATES="2gbit 10gbit" HOSTS=4 RAIL_RATE=250mbit SIZE=64M
#                                              REPEATS=3 ITERS=5 TOOLS="hier ring gloo mpi" PARTS="1 2")
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
RATES=${RATES:-"2gbit 10gbit"} HOSTS=${HOSTS:-4} RAIL_RATE=${RAIL_RATE:-250mbit} SIZE=${SIZE:-64M}
REPEATS=${REPEATS:-3} ITERS=${ITERS:-5} TOOLS=${TOOLS:-"hier ring gloo mpi"} PARTS=${PARTS:-"1 2"}
[ "$(id -u)" = 0 ] || { echo "SKIPPED: multihost_compare: the emulated cluster needs root"; exit 77; }
for tool in iperf3 mpirun; do command -v "$tool" > /dev/null || { echo "multihost_compare: $tool is missing (scripts/setup.sh)"; exit 2; }; done
source testbed/emulated_cluster.sh
source bench/cluster_runs.sh
export MEGASCALE_JOB_SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n') MEGASCALE_TIMEOUT_MS=120000

echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, kernel $(uname -r)"
echo "# emulated hosts: network namespaces, a veth per rail, a bridge per rail, HTB at the link rate, MTU $EMU_MTU"

# gloo OUTPUT COLLECTIVE: Gloo's ring over the hosts' rail-0 addresses, ranks meeting through a FileStore.
gloo() {
  local output=$1 collective=$2 i pids=() per_host=2
  run_id=$((run_id + 1))
  for ((i = 0; i < EMU_HOSTS; i++)); do
    MEGASCALE_TCP_IFADDR=$(host_addr "$i") on_host "$i" "$build/launcher/megascale-run" \
      --store "tcp://$(host_addr 0):$store_port" --job-id "gl$run_id" --world-size $((EMU_HOSTS * per_host)) \
      --rank-offset $((i * per_host)) -n "$per_host" "$build/bench/gloo_perf" "$collective" -b "$SIZE" -e "$SIZE" \
      -n "$ITERS" -w 1 > "$([ "$i" = 0 ] && echo "$output" || echo /dev/null)" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
}

# mpi OUTPUT COLLECTIVE: Open MPI launched into the hosts by an rsh agent; tcp over both rails between hosts,
# shared memory inside one. Its runtime reaches the hosts through an address of the root namespace on rail 0.
mpi() {
  local output=$1 collective=$2 hostlist="" i
  for ((i = 0; i < EMU_HOSTS; i++)); do hostlist+="${hostlist:+,}$(host_name "$i"):2"; done
  timeout 600 mpirun --allow-run-as-root -np $((EMU_HOSTS * 2)) --host "$hostlist" \
    --mca plm_rsh_agent "$PWD/bench/baselines/netns_rsh.sh" --mca oob_tcp_if_include 10.214.0.0/24 \
    --mca btl self,vader,tcp --mca btl_tcp_if_include 10.214.0.0/24,10.215.0.0/24 --bind-to none \
    "$build/bench/mpi_perf" "$collective" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 1 > "$output" 2>&1
}

tmp=$(mktemp -d)
trap 'kill $store_pid 2>/dev/null; rm -rf "$tmp"; cluster_down' EXIT

if [[ " $PARTS " == *" 1 "* ]]; then
echo
echo "## 1. point to point, 2 hosts, both directions at once (Gbit/s per direction, median of $REPEATS)"
cluster_up 2 1
start_store
printf '%-8s %12s %12s %8s %s\n' rate megascale iperf3 ratio "target >= 0.90"
for rate in $RATES; do
  hosts_rate "$rate"
  ours_runs=() iperf_runs=()
  for ((k = 0; k < REPEATS; k++)); do
    ours 1 "$tmp/p2p" "$build/bench/sendrecv_perf" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 2
    ours_runs+=("$(awk -v g="$(busbw "$tmp/p2p" 1)" 'BEGIN { print g * 8 }')")
    ip netns exec "$(host_name 1)" iperf3 -s -1 -B "$(host_addr 1)" > /dev/null &
    sleep 0.3
    on_host 0 iperf3 -c "$(host_addr 1)" -t 4 --bidir -J > "$tmp/iperf.json"
    wait $!
    iperf_runs+=("$(/usr/bin/python3 -c "
import json; e = json.load(open('$tmp/iperf.json'))['end']
print((e['sum_received']['bits_per_second'] + e['sum_received_bidir_reverse']['bits_per_second']) / 2e9)")")
  done
  o=$(printf '%s\n' "${ours_runs[@]}" | median) p=$(printf '%s\n' "${iperf_runs[@]}" | median)
  printf '%-8s %12.3f %12.3f %8s %s\n' "$rate" "$o" "$p" "$(ratio "$o" "$p")" "$(verdict "$(ratio "$o" "$p")" 0.90)"
done
kill "$store_pid" 2>/dev/null || true
cluster_down
fi

[[ " $PARTS " == *" 2 "* ]] || exit 0
echo
echo "## 2. $HOSTS hosts x 2 ranks, 2 rails per host at $RAIL_RATE, $SIZE, busbw in GB/s (median of $REPEATS)"
cluster_up "$HOSTS" 2
hosts_rate "$RAIL_RATE"
ip addr add 10.214.0.254/24 dev "$(rail_switch 0)"  # where Open MPI's daemons reach mpirun
start_store
rail_bytes=$(awk -v b="$(rate_bits "$RAIL_RATE")" 'BEGIN { print b / 8 }')
n=$((HOSTS * 2))
# Each host sends over 2 rails; a host's share of the reduced or gathered data crosses (H-1)/H of the ring.
bound=$(awk -v r="$rail_bytes" -v h="$HOSTS" -v n="$n" 'BEGIN { printf "%.4f", 2 * r * h / (h - 1) * (n - 1) / n / 1e9 }')
flat_bound=$(awk -v r="$rail_bytes" 'BEGIN { printf "%.4f", r / 1e9 }')
echo "# link bound: hierarchical (both rails) $bound GB/s busbw; a flat ring crosses each host on one link: $flat_bound GB/s"
printf '%-12s %10s %10s %10s %10s %10s %10s %10s\n' collective hier ring gloo openmpi "hier/ring" "hier/bound" "hier/best-other"
for collective in all_reduce all_gather; do
  factor=$(awk -v n="$n" -v c="$collective" 'BEGIN { print (c == "all_reduce" ? 2 : 1) * (n - 1) / n }')
  declare -A runs=([hier]="" [ring]="" [gloo]="" [mpi]="")
  for ((k = 0; k < REPEATS; k++)); do
    for tool in $TOOLS; do
      case $tool in
        hier | ring) MEGASCALE_ALGO=$tool ours 2 "$tmp/out" "$build/bench/${collective}_perf" -b "$SIZE" -e "$SIZE" \
                       -n "$ITERS" -w 1 && status=0 || status=$? ;;
        gloo) gloo "$tmp/out" "$collective" && status=0 || status=$? ;;
        mpi) mpi "$tmp/out" "$collective" && status=0 || status=$? ;;
      esac
      if [ "$status" != 0 ]; then  # a failed baseline is reported, not fatal
        echo "# $tool $collective failed (exit $status):"
        tail -n 5 "$tmp/out" | sed 's/^/#   /'
        continue
      fi
      runs[$tool]+="$(busbw "$tmp/out" "$factor") "
    done
  done
  for tool in hier ring gloo mpi; do
    declare "m_$tool=$(tr ' ' '\n' <<< "${runs[$tool]}" | grep . | median || true)"
    [ -n "$(eval echo "\$m_$tool")" ] || declare "m_$tool=0"
  done
  best_other=$(printf '%s\n' "$m_gloo" "$m_mpi" | sort -g | tail -1)
  printf '%-12s %10.4f %10.4f %10.4f %10.4f %10s %10s %10s\n' "$collective" "$m_hier" "$m_ring" "$m_gloo" "$m_mpi" \
    "$(ratio "$m_hier" "$m_ring")" "$(ratio "$m_hier" "$bound")" "$(ratio "$m_hier" "$best_other")"
  echo "#   targets: hier/ring >= 1.8 $(verdict "$(ratio "$m_hier" "$m_ring")" 1.8), hier/bound >= 0.90" \
       "$(verdict "$(ratio "$m_hier" "$bound")" 0.90), ahead of Gloo and Open MPI $(verdict "$(ratio "$m_hier" "$best_other")" 1.0001)"
done
