#include "debug/fingerprint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "comm/process_group.h"
#include "comm/rendezvous.h"
#include "core/error.h"

namespace collie {
namespace {

constexpr uint32_t kMagic = 0x32504643;  // "CFP2"

struct Writer {
  Bytes b;
  template <typename T>
  void put(T v) {
    const size_t n = b.size();
    b.resize(n + sizeof(T));
    std::memcpy(b.data() + n, &v, sizeof(T));
  }
};

struct Reader {
  const uint8_t* p;
  size_t size;
  size_t pos = 0;
  template <typename T>
  T get() {
    if (pos + sizeof(T) > size) throw DesyncError("malformed fingerprint from a peer");
    T v;
    std::memcpy(&v, p + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
};

// Fields compared across ranks for a collective; splits are checked pairwise instead.
bool same_call(const Fingerprint& a, const Fingerprint& b) {
  return differing_fields(a, b).empty();
}

std::string rank_list(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", format_ranks(ranks));
}

}  // namespace

Fingerprint Fingerprint::of(const OpCall& c, int rank, int group_size, bool copy_splits) {
  Fingerprint f;
  f.rank = rank;
  f.seq = c.seq;
  f.op = c.type;
  const OpTraits& op = traits(c.type);
  const TensorView& t = op.output_shape ? c.output : c.input;
  f.has_tensor = op.count != OpTraits::Count::None;
  f.dtype = (t.data != nullptr || t.numel > 0) ? t.dtype : c.output.dtype;
  f.count = per_rank_count(c, group_size);
  // Ops that may carry splits describe their per-rank count (the shapes differ across ranks).
  if (f.has_tensor && !op.splits && (t.data != nullptr || t.numel > 0)) {
    f.shape = t.effective_shape();
  } else if (f.has_tensor) {
    f.shape.ndim = 1;
    f.shape.dims[0] = static_cast<int64_t>(f.count);
  }
  if (has_reduce_op(c.type)) f.reduce_op = c.reduce_op;
  if (has_root(c.type)) f.root = c.root;
  if (is_p2p(c.type)) {
    f.peer = c.peer;
    f.tag = c.tag;
  }
  f.has_splits = op.splits && !c.input_splits.empty();
  if (copy_splits) {
    f.input_splits.assign(c.input_splits.begin(), c.input_splits.end());
    f.output_splits.assign(c.output_splits.begin(), c.output_splits.end());
  }
  return f;
}

Bytes Fingerprint::encode() const {
  Writer w;
  w.put(kMagic);
  w.put<int32_t>(rank);
  w.put<uint64_t>(seq);
  w.put<uint8_t>(static_cast<uint8_t>(op));
  w.put<uint8_t>(static_cast<uint8_t>(dtype));
  w.put<uint8_t>(has_tensor);
  w.put<uint8_t>(static_cast<uint8_t>(reduce_op));
  w.put<uint64_t>(count);
  w.put<uint8_t>(shape.ndim);
  for (int i = 0; i < shape.ndim; ++i) w.put<int64_t>(shape.dims[i]);
  w.put<int32_t>(root);
  w.put<int32_t>(peer);
  w.put<int32_t>(tag);
  w.put<uint8_t>(has_splits);
  w.put<uint32_t>(static_cast<uint32_t>(input_splits.size()));
  for (int64_t v : input_splits) w.put(v);
  w.put<uint32_t>(static_cast<uint32_t>(output_splits.size()));
  for (int64_t v : output_splits) w.put(v);
  return std::move(w.b);
}

Fingerprint Fingerprint::decode(const Bytes& b) { return decode(b.data(), b.size()); }

Fingerprint Fingerprint::decode(const uint8_t* p, size_t n) {
  Reader r{p, n};
  if (r.get<uint32_t>() != kMagic) throw DesyncError("malformed fingerprint from a peer");
  Fingerprint f;
  f.rank = r.get<int32_t>();
  f.seq = r.get<uint64_t>();
  f.op = static_cast<OpType>(r.get<uint8_t>());
  f.dtype = static_cast<DType>(r.get<uint8_t>());
  f.has_tensor = r.get<uint8_t>() != 0;
  f.reduce_op = static_cast<ReduceOp>(r.get<uint8_t>());
  f.count = r.get<uint64_t>();
  f.shape.ndim = std::min<uint8_t>(r.get<uint8_t>(), Shape::kMaxDims);
  for (int i = 0; i < f.shape.ndim; ++i) f.shape.dims[i] = r.get<int64_t>();
  f.root = r.get<int32_t>();
  f.peer = r.get<int32_t>();
  f.tag = r.get<int32_t>();
  f.has_splits = r.get<uint8_t>() != 0;
  f.input_splits.resize(std::min<uint32_t>(r.get<uint32_t>(), 1u << 20));
  for (auto& v : f.input_splits) v = r.get<int64_t>();
  f.output_splits.resize(std::min<uint32_t>(r.get<uint32_t>(), 1u << 20));
  for (auto& v : f.output_splits) v = r.get<int64_t>();
  return f;
}

std::string describe(const Fingerprint& f) {
  std::string args;
  if (f.has_tensor) args = fmt::format("{}{}", dtype_name(f.dtype), f.shape.to_string());
  if (has_reduce_op(f.op)) args += fmt::format(", {}", reduce_op_name(f.reduce_op));
  if (has_root(f.op)) args += fmt::format(", root {}", f.root);
  if (is_p2p(f.op)) args += fmt::format(", tag {}", f.tag);
  const std::string peer = f.op == OpType::Send   ? fmt::format(" to rank {}", f.peer)
                           : f.op == OpType::Recv ? fmt::format(" from rank {}", f.peer)
                                                  : "";
  return fmt::format("{} #{}{}{}", op_name(f.op), f.seq, peer,
                     args.empty() ? "" : fmt::format(" ({})", args));
}

std::vector<std::string> differing_fields(const Fingerprint& a, const Fingerprint& b) {
  std::vector<std::string> d;
  if (a.op != b.op) d.push_back("op type");
  if (a.seq != b.seq) d.push_back("sequence number");
  if (a.has_tensor && b.has_tensor && a.dtype != b.dtype) d.push_back("dtype");
  // An op with splits (all_to_all) sends each rank its own amount, so the ranks' totals may
  // differ: check_collective compares what each pair sends and expects instead.
  const bool uneven = a.op == b.op && traits(a.op).splits && (a.has_splits || b.has_splits);
  if (!uneven && a.count != b.count) {
    d.push_back("element count");
  } else if (!uneven && a.shape.ndim != 0 && b.shape.ndim != 0 && !(a.shape == b.shape)) {
    d.push_back("shape");
  }
  if (has_reduce_op(a.op) && has_reduce_op(b.op) && a.reduce_op != b.reduce_op) {
    d.push_back("reduce op");
  }
  if (has_root(a.op) && has_root(b.op) && a.root != b.root) d.push_back("root");
  if (is_p2p(a.op) && is_p2p(b.op) && a.tag != b.tag) d.push_back("tag");
  return d;
}

std::string split_error(int sender, int64_t sent, int receiver, int64_t expected) {
  return fmt::format("rank {} sends {} elements to rank {}, which expects {}", sender, sent,
                     receiver, expected);
}

std::optional<std::string> check_collective(const std::vector<std::optional<Fingerprint>>& fps,
                                            Millis waited, const std::vector<int>& global_ranks) {
  std::vector<std::string> splits_errors;
  const bool all_came = std::all_of(fps.begin(), fps.end(), [](const auto& f) { return f; });
  if (all_came && !fps.empty() && traits(fps[0]->op).splits &&
      std::all_of(fps.begin(), fps.end(), [&](const auto& f) { return same_call(*fps[0], *f); })) {
    // What rank r sends to q must be what q expects from r.
    const size_t n = fps.size();
    auto amount = [&](const Fingerprint& f, const std::vector<int64_t>& splits, size_t i) {
      return i < splits.size() ? splits[i] : static_cast<int64_t>(f.count);
    };
    for (size_t r = 0; r < n; ++r) {
      for (size_t q = 0; q < n; ++q) {
        const int64_t sent = amount(*fps[r], fps[r]->input_splits, q);
        const int64_t want = amount(*fps[q], fps[q]->output_splits, r);
        if (sent != want)
          splits_errors.push_back(split_error(fps[r]->rank, sent, fps[q]->rank, want));
      }
    }
  }
  return collective_mismatch(fps, waited, global_ranks, splits_errors);
}

std::optional<std::string> collective_mismatch(const std::vector<std::optional<Fingerprint>>& fps,
                                               Millis waited, const std::vector<int>& global_ranks,
                                               const std::vector<std::string>& splits_errors) {
  // Group ranks by what they called, in order of first appearance.
  std::vector<std::pair<const Fingerprint*, std::vector<int>>> groups;
  std::vector<int> missing;
  for (size_t r = 0; r < fps.size(); ++r) {
    const int who = fps[r]                    ? fps[r]->rank
                    : r < global_ranks.size() ? global_ranks[r]
                                              : static_cast<int>(r);
    if (!fps[r]) {
      missing.push_back(who);
      continue;
    }
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return same_call(*g.first, *fps[r]); });
    if (it == groups.end()) {
      groups.push_back({&*fps[r], {who}});
    } else {
      it->second.push_back(who);
    }
  }
  const bool splits = groups.size() == 1 && missing.empty() && !splits_errors.empty();
  if (groups.size() <= 1 && missing.empty() && !splits) return std::nullopt;
  std::string calls;
  for (const auto& [fp, ranks] : groups) {
    if (!calls.empty()) calls += "; ";
    calls += fmt::format("{} called {}", rank_list(ranks), describe(*fp));
  }
  if (splits) {
    return fmt::format(
        "Detected mismatch between collectives on ranks: {}. Differs in: "
        "all_to_all splits ({})",
        calls, fmt::join(splits_errors, "; "));
  }
  std::vector<std::string> fields;
  for (size_t i = 1; i < groups.size(); ++i) {
    for (const auto& f : differing_fields(*groups[0].first, *groups[i].first)) {
      if (std::find(fields.begin(), fields.end(), f) == fields.end()) fields.push_back(f);
    }
  }
  std::string msg = fmt::format("Detected mismatch between collectives on ranks: {}", calls);
  if (!missing.empty()) {
    msg += fmt::format(
        "; {} did not arrive within {} ms (stuck in an earlier op, skipped this one, or exited)",
        rank_list(missing), waited.count());
  }
  if (!fields.empty()) msg += fmt::format(". Differs in: {}", fmt::join(fields, ", "));
  msg += ". Check that every rank makes the same calls in the same order";
  return msg;
}

std::optional<std::string> check_p2p(const std::optional<Fingerprint>& send,
                                     const std::optional<Fingerprint>& recv, int sender,
                                     int receiver, Millis waited) {
  if (send && recv) {
    std::vector<std::string> d;
    if (send->dtype != recv->dtype) d.push_back("dtype");
    if (send->count != recv->count) d.push_back("element count");
    if (send->tag != recv->tag) d.push_back("tag");
    if (d.empty()) return std::nullopt;
    return fmt::format(
        "Detected mismatch between send and recv: rank {} called {}; rank {} called {}. Differs "
        "in: {}",
        sender, describe(*send), receiver, describe(*recv), fmt::join(d, ", "));
  }
  if (send) {
    return fmt::format(
        "Detected unmatched send: rank {} called {} but rank {} posted no matching recv within {} "
        "ms (check the peer and the order of send/recv calls)",
        sender, describe(*send), receiver, waited.count());
  }
  if (recv) {
    return fmt::format(
        "Detected unmatched recv: rank {} called {} but rank {} posted no matching send within {} "
        "ms (check the peer and the order of send/recv calls)",
        receiver, describe(*recv), sender, waited.count());
  }
  return std::nullopt;
}

}  // namespace collie
