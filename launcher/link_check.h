// The driver's link check across hosts: after a fault, with --self-check, every executor of the next run sends
// a probe of known bytes to the next one in slot order (the ring its checkpoint replicas travel,
// launcher/checkpoint_replicas.h), and the driver judges the results here. Pure logic, unit-tested
// (tests/launcher/link_check_test.cc).
#pragma once

#include <vector>

namespace megascale::launcher {

struct LinkProbe {
  int from = -1;  // executors
  int to = -1;
  bool ok = false;  // arrived, exact, in time
  double gbps = 0;
};

struct LinkVerdict {
  double median_gbps = 0;         // of the links that passed
  std::vector<LinkProbe> slow;    // passed, below the fraction of the median: flagged, not evicted
  std::vector<LinkProbe> failed;  // did not arrive, or arrived wrong
  std::vector<int> evict;         // executors whose links failed both ways, to and from two other hosts
};

/// A host is evicted on links only when it is unambiguous: its link out and its link in both failed, and they go
/// to different hosts (a ring of three or more). One failed link, or both of a pair, could be either end's, and
/// the transport reports it again if it matters.
LinkVerdict judgeLinks(const std::vector<LinkProbe>& probes, double slow_fraction);

}  // namespace megascale::launcher
