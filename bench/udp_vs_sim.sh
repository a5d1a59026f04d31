#!/usr/bin/env bash
# The simulator against the test bed (issue 40): the same scenarios on the ECN-marking switch of testbed/ and in
# megascale-sim with the test bed's link rate, packet size, switch buffer, ECN thresholds and round trip, each
# control law set up as the udp transport sets it up (--cc udp-<law>, transport/udp/udp_congestion.h):
#   single   one flow of SINGLE_MB MiB, host 1 -> host 0;
#   incast   4-to-1, INCAST_MB MiB from each of hosts 1..4 to host 0.
# The simulator's flows start as the test bed's did (their offsets measured: processes and connections do not
# start at once). Completion time (the test bed: the sender's first send to its last acknowledged; the incast:
# the slowest flow's) and the peak of host 0's switch queue, side by side, with their ratio (target: within 15%),
# and that queue's mean while the flows ran (sampled every 200 us in both).
# The round trip the simulator gets is the test bed's, measured first (64-byte messages one at a time; their
# completion includes both hosts' software): the simulator's links get a quarter of it each (two hops, both
# ways). Its hosts are the test bed's software hosts: their links to the switch unshaped (UPLINK_GBPS), their
# pacing timers as late on average as the senders' summaries say the test bed's were in that run ("late us"),
# and the transport's retransmission timer. Its switch is the test bed's, a process: it stalls as often and as
# long on average as the test bed's switch measured its own stalls in that run ("stalls/s", "stall us").
#   bench/udp_vs_sim.sh [BUILD_DIR]   (root; ~2 min; env: RATE=500mbit BUFFER=1000000 LAWS="swift hybrid dcqcn"
#                                     SINGLE_MB=32 INCAST_MB=8 UPLINK_GBPS=10 SWITCH_STALLS=1, 0: a
#                                     simulated switch that never stalls)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
UPLINK_GBPS=${UPLINK_GBPS:-10} RATE=${RATE:-500mbit} BUFFER=${BUFFER:-1000000} LAWS=${LAWS:-swift hybrid dcqcn} SINGLE_MB=${SINGLE_MB:-32} INCAST_MB=${INCAST_MB:-8}
SWITCH_STALLS=${SWITCH_STALLS:-1}
KMIN=40000 KMAX=160000  # the switch's defaults at this rate
[ "$(id -u)" = 0 ] || { echo "SKIPPED: the emulated hosts need root"; exit 77; }
source testbed/emulated_cluster.sh
EMU_SWITCH_BIN=$build/testbed/ecn_switch/megascale-ecn-switch
flow_bench=$build/testbed/flow_bench/megascale-flow-bench
sim=$build/sim/megascale-sim
tmp=$(mktemp -d)
trap 'cluster_down; rm -rf "$tmp"' EXIT
rate_mbps=$(($(rate_bits "$RATE") / 1000000))
export MEGASCALE_TRANSPORT=udp MEGASCALE_UDP_LINE_MBPS=$rate_mbps
cluster_up 5
SAMPLE_US=200
switch_up 0 "$RATE" --buffer "$BUFFER" --kmin "$KMIN" --kmax "$KMAX" --queue-log "$tmp/queue.csv" --sample-us "$SAMPLE_US"
# The payload the transport puts in a 9000-byte frame: IP and UDP headers (28) and its own (56) come off.
payload=$((EMU_MTU - 28 - 56))

# transfer LAW MESSAGES MESSAGE_BYTES SENDERS...: each sender host sends MESSAGES messages to host 0; prints the
# slowest sender's completion time (ms) and host 0's queue peak during the run (bytes); $tmp/flows gets the
# same flows as the simulator reads them ("src dst bytes start_us", each sender's start after the first's).
transfer() {
  local law=$1 messages=$2 size=$3 i pids=() from handle
  shift 3
  handle=$(mktemp -u "$tmp/handle.XXXXXX")
  from=$(wc -l < "$tmp/queue.csv")
  on_host 0 env MEGASCALE_UDP_CC="$law" timeout 120 "$flow_bench" receive --bind "$(host_addr 0)" --handle "$handle" \
    --flows $# --message "$size" --depth 1 --timeout-s 100 > /dev/null &
  local receiver=$!
  for i in "$@"; do
    on_host "$i" env MEGASCALE_UDP_CC="$law" MEGASCALE_DEBUG=2 timeout 120 "$flow_bench" send --bind "$(host_addr "$i")" \
      --handle "$handle" --flow "$i" --message "$size" --messages "$messages" --depth 4 --timeout-s 100 \
      > "$tmp/sender$i" 2> "$tmp/sender$i.log" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
  wait "$receiver"
  sleep 0.01
  cat "${@/#/$tmp/sender}" | awk '{ for (i = 1; i < NF; i++) if ($i == "fct_ms") print $(i + 1) }' |
    sort -n > "$tmp/bed_fcts"
  local fct
  fct=$(tail -n 1 "$tmp/bed_fcts")  # the slowest sender's
  cat "${@/#/$tmp/sender}" | awk -v bytes="$((messages * size))" '{ for (i = 1; i < NF; i++) if ($i == "started_us") s[$2] = $(i + 1) }
    END { for (f in s) if (first == "" || s[f] < first) first = s[f]; for (f in s) print f, 0, bytes, s[f] - first }' > "$tmp/flows"
  # How late the senders' pacing timers fired, on average (their connection summaries, MEGASCALE_DEBUG=2).
  local late
  late=$(cat $(printf "$tmp/sender%s.log " "$@") |
    awk '/packets sent/ && / late/ { for (i = 1; i < NF; i++) if ($(i + 1) == "packets" && $i > 100) { s += $(NF - 2); n++ } }
         END { printf "%.1f", n ? s / n : 0 }')
  local port_lines="$tmp/port_lines" port_samples="$tmp/port_samples"
  tail -n +"$((from + 1))" "$tmp/queue.csv" | awk -F, -v port="$(switch_port 0 0)" '$2 == port' > "$port_lines"
  awk -F, '{ print $3, $4 }' "$port_lines" > "$port_samples"
  # The switch process's stalls that host 0's port saw during the run: how many a second of running (as the
  # simulator counts them), how long on average.
  local stalls
  stalls=$(awk -F, 'NR == 1 { t0 = $1; n0 = $8; us0 = $9 } { t = $1; n = $8; us = $9 }
    END { n -= n0; us -= us0; running = t - t0 - us / 1e6
          printf "%.1f %.0f", (running > 0 ? n / running : 0), (n > 0 ? us / n : 0) }' "$port_lines")
  local peak mean
  peak=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$port_samples")
  mean=$(cut -d' ' -f1 "$port_samples" | busy_mean)
  echo "$fct $peak $late $mean $stalls"
}
# busy_mean: the mean of the queue samples on stdin (one a line) from the first non-empty one to the last: the
# queue while the flows ran, a steadier figure than its peak.
busy_mean() {
  awk '{ v[NR] = $1; if ($1 > 0) { if (!first) first = NR; last = NR } }
       END { for (i = first; first && i <= last; i++) s += v[i]; printf "%.0f\n", first ? s / (last - first + 1) : 0 }'
}

# The round trip: 64-byte messages one at a time, each done once acknowledged.
read -r ping_ms _ < <(transfer swift 2000 64 1)
rtt_us=$(awk -v t="$ping_ms" 'BEGIN { printf "%.0f", t * 1000 / 2000 }')
delay_us=$(awk -v r="$rtt_us" 'BEGIN { printf "%.1f", r / 4 }')
echo "# udp against megascale-sim: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(date -u +%F)"
echo "# link $RATE, buffer $BUFFER B, ECN K_min $KMIN / K_max $KMAX B, $payload-byte packets; round trip $rtt_us us (simulator: $delay_us us per link)"
echo "# the simulator's hosts: uplinks at $UPLINK_GBPS Gbit/s (the veths are not shaped), pacing timers as late as" \
  "the test bed's were;"
[ "$SWITCH_STALLS" = 0 ] && switch_model="never stalls" || switch_model="stalls as often and as long as the test bed's did"
echo "# its switch: $switch_model"
printf "\n%-8s %-7s %8s %9s %9s %12s %12s %6s %11s %11s %6s %11s %11s %6s\n" scenario law "late us" "stalls/s" "stall us" \
  "test bed ms" "simulator ms" \
  ratio "bed peak B" "sim peak B" ratio "bed mean B" "sim mean B" ratio

simulate() {  # simulate LAW HOSTS LATE_US STALLS_PER_S STALL_US: the flows of $tmp/flows; prints the simulator's
  # max FCT (ms), peak queue and busy mean queue (bytes; sampled as the test bed's switch samples)
  local stalls=()
  if [ "$4" != 0.0 ] && [ "$5" != 0 ] && [ "$SWITCH_STALLS" != 0 ]; then
    stalls=(--switch-stalls-per-s "$4" --switch-stall-us "$5")
  fi
  "$sim" --topology star --hosts "$2" --rate-gbps "$(awk -v m="$rate_mbps" 'BEGIN { print m / 1000 }')" \
    --uplink-gbps "$UPLINK_GBPS" --wake-lateness-us "$3" "${stalls[@]}" \
    --delay-us "$delay_us" --mtu-bytes "$payload" --buffer-bytes "$BUFFER" --kmin-bytes "$KMIN" --kmax-bytes "$KMAX" \
    --workload "file:$tmp/flows" --cc "udp-$1" --end-ms 60000 --queues "$tmp/simq" --queue-interval-us "$SAMPLE_US" \
    --csv "$tmp/sim_flows.csv" |
    awk '$1 ~ /^udp-/ { printf "%.2f %d ", $6 / 1000, $7 }'
  tail -n +2 "$tmp/simq-udp-$1.csv" | cut -d, -f2 | busy_mean
}
sim_flow_times() { tail -n +2 "$tmp/sim_flows.csv" | cut -d, -f6 | awk '{ print $1 / 1000 }' | sort -n | ms_list; }
ms_list() { awk '{ printf "%s%.0f", (NR > 1 ? ", " : ""), $1 }'; }  # numbers on stdin, one a line: "a, b, c"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf (b > 0 ? "%.2f" : "n/a"), (b > 0 ? a / b : 0) }'; }
for law in $LAWS; do
  for scenario in single incast; do
    if [ "$scenario" = single ]; then
      hosts=2
      read -r bed_ms bed_queue late_us bed_mean stalls_per_s stall_us < <(transfer "$law" "$SINGLE_MB" 1048576 1)
    else
      hosts=5
      read -r bed_ms bed_queue late_us bed_mean stalls_per_s stall_us < <(transfer "$law" "$INCAST_MB" 1048576 1 2 3 4)
    fi
    read -r sim_ms sim_queue sim_mean < <(simulate "$law" "$hosts" "$late_us" "$stalls_per_s" "$stall_us")
    printf "%-8s %-7s %8s %9s %9s %12s %12s %6s %11s %11s %6s %11s %11s %6s\n" "$scenario" "$law" "$late_us" \
      "$stalls_per_s" "$stall_us" "$bed_ms" "$sim_ms" \
      "$(ratio "$bed_ms" "$sim_ms")" "$bed_queue" "$sim_queue" "$(ratio "$bed_queue" "$sim_queue")" \
      "$bed_mean" "$sim_mean" "$(ratio "$bed_mean" "$sim_mean")"
    if [ "$scenario" = incast ]; then
      echo "#   its senders started at $(sort -n -k4 "$tmp/flows" | awk '{ printf "%s%d", (NR > 1 ? ", " : ""), $4 }') us;" \
        "each flow's time, test bed: $(ms_list < "$tmp/bed_fcts") ms," \
        "simulator: $(sim_flow_times) ms"
    fi
    if [ "$SWITCH_STALLS" != 0 ]; then  # the simulator before it modelled the switch's stalls, for comparison
      read -r still_ms still_queue still_mean < <(simulate "$law" "$hosts" "$late_us" 0.0 0)
      echo "#   a simulated switch that never stalls: $still_ms ms ($(ratio "$bed_ms" "$still_ms")), peak $still_queue B" \
        "($(ratio "$bed_queue" "$still_queue")), mean $still_mean B ($(ratio "$bed_mean" "$still_mean"))$(
        [ "$scenario" = incast ] && echo "; each flow's time: $(sim_flow_times) ms")"
    fi
  done
done
