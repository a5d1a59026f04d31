#!/usr/bin/env bash
# An emulated cluster on this machine for trying multi-host jobs (root): hosts as network namespaces, a NIC
# per rail in each, a bridge per rail as that rail's ToR switch, optionally a link rate (testbed/emulated_cluster.sh).
#   scripts/emulated_cluster.sh up HOSTS [RAILS [RATE]]   e.g. up 4 2 10gbit
#   scripts/emulated_cluster.sh down
#   scripts/emulated_cluster.sh status
# EMU_TAG (default "msc") prefixes every name, so several clusters can coexist. `up` writes the cluster's
# topology.conf to /run/megascale/$EMU_TAG.topology.conf and prints how to start a job on it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export EMU_TAG=${EMU_TAG:-msc} EMU_PERSIST=1
state=/run/megascale
source "$here/testbed/emulated_cluster.sh"

usage() { sed -n '3,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

up() {
  local hosts=${1:-} rails=${2:-1} rate=${3:-none} i r
  [ -n "$hosts" ] || usage
  if ip netns list | awk '{print $1}' | grep -q "^${EMU_TAG}h"; then
    echo "emulated cluster $EMU_TAG is already up (scripts/emulated_cluster.sh down first)" >&2; exit 1
  fi
  cluster_up "$hosts" "$rails" || { status=$?; cluster_down; exit "$status"; }
  [ "$rate" = none ] || hosts_rate "$rate" || { cluster_down; exit 2; }
  mkdir -p "$state"
  write_topology "$state/$EMU_TAG.topology.conf"
  echo "emulated cluster $EMU_TAG: $hosts hosts x $rails rails, link rate $rate"
  for ((i = 0; i < hosts; i++)); do
    printf '  host %s:' "$(host_name "$i")"
    for ((r = 0; r < rails; r++)); do printf ' rail%d %s' "$r" "$(host_addr "$i" "$r")"; done
    echo
  done
  cat <<USAGE
topology: $state/$EMU_TAG.topology.conf
run a job (one megascale-run per host, a store on host 0):
  export MEGASCALE_JOB_SECRET=\$(openssl rand -hex 16)
  ip netns exec $(host_name 0) build/launcher/megascale-store --host $(host_addr 0) --port 29400 &
  for i in \$(seq 0 $((hosts - 1))); do
    ip netns exec ${EMU_TAG}h\$i env MEGASCALE_HOST_NAME=${EMU_TAG}h\$i build/launcher/megascale-run \\
      --store tcp://$(host_addr 0):29400 --job-id demo --world-size $((hosts * 2)) --rank-offset \$((2 * i)) -n 2 \\
      --topology $state/$EMU_TAG.topology.conf --print-topology &
  done; wait
USAGE
}

status() {
  local found=0 name
  for name in $(ip netns list | awk '{print $1}' | grep "^${EMU_TAG}h" | sort -V); do
    found=1
    echo "$name: $(ip -n "$name" -o -4 addr show | awk '$2 != "lo" {printf "%s %s  ", $2, $4}')"
  done
  [ "$found" = 1 ] || echo "emulated cluster $EMU_TAG is down"
}

case ${1:-} in
  up) shift; up "$@" ;;
  down) cluster_remove "$EMU_TAG"; rm -f "$state/$EMU_TAG.topology.conf"; echo "emulated cluster $EMU_TAG removed" ;;
  status) status ;;
  *) usage ;;
esac
