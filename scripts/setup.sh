#!/usr/bin/env bash
# Installs every Debian package megascale uses, and only what is missing. Idempotent:
# a second run installs nothing and does not touch the network.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libssl-dev                                # libcrypto: SHA-256, HMAC, random bytes for authentication
  libhiredis-dev redis-server
  openmpi-bin libopenmpi-dev libgloo-dev
  libpmix-dev                               # rendezvous through mpirun's PMIx server (no MASTER_ADDR)
  iproute2 procps python3
  nftables ethtool                          # the test bed's random loss (numgen) and a switch port's offloads
  libdpdk-dev                               # the udp transport's DPDK io (a module; the af_packet device)
  iperf3                                    # the link-rate baseline of bench/multihost_compare.sh
  libhwloc-dev                              # NIC locality (PCI function, NUMA node) for the NCCL net plugin
  libucx-dev ucx-utils                      # the ucx transport; ucx_perftest, its baseline
  libibverbs-dev ibverbs-utils perftest     # the ibverbs transport (headers; libibverbs is opened at run time);
                                            # ibv_devinfo and ib_*_bw, run against the emulated RoCE device
  libdnnl-dev libopenblas-dev libblis-dev   # GEMM libraries the trainer measures (opened at run time)
  python3-torch python3-numpy               # the trainer's numerics oracle and its PyTorch baseline
  libtorch-dev pybind11-dev python3-dev     # the torch.distributed backend (pytorch/)
  jargon-text                               # the main job's training text (public domain)
  libcairo2-dev zlib1g-dev                  # figures (loss curve, heat map, init-scale); gzip-compressed text
  nlohmann-json3-dev                        # flight records as JSON (the recorder's dumps, megascale-diagnose)
  slurm-wlm munge                           # a real Slurm on loopback for launcher.slurm (srun, sbatch, requeue)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -q
$sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
