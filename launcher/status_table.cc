#include "launcher/status_table.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/number_text.h"
#include "launcher/flight_watch.h"

namespace megascale::launcher {

namespace fs = std::filesystem;

namespace {

constexpr char kStatusFile[] = "status";
constexpr double kLiveSeconds = 30;  // a status older than this belongs to a driver that is gone

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

double ageSeconds(const fs::path& file) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) return -1;
  return std::difftime(std::time(nullptr), st.st_mtime);
}

bool printOne(const fs::path& dir, std::FILE* out) {
  std::ifstream in(dir / kStatusFile);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  std::fputs(text.str().c_str(), out);
  std::fprintf(out, "(%s, written %.0f s ago)\n", (dir / kStatusFile).c_str(), std::max(0.0, ageSeconds(dir / kStatusFile)));
  return true;
}

}  // namespace

std::string statusTable(const std::string& job_id, int restart, const std::vector<RankSample>& samples,
                        const std::vector<std::string>& hosts, const std::vector<double>& stalled_s) {
  char line[512];
  std::string table = "job " + job_id + ", restart " + std::to_string(restart) + ", " + std::to_string(samples.size()) +
                      " ranks, " + utcNow() + "\n";
  std::snprintf(line, sizeof(line), "%5s  %-12s %-16s %6s  %-8s  %-36s %8s  %10s  %9s  %s\n", "rank", "host",
                "coordinates", "step", "phase", "operation", "in it s", "progress s", "transport", "process");
  table += line;
  const auto orDash = [](const std::string& text) { return text.empty() ? std::string("-") : text; };
  for (size_t i = 0; i < samples.size(); ++i) {
    const RankSample& s = samples[i];
    const double stalled = i < stalled_s.size() ? stalled_s[i] : -1;
    const std::string process = !s.running ? "ended" : s.stopped ? "stopped" : "running";
    std::snprintf(line, sizeof(line), "%5d  %-12s %-16s %6s  %-8s  %-36s %8s  %10s  %9llu  %s\n", s.rank,
                  orDash(i < hosts.size() ? hosts[i] : "").c_str(), orDash(s.coordinates).c_str(),
                  s.step >= 0 ? std::to_string(s.step).c_str() : "-", orDash(s.phase).c_str(), orDash(s.operation).c_str(),
                  s.in_operation_s >= 0 ? twoDecimals(s.in_operation_s).c_str() : "-", stalled >= 0 ? twoDecimals(stalled).c_str() : "-",
                  static_cast<unsigned long long>(s.transport_errors), process.c_str());
    table += line;
  }
  return table;
}

void LiveStatus::write(const std::string& table) const {
  std::error_code error;
  fs::create_directories(dir_, error);
  const std::string path = dir_ + "/" + kStatusFile;
  const std::string draft = path + ".draft";
  {
    std::ofstream out(draft, std::ios::trunc);
    out << table;
    if (!out.flush()) return;
  }
  std::rename(draft.c_str(), path.c_str());
}

LiveStatus::~LiveStatus() {
  std::error_code error;
  fs::remove(dir_ + "/" + kStatusFile, error);
  fs::remove(dir_, error);  // only when empty
}

int printStatus(const std::string& job, std::FILE* out) {
  if (!job.empty()) {
    const fs::path dir = job.find('/') != std::string::npos ? fs::path(job) : fs::path(defaultDiagnosisDirectory(job));
    if (printOne(dir, out)) return 0;
    std::fprintf(stderr, "megascale-run --status: no status in %s (has the job ended, or does it run with another "
                         "--diagnosis-dir?)\n", dir.c_str());
    return 1;
  }
  int printed = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(diagnosisBase(), error)) {
    const fs::path file = entry.path() / kStatusFile;
    const double age = ageSeconds(file);
    if (age < 0 || age > kLiveSeconds) continue;
    if (printed++ > 0) std::fputs("\n", out);
    printOne(entry.path(), out);
  }
  if (printed == 0) {
    std::fprintf(stderr, "megascale-run --status: no running job under %s\n", diagnosisBase().c_str());
    return 1;
  }
  return 0;
}

}  // namespace megascale::launcher
