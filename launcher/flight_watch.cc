#include "launcher/flight_watch.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "collectives/flight_record.h"
#include "launcher/diagnosis.h"
#include "launcher/process_group.h"
#include "launcher/rank_watch.h"

namespace megascale::launcher {

std::string diagnosisBase() {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/megascale-jobs";
}

std::string defaultDiagnosisDirectory(const std::string& job_id) { return diagnosisBase() + "/" + job_id; }

FlightWatch::FlightWatch(int nproc, std::string dir)
    : table_("megascale-flight-records", nproc, flight::kAreaBytes), dir_(std::move(dir)) {}

std::map<std::string, std::string> FlightWatch::environment(int local) const {
  return {{"MEGASCALE_FLIGHT_RECORDS", table_.environmentValue(local)},
          {"MEGASCALE_FLIGHT_RECORDER_DIR", dir_ + "/flight"}};
}

std::vector<flight::RankRecord> FlightWatch::read(const std::vector<RankSample>& samples,
                                                  const std::vector<double>& stalled_s, const std::string& host,
                                                  const std::string& reason) const {
  std::vector<flight::RankRecord> records;
  const int64_t now = flight::recorderNowNs();
  for (size_t i = 0; i < samples.size() && static_cast<int>(i) < table_.count(); ++i) {
    const RankSample& s = samples[i];
    flight::RankRecord r = flight::readArea(table_.area(static_cast<int>(i)), now);
    r.rank = s.rank;  // the executor's numbering holds even for a rank that made no communicator yet
    r.host = host;
    r.reason = reason;
    r.process = !s.running ? describeWaitStatus(s.wait_status) : s.stopped ? "stopped by a signal" : "running";
    r.last_report = s.where;
    r.stalled_s = i < stalled_s.size() ? stalled_s[i] : -1;
    records.push_back(std::move(r));
  }
  return records;
}

std::string FlightWatch::write(const std::vector<flight::RankRecord>& records, const std::string& subdir) const {
  const std::string dir = dir_ + "/" + subdir;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  for (const flight::RankRecord& r : records) {
    char name[32];
    std::snprintf(name, sizeof(name), "/rank-%05d.json", r.rank);
    std::ofstream out(dir + name, std::ios::trunc);
    out << flight::toJson(r);
    if (!out.flush()) return "";
  }
  return dir;
}

void addFlightView(std::vector<RankSample>& samples, const std::vector<flight::RankRecord>& records) {
  for (size_t i = 0; i < samples.size() && i < records.size(); ++i) {
    RankSample& s = samples[i];
    s.coordinates = records[i].coordinates;
    for (const flight::GroupRecord& g : records[i].groups) {
      for (const flight::OpRecord& op : g.ops) {
        if (!op.inFlight()) continue;
        const double in_it = op.started_s >= 0 ? op.started_s : op.issued_s;
        if (in_it > s.in_operation_s) {
          s.in_operation_s = in_it;
          s.operation = op.kind + " #" + std::to_string(op.seq) + " of " + g.name + " (" + op.state + ")";
        }
        break;  // the group's later operations wait behind this one
      }
    }
  }
}

void logDiagnosis(std::FILE* log, const std::vector<flight::RankRecord>& records) {
  const Diagnosis d = diagnose(records);
  logLine(log, "diagnosis: %s", d.verdict.c_str());
  for (const std::string& line : d.detail) logLine(log, "diagnosis detail: %s", line.c_str());
}

}  // namespace megascale::launcher
