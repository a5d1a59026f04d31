#include "collectives/flight_recorder.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "common/config.h"
#include "common/heartbeat.h"
#include "common/log.h"
#include "common/shared_table.h"

namespace megascale::flight {

namespace {

std::mutex& claimMutex() {
  static std::mutex mutex;
  return mutex;
}

int signal_fd = -1;  // the eventfd SIGUSR1's handler writes to

void onDumpSignal(int) {
  const int saved = errno;
  const uint64_t one = 1;
  (void)!write(signal_fd, &one, sizeof(one));  // async-signal-safe; the dumper thread does the rest
  errno = saved;
}

std::string dumpDirectory() {
  std::string dir = config::getString("MEGASCALE_FLIGHT_RECORDER_DIR");
  if (!dir.empty()) return dir;
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/megascale-flight";
}

// Group rank i is first + i * stride for every i: the shape of Megatron's groups, recorded in two numbers.
bool arithmetic(int size, const std::function<int(int)>& world_rank_of, int* first, int* stride) {
  *first = world_rank_of(0);
  *stride = size > 1 ? world_rank_of(1) - *first : 1;
  if (*stride == 0) return false;
  for (int i = 2; i < size; ++i) {
    if (world_rank_of(i) != *first + i * *stride) return false;
  }
  return true;
}

}  // namespace

Recorder& Recorder::process() {
  static Recorder* const recorder = new Recorder();  // never destroyed: communicators may outlive statics
  if (recorder->pid_.load(std::memory_order_relaxed) != getpid()) recorder->restartAfterFork();
  return *recorder;
}

char* Recorder::privateArea() {
  void* map = mmap(nullptr, kAreaBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map != MAP_FAILED) return static_cast<char*>(map);
  MSC_LOG_WARN("flight recorder: cannot map %zu bytes: %s; recording nothing", kAreaBytes, errnoText(errno).c_str());
  return nullptr;
}

Recorder::Recorder() : pid_(getpid()) {
  if (!config::getBool("MEGASCALE_FLIGHT_RECORDER")) return;
  area_ = mapSharedArea("MEGASCALE_FLIGHT_RECORDS", kAreaBytes);
  if (area_ == nullptr) area_ = privateArea();
  format();
  installSignalDump();
}

// A forked child records in private memory of its own (the executor's area is its parent's), as its own
// environment says, with a dumper thread of its own (threads do not survive fork). Its parent's groups are not
// its own: it starts empty.
void Recorder::restartAfterFork() {
  std::lock_guard<std::mutex> lock(claimMutex());
  if (pid_.load(std::memory_order_relaxed) == getpid()) return;
  pid_.store(getpid(), std::memory_order_relaxed);
  area_ = config::getBool("MEGASCALE_FLIGHT_RECORDER") ? privateArea() : nullptr;  // the child's own setting
  format();
  if (signal_fd < 0) return;
  close(signal_fd);  // shared with the parent, whose dumper would take the child's signals
  signal_fd = eventfd(0, EFD_CLOEXEC);
  if (signal_fd >= 0) startDumper();
}

void Recorder::format() {
  if (area_ == nullptr) return;
  Header& h = header(area_);
  h.pid.store(static_cast<uint64_t>(getpid()), std::memory_order_relaxed);
  h.world_rank.store(-1, std::memory_order_relaxed);
  h.groups.store(0, std::memory_order_relaxed);
  for (auto& word : h.coordinates) word.store(0, std::memory_order_relaxed);
  h.magic.store(kMagic, std::memory_order_release);
}

// SIGUSR1 dumps the record, unless the program handles SIGUSR1 itself (then it is left alone).
void Recorder::installSignalDump() {
  struct sigaction current {};
  if (sigaction(SIGUSR1, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
  signal_fd = eventfd(0, EFD_CLOEXEC);
  if (signal_fd < 0) return;
  startDumper();
  struct sigaction action {};
  action.sa_handler = onDumpSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &action, nullptr);
}

void Recorder::startDumper() {
  std::thread([this] {
    while (true) {
      uint64_t count = 0;
      if (read(signal_fd, &count, sizeof(count)) != static_cast<ssize_t>(sizeof(count))) {
        if (errno == EINTR) continue;
        return;
      }
      const std::string path = dump("SIGUSR1");
      if (!path.empty()) MSC_LOG_WARN("flight recorder: SIGUSR1: wrote %s", path.c_str());
    }
  }).detach();
}

GroupBlock* Recorder::claim(uint64_t packed_name, int rank, int size, const std::function<int(int)>& world_rank_of) {
  if (area_ == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(claimMutex());
  Header& h = header(area_);
  const int used = static_cast<int>(h.groups.load(std::memory_order_relaxed));
  int index = used < kMaxGroups ? used : -1;
  for (int i = 0; i < used && index < 0; ++i) {  // all claimed once: reuse one whose communicator is gone
    if (static_cast<GroupState>(group(area_, i).state.load(std::memory_order_relaxed)) != GroupState::kLive) index = i;
  }
  if (index < 0) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      MSC_LOG_WARN("flight recorder: more than %d live communicators; later ones are not recorded", kMaxGroups);
    });
    return nullptr;
  }
  GroupBlock& b = group(area_, index);
  b.state.store(static_cast<uint32_t>(GroupState::kFree), std::memory_order_release);
  b.generation.fetch_add(1, std::memory_order_relaxed);
  b.ops.store(0, std::memory_order_release);  // readers read entries up to ops only: stale ones stay unread
  b.name.store(packed_name, std::memory_order_relaxed);
  b.rank.store(rank, std::memory_order_relaxed);
  b.size.store(size, std::memory_order_relaxed);
  b.collectives.store(0, std::memory_order_relaxed);
  b.point_to_point.store(0, std::memory_order_relaxed);
  int first = 0, stride = 0;
  if (!arithmetic(size, world_rank_of, &first, &stride)) {
    stride = 0;
    for (int i = 0; i < size && i < kListedMembers; ++i) b.members[i].store(world_rank_of(i), std::memory_order_relaxed);
  }
  b.member_first.store(first, std::memory_order_relaxed);
  b.member_stride.store(stride, std::memory_order_relaxed);
  b.state.store(static_cast<uint32_t>(GroupState::kLive), std::memory_order_release);
  if (index >= used) h.groups.store(static_cast<uint32_t>(index + 1), std::memory_order_release);
  return &b;
}

void Recorder::release(GroupBlock* block) {
  if (block != nullptr) block->state.store(static_cast<uint32_t>(GroupState::kClosed), std::memory_order_release);
}

void Recorder::setWorldRank(int rank) {
  if (area_ == nullptr) return;
  int unset = -1;
  header(area_).world_rank.compare_exchange_strong(unset, rank, std::memory_order_relaxed);
}

void Recorder::setCoordinates(std::string_view coordinates) {
  if (area_ == nullptr) return;
  for (int w = 0; w < kCoordinateWords; ++w) {
    const size_t from = static_cast<size_t>(w) * 8;
    const std::string_view piece = from < coordinates.size() ? coordinates.substr(from, 8) : std::string_view();
    header(area_).coordinates[w].store(heartbeat::packName(piece), std::memory_order_relaxed);
  }
}

std::string Recorder::coordinates() const {
  return area_ == nullptr ? std::string() : readCoordinates(area_);
}

RankRecord Recorder::snapshot(const std::string& reason) const {
  RankRecord record;
  if (area_ != nullptr) record = readArea(area_, recorderNowNs());
  record.reason = reason;
  return record;
}

std::string Recorder::dump(const std::string& reason) const {
  const RankRecord record = snapshot(reason);
  const std::string dir = dumpDirectory();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  char name[64];
  if (record.rank >= 0) {
    std::snprintf(name, sizeof(name), "rank-%05d.json", record.rank);
  } else {
    std::snprintf(name, sizeof(name), "pid-%d.json", static_cast<int>(getpid()));
  }
  const std::string path = dir + "/" + name;
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << toJson(record);
    if (!out.flush()) {
      MSC_LOG_WARN("flight recorder: cannot write %s (MEGASCALE_FLIGHT_RECORDER_DIR)", temporary.c_str());
      return "";
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    MSC_LOG_WARN("flight recorder: cannot rename %s to %s: %s", temporary.c_str(), path.c_str(), errnoText(errno).c_str());
    return "";
  }
  return path;
}

void Recorder::dumpAfterTimeout(const std::string& what) {
  if (area_ == nullptr) return;
  const int64_t now = recorderNowNs();
  int64_t last = last_timeout_dump_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now - last < 10'000'000'000) return;
  if (!last_timeout_dump_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  const std::string path = dump("timeout in " + what);
  if (!path.empty()) MSC_LOG_WARN("flight recorder: wrote %s (megascale-diagnose %s reads it)", path.c_str(), path.c_str());
}

GroupLog::~GroupLog() {
  if (recorder_ != nullptr) recorder_->release(block_);
}

void GroupLog::attach(Recorder& recorder, GroupBlock* block) {
  if (recorder_ != nullptr) recorder_->release(block_);
  recorder_ = &recorder;
  block_ = block;
}

void GroupLog::setName(uint64_t packed_name) {
  if (block_ != nullptr) block_->name.store(packed_name, std::memory_order_relaxed);
}

}  // namespace megascale::flight
