#include "launcher/memory_checkpoints.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "common/status.h"

namespace megascale::launcher {

namespace fs = std::filesystem;

namespace {

constexpr char kPrefix[] = "megascale-";
constexpr char kOwnerFile[] = ".owner";

std::string memoryBase() {
  if (access("/dev/shm", W_OK) == 0) return "/dev/shm";
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  std::fprintf(stderr,
               "megascale-run: /dev/shm is not writable; checkpoints between restarts go to %s, which may be disk\n",
               base.c_str());
  return base;
}

// The owner's lock, taken before the file gets its name: whoever finds `.owner` finds it locked while the owner
// lives (a directory still without one is being made, or is not ours: left alone).
int lockOwnerFile(const std::string& dir) {
  const std::string draft = dir + "/.owner-draft";
  const int fd = open(draft.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC | O_EXCL, 0600);
  if (fd < 0) return -1;
  const std::string pid = std::to_string(getpid()) + "\n";
  if (flock(fd, LOCK_EX) != 0 || write(fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size()) ||
      rename(draft.c_str(), (dir + "/" + kOwnerFile).c_str()) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

}  // namespace

int MemoryCheckpoints::removeOrphans(const std::string& base) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    struct stat info {};
    if (name.rfind(kPrefix, 0) != 0 || lstat(entry.path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
        info.st_uid != geteuid()) {
      continue;
    }
    const int fd = open((entry.path() / kOwnerFile).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    const bool orphan = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);
    if (orphan && fs::remove_all(entry.path(), ec) > 0) ++removed;
  }
  return removed;
}

MemoryCheckpoints::MemoryCheckpoints(const std::string& job_id) {
  const std::string base = memoryBase();
  if (const int removed = removeOrphans(base); removed > 0) {
    std::fprintf(stderr, "megascale-run: removed %d checkpoint director%s in %s left by executors that died\n",
                 removed, removed == 1 ? "y" : "ies", base.c_str());
  }
  std::string name = base + "/" + kPrefix + job_id.substr(0, 16) + "-XXXXXX";
  std::vector<char> text(name.begin(), name.end());
  text.push_back('\0');
  if (mkdtemp(text.data()) == nullptr) {
    throw Error(ErrorCode::kSystem,
                "cannot make the checkpoint directory in host memory " + name + ": " + errnoText(errno));
  }
  path_ = text.data();
  owner_fd_ = lockOwnerFile(path_);
  if (owner_fd_ < 0) {
    const int error = errno;
    std::error_code ec;
    fs::remove_all(path_, ec);
    throw Error(ErrorCode::kSystem, "cannot lock the owner file of " + path_ + ": " + errnoText(error));
  }
}

MemoryCheckpoints::~MemoryCheckpoints() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  close(owner_fd_);
}

std::string MemoryCheckpoints::describe() const {
  std::error_code ec;
  int ranks = 0;
  uintmax_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(path_, ec)) {
    if (entry.path().filename().string().front() == '.') continue;  // the owner file
    if (entry.is_directory(ec)) ++ranks;
    if (entry.is_regular_file(ec)) bytes += entry.file_size(ec);
  }
  if (bytes == 0) return "no checkpoints yet";
  char text[128];
  std::snprintf(text, sizeof(text), "checkpoints of %d ranks (%.1f MiB)", ranks,
                static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace megascale::launcher
