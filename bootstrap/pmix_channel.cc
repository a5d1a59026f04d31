// PMIx client of the launcher's PMIx server (Open MPI's mpirun, srun --mpi=pmix). Rank 0 puts one key and
// commits; a get of a peer's key waits in the server until that peer has committed it (direct modex), so no
// fence is needed. The session lasts as long as the process: the server holds rank 0's data while others
// still read it, and a client that exits without PMIx_Finalize is reported by mpirun as a failure.
#include <pmix.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "bootstrap/launcher_channel.h"
#include "common/status.h"

namespace megascale {
namespace {

class PmixSession {
 public:
  static PmixSession& get() {
    static PmixSession session;  // finalized by its destructor at exit
    if (session.status_ != PMIX_SUCCESS) {
      throw Error(ErrorCode::kSystem, std::string("PMIx_Init failed: ") + PMIx_Error_string(session.status_) +
                                          " (is this process started by mpirun or srun --mpi=pmix?)");
    }
    return session;
  }
  const pmix_proc_t& self() const { return self_; }

 private:
  PmixSession() { status_ = PMIx_Init(&self_, nullptr, 0); }
  ~PmixSession() {
    if (status_ == PMIX_SUCCESS) PMIx_Finalize(nullptr, 0);
  }
  pmix_proc_t self_{};
  pmix_status_t status_ = PMIX_ERROR;
};

class PmixChannel : public LauncherChannel {
 public:
  PmixChannel() : session_(PmixSession::get()) {}

  std::string name() const override { return std::string("PMIx namespace ") + session_.self().nspace; }

  void publish(const std::string& key, const std::string& value) override {
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, value.c_str(), PMIX_STRING);
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
    PMIX_VALUE_DESTRUCT(&v);
    if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) throw Error(ErrorCode::kSystem, name() + ": put " + key + ": " + PMIx_Error_string(rc));
  }

  std::string read(int publisher, const std::string& key, Deadline deadline) override {
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, session_.self().nspace, static_cast<pmix_rank_t>(publisher));
    // The server defers a get until the key is committed, but answers NOT-FOUND while the publisher has not
    // yet connected to it: ask again, with backoff, until the deadline.
    while (true) {
      int seconds = std::max(1, (msUntil(deadline) + 999) / 1000);  // PMIx times out in whole seconds
      pmix_info_t info;
      PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &seconds, PMIX_INT);
      pmix_value_t* value = nullptr;
      const pmix_status_t rc = PMIx_Get(&proc, key.c_str(), &info, 1, &value);
      PMIX_INFO_DESTRUCT(&info);
      if (rc == PMIX_SUCCESS && value != nullptr && value->type == PMIX_STRING && value->data.string != nullptr) {
        std::string text = value->data.string;
        PMIX_VALUE_RELEASE(value);
        return text;
      }
      if (value != nullptr) PMIX_VALUE_RELEASE(value);
      const bool retry = rc == PMIX_ERR_NOT_FOUND && Clock::now() < deadline;
      if (!retry) {
        const ErrorCode code =
            rc == PMIX_ERR_TIMEOUT || rc == PMIX_ERR_NOT_FOUND ? ErrorCode::kTimeout : ErrorCode::kSystem;
        throw Error(code, name() + ": get " + key + " of rank " + std::to_string(publisher) + ": " +
                              (rc == PMIX_SUCCESS ? "not a string" : PMIx_Error_string(rc)) +
                              (code == ErrorCode::kTimeout ? " before the timeout (is rank 0 up?)" : ""));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  PmixSession& session_;
};

}  // namespace

std::unique_ptr<LauncherChannel> openPmixChannel() { return std::make_unique<PmixChannel>(); }

}  // namespace megascale
