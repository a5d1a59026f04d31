// init() under the environments users get wrong: no interface matches MEGASCALE_NET_IF / NCCL_SOCKET_IFNAME, a
// transport that is not built, a malformed knob. Each runs in a fresh process (the probe), because a plugin
// initializes once per process; init must fail with a code and a logged reason, never crash.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace megascale {
namespace {

struct Probe {
  std::string output;  // stdout and stderr
  int status = -1;
};

Probe runProbe(const std::string& environment) {
  const std::string command = "env " + environment + " " MEGASCALE_HELPER_PATH " " MEGASCALE_NCCL_PLUGIN_PATH " 2>&1";
  Probe probe;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return probe;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) probe.output += buffer;
  probe.status = pclose(pipe);
  return probe;
}

TEST(PluginInit, SucceedsOnTheDefaultInterfaces) {
  Probe p = runProbe("-u MEGASCALE_NET_IF -u NCCL_SOCKET_IFNAME");
  EXPECT_EQ(p.status, 0) << p.output;
  EXPECT_NE(p.output.find("v11 init=0 devices="), std::string::npos) << p.output;
  EXPECT_EQ(p.output.find("devices=0"), std::string::npos) << p.output;
}

TEST(PluginInit, FailsCleanlyWhenNoInterfaceMatches) {
  for (const char* environment : {"MEGASCALE_NET_IF==no-such-nic", "-u MEGASCALE_NET_IF NCCL_SOCKET_IFNAME=nosuch"}) {
    Probe p = runProbe(environment);
    EXPECT_EQ(p.status, 0) << p.output;
    for (const char* version : {"v8", "v9", "v10", "v11"}) {
      EXPECT_NE(p.output.find(std::string(version) + " init=2 devices=-1"), std::string::npos) << p.output;
    }
    EXPECT_NE(p.output.find("no usable network interface"), std::string::npos) << p.output;
  }
}

TEST(PluginInit, MegascaleNetIfWinsOverNcclSocketIfname) {
  Probe p = runProbe("MEGASCALE_NET_IF==lo NCCL_SOCKET_IFNAME=nosuch");
  EXPECT_NE(p.output.find("v11 init=0 devices=1"), std::string::npos) << p.output;
}

TEST(PluginInit, TakesTheNetworkTransportOfTheOneKnob) {
  // ibverbs without an RDMA device (this machine): init fails and says what is missing, whether the build
  // lacks the transport or the host lacks the device.
  Probe verbs = runProbe("MEGASCALE_TRANSPORT=ibverbs");
  EXPECT_NE(verbs.output.find("v11 init=2"), std::string::npos) << verbs.output;
  EXPECT_TRUE(verbs.output.find("no ibverbs transport") != std::string::npos ||
              verbs.output.find("no RDMA device") != std::string::npos ||
              verbs.output.find("no device with an active port") != std::string::npos)
      << verbs.output;
  Probe unknown = runProbe("MEGASCALE_TRANSPORT=carrier-pigeon");
  EXPECT_NE(unknown.output.find("v11 init=4"), std::string::npos) << unknown.output;
  EXPECT_NE(unknown.output.find("expected auto or one of shm, ibverbs, ucx, tcp, udp"), std::string::npos) << unknown.output;
  Probe shm = runProbe("MEGASCALE_TRANSPORT=shm");  // a same-host transport cannot serve NCCL's network
  EXPECT_NE(shm.output.find("v11 init=4"), std::string::npos) << shm.output;
  EXPECT_NE(shm.output.find("reaches only this host"), std::string::npos) << shm.output;
  for (const char* ok : {"MEGASCALE_TRANSPORT=tcp", "MEGASCALE_TRANSPORT=auto"}) {
    Probe tcp = runProbe(ok);
    EXPECT_NE(tcp.output.find("v11 init=0"), std::string::npos) << ok << ": " << tcp.output;
  }
}

TEST(PluginInit, RefusesAMalformedKnob) {
  Probe p = runProbe("MEGASCALE_TCP_SOCKETS=0");
  EXPECT_NE(p.output.find("v11 init=4"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("MEGASCALE_TCP_SOCKETS"), std::string::npos) << p.output;
}

}  // namespace
}  // namespace megascale
