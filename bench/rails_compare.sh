#!/usr/bin/env bash
# One rail against two over the ibverbs transport (issue 39): HOSTS emulated hosts x 2 ranks, 2 rails per host
# (testbed/emulated_cluster.sh), one emulated RoCE NIC per rail (testbed/roce), each rail's link shaped to
# RAIL_RATE. The hierarchical all-reduce runs a ring per local rank across the hosts:
#   one rail:  EMU_ROCE_NETDEVS=rail0       - both local ranks' rings share rail 0's NIC and link;
#   two rails: EMU_ROCE_NETDEVS=rail0,rail1 - local rank l takes the host's l-th NIC (its own rail).
# Alternating within each repeat; busbw medians, the bytes each rail of host 0 sent, and the ratio (target:
# two rails >= 1.9x one rail). RAIL_RATE stays low: the emulated NICs and shapers share this machine's cores,
# and the links, not the cores, must be what runs out. SIZE is large: between a ring's steps its link idles for
# about a round trip (the queue its windows fill), which one rail shared by two rings hides and a rail per ring
# shows (64M: two rails at 0.87-0.89 of their bound, one at 0.94; 128M: 0.90 and 0.91).
#   bench/rails_compare.sh [BUILD_DIR]   (root; env: HOSTS=4 RAIL_RATE=100mbit SIZE=128M REPEATS=3 ITERS=2; ~18 min)
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

n=$((HOSTS * 2))
factor=$(awk -v n="$n" 'BEGIN { print 2 * (n - 1) / n }')
rail_bytes=$(awk -v b="$(rate_bits "$RAIL_RATE")" 'BEGIN { print b / 8 }')
# A rail ring's all-reduce sends 2 (H-1)/H of its half of the data over its link; busbw counts 2 (n-1)/n of all.
bound() { awk -v r="$rail_bytes" -v rails="$1" -v h="$HOSTS" -v n="$n" 'BEGIN { printf "%.4f", rails * r * h / (h - 1) * (n - 1) / n / 1e9 }'; }
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, kernel $(uname -r)"
echo "# $HOSTS emulated hosts x 2 ranks, 2 rails per host at $RAIL_RATE each (veth, a bridge per rail, HTB), MTU $EMU_MTU," \
     "switch queues of ${EMU_QUEUE_BYTES:-16777216} bytes (lossless, as PFC keeps RoCE)"
echo "# ibverbs on the emulated RoCE device (UDP), MEGASCALE_ALGO=hier, all_reduce_perf -b $SIZE, $ITERS iterations"
echo "# link bound (busbw): one rail $(bound 1) GB/s, two rails $(bound 2) GB/s"

tx() { on_host 0 cat "/sys/class/net/rail$1/statistics/tx_bytes"; }
declare -A runs=([one]="" [two]="") sent=()
for ((k = 0; k < REPEATS; k++)); do
  for setup in one two; do
    netdevs=$([ "$setup" = one ] && echo rail0 || echo rail0,rail1)
    before0=$(tx 0) before1=$(tx 1)
    if ! LD_LIBRARY_PATH="$build/testbed/roce" EMU_ROCE_NETDEVS=$netdevs MEGASCALE_TRANSPORT=ibverbs MEGASCALE_ALGO=hier \
         ours 2 "$tmp/out" "$build/bench/all_reduce_perf" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 1 ||
       ! grep -q "Out of bounds values : 0 OK" "$tmp/out"; then
      echo "# $setup rail(s) failed:"
      tail -n 8 "$tmp/out" | sed 's/^/#   /'
      exit 1
    fi
    runs[$setup]+="$(busbw "$tmp/out" "$factor") "
    sent[$setup]="$(($(tx 0) - before0)) $(($(tx 1) - before1))"
  done
done

one=$(tr ' ' '\n' <<< "${runs[one]}" | grep . | median)
two=$(tr ' ' '\n' <<< "${runs[two]}" | grep . | median)
echo
echo "## all_reduce_perf $SIZE, $n ranks: busbw (GB/s), median of $REPEATS; bytes host 0 sent per rail (last run)"
printf '%-10s %10s %10s %14s %14s\n' setup busbw "of bound" "rail0 bytes" "rail1 bytes"
for setup in one two; do
  m=$([ "$setup" = one ] && echo "$one" || echo "$two")
  read -r r0 r1 <<< "${sent[$setup]}"
  printf '%-10s %10.4f %10s %14s %14s\n' "$setup rail$([ "$setup" = one ] || echo s)" "$m" \
    "$(ratio "$m" "$(bound "$([ "$setup" = one ] && echo 1 || echo 2)")")" "$r0" "$r1"
done
echo "# two rails / one rail: $(ratio "$two" "$one") (target >= 1.9: $(verdict "$(ratio "$two" "$one")" 1.9))"
