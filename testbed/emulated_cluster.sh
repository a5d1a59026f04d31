# The emulated cluster for tests, benchmarks and users on one machine (source this file; needs root and
# iproute2). H hosts are network namespaces; each host has R rails, one veth "NIC" per rail (named rail0,
# rail1, ... inside the host), and rail r's NICs meet in a bridge of their own in the root namespace: the ToR
# switch of that rail, as MegaScale cables servers (a NIC per rail, a ToR per rail). Rail r's addresses are
# 10.(214+r).0.(i+1)/24. Every egress has a tc shaper for the link rate. Traffic stays in the namespaces and
# bridges; nothing touches the machine's outward interface.
#   cluster_up H [R]     make hosts 0..H-1 with R rails (default 1); unless EMU_PERSIST=1, they are removed
#                        again when the shell exits (cluster_down runs from an EXIT trap)
#   hosts_up H           cluster_up H 1
#   hosts_rate RATE      limit every NIC's egress ("500mbit"; kbit, mbit or gbit), or "none"; each link has two
#                        priority queues, as a datacenter switch port has: IP precedence 4-7 (DSCP >= 32) first;
#                        a message takes its size / rate on the wire even after an idle gap (within
#                        EMU_LINK_SLACK_US). Set it before the connections start (TCP sizes packets then)
#   link_down I [RAIL]   pull host I's cable on RAIL (default 0): nothing passes and no one is told
#   link_up I [RAIL]     plug it back in
#   on_host I CMD...     run CMD inside host I, with MEGASCALE_HOST_NAME set to the host's name
#   host_name I          host I's name (its namespace)
#   host_addr I [RAIL]   host I's address on RAIL (default 0)
#   write_topology FILE  the cluster's switches in Slurm topology.conf syntax (megascale-run --topology FILE)
#   switch_up RAIL RATE [ARGS...]
#                        replace RAIL's bridge with the emulated ECN-marking switch (testbed/ecn_switch,
#                        $EMU_SWITCH_BIN): every output port sends at RATE through a queue that marks CE (RED,
#                        --kmin/--kmax/--pmax) and drops at its tail (--buffer); --queue-log FILE records each
#                        port's queue, and the stalls of the switch process it saw, every --sample-us. ARGS
#                        go to megascale-ecn-switch. The hosts' NICs on the rail send plain frames (no
#                        segmentation or checksum offload), as a real NIC's wire does
#   switch_down RAIL     stop RAIL's switch (its per-port summary goes to $EMU_SWITCH_OUT.RAIL) and give the
#                        rail its bridge back
#   link_loss I RAIL PERCENT
#                        drop PERCENT (0.01 steps; 0 removes it) of the frames host I sends on RAIL, at
#                        random (nftables numgen at the device's egress: packet sockets' frames too)
#   cluster_down         stop every process inside the hosts, remove hosts and bridges
#   cluster_remove TAG   remove every namespace and bridge whose name starts with TAG (a cluster left behind)

EMU_TAG=${EMU_TAG:-ms$$}
# Jumbo frames, as datacenter links run them: the emulated path's per-packet kernel work runs on the cores that
# also compute (a NIC does it on a real host); at 1500 bytes it slowed a 200 Mbit/s pipeline run's compute by 25%.
EMU_MTU=${EMU_MTU:-9000}
EMU_HOSTS=0
EMU_RAILS=1
EMU_MAX_HOSTS=250
EMU_MAX_RAILS=8

host_name() { echo "${EMU_TAG}h$1"; }
host_addr() { echo "10.$((214 + ${2:-0})).0.$(($1 + 1))"; }
on_host() { local i=$1; shift; ip netns exec "$(host_name "$i")" env MEGASCALE_HOST_NAME="$(host_name "$i")" "$@"; }
# The root-namespace end of host I's cable on RAIL, and the switch (bridge) of RAIL.
switch_port() { echo "${EMU_TAG}p$1r${2:-0}"; }
rail_switch() { echo "${EMU_TAG}r$1"; }

cluster_remove() {
  local tag=$1 name
  [ -n "$tag" ] || return 0
  # A switch's ports are about to go; it would exit on its own once they do, but not before it has to.
  pkill -TERM -f "^[^ ]*megascale-ecn-switch --name $tag " 2>/dev/null || true
  # The switch ports first: a namespace goes away asynchronously, and its cables' root ends with it, so a
  # cluster made again at once under the same tag found them still there ("File exists"). Deleting one end
  # of a veth deletes both, at once.
  for name in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    [[ $name == "$tag"p* ]] && { ip link del "$name" 2>/dev/null || true; }
  done
  for name in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    # A process left inside would live on in the orphaned namespace (and hold its caller's pipes open).
    # Each step may fail (the process already gone) without stopping the rest under a caller's set -e.
    [[ $name == "$tag"h* ]] && { ip netns pids "$name" 2>/dev/null | xargs -r kill -9 2>/dev/null || true; ip netns del "$name" 2>/dev/null || true; }
  done
  for name in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}'); do
    [[ $name == "$tag"r* ]] && { ip link del "$name" 2>/dev/null || true; }
  done
  for name in $(nft list tables netdev 2>/dev/null | awk '{print $3}'); do
    [[ $name == "$tag"loss* ]] && { nft delete table netdev "$name" 2>/dev/null || true; }
  done
  return 0
}

cluster_down() {
  cluster_remove "$EMU_TAG"
  EMU_HOSTS=0
}
hosts_down() { cluster_down; }

cluster_up() {
  local count=$1 rails=${2:-1} i r
  if [ "$(id -u)" != 0 ]; then echo "emulated cluster: needs root (ip netns)" >&2; return 77; fi
  if ! [[ $count =~ ^[0-9]+$ ]] || ((count < 1 || count > EMU_MAX_HOSTS)); then
    echo "emulated cluster: hosts must be 1-$EMU_MAX_HOSTS, got '$count'" >&2; return 2
  fi
  if ! [[ $rails =~ ^[0-9]+$ ]] || ((rails < 1 || rails > EMU_MAX_RAILS)); then
    echo "emulated cluster: rails must be 1-$EMU_MAX_RAILS, got '$rails'" >&2; return 2
  fi
  if [ "${EMU_PERSIST:-0}" != 1 ]; then
    [ -n "$(trap -p EXIT)" ] || trap cluster_down EXIT  # a caller's EXIT trap already calls cluster_down
    trap 'cluster_down; exit 130' INT
    trap 'cluster_down; exit 143' TERM
  fi
  EMU_RAILS=$rails
  for ((r = 0; r < rails; r++)); do
    ip link add "$(rail_switch "$r")" type bridge || return
    ip link set "$(rail_switch "$r")" mtu "$EMU_MTU" up
  done
  for ((i = 0; i < count; i++)); do
    EMU_HOSTS=$((i + 1))
    ip netns add "$(host_name "$i")" || return
    for ((r = 0; r < rails; r++)); do
      ip link add "rail$r" netns "$(host_name "$i")" type veth peer name "$(switch_port "$i" "$r")" || return
      ip link set "$(switch_port "$i" "$r")" mtu "$EMU_MTU" master "$(rail_switch "$r")" up
      ip -n "$(host_name "$i")" addr add "$(host_addr "$i" "$r")/24" dev "rail$r"
      ip -n "$(host_name "$i")" link set "rail$r" mtu "$EMU_MTU" up
      # A NIC cuts a UDP GSO message into frames before the wire; a veth would carry it whole to the bridge, where
      # the loss rules and the switch would see one 64 KB "frame". (Without ethtool, only UDP GSO differs.)
      { command -v ethtool > /dev/null && on_host "$i" ethtool -K "rail$r" tx-udp-segmentation off > /dev/null 2>&1; } || true
    done
    ip -n "$(host_name "$i")" link set lo up
    # A training step's transfers come in bursts with idle gaps; restarting slow start after each gap (the
    # kernel's default) makes a transfer's time depend on the gap before it. Clusters tuned for this turn it off.
    ip netns exec "$(host_name "$i")" sysctl -qw net.ipv4.tcp_slow_start_after_idle=0
  done
}
hosts_up() { cluster_up "$1" 1; }

link_down() { ip -n "$(host_name "$1")" link set "rail${2:-0}" down; }
link_up() { ip -n "$(host_name "$1")" link set "rail${2:-0}" up; }

write_topology() {
  local file=$1 r last=$((EMU_HOSTS - 1))
  {
    echo "# emulated cluster $EMU_TAG: $EMU_HOSTS hosts, $EMU_RAILS rails, a switch per rail"
    for ((r = 0; r < EMU_RAILS; r++)); do
      echo "SwitchName=$(rail_switch "$r") Nodes=${EMU_TAG}h[0-$last]"
    done
  } > "$file"
}

# rate_bits RATE: RATE ("500mbit"; kbit, mbit or gbit) in bit/s.
rate_bits() {
  local rate=$1 number unit
  number=${rate%%[a-z]*} unit=${rate#"$number"}
  case $unit in kbit) echo $((number * 1000)) ;; mbit) echo $((number * 1000000)) ;;
                gbit) echo $((number * 1000000000)) ;; *) echo "emulated cluster: rate '$rate' (use kbit, mbit, gbit)" >&2; return 2 ;; esac
}

# A link delivers a message's last byte size/rate after its first. The shaper (HTB) sends a packet at once
# while it holds tokens and pays for it afterwards, so whatever leaves in one go after an idle gap (the bucket
# plus one packet) crosses at memory speed: with 64 KB GSO packets a 64 KB message arrived in 0.26 ms on a
# 70 Mbit/s link that needs 7.5 ms. Both are kept to about EMU_LINK_SLACK_US of the rate (default 250 us):
# the bucket, and the packets TCP builds (gso_max_size, at least one MTU, at most the 64 KiB default).
EMU_LINK_SLACK_US=${EMU_LINK_SLACK_US:-250}
EMU_GSO_MAX=65536  # a veth's own gso_max_size, what an unshaped link keeps
# half_slack BITS_PER_S: bytes of half the slack at that rate (the bucket gets one half, a packet the other)
half_slack() { echo $(($1 / 8 * EMU_LINK_SLACK_US / 2000000)); }
#   rate_burst BITS_PER_S (bytes; at least 2000, HTB's smallest sensible bucket)
rate_burst() {
  local bytes
  bytes=$(half_slack "$1")
  echo $((bytes > 2000 ? bytes : 2000))
}
#   rate_packet BITS_PER_S (bytes)
rate_packet() {
  local bytes
  bytes=$(half_slack "$1")
  bytes=$((bytes > EMU_MTU ? bytes : EMU_MTU))
  echo $((bytes < EMU_GSO_MAX ? bytes : EMU_GSO_MAX))
}

# link_shape I RAIL RATE: host I's egress on RAIL at RATE with two priority queues, as a switch port has:
# traffic with IP precedence 4-7 (DSCP >= 32, the TOS byte's top bit) goes first, the rest shares what it
# leaves. Each queue holds 100 ms of the rate, or EMU_QUEUE_BYTES (a RoCE fabric runs lossless: PFC pauses the
# sender before a queue overflows; a queue deep enough for every window in flight stands in for it).
link_shape() {
  local i=$1 dev="rail$2" rate=$3 bits burst class
  bits=$(rate_bits "$rate") || return
  burst=$(rate_burst "$bits")
  on_host "$i" tc qdisc del dev "$dev" root 2>/dev/null || true
  # TCP sizes its packets when a connection starts: a rate set mid-connection keeps the old packets.
  ip -n "$(host_name "$i")" link set "$dev" gso_max_size "$(rate_packet "$bits")"
  on_host "$i" tc qdisc add dev "$dev" root handle 1: htb default 20
  on_host "$i" tc class add dev "$dev" parent 1: classid 1:1 htb rate "${bits}bit" ceil "${bits}bit" \
    burst "$burst" cburst "$burst" quantum 65536
  for class in 10 20; do
    # A queue's own guarantee is 1% of the link; it borrows the rest in priority order (1:10 first).
    on_host "$i" tc class add dev "$dev" parent 1:1 classid "1:$class" htb rate "$((bits / 100))bit" \
      ceil "${bits}bit" burst "$burst" cburst "$burst" prio "$((class / 10 - 1))" quantum 65536
    on_host "$i" tc qdisc add dev "$dev" parent "1:$class" bfifo limit "${EMU_QUEUE_BYTES:-$((bits / 8 / 10 > 131072 ? bits / 80 : 131072))}"
  done
  on_host "$i" tc filter add dev "$dev" parent 1: protocol ip prio 1 u32 match ip tos 0x80 0x80 flowid 1:10
}

hosts_rate() {
  local rate=$1 i r
  for ((i = 0; i < EMU_HOSTS; i++)); do
    for ((r = 0; r < EMU_RAILS; r++)); do
      if [ "$rate" = none ]; then
        on_host "$i" tc qdisc del dev "rail$r" root 2>/dev/null || true
        ip -n "$(host_name "$i")" link set "rail$r" gso_max_size "$EMU_GSO_MAX"
      else
        link_shape "$i" "$r" "$rate" || return
      fi
    done
  done
}

# switch_up RAIL RATE [ARGS...]: see the top of this file.
EMU_SWITCH_OUT=${EMU_SWITCH_OUT:-/tmp/${EMU_TAG}-switch}
switch_up() {
  local rail=$1 rate=$2 i port ports=() ready
  shift 2
  [ -x "${EMU_SWITCH_BIN:-}" ] || { echo "emulated cluster: EMU_SWITCH_BIN must name megascale-ecn-switch" >&2; return 2; }
  for ((i = 0; i < EMU_HOSTS; i++)); do
    port=$(switch_port "$i" "$rail")
    ip link set "$port" nomaster || return
    sysctl -qw "net.ipv6.conf.$port.disable_ipv6=1"
    # A packet socket sees what the host's NIC hands over: with offloads on, 64 KB segments and UDP checksums
    # left for hardware that is not there; off, each frame is one MTU and complete.
    on_host "$i" ethtool -K "rail$rail" tx off tso off gso off gro off >/dev/null 2>&1 || return
    ports+=(--port "$port")
  done
  ready="$EMU_SWITCH_OUT.$rail.ready"
  rm -f "$ready"
  "$EMU_SWITCH_BIN" --name "$EMU_TAG" --rate "$rate" "${ports[@]}" --ready "$ready" "$@" > "$EMU_SWITCH_OUT.$rail" &
  eval "EMU_SWITCH_PID_$rail=$!"
  for ((i = 0; i < 100; i++)); do
    [ -e "$ready" ] && { rm -f "$ready"; return 0; }
    kill -0 "$!" 2>/dev/null || break
    sleep 0.05
  done
  echo "emulated cluster: the switch of rail $rail did not start" >&2
  return 1
}

switch_down() {
  local rail=$1 pid i
  pid=$(eval echo "\${EMU_SWITCH_PID_$rail:-}")
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  eval "EMU_SWITCH_PID_$rail="
  for ((i = 0; i < EMU_HOSTS; i++)); do
    ip link set "$(switch_port "$i" "$rail")" master "$(rail_switch "$rail")" 2>/dev/null
  done
  return 0
}

# link_loss I RAIL PERCENT: see the top of this file. The drop happens where host I's frames leave the switch
# (or bridge) towards every other host: a host's own egress would not do, since a packet socket with a transmit
# ring (DPDK's af_packet device) takes a frame dropped there as back-pressure and sends it again.
link_loss() {
  local i=$1 rail=$2 percent=$3 table="${EMU_TAG}loss$1r$2" basis j devices=""
  basis=$(awk -v p="$percent" 'BEGIN { if (p !~ /^[0-9]*\.?[0-9]+$/ || p > 100) exit 1; printf "%d", p * 100 + 0.5 }') ||
    { echo "emulated cluster: loss must be a percentage, got '$percent'" >&2; return 2; }
  nft delete table netdev "$table" 2>/dev/null || true  # none yet
  ((basis > 0)) || return 0
  for ((j = 0; j < EMU_HOSTS; j++)); do ((j == i)) || devices+="${devices:+, }\"$(switch_port "$j" "$rail")\""; done
  [ -n "$devices" ] || return 0
  nft -f - <<NFT
table netdev $table {
  chain out {
    type filter hook egress devices = { $devices } priority 0; policy accept;
    ip saddr $(host_addr "$i" "$rail") numgen random mod 10000 < $basis counter drop
  }
}
NFT
}
