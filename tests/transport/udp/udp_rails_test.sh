#!/usr/bin/env bash
# The udp transport over two rails between emulated hosts (MEGASCALE_UDP_RAILS=rail: a flow set on each rail's
# address): a rail's cable pulled mid-transfer leaves the flow stalled under 50 ms and no message fails; both
# rails down for 3 s are ridden out with the default give-up budget, and fail with an error naming the peer
# under a 1 s budget. Every byte is checked (megascale-flow-bench). Needs root (77: skip).
# usage: udp_rails_test.sh FLOW_BENCH
set -euo pipefail
cd "$(dirname "$0")/../../.."
[ "$(id -u)" = 0 ] || { echo "SKIPPED: emulated hosts need root"; exit 77; }
flow_bench=$1
source testbed/emulated_cluster.sh
work=$(mktemp -d)
trap 'cluster_down; rm -rf "$work"' EXIT
cluster_up 2 2
hosts_rate 200mbit
export MEGASCALE_TRANSPORT=udp MEGASCALE_UDP_RAILS=rail MEGASCALE_UDP_LINE_MBPS=200 MEGASCALE_UDP_FLOWS=2
fail() { echo "FAIL: $*"; cat "$work"/*.out "$work"/*.err 2>/dev/null; exit 1; }

# transfer NAME SECONDS [ENV...]: host 0 sends to host 1 in the background; `finish NAME` waits and reports.
transfer() {
  local name=$1 seconds=$2
  shift 2
  on_host 1 env "$@" timeout 60 "$flow_bench" receive --bind "$(host_addr 1)" --handle "$work/$name.handle" --flows 1 \
    --message 65536 --timeout-s 40 > "$work/$name.out" 2> "$work/$name.err" &
  receiver=$!
  on_host 0 env "$@" timeout 60 "$flow_bench" send --bind "$(host_addr 0)" --handle "$work/$name.handle" --flow 0 \
    --message 65536 --seconds "$seconds" --timeout-s 40 > "$work/$name.send" 2> "$work/$name.send.err" &
  sender=$!
}
finish() { sender_status=0 receiver_status=0; wait "$sender" || sender_status=$?; wait "$receiver" || receiver_status=$?; }
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$2" | head -1; }

# One rail pulled on the sender's host at 1.5 s: the other carries on.
transfer pull 4
sleep 1.5
link_down 0 1
finish
link_up 0 1
[ "$sender_status" = 0 ] && [ "$receiver_status" = 0 ] || fail "a rail pulled: the transfer failed ($sender_status/$receiver_status)"
stall=$(field longest_stall_ms "$work/pull.out") goodput=$(field goodput_mbit "$work/pull.out")
echo "one rail pulled: longest stall $stall ms, goodput $goodput Mbit/s"
awk -v s="$stall" 'BEGIN { exit !(s < 50) }' || fail "the flow stalled $stall ms (limit 50)"
awk -v g="$goodput" 'BEGIN { exit !(g > 150) }' || fail "goodput $goodput Mbit/s: the remaining rail carries 200"

# Both rails down for 3 s: ridden out with the default budget (30 s)...
transfer flap 5
sleep 1
link_down 0 0; link_down 0 1
sleep 3
link_up 0 0; link_up 0 1
finish
[ "$sender_status" = 0 ] && [ "$receiver_status" = 0 ] || fail "a 3 s flap with the default budget failed the transfer"
stall=$(field longest_stall_ms "$work/flap.out")
echo "both rails down 3 s: the transfer completed, longest stall $stall ms"
awk -v s="$stall" 'BEGIN { exit !(s >= 2900 && s < 5000) }' || fail "the stall ($stall ms) is not the 3 s flap"

# ...and a clear error naming the peer with a 1 s budget.
transfer short 5 MEGASCALE_UDP_GIVE_UP_MS=1000
sleep 1
link_down 0 0; link_down 0 1
sleep 3
link_up 0 0; link_up 0 1
finish
[ "$sender_status" != 0 ] || fail "a 3 s flap under a 1 s budget: the sender did not fail"
grep -q "$(host_addr 1):" "$work/short.send.err" || fail "the sender's error does not name the peer $(host_addr 1): $(cat "$work/short.send.err")"
grep -q "MEGASCALE_UDP_GIVE_UP_MS" "$work/short.send.err" || fail "the sender's error does not name the budget's knob"
echo "both rails down 3 s under a 1 s budget: $(cat "$work/short.send.err")"
echo PASS
