#include "sim/queue_monitor.h"

#include <algorithm>
#include <stdexcept>

#include "common/plot.h"

namespace megascale::sim {

QueueMonitor::QueueMonitor(Network& net, std::vector<const Port*> ports, Picoseconds interval)
    : net_(net), ports_(std::move(ports)), interval_(interval), peak_(ports_.size(), 0) {
  if (interval <= 0) throw std::invalid_argument("queue monitor: the sampling interval must be positive");
  net_.events().schedule(net_.events().now(), this, 0);
}

void QueueMonitor::onEvent(int, uint64_t) {
  times_.push_back(net_.events().now());
  sample_begin_.push_back(non_empty_.size());
  for (size_t i = 0; i < ports_.size(); ++i) {
    const uint64_t bytes = ports_[i]->dataQueueBytes();
    if (bytes == 0) continue;
    non_empty_.push_back({static_cast<uint32_t>(i), bytes});
    peak_[i] = std::max(peak_[i], bytes);
  }
  net_.events().schedule(net_.events().now() + interval_, this, 0);
}

std::vector<size_t> QueueMonitor::busiest(size_t k) const {
  std::vector<size_t> order;
  for (size_t i = 0; i < ports_.size(); ++i) {
    if (peak_[i] > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return peak_[a] > peak_[b]; });
  if (order.size() > k) order.resize(k);
  return order;
}

std::vector<uint64_t> QueueMonitor::series(size_t port) const {
  std::vector<uint64_t> bytes(times_.size(), 0);
  for (size_t s = 0; s < times_.size(); ++s) {
    const size_t end = s + 1 < sample_begin_.size() ? sample_begin_[s + 1] : non_empty_.size();
    for (size_t j = sample_begin_[s]; j < end; ++j) {
      if (non_empty_[j].first == port) bytes[s] = non_empty_[j].second;
    }
  }
  return bytes;
}

void QueueMonitor::writeCsv(std::ostream& out, const std::vector<size_t>& chosen) const {
  std::vector<std::vector<uint64_t>> columns;
  out << "time_us";
  for (size_t port : chosen) {
    out << ',' << ports_.at(port)->name();
    columns.push_back(series(port));
  }
  out << '\n';
  for (size_t s = 0; s < times_.size(); ++s) {
    out << static_cast<double>(times_[s]) / kMicrosecond;
    for (const auto& column : columns) out << ',' << column[s];
    out << '\n';
  }
}

void QueueMonitor::writePng(const std::string& path, const std::vector<size_t>& chosen) const {
  plot::LineChart chart{"Queue length of the busiest switch ports", {"time (us)", false, false},
                        {"data queued (kB)", false, true}, {}};
  for (size_t port : chosen) {
    const std::vector<uint64_t> bytes = series(port);
    plot::Series line{ports_.at(port)->name(), {}, {}};
    for (size_t s = 0; s < times_.size(); ++s) {
      line.x.push_back(static_cast<double>(times_[s]) / kMicrosecond);
      line.y.push_back(static_cast<double>(bytes[s]) / 1000);
    }
    chart.series.push_back(std::move(line));
  }
  plot::writeLineChart(path, chart);
}

}  // namespace megascale::sim
