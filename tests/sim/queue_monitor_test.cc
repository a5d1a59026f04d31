// Queue lengths over time: the monitor sees the incast queue build and drain, ranks ports by their peak, and
// writes what it saw as CSV and PNG.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>

#include "congestion/line_rate.h"
#include "sim/queue_monitor.h"
#include "sim/topology.h"

namespace megascale::sim {
namespace {

TEST(QueueMonitor, FollowsAnIncastQueueUpAndDown) {
  Network net;
  buildStar(net, 4, LinkSpec{});  // the switch is node 0; its port 0 leads to host 0
  for (int src = 1; src < 4; ++src) net.addFlow(src, 0, 1'000'000, 0, [] { return std::make_unique<congestion::LineRate>(100e9); });
  std::vector<const Port*> ports;
  for (const Port* p : net.switchPorts()) ports.push_back(p);
  QueueMonitor monitor(net, ports, 1 * kMicrosecond);
  ASSERT_TRUE(net.run(1 * kSecond));

  const std::vector<size_t> busiest = monitor.busiest(8);
  ASSERT_EQ(busiest.size(), 1u);  // only the port to the receiver ever queues data
  EXPECT_EQ(busiest[0], 0u);
  // Three senders at line rate into one link: the queue grows by two packets per packet time and peaks when the
  // senders finish (1 MB each, two thirds of it queued): within a sample interval of the port's own maximum.
  const uint64_t peak = monitor.peakBytes(0), exact = ports[0]->stats.max_queue_bytes;
  EXPECT_LE(peak, exact);
  EXPECT_GE(static_cast<double>(peak), static_cast<double>(exact) - 2 * 100e9 / 8 * 1e-6);
  EXPECT_NEAR(static_cast<double>(exact), 2.0e6 * 4160 / 4096, 20e3);

  std::ostringstream csv;
  monitor.writeCsv(csv, busiest);
  std::istringstream lines(csv.str());
  std::string header, first, row, last;
  std::getline(lines, header);
  std::getline(lines, first);
  size_t rows = 1;
  uint64_t seen_max = 0;
  while (std::getline(lines, row)) {
    ++rows;
    last = row;
    seen_max = std::max<uint64_t>(seen_max, std::stoull(row.substr(row.find(',') + 1)));
  }
  EXPECT_EQ(header, "time_us,n0.p0");
  EXPECT_EQ(first, "0,0");
  EXPECT_EQ(rows, monitor.samples());
  EXPECT_EQ(seen_max, peak);
  EXPECT_GT(std::stod(last.substr(0, last.find(','))), 200.0);  // 3 MB through 100G: ~250 us of samples

  const std::string png = "/tmp/megascale_queue_monitor_" + std::to_string(getpid()) + ".png";
  monitor.writePng(png, busiest);
  EXPECT_EQ(access(png.c_str(), R_OK), 0);
  unlink(png.c_str());
  EXPECT_THROW(QueueMonitor(net, ports, 0), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::sim
