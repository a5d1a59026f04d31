#include "topology/rails.h"

#include <gtest/gtest.h>

namespace megascale::topology {
namespace {

TEST(Rails, OrderedByPciFunctionThenName) {
  std::vector<NetInterface> nics(3);
  nics[0].name = "rail1";
  nics[1].name = "ens2";
  nics[1].pci_path = "/sys/devices/pci0000:00/0000:00:05.0";
  nics[2].name = "ens1";
  nics[2].pci_path = "/sys/devices/pci0000:00/0000:00:04.0";
  sortIntoRails(nics);
  EXPECT_EQ(nics[0].name, "rail1");  // no PCI path sorts first, then by name
  EXPECT_EQ(nics[1].name, "ens1");
  EXPECT_EQ(nics[2].name, "ens2");
}

TEST(Rails, AHostWithoutSeveralDataNicsHasNone) {
  EXPECT_TRUE(railInterfaces("lo").empty());  // loopback is never a rail
  EXPECT_EQ(railAddress(0, "lo"), "");
  EXPECT_EQ(railAddress(-1, ""), "");  // local rank unknown
}

}  // namespace
}  // namespace megascale::topology
