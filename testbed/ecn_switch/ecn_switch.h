// The emulated switch between the test bed's hosts: a learning switch (frames go to the port their destination
// address was last seen on, broadcasts and unknown destinations to every other port) whose output ports are
// EgressQueues at the link rate. It stands in for the ECN-marking qdiscs this kernel lacks (red, codel, pie),
// so that every control law meets a real queue that marks, and the queue is recorded over time.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <unordered_map>
#include <vector>

#include "testbed/ecn_switch/egress_queue.h"
#include "testbed/ecn_switch/packet_port.h"
#include "testbed/ecn_switch/switch_options.h"

namespace megascale::testbed {

class EcnSwitch {
 public:
  /// Opens every port (throws std::runtime_error naming the one that fails) and the queue log.
  explicit EcnSwitch(const SwitchOptions& options);
  ~EcnSwitch();
  EcnSwitch(const EcnSwitch&) = delete;
  EcnSwitch& operator=(const EcnSwitch&) = delete;

  /// Forwards until `stop` is set; throws when a port fails (its interface was deleted).
  void run(const std::atomic<bool>& stop);
  /// A wake-up that sends a frame later than its wire time by more than this ends a stall of the process (a
  /// timer fires tens of microseconds late; a descheduled process runs again milliseconds later).
  static constexpr int64_t kStallNs = 200'000;

  /// One line per port: frames, bytes, marks, drops, peak queue, frames lost at the socket or the cable, the
  /// stalls the port saw and their length in all.
  void printSummary(std::FILE* out);

 private:
  struct Port {
    std::unique_ptr<PacketPort> socket;
    EgressQueue queue;
    uint64_t send_failures = 0;
    // The stalls this port saw: a stall ends at a wake-up of the process that sends a frame later than its wire
    // time by more than a timer's lateness (kStallNs), lasts as long as that frame was late, and holds the wake-ups
    // after it that are still that late (they catch up on its backlog). What the simulator's switch stalls stand
    // for (sim/process_stalls.h).
    int64_t wake_lateness_ns = 0;  // this wake-up's latest frame so far
    int64_t stall_ns = 0;          // the stall being caught up on (0: none)
    uint64_t stalls = 0;
    int64_t stalled_ns = 0;
  };
  void receive(const std::vector<size_t>& readable_ports, int64_t now_ns);
  void forward(Frame frame, size_t in, int64_t now_ns);
  /// Sends the frames due by `due_ns` (a replayed arrival's time, or now), at `real_ns`, the clock's time now.
  void transmitDue(int64_t due_ns, int64_t real_ns);
  void sample(int64_t now_ns);
  /// Before the process waits again: what this wake-up sent late ends a stall.
  void countStalls();

  std::vector<Port> ports_;
  std::unordered_map<uint64_t, size_t> port_of_address_;  // learned from source addresses
  std::FILE* log_ = nullptr;
  int64_t sample_ns_;
  int64_t start_ns_ = 0, next_sample_ns_ = 0;
};

}  // namespace megascale::testbed
