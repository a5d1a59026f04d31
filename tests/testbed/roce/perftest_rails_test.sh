#!/usr/bin/env bash
# perftest (Debian's, not ours) over every emulated RoCE device and port of a host with three rails: emroce0 a
# single-port NIC on rail0, emroce1 a dual-port NIC on rail1 (port 1) and rail2 (port 2) (EMU_ROCE_NETDEVS=
# "rail0,rail1+rail2"). ibv_devinfo lists both devices and emroce1's two ports with their own GIDs; ib_write_bw
# and ib_send_bw between two emulated hosts complete on each device and port at the RoCE v2 GID (-x 1), and
# the bytes leave host 0 on that port's rail.
#   perftest_rails_test.sh <dir of the emulated libibverbs.so.1>   (root; 77: skip)
set -euo pipefail
verbs_dir=$1
cd "$(dirname "$0")/../../.."
[ "$(id -u)" = 0 ] || { echo "SKIPPED: the emulated cluster needs root"; exit 77; }
for tool in ib_write_bw ib_send_bw ibv_devinfo; do
  command -v "$tool" > /dev/null || { echo "SKIPPED: $tool is not installed [missing: perftest, ibverbs-utils]"; exit 77; }
done
source testbed/emulated_cluster.sh
fail() { echo "FAIL: $*"; exit 1; }
cluster_up 2 3
export LD_LIBRARY_PATH=$verbs_dir EMU_ROCE_NETDEVS="rail0,rail1+rail2"

info=$(on_host 0 ibv_devinfo -v)
grep -q "hca_id:	emroce0" <<< "$info" && grep -q "hca_id:	emroce1" <<< "$info" || { echo "$info"; fail "ibv_devinfo does not list both devices"; }
[ "$(on_host 0 ibv_devinfo -d emroce1 | grep -cP '^\t+port:\t')" = 2 ] || { on_host 0 ibv_devinfo -d emroce1; fail "emroce1 does not have two ports"; }
for rail in 0 1 2; do
  grep -q "::ffff:$(host_addr 0 "$rail"), RoCE v2" <<< "$info" || { echo "$info"; fail "no RoCE v2 GID for rail $rail"; }
done
echo "ok: ibv_devinfo lists emroce0 (1 port) and emroce1 (2 ports), a RoCE v2 GID on each rail"

tx() { on_host 0 cat "/sys/class/net/rail$1/statistics/tx_bytes"; }
port=18515
for target in "emroce0 1 0" "emroce1 1 1" "emroce1 2 2"; do
  read -r device ib_port rail <<< "$target"
  for tool in ib_write_bw ib_send_bw; do
    port=$((port + 1))
    before=$(tx "$rail")
    server_log=$(mktemp)
    on_host 1 timeout 60 "$tool" -d "$device" -i "$ib_port" -x 1 -n 200 -p "$port" > "$server_log" 2>&1 &
    server=$!
    client_out=""
    for _ in $(seq 50); do  # until the server listens
      sleep 0.1
      kill -0 "$server" 2>/dev/null || break
      if client_out=$(on_host 0 timeout 60 "$tool" -d "$device" -i "$ib_port" -x 1 -n 200 -p "$port" "$(host_addr 1 "$rail")" 2>&1); then break; fi
      client_out=""
    done
    wait "$server" || { cat "$server_log"; rm -f "$server_log"; fail "$tool server on $device port $ib_port"; }
    rm -f "$server_log"
    grep -Eq '^ 65536 +200 ' <<< "$client_out" || { echo "$client_out"; fail "$tool client on $device port $ib_port"; }
    sent=$(($(tx "$rail") - before))
    ((sent > 200 * 65536)) || fail "$tool on $device port $ib_port sent $sent bytes on rail $rail (expected > $((200 * 65536)))"
    echo "ok: $tool on $device port $ib_port: $(grep -E '^ 65536 +200 ' <<< "$client_out" | awk '{print $4}') MB/s," \
         "$sent bytes out on rail $rail"
  done
done
