"""The emulated cluster (emulated_cluster.sh) from Python, for tests and benchmarks: hosts as network namespaces,
one NIC per rail, a bridge per rail as its switch. Every method runs the shell library, so Python, C++ and shell
build the same cluster. Needs root and iproute2."""
import os
import subprocess

_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "emulated_cluster.sh")


class EmulatedCluster:
    def __init__(self, tag, hosts, rails=1):
        self.tag, self.hosts, self.rails = tag, hosts, rails

    def shell(self, commands):
        """Runs the library's functions on this cluster; True when they succeed."""
        script = (f"EMU_TAG={self.tag} EMU_PERSIST=1; source {_SCRIPT}; EMU_HOSTS={self.hosts} "
                  f"EMU_RAILS={self.rails}; {commands}")
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True).returncode == 0

    def up(self, rate=None):
        """Makes the hosts (and limits every NIC to `rate`, tc syntax, when given)."""
        return self.shell(f"cluster_up {self.hosts} {self.rails}") and (rate is None or self.shell(f"hosts_rate {rate}"))

    def down(self):
        return self.shell("cluster_down")

    def name(self, i):
        return f"{self.tag}h{i}"

    def address(self, i, rail=0):
        return f"10.{214 + rail}.0.{i + 1}"

    def link_down(self, i, rail=0):
        """Host i's cable on `rail` pulled: nothing passes either way, and no one is told."""
        return self.shell(f"link_down {i} {rail}")

    def link_up(self, i, rail=0):
        return self.shell(f"link_up {i} {rail}")

    def on(self, i, argv):
        """argv run inside host i, with MEGASCALE_HOST_NAME set to its name."""
        return ["ip", "netns", "exec", self.name(i), "env", f"MEGASCALE_HOST_NAME={self.name(i)}"] + list(argv)


def unavailable_reason():
    """'' when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "the emulated cluster needs root for ip netns"
    if subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "iproute2's ip netns is not usable"
    return ""
