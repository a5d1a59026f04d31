// The diagnosis: from the flight records of a job's ranks (collectives/flight_dump.h), one verdict that names
// the culprit, its host, its group and how long the others have waited, then the detail. Pure: records in,
// verdict out (tests/launcher/diagnosis_test.cc feeds it made-up records).
//
// - A mismatch (the program's bug): ranks of one group that called the same sequence number with different
//   collectives, sizes, types, operators or roots. The ranks that differ from the most are named.
// - A hang: every rank stuck in an operation waits for the members of its group that never entered it (or for
//   the peer its run names). Following those waits from rank to rank ends at the culprits: a rank that is
//   stopped or dead, or one that is outside any collective while others wait for it.
#pragma once

#include <string>
#include <vector>

#include "collectives/flight_dump.h"

namespace megascale::launcher {

struct Diagnosis {
  enum class Kind { kNothing, kMismatch, kHang };
  Kind kind = Kind::kNothing;
  std::vector<int> culprits;        // world ranks, lowest first
  std::string verdict;              // one line: "rank 5 (host h2, tp 1 pp 0 dp 2) never entered ..."
  std::vector<std::string> detail;  // one line per rank that waits, and what each culprit was doing
};

Diagnosis diagnose(const std::vector<flight::RankRecord>& records);

}  // namespace megascale::launcher
