// megascale-run as a user meets it: environment of each rank, output prefixed by rank, a failing rank
// stopping the job with a message that names it, signals forwarded, bad command lines refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct Result {
  int exit_code;
  std::string out;
  std::string err;
  double seconds;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result run(const std::string& args) {
  char out_path[] = "/tmp/msc_run_out_XXXXXX", err_path[] = "/tmp/msc_run_err_XXXXXX";
  close(mkstemp(out_path));
  close(mkstemp(err_path));
  std::string cmd = std::string(MEGASCALE_RUN) + " " + args + " >" + out_path + " 2>" + err_path;
  auto start = std::chrono::steady_clock::now();
  int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out_path), slurp(err_path),
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  unlink(out_path);
  unlink(err_path);
  return r;
}

TEST(MegascaleRun, GivesEveryRankItsIdentityAndPrefixesOutput) {
  // One host: its ranks are one block, which communicators take as their host layout with no exchange.
  Result r = run("-n 3 bash -c 'echo rank=$MEGASCALE_RANK size=$MEGASCALE_WORLD_SIZE local=$MEGASCALE_LOCAL_RANK "
                 "of=$MEGASCALE_LOCAL_SIZE block=$MEGASCALE_HOST_BLOCK id=${MEGASCALE_UNIQUE_ID:0:5}'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (int k = 0; k < 3; ++k) {
    char line[96];
    std::snprintf(line, sizeof(line), "[%d] rank=%d size=3 local=%d of=3 block=3 id=msc1;", k, k, k);
    EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
  }
}

TEST(MegascaleRun, FailingRankStopsTheOthersAndIsNamed) {
  Result r = run("-n 3 bash -c 'if [ $MEGASCALE_RANK = 1 ]; then sleep 0.2; exit 7; fi; sleep 60'");
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_NE(r.err.find("rank 1 (pid"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited with status 7"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 15);
}

TEST(MegascaleRun, RankKilledBySignalIsReported) {
  Result r = run("-n 2 bash -c 'if [ $MEGASCALE_RANK = 0 ]; then kill -9 $$; fi; sleep 60'");
  EXPECT_EQ(r.exit_code, 128 + 9);
  EXPECT_NE(r.err.find("rank 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("signal 9"), std::string::npos) << r.err;
}

TEST(MegascaleRun, RanksIgnoringTermAreKilledAfterTheGracePeriod) {
  Result r = run("--grace-ms 300 -n 2 bash -c 'trap \"\" TERM; if [ $MEGASCALE_RANK = 0 ]; then sleep 0.3; exit 3; fi; "
                 "for i in $(seq 600); do sleep 0.1; done'");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_GE(r.seconds, 0.55) << r.err;  // rank 1 ignored SIGTERM and lived until the SIGKILL
  EXPECT_LT(r.seconds, 15);
}

TEST(MegascaleRun, ForwardsSignalsToEveryRank) {
  char out_path[] = "/tmp/msc_sig_XXXXXX";
  close(mkstemp(out_path));
  pid_t pid = fork();
  if (pid == 0) {
    std::string cmd = std::string(MEGASCALE_RUN) +
                      " -n 2 bash -c 'trap \"echo got-term-$MEGASCALE_RANK; exit 0\" TERM; echo ready; "
                      "while true; do sleep 0.05; done' >" + out_path + " 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until both ranks are up, then signal the launcher only.
  for (int i = 0; i < 200 && slurp(out_path).find("[1] ready") == std::string::npos; ++i) usleep(20000);
  for (int i = 0; i < 200 && slurp(out_path).find("[0] ready") == std::string::npos; ++i) usleep(20000);
  pid_t launcher = 0;
  {
    std::string cmd = "pgrep -P " + std::to_string(pid) + " -f megascale-run";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(fscanf(p, "%d", &launcher), EOF);
    pclose(p);
  }
  ASSERT_GT(launcher, 0);
  kill(launcher, SIGTERM);
  int status;
  waitpid(pid, &status, 0);
  std::string out = slurp(out_path);
  unlink(out_path);
  EXPECT_NE(out.find("[0] got-term-0"), std::string::npos) << out;
  EXPECT_NE(out.find("[1] got-term-1"), std::string::npos) << out;
  EXPECT_NE(WEXITSTATUS(status), 0);
}

TEST(MegascaleRun, RefusesBadCommandLines) {
  EXPECT_EQ(run("").exit_code, 2);
  EXPECT_EQ(run("-n 0 true").exit_code, 2);
  EXPECT_EQ(run("-n two true").exit_code, 2);
  EXPECT_EQ(run("--bogus -n 1 true").exit_code, 2);
  EXPECT_EQ(run("-n 2").exit_code, 2);
  EXPECT_EQ(run("-n 2 --world-size 4 true").exit_code, 2);  // several hosts need a shared store
  Result missing = run("-n 1 /no/such/program");
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.err.find("rank 0"), std::string::npos) << missing.err;
}

TEST(MegascaleRun, PrintsConfig) {
  Result r = run("--print-config");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("MEGASCALE_TIMEOUT_MS"), std::string::npos);
  EXPECT_NE(r.out.find("MEGASCALE_TRANSPORT"), std::string::npos);
}

}  // namespace
