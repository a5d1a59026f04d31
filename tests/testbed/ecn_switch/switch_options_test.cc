// megascale-ecn-switch's command line: units, defaults that suit jumbo frames, and refusals that say why.
#include "testbed/ecn_switch/switch_options.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace megascale::testbed {
namespace {

SwitchOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "megascale-ecn-switch");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parseSwitchOptions(static_cast<int>(argv.size()), argv.data());
}

TEST(SwitchOptions, ParsesRatesSizesAndPorts) {
  const SwitchOptions o = parse({"--name", "t1", "--rate", "500mbit", "--port", "a", "--port", "b", "--kmin", "20KB",
                                 "--kmax", "1MB", "--pmax", "0.1", "--buffer", "2MB", "--queue-log", "q.csv"});
  EXPECT_EQ(o.ports, (std::vector<std::string>{"a", "b"}));
  EXPECT_DOUBLE_EQ(o.egress.rate_bps, 500e6);
  EXPECT_EQ(o.egress.ecn.k_min_bytes, 20'000u);
  EXPECT_EQ(o.egress.ecn.k_max_bytes, 1'000'000u);
  EXPECT_DOUBLE_EQ(o.egress.ecn.p_max, 0.1);
  EXPECT_EQ(o.egress.buffer_bytes, 2'000'000u);
  EXPECT_EQ(o.queue_log, "q.csv");
  EXPECT_DOUBLE_EQ(parseRate("1gbit"), 1e9);
  EXPECT_EQ(parseBytes("1500"), 1500u);
}

TEST(SwitchOptions, DefaultThresholdsHoldSeveralJumboFrames) {
  const SwitchOptions slow = parse({"--rate", "1gbit", "--port", "a", "--port", "b"});
  EXPECT_EQ(slow.egress.ecn.k_min_bytes, 40'000u);
  EXPECT_EQ(slow.egress.ecn.k_max_bytes, 160'000u);
  const SwitchOptions fast = parse({"--rate", "100gbit", "--port", "a", "--port", "b"});
  EXPECT_EQ(fast.egress.ecn.k_min_bytes, 400'000u) << "the simulator's own setting at 100G";
  EXPECT_EQ(fast.egress.ecn.k_max_bytes, 1'600'000u);
}

TEST(SwitchOptions, RefusesWhatItCannotRun) {
  EXPECT_THROW(parse({"--rate", "1gbit", "--port", "a"}), std::invalid_argument) << "one port switches nothing";
  EXPECT_THROW(parse({"--rate", "fast", "--port", "a", "--port", "b"}), std::invalid_argument);
  EXPECT_THROW(parse({"--rate", "1tbit", "--port", "a", "--port", "b"}), std::invalid_argument);
  EXPECT_THROW(parse({"--rate", "1gbit", "--port", "a", "--port", "b", "--kmin", "2MB", "--kmax", "1MB"}),
               std::invalid_argument);
  EXPECT_THROW(parse({"--rate", "1gbit", "--port", "a", "--port", "b", "--buffer", "-5"}), std::invalid_argument);
  EXPECT_THROW(parse({"--rate", "1gbit", "--port", "a", "--port", "b", "--colour", "red"}), std::invalid_argument);
  EXPECT_THROW(parse({"--rate"}), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::testbed
