#!/usr/bin/env bash
# The udp transport on the test bed (issue 40): emulated hosts around the ECN-marking switch
# (testbed/ecn_switch, every port at RATE, RED marking K_min/K_max as the switch defaults, a BUFFER-byte queue),
# bulk flows of megascale-flow-bench with every byte checked. For each control law:
#   single   one flow, host 1 -> host 0: goodput against the link (target >= 90%);
#   incast   4-to-1, hosts 1..4 -> host 0: total goodput, Jain fairness over 1 s windows (target >= 0.95 for swift
#            and hybrid), the queue's peak and 99th percentile at host 0's port (recorded every ms; bounded);
# and with the default law, one flow under random loss on the sender's link (nftables): 1% (target >= 90% of
# the link) and 5% (correct data). Goodput counts message bytes; the link's rate counts Ethernet frames with
# their overhead (IP/UDP/our header, preamble, gap): at 9000-byte frames a link carries at most ~96.6% of its
# rate as goodput. The transport is told the link's rate (MEGASCALE_UDP_LINE_MBPS), as a NIC reports its own;
# a veth reports 10 Gbit/s whatever the switch does. RATE stays low enough that the links, not this machine's
# cores, run out: every frame crosses the kernel twice more through the switch's packet sockets, and at 1 Gbit/s
# on 2 cores the hosts' scheduling jitter (RTT spikes) moved single-flow swift between 83% and 95% run to run.
#   bench/udp_testbed.sh [BUILD_DIR]   (root; ~2 min; env: RATE=500mbit SECONDS_PER_RUN=6 BUFFER=1MB LAWS="swift hybrid dcqcn none")
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
RATE=${RATE:-500mbit} SECONDS_PER_RUN=${SECONDS_PER_RUN:-6} BUFFER=${BUFFER:-1MB} LAWS=${LAWS:-swift hybrid dcqcn none}
[ "$(id -u)" = 0 ] || { echo "SKIPPED: the emulated hosts need root"; exit 77; }
source testbed/emulated_cluster.sh
EMU_SWITCH_BIN=$build/testbed/ecn_switch/megascale-ecn-switch
flow_bench=$build/testbed/flow_bench/megascale-flow-bench
tmp=$(mktemp -d)
trap 'cluster_down; rm -rf "$tmp"' EXIT
rate_mbps=$(($(rate_bits "$RATE") / 1000000))
export MEGASCALE_TRANSPORT=udp MEGASCALE_UDP_LINE_MBPS=$rate_mbps

echo "# udp on the test bed: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(uname -r)"
echo "# switch: every port $RATE, buffer $BUFFER, RED K_min/K_max at its defaults; ${SECONDS_PER_RUN}s per run; $(date -u +%F)"
cluster_up 5
switch_up 0 "$RATE" --buffer "$BUFFER" --queue-log "$tmp/queue.csv" --sample-us 1000

# flows LAW SENDERS...: each sender host streams to host 0; prints the receiver's lines and the queue at host
# 0's port during the run ("queue peak P p99 Q" in bytes).
flows() {
  local law=$1 i pids=() from handle
  shift
  handle=$(mktemp -u "$tmp/handle.XXXXXX")  # flows runs in a subshell: a counter would not advance
  from=$(wc -l < "$tmp/queue.csv")
  on_host 0 env MEGASCALE_UDP_CC="$law" timeout 120 "$flow_bench" receive --bind "$(host_addr 0)" \
    --handle "$handle" --flows $# --timeout-s 100 > "$tmp/receiver" &
  local receiver=$!
  for i in "$@"; do
    on_host "$i" env MEGASCALE_UDP_CC="$law" timeout 120 "$flow_bench" send --bind "$(host_addr "$i")" \
      --handle "$handle" --flow "$i" --seconds "$SECONDS_PER_RUN" --timeout-s 100 > /dev/null &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || { echo "a sender failed ($law)" >&2; return 1; }; done
  wait "$receiver" || { echo "the receiver failed ($law)" >&2; return 1; }
  cat "$tmp/receiver"
  tail -n +"$((from + 1))" "$tmp/queue.csv" | awk -F, -v port="$(switch_port 0 0)" '$2 == port { print $4 }' | sort -n |
    awk '{ v[NR] = $1 } END { k = int(NR * 0.99); if (k < 1) k = 1; printf "queue peak %d p99 %d\n", v[NR], v[k] }'
}
field() { awk -v k="$1" -v line="$2" 'BEGIN { n = split(line, f, " "); for (i = 1; i < n; i++) if (f[i] == k) { print f[i + 1]; exit } }'; }
percent() { awk -v g="$1" -v r="$rate_mbps" 'BEGIN { printf "%.1f", g * 100 / r }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v >= t ? "PASS" : "FAIL") }'; }

printf "\n%-8s %-8s %12s %9s %10s %10s %12s %12s\n" scenario law "goodput Mb/s" "of link" "Jain min" "Jain mean" "queue peak" "queue p99"
for law in $LAWS; do
  out=$(flows "$law" 1)
  total=$(grep '^total' <<< "$out") queue=$(grep '^queue' <<< "$out")
  g=$(field goodput_mbit "$total")
  printf "%-8s %-8s %12s %8s%% %10s %10s %12s %12s  %s\n" single "$law" "$g" "$(percent "$g")" - - \
    "$(field peak "$queue")" "$(field p99 "$queue")" "$(verdict "$(percent "$g")" 90)"
done
for law in $LAWS; do
  out=$(flows "$law" 1 2 3 4)
  total=$(grep '^total' <<< "$out") jain=$(grep '^jain' <<< "$out") queue=$(grep '^queue' <<< "$out")
  g=$(field goodput_mbit "$total")
  target=$([[ $law == swift || $law == hybrid ]] && verdict "$(field min "$jain")" 0.95 || echo "-")
  printf "%-8s %-8s %12s %8s%% %10s %10s %12s %12s  %s\n" incast "$law" "$g" "$(percent "$g")" "$(field min "$jain")" \
    "$(field mean "$jain")" "$(field peak "$queue")" "$(field p99 "$queue")" "$target"
done
for loss in 1 5; do
  link_loss 1 0 "$loss"
  out=$(flows "${MEGASCALE_UDP_CC:-swift}" 1)
  link_loss 1 0 0
  total=$(grep '^total' <<< "$out")
  g=$(field goodput_mbit "$total")
  target=$( ((loss == 1)) && verdict "$(percent "$g")" 90 || echo "data ok")
  printf "%-8s %-8s %12s %8s%% %10s %10s %12s %12s  %s\n" "loss $loss%" "${MEGASCALE_UDP_CC:-swift}" "$g" "$(percent "$g")" - - - - "$target"
done
switch_down 0
echo
echo "# switch: $(grep "$(switch_port 0 0) " "$EMU_SWITCH_OUT.0")"
