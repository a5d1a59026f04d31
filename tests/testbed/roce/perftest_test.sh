#!/usr/bin/env bash
# perftest's ib_send_bw, ib_write_bw and ib_read_bw (Debian's perftest, not ours) complete RC runs between two
# processes on the emulated RoCE device, over loopback, on its RoCE v2 GID (-x 1; index 0 is RoCE v1, as a
# ConnectX lists them): both ends exit 0 and report a bandwidth.
#   perftest_test.sh <dir of the emulated libibverbs.so.1>
set -euo pipefail
export LD_LIBRARY_PATH=$1
export EMU_ROCE_NETDEVS=lo
for tool in ib_send_bw ib_write_bw ib_read_bw; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool is not installed [missing: perftest]"; exit 77; }
done
# Ports below the kernel's ephemeral range (32768+), where other tests' connections take theirs; a port that is
# taken anyway (the server cannot listen) is retried on another.
port=$((20000 + RANDOM % 12000))
status=0
for tool in ib_send_bw ib_write_bw ib_read_bw; do
  server_log=$(mktemp)
  for attempt in 1 2 3 4 5; do
    port=$((port + 1))
    timeout 60 "$tool" -d emroce0 -x 1 -n 300 -p "$port" >"$server_log" 2>&1 &
    server=$!
    client_out=""
    for _ in $(seq 50); do  # until the server listens
      sleep 0.1
      kill -0 "$server" 2>/dev/null || break  # the server gave up (its port was taken): no client to a stranger
      if client_out=$(timeout 60 "$tool" -d emroce0 -x 1 -n 300 -p "$port" 127.0.0.1 2>&1); then break; fi
      client_out=""
    done
    server_status=0
    wait "$server" || server_status=$?
    grep -q "Couldn't listen to port" "$server_log" || break
  done
  if [ "$server_status" != 0 ]; then
    echo "FAIL: $tool server:"; cat "$server_log"; status=1
  elif ! grep -Eq '^ 65536 +300 ' <<<"$client_out"; then
    echo "FAIL: $tool client:"; echo "$client_out"; status=1
  else
    echo "ok: $tool $(grep -E '^ 65536 +300 ' <<<"$client_out" | awk '{print $4 " MB/s average"}')"
  fi
  rm -f "$server_log"
done
exit "$status"
