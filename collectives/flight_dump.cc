#include "collectives/flight_dump.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "collectives/algorithms/registry.h"
#include "collectives/dtype.h"
#include "collectives/flight_record.h"
#include "collectives/schedule.h"
#include "common/heartbeat.h"
#include "common/status.h"
#include "topology/host_record.h"

namespace megascale::flight {

namespace {

using nlohmann::json;

constexpr int kMaxMembers = 1 << 20;  // bounds what a corrupt area can make us allocate

const char* stateName(uint8_t state) {
  switch (static_cast<OpState>(state)) {
    case OpState::kQueued: return "queued";
    case OpState::kRunning: return "running";
    case OpState::kDone: return "done";
    case OpState::kFailed: return "failed";
    case OpState::kEmpty: break;
  }
  return "";
}

// An entry written after `now` was read (the reader takes the time first) counts as just now.
double secondsBefore(int64_t now_ns, int64_t at_ns) { return at_ns == 0 ? -1 : std::max<int64_t>(0, now_ns - at_ns) / 1e9; }

std::vector<int> membersOf(const GroupBlock& block, int size) {
  std::vector<int> members;
  const int stride = block.member_stride.load(std::memory_order_relaxed);
  const int first = block.member_first.load(std::memory_order_relaxed);
  const int listed = stride != 0 ? std::min(size, kMaxMembers) : std::min(size, kListedMembers);
  for (int i = 0; i < listed; ++i) {
    members.push_back(stride != 0 ? first + i * stride : block.members[i].load(std::memory_order_relaxed));
  }
  return members;
}

int worldRank(const std::vector<int>& members, int group_rank) {
  return group_rank >= 0 && static_cast<size_t>(group_rank) < members.size() ? members[group_rank] : -1;
}

// A consistent copy of the entry, or false when it is empty or was being rewritten. Every load acquires (free on
// x86), so the second read of the version cannot move above them: a seqlock without a fence, which TSan checks.
bool readEntry(const Entry& e, const std::vector<int>& members, int64_t now_ns, OpRecord* out) {
  const uint32_t before = e.version.load(std::memory_order_acquire);
  if (before & 1u) return false;
  OpRecord op;
  const uint8_t state = e.state.load(std::memory_order_acquire);
  const uint8_t kind = e.kind.load(std::memory_order_acquire);
  const auto type = static_cast<mscDataType_t>(e.dtype.load(std::memory_order_acquire));
  const uint8_t algorithm = e.algorithm.load(std::memory_order_acquire);
  op.seq = e.seq.load(std::memory_order_acquire);
  op.root = e.root.load(std::memory_order_acquire);
  op.count = e.count.load(std::memory_order_acquire);
  op.issued_s = secondsBefore(now_ns, e.issued_ns.load(std::memory_order_acquire));
  op.started_s = secondsBefore(now_ns, e.started_ns.load(std::memory_order_acquire));
  op.finished_s = secondsBefore(now_ns, e.finished_ns.load(std::memory_order_acquire));
  const int waiting_for = e.waiting_for.load(std::memory_order_acquire);
  const uint8_t error = e.error.load(std::memory_order_acquire);
  op.peer_count = e.peer_count.load(std::memory_order_acquire);
  const int send_peer = e.send_peer.load(std::memory_order_acquire);
  const int recv_peer = e.recv_peer.load(std::memory_order_acquire);
  const auto redop = static_cast<mscRedOp_t>(e.redop.load(std::memory_order_acquire));
  if (e.version.load(std::memory_order_acquire) != before || state == 0) return false;
  const bool known_kind = kind <= static_cast<uint8_t>(Collective::kSendRecv);
  // Fields the state does not vouch for belong to the entry's previous operation.
  const auto st = static_cast<OpState>(state);
  if (st == OpState::kQueued) op.started_s = -1;
  if (st == OpState::kQueued || st == OpState::kRunning) op.finished_s = -1;
  op.kind = known_kind ? collectiveName(static_cast<Collective>(kind)) : "unknown";
  op.dtype = dtypeName(type);
  if (known_kind && reduces(static_cast<Collective>(kind))) op.redop = opName(redop);
  if (algorithm != static_cast<uint8_t>(Algorithm::kAuto) || op.started_s >= 0) {
    op.algorithm = algorithmName(static_cast<Algorithm>(algorithm));
  }
  op.bytes = op.count * dtypeSize(type);
  op.state = stateName(state);
  if (static_cast<OpState>(state) == OpState::kFailed) op.error = errorCodeName(static_cast<ErrorCode>(error));
  op.waiting_for = worldRank(members, waiting_for);
  if (op.pointToPoint()) {
    op.send_peer = worldRank(members, send_peer);
    op.recv_peer = worldRank(members, recv_peer);
  } else {
    op.peer_count = 0;
  }
  *out = std::move(op);
  return true;
}

GroupRecord readGroup(const GroupBlock& block, int64_t now_ns) {
  GroupRecord g;
  g.name = heartbeat::unpackName(block.name.load(std::memory_order_relaxed));
  g.rank = block.rank.load(std::memory_order_relaxed);
  g.size = std::max(0, block.size.load(std::memory_order_relaxed));
  g.members = membersOf(block, g.size);
  g.collectives = block.collectives.load(std::memory_order_relaxed);
  g.point_to_point = block.point_to_point.load(std::memory_order_relaxed);
  g.closed = static_cast<GroupState>(block.state.load(std::memory_order_acquire)) == GroupState::kClosed;
  const uint64_t ops = block.ops.load(std::memory_order_acquire);
  for (uint64_t t = ops > kEntries ? ops - kEntries + 1 : 1; t <= ops; ++t) {
    OpRecord op;
    if (readEntry(block.entries[(t - 1) % kEntries], g.members, now_ns, &op)) g.ops.push_back(std::move(op));
  }
  return g;
}

json opToJson(const OpRecord& op) {
  json j = {{"seq", op.seq},     {"kind", op.kind},         {"dtype", op.dtype},         {"count", op.count},
            {"bytes", op.bytes}, {"state", op.state},       {"issued_s", op.issued_s},   {"started_s", op.started_s},
            {"finished_s", op.finished_s}};
  if (!op.redop.empty()) j["redop"] = op.redop;
  if (!op.algorithm.empty()) j["algorithm"] = op.algorithm;
  if (op.root >= 0) j["root"] = op.root;
  if (!op.error.empty()) j["error"] = op.error;
  if (op.waiting_for >= 0) j["waiting_for"] = op.waiting_for;
  if (op.pointToPoint()) {
    j["peer_count"] = op.peer_count;
    j["send_peer"] = op.send_peer;
    j["recv_peer"] = op.recv_peer;
  }
  return j;
}

template <typename T>
T field(const json& j, const char* name, const std::string& where) {
  const auto it = j.find(name);
  if (it == j.end()) throw Error(ErrorCode::kInvalidArgument, "flight record: " + where + " has no \"" + name + "\"");
  try {
    return it->get<T>();
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, "flight record: " + where + ": \"" + name + "\" is malformed: " + e.what());
  }
}

template <typename T>
T optionalField(const json& j, const char* name, const std::string& where, T otherwise) {
  return j.contains(name) ? field<T>(j, name, where) : otherwise;
}

OpRecord opFromJson(const json& j, const std::string& where) {
  OpRecord op;
  op.seq = field<uint32_t>(j, "seq", where);
  op.kind = field<std::string>(j, "kind", where);
  op.dtype = field<std::string>(j, "dtype", where);
  op.count = field<uint64_t>(j, "count", where);
  op.bytes = field<uint64_t>(j, "bytes", where);
  op.state = field<std::string>(j, "state", where);
  op.issued_s = field<double>(j, "issued_s", where);
  op.started_s = field<double>(j, "started_s", where);
  op.finished_s = field<double>(j, "finished_s", where);
  op.redop = optionalField<std::string>(j, "redop", where, "");
  op.algorithm = optionalField<std::string>(j, "algorithm", where, "");
  op.root = optionalField<int>(j, "root", where, -1);
  op.error = optionalField<std::string>(j, "error", where, "");
  op.waiting_for = optionalField<int>(j, "waiting_for", where, -1);
  op.peer_count = optionalField<int>(j, "peer_count", where, 0);
  op.send_peer = optionalField<int>(j, "send_peer", where, -1);
  op.recv_peer = optionalField<int>(j, "recv_peer", where, -1);
  return op;
}

}  // namespace

std::string readCoordinates(const char* area) {
  std::string text;
  for (const auto& word : header(area).coordinates) text += heartbeat::unpackName(word.load(std::memory_order_relaxed));
  return text;
}

RankRecord readArea(const char* area, int64_t now_ns) {
  RankRecord r;
  r.taken_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  r.host = topology::thisHostName();
  const Header& h = header(area);
  if (h.magic.load(std::memory_order_acquire) != kMagic) return r;
  r.rank = h.world_rank.load(std::memory_order_relaxed);
  r.pid = static_cast<int64_t>(h.pid.load(std::memory_order_relaxed));
  r.coordinates = readCoordinates(area);
  const int groups = std::min<int>(static_cast<int>(h.groups.load(std::memory_order_acquire)), kMaxGroups);
  for (int i = 0; i < groups; ++i) {
    const GroupBlock& block = group(area, i);
    if (static_cast<GroupState>(block.state.load(std::memory_order_acquire)) == GroupState::kFree) continue;
    r.groups.push_back(readGroup(block, now_ns));
  }
  return r;
}

namespace {

json recordToJson(const RankRecord& record, size_t max_ops) {
  json groups = json::array();
  for (const GroupRecord& g : record.groups) {
    json ops = json::array();
    const size_t first = g.ops.size() > max_ops ? g.ops.size() - max_ops : 0;
    for (size_t i = first; i < g.ops.size(); ++i) ops.push_back(opToJson(g.ops[i]));
    groups.push_back({{"name", g.name},
                      {"rank", g.rank},
                      {"size", g.size},
                      {"members", g.members},
                      {"collectives", g.collectives},
                      {"point_to_point", g.point_to_point},
                      {"closed", g.closed},
                      {"ops", std::move(ops)}});
  }
  json j = {{"rank", record.rank},     {"pid", record.pid},           {"host", record.host},
            {"coordinates", record.coordinates}, {"taken_at", record.taken_at}, {"reason", record.reason},
            {"groups", std::move(groups)}};
  if (!record.process.empty()) j["process"] = record.process;
  if (!record.last_report.empty()) j["last_report"] = record.last_report;
  if (record.stalled_s >= 0) j["stalled_s"] = record.stalled_s;
  return j;
}

json parse(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("flight record: not JSON: ") + e.what());
  }
}

RankRecord recordFromJson(const json& j) {
  if (!j.is_object()) throw Error(ErrorCode::kInvalidArgument, "flight record: not a JSON object");
  RankRecord r;
  r.rank = field<int>(j, "rank", "the record");
  const std::string where = "rank " + std::to_string(r.rank) + "'s record";
  r.pid = field<int64_t>(j, "pid", where);
  r.host = field<std::string>(j, "host", where);
  r.coordinates = field<std::string>(j, "coordinates", where);
  r.taken_at = field<double>(j, "taken_at", where);
  r.reason = field<std::string>(j, "reason", where);
  r.process = optionalField<std::string>(j, "process", where, "");
  r.last_report = optionalField<std::string>(j, "last_report", where, "");
  r.stalled_s = optionalField<double>(j, "stalled_s", where, -1);
  const json groups = field<json>(j, "groups", where);
  if (!groups.is_array()) throw Error(ErrorCode::kInvalidArgument, "flight record: " + where + ": \"groups\" is not a list");
  for (const json& jg : groups) {
    GroupRecord g;
    g.name = field<std::string>(jg, "name", where + ", a group");
    const std::string in_group = where + ", group " + g.name;
    g.rank = field<int>(jg, "rank", in_group);
    g.size = field<int>(jg, "size", in_group);
    g.members = field<std::vector<int>>(jg, "members", in_group);
    g.collectives = field<uint32_t>(jg, "collectives", in_group);
    g.point_to_point = field<uint32_t>(jg, "point_to_point", in_group);
    g.closed = field<bool>(jg, "closed", in_group);
    const json ops = field<json>(jg, "ops", in_group);
    if (!ops.is_array()) throw Error(ErrorCode::kInvalidArgument, "flight record: " + in_group + ": \"ops\" is not a list");
    for (const json& jo : ops) g.ops.push_back(opFromJson(jo, in_group + ", an operation"));
    r.groups.push_back(std::move(g));
  }
  return r;
}

}  // namespace

std::string toJson(const RankRecord& record) { return recordToJson(record, SIZE_MAX).dump(1) + "\n"; }

RankRecord rankRecordFromJson(const std::string& text) { return recordFromJson(parse(text)); }

std::string toJsonList(const std::vector<RankRecord>& records, size_t max_ops) {
  json list = json::array();
  for (const RankRecord& r : records) list.push_back(recordToJson(r, max_ops));
  return list.dump();
}

std::vector<RankRecord> rankRecordsFromJsonList(const std::string& text) {
  const json list = parse(text);
  if (!list.is_array()) throw Error(ErrorCode::kInvalidArgument, "flight records: not a JSON list");
  std::vector<RankRecord> records;
  for (const json& j : list) records.push_back(recordFromJson(j));
  return records;
}

}  // namespace megascale::flight
