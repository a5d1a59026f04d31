// Who runs a communicator's operations: the process's progress engine for a communicator that only talks over
// the network, a worker thread of its own otherwise (the node engine's and the host stage's waits block).
#include "collectives/communicator.h"
#include "common/config.h"
#include "common/log.h"

namespace megascale {

namespace {

bool engineEnabled() { return config::getInt("MEGASCALE_PROGRESS_THREADS") > 0; }

}  // namespace

void Communicator::dispatch(Task task, std::unique_lock<std::mutex>& lock) {
  if (driver_ == Driver::kUndecided) {
    const bool network_only = !pending_region_ && !host_stage_;
    driver_ = network_only && engineEnabled() ? Driver::kEngine : Driver::kWorker;
    if (driver_ == Driver::kEngine) {
      engine_ = &ProgressEngine::forNewClient();
    }
  }
  // The rank's idle listening passes to the next communicator to run when the one doing it is gone.
  if (driver_ == Driver::kEngine && !listens_while_idle_) listens_while_idle_ = links_->hub()->claimWatch();
  if (driver_ == Driver::kWorker) {
    startWorkerLocked();
    queue_.push_back(std::move(task));
    wakeWorker(lock);
    return;
  }
  queue_.push_back(std::move(task));
  const bool post = !engine_posted_;
  engine_posted_ = true;
  lock.unlock();
  if (post) engine_->post(&engine_side_);
}

bool Communicator::advanceOnEngine(RunWait** wait) {
  while (true) {
    if (!engine_task_) {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      if (queue_.empty()) {
        engine_posted_ = false;
        return listenWhileIdle(wait);
      }
      engine_task_ = std::make_unique<EngineTask>();
      engine_task_->task = std::move(queue_.front());
      queue_.pop_front();
      engine_task_->broken = broken_;
      ++running_;
    }
    EngineTask& t = *engine_task_;
    bool done = true;
    const Status status = t.broken.isOk() ? guarded(t.task, [&] { return advanceEngineTask(t, &done, wait); })
                                          : brokenBy(t.task, t.broken);
    if (!done && status.isOk()) return true;  // an error (a thrown one too) finishes the task
    Task task = std::move(t.task);
    engine_task_.reset();  // the run lets go of the buffers before the caller hears it is done
    finishTask(task, status);
  }
}

// One communicator of each rank answers peers that connect while none of the rank's communicators runs an
// operation (a running one moves the listeners itself), so their handshakes never wait for our next operation.
// It waits on the listeners with no timer: a new task or a connecting peer wakes it.
bool Communicator::listenWhileIdle(RunWait** wait) {
  if (!listens_while_idle_) return false;
  const std::shared_ptr<ListenerHub>& hub = links_->hub();
  Status s = hub->progress();
  if (!s.isOk()) MSC_LOG_DEBUG("while idle: %s", s.message().c_str());
  idle_wait_.fds.clear();
  idle_wait_.kind = RunWait::kPoll;
  idle_wait_.incoming_from = 0;
  idle_wait_.cap_ms = hub->appendReadiness(idle_wait_.fds) ? -1 : 10;  // a listener without descriptors: look often
  *wait = &idle_wait_;
  return true;
}

Status Communicator::advanceEngineTask(EngineTask& t, bool* done, RunWait** wait) {
  *done = false;
  if (!t.prepared) {
    if (!t.layout && needsLayoutExchange(t.task)) t.layout = startLayoutExchange(true);
    if (t.layout) {
      bool exchanged = false;
      Status s = t.layout->run->advance(&exchanged);
      if (!exchanged) {
        *wait = &t.layout->run->wait();
        return Status::ok();
      }
      if (!s.isOk()) {
        *done = true;
        return s;
      }
      finishLayoutExchange(*t.layout);
      t.layout.reset();
    }
    t.prepared = std::make_unique<PreparedRun>();
    Status s = prepareRun(t.task, true, t.prepared.get());
    if (!s.isOk()) {
      *done = true;
      return s;
    }
  }
  Status s = t.prepared->run->advance(done);
  if (!*done) *wait = &t.prepared->run->wait();
  return s;
}

}  // namespace megascale
