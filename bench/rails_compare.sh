#!/usr/bin/env bash
# One rail against two over the ibverbs transport (issue 39): HOSTS emulated hosts x 2 ranks, 2 rails per host
# (testbed/emulated_cluster.sh), one emulated RoCE NIC per rail (testbed/roce), each rail's link shaped to
# RAIL_RATE. The hierarchical all-reduce runs a ring per local rank across the hosts:
#   one rail:  EMU_ROCE_NETDEVS=rail0       - both local ranks' rings share rail 0's NIC and link;
#   two rails: EMU_ROCE_NETDEVS=rail0,rail1 - local rank l takes the host's l-th NIC (its own rail);
#   single:    one rank per host with one NIC (EMU_ROCE_NETDEVS=rail0): the ring all-reduce across the hosts;
#   striped:   one rank per host owning both NICs (EMU_ROCE_NETDEVS=rail0,rail1): the same ring, each
#              connection's queue pairs striped over both rails.
# Alternating within each repeat; busbw medians, the bytes each rail of host 0 sent, and the ratios to one rail
# (target: two rails >= 1.9x one rail; striped against single: what striping one rank's connections gains). RAIL_RATE stays low: the emulated NICs and shapers share this machine's cores,
# and the links, not the cores, must be what runs out. SIZE is large: between a ring's steps its link idles for
# about a round trip (the queue its windows fill), which one rail shared by two rings hides and a rail per ring
# shows (64M: two rails at 0.87-0.89 of their bound, one at 0.94; 128M: 0.90 and 0.91).
#   bench/rails_compare.sh [BUILD_DIR]   (root; env: HOSTS=4 RAIL_RATE=100mbit SIZE=128M REPEATS=3 ITERS=2; ~32 min)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
HOSTS=${HOSTS:-4} RAIL_RATE=${RAIL_RATE:-100mbit} SIZE=${SIZE:-128M} REPEATS=${REPEATS:-3} ITERS=${ITERS:-2}
source testbed/emulated_cluster.sh
source bench/cluster_runs.sh
bench_start rails_compare roce
export MEGASCALE_TIMEOUT_MS=180000
cluster_up "$HOSTS" 2
# RoCE fabrics run lossless (PFC): switch queues deep enough for every queue pair's window stand in for it, so
# two rings sharing one rail queue rather than drop (the emulated NIC recovers a loss by go-back-N, as RC does,
# which would charge one rail for losses a lossless fabric never has).
EMU_QUEUE_BYTES=${EMU_QUEUE_BYTES:-16777216} hosts_rate "$RAIL_RATE"
start_store

rail_bytes=$(awk -v b="$(rate_bits "$RAIL_RATE")" 'BEGIN { print b / 8 }')
# Each setup: EMU_ROCE_NETDEVS, ranks per host, MEGASCALE_ALGO, the rails its traffic may use.
declare -A netdevs=([one]=rail0 [two]=rail0,rail1 [single]=rail0 [striped]=rail0,rail1) \
  per_host=([one]=2 [two]=2 [single]=1 [striped]=1) algo=([one]=hier [two]=hier [single]=ring [striped]=ring) \
  rails=([one]=1 [two]=2 [single]=1 [striped]=2)
setups=(one two single striped)
ranks() { echo $((HOSTS * per_host[$1])); }
# A ring across the hosts sends 2 (H-1)/H of its share of the data over its rails; busbw counts 2 (n-1)/n of all.
bound() {
  awk -v r="$rail_bytes" -v rails="${rails[$1]}" -v h="$HOSTS" -v n="$(ranks "$1")" \
    'BEGIN { printf "%.4f", rails * r * h / (h - 1) * (n - 1) / n / 1e9 }'
}
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, kernel $(uname -r)"
echo "# $HOSTS emulated hosts x 2 ranks, 2 rails per host at $RAIL_RATE each (veth, a bridge per rail, HTB), MTU $EMU_MTU," \
     "switch queues of ${EMU_QUEUE_BYTES:-16777216} bytes (lossless, as PFC keeps RoCE)"
echo "# ibverbs on the emulated RoCE device (UDP), all_reduce_perf -b $SIZE, $ITERS iterations; one, two rails:" \
     "2 ranks per host, MEGASCALE_ALGO=hier; single, striped: 1 rank per host with one NIC, with both, ring"
echo "# link bound (busbw): one rail $(bound one) GB/s, two rails $(bound two) GB/s, single $(bound single) GB/s," \
     "striped $(bound striped) GB/s"

tx() { on_host 0 cat "/sys/class/net/rail$1/statistics/tx_bytes"; }
declare -A runs=() sent=() median_of=()
for ((k = 0; k < REPEATS; k++)); do
  for setup in "${setups[@]}"; do
    before0=$(tx 0) before1=$(tx 1)
    if ! LD_LIBRARY_PATH="$build/testbed/roce" EMU_ROCE_NETDEVS=${netdevs[$setup]} MEGASCALE_TRANSPORT=ibverbs \
         MEGASCALE_ALGO=${algo[$setup]} ours "${per_host[$setup]}" "$tmp/out" \
         "$build/bench/all_reduce_perf" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 1 ||
       ! grep -q "Out of bounds values : 0 OK" "$tmp/out"; then
      echo "# $setup failed:"
      tail -n 8 "$tmp/out" | sed 's/^/#   /'
      exit 1
    fi
    n=$(ranks "$setup")
    runs[$setup]+="$(busbw "$tmp/out" "$(awk -v n="$n" 'BEGIN { print 2 * (n - 1) / n }')") "
    sent[$setup]="$(($(tx 0) - before0)) $(($(tx 1) - before1))"
  done
done

echo
echo "## all_reduce_perf $SIZE: busbw (GB/s), median of $REPEATS; bytes host 0 sent per rail (last run)"
printf '%-10s %6s %10s %10s %14s %14s\n' setup ranks busbw "of bound" "rail0 bytes" "rail1 bytes"
for setup in "${setups[@]}"; do
  median_of[$setup]=$(tr ' ' '\n' <<< "${runs[$setup]}" | grep . | median)
  read -r r0 r1 <<< "${sent[$setup]}"
  printf '%-10s %6s %10.4f %10s %14s %14s\n' "$setup" "$(ranks "$setup")" "${median_of[$setup]}" \
    "$(ratio "${median_of[$setup]}" "$(bound "$setup")")" "$r0" "$r1"
done
two_ratio=$(ratio "${median_of[two]}" "${median_of[one]}")
echo "# two rails / one rail: $two_ratio (target >= 1.9: $(verdict "$two_ratio" 1.9))"
echo "# striped (one rank, two NICs) / single (one rank, one NIC): $(ratio "${median_of[striped]}" "${median_of[single]}")"
