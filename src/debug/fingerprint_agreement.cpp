#include "debug/fingerprint_agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "comm/process_group.h"
#include "comm/rendezvous.h"
#include "core/error.h"
#include "core/log.h"
#include "debug/agreement_math.h"
#include "discovery/bind_address.h"
#include "store/store.h"

namespace collie {
namespace {

using agreement::Summary;

constexpr uint32_t kRecordMagic = 0x31524443;  // "CDR1"
enum Rows : uint8_t { kNoRows = 0, kAllRows = 1, kLocatedRows = 2 };

// What a rank leaves in the store for rank 0: its fingerprint, its splits term, and as many of
// its all_to_all amounts as the check needs (`rows`).
struct Record {
  Fingerprint fp;
  uint64_t term = 0;
  Rows rows = kNoRows;
};

Bytes encode_record(const Record& r) {
  const Bytes fp = r.fp.encode();
  Bytes b(4 + 1 + 8 + fp.size());
  std::memcpy(b.data(), &kRecordMagic, 4);
  b[4] = r.rows;
  std::memcpy(b.data() + 5, &r.term, 8);
  std::memcpy(b.data() + 13, fp.data(), fp.size());
  return b;
}

Record decode_record(const Bytes& b) {
  uint32_t magic = 0;
  if (b.size() < 13 || (std::memcpy(&magic, b.data(), 4), magic != kRecordMagic) || b[4] > 2) {
    throw DesyncError("malformed DETAIL record from a peer");
  }
  Record r;
  r.rows = static_cast<Rows>(b[4]);
  std::memcpy(&r.term, b.data() + 5, 8);
  r.fp = Fingerprint::decode(b.data() + 13, b.size() - 13);
  return r;
}

// The verdict rank 0 publishes: "ok", or "x" and the DesyncError text.
Bytes encode_verdict(const std::optional<std::string>& text) {
  return to_bytes(text ? "x" + *text : std::string("ok"));
}
std::optional<std::string> decode_verdict(const Bytes& v) {
  const std::string s = to_string(v);
  if (s == "ok") return std::nullopt;
  return s.empty() ? std::string("malformed DETAIL verdict in the store") : s.substr(1);
}

}  // namespace

FingerprintAgreement::FingerprintAgreement(std::shared_ptr<Store> store, int rank, int size,
                                           std::vector<int> global_ranks,
                                           std::unique_ptr<AgreementTree> tree)
    : store_(std::move(store)),
      rank_(rank),
      size_(size),
      global_ranks_(std::move(global_ranks)),
      tree_(std::move(tree)) {}

FingerprintAgreement::~FingerprintAgreement() = default;

void FingerprintAgreement::shutdown() {
  if (tree_) tree_->close();
}

int FingerprintAgreement::global(int r) const {
  return static_cast<size_t>(r) < global_ranks_.size() ? global_ranks_[static_cast<size_t>(r)] : r;
}

std::optional<std::string> FingerprintAgreement::check(const Fingerprint& mine,
                                                       std::span<const int64_t> in,
                                                       std::span<const int64_t> out,
                                                       Millis timeout) {
  ++count_;
  const auto start = Clock::system().now();
  std::string tree_error;
  if (tree_ && !tree_->broken()) {
    Summary s = agreement::summary_of(mine, rank_, size_, in, out);
    uint8_t value[sizeof(Summary)], scratch[2 * sizeof(Summary)];
    std::memcpy(value, &s, sizeof(s));
    try {
      tree_->allreduce(value, sizeof(value), scratch, agreement::combine_summaries,
                       start + timeout);
      std::memcpy(&s, value, sizeof(s));
      if (s.agreed(size_)) return std::nullopt;
      if (s.hash_min != s.hash_max || s.splits == 0) {
        return through_store(mine, in, out, timeout, start, nullptr, "");
      }
      const Located located = locate(mine, in, out, start + timeout);
      return through_store(mine, in, out, timeout, start, &located, "");
    } catch (const Error& e) {
      tree_error = e.what();
      log(LogLevel::Warning, "DETAIL check #{} ({}): {}; asking the store", count_, describe(mine),
          tree_error);
    }
  }
  return through_store(mine, in, out, timeout, start, nullptr, tree_error);
}

FingerprintAgreement::Located FingerprintAgreement::locate(const Fingerprint& mine,
                                                           std::span<const int64_t> in,
                                                           std::span<const int64_t> out,
                                                           Clock::TimePoint deadline) {
  const auto n = static_cast<size_t>(size_);
  std::vector<uint64_t> v(2 * n, 0), scratch(4 * n);
  agreement::splits_locate(mine, rank_, size_, in, out, v.data());
  tree_->allreduce(reinterpret_cast<uint8_t*>(v.data()), v.size() * sizeof(uint64_t),
                   reinterpret_cast<uint8_t*>(scratch.data()), agreement::add_vectors, deadline);
  Located l;
  for (size_t i = 0; i < n; ++i) {
    if (v[i] != 0 && l.all_senders++ < kListed) l.senders.push_back(static_cast<int>(i));
    if (v[n + i] != 0 && l.all_receivers++ < kListed) l.receivers.push_back(static_cast<int>(i));
  }
  return l;
}

std::optional<std::string> FingerprintAgreement::through_store(
    const Fingerprint& mine, std::span<const int64_t> in, std::span<const int64_t> out,
    Millis timeout, Clock::TimePoint start, const Located* located, const std::string& tree_error) {
  const std::string base = fmt::format("desync/a/{}", count_);
  auto record_key = [&](int r) { return fmt::format("{}/r/{}", base, r); };
  const std::string verdict_key = base + "/v";
  Record rec;
  rec.fp = mine;
  rec.term = agreement::splits_term(mine, rank_, size_, in, out);
  if (traits(mine.op).splits && located) {
    // Only the amounts of the pairs that may differ.
    rec.rows = kLocatedRows;
    auto amount = [&](std::span<const int64_t> s, int i) {
      return s.empty() ? static_cast<int64_t>(mine.count) : s[static_cast<size_t>(i)];
    };
    rec.fp.input_splits.clear();
    rec.fp.output_splits.clear();
    if (std::binary_search(located->senders.begin(), located->senders.end(), rank_)) {
      for (int t : located->receivers) rec.fp.input_splits.push_back(amount(in, t));
    }
    if (std::binary_search(located->receivers.begin(), located->receivers.end(), rank_)) {
      for (int s : located->senders) rec.fp.output_splits.push_back(amount(out, s));
    }
  } else if (traits(mine.op).splits && size_ <= kFullSplitsRanks) {
    rec.rows = kAllRows;
    rec.fp.input_splits.assign(in.begin(), in.end());
    rec.fp.output_splits.assign(out.begin(), out.end());
  }
  const Millis grace = std::clamp(timeout / 4, Millis(200), Millis(2000));
  try {
    // One round trip: drop this rank's record of its last store check (rank 0 read it before
    // it published that check's verdict, which this rank read), leave this one.
    store_->set_and_gather(prev_record_, record_key(rank_), encode_record(rec), {}, timeout);
    prev_record_ = record_key(rank_);
    const auto deadline = std::max(start + timeout, Clock::system().now() + grace);
    auto left = [&] {
      return std::max(Millis(1),
                      std::chrono::duration_cast<Millis>(deadline - Clock::system().now()));
    };
    // Rank 0 learns who came (one request; the others' return at once).
    const Store::GatherResult came =
        store_->gather(base + "/g", rank_, size_, {}, Store::GatherRead::kRoot, left());
    const std::vector<int>& missing = came.missing;
    if (rank_ != 0) {
      try {
        store_->wait({verdict_key}, left() + grace);
        return decode_verdict(store_->get(verdict_key));
      } catch (const StoreError&) {
        // Rank 0 never came (or came too late to answer): say so in its place.
        const std::string text = fmt::format(
            "Detected mismatch between collectives on ranks: rank {} called {}; rank {} did not "
            "arrive within {} ms (it collects DETAIL's check; stuck in an earlier op, skipped "
            "this one, or exited){}. Check that every rank makes the same calls in the same order",
            mine.rank, describe(mine), global(0), timeout.count(),
            tree_error.empty() ? "" : fmt::format(" [before that: {}]", tree_error));
        return decode_verdict(store_->compare_set(verdict_key, {}, encode_verdict(text)));
      }
    }
    // Rank 0: read what the others left (those that came), word the verdict.
    std::vector<std::string> present;
    for (int r = 0, m = 0; r < size_; ++r) {
      if (m < static_cast<int>(missing.size()) && missing[static_cast<size_t>(m)] == r) {
        ++m;
        continue;
      }
      present.push_back(record_key(r));
    }
    const std::vector<Bytes> records = store_->multi_get(present);
    const auto text = explain(records, missing, timeout, located);
    const auto verdict = decode_verdict(store_->compare_set(verdict_key, {}, encode_verdict(text)));
    if (missing.empty() && !prev_verdict_.empty()) {
      // Everyone came to this check after reading the last one's verdict.
      store_->delete_key(prev_verdict_);
    }
    prev_verdict_ = verdict_key;
    return verdict;
  } catch (const Error& e) {
    // The store is gone too (its host died): say what this rank knows.
    return fmt::format(
        "Detected mismatch between collectives on ranks: rank {} called {}, and DETAIL could not "
        "compare it with the other ranks' calls: {}{}",
        mine.rank, describe(mine), e.what(),
        tree_error.empty() ? "" : fmt::format(" [before that: {}]", tree_error));
  }
}

std::optional<std::string> FingerprintAgreement::explain(const std::vector<Bytes>& records,
                                                         const std::vector<int>& missing,
                                                         Millis timeout,
                                                         const Located* located) const {
  std::vector<std::optional<Fingerprint>> fps(static_cast<size_t>(size_));
  std::vector<Record> recs(static_cast<size_t>(size_));
  size_t next = 0;
  uint64_t terms = 0;
  bool all_rows = true, located_rows = true;
  for (int r = 0, m = 0; r < size_; ++r) {
    if (m < static_cast<int>(missing.size()) && missing[static_cast<size_t>(m)] == r) {
      ++m;
      continue;
    }
    Record& rec = recs[static_cast<size_t>(r)];
    rec = decode_record(records[next++]);
    fps[static_cast<size_t>(r)] = rec.fp;
    terms = agreement::add_mod(terms, rec.term % agreement::kPrime);
    all_rows = all_rows && rec.rows == kAllRows;
    located_rows = located_rows && rec.rows == kLocatedRows;
  }
  const auto fields = collective_mismatch(fps, timeout, global_ranks_, {});
  if (fields || !missing.empty() || !traits(fps[0]->op).splits) return fields;
  // Every rank came and made the same call: only the all_to_all pairs may differ.
  if (all_rows) return check_collective(fps, timeout, global_ranks_);
  std::vector<std::string> errors;
  if (located_rows && located) {
    const auto& S = located->senders;
    const auto& T = located->receivers;
    for (size_t i = 0; i < S.size(); ++i) {
      for (size_t j = 0; j < T.size(); ++j) {
        const Fingerprint& s = recs[static_cast<size_t>(S[i])].fp;
        const Fingerprint& t = recs[static_cast<size_t>(T[j])].fp;
        if (j >= s.input_splits.size() || i >= t.output_splits.size()) continue;
        if (s.input_splits[j] != t.output_splits[i]) {
          errors.push_back(split_error(s.rank, s.input_splits[j], t.rank, t.output_splits[i]));
        }
      }
    }
    if (located->all_senders > S.size() || located->all_receivers > T.size()) {
      errors.push_back(fmt::format(
          "and more: {} senders and {} receivers have pairs that differ; the pairs among the first "
          "{} of each are listed",
          located->all_senders, located->all_receivers, kListed));
    }
  }
  if (errors.empty() && terms != 0) {
    errors.push_back(fmt::format(
        "what some ranks send does not match what their receivers expect; over the store DETAIL "
        "lists the pairs only up to {} ranks",
        kFullSplitsRanks));
  }
  return collective_mismatch(fps, timeout, global_ranks_, errors);
}

std::unique_ptr<AgreementTree> make_agreement_tree(const ProcessGroup& pg, const std::string& tag,
                                                   const Env& env) {
  const GroupInfo& i = pg.info();
  const BindChoice bind = choose_gloo_bind(env, i.store_host);
  return AgreementTree::connect(i.store, tag, i.rank, i.size, bind.address, i.timeout,
                                i.global_ranks);
}

}  // namespace collie
