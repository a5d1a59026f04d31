// megascale-ecn-switch: the test bed's ECN-marking switch (testbed/emulated_cluster.sh's switch_up starts it).
// Runs until SIGTERM or SIGINT, then prints one summary line per port; exits 2 on bad arguments, 1 when a port
// cannot be opened or fails (its interface deleted: the test bed is gone).
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>

#include "testbed/ecn_switch/ecn_switch.h"

namespace {
std::atomic<bool> g_stop{false};
void requestStop(int) { g_stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  megascale::testbed::SwitchOptions options;
  try {
    options = megascale::testbed::parseSwitchOptions(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "megascale-ecn-switch: %s\n", e.what());
    return 2;
  }
  struct sigaction action{};
  action.sa_handler = requestStop;  // no SA_RESTART: ppoll returns at once
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  try {
    megascale::testbed::EcnSwitch the_switch(options);
    if (!options.ready_file.empty()) std::ofstream(options.ready_file) << "ready\n";
    int status = 0;
    try {
      the_switch.run(g_stop);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "megascale-ecn-switch %s: %s\n", options.name.c_str(), e.what());
      status = 1;
    }
    the_switch.printSummary(stdout);
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "megascale-ecn-switch %s: %s\n", options.name.c_str(), e.what());
    return 1;
  }
}
