#!/usr/bin/env bash
# The NCCL plugin on the ibverbs transport reports each active RDMA port as a device, as NCCL's IB plugin does:
# on an emulated host with a dual-port NIC (rail0, rail1) and a single-port one (rail2), three devices - the
# dual-port NIC's two sharing its GUID with ports 1 and 2 - and on each one a connection moves 1 MiB, registered
# (regMr on that device's comm) and not. MEGASCALE_IB_HCA narrows them (emroce0:2 alone). NCCL's makeVDevice
# fuses emroce0 port 1 and emroce1 into a virtual device of their summed speed, whose connections stripe over
# both NICs (each device's packet count from the emulated device's statistics).
#   plugin_rails_test.sh DEVICES_PROBE PLUGIN EMULATED_VERBS_DIR   (root; 77: skip)
set -euo pipefail
probe=$1 plugin=$2 verbs_dir=$3
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIPPED: the emulated cluster needs root"; exit 77; }
source testbed/emulated_cluster.sh
fail() { echo "FAIL: $*"; exit 1; }
cluster_up 1 3
export LD_LIBRARY_PATH=$verbs_dir EMU_ROCE_NETDEVS="rail0+rail1,rail2" MEGASCALE_TRANSPORT=ib
out=$(on_host 0 "$probe" "$plugin" 2>&1) || { echo "$out"; fail "the plugin did not move data on every device"; }
echo "$out"
grep -q ": 3 devices" <<< "$out" || fail "expected 3 devices (one per active port)"
guid0=$(sed -n 's/^dev 0: emroce0 port 1 guid \([0-9a-f]*\) .*/\1/p' <<< "$out")
guid1=$(sed -n 's/^dev 1: emroce0 port 2 guid \([0-9a-f]*\) .*/\1/p' <<< "$out")
guid2=$(sed -n 's/^dev 2: emroce1 port 1 guid \([0-9a-f]*\) .*/\1/p' <<< "$out")
[ -n "$guid0" ] && [ "$guid0" = "$guid1" ] || fail "emroce0's two ports should be devices 0 and 1 with one GUID"
[ -n "$guid2" ] && [ "$guid2" != "$guid0" ] || fail "emroce1 should be device 2 with a GUID of its own"
[ "$(grep -c "moved 1 MiB registered and not" <<< "$out")" = 3 ] || fail "not every device moved its data"
narrowed=$(on_host 0 env MEGASCALE_IB_HCA=emroce0:2 "$probe" "$plugin" 2>&1) || { echo "$narrowed"; fail "MEGASCALE_IB_HCA=emroce0:2"; }
grep -q ": 1 devices" <<< "$narrowed" && grep -q "^dev 0: emroce0 port 2 " <<< "$narrowed" ||
  { echo "$narrowed"; fail "MEGASCALE_IB_HCA=emroce0:2 should leave one device, emroce0 port 2"; }
merged=$(on_host 0 env EMU_ROCE_STATS=1 "$probe" "$plugin" 0,2 2>&1) || { echo "$merged"; fail "the virtual device of devices 0 and 2"; }
grep -q "made virtual device 3 of 0,2" <<< "$merged" && grep -q ": 4 devices" <<< "$merged" ||
  { echo "$merged"; fail "makeVDevice should add device 3 after the three physical ones"; }
speed0=$(sed -n 's/^dev 0: .* speed \([0-9]*\) merges 0$/\1/p' <<< "$merged" | head -1)
grep -q "^dev 3: emroce0+emroce1 port 1 guid $guid0 .* speed $((2 * speed0)) merges 0,2$" <<< "$merged" ||
  { echo "$merged"; fail "device 3 should be emroce0+emroce1 with twice the speed, merging devices 0 and 2"; }
grep -q "^dev 3: moved 1 MiB registered and not" <<< "$merged" || { echo "$merged"; fail "the virtual device moved no data"; }
# The packets each NIC sent (the most of its contexts: emroce0's second port, opened for device 1, sends none).
packets() { sed -n "s/^emulated RoCE $1 (pid [0-9]*): \([0-9]*\) packets out.*/\1/p" <<< "$merged" | sort -n | tail -1; }
p0=$(packets emroce0) p1=$(packets emroce1)
((p0 > 200 && p1 > 200)) || { echo "$merged"; fail "the virtual device sent $p0 packets through emroce0 and $p1 through emroce1: both should carry it"; }
echo "ok: makeVDevice fused emroce0 port 1 and emroce1 into device 3 ($((2 * speed0)) Mb/s); its transfers went $p0 packets through emroce0, $p1 through emroce1"
echo "ok: a device per active port (emroce0 ports 1 and 2 sharing a GUID, emroce1), data moved on each; MEGASCALE_IB_HCA narrows them"
