# Emulated hosts for benchmarks and tests on one machine (source this file; needs root and iproute2):
# H network namespaces, each with one veth "NIC" into a bridge in the root namespace (the switch), addresses
# 10.214.0.(i+1)/24, and `tc tbf` on each host's egress for the link rate. Traffic stays inside the
# namespaces and the bridge; nothing touches the machine's outward interface.
#   hosts_up H          make hosts 0..H-1 (removes them again on exit: hosts_down runs from an EXIT trap)
#   hosts_rate RATE     limit every host's egress (tc syntax, "500mbit"), or "none"
#   on_host I CMD...    run CMD inside host I
#   host_addr I         host I's address
#   hosts_down          remove hosts and bridge

EMU_TAG=${EMU_TAG:-ms$$}
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
  trap hosts_down EXIT
  ip link add "${EMU_TAG}br" type bridge
  ip link set "${EMU_TAG}br" up
  for ((i = 0; i < count; i++)); do
    EMU_HOSTS=$((i + 1))
    ip netns add "${EMU_TAG}h$i"
    ip link add "${EMU_TAG}v$i" type veth peer name "${EMU_TAG}p$i"
    ip link set "${EMU_TAG}v$i" netns "${EMU_TAG}h$i"
    ip link set "${EMU_TAG}p$i" master "${EMU_TAG}br" up
    ip -n "${EMU_TAG}h$i" addr add "$(host_addr "$i")/24" dev "${EMU_TAG}v$i"
    ip -n "${EMU_TAG}h$i" link set "${EMU_TAG}v$i" up
    ip -n "${EMU_TAG}h$i" link set lo up
  done
}

hosts_rate() {
  local rate=$1 i
  for ((i = 0; i < EMU_HOSTS; i++)); do
    if [ "$rate" = none ]; then
      on_host "$i" tc qdisc del dev "${EMU_TAG}v$i" root 2>/dev/null || true
    else
      on_host "$i" tc qdisc replace dev "${EMU_TAG}v$i" root tbf rate "$rate" burst 256kb latency 100ms
    fi
  done
}
