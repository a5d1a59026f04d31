// Heartbeat slots: names packed into one word, a table the executor makes, and a child process that inherits it
// and reports into its slot.
#include "common/heartbeat.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>

namespace megascale::heartbeat {
namespace {

// Runs body in a child process with MEGASCALE_HEARTBEAT set to `value`; the child's exit status.
int inChild(const std::string& value, const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("MEGASCALE_HEARTBEAT", value.c_str(), 1);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Heartbeat, NamesPackIntoOneWordAndCutAtEightBytes) {
  EXPECT_EQ(unpackName(packName("dp")), "dp");
  EXPECT_EQ(unpackName(packName("")), "");
  EXPECT_EQ(unpackName(packName("pipeline-link")), "pipeline");
  static_assert(packName("tp") != packName("pp"));
}

TEST(Heartbeat, AChildReportsIntoTheSlotItInherited) {
  Table table(3);
  table.clear();
  ASSERT_EQ(inChild(table.environmentValue(2),
                    [] {
                      if (mySlot() == nullptr) return 1;
                      reportStep(41, "forward");
                      reportIssued(packName("tp"), 17, 3);
                      reportFinished(Outcome::kTransportError);
                      reportIssued(packName("dp"), 5, 0);
                      return 0;
                    }),
            0);
  const Slot& slot = table.slot(2);
  EXPECT_GT(slot.pid.load(), 0u);
  EXPECT_EQ(slot.step.load(), 41);
  EXPECT_EQ(unpackName(slot.phase.load()), "forward");
  EXPECT_EQ(slot.beats.load(), 1u);
  EXPECT_EQ(slot.ops_issued.load(), 2u);
  EXPECT_EQ(slot.ops_completed.load(), 1u);
  EXPECT_EQ(slot.transport_errors.load(), 1u);
  EXPECT_EQ(unpackName(slot.op_group.load()), "dp");  // the latest issued
  EXPECT_EQ(slot.op_seq.load(), 5u);
  EXPECT_EQ(slot.op_kind.load(), 1u);
  EXPECT_EQ(table.slot(0).beats.load(), 0u);  // the other slots untouched
  table.clear();
  EXPECT_EQ(table.slot(2).beats.load(), 0u);
}

// A process the rank forks (a data-loader worker, a shell-out) is not the rank: it reports nothing into the
// rank's slot, while the rank keeps reporting.
TEST(Heartbeat, AForkedChildOfTheRankReportsNothing) {
  Table table(1);
  table.clear();
  ASSERT_EQ(inChild(table.environmentValue(0),
                    [] {
                      reportStep(1, "rank");
                      const pid_t grandchild = fork();
                      if (grandchild == 0) {
                        reportStep(99, "forked");
                        _exit(mySlot() == nullptr ? 0 : 1);
                      }
                      int status = 0;
                      waitpid(grandchild, &status, 0);
                      reportStep(2, "rank");
                      return WIFEXITED(status) && WEXITSTATUS(status) == 0 && mySlot() != nullptr ? 0 : 1;
                    }),
            0);
  EXPECT_EQ(table.slot(0).step.load(), 2);
  EXPECT_EQ(table.slot(0).beats.load(), 2u);
  EXPECT_EQ(unpackName(table.slot(0).phase.load()), "rank");
}

TEST(Heartbeat, WithoutAValidTableAProcessReportsNothingAndGoesOn) {
  for (const char* value : {"", "not-a-slot", "999:0", "0:-1"}) {
    EXPECT_EQ(inChild(value,
                      [] {
                        reportStep(1, "x");  // must not crash
                        return mySlot() == nullptr ? 0 : 1;
                      }),
              0)
        << value;
  }
  Table table(1);
  EXPECT_EQ(inChild(std::to_string(std::atoi(table.environmentValue(0).c_str())) + ":1",
                    [] { return mySlot() == nullptr ? 0 : 1; }),
            0)
      << "a slot past the table's end";
}

}  // namespace
}  // namespace megascale::heartbeat
