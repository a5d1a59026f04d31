#!/usr/bin/env bash
# megascale-run --store with a store it does not own: a standalone megascale-store, or a real redis-server
# started with the password the job secret derives. Usage: external_store_test.sh tcp|redis RUN STORE PROGRAM
set -euo pipefail
kind=$1 run=$2 store=$3 program=$4
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export MEGASCALE_JOB_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
if [ "$kind" = tcp ]; then
  "$store" --host 127.0.0.1 --port "$port" & server=$!
else
  if ! command -v redis-server >/dev/null; then echo "SKIPPED: redis-server not installed [missing: redis-server]"; exit 77; fi
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --loglevel warning \
    --requirepass "$("$store" --print-redis-password)" & server=$!
fi
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
# Two "hosts" sharing the store: each runs its own launcher with two ranks.
"$run" --store "$kind://127.0.0.1:$port" --job-id ext1 --world-size 4 --rank-offset 0 -n 2 "$program" 0 7 1000 &
first=$!
"$run" --store "$kind://127.0.0.1:$port" --job-id ext1 --world-size 4 --rank-offset 2 -n 2 "$program" 0 7 1000
wait $first
# A launcher that does not know the secret is refused by the store.
if MEGASCALE_JOB_SECRET=00112233445566778899aabbccddeeff MEGASCALE_TIMEOUT_MS=3000 \
    "$run" --store "$kind://127.0.0.1:$port" -n 1 "$program" 0 2>/dev/null; then
  echo "a rank with the wrong secret was let in" >&2
  exit 1
fi
