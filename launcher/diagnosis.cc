#include "launcher/diagnosis.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace megascale::launcher {

namespace {

using flight::GroupRecord;
using flight::OpRecord;
using flight::RankRecord;

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", s);
  return text;
}

// "0-3, 6": ranks in order, runs as ranges.
std::string rankRange(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i) text += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

std::string ranksNamed(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rankRange(ranks);
}

// One communicator as the records of all its members show it.
struct GroupView {
  std::string name;
  std::vector<int> members;
  int index = 0;                                 // among the groups of the same name, by lowest member
  bool several = false;                          // other groups share the name
  std::map<int, const GroupRecord*> by_rank;     // world rank -> its record of the group
  std::string label() const {
    return name + (several ? " group " + std::to_string(index) : "") + " (" + ranksNamed(members) + ")";
  }
};

struct Job {
  std::map<int, const RankRecord*> ranks;
  std::vector<GroupView> groups;
};

Job gather(const std::vector<RankRecord>& records) {
  Job job;
  std::map<std::pair<std::string, std::vector<int>>, size_t> index_of;
  for (const RankRecord& r : records) {
    if (r.rank < 0) continue;
    job.ranks[r.rank] = &r;
    for (const GroupRecord& g : r.groups) {
      // A closed group counts too: a rank that exited after a failure closed its communicators on the way out.
      if (g.members.empty()) continue;
      const auto key = std::make_pair(g.name, g.members);
      auto [it, added] = index_of.emplace(key, job.groups.size());
      if (added) {
        GroupView view;
        view.name = g.name;
        view.members = g.members;
        job.groups.push_back(std::move(view));
      }
      // A group made again with the same members: the live one, else the later one, is what the rank is in.
      const GroupRecord*& kept = job.groups[it->second].by_rank[r.rank];
      if (kept == nullptr || !g.closed || kept->closed) kept = &g;
    }
  }
  std::map<std::string, std::vector<GroupView*>> by_name;
  for (GroupView& g : job.groups) by_name[g.name].push_back(&g);
  for (auto& [name, views] : by_name) {
    std::sort(views.begin(), views.end(), [](const GroupView* a, const GroupView* b) { return a->members < b->members; });
    for (size_t i = 0; i < views.size(); ++i) {
      views[i]->index = static_cast<int>(i);
      views[i]->several = views.size() > 1;
    }
  }
  return job;
}

std::string describeRank(const Job& job, int rank) {
  std::string text = "rank " + std::to_string(rank);
  const auto it = job.ranks.find(rank);
  if (it == job.ranks.end()) return text + " (no flight record)";
  const RankRecord& r = *it->second;
  text += " (host " + r.host;
  if (!r.coordinates.empty()) text += ", " + r.coordinates;
  return text + ")";
}

// --- mismatches ---

std::string signature(const OpRecord& op) {
  std::string text = op.kind + " #" + std::to_string(op.seq) + " with " + std::to_string(op.bytes) + " B (" +
                     std::to_string(op.count) + " x " + op.dtype;
  if (!op.redop.empty()) text += " " + op.redop;
  if (op.root >= 0) text += ", root " + std::to_string(op.root);
  return text + ")";
}

struct Mismatch {
  const GroupView* group;
  std::map<std::string, std::vector<int>> ranks_by_signature;
  double issued_s;  // the oldest issue among the ranks: the first divergence comes first
};

std::vector<Mismatch> findMismatches(const Job& job) {
  std::vector<Mismatch> found;
  for (const GroupView& g : job.groups) {
    std::map<uint32_t, std::vector<std::pair<int, const OpRecord*>>> by_seq;
    for (const auto& [rank, record] : g.by_rank) {
      for (const OpRecord& op : record->ops) {
        if (!op.pointToPoint()) by_seq[op.seq].emplace_back(rank, &op);
      }
    }
    for (const auto& [seq, calls] : by_seq) {
      Mismatch m{&g, {}, 0};
      for (const auto& [rank, op] : calls) {
        m.ranks_by_signature[signature(*op)].push_back(rank);
        m.issued_s = std::max(m.issued_s, op->issued_s);
      }
      if (m.ranks_by_signature.size() > 1) {
        found.push_back(std::move(m));
        break;  // later sequence numbers of a diverged group say nothing new
      }
    }
  }
  std::sort(found.begin(), found.end(), [](const Mismatch& a, const Mismatch& b) { return a.issued_s > b.issued_s; });
  return found;
}

Diagnosis mismatchVerdict(const Job& job, const Mismatch& m) {
  // The call most ranks made is the reference; every other one is a culprit.
  std::vector<std::pair<std::string, std::vector<int>>> calls(m.ranks_by_signature.begin(), m.ranks_by_signature.end());
  std::stable_sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  Diagnosis d;
  d.kind = Diagnosis::Kind::kMismatch;
  std::string differing;
  for (size_t i = 1; i < calls.size(); ++i) {
    differing += (differing.empty() ? "" : ", ") + ranksNamed(calls[i].second) + " called " + calls[i].first;
    d.culprits.insert(d.culprits.end(), calls[i].second.begin(), calls[i].second.end());
  }
  std::sort(d.culprits.begin(), d.culprits.end());
  d.verdict = "mismatch (a bug in the program, not a fault of the machines) in " + m.group->label() + ": " + differing +
              "; " + ranksNamed(calls[0].second) + " called " + calls[0].first;
  for (int r : d.culprits) d.detail.push_back(describeRank(job, r) + " diverged from its group here");
  return d;
}

// --- hangs ---

struct Wait {
  int waiter;
  const GroupView* group;
  const OpRecord* op;
  bool never_entered;  // the waited-for rank has not issued the operation (else: the run names it)
  double for_s() const;
};

// How long the operation has waited: to now, or until it failed.
double waitedS(const OpRecord& op) {
  if (op.started_s < 0) return op.issued_s;
  return op.finished_s >= 0 ? op.started_s - op.finished_s : op.started_s;
}

double Wait::for_s() const { return waitedS(*op); }

// Stopped, or killed by a signal: it holds others up and cannot move itself. A rank that exited on its own after
// its operation failed is a victim: what it waited in still says whom it waited for.
bool halted(const RankRecord& r) {
  return r.process == "stopped by a signal" || r.process.rfind("was killed by signal", 0) == 0;
}

// In each of the rank's groups, the operation it is blocked in: the first after its last finished one that is
// still in flight, or that failed (a peer died or it timed out: what it waited in when it broke).
std::vector<std::pair<const GroupView*, const OpRecord*>> inFlight(const Job& job, int rank) {
  std::vector<std::pair<const GroupView*, const OpRecord*>> ops;
  for (const GroupView& g : job.groups) {
    const auto it = g.by_rank.find(rank);
    if (it == g.by_rank.end()) continue;
    const OpRecord* blocked = nullptr;
    for (const OpRecord& op : it->second->ops) {
      if (op.state == "done") {
        blocked = nullptr;
      } else if (blocked == nullptr) {
        blocked = &op;
      }
    }
    if (blocked != nullptr) ops.emplace_back(&g, blocked);
  }
  return ops;
}

bool entered(const GroupView& g, int rank, const OpRecord& op) {
  const auto it = g.by_rank.find(rank);
  if (it == g.by_rank.end()) return false;
  const GroupRecord& record = *it->second;
  if (!op.pointToPoint()) return record.collectives > op.seq;
  return std::any_of(record.ops.begin(), record.ops.end(), [](const OpRecord& o) { return o.pointToPoint() && o.state != "done"; });
}

// Who each stuck rank waits for: the members that never entered its operation, else the peer its run names.
std::multimap<int, Wait> waitsFor(const Job& job, std::set<int>* stuck) {
  std::multimap<int, Wait> waits;  // waited-for rank -> the wait
  for (const auto& [rank, record] : job.ranks) {
    if (halted(*record)) continue;
    for (const auto& [g, op] : inFlight(job, rank)) {
      stuck->insert(rank);
      std::vector<int> peers = op->pointToPoint() ? std::vector<int>{op->send_peer, op->recv_peer} : g->members;
      bool named = false;
      for (int m : peers) {
        if (m < 0 || m == rank) continue;
        const bool in_it = entered(*g, m, *op);
        const auto peer = job.ranks.find(m);
        // A member that entered but is stopped or dead holds the operation up as surely as one that never came.
        if (in_it && (peer == job.ranks.end() || !halted(*peer->second))) continue;
        waits.emplace(m, Wait{rank, g, op, !in_it});
        named = true;
      }
      if (!named && op->waiting_for >= 0 && op->waiting_for != rank) waits.emplace(op->waiting_for, Wait{rank, g, op, false});
    }
  }
  return waits;
}

std::string stateOf(const Job& job, int rank, const std::set<int>& stuck) {
  const auto it = job.ranks.find(rank);
  if (it == job.ranks.end()) return "no flight record of it";
  const RankRecord& r = *it->second;
  std::string text = halted(r) || (!stuck.count(rank) && r.process.rfind("exited", 0) == 0) ? r.process
                     : stuck.count(rank)                                                   ? "itself waiting"
                                                                                           : "outside any collective";
  if (!r.last_report.empty()) text += "; last report: " + r.last_report;
  return text;
}

Diagnosis hangVerdict(const Job& job) {
  std::set<int> stuck;
  const std::multimap<int, Wait> waits = waitsFor(job, &stuck);
  if (stuck.empty()) return {};
  // Follow the waits from every stuck rank; the ranks they end at (not stuck themselves, or stopped or dead)
  // are the culprits.
  std::set<int> culprits, seen;
  std::vector<int> frontier(stuck.begin(), stuck.end());
  std::map<int, std::vector<int>> waited_by;
  for (const auto& [target, w] : waits) waited_by[w.waiter].push_back(target);
  while (!frontier.empty()) {
    const int r = frontier.back();
    frontier.pop_back();
    if (!seen.insert(r).second) continue;
    const auto rec = job.ranks.find(r);
    const bool blocked = stuck.count(r) && (rec == job.ranks.end() || !halted(*rec->second));
    if (!blocked) {
      culprits.insert(r);
      continue;
    }
    for (int next : waited_by[r]) frontier.push_back(next);
  }
  Diagnosis d;
  d.kind = Diagnosis::Kind::kHang;
  if (culprits.empty()) {
    // Every rank is in its operation and none holds the others: the operation itself does not move.
    std::vector<int> all(stuck.begin(), stuck.end());
    d.verdict = "hang inside a collective: " + ranksNamed(all) +
                " all entered their operations and none moves (a link or transport fault rather than a rank)";
    d.culprits = all;
  } else {
    d.culprits.assign(culprits.begin(), culprits.end());
    // The culprit most ranks wait for directly, and the operation most of them wait in.
    int first = d.culprits.front();
    size_t most = 0;
    for (int c : d.culprits) {
      if (waits.count(c) > most) {
        most = waits.count(c);
        first = c;
      }
    }
    // The operation that waits on the culprit most directly: the most waiters that wait for it alone, then the
    // most waiters.
    std::map<std::pair<int, const OpRecord*>, int> targets;  // (waiter, operation) -> how many ranks it waits for
    for (const auto& [target, w] : waits) ++targets[{w.waiter, w.op}];
    std::map<std::pair<const GroupView*, uint32_t>, std::vector<const Wait*>> by_op;
    for (auto [it, end] = waits.equal_range(first); it != end; ++it) by_op[{it->second.group, it->second.op->seq}].push_back(&it->second);
    const auto score = [&](const std::vector<const Wait*>& ws) {
      size_t alone = 0;
      for (const Wait* w : ws) alone += targets[{w->waiter, w->op}] == 1 ? 1 : 0;
      return std::make_pair(alone, ws.size());
    };
    std::string what = "is not in any collective others wait in";
    size_t behind = 0;
    if (!by_op.empty()) {
      const auto busiest = std::max_element(by_op.begin(), by_op.end(),
                                            [&](const auto& a, const auto& b) { return score(a.second) < score(b.second); });
      const Wait& w = *busiest->second.front();
      std::vector<int> waiters;
      double longest = 0;
      for (const Wait* x : busiest->second) {
        waiters.push_back(x->waiter);
        longest = std::max(longest, x->for_s());
      }
      std::sort(waiters.begin(), waiters.end());
      waiters.erase(std::unique(waiters.begin(), waiters.end()), waiters.end());
      const std::string op = w.op->kind + " #" + std::to_string(w.op->seq) + " of " + w.group->label();
      what = (w.never_entered ? "never entered " : "holds up ") + op + "; " + ranksNamed(waiters) +
             (waiters.size() == 1 ? " waits" : " wait") + " in it for " + seconds(longest);
      behind = stuck.size() - waiters.size();
    }
    d.verdict = describeRank(job, first) + " " + what + " (" + stateOf(job, first, stuck) + ")";
    if (behind > 0) d.verdict += "; " + std::to_string(behind) + (behind == 1 ? " more rank waits" : " more ranks wait") + " behind them";
    if (d.culprits.size() > 1) {
      std::vector<int> others;
      for (int c : d.culprits) {
        if (c != first) others.push_back(c);
      }
      d.verdict += "; also " + ranksNamed(others);
    }
  }
  for (int c : d.culprits) d.detail.push_back(describeRank(job, c) + ": " + stateOf(job, c, stuck));
  for (int r : stuck) {
    for (const auto& [g, op] : inFlight(job, r)) {
      const std::string what = op->kind + " #" + std::to_string(op->seq) + " of " + g->label();
      std::string line = describeRank(job, r) +
                         (op->state == "failed" ? " failed (" + op->error + ") in " + what + " after "
                                                : " waits in " + what + " for ") +
                         seconds(waitedS(*op));
      std::vector<int> targets;
      for (const auto& [target, w] : waits) {
        if (w.waiter == r && w.op == op) targets.push_back(target);
      }
      if (!targets.empty()) line += " (for " + ranksNamed(targets) + ")";
      d.detail.push_back(line);
    }
  }
  return d;
}

}  // namespace

Diagnosis diagnose(const std::vector<flight::RankRecord>& records) {
  const Job job = gather(records);
  const std::vector<Mismatch> mismatches = findMismatches(job);
  if (!mismatches.empty()) return mismatchVerdict(job, mismatches.front());
  Diagnosis d = hangVerdict(job);
  if (d.kind == Diagnosis::Kind::kNothing) d.verdict = "no rank is waiting in an operation";
  return d;
}

}  // namespace megascale::launcher
