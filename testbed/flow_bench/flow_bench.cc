// megascale-flow-bench: bulk flows over one network transport between emulated hosts, for the namespace tests
// and the congestion and loss measurements of bench/udp_testbed.sh: goodput per flow, its longest stall, Jain
// fairness over fixed windows, and every byte checked. One receiver accepts N flows; each sender streams messages for a time, then an end marker.
//   megascale-flow-bench receive --bind ADDR --handle FILE --flows N [--message BYTES] [--depth D]
//                                [--window-ms MS] [--windows CSV] [--timeout-s S]
//   megascale-flow-bench send --bind ADDR --handle FILE --flow ID (--seconds S | --messages N)
//                             [--message BYTES] [--depth D] [--timeout-s S]
// A sender of --messages prints its completion time: from its first send to the last one done (every packet
// acknowledged, for udp), as a simulator's flow completion time.
// The transport is MEGASCALE_TRANSPORT's network transport with the MEGASCALE_* knobs in effect.
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/crypto.h"
#include "transport/net_transport.h"
#include "transport/registry.h"

namespace megascale::testbed {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kEndMarker = 0x656e642d6f662d66;  // "end-of-f": a sender's last message, 8 bytes
constexpr size_t kSmallestMessage = 64;

struct Args {
  std::string role, bind, handle, windows_csv;
  int flows = 1, flow = 0, depth = 4;
  uint64_t messages = 0;  // send: this many, then stop (0: for --seconds)
  size_t message = 1 << 20;
  double seconds = 5, window_ms = 1000, timeout_s = 120;
};

Args parseArgs(int argc, char** argv) {
  if (argc < 2) throw std::invalid_argument("usage: megascale-flow-bench receive|send --bind ADDR --handle FILE ...");
  Args a;
  a.role = argv[1];
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string v = argv[i + 1];
    if (flag == "--bind") a.bind = v;
    else if (flag == "--handle") a.handle = v;
    else if (flag == "--windows") a.windows_csv = v;
    else if (flag == "--flows") a.flows = std::stoi(v);
    else if (flag == "--flow") a.flow = std::stoi(v);
    else if (flag == "--depth") a.depth = std::stoi(v);
    else if (flag == "--message") a.message = std::stoull(v);
    else if (flag == "--seconds") a.seconds = std::stod(v);
    else if (flag == "--messages") a.messages = std::stoull(v);
    else if (flag == "--window-ms") a.window_ms = std::stod(v);
    else if (flag == "--timeout-s") a.timeout_s = std::stod(v);
    else throw std::invalid_argument("unknown flag " + flag);
  }
  if ((a.role != "receive" && a.role != "send") || a.bind.empty() || a.handle.empty() || a.flows < 1 || a.depth < 1 ||
      a.message < kSmallestMessage || a.seconds <= 0 || a.window_ms <= 0 || a.timeout_s <= 0) {
    throw std::invalid_argument("need receive|send, --bind, --handle, flows and depth >= 1, a message of 64 bytes at least");
  }
  return a;
}

void check(const Status& s, const std::string& what) {
  if (!s.isOk()) throw std::runtime_error(what + ": " + s.message());
}

// Word j of message k of flow f: wrong, stale or misplaced bytes all differ from it.
uint64_t patternBase(int flow, uint64_t message) {
  uint64_t x = (static_cast<uint64_t>(flow) << 40) ^ (message * 0x100000001b3ULL) ^ 0x9e3779b97f4a7c15ULL;
  x ^= x >> 31;
  return x * 0xbf58476d1ce4e5b9ULL;
}
void fillMessage(std::vector<uint64_t>& words, int flow, uint64_t message) {
  const uint64_t base = patternBase(flow, message);
  for (size_t j = 0; j < words.size(); ++j) words[j] = base + j * 0x9e3779b97f4a7c15ULL;
}
// The first word that differs, or -1.
long firstWrongWord(const std::vector<uint64_t>& words, int flow, uint64_t message) {
  const uint64_t base = patternBase(flow, message);
  for (size_t j = 0; j < words.size(); ++j) {
    if (words[j] != base + j * 0x9e3779b97f4a7c15ULL) return static_cast<long>(j);
  }
  return -1;
}

std::unique_ptr<transport::Transport> makeTransport(const Args& a, const std::string& secret, std::string* name) {
  transport::TransportOptions options = transport::transportOptionsFromConfig();
  options.bind_address = a.bind;
  options.secret = secret;
  *name = transport::networkTransport(config::getString("MEGASCALE_TRANSPORT"));
  return transport::createTransport(*name, options);
}

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Sleeps in poll() on what the comms offer (or 1 ms when they offer nothing), at most `timeout_ms`.
void waitForProgress(std::vector<pollfd>& fds, int timeout_ms) {
  if (fds.empty()) {
    poll(nullptr, 0, 1);
  } else {
    poll(fds.data(), fds.size(), timeout_ms);
  }
  fds.clear();
}

struct FlowStats {
  int id = -1;
  uint64_t bytes = 0, messages = 0;
  double first_s = -1, last_s = 0;
  double longest_gap_s = 0;  // between two messages completing: how long the flow stalled at worst
  bool ended = false;
  std::vector<uint64_t> window_bytes;
};

struct Receive {
  std::vector<uint64_t> words;
  transport::Request* request = nullptr;
};

int receive(const Args& a) {
  uint8_t random[16];
  randomBytes(random, sizeof(random));
  const std::string secret = toHex(random, sizeof(random));
  std::string name;
  auto transport = makeTransport(a, secret, &name);
  auto listener = transport->listen();
  {
    std::ofstream out(a.handle + ".tmp");
    out << secret << ' ' << toHex(listener->address().bytes, listener->address().size) << '\n';
  }
  std::rename((a.handle + ".tmp").c_str(), a.handle.c_str());
  const Clock::time_point start = Clock::now();
  std::vector<std::unique_ptr<transport::RecvComm>> comms;
  std::vector<std::deque<Receive>> posted(static_cast<size_t>(a.flows));
  std::vector<FlowStats> flows(static_cast<size_t>(a.flows));
  const size_t words = a.message / 8;
  const uint32_t tag = 0;
  auto post = [&](size_t i) {
    Receive r;
    r.words.resize(words);
    void* data = r.words.data();
    const size_t capacity = words * 8;
    const transport::MemoryRegion* none[1] = {nullptr};
    check(comms[i]->irecv(1, &data, &capacity, &tag, none, &r.request), "flow " + std::to_string(flows[i].id) + ": irecv");
    if (r.request == nullptr) throw std::runtime_error("irecv: no request slot with " + std::to_string(a.depth) + " posted");
    posted[i].push_back(std::move(r));
  };
  std::vector<pollfd> fds;
  size_t ended = 0;
  while (ended < flows.size()) {
    if (secondsSince(start) > a.timeout_s) {
      throw std::runtime_error("receiver: " + std::to_string(ended) + " of " + std::to_string(flows.size()) +
                               " flows ended within --timeout-s " + std::to_string(a.timeout_s));
    }
    bool progressed = false;
    if (comms.size() < flows.size()) {
      std::unique_ptr<transport::RecvComm> comm;
      check(listener->accept(&comm), "accept");
      if (comm != nullptr) {
        const size_t i = comms.size();
        flows[i].id = static_cast<int>(comm->remoteId());
        comms.push_back(std::move(comm));
        for (int d = 0; d < a.depth; ++d) post(i);
        progressed = true;
      } else {
        listener->appendReadiness(fds);
      }
    }
    for (size_t i = 0; i < comms.size(); ++i) {
      FlowStats& f = flows[i];
      while (!f.ended && !posted[i].empty()) {
        Receive& r = posted[i].front();
        bool done = false;
        size_t size = 0;
        check(comms[i]->test(r.request, &done, &size), "flow " + std::to_string(f.id) + ": test receive");
        if (!done) break;
        progressed = true;
        const double now = secondsSince(start);
        if (size == 8 && r.words[0] == kEndMarker) {
          f.ended = true;
          ++ended;
          break;
        }
        if (size != words * 8) throw std::runtime_error("flow " + std::to_string(f.id) + ": message " +
                                                       std::to_string(f.messages) + " has " + std::to_string(size) + " bytes");
        const long wrong = firstWrongWord(r.words, f.id, f.messages);
        if (wrong >= 0) {
          throw std::runtime_error("flow " + std::to_string(f.id) + ": message " + std::to_string(f.messages) +
                                   " differs at byte " + std::to_string(wrong * 8));
        }
        if (f.first_s < 0) f.first_s = now;
        if (f.messages > 0) f.longest_gap_s = std::max(f.longest_gap_s, now - f.last_s);
        f.last_s = now;
        f.bytes += size;
        ++f.messages;
        const size_t window = static_cast<size_t>(now * 1000 / a.window_ms);
        if (f.window_bytes.size() <= window) f.window_bytes.resize(window + 1);
        f.window_bytes[window] += size;
        posted[i].pop_front();
        post(i);
      }
      if (!f.ended) comms[i]->appendReadiness(fds);
    }
    if (!progressed) waitForProgress(fds, 20);
    fds.clear();
  }
  // Goodput per flow from its first message to its last; fairness over the windows every flow spans fully.
  uint64_t total = 0;
  double first = 1e300, last = 0, shared_from = 0, shared_to = 1e300;
  std::sort(flows.begin(), flows.end(), [](const FlowStats& x, const FlowStats& y) { return x.id < y.id; });
  for (const FlowStats& f : flows) {
    // From the end of its first message to the end of its last: the first message's bytes arrived before.
    const double span = std::max(f.last_s - f.first_s, 1e-9);
    std::printf("flow %d bytes %llu seconds %.3f goodput_mbit %.1f longest_stall_ms %.1f\n", f.id,
                static_cast<unsigned long long>(f.bytes), span,
                static_cast<double>(f.bytes - std::min<uint64_t>(f.bytes, a.message)) * 8 / span / 1e6,
                f.longest_gap_s * 1000);
    total += f.bytes;
    first = std::min(first, f.first_s), last = std::max(last, f.last_s);
    shared_from = std::max(shared_from, f.first_s), shared_to = std::min(shared_to, f.last_s);
  }
  const double window_s = a.window_ms / 1000;
  const size_t from = static_cast<size_t>(shared_from / window_s) + 1, to = static_cast<size_t>(shared_to / window_s);
  double jain_min = 1, jain_sum = 0;
  int jain_windows = 0;
  std::FILE* csv = a.windows_csv.empty() ? nullptr : std::fopen(a.windows_csv.c_str(), "w");
  if (csv != nullptr) std::fprintf(csv, "window_start_s,flow,mbit\n");
  for (size_t w = from; w < to; ++w) {
    double sum = 0, squares = 0;
    for (const FlowStats& f : flows) {
      const double mbit = w < f.window_bytes.size() ? static_cast<double>(f.window_bytes[w]) * 8 / window_s / 1e6 : 0;
      sum += mbit, squares += mbit * mbit;
      if (csv != nullptr) std::fprintf(csv, "%.3f,%d,%.2f\n", static_cast<double>(w) * window_s, f.id, mbit);
    }
    const double jain = squares > 0 ? sum * sum / (static_cast<double>(flows.size()) * squares) : 0;
    jain_min = std::min(jain_min, jain), jain_sum += jain, ++jain_windows;
  }
  if (csv != nullptr) std::fclose(csv);
  // Every flow's first message may have been under way before the first of them completed.
  const double span = std::max(last - first, 1e-9);
  std::printf("total transport %s flows %zu bytes %llu seconds %.3f goodput_mbit %.1f errors 0\n", name.c_str(),
              flows.size(), static_cast<unsigned long long>(total), span,
              static_cast<double>(total - std::min<uint64_t>(total, a.message * flows.size())) * 8 / span / 1e6);
  std::printf("jain windows %d min %.3f mean %.3f\n", jain_windows, jain_windows ? jain_min : 0,
              jain_windows ? jain_sum / jain_windows : 0);
  return 0;
}

int send(const Args& a) {
  std::string secret, address_hex;
  const Clock::time_point start = Clock::now();
  while (true) {
    std::ifstream in(a.handle);
    if (in >> secret >> address_hex) break;
    if (secondsSince(start) > a.timeout_s) throw std::runtime_error("no receiver's handle at " + a.handle);
    poll(nullptr, 0, 10);
  }
  std::string name;
  auto transport = makeTransport(a, secret, &name);
  std::string address_bytes;
  if (!fromHex(address_hex, &address_bytes) || address_bytes.size() > sizeof(transport::Address::bytes)) {
    throw std::runtime_error("the handle at " + a.handle + " holds no address");
  }
  transport::Address address;
  address.size = address_bytes.size();
  std::memcpy(address.bytes, address_bytes.data(), address_bytes.size());
  auto connector = transport->connect(address, static_cast<uint64_t>(a.flow));
  std::unique_ptr<transport::SendComm> comm;
  std::vector<pollfd> fds;
  while (comm == nullptr) {
    check(connector->poll(&comm), "flow " + std::to_string(a.flow) + ": connect");
    if (secondsSince(start) > a.timeout_s) throw std::runtime_error("flow " + std::to_string(a.flow) + ": connect timed out");
    if (comm == nullptr && !connector->appendReadiness(fds)) fds.clear();
    if (comm == nullptr) waitForProgress(fds, 20);
  }
  struct Send {
    std::vector<uint64_t> words;
    transport::Request* request = nullptr;
  };
  std::deque<Send> in_flight;
  uint64_t messages = 0, bytes = 0;
  const Clock::time_point sending = Clock::now();
  timespec started{};  // the wall clock, comparable across the hosts of one machine (a simulator's flow start)
  clock_gettime(CLOCK_REALTIME, &started);
  bool marker_sent = false;
  double data_done_s = 0;  // when the last data message's send completed
  while (true) {
    const bool sending_data = a.messages > 0 ? messages < a.messages : secondsSince(sending) < a.seconds;
    while (static_cast<int>(in_flight.size()) < a.depth && (sending_data || !marker_sent)) {
      Send s;
      s.words.resize(sending_data ? a.message / 8 : 1);
      if (sending_data) fillMessage(s.words, a.flow, messages);
      else s.words[0] = kEndMarker;
      check(comm->isend(s.words.data(), s.words.size() * 8, 0, nullptr, &s.request), "flow " + std::to_string(a.flow) + ": isend");
      if (s.request == nullptr) break;
      if (sending_data) ++messages, bytes += s.words.size() * 8;
      else marker_sent = true;
      in_flight.push_back(std::move(s));
    }
    bool progressed = false;
    while (!in_flight.empty()) {
      bool done = false;
      size_t size = 0;
      check(comm->test(in_flight.front().request, &done, &size), "flow " + std::to_string(a.flow) + ": test send");
      if (!done) break;
      if (in_flight.front().words.size() > 1) data_done_s = secondsSince(sending);
      in_flight.pop_front();
      progressed = true;
    }
    if (marker_sent && in_flight.empty()) break;
    if (secondsSince(sending) > (a.messages > 0 ? 0 : a.seconds) + a.timeout_s) throw std::runtime_error("flow " + std::to_string(a.flow) + ": sends did not finish within --timeout-s");
    if (!progressed) {
      comm->appendReadiness(fds);
      waitForProgress(fds, 20);
    }
  }
  const double span = secondsSince(sending);
  std::printf("flow %d sent %llu bytes in %.3f s: %.1f Mbit/s fct_ms %.2f started_us %lld\n", a.flow,
              static_cast<unsigned long long>(bytes), span, static_cast<double>(bytes) * 8 / span / 1e6, data_done_s * 1000,
              static_cast<long long>(started.tv_sec) * 1'000'000 + started.tv_nsec / 1000);
  return 0;
}

}  // namespace
}  // namespace megascale::testbed

int main(int argc, char** argv) {
  megascale::testbed::Args args;
  try {
    args = megascale::testbed::parseArgs(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "megascale-flow-bench: %s\n", e.what());
    return 2;
  }
  try {
    return args.role == "receive" ? megascale::testbed::receive(args) : megascale::testbed::send(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "megascale-flow-bench %s: %s\n", args.role.c_str(), e.what());
    return 1;
  }
}
