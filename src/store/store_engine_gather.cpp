// StoreEngine's gathers (store/store_engine.h): every member contributes one value; the values
// are joined once, when the last member arrives.
#include <fmt/format.h>

#include "core/error.h"
#include "store/store_engine.h"

namespace collie::store_server {

using store_wire::Reader;
using store_wire::Status;
using store_wire::Writer;

namespace {
// A finished gather keeps its name and member count, to refuse a late duplicate.
constexpr size_t kGatherOverhead = 96;
// Per member while the gather runs: its value's vector and its arrival flag.
constexpr size_t kPerMember = sizeof(Bytes) + 1;

enum Read : uint8_t { kAll = 0, kRoot = 1, kNone = 2, kColumn = 3 };

// Reply body of a member that reads no values: complete, 0 values.
constexpr uint8_t kCompleteNoValues[] = {1, 0, 0, 0, 0};
}  // namespace

void StoreEngine::on_gather(uint64_t conn, uint32_t id, Reader& r) {
  std::string name = r.str();
  const uint32_t member = r.u32();
  const uint32_t members = r.u32();
  Bytes value = r.bytes();
  const uint8_t read = r.u8();
  const int64_t timeout_ms = r.i64();
  if (members == 0 || member >= members || read > kColumn) {
    throw InvalidArgument(fmt::format(
        "gather '{}': member {} of {} (read mode {}) is out of range (members >= 1, 0 <= member "
        "< members, mode 0-3)",
        name, member, members, read));
  }
  if (read == kColumn && value.size() % members != 0) {
    throw InvalidArgument(
        fmt::format("gather '{}' (column): member {}'s value of {} bytes is not {} equal cells",
                    name, member, value.size(), members));
  }
  auto it = gathers_.find(name);
  const size_t fresh_bytes = kGatherOverhead + name.size() + size_t{members} * kPerMember;
  if (it == gathers_.end()) {
    if (!fits(conn, id, store_wire::Op::kGather, name, value.size(),
              stored_bytes() + fresh_bytes + value.size()))
      return;
    auto g = std::make_unique<Gather>();
    g->members = members;
    g->read = read;
    g->values.resize(members);
    g->have.assign(members, 0);
    g->bytes = fresh_bytes;
    gather_bytes_ += g->bytes;
    it = gathers_.emplace(name, std::move(g)).first;
  } else if (!fits(conn, id, store_wire::Op::kGather, name, value.size(),
                   stored_bytes() + value.size())) {
    return;
  }
  Gather& g = *it->second;
  if (g.members != members || g.read != read) {
    throw InvalidArgument(fmt::format(
        "gather '{}': member {} says {} members (read mode {}), another member said {} (mode {})",
        name, member, members, read, g.members, g.read));
  }
  if (g.done || g.have[member]) {
    throw InvalidArgument(fmt::format(
        "gather '{}': member {} contributed twice (each member calls once per gather name)", name,
        member));
  }
  if (read == kColumn) {
    const size_t cell = value.size() / members;
    if (g.cell != SIZE_MAX && g.cell != cell) {
      throw InvalidArgument(
          fmt::format("gather '{}' (column): member {} has cells of {} bytes, another member of {}",
                      name, member, cell, g.cell));
    }
    g.cell = cell;
  }
  g.bytes += value.size();
  gather_bytes_ += value.size();
  g.values[member] = std::move(value);
  g.have[member] = 1;
  ++g.arrived;
  if (g.arrived == g.members) return complete_gather(name, g, member, conn, id);
  if (read == kRoot && member != 0) {
    return sink_.send(conn, id, Status::kOk, kCompleteNoValues);
  }
  Parked& p = park(conn, id, store_wire::Op::kGather, timeout_ms);
  p.gather = name;
  p.member = member;
  p.bytes = kParkedOverhead + name.size();
  conn_parked_[conn].bytes += p.bytes;
  g.waiting.push_back(p.pid);
  publish_parked();
}

void StoreEngine::complete_gather(const std::string& name, Gather& g, uint32_t last_member,
                                  uint64_t conn, uint32_t id) {
  // What a reader gets, built once (kAll, kRoot) or per reader (kColumn: its own cells).
  size_t total = 5;
  if (g.read == kColumn) {
    total += size_t{g.members} * (4 + g.cell);
  } else if (g.read != kNone) {
    for (const Bytes& v : g.values) total += 4 + v.size();
  }
  std::string too_big;
  if (total + 5 > lim_.max_message_bytes) {
    too_big = fmt::format(
        "gather '{}' of {} members would answer {} bytes, above max_message_bytes ({}): gather "
        "smaller values (or raise max_message_bytes on every rank)",
        name, g.members, total, lim_.max_message_bytes);
  }
  Bytes all;
  if (too_big.empty() && (g.read == kAll || g.read == kRoot)) {
    Writer w;
    w.u8(1).u32(g.members);
    for (const Bytes& v : g.values) w.bytes(v);
    all.assign(w.body().begin(), w.body().end());
  }
  auto answer = [&](uint64_t c, uint32_t i, uint32_t member) {
    const bool reads = g.read == kAll || g.read == kColumn || (g.read == kRoot && member == 0);
    if (!reads) return sink_.send(c, i, Status::kOk, kCompleteNoValues);
    if (!too_big.empty()) {
      return sink_.send(c, i, Status::kError,
                        {reinterpret_cast<const uint8_t*>(too_big.data()), too_big.size()});
    }
    if (g.read != kColumn) return sink_.send(c, i, Status::kOk, all);
    Writer w;
    w.u8(1).u32(g.members);
    for (const Bytes& v : g.values) w.bytes(v.data() + size_t{member} * g.cell, g.cell);
    sink_.send(c, i, Status::kOk, w.body());
  };
  std::vector<ParkedId> waiting = std::move(g.waiting);
  for (ParkedId pid : waiting) {
    auto pi = parked_.find(pid);
    if (pi == parked_.end()) continue;  // it timed out or left
    const uint64_t c = pi->second->conn;
    const uint32_t i = pi->second->id;
    const uint32_t m = pi->second->member;
    unpark(pid);
    answer(c, i, m);
  }
  answer(conn, id, last_member);
  // Keep a tombstone only: the name and member count, so a late duplicate is refused.
  gather_bytes_ -= g.bytes;
  std::vector<Bytes>().swap(g.values);
  std::vector<uint8_t>().swap(g.have);
  Bytes().swap(g.missing);
  g.done = true;
  g.bytes = kGatherOverhead + name.size();
  gather_bytes_ += g.bytes;
}

// The members not arrived yet, as ranges: u8 0 | u32 n | n x (u32 first, u32 last).
const Bytes& StoreEngine::missing_body(Gather& g) {
  if (g.missing_at == g.arrived) return g.missing;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (uint32_t m = 0; m < g.members; ++m) {
    if (g.have[m]) continue;
    if (!ranges.empty() && ranges.back().second + 1 == m) {
      ranges.back().second = m;
    } else {
      ranges.emplace_back(m, m);
    }
  }
  Writer w;
  w.u8(0).u32(static_cast<uint32_t>(ranges.size()));
  for (const auto& [a, b] : ranges) w.u32(a).u32(b);
  g.missing.assign(w.body().begin(), w.body().end());
  g.missing_at = g.arrived;
  return g.missing;
}

bool StoreEngine::delete_gather(const std::string& name) {
  auto it = gathers_.find(name);
  if (it == gathers_.end()) return false;
  Gather& g = *it->second;
  const std::string msg = fmt::format("gather '{}' was deleted while this member waited", name);
  std::vector<ParkedId> waiting = std::move(g.waiting);
  for (ParkedId pid : waiting) {
    auto pi = parked_.find(pid);
    if (pi == parked_.end()) continue;
    const uint64_t c = pi->second->conn;
    const uint32_t i = pi->second->id;
    unpark(pid);
    sink_.send(c, i, Status::kError, {reinterpret_cast<const uint8_t*>(msg.data()), msg.size()});
  }
  gather_bytes_ -= g.bytes;
  gathers_.erase(it);
  return true;
}

}  // namespace collie::store_server
