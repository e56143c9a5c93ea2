#include "diagnose/evidence_verdicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/rank_ranges.h"
#include "discovery/hostlist.h"

namespace collie {
namespace {

VerdictKind kind_of(evidence::FindingType t) {
  switch (t) {
    case evidence::FindingType::Straggler:
      return VerdictKind::Straggler;
    case evidence::FindingType::SlowLink:
      return VerdictKind::SlowLink;
    case evidence::FindingType::SlowHost:
      return VerdictKind::SlowHost;
    case evidence::FindingType::WrongData:
      return VerdictKind::WrongData;
    case evidence::FindingType::RankDead:
      return VerdictKind::RankDead;
    case evidence::FindingType::Unreachable:
      return VerdictKind::Unreachable;
    case evidence::FindingType::NotJoined:
      return VerdictKind::NotJoined;
  }
  return VerdictKind::Straggler;
}

Verdict verdict_of(const evidence::Finding& f, const std::string& path) {
  Verdict v;
  v.kind = kind_of(f.type);
  v.ranks = f.ranks;
  std::sort(v.ranks.begin(), v.ranks.end());
  v.ranks.erase(std::unique(v.ranks.begin(), v.ranks.end()), v.ranks.end());
  v.hosts = compress_hosts(f.hosts);
  v.confidence = f.confidence;
  v.summary = f.who;
  v.evidence = f.evidence;
  v.next_step = f.next_step;
  v.facts = {{"who", f.who}};
  v.source = f.source.empty() ? path : f.source;
  return v;
}

// The hosts a verdict names; empty when it names none or its list was cut short ("...").
std::set<std::string> hosts_of(const Verdict& v) {
  if (v.hosts.empty() || v.hosts.find("...") != std::string::npos) return {};
  try {
    const std::vector<std::string> all = expand_hostlist(v.hosts);
    return {all.begin(), all.end()};
  } catch (const InvalidArgument&) {
    return {};  // a host name holding hostlist syntax: joined by nothing
  }
}

struct Side {
  std::set<std::string> hosts;
  std::set<std::string> sources;
};

template <typename T>
std::vector<T> common(const std::set<T>& a, const std::set<T>& b) {
  std::vector<T> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::string source_list(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& x : s) out += (out.empty() ? "" : " + ") + x;
  return out;
}

// Folds `b` (another input's verdict of the same kind about a common host) into `a`.
void merge(Verdict& a, Side& sa, Verdict&& b, Side&& sb) {
  a.ranks.insert(a.ranks.end(), b.ranks.begin(), b.ranks.end());
  std::sort(a.ranks.begin(), a.ranks.end());
  a.ranks.erase(std::unique(a.ranks.begin(), a.ranks.end()), a.ranks.end());
  sa.hosts.insert(sb.hosts.begin(), sb.hosts.end());
  a.hosts = compress_hosts({sa.hosts.begin(), sa.hosts.end()});
  a.confidence = std::min(0.99, 1 - (1 - a.confidence) * (1 - b.confidence));
  a.evidence.push_back(fmt::format("also in {}: {}", b.source, b.summary));
  for (std::string& e : b.evidence) a.evidence.push_back(std::move(e));
  if (a.next_step.empty()) a.next_step = std::move(b.next_step);
  sa.sources.insert(sb.sources.begin(), sb.sources.end());
  a.source = source_list(sa.sources);
  a.facts["sources"] = std::vector<std::string>(sa.sources.begin(), sa.sources.end());
}

}  // namespace

void join_by_host(Diagnosis& d) {
  std::vector<Side> sides;
  for (const Verdict& v : d.verdicts) sides.push_back({hosts_of(v), {v.source}});
  auto joinable = [&](size_t i, size_t j) {
    return !sides[i].hosts.empty() && common(sides[i].sources, sides[j].sources).empty() &&
           !common(sides[i].hosts, sides[j].hosts).empty();
  };
  for (size_t i = 0; i < d.verdicts.size(); ++i) {
    for (size_t j = i + 1; j < d.verdicts.size();) {
      if (d.verdicts[i].kind != d.verdicts[j].kind || !joinable(i, j)) {
        ++j;
        continue;
      }
      merge(d.verdicts[i], sides[i], std::move(d.verdicts[j]), std::move(sides[j]));
      d.verdicts.erase(d.verdicts.begin() + static_cast<std::ptrdiff_t>(j));
      sides.erase(sides.begin() + static_cast<std::ptrdiff_t>(j));
      j = i + 1;  // the union may now meet a verdict it skipped
    }
  }
  std::vector<std::vector<std::string>> also(d.verdicts.size());
  for (size_t i = 0; i < d.verdicts.size(); ++i) {
    for (size_t j = 0; j < d.verdicts.size(); ++j) {
      if (i == j || d.verdicts[i].kind == d.verdicts[j].kind || !joinable(i, j)) continue;
      const std::vector<std::string> hosts = common(sides[i].hosts, sides[j].hosts);
      also[i].push_back(fmt::format("also {} of {} in {}: {}", verdict_name(d.verdicts[j].kind),
                                    compress_hosts(hosts), d.verdicts[j].source,
                                    d.verdicts[j].summary.substr(0, 160)));
    }
  }
  for (size_t i = 0; i < d.verdicts.size(); ++i) {
    for (std::string& line : also[i]) d.verdicts[i].evidence.push_back(std::move(line));
  }
}

void add_evidence(Diagnosis& d, const std::vector<evidence::Evidence>& inputs) {
  for (const evidence::Evidence& e : inputs) {
    d.sources.push_back(fmt::format("{}: {}: {}", e.path, e.format, e.contributed));
    for (const evidence::Finding& f : e.findings) d.verdicts.push_back(verdict_of(f, e.path));
  }
  join_by_host(d);
  d.order();
}

}  // namespace collie
