#!/usr/bin/env bash
# The emulated ECN-marking switch between namespaces (testbed/ecn_switch, switch_up): it forwards (ARP and UDP, to
# the right host only), holds its rate, marks ECN-capable traffic CE once its queue passes K_min, leaves the rest
# unmarked, drops at its buffer, records its queue and its own stalls; link_loss drops its share at random. Needs
# root (77: skip).
# usage: ecn_switch_test.sh SWITCH_BINARY
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIPPED: emulated hosts need root"; exit 77; }
command -v nft > /dev/null && command -v ethtool > /dev/null || { echo "SKIPPED: needs nft and ethtool (scripts/setup.sh)"; exit 77; }
source testbed/emulated_cluster.sh
EMU_SWITCH_BIN=$1
work=$(mktemp -d)
trap 'cluster_down; rm -rf "$work"' EXIT
cluster_up 3
switch_up 0 100mbit --buffer 300KB --queue-log "$work/queue.csv" --sample-us 5000
blast=tests/testbed/udp_blast.py
port=7100
fail() { echo "FAIL: $*"; cat "$EMU_SWITCH_OUT.0" 2>/dev/null; exit 1; }

# run MBIT SECONDS TOS: host 0 sends to host 1; prints the sender's line and the receiver's.
run() {
  on_host 1 timeout 30 python3 "$blast" recv "$(host_addr 1)" "$port" > "$work/recv" &
  local receiver=$!
  sleep 0.3
  on_host 0 timeout 30 python3 "$blast" send "$(host_addr 1)" "$port" "$@" > "$work/send"
  wait "$receiver"
  port=$((port + 1))
  echo "$(cat "$work/send") $(cat "$work/recv")"
}
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' <<< "$2"; }
between() { awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(v >= lo && v <= hi) }' || fail "$1 = $2, expected $3-$4"; echo "ok: $1 = $2"; }

# Under the rate: everything arrives, nothing marked (the queue never reaches K_min).
line=$(run 50 0.5 0x02)
between "datagrams lost at 50 of 100 Mbit/s" "$(($(field sent "$line") - $(field got "$line")))" 0 0
between "datagrams marked at 50 Mbit/s" "$(field ce "$line")" 0 0
# Over it: the rate is held, the standing queue marks ECN-capable traffic, the buffer drops the rest.
line=$(run 200 1 0x02)
between "goodput of 200 Mbit/s into a 100 Mbit/s port" "$(field mbit "$line")" 90 101
marked=$(field ce "$line") got=$(field got "$line")
between "share marked CE with the queue at its buffer" "$(awk -v m="$marked" -v g="$got" 'BEGIN { printf "%.2f", m / g }')" 0.9 1
line=$(run 200 0.5 0x00)
between "Not-ECT datagrams marked" "$(field ce "$line")" 0 0

# A stalled switch (SIGSTOP: a process descheduled): what came in meanwhile leaves when it runs again, nothing
# lost, and the port that had frames due counts the stall, about as long as it was (a busy machine deschedules
# the switch for a millisecond or two now and then: those count too).
stall_counts() { awk -F, '$2 ~ /p1r0/ { n = $8; us = $9 } END { print n + 0, us + 0 }' "$work/queue.csv"; }
read -r stalls_before stalled_before < <(stall_counts)
run 10 1.2 0x00 > "$work/stalled_run" &
sleep 0.8  # the receiver's start, then half a second of sending
kill -STOP "$EMU_SWITCH_PID_0"
sleep 0.05
kill -CONT "$EMU_SWITCH_PID_0"
wait $!
port=$((port + 1))
line=$(cat "$work/stalled_run")
between "datagrams lost across a 50 ms stall of the switch" "$(($(field sent "$line") - $(field got "$line")))" 0 0
sleep 0.02  # the next queue sample has the counts
read -r stalls_after stalled_after < <(stall_counts)
between "stalls counted" "$((stalls_after - stalls_before))" 1 100
between "their length in all (us)" "$((stalled_after - stalled_before))" 45000 200000

switch_down 0
summary=$(cat "$EMU_SWITCH_OUT.0")
echo "$summary"
to_host1=$(grep "p1r0 " <<< "$summary") to_host2=$(grep "p2r0 " <<< "$summary")
between "frames dropped at host 1's port" "$(field drops= "${to_host1//=/= }")" 1000 100000
between "peak queue at host 1's port (bytes: the 300 KB buffer)" "$(field peak_queue_bytes= "${to_host1//=/= }")" 200000 300000
between "bytes switched to host 2, which nobody addressed" "$(field bytes= "${to_host2//=/= }")" 0 5000
between "frames the switch lost at its sockets" "$(field socket_drops= "${to_host1//=/= }")" 0 0
between "queue samples recorded" "$(grep -c p1r0 "$work/queue.csv")" 200 3000
between "largest queue sample (bytes)" "$(awk -F, '$2 ~ /p1r0/ && $4 > m { m = $4 } END { print m }' "$work/queue.csv")" 200000 300000

# Random loss by nftables on a plain bridge: about the share asked for (625 datagrams: 6-14% is 3.3 sigmas either side).
link_loss 0 0 10
line=$(run 40 1 0x00)
lost=$(awk -v s="$(field sent "$line")" -v g="$(field got "$line")" 'BEGIN { printf "%.1f", 100 - g * 100 / s }')
between "percent lost with link_loss 10" "$lost" 6 14
link_loss 0 0 0
line=$(run 40 0.5 0x00)
between "datagrams lost after link_loss 0" "$(($(field sent "$line") - $(field got "$line")))" 0 0
echo "PASS"
