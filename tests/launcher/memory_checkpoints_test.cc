// The executor's checkpoint directory in host memory: made private and empty, gone with its owner, and, when the
// owner was killed and could not remove it, removed by the next executor on the host.
#include "launcher/memory_checkpoints.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace megascale::launcher {
namespace {

namespace fs = std::filesystem;

// A child makes its directory, writes a checkpoint file, tells its path and dies by SIGKILL.
std::string pathOfAKilledOwner() {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    MemoryCheckpoints memory("killed-owner");
    std::ofstream(memory.path() + "/slot_0.ckpt") << "weights";
    const std::string path = memory.path() + "\n";
    if (write(fds[1], path.data(), path.size()) < 0) _exit(1);
    raise(SIGKILL);
  }
  close(fds[1]);
  std::string path;
  char c;
  while (read(fds[0], &c, 1) == 1 && c != '\n') path += c;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  return path;
}

TEST(MemoryCheckpoints, ADirectoryPrivateToTheUserThatGoesWithItsOwner) {
  std::string path;
  {
    MemoryCheckpoints memory("job-1234567890abcdefXYZ");
    path = memory.path();
    struct stat info {};
    ASSERT_EQ(stat(path.c_str(), &info), 0);
    EXPECT_TRUE(S_ISDIR(info.st_mode));
    EXPECT_EQ(info.st_mode & 077, 0u) << "readable by others";
    EXPECT_NE(path.find("/megascale-job-1234567890ab-"), std::string::npos) << path;  // 16 characters of the id
    EXPECT_EQ(memory.describe(), "no checkpoints yet");
    fs::create_directory(path + "/rank_00000");
    std::ofstream(path + "/rank_00000/slot_0.ckpt") << std::string(1 << 20, 'x');
    EXPECT_EQ(memory.describe(), "checkpoints of 1 ranks (1.0 MiB)");
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(MemoryCheckpoints, TheDirectoryOfAKilledOwnerIsRemovedByTheNextOneAndALiveOnesIsKept) {
  MemoryCheckpoints alive("alive-owner");
  const std::string orphan = pathOfAKilledOwner();
  ASSERT_FALSE(orphan.empty());
  ASSERT_TRUE(fs::exists(orphan + "/slot_0.ckpt")) << "SIGKILL leaves the directory behind";
  const std::string base = fs::path(orphan).parent_path().string();
  EXPECT_GE(MemoryCheckpoints::removeOrphans(base), 1);
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_TRUE(fs::exists(alive.path()));
  EXPECT_TRUE(fs::exists(alive.path() + "/.owner"));
  // The constructor sweeps too.
  const std::string another = pathOfAKilledOwner();
  ASSERT_TRUE(fs::exists(another));
  MemoryCheckpoints next("next-owner");
  EXPECT_FALSE(fs::exists(another));
}

TEST(MemoryCheckpoints, ADirectoryWithoutAnOwnerFileIsLeftAlone) {
  // Being made right now by another executor, or not made by one at all.
  MemoryCheckpoints alive("sweeper");
  const std::string base = fs::path(alive.path()).parent_path().string();
  const std::string foreign = base + "/megascale-test-no-owner-" + std::to_string(getpid());
  fs::create_directory(foreign);
  MemoryCheckpoints::removeOrphans(base);
  EXPECT_TRUE(fs::exists(foreign));
  fs::remove_all(foreign);
}

}  // namespace
}  // namespace megascale::launcher
