#include "discovery/hostlist.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "core/error.h"
#include "core/printable.h"

namespace collie {
namespace {

constexpr size_t kMaxHosts = 1000000;

[[noreturn]] void bad(std::string_view expr, std::string_view what) {
  throw InvalidArgument(fmt::format("hostlist {}: {}", quote(expr), what));
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// "01-04,7" -> {"01","02","03","04","7"}
std::vector<std::string> expand_ranges(std::string_view expr, std::string_view body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= body.size()) {
    size_t comma = body.find(',', pos);
    if (comma == std::string_view::npos) comma = body.size();
    std::string_view item = body.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    std::string_view lo = item.substr(0, dash);
    std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > 18 || hi.size() > 18) {
      bad(expr, fmt::format("'[{}]' must hold numbers and ranges such as 01-04,7", body));
    }
    const long long a = std::stoll(std::string(lo)), b = std::stoll(std::string(hi));
    if (b < a) bad(expr, fmt::format("range {} ends below its start", item));
    if (static_cast<unsigned long long>(b - a) + out.size() >= kMaxHosts) {
      bad(expr, "expands to too many hosts");
    }
    const int width = lo.size() > 1 && lo[0] == '0' ? static_cast<int>(lo.size()) : 0;
    for (long long v = a; v <= b; ++v) out.push_back(fmt::format("{:0{}}", v, width));
    pos = comma + 1;
  }
  return out;
}

// One host pattern without top-level commas: "a[1-2]-ib" or "rack[1-2]n[1-3]".
void expand_one(std::string_view expr, std::string_view pat, std::vector<std::string>& out) {
  std::vector<std::string> acc{""};
  size_t pos = 0;
  while (pos < pat.size()) {
    const size_t open = pat.find('[', pos);
    if (open == std::string_view::npos) {
      for (auto& a : acc) a += pat.substr(pos);
      break;
    }
    const size_t close = pat.find(']', open);
    if (close == std::string_view::npos) bad(expr, "unbalanced '['");
    for (auto& a : acc) a += pat.substr(pos, open - pos);
    const auto parts = expand_ranges(expr, pat.substr(open + 1, close - open - 1));
    if (acc.size() * parts.size() > kMaxHosts) bad(expr, "expands to too many hosts");
    std::vector<std::string> next;
    next.reserve(acc.size() * parts.size());
    for (const auto& a : acc) {
      for (const auto& p : parts) next.push_back(a + p);
    }
    acc.swap(next);
    pos = close + 1;
  }
  for (auto& a : acc) {
    if (a.empty()) bad(expr, "empty host name");
    out.push_back(std::move(a));
  }
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view expr) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= expr.size(); ++i) {
    const char c = i < expr.size() ? expr[i] : ',';
    if (c == '[') {
      if (++depth > 1) bad(expr, "nested '['");
    } else if (c == ']') {
      if (--depth < 0) bad(expr, "unbalanced ']'");
    } else if (c == ',' && depth == 0) {
      if (i == start) bad(expr, "empty host name");
      expand_one(expr, expr.substr(start, i - start), out);
      if (out.size() > kMaxHosts) bad(expr, "expands to too many hosts");
      start = i + 1;
    }
  }
  if (depth != 0) bad(expr, "unbalanced '['");
  return out;
}

namespace {

// A host name split before its trailing number: "node0517" -> {"node", "0517", 517}.
struct NumberedHost {
  std::string digits;
  unsigned long long value = 0;
};

// The text a number has inside a bracket whose range starts at `lo` (its zero padding).
std::string padded_like(const std::string& lo, unsigned long long v) {
  const int width = lo.size() > 1 && lo[0] == '0' ? static_cast<int>(lo.size()) : 0;
  return fmt::format("{:0{}}", v, width);
}

}  // namespace

std::string compress_hostlist(std::vector<std::string> hosts) {
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  std::map<std::string, std::vector<NumberedHost>> by_prefix;
  std::vector<std::string> plain;
  for (const std::string& h : hosts) {
    size_t cut = h.size();
    while (cut > 0 && std::isdigit(static_cast<unsigned char>(h[cut - 1]))) --cut;
    const bool special = h.find_first_of("[],") != std::string::npos;
    if (special || cut == h.size() || h.size() - cut > 18 || cut == 0) {
      plain.push_back(h);
      continue;
    }
    NumberedHost n{h.substr(cut), 0};
    n.value = std::stoull(n.digits);
    by_prefix[h.substr(0, cut)].push_back(std::move(n));
  }
  std::vector<std::string> parts = plain;
  for (auto& [prefix, nums] : by_prefix) {
    std::sort(nums.begin(), nums.end(), [](const NumberedHost& a, const NumberedHost& b) {
      return a.value != b.value ? a.value < b.value : a.digits < b.digits;
    });
    std::string items;
    size_t count = 0;
    for (size_t i = 0; i < nums.size();) {
      // A range runs while the next number is one more and reads as the range's padding says.
      size_t j = i;
      while (j + 1 < nums.size() && nums[j + 1].value == nums[j].value + 1 &&
             nums[j + 1].digits == padded_like(nums[i].digits, nums[j + 1].value)) {
        ++j;
      }
      if (!items.empty()) items += ',';
      items += nums[i].digits;
      if (j > i) items += fmt::format("-{}", padded_like(nums[i].digits, nums[j].value));
      ++count;
      i = j + 1;
    }
    const bool single = count == 1 && items.find('-') == std::string::npos;
    parts.push_back(single ? prefix + items : prefix + "[" + items + "]");
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

}  // namespace collie
