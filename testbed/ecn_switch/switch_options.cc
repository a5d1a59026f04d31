#include "testbed/ecn_switch/switch_options.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace megascale::testbed {
namespace {

constexpr const char* kUsage =
    "usage: megascale-ecn-switch --name TAG --rate RATE --port IF [--port IF ...] [--kmin BYTES] [--kmax BYTES] "
    "[--pmax P] [--no-ecn] [--buffer BYTES] [--seed N] [--queue-log FILE] [--sample-us US] [--ready FILE]";

// The number at the front of `text` and what follows it; throws unless it is a non-negative number.
double leadingNumber(const std::string& text, std::string* unit) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || !(value >= 0)) throw std::invalid_argument("'" + text + "' is not a number");
  *unit = text.substr(used);
  return value;
}

}  // namespace

double parseRate(const std::string& text) {
  std::string unit;
  const double number = leadingNumber(text, &unit);
  const double scale = unit.empty() || unit == "bit" ? 1 : unit == "kbit" ? 1e3 : unit == "mbit" ? 1e6 : unit == "gbit" ? 1e9 : 0;
  if (scale == 0 || number == 0) throw std::invalid_argument("rate '" + text + "' (use e.g. 500mbit, 1gbit)");
  return number * scale;
}

uint64_t parseBytes(const std::string& text) {
  std::string unit;
  const double number = leadingNumber(text, &unit);
  const double scale = unit.empty() || unit == "B" ? 1 : unit == "KB" ? 1e3 : unit == "MB" ? 1e6 : 0;
  if (scale == 0) throw std::invalid_argument("size '" + text + "' (use e.g. 1500, 64KB, 1MB)");
  return static_cast<uint64_t>(number * scale);
}

SwitchOptions parseSwitchOptions(int argc, char** argv) {
  SwitchOptions options;
  bool rate_set = false, kmin_set = false, kmax_set = false, pmax_set = false;
  double pmax = 0;
  uint64_t kmin = 0, kmax = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--no-ecn") {
      options.egress.marks_ecn = false;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value; " + kUsage);
    const std::string value = argv[++i];
    if (flag == "--name") options.name = value;
    else if (flag == "--port") options.ports.push_back(value);
    else if (flag == "--rate") options.egress.rate_bps = parseRate(value), rate_set = true;
    else if (flag == "--kmin") kmin = parseBytes(value), kmin_set = true;
    else if (flag == "--kmax") kmax = parseBytes(value), kmax_set = true;
    else if (flag == "--pmax") pmax = std::stod(value), pmax_set = true;
    else if (flag == "--buffer") options.egress.buffer_bytes = parseBytes(value);
    else if (flag == "--seed") options.egress.seed = std::stoull(value);
    else if (flag == "--queue-log") options.queue_log = value;
    else if (flag == "--sample-us") options.sample_ns = static_cast<int64_t>(parseBytes(value)) * 1000;
    else if (flag == "--ready") options.ready_file = value;
    else throw std::invalid_argument("unknown flag " + flag + "; " + kUsage);
  }
  if (!rate_set || options.ports.size() < 2) throw std::invalid_argument(std::string("a rate and two ports at least; ") + kUsage);
  // The simulator's thresholds scaled to the rate, but never below a few jumbo frames: at 1 Gbit/s the scaled
  // K_min (4 KB) is less than one 9000-byte frame, and every frame queued behind another would be marked.
  congestion::EcnThresholds& ecn = options.egress.ecn;
  ecn = congestion::EcnThresholds::scaledTo(options.egress.rate_bps);
  ecn.k_min_bytes = kmin_set ? kmin : std::max<uint64_t>(ecn.k_min_bytes, 40'000);
  ecn.k_max_bytes = kmax_set ? kmax : std::max<uint64_t>(ecn.k_max_bytes, 4 * ecn.k_min_bytes);
  if (pmax_set) ecn.p_max = pmax;
  if (ecn.k_max_bytes <= ecn.k_min_bytes || ecn.p_max < 0 || ecn.p_max > 1 || options.sample_ns <= 0) {
    throw std::invalid_argument("need kmin < kmax, 0 <= pmax <= 1 and a positive sample interval");
  }
  return options;
}

}  // namespace megascale::testbed
