// Per-rank areas in one memfd that an executor (megascale-run) makes and the ranks it starts inherit: the
// executor reads every rank's area at any time, even of a rank that is stopped or already dead, and the rank
// writes its own with plain stores (no system call). Heartbeat slots and flight records are two such tables.
#pragma once

#include <cstddef>
#include <string>

namespace megascale {

class SharedTable {
 public:
  /// `count` zeroed areas of `area_bytes` each; `name` names the memfd (/proc/<pid>/fd). Throws Error(kSystem)
  /// naming the failing call.
  SharedTable(const char* name, int count, size_t area_bytes);
  ~SharedTable();
  SharedTable(const SharedTable&) = delete;
  SharedTable& operator=(const SharedTable&) = delete;

  int count() const { return count_; }
  size_t areaBytes() const { return area_bytes_; }
  char* area(int index) { return base_ + static_cast<size_t>(index) * area_bytes_; }
  const char* area(int index) const { return base_ + static_cast<size_t>(index) * area_bytes_; }
  /// The environment value that hands area `index` to the rank started next: "fd:index".
  std::string environmentValue(int index) const;
  /// Zeroes every area (before a restart's ranks start).
  void clear();

 private:
  int count_;
  size_t area_bytes_;
  int fd_ = -1;
  char* base_ = nullptr;
};

/// The rank's side: maps the area the environment variable `variable` names ("fd:index", set by the executor)
/// and closes the descriptor (the rank's own children need not inherit it). Null, with a warning naming the
/// variable, when it is set but names no table of at least `area_bytes` per area; null without one when unset.
char* mapSharedArea(const char* variable, size_t area_bytes);

}  // namespace megascale
