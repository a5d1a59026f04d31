#!/bin/sh
# Open MPI's rsh agent on emulated hosts (bench/multihost_compare.sh): "netns_rsh.sh [ssh options] HOST CMD..."
# runs CMD inside the network namespace HOST, under HOST as its host name (a UTS namespace of its own), so
# Open MPI sees separate nodes and never uses shared memory between them.
while [ "${1#-}" != "$1" ]; do
  case $1 in -o | -l | -p | -i) shift ;; esac
  shift
done
host=$1
shift
exec ip netns exec "$host" unshare --uts sh -c "hostname '$host' && exec $*"
