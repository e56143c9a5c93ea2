#pragma once
// Typed verdicts: what went wrong in a job, said once per cause with the ranks (and hosts) it is
// about, how sure the evidence makes it, the evidence lines and the next step (issue 41). One
// model for every kind of evidence: `collie analyze` derives verdicts from flight-recorder dumps
// (dump_verdicts.h) and from live ranks; readers of other evidence (NCCL RAS, nccl-tests and
// collie perf results, acceptance reports) add their own kinds (SLOW_LINK, SLOW_HOST, WRONG_DATA,
// STRAGGLER, RANK_DEAD) to the same Diagnosis, which orders them and renders text and JSON
// (schema in docs/hang-diagnosis.md).
// This module sits above debug (and may sit above reports and the evidence readers): it joins
// what they establish, and they know nothing of it.
// Thread safety: plain values; pure functions.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace collie {

enum class VerdictKind {
  Deadlock,           // groups entered in conflicting orders: the cycle
  Mismatch,           // ranks called different ops / shapes / dtypes / roots / peers
  RankDead,           // the process is gone (no dump, nothing listening at its address)
  Unreachable,        // alive or not, it does not answer (a live query timed out)
  NotJoined,          // alive, but outside collectives while the others wait: last op, how long
  StuckInCollective,  // every rank entered the op and it does not complete
  WrongData,          // a rank's output was wrong (#wrong per rank)
  SlowLink,           // a link measured slower than its peers (probe / acceptance results)
  SlowHost,           // a host slower than its peers
  Straggler,          // arrives last at most ops of a job that does not hang, and by how much
};
inline constexpr VerdictKind kVerdictKinds[] = {
    VerdictKind::Deadlock,    VerdictKind::Mismatch,  VerdictKind::RankDead,
    VerdictKind::Unreachable, VerdictKind::NotJoined, VerdictKind::StuckInCollective,
    VerdictKind::WrongData,   VerdictKind::SlowLink,  VerdictKind::SlowHost,
    VerdictKind::Straggler};
const char* verdict_name(VerdictKind k);  // "STUCK_IN_COLLECTIVE", ...

struct Verdict {
  VerdictKind kind = VerdictKind::StuckInCollective;
  std::vector<int> ranks{};  // the ranks it is about (the lagging set), sorted
  std::string hosts{};       // their hosts (or the hosts it is about) as a Slurm hostlist
  std::string group{};       // the process group, "" when job-wide
  double confidence = 0;     // 0..1
  std::string summary{};     // one line naming the ranks as ranges
  std::vector<std::string> evidence{};  // what was seen, one line each
  std::string next_step{};
  nlohmann::json facts = nlohmann::json::object();  // per kind (docs/hang-diagnosis.md)
  std::string source{};  // the evidence it comes from: "flight-recorder dumps", "live ranks", ...
};

struct Diagnosis {
  std::vector<Verdict> verdicts;
  // When several groups hang: the one whose hang the others wait on (a cause, not a victim),
  // with what it is stuck in; "" when none hangs.
  std::string first_hung_group;
  std::string first_hung_why;
  std::vector<std::string> sources;  // what was read and what each contributed
  // Causes first (DEADLOCK, MISMATCH, RANK_DEAD, UNREACHABLE, NOT_JOINED, STUCK_IN_COLLECTIVE,
  // WRONG_DATA, SLOW_LINK, SLOW_HOST, STRAGGLER), then the surer; stable otherwise.
  void order();
};

// "Verdicts:" and one block per verdict (kind, confidence, summary, evidence, next step), then
// the first hung group; "" when there is no verdict.
std::string to_text(const Diagnosis& d);
// {verdicts: [{kind, ranks ("0-3,5"), rank_count, hosts, group, confidence, summary, evidence,
//  next_step, facts, source}], first_hung_group, first_hung_why, sources}
nlohmann::json to_json_value(const Diagnosis& d);

}  // namespace collie
