#!/usr/bin/env bash
# The emulated cluster (testbed/emulated_cluster.sh): 3 hosts x 2 rails. Each rail's traffic leaves on that
# rail's NIC; a pulled cable stops its rail only, and plugging it back restores it; the cluster's topology.conf
# and every host's records make the cluster model that megascale-run --print-topology prints on every host;
# the namespaces, bridges and processes inside are gone after the shell exits, on success, failure or a signal.
#   emulated_cluster_test.sh MEGASCALE_RUN MEGASCALE_STORE     (root; 77: skip)
set -euo pipefail
run=$1 store=$2
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIPPED: the emulated cluster needs root"; exit 77; }
source testbed/emulated_cluster.sh
flows=tests/testbed/link_flows.py
fail() { echo "FAIL: $*"; exit 1; }

cluster_up 3 2
tx_bytes() { on_host "$1" cat "/sys/class/net/rail$2/statistics/tx_bytes"; }
# send HOST RAIL BYTES: a flow from host 0 to HOST's address on RAIL; fails when it cannot connect in 5 s.
port=5401
send() {
  on_host "$1" timeout 10 /usr/bin/python3 "$flows" serve "$(host_addr "$1" "$2")" "$port" 1 > /dev/null &
  local server=$! status=0
  sleep 0.3
  on_host 0 timeout 5 /usr/bin/python3 "$flows" send "$(host_addr "$1" "$2")" "$port" "0:$3:0" > /dev/null 2>&1 || status=$?
  [ "$status" = 0 ] || kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null || true
  port=$((port + 1))
  return "$status"
}

before0=$(tx_bytes 0 0) before1=$(tx_bytes 0 1)
send 2 1 4000000 || fail "host 0 could not send to host 2 on rail 1"
sent1=$(($(tx_bytes 0 1) - before1)) sent0=$(($(tx_bytes 0 0) - before0))
((sent1 >= 4000000)) || fail "rail 1 carried $sent1 bytes of a 4 MB flow"
((sent0 < 100000)) || fail "rail 0 carried $sent0 bytes of a flow to a rail-1 address"
echo "ok: a rail-1 flow left on rail 1 ($sent1 bytes; rail 0: $sent0)"

link_down 2 1
if send 2 1 1000; then fail "host 2's rail 1 answered with its cable pulled"; fi
send 2 0 1000 || fail "host 2's rail 0 stopped when rail 1 was pulled"
link_up 2 1
send 2 1 1000 || fail "host 2's rail 1 did not come back"
echo "ok: a pulled cable stops its rail only, and comes back"

topology=$(mktemp)
write_topology "$topology"
export MEGASCALE_JOB_SECRET=0123456789abcdef0123456789abcdef MEGASCALE_TIMEOUT_MS=20000
ip netns exec "$(host_name 0)" "$store" --host "$(host_addr 0)" --port 29511 > /dev/null &
store_pid=$!
outputs=()
for i in 0 1 2; do
  outputs+=("$(mktemp)")
  on_host "$i" "$run" --store "tcp://$(host_addr 0):29511" --job-id topo --world-size 6 --rank-offset $((2 * i)) -n 2 \
    --topology "$topology" --print-topology > "${outputs[$i]}" &
done
for i in 0 1 2; do wait %$((i + 2)) || fail "megascale-run --print-topology on host $i failed"; done
kill "$store_pid"
for i in 0 1 2; do
  cmp -s "${outputs[0]}" "${outputs[$i]}" || fail "host $i printed another cluster"
done
expected="cluster: 3 hosts, 2 rails, 2 switches
  switch ${EMU_TAG}r0 (rail 0): hosts ${EMU_TAG}h0 ${EMU_TAG}h1 ${EMU_TAG}h2
  switch ${EMU_TAG}r1 (rail 1): hosts ${EMU_TAG}h0 ${EMU_TAG}h1 ${EMU_TAG}h2
  host ${EMU_TAG}h0: ranks 0-1
    rail 0: rail0 10.214.0.1 10000 Mbit/s switch ${EMU_TAG}r0
    rail 1: rail1 10.215.0.1 10000 Mbit/s switch ${EMU_TAG}r1"
[ "$(head -6 "${outputs[1]}")" = "$expected" ] || { cat "${outputs[1]}"; fail "the printed cluster is not the expected one"; }
grep -q "host ${EMU_TAG}h2: ranks 4-5" "${outputs[1]}" || fail "host 2's ranks are missing"
rm -f "$topology" "${outputs[@]}"
echo "ok: every host prints the whole cluster model"

# Teardown: a shell that fails and one that is killed both leave nothing behind.
leftovers() { { ip netns list; ip -o link show type bridge; } | grep -c "$1" || true; }
EMU_TAG=mx$$a bash -c 'set -e; source testbed/emulated_cluster.sh; cluster_up 2 2; on_host 1 sleep 3131 & sleep 0.2; false' || true
EMU_TAG=mx$$b bash -c 'source testbed/emulated_cluster.sh; cluster_up 2 2; kill -TERM $$; sleep 5' || true
for tag in "mx$$a" "mx$$b"; do
  [ "$(leftovers "$tag")" = 0 ] || fail "cluster $tag left namespaces or bridges behind"
done
sleep 0.2
if pgrep -f "sleep 3131" > /dev/null; then pkill -f "sleep 3131"; fail "a process inside a host outlived its cluster"; fi
echo "ok: the cluster and every process inside it are removed on failure and on a signal"

# Made again at once under the same tag, as a benchmark does between layouts: the old cables' root ends must
# not linger (the kernel removes a namespace's devices asynchronously: bench/ddp_compare.sh stopped with "File
# exists" going from 2 hosts to 4, and this loop failed in every one of 3 runs before).
EMU_TAG=mx$$c bash -c 'source testbed/emulated_cluster.sh
  for round in 1 2 3 4 5; do
    hosts_down; hosts_up 4 || { echo "round $round"; exit 1; }
    on_host 0 sleep 0.1 & hosts_rate 500mbit
  done' || fail "a cluster made again at once under its tag failed"
[ "$(leftovers "mx$$c")" = 0 ] || fail "the re-made cluster left namespaces or bridges behind"
echo "ok: a cluster is made again at once under the same tag"
