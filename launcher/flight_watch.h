// The executor's side of the flight recorder: a table with one recorder area per rank it starts
// (collectives/flight_record.h), read at any moment, even from a rank that is stopped or already dead, and the
// job's diagnosis directory, where the ranks' own dumps and the driver's go.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "collectives/flight_dump.h"
#include "common/shared_table.h"
#include "launcher/fault_detector.h"

namespace megascale::launcher {

/// ${TMPDIR:-/tmp}/megascale-jobs: where jobs' flight records and status go unless told otherwise.
std::string diagnosisBase();
/// diagnosisBase()/<job id>.
std::string defaultDiagnosisDirectory(const std::string& job_id);

class FlightWatch {
 public:
  /// `nproc` areas; `dir`: the job's diagnosis directory (made when first written).
  FlightWatch(int nproc, std::string dir);

  const std::string& directory() const { return dir_; }
  /// Zeroes every area (before a restart's ranks start).
  void clear() { table_.clear(); }
  /// The variables that hand local rank `local` its area and tell it where its own dumps go.
  std::map<std::string, std::string> environment(int local) const;

  /// Every rank's record now, with what the executor sees of its process: its sample, how long it has made no
  /// progress (`stalled_s`, by sample index; -1 unknown), and this host's name.
  std::vector<flight::RankRecord> read(const std::vector<RankSample>& samples, const std::vector<double>& stalled_s,
                                       const std::string& host, const std::string& reason) const;
  /// Writes the records as rank-RRRRR.json into directory()/`subdir`; that directory, or "" when it could not.
  std::string write(const std::vector<flight::RankRecord>& records, const std::string& subdir) const;

 private:
  SharedTable table_;
  std::string dir_;
};

/// Adds to each sample (by index) what its record shows: coordinates, the operation it has been in longest.
void addFlightView(std::vector<RankSample>& samples, const std::vector<flight::RankRecord>& records);

/// "diagnosis: <verdict>", then a "diagnosis detail: ..." line per detail.
void logDiagnosis(std::FILE* log, const std::vector<flight::RankRecord>& records);

}  // namespace megascale::launcher
