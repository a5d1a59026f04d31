#!/usr/bin/env bash
# What segmentation and receive coalescing buy the udp transport's kernel io (issue 40: "GSO/GRO where they
# help"): one bulk flow between two emulated hosts on unshaped veth links (no rate limit: the hosts' cores are
# the bottleneck), at an Ethernet MTU and a jumbo one, every byte checked by megascale-flow-bench:
#   udp plain     MEGASCALE_UDP_GSO=0: one sendmmsg entry per datagram, recvmmsg gets one each;
#   udp gso       runs of same-sized datagrams leave as one message (UDP_SEGMENT), cut at the sender's "NIC"
#                 (the host's veth has tx-udp-segmentation off, as the test bed keeps it: the wire carries frames);
#   udp gso+gro   and the receiver's "NIC" coalesces them again (veth GRO on), handed over as one (UDP_GRO);
#   tcp           the tcp transport on the same link, the kernel's TSO/GRO path.
# Each with the law none (what the io path alone carries) and swift (the default law, whose delay target also
# reacts to the queueing in a busy host's stack). Ratios are against udp plain in the same run.
#   bench/udp_gso.sh [BUILD_DIR]   (root; ~70 s; env: SECONDS_PER_RUN=4 MTUS="1500 9000" LAWS="none swift")
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
SECONDS_PER_RUN=${SECONDS_PER_RUN:-4} MTUS=${MTUS:-1500 9000} LAWS=${LAWS:-none swift}
[ "$(id -u)" = 0 ] || { echo "SKIPPED: the emulated hosts need root"; exit 77; }
command -v ethtool > /dev/null || { echo "SKIPPED: needs ethtool (scripts/setup.sh)"; exit 77; }
source testbed/emulated_cluster.sh
flow_bench=$build/testbed/flow_bench/megascale-flow-bench
tmp=$(mktemp -d)
trap 'cluster_down; rm -rf "$tmp"' EXIT
# Unshaped: the law must not cap what the cores can do.
export MEGASCALE_UDP_LINE_MBPS=100000

echo "# udp GSO/GRO: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(uname -r); $(date -u +%F)"
echo "# one flow host 1 -> host 0 over an unshaped veth and bridge, ${SECONDS_PER_RUN}s per run"

# run TRANSPORT GSO [LAW]: the receiver's goodput in Mbit/s
run() {
  local handle
  handle=$(mktemp -u "$tmp/handle.XXXXXX")
  export MEGASCALE_UDP_CC=${3:-swift}
  on_host 0 env MEGASCALE_TRANSPORT="$1" MEGASCALE_UDP_GSO="$2" timeout 60 "$flow_bench" receive \
    --bind "$(host_addr 0)" --handle "$handle" --flows 1 --timeout-s 50 > "$tmp/receiver" &
  local receiver=$!
  on_host 1 env MEGASCALE_TRANSPORT="$1" MEGASCALE_UDP_GSO="$2" timeout 60 "$flow_bench" send \
    --bind "$(host_addr 1)" --handle "$handle" --flow 1 --seconds "$SECONDS_PER_RUN" --timeout-s 50 > /dev/null ||
    { echo "the sender failed ($1, GSO $2)" >&2; return 1; }
  wait "$receiver" || { echo "the receiver failed ($1, GSO $2)" >&2; return 1; }
  awk '/^total/ { for (i = 1; i < NF; i++) if ($i == "goodput_mbit") print $(i + 1) }' "$tmp/receiver"
}
receiver_gro() { on_host 0 ethtool -K rail0 gro "$1" > /dev/null; }

printf "\n%-6s %-7s %-12s %14s %14s\n" mtu law mode "goodput Mb/s" "vs udp plain"
for mtu in $MTUS; do
  EMU_MTU=$mtu cluster_up 2
  tcp=$(run tcp 1)
  for law in $LAWS; do
    receiver_gro off
    plain=$(run udp 0 "$law")
    declare -A got=([plain]=$plain [tcp]=$tcp)
    got[gso]=$(run udp 1 "$law")
    receiver_gro on
    got[gso+gro]=$(run udp 1 "$law")
    for mode in plain gso gso+gro tcp; do
      name=$([ "$mode" = tcp ] && echo tcp || echo "udp $mode")
      printf "%-6s %-7s %-12s %14s %14s\n" "$mtu" "$([ "$mode" = tcp ] && echo - || echo "$law")" "$name" "${got[$mode]}" \
        "$(awk -v g="${got[$mode]}" -v p="$plain" 'BEGIN { printf "%.2fx", g / p }')"
    done
  done
  cluster_down
done
