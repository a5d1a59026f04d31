#!/usr/bin/env bash
# Collectives across emulated hosts (testbed/emulated_cluster.sh): 2 hosts x 2 ranks, 2 rails each.
# 1. Every collective, dtype and op is exact (with the algorithms auto picks, then all hierarchical, then the
#    hierarchical all-reduce with the node engine as the host stage), with MEGASCALE_TRANSPORT=auto choosing per
#    peer: each rank talks shared memory to the other rank of its host and TCP to the two ranks of the other host.
#    With the emulated RoCE device (EMULATED_VERBS_DIR), the ibverbs transport on one NIC per rail, then on one
#    dual-port NIC with a port per rail: local rank l takes the host's l-th port, so the hierarchical
#    all-reduce's rail rings cross both rails. Then one rank per host: it owns both NICs and stripes every
#    connection over them.
# 2. Ranks that see different network rates still choose the same algorithm.
# 3. A host whose cable is pulled mid-all-reduce: every rank fails within the timeout, with an error that names
#    the rank, the peer and the peer's host.
#   multihost_test.sh MEGASCALE_RUN MEGASCALE_STORE COLLECTIVE_CHECK ALL_REDUCE_PERF [EMULATED_VERBS_DIR]
#                                                                                     (root; 77: skip)
set -euo pipefail
run=$1 store=$2 check=$3 perf=$4 verbs_dir=${5:-}
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIPPED: the emulated cluster needs root"; exit 77; }
source testbed/emulated_cluster.sh
fail() { echo "FAIL: $*"; exit 1; }
cluster_up 2 2
export MEGASCALE_JOB_SECRET=0123456789abcdef0123456789abcdef MEGASCALE_TRANSPORT=auto
ip netns exec "$(host_name 0)" "$store" --host "$(host_addr 0)" --port 29521 > /dev/null &
store_pid=$!
out0=$(mktemp) out1=$(mktemp)
trap 'kill $store_pid 2>/dev/null; rm -f "$out0" "$out1"; cluster_down' EXIT

# job ID TIMEOUT_MS PROGRAM ARGS...: one megascale-run per host in the background (RANKS_PER_HOST ranks, 2 unless
# set), outputs in $out0 / $out1.
job() {
  local id=$1 timeout=$2 n=${RANKS_PER_HOST:-2} i
  shift 2
  for i in 0 1; do
    MEGASCALE_TIMEOUT_MS=$timeout MEGASCALE_NET_MBPS=$([ "$i" = 1 ] && echo "${HOST1_NET_MBPS:-0}" || echo 0) \
      on_host "$i" "$run" --store "tcp://$(host_addr 0):29521" --job-id "$id" \
      --world-size $((2 * n)) --rank-offset $((n * i)) -n "$n" "$@" > "$([ "$i" = 0 ] && echo "$out0" || echo "$out1")" 2>&1 &
  done
}

job check 60000 "$check" --describe
for i in 1 2; do wait %$((i + 1)) || { cat "$out0" "$out1"; fail "collective_check failed on host $((i - 1))"; }; done
grep -h "wrong over all ranks" "$out0" | grep -q " 0 wrong" || { cat "$out0"; fail "collective_check found wrong elements"; }
for rank in 0 1 2 3; do
  grep -h "rank $rank: transport: shm+tcp .* peers: shm 1 tcp 2" "$out0" "$out1" > /dev/null ||
    { cat "$out0" "$out1"; fail "rank $rank did not talk shm to its host and tcp to the other"; }
done
echo "ok: every collective exact across 2 hosts x 2 ranks; shm inside a host, tcp between hosts"

# Every all-reduce, all-gather and reduce-scatter hierarchical, whatever its size. Local rank l listens on rail l,
# so each rail carries the ring of its local ranks.
tx() { on_host 0 cat "/sys/class/net/rail$1/statistics/tx_bytes"; }
before0=$(tx 0) before1=$(tx 1)
MEGASCALE_ALGO=hier job hier 60000 "$check" 0 1 5 1000 70001
for i in 1 2; do wait %$((i + 1)) || { cat "$out0" "$out1"; fail "collective_check (hierarchical) failed on host $((i - 1))"; }; done
grep -h "wrong over all ranks" "$out0" | grep -q " 0 wrong" || { cat "$out0"; fail "hierarchical collectives were wrong"; }
rail0=$(($(tx 0) - before0)) rail1=$(($(tx 1) - before1))
((rail0 > 1000000 && rail1 > 1000000)) || fail "host 0 sent $rail0 bytes on rail 0 and $rail1 on rail 1: both rails should carry rings"
echo "ok: every hierarchical collective exact; host 0 sent $rail0 bytes on rail 0, $rail1 on rail 1"

# Hierarchical all-reduces whose chunks split evenly run their host-local stages on the node engine (the host
# stage), pipelined with the rails' rings: 262144 elements are 4 chunks; 1000 is one.
MEGASCALE_ALGO=hier job hoststage 60000 "$check" --describe --collectives all_reduce --ops sum,avg,max 1000 262144
for i in 1 2; do wait %$((i + 1)) || { cat "$out0" "$out1"; fail "hierarchical all-reduce on the host stage failed on host $((i - 1))"; }; done
grep -h "wrong over all ranks" "$out0" | grep -q " 0 wrong" || { cat "$out0"; fail "all-reduce on the host stage was wrong"; }
grep -q "rank 0: .*host-stage: ranks 0, 1" "$out0" && grep -q "rank 3: .*host-stage: ranks 2, 3" "$out1" ||
  { cat "$out0" "$out1"; fail "the node engine did not serve as each host's stage"; }
echo "ok: hierarchical all-reduce exact with the node engine as each host's stage"

if [ -n "$verbs_dir" ]; then
  # One single-port NIC per rail, then one dual-port NIC with a port on each rail.
  for layout in "nics rail0,rail1 emroce1 port 1" "ports rail0+rail1 emroce0 port 2"; do
    read -r id netdevs second_port <<< "$layout"
    before0=$(tx 0) before1=$(tx 1)
    LD_LIBRARY_PATH=$verbs_dir EMU_ROCE_NETDEVS=$netdevs MEGASCALE_TRANSPORT=ibverbs MEGASCALE_ALGO=hier MEGASCALE_DEBUG=1 \
      job "ib-$id" 60000 "$check" --describe --collectives all_reduce 1000 262144
    for i in 1 2; do wait %$((i + 1)) || { cat "$out0" "$out1"; fail "all-reduce over ibverbs ($netdevs) failed on host $((i - 1))"; }; done
    grep -h "wrong over all ranks" "$out0" | grep -q " 0 wrong" || { cat "$out0"; fail "all-reduce over ibverbs ($netdevs) was wrong"; }
    grep -q "local rank 1 takes active port 2 of 2 ($second_port)" "$out0" ||
      { cat "$out0"; fail "local rank 1 did not take the second rail's port ($second_port)"; }
    rail0=$(($(tx 0) - before0)) rail1=$(($(tx 1) - before1))
    ((rail0 > 1000000 && rail1 > 1000000)) || fail "over ibverbs ($netdevs) host 0 sent $rail0 bytes on rail 0 and $rail1 on rail 1"
    echo "ok: all-reduce exact over ibverbs, EMU_ROCE_NETDEVS=$netdevs; host 0 sent $rail0 bytes on rail 0, $rail1 on rail 1"
  done
  # One rank per host: more NICs than ranks, so the rank takes both and stripes each connection over them.
  before0=$(tx 0) before1=$(tx 1)
  LD_LIBRARY_PATH=$verbs_dir EMU_ROCE_NETDEVS=rail0,rail1 MEGASCALE_TRANSPORT=ibverbs MEGASCALE_DEBUG=1 RANKS_PER_HOST=1 \
    job ib-striped 60000 "$check" --describe --collectives all_reduce,all_gather 1000 262144
  for i in 1 2; do wait %$((i + 1)) || { cat "$out0" "$out1"; fail "all-reduce striped over two NICs failed on host $((i - 1))"; }; done
  grep -h "wrong over all ranks" "$out0" | grep -q " 0 wrong" || { cat "$out0"; fail "all-reduce striped over two NICs was wrong"; }
  grep -q "local rank 0 takes active ports 1+2 of 2 (emroce0 port 1, emroce1 port 1)" "$out0" ||
    { cat "$out0"; fail "the only rank of host 0 did not take both NICs"; }
  rail0=$(($(tx 0) - before0)) rail1=$(($(tx 1) - before1))
  ((rail0 > 1000000 && rail1 > 1000000 && rail0 < 2 * rail1 && rail1 < 2 * rail0)) ||
    fail "one rank striping over two NICs: host 0 sent $rail0 bytes on rail 0 and $rail1 on rail 1 (both, about evenly)"
  echo "ok: one rank per host stripes over both NICs, exact; host 0 sent $rail0 bytes on rail 0, $rail1 on rail 1"
fi

# Host 1 sees a 100 Mbit/s network and host 0 its 10 Gbit/s veth: for an 8 KiB all-reduce the cost model alone would
# pick the ring on host 1 and direct on host 0. The ranks agree on the slowest link with the host layout, so they
# choose alike and the all-reduce completes, exact.
HOST1_NET_MBPS=100 job agree 20000 "$perf" -b 8K -e 8K -n 20 -w 1 -c 1
for i in 1 2; do wait %$((i + 1)) || { cat "$out0" "$out1"; fail "ranks with different link rates failed on host $((i - 1))"; }; done
grep -q "Out of bounds values : 0 OK" "$out0" || { cat "$out0"; fail "ranks with different link rates got wrong data"; }
echo "ok: ranks that see different link rates agree on the algorithm"

job cut 3000 "$perf" -b 32M -e 32M -n 5000 -w 1
sleep 3
link_down 1 0
cut=$(date +%s%N)
for i in 1 2; do
  if wait %$((i + 1)); then fail "host $((i - 1)) finished although its peer host's cable was pulled"; fi
done
took_ms=$((($(date +%s%N) - cut) / 1000000))
((took_ms < 15000)) || fail "the ranks took $took_ms ms to fail after the cut (timeout 3000 ms)"
# Every host's first error names its rank, the peer and the peer's host. Which peer depends on timing: under a
# hierarchical all-reduce a rank waiting on an owner of its own host that stalled on the cut may time out first
# (megascale-run then stops the others), so the peer named need not be across the cable.
for i in 0 1; do
  grep -q "rank [0-3]: .*rank [0-3] on host ${EMU_TAG}h[01]" "$([ "$i" = 0 ] && echo "$out0" || echo "$out1")" ||
    { cat "$out0" "$out1"; fail "host $i's error does not name rank, peer and host"; }
done
echo "ok: a pulled cable fails every rank in $took_ms ms, naming rank, peer and host:"
grep -h "WARN" "$out0" "$out1" | head -2
