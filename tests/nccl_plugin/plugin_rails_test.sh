#!/usr/bin/env bash
# The NCCL plugin on the ibverbs transport reports each active RDMA port as a device, as NCCL's IB plugin does:
# on an emulated host with a dual-port NIC (rail0, rail1) and a single-port one (rail2), three devices - the
# dual-port NIC's two sharing its GUID with ports 1 and 2 - and on each one a connection moves 1 MiB, registered
# (regMr on that device's comm) and not. MEGASCALE_IB_HCA narrows them (emroce0:2 alone).
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
echo "ok: a device per active port (emroce0 ports 1 and 2 sharing a GUID, emroce1), data moved on each; MEGASCALE_IB_HCA narrows them"
