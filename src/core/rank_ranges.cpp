#include "core/rank_ranges.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

namespace collie {

RankRanges RankRanges::of(int first, int last) {
  RankRanges r;
  if (last >= first) r.add(first, last);
  return r;
}

void RankRanges::add(int first, int last) {
  if (last < first) return;
  RankRanges one;
  one.ranges_.emplace_back(first, last);
  one.count_ = int64_t{last} - first + 1;
  merge(one);
}

void RankRanges::merge(const RankRanges& o) {
  if (o.ranges_.empty() && o.count_ == 0) return;
  // One linear merge of the two sorted lists.
  std::vector<Range> out;
  out.reserve(ranges_.size() + o.ranges_.size());
  size_t a = 0, b = 0;
  while (a < ranges_.size() || b < o.ranges_.size()) {
    const bool take_a =
        b == o.ranges_.size() || (a < ranges_.size() && ranges_[a].first <= o.ranges_[b].first);
    const Range r = take_a ? ranges_[a++] : o.ranges_[b++];
    if (!out.empty() && out.back().second + int64_t{1} >= r.first) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  ranges_ = std::move(out);
  truncated_ = truncated_ || o.truncated_;
  if (truncated_) {
    count_ += o.count_;  // the unlisted ranks of disjoint sets (the REQUIRES) add up
  } else {
    count_ = 0;  // exact, overlaps or not
    for (const auto& [a, b] : ranges_) count_ += int64_t{b} - a + 1;
  }
  cap();
}

void RankRanges::cap() {
  if (ranges_.size() <= max_ranges_) return;
  ranges_.resize(max_ranges_);
  truncated_ = true;
}

bool RankRanges::lists(int rank) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), Range{rank, INT32_MAX});
  return it != ranges_.begin() && std::prev(it)->second >= rank;
}

std::vector<int> RankRanges::first_ranks(size_t n) const {
  std::vector<int> out;
  for (const auto& [a, b] : ranges_) {
    for (int r = a; r <= b && out.size() < n; ++r) out.push_back(r);
    if (out.size() >= n) break;
  }
  return out;
}

std::string RankRanges::str(size_t max_shown) const {
  std::string out;
  int64_t shown = 0;
  size_t i = 0;
  for (; i < ranges_.size() && i < max_shown; ++i) {
    const auto& [a, b] = ranges_[i];
    if (!out.empty()) out += ", ";
    out += a == b ? std::to_string(a) : fmt::format("{}-{}", a, b);
    shown += int64_t{b} - a + 1;
  }
  if (shown < count_) {
    out += fmt::format("{}... ({} more)", out.empty() ? "" : ", ", with_commas(count_ - shown));
  }
  return out;
}

bool RankRanges::from_parts(const std::vector<Range>& ranges, int64_t count, bool truncated, int lo,
                            int hi, RankRanges* out, std::string* why) {
  int64_t listed = 0;
  int64_t prev_last = int64_t{lo} - 2;
  for (const auto& [a, b] : ranges) {
    if (a < lo || b >= hi || b < a) {
      *why = fmt::format("range {}-{} is not within ranks {}-{}", a, b, lo, hi - 1);
      return false;
    }
    if (int64_t{a} <= prev_last + 1) {
      *why = fmt::format("range {}-{} is not sorted, or overlaps or touches the one before", a, b);
      return false;
    }
    prev_last = b;
    listed += int64_t{b} - a + 1;
  }
  if (count < listed || count > int64_t{hi} - lo || (!truncated && count != listed)) {
    *why = fmt::format("count {} does not match the {} ranks listed", count, listed);
    return false;
  }
  RankRanges r(std::max(out->max_ranges_, ranges.size()));
  r.ranges_ = ranges;
  r.count_ = count;
  r.truncated_ = truncated;
  r.max_ranges_ = out->max_ranges_;
  r.cap();
  *out = std::move(r);
  return true;
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

namespace {

struct HostName {
  std::string prefix, suffix;
  std::string digits;  // "" when the name has no usable number
};

// The last run of digits splits a name into prefix, number and suffix. Names with hostlist
// syntax in them ('[', ']', ',') or numbers of more than 18 digits are kept whole.
HostName split_host(const std::string& h) {
  if (h.find_first_of("[],") != std::string::npos) return {h, "", ""};
  size_t end = h.size();
  while (end > 0 && !std::isdigit(static_cast<unsigned char>(h[end - 1]))) --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(h[begin - 1]))) --begin;
  if (begin == end || end - begin > 18) return {h, "", ""};
  return {h.substr(0, begin), h.substr(end), h.substr(begin, end - begin)};
}

}  // namespace

std::string compress_hosts(std::vector<std::string> hosts, size_t max_chars) {
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  // Key: prefix, suffix, width (0 = numbers written without padding). A number written with a
  // leading zero sets a width; numbers of that many digits without one join it (expand_hostlist
  // pads a range only when its first bound has a leading zero, so both read back the same).
  using Key = std::tuple<std::string, std::string, size_t>;
  std::vector<std::string> plain;
  std::vector<HostName> numbered;
  std::set<std::tuple<std::string, std::string, size_t>> padded;
  for (const auto& h : hosts) {
    HostName n = split_host(h);
    if (n.digits.empty()) {
      plain.push_back(h);
      continue;
    }
    if (n.digits.size() > 1 && n.digits[0] == '0')
      padded.emplace(n.prefix, n.suffix, n.digits.size());
    numbered.push_back(std::move(n));
  }
  std::map<Key, std::set<long long>> groups;
  for (const auto& n : numbered) {
    const bool zero = n.digits.size() > 1 && n.digits[0] == '0';
    const size_t w =
        zero || padded.count({n.prefix, n.suffix, n.digits.size()}) > 0 ? n.digits.size() : 0;
    groups[{n.prefix, n.suffix, w}].insert(std::stoll(n.digits));
  }
  struct Item {
    std::string text;
    size_t hosts;
  };
  std::vector<Item> items;
  for (const auto& p : plain) items.push_back({p, 1});
  for (const auto& [key, nums] : groups) {
    const auto& [prefix, suffix, w] = key;
    auto num = [w = w](long long v) { return fmt::format("{:0{}}", v, w); };
    if (nums.size() == 1) {
      items.push_back({prefix + num(*nums.begin()) + suffix, 1});
      continue;
    }
    std::string body;
    for (auto it = nums.begin(); it != nums.end();) {
      const long long a = *it;
      long long b = a;
      for (++it; it != nums.end() && *it == b + 1; ++it) b = *it;
      if (!body.empty()) body += ',';
      body += a == b ? num(a) : num(a) + "-" + num(b);
    }
    items.push_back({prefix + "[" + body + "]" + suffix, nums.size()});
  }
  std::sort(items.begin(), items.end(),
            [](const Item& x, const Item& y) { return x.text < y.text; });
  std::string out;
  size_t omitted = 0;
  for (const auto& it : items) {
    if (omitted > 0 || (!out.empty() && out.size() + 1 + it.text.size() > max_chars)) {
      omitted += it.hosts;
      continue;
    }
    if (!out.empty()) out += ',';
    out += it.text;
  }
  if (omitted > 0)
    out += fmt::format(",... ({} more hosts)", with_commas(static_cast<int64_t>(omitted)));
  return out;
}

}  // namespace collie
