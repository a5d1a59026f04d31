#include "collectives/progress_engine.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"

namespace megascale {

namespace {

uint32_t epollEvents(short poll_events) {
  uint32_t e = 0;
  if (poll_events & POLLIN) e |= EPOLLIN;
  if (poll_events & POLLOUT) e |= EPOLLOUT;
  return e;
}

short pollEvents(uint32_t epoll_events) {
  short e = 0;
  if (epoll_events & EPOLLIN) e |= POLLIN;
  if (epoll_events & EPOLLOUT) e |= POLLOUT;
  if (epoll_events & EPOLLERR) e |= POLLERR;
  if (epoll_events & EPOLLHUP) e |= POLLHUP;
  return e;
}

// A descriptor epoll cannot watch (a regular file) is looked at again this soon instead.
constexpr auto kUnwatchableRetry = std::chrono::milliseconds(1);

}  // namespace

ProgressEngine& ProgressEngine::forNewClient() {
  // Never destroyed: a communicator may outlive static destruction at exit, and must still find its engine. A
  // forked child has none of the parent's threads: it makes engines of its own.
  static std::mutex mutex;
  static std::vector<ProgressEngine*>* engines = nullptr;
  static pid_t owner = 0;
  static size_t next = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (engines == nullptr || owner != getpid()) {
    const int n = static_cast<int>(std::max<int64_t>(1, config::getInt("MEGASCALE_PROGRESS_THREADS")));
    engines = new std::vector<ProgressEngine*>();
    for (int i = 0; i < n; ++i) engines->push_back(new ProgressEngine());
    owner = getpid();
  }
  return *(*engines)[next++ % engines->size()];
}

ProgressEngine::ProgressEngine() {
  epoll_ = Fd(epoll_create1(EPOLL_CLOEXEC));
  wake_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_.valid() || !wake_.valid()) {
    throw Error(ErrorCode::kSystem, "progress engine: epoll or eventfd failed: " + errnoText(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_.get();
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev);
  thread_ = std::thread([this] { loop(); });
}

ProgressEngine::~ProgressEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  signalEventFd(wake_.get());
  thread_.join();
}

void ProgressEngine::post(Client* client) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    posted_.push_back(client);
  }
  signalEventFd(wake_.get());
}

void ProgressEngine::remove(Client* client) {
  if (std::this_thread::get_id() == thread_.get_id()) {
    forget(client);
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  removals_.push_back(client);
  const uint64_t ticket = ++removals_asked_;
  signalEventFd(wake_.get());
  removed_cv_.wait(lock, [&] { return removals_done_ >= ticket; });
}

void ProgressEngine::forget(Client* client) {
  auto it = entries_.find(client);
  if (it != entries_.end()) {
    clearTimer(it->second);
    entries_.erase(it);
  }
  runnable_.erase(std::remove(runnable_.begin(), runnable_.end(), client), runnable_.end());
  // Its registrations under descriptors are stale now: an event finds no entry for it and passes it by.
}

bool ProgressEngine::takeInbox() {
  std::vector<Client*> posted, removals;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return false;
    posted.swap(posted_);
    removals.swap(removals_);
  }
  for (Client* c : posted) makeRunnable(c);
  if (!removals.empty()) {
    for (Client* c : removals) forget(c);
    std::lock_guard<std::mutex> lock(mutex_);
    removals_done_ += removals.size();
    removed_cv_.notify_all();
  }
  return true;
}

void ProgressEngine::clearTimer(Entry& entry) {
  if (!entry.has_timer) return;
  timers_.erase(entry.timer);
  entry.has_timer = false;
}

void ProgressEngine::makeRunnable(Client* client) {
  Entry& e = entries_[client];
  if (e.runnable) return;
  e.runnable = true;
  e.wait = nullptr;
  clearTimer(e);
  runnable_.push_back(client);
}

void ProgressEngine::arm(Client* client, Entry& entry, RunWait& wait) {
  bool unwatchable = false;
  for (const pollfd& p : wait.fds) {
    auto& slot = waiters_[p.fd];
    uint32_t events = epollEvents(p.events);
    for (const Waiting& w : slot) {  // others waiting on it this round keep their interest
      auto other = entries_.find(w.client);
      if (other == entries_.end() || other->second.generation != w.generation || other->second.wait == nullptr) continue;
      for (const pollfd& q : other->second.wait->fds) {
        if (q.fd == p.fd) events |= epollEvents(q.events);
      }
    }
    epoll_event ev{};
    ev.events = events | EPOLLONESHOT;
    ev.data.fd = p.fd;
    // A descriptor seen before is modified, a new one added; either guess may be wrong (a closed descriptor
    // leaves the epoll by itself, and its number comes back on a new socket), and then the other call is right.
    if (static_cast<size_t>(p.fd) >= in_epoll_.size()) in_epoll_.resize(static_cast<size_t>(p.fd) + 1, false);
    const bool known = in_epoll_[static_cast<size_t>(p.fd)];
    if (epoll_ctl(epoll_.get(), known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, p.fd, &ev) != 0 &&
        (errno != (known ? ENOENT : EEXIST) ||
         epoll_ctl(epoll_.get(), known ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, p.fd, &ev) != 0)) {
      unwatchable = true;
      continue;
    }
    in_epoll_[static_cast<size_t>(p.fd)] = true;
    slot.erase(std::remove_if(slot.begin(), slot.end(), [&](const Waiting& w) { return w.client == client; }), slot.end());
    slot.push_back(Waiting{client, entry.generation});
  }
  if (wait.cap_ms < 0 && !unwatchable) return;  // no timer: only its descriptors wake it
  const auto cap = unwatchable ? std::chrono::duration_cast<std::chrono::milliseconds>(kUnwatchableRetry)
                               : std::chrono::milliseconds(wait.cap_ms);
  entry.timer = timers_.emplace(Clock::now() + cap, client);
  entry.has_timer = true;
}

void ProgressEngine::advanceRunnable() {
  static std::atomic<uint64_t> generations{0};
  // One turn each for those runnable now: a client that spins goes to the back, behind the events.
  for (size_t turns = runnable_.size(); turns > 0 && !runnable_.empty(); --turns) {
    Client* client = runnable_.front();
    runnable_.pop_front();
    auto it = entries_.find(client);
    if (it == entries_.end()) continue;
    it->second.runnable = false;
    RunWait* wait = nullptr;
    const bool more = client->advance(&wait);
    it = entries_.find(client);  // advance() may have removed it (a communicator destroyed on this thread)
    if (it == entries_.end()) continue;
    Entry& e = it->second;
    if (!more) {
      clearTimer(e);
      entries_.erase(it);
      continue;
    }
    e.generation = generations.fetch_add(1, std::memory_order_relaxed) + 1;
    e.wait = wait;
    if (wait->kind == RunWait::kPoll) {
      for (pollfd& p : wait->fds) p.revents = 0;
      arm(client, e, *wait);
    } else if (wait->pause.kind == IdleBackoff::Pause::kNap) {
      e.timer = timers_.emplace(Clock::now() + std::chrono::nanoseconds(wait->pause.nap_ns), client);
      e.has_timer = true;
    } else {
      e.runnable = true;  // a spin or a yield: its next turn comes after the others'
      e.wait = nullptr;
      runnable_.push_back(client);
    }
  }
}

int ProgressEngine::waitMs() const {
  if (!runnable_.empty()) return 0;
  if (timers_.empty()) return -1;
  const auto left = timers_.begin()->first - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
}

void ProgressEngine::loop() {
  std::vector<epoll_event> events(256);
  while (takeInbox()) {
    advanceRunnable();
    const int n = epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), waitMs());
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_.get()) {
        drainEventFd(fd);
        continue;
      }
      auto slot = waiters_.find(fd);
      if (slot == waiters_.end()) continue;
      std::vector<Waiting> woken;
      woken.swap(slot->second);
      waiters_.erase(slot);
      const short revents = pollEvents(events[i].events);
      for (const Waiting& w : woken) {
        auto it = entries_.find(w.client);
        if (it == entries_.end() || it->second.generation != w.generation || it->second.wait == nullptr) continue;
        for (pollfd& p : it->second.wait->fds) {
          if (p.fd == fd) p.revents = static_cast<short>(revents & (p.events | POLLERR | POLLHUP));
        }
        makeRunnable(w.client);
      }
    }
    const Clock::time_point now = Clock::now();
    while (!timers_.empty() && timers_.begin()->first <= now) {
      Client* client = timers_.begin()->second;
      auto it = entries_.find(client);
      if (it != entries_.end()) it->second.has_timer = false;
      timers_.erase(timers_.begin());
      if (it != entries_.end()) makeRunnable(client);
    }
  }
}

}  // namespace megascale
