# Emulated hosts for benchmarks and tests on one machine (source this file; needs root and iproute2):
# H network namespaces, each with one veth "NIC" into a bridge in the root namespace (the switch), addresses
# 10.214.0.(i+1)/24, and `tc tbf` on each host's egress for the link rate. Traffic stays inside the
# namespaces and the bridge; nothing touches the machine's outward interface.
#   hosts_up H          make hosts 0..H-1 (removes them again on exit: hosts_down runs from an EXIT trap)
#   hosts_rate RATE     limit every host's egress ("500mbit"; kbit, mbit or gbit), or "none"; the link has
#                       two priority queues, as a datacenter switch port has: IP precedence 4-7 (DSCP >= 32)
#                       is sent before the rest
#   on_host I CMD...    run CMD inside host I
#   host_addr I         host I's address
#   hosts_down          remove hosts and bridge

EMU_TAG=${EMU_TAG:-ms$$}
# Jumbo frames, as datacenter links run them: the emulated path's per-packet kernel work runs on the cores that
# also compute (a NIC does it on a real host); at 1500 bytes it slowed a 200 Mbit/s pipeline run's compute by 25%.
EMU_MTU=${EMU_MTU:-9000}
EMU_HOSTS=0

host_addr() { echo "10.214.0.$(($1 + 1))"; }
on_host() { local i=$1; shift; ip netns exec "${EMU_TAG}h$i" "$@"; }

hosts_down() {
  local i
  for ((i = 0; i < EMU_HOSTS; i++)); do ip netns del "${EMU_TAG}h$i" 2>/dev/null || true; done
  ip link del "${EMU_TAG}br" 2>/dev/null || true
  EMU_HOSTS=0
}

hosts_up() {
  local count=$1 i
  if [ "$(id -u)" != 0 ]; then echo "emulated hosts need root (ip netns)" >&2; return 77; fi
  [ -n "$(trap -p EXIT)" ] || trap hosts_down EXIT  # a caller's EXIT trap already calls hosts_down
  trap 'hosts_down; exit 130' INT
  trap 'hosts_down; exit 143' TERM
  ip link add "${EMU_TAG}br" type bridge
  ip link set "${EMU_TAG}br" mtu "$EMU_MTU" up
  for ((i = 0; i < count; i++)); do
    EMU_HOSTS=$((i + 1))
    ip netns add "${EMU_TAG}h$i"
    ip link add "${EMU_TAG}v$i" type veth peer name "${EMU_TAG}p$i"
    ip link set "${EMU_TAG}v$i" netns "${EMU_TAG}h$i"
    ip link set "${EMU_TAG}p$i" mtu "$EMU_MTU" master "${EMU_TAG}br" up
    ip -n "${EMU_TAG}h$i" addr add "$(host_addr "$i")/24" dev "${EMU_TAG}v$i"
    ip -n "${EMU_TAG}h$i" link set "${EMU_TAG}v$i" mtu "$EMU_MTU" up
    ip -n "${EMU_TAG}h$i" link set lo up
    # A training step's transfers come in bursts with idle gaps; restarting slow start after each gap (the
    # kernel's default) makes a transfer's time depend on the gap before it. Clusters tuned for this turn it off.
    ip netns exec "${EMU_TAG}h$i" sysctl -qw net.ipv4.tcp_slow_start_after_idle=0
  done
}

# rate_bits RATE: RATE ("500mbit"; kbit, mbit or gbit) in bit/s.
rate_bits() {
  local rate=$1 number unit
  number=${rate%%[a-z]*} unit=${rate#"$number"}
  case $unit in kbit) echo $((number * 1000)) ;; mbit) echo $((number * 1000000)) ;;
                gbit) echo $((number * 1000000000)) ;; *) echo "emulated hosts: rate '$rate' (use kbit, mbit, gbit)" >&2; return 2 ;; esac
}

# The token bucket holds 1 ms of the rate (at least 64 KiB, one GSO segment): a larger bucket lets a whole
# message through at memory speed and the link looks faster than its rate.
#   rate_burst BITS_PER_S
rate_burst() {
  local bytes=$(($1 / 8 / 1000))
  echo $((bytes > 65536 ? bytes : 65536))
}

# link_shape I RATE: host I's egress at RATE with two priority queues, as a switch port has: traffic with
# IP precedence 4-7 (DSCP >= 32, the TOS byte's top bit) goes first, the rest shares what it leaves. Each
# queue holds 100 ms of the rate.
link_shape() {
  local i=$1 rate=$2 dev="${EMU_TAG}v$1" bits burst class
  bits=$(rate_bits "$rate") || return
  burst=$(rate_burst "$bits")
  on_host "$i" tc qdisc del dev "$dev" root 2>/dev/null || true
  on_host "$i" tc qdisc add dev "$dev" root handle 1: htb default 20
  on_host "$i" tc class add dev "$dev" parent 1: classid 1:1 htb rate "${bits}bit" ceil "${bits}bit" \
    burst "$burst" cburst "$burst" quantum 65536
  for class in 10 20; do
    # A queue's own guarantee is 1% of the link; it borrows the rest in priority order (1:10 first).
    on_host "$i" tc class add dev "$dev" parent 1:1 classid "1:$class" htb rate "$((bits / 100))bit" \
      ceil "${bits}bit" burst "$burst" cburst "$burst" prio "$((class / 10 - 1))" quantum 65536
    on_host "$i" tc qdisc add dev "$dev" parent "1:$class" bfifo limit "$((bits / 8 / 10 > 131072 ? bits / 80 : 131072))"
  done
  on_host "$i" tc filter add dev "$dev" parent 1: protocol ip prio 1 u32 match ip tos 0x80 0x80 flowid 1:10
}

hosts_rate() {
  local rate=$1 i
  for ((i = 0; i < EMU_HOSTS; i++)); do
    if [ "$rate" = none ]; then
      on_host "$i" tc qdisc del dev "${EMU_TAG}v$i" root 2>/dev/null || true
    else
      link_shape "$i" "$rate"
    fi
  done
}
