#include "probes/isolate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "probes/link_matrix.h"
#include "probes/schedule.h"

namespace collie::probes {
namespace {

using Key = std::pair<int, int>;

// A unit or link under re-measurement.
struct Track {
  int a = -1, b = -1;  // b = -1: a unit
  std::vector<Observation> survey;
  std::vector<Observation> obs;  // re-measurements
  std::vector<bool> absolute;    // per obs: an absolute limit was broken
  std::vector<bool> failed;      // per obs: no result at all
  std::set<int> met;             // partners already used (units)
  int bad() const {
    return static_cast<int>(std::count_if(obs.begin(), obs.end(), [](auto& o) { return o.bad; }));
  }
  int starved() const {
    return static_cast<int>(
        std::count_if(obs.begin(), obs.end(), [](auto& o) { return o.starved; }));
  }
  int judged() const { return static_cast<int>(obs.size()) - starved(); }
};

class Engine {
 public:
  Engine(int n, const IsolateOptions& o, const MeasureRound& m) : n_(n), o_(o), measure_(m) {}

  IsolationReport run(const std::vector<LinkSample>& given, int given_rounds);

 private:
  std::vector<LinkSample> round(const std::vector<UnitPair>& pairs);
  Observation observe(const LinkSample& s, int self, bool* absolute);
  // A re-measurement round plus control pairs of known-good units (in the same round when some
  // are idle, else in a round right after): *round_ref = their median (0 = none), so a slowdown
  // of the whole cluster during the re-measurements is not blamed on the suspects.
  std::vector<LinkSample> round_with_controls(const std::vector<UnitPair>& pairs,
                                              double* round_ref);
  // Needs more re-measurements?
  bool pending(const Track& t) const;
  // b bad of n re-measurements is beyond chance for one of `tracks_` suspects.
  bool significant(int b, int n) const;
  void reremeasure_units(std::vector<Track>& tracks, const std::vector<int>& good);
  void remeasure_links(std::vector<Track>& tracks);
  // Measures one round of `pairs` (with control pairs) and records pairs[k]'s observation on
  // tracks[who[k]].
  void measure_round(std::vector<Track>& tracks, const std::vector<UnitPair>& pairs,
                     const std::vector<size_t>& who);
  // Up to `limit` rounds: each pending track gets the pair `pick` chooses for it this round
  // (nullopt: it waits; `busy` holds the units already in the round); stops when none does.
  using PickPartner =
      std::function<std::optional<UnitPair>(Track&, std::set<int>& busy, int round)>;
  void measure_rounds(std::vector<Track>& tracks, int limit, const PickPartner& pick);
  // Names t (a finding), clears it, or records it as inconclusive (a *_INCONCLUSIVE finding).
  void conclude(Track& t, bool unit, int* named, int* cleared);
  // The finding's reason and effect for what the bad measurements broke.
  void describe(IsolationFinding& f, const Track& t, bool unit) const;

  int n_;
  const IsolateOptions& o_;
  const MeasureRound& measure_;
  IsolationReport rep_;
  double chance_ = 0.02;
  double round_ref_ = 0;       // the current re-measurement round's control reference (0 = none)
  std::vector<int> good_;      // known-good units (control pairs)
  std::set<int> unseparated_;  // suspect units no known-good partner could test (2 hosts)
  size_t tracks_ = 1;          // suspects in the current phase
};

std::string undecided(int n) { return n > 0 ? fmt::format(", {} inconclusive", n) : ""; }

// P(X >= b) for X ~ Binomial(n, p).
double binomial_tail(int b, int n, double p) {
  double sum = 0;
  for (int k = b; k <= n; ++k) {
    double c = 1;
    for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
    sum += c * std::pow(p, k) * std::pow(1 - p, n - k);
  }
  return sum;
}

std::vector<LinkSample> Engine::round(const std::vector<UnitPair>& pairs) {
  std::vector<LinkSample> got = measure_(pairs);
  std::map<Key, LinkSample> by;
  for (auto& s : got) {
    if (s.a > s.b) std::swap(s.a, s.b);
    by[{s.a, s.b}] = std::move(s);
  }
  std::vector<LinkSample> out;
  double slowest = 0;
  for (const auto& p : pairs) {
    auto it = by.find({p.a, p.b});
    LinkSample s;
    if (it != by.end()) {
      s = std::move(it->second);
    } else {
      s.error = "no result";
    }
    s.a = p.a;
    s.b = p.b;
    slowest = std::max(slowest, s.seconds);
    out.push_back(std::move(s));
  }
  ++rep_.rounds;
  rep_.pairs_measured += static_cast<int>(pairs.size());
  rep_.seconds += slowest;
  return out;
}

std::vector<LinkSample> Engine::round_with_controls(const std::vector<UnitPair>& pairs,
                                                    double* round_ref) {
  constexpr size_t kControls = 8;
  std::set<int> busy;
  for (const auto& p : pairs) busy.insert({p.a, p.b});
  auto control_pairs = [&](const std::set<int>& skip) {
    std::vector<UnitPair> c;
    int pending = -1;
    for (int g : good_) {
      if (skip.count(g)) continue;
      if (pending < 0) {
        pending = g;
        continue;
      }
      c.push_back({std::min(pending, g), std::max(pending, g)});
      pending = -1;
      if (c.size() >= kControls) break;
    }
    return c;
  };
  // One control pair is no evidence of a cluster-wide slowdown: a single slow or disturbed
  // control would excuse every suspect of its round. At least kMinControls agreeing samples.
  constexpr size_t kMinControls = 2;
  auto reference_of = [](const std::vector<LinkSample>& v, size_t from) {
    std::vector<double> ok;
    for (size_t i = from; i < v.size(); ++i)
      if (v[i].ok()) ok.push_back(v[i].value());
    return ok.size() < kMinControls ? 0.0 : median(ok);
  };
  std::vector<UnitPair> all = pairs;
  const auto same = control_pairs(busy);
  all.insert(all.end(), same.begin(), same.end());
  std::vector<LinkSample> got = round(all);
  *round_ref = reference_of(got, pairs.size());
  got.resize(pairs.size());
  if (same.empty()) {
    // Fewer pairs than it takes to judge by (3 hosts: one) would only cost a round.
    const auto after = control_pairs({});
    if (after.size() >= kMinControls) *round_ref = reference_of(round(after), 0);
  }
  return got;
}

Observation Engine::observe(const LinkSample& s, int self, bool* absolute) {
  Reference ref = rep_.reference;
  if (round_ref_ > 0 && round_ref_ < ref.gbps) {
    // The whole round ran slower (its control pairs did): judge against the controls, with the
    // survey's noise scaled by the same factor. The noise is a spread of rates, so it shrinks with
    // them; kept absolute, a round at 60 % speed left a margin (3 x noise) wider than the reference
    // itself and a host at 4 % of it read "ok" (HOST_SLOW reported as HOST_FLAPPING).
    ref.noise_gbps *= round_ref_ / ref.gbps;
    ref.gbps = round_ref_;
  }
  const Judgement j = judge(s, ref, o_.thresholds);
  Observation ob;
  ob.round = rep_.rounds;
  ob.partner = s.a == self ? s.b : s.a;
  ob.gbps = s.value();
  ob.lat_us = s.lat_us;
  ob.ref_gbps = ref.gbps;
  ob.bad = j.bad;
  ob.starved = j.starved;
  ob.behind = j.behind;
  ob.cpu_wait = s.cpu_wait;
  ob.rule = j.rule;
  ob.expected_gbps = j.expected_gbps;
  ob.from = j.from;
  ob.to = j.to;
  ob.why = j.why;
  if (absolute) *absolute = j.absolute;
  return ob;
}

bool Engine::significant(int b, int n) const {
  return b > 0 && binomial_tail(b, n, chance_) * static_cast<double>(tracks_) < o_.alpha;
}

bool Engine::pending(const Track& t) const {
  const int n = static_cast<int>(t.obs.size()), bad = t.bad(), judged = t.judged();
  if (n < o_.confirm) return true;
  // Starved ones decide nothing: a few more tries for `confirm` judged ones (a load burst ends).
  if (judged < o_.confirm && n < 2 * o_.confirm) return true;
  if (bad == 0 || significant(bad, judged)) return false;
  if (n >= o_.confirm + o_.max_extra) return false;
  return bad * 3 >= judged;  // still plausibly bad (slow or flapping): measure again
}

void Engine::measure_rounds(std::vector<Track>& tracks, int limit, const PickPartner& pick) {
  for (int r = 0; r < limit; ++r) {
    std::vector<UnitPair> pairs;
    std::vector<size_t> who;
    std::set<int> busy;
    for (size_t i = 0; i < tracks.size(); ++i) {
      if (!pending(tracks[i])) continue;
      if (const auto p = pick(tracks[i], busy, r)) {
        pairs.push_back(*p);
        who.push_back(i);
      }
    }
    if (pairs.empty()) break;
    measure_round(tracks, pairs, who);
  }
}

void Engine::reremeasure_units(std::vector<Track>& tracks, const std::vector<int>& good) {
  // Every round: each pending suspect meets a known-good partner it has not met yet, every
  // partner at most once per round (more suspects than partners: the rest wait a round).
  const int limit = (o_.confirm + o_.max_extra) *
                        static_cast<int>((tracks.size() + good.size() - 1) / good.size()) +
                    1;
  measure_rounds(tracks, limit,
                 [&](Track& t, std::set<int>& busy, int r) -> std::optional<UnitPair> {
                   int pick = -1;
                   const size_t start = (static_cast<size_t>(t.a) * 7919 + r) % good.size();
                   for (int pass = 0; pass < 2 && pick < 0; ++pass)
                     for (size_t k = 0; k < good.size() && pick < 0; ++k) {
                       const int g = good[(start + k) % good.size()];
                       if (busy.count(g) || (pass == 0 && t.met.count(g))) continue;
                       pick = g;
                     }
                   if (pick < 0) return std::nullopt;
                   busy.insert(pick);
                   t.met.insert(pick);
                   return UnitPair{std::min(t.a, pick), std::max(t.a, pick)};
                 });
}

void Engine::measure_round(std::vector<Track>& tracks, const std::vector<UnitPair>& pairs,
                           const std::vector<size_t>& who) {
  const auto got = round_with_controls(pairs, &round_ref_);
  for (size_t k = 0; k < got.size(); ++k) {
    Track& t = tracks[who[k]];
    bool abs = false;
    t.obs.push_back(observe(got[k], t.a, &abs));
    t.absolute.push_back(abs);
    t.failed.push_back(!got[k].ok());
  }
}

void Engine::remeasure_links(std::vector<Track>& tracks) {
  const int limit = (o_.confirm + o_.max_extra) * static_cast<int>(tracks.size()) + 1;
  measure_rounds(tracks, limit, [](Track& t, std::set<int>& busy, int) -> std::optional<UnitPair> {
    if (busy.count(t.a) || busy.count(t.b)) return std::nullopt;
    busy.insert(t.a);
    busy.insert(t.b);
    return UnitPair{t.a, t.b};
  });
}

void Engine::conclude(Track& t, bool unit, int* named, int* cleared) {
  const int n = static_cast<int>(t.obs.size()), bad = t.bad(), judged = t.judged();
  const bool confirmed = judged >= o_.confirm && significant(bad, judged);
  // Not beyond chance: cleared, unless most of its judged re-measurements were bad (or too few
  // could be made or judged: CPU-starved), which chance does not explain either: inconclusive.
  if ((bad == 0 && judged >= std::min(n, o_.confirm)) ||
      (!confirmed && judged >= o_.confirm && bad * 2 <= judged)) {
    ++*cleared;
    return;
  }
  IsolationFinding f;
  f.a = t.a;
  f.b = t.b;
  f.confirmations = bad;
  f.remeasured = judged;  // the starved ones are counted in the reason
  f.noise_gbps = rep_.reference.noise_gbps;
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    if (!t.obs[i].bad) continue;
    failed += t.failed[i] ? 1 : 0;
    f.absolute = f.absolute || t.absolute[i];
  }
  if (!confirmed) {
    f.fault = unit ? Fault::HostInconclusive : Fault::LinkInconclusive;
  } else if (bad < judged) {  // starved ones decided nothing: they make no flapping
    f.fault = unit ? Fault::HostFlapping : Fault::LinkFlapping;
  } else if (failed == judged) {
    f.fault = unit ? Fault::HostDown : Fault::LinkDown;
  } else {
    f.fault = unit ? Fault::HostSlow : Fault::LinkSlow;
  }
  f.separated = unit || !(unseparated_.count(t.a) || unseparated_.count(t.b));
  describe(f, t, unit);
  const bool slow = f.fault == Fault::HostSlow || f.fault == Fault::LinkSlow;
  if (!confirmed) {
    f.severity = Verdict::Inconclusive;
    ++rep_.inconclusive;
  } else {
    f.severity =
        !slow || f.absolute || f.effect >= o_.thresholds.crit_drop ? Verdict::Crit : Verdict::Warn;
    ++*named;
  }
  f.evidence = t.survey;
  f.evidence.insert(f.evidence.end(), t.obs.begin(), t.obs.end());
  rep_.findings.push_back(std::move(f));
}

void Engine::describe(IsolationFinding& f, const Track& t, bool unit) const {
  const int n = static_cast<int>(t.obs.size()), bad = t.bad();
  std::vector<double> vals, effects;
  int failed = 0;
  const Observation* first = nullptr;  // the first bad one with a rate
  bool one_direction = true;
  for (int i = 0; i < n; ++i) {
    const Observation& ob = t.obs[i];
    if (!ob.bad) continue;
    if (t.failed[i]) {
      ++failed;
      continue;
    }
    vals.push_back(ob.gbps);
    if (!first) first = &ob;
    one_direction = one_direction && ob.from == first->from && ob.to == first->to;
    if (ob.expected_gbps > 0) effects.push_back((ob.expected_gbps - ob.gbps) / ob.expected_gbps);
  }
  const double ref = rep_.reference.gbps;
  // Starved re-measurements: the most CPU wait among them, and the first one (its rule, rate).
  const int starved = t.starved();
  double wait = 0;
  int behind = 0;
  const Observation* first_starved = nullptr;
  for (const Observation& ob : t.obs) {
    if (!ob.starved) continue;
    wait = std::max(wait, ob.cpu_wait);
    behind += ob.behind ? 1 : 0;
    if (!first_starved) first_starved = &ob;
  }
  if (bad == 0 && first_starved) {
    // Nothing judged bad: every suspicion came from measurements the CPU wait explains.
    f.value_gbps = first_starved->gbps;
    f.rule = first_starved->rule;
    f.effect = 0;
    f.reason = fmt::format(
        "{} of {} re-measurements {} CPU-starved (its ranks waited for a CPU up to {:.0f}% of the "
        "time, which explains their slowness: {}{}), {} judged where {} are needed; neither "
        "confirmed nor cleared",
        starved, n, unit ? "against known-good partners" : "of the link itself", wait * 100,
        first_starved->why.substr(0, first_starved->why.find("; but")),
        behind > 0 ? fmt::format("; {} of them also far below what their peers reached under the "
                                 "same load, which at that wait healthy links are too",
                                 behind)
                   : "",
        n - starved, o_.confirm);
    f.next_step =
        "re-run the probe when the hosts' CPUs are not oversubscribed (fewer ranks per host, or "
        "without the competing load); a host that stays slow then is named";
    return;
  }
  f.value_gbps = vals.empty() ? 0 : median(vals);
  f.rule = first ? first->rule : Rule::Failed;
  if (first && one_direction) {
    f.from = first->from;
    f.to = first->to;
  }
  // The relative rule and a latency ceiling are measured against the survey's reference; the
  // others against what they held the measurement to (the reverse direction, the hosts'
  // capacity, the floor).
  const bool against_reference = f.rule == Rule::Reference || f.rule == Rule::Ceiling ||
                                 f.rule == Rule::Failed || effects.empty();
  f.effect = against_reference ? (ref > 0 ? (ref - f.value_gbps) / ref : 1) : median(effects);
  const char* against = unit ? "against known-good partners" : "re-measuring the link itself";
  std::string what;
  if (f.fault == Fault::HostDown || f.fault == Fault::LinkDown) {
    what = "no measurement got through";
  } else if (vals.empty()) {
    // Every bad one failed: no rate to quote ("0 GB/s, 100% below" read as dead).
    what = fmt::format(
        "the bad ones failed (nothing got through), the others were fine against the reference "
        "{:.4g} GB/s (noise {:.2g} GB/s)",
        ref, f.noise_gbps);
  } else if (against_reference) {
    what = fmt::format("{:.4g} GB/s, {:.0f}% below the reference {:.4g} GB/s (noise {:.2g} GB/s)",
                       f.value_gbps, f.effect * 100, ref, f.noise_gbps);
  } else {
    what = first->why;  // the rule's own words: direction, reverse rate, capacity or floor
  }
  std::string extra;
  if (f.absolute && against_reference && first) extra = "; " + first->why;
  if (f.fault == Fault::HostInconclusive || f.fault == Fault::LinkInconclusive)
    extra += fmt::format(
        "; {} (a healthy one is bad in about {:.0f}% of measurements; {} suspect(s))",
        n < o_.confirm
            ? fmt::format("only {} of the {} re-measurements needed could be made", n, o_.confirm)
        : n - starved < o_.confirm
            ? fmt::format("only {} of the {} judged re-measurements needed: {} were CPU-starved "
                          "(their ranks waited for a CPU up to {:.0f}% of the time)",
                          n - starved, o_.confirm, starved, wait * 100)
            : std::string("bad in most re-measurements, yet not beyond chance"),
        chance_ * 100, tracks_);
  f.reason = fmt::format(
      "{}; bad in {} of {} re-measurements {}{}{}{}", what, bad, n - starved, against,
      failed > 0 && failed < bad ? fmt::format(" ({} failed)", failed) : "",
      starved > 0 ? fmt::format(" (and {} CPU-starved, not judged)", starved) : "", extra);
  f.next_step = fault_next_step(f.fault);
  if (!f.separated) {
    const std::string a = o_.thresholds.name(f.a), b = o_.thresholds.name(f.b);
    const std::string dir = f.from >= 0
                                ? fmt::format("{}'s egress, {}'s ingress or the path between them",
                                              o_.thresholds.name(f.from), o_.thresholds.name(f.to))
                                : "either host or the path between them";
    f.reason += fmt::format(
        "; no known-good host to test {} and {} against, so which of them is at fault cannot be "
        "separated ({})",
        a, b, dir);
    if (f.fault != Fault::HostInconclusive && f.fault != Fault::LinkInconclusive)
      f.next_step = fmt::format(
          "run the probe again with a known-good host added: the one of {} and {} that is slow "
          "with it too is named; meanwhile check both hosts' NIC speed, error counters and "
          "shaping (ethtool -S, tc qdisc){}",
          a, b,
          f.from >= 0 ? fmt::format(" in the {} -> {} direction", o_.thresholds.name(f.from),
                                    o_.thresholds.name(f.to))
                      : "");
  }
}

IsolationReport Engine::run(const std::vector<LinkSample>& given, int given_rounds) {
  rep_.units = n_;
  rep_.schedule = o_.schedule;
  // 1. survey
  std::vector<LinkSample> survey;
  if (!given.empty()) {
    survey = given;
    for (auto& s : survey)
      if (s.a > s.b) std::swap(s.a, s.b);
    rep_.rounds = rep_.survey_rounds = given_rounds;
    rep_.pairs_measured = static_cast<int>(survey.size());
  } else if (o_.schedule == "full") {
    // One round at a time (tournament_round is O(n)): the schedule itself never holds the
    // n^2 / 2 pairs; the survey keeps one sample per pair, as the full schedule asks.
    for (int r = 0; r < tournament_round_count(n_); ++r) {
      std::vector<UnitPair> pairs;
      for (const auto& [a, b] : tournament_round(n_, r)) pairs.push_back({a, b});
      for (auto& s : round(pairs)) survey.push_back(std::move(s));
    }
    rep_.survey_rounds = rep_.rounds;
  } else {
    // One round; a small cluster takes rounds until >= 8 pairs are measured (all of them at
    // most), or its reference would rest on one or two pairs.
    const int all = n_ % 2 == 0 ? n_ - 1 : n_;
    for (int r = 0; r < all; ++r) {
      const auto pairs = survey_round(n_, o_.rotation + r);
      if (pairs.empty()) break;
      for (auto& s : round(pairs)) survey.push_back(std::move(s));
      if (survey.size() >= 8) break;
    }
    rep_.survey_rounds = rep_.rounds;
  }
  rep_.reference = estimate_reference(survey);
  chance_ = o_.chance;
  std::vector<int> total(n_, 0), bad(n_, 0);
  const bool multi = rep_.survey_rounds > 1;
  std::vector<std::vector<Observation>> unit_survey(n_);
  std::map<Key, std::vector<Observation>> bad_links;
  int survey_behind = 0;  // starved pairs far behind their peers (suspicions, in bad_links)
  for (const auto& s : survey) {
    if (s.a < 0 || s.b >= n_ || s.a == s.b) continue;
    Observation oa = observe(s, s.a, nullptr), ob = observe(s, s.b, nullptr);
    oa.round = ob.round = 0;
    if (s.ok()) ++rep_.survey_measured;
    if (oa.starved) {
      ++rep_.survey_starved;
      survey_behind += oa.behind ? 1 : 0;
      rep_.survey_wait = std::max(rep_.survey_wait, oa.cpu_wait);
    }
    ++total[s.a];
    ++total[s.b];
    if (oa.bad || oa.behind) {  // a starved pair far behind its peers is a suspicion too
      ++bad[s.a];
      ++bad[s.b];
      unit_survey[s.a].push_back(oa);
      unit_survey[s.b].push_back(ob);
      bad_links[{s.a, s.b}].push_back(oa);
    }
  }
  // A unit whose every bad pair is with a unit that has a larger share of bad pairs is
  // explained by that unit (3 hosts, one slow: the other two are bad in one pair of two each,
  // both with the slow one) and stays known-good.
  auto share = [&](int u) { return total[u] > 0 ? static_cast<double>(bad[u]) / total[u] : 0; };
  std::unordered_map<int, std::vector<int>> bad_partners;  // unit -> its bad pairs' partners
  for (const auto& [k, obs] : bad_links) {
    bad_partners[k.first].push_back(k.second);
    bad_partners[k.second].push_back(k.first);
  }
  auto explained = [&](int u) {
    const auto it = bad_partners.find(u);
    if (it == bad_partners.end()) return true;
    for (int partner : it->second)
      if (share(partner) <= share(u)) return false;
    return true;
  };
  std::vector<Track> units;
  std::vector<int> good;
  for (int u = 0; u < n_; ++u) {
    if (total[u] == 0 || (bad[u] > 0 && bad[u] * 2 >= total[u] && !explained(u))) {
      Track t;
      t.a = u;
      t.survey = unit_survey[u];
      units.push_back(std::move(t));
    } else {
      good.push_back(u);
    }
  }
  rep_.phases.push_back(fmt::format(
      "survey ({}): {} pairs in {} round(s); reference {:.4g} GB/s, noise {:.2g} GB/s; {} bad "
      "pair(s){}, {} unit(s) to re-pair{}",
      o_.schedule == "full" ? "every pair"
      : multi               ? fmt::format("quick, rounds {}+", o_.rotation)
                            : fmt::format("quick, round {}", o_.rotation),
      rep_.pairs_measured, rep_.survey_rounds, rep_.reference.gbps, rep_.reference.noise_gbps,
      bad_links.size(),
      rep_.survey_starved > 0
          ? fmt::format(" ({} of them CPU-starved and far behind their peers); {} of {} pairs "
                        "CPU-starved",
                        survey_behind, rep_.survey_starved, rep_.survey_measured)
          : "",
      units.size(),
      std::count(total.begin(), total.end(), 0) > 0
          ? fmt::format(" ({} not in the survey)", std::count(total.begin(), total.end(), 0))
          : ""));
  rep_.suspects = static_cast<int>(units.size());
  good_ = good;
  if (survey.size() >= 32)
    chance_ = std::max(chance_, static_cast<double>(bad_links.size()) / survey.size());
  tracks_ = std::max<size_t>(units.size(), 1);
  // 2. re-pair suspect units with known-good partners
  std::set<int> named_units;
  if (!units.empty() && !good.empty()) {
    const int r0 = rep_.rounds, i0 = rep_.inconclusive;
    reremeasure_units(units, good);
    int named = 0, cleared = 0;
    for (auto& t : units) {
      const size_t before = rep_.findings.size();
      conclude(t, true, &named, &cleared);
      if (rep_.findings.size() > before) named_units.insert(t.a);
    }
    // Units left out of the survey were never suspected of anything: not "cleared".
    for (const auto& t : units)
      if (total[t.a] == 0 && t.bad() == 0) --cleared;
    rep_.cleared += std::max(cleared, 0);
    rep_.phases.push_back(
        fmt::format("re-pairing: {} unit(s) against {} known-good unit(s) in {} round(s): {} "
                    "named, {} cleared{}",
                    units.size(), good.size(), rep_.rounds - r0, named, std::max(cleared, 0),
                    undecided(rep_.inconclusive - i0)));
  } else if (!units.empty()) {
    for (const auto& t : units) unseparated_.insert(t.a);
    rep_.phases.push_back(
        "re-pairing: no known-good unit to pair with; bad pairs are judged as links (which of "
        "a link's hosts is at fault cannot be separated)");
  }
  // 3. bad links whose units are not to blame
  std::vector<Track> links;
  for (const auto& [k, obs] : bad_links) {
    if (named_units.count(k.first) || named_units.count(k.second)) continue;
    Track t;
    t.a = k.first;
    t.b = k.second;
    t.survey = obs;
    links.push_back(std::move(t));
  }
  rep_.suspect_links = static_cast<int>(links.size());
  tracks_ = std::max<size_t>(links.size(), 1);
  if (!links.empty()) {
    const int r0 = rep_.rounds, i0 = rep_.inconclusive;
    remeasure_links(links);
    int named = 0, cleared = 0;
    for (auto& t : links) conclude(t, false, &named, &cleared);
    rep_.cleared += cleared;
    rep_.phases.push_back(
        fmt::format("links: {} re-measured in {} round(s): {} named, {} cleared{}", links.size(),
                    rep_.rounds - r0, named, cleared, undecided(rep_.inconclusive - i0)));
  }
  std::stable_sort(rep_.findings.begin(), rep_.findings.end(), [](const auto& x, const auto& y) {
    return fault_is_host(x.fault) && !fault_is_host(y.fault);
  });
  return rep_;
}

}  // namespace

std::string IsolationReport::survey_starved_text() const {
  return fmt::format(
      "{} of {} survey pairs CPU-starved (their ranks waited for a CPU up to {:.0f}% of the time)",
      survey_starved, survey_measured, survey_wait * 100);
}

Verdict IsolationReport::verdict() const {
  Verdict v = survey_mostly_starved() ? Verdict::Inconclusive : Verdict::Ok;
  for (const auto& f : findings) v = worse(v, f.severity);
  return v;
}

std::vector<UnitPair> survey_round(int units, int rotation) {
  std::vector<UnitPair> out;
  for (const auto& [a, b] : tournament_round(units, rotation)) out.push_back({a, b});
  return out;
}

IsolationReport isolate(int units, const IsolateOptions& o, const MeasureRound& measure,
                        const std::vector<LinkSample>& survey, int survey_rounds) {
  return Engine(units, o, measure).run(survey, survey_rounds);
}

}  // namespace collie::probes
