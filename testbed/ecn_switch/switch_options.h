// megascale-ecn-switch's command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "testbed/ecn_switch/egress_queue.h"

namespace megascale::testbed {

struct SwitchOptions {
  std::string name;                 // the test bed's tag: names the process for whoever tears it down
  std::vector<std::string> ports;   // interfaces, one per host
  EgressConfig egress;              // every port's
  std::string queue_log;            // CSV of every port's queue over time ("" = none)
  int64_t sample_ns = 1'000'000;    // the log's interval
  std::string ready_file;           // created once every port is open
};

/// Parses argv; throws std::invalid_argument with the offending flag and a usage line.
SwitchOptions parseSwitchOptions(int argc, char** argv);

/// "1gbit", "500mbit", "100kbit" or plain bit/s; throws std::invalid_argument.
double parseRate(const std::string& text);
/// "64KB", "1MB", "1500" (bytes; KB and MB are 1000s, as tc writes them); throws std::invalid_argument.
uint64_t parseBytes(const std::string& text);

}  // namespace megascale::testbed
