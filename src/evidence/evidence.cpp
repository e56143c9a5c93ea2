#include "evidence/evidence.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/json_input.h"
#include "core/printable.h"
#include "core/regular_file.h"
#include "evidence/nccl_tests_text.h"
#include "evidence/readers.h"
#include "reports/accept_report.h"
#include "reports/json_io.h"
#include "reports/nccl_tests_json.h"

namespace collie::evidence {
namespace {

using nlohmann::json;

// At most ~80 characters of the input, one line, safe to print.
std::string quote(const std::string& text, size_t at = 0) {
  std::string s = text.substr(at, 80);
  const size_t nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  return "'" + printable(s) + (text.size() - at > s.size() ? "...'" : "'");
}

// The top-level JSON values of `text`, one after another (an ncclras -m -f json stream prints
// one object per event). Strings are skipped so braces inside them do not count.
std::vector<std::string> split_values(const std::string& text) {
  std::vector<std::string> out;
  int depth = 0;
  bool in_string = false, escaped = false;
  size_t start = std::string::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (depth++ == 0) start = i;
    } else if (c == '}' || c == ']') {
      if (--depth < 0)
        throw InvalidArgument("unbalanced JSON: a '" + std::string(1, c) + "' too many");
      if (depth == 0) out.push_back(text.substr(start, i + 1 - start));
    } else if (depth == 0 && c != ' ' && c != '\t' && c != '\r' && c != '\n') {
      throw InvalidArgument("text between JSON values at byte " + std::to_string(i) + ": " +
                            quote(text, i));
    }
  }
  if (depth != 0 || in_string)
    throw InvalidArgument("JSON ends inside a value (truncated; was the output cut short?)");
  return out;
}

json parse_one(const std::string& text) {
  try {
    return parse_json_input(text, reports::kMaxResultsDepth);
  } catch (const json::parse_error& e) {
    throw InvalidArgument(
        fmt::format("not valid JSON at byte {} ({})", e.byte, printable(e.what())));
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("not usable JSON ({})", printable(e.what())));
  }
}

bool is_ras_event(const json& j) {
  return j.is_object() && j.contains("event") && j.contains("group");
}

void read_json(const std::string& text, Evidence& e) {
  std::vector<json> docs;
  for (const std::string& v : split_values(text)) docs.push_back(parse_one(v));
  if (docs.empty()) throw InvalidArgument("no JSON value in it");
  if (docs.size() > 1 || is_ras_event(docs[0])) {
    for (const json& d : docs)
      if (!is_ras_event(d))
        throw InvalidArgument(
            "several JSON values, but not an ncclras -m event stream (each needs \"event\" and "
            "\"group\")");
    e.format = "ncclras-events";
    detail::read_ras_events(docs, e);
    return;
  }
  const json& j = docs[0];
  if (!j.is_object()) throw InvalidArgument("JSON that is not an object: " + quote(text));
  if (j.contains("communicators")) {
    e.format = "ncclras-json";
    detail::read_ras_status(j, e);
  } else if (j.contains("schema") && j["schema"].is_string()) {
    const std::string schema = j["schema"].get<std::string>();
    if (schema == reports::kSchemaName) {
      e.format = "collie-perf";
      detail::read_run(reports::run_from_json(j), e);
    } else if (schema == reports::kAcceptSchemaName) {
      e.format = "collie-accept";
      detail::read_accept(j, e);
    } else {
      throw InvalidArgument("schema " + quote(schema) + " is none this collie reads (" +
                            reports::kSchemaName + ", " + reports::kAcceptSchemaName + ")");
    }
  } else if (j.contains("probe")) {
    e.format = "collie-probe";
    detail::read_probe(j, e);
  } else if (reports::is_nccl_tests_json(j)) {
    e.format = "nccl-tests-json";
    detail::read_run(reports::run_from_nccl_tests_json(j), e);
  } else if (j.contains("entries") && (j.contains("pg_config") || j.contains("pg_status"))) {
    throw InvalidArgument("a flight-recorder dump: `collie analyze DIR` reads those");
  } else {
    throw InvalidArgument(
        "JSON of no format collie reads as evidence (ncclras -f json, nccl-tests -J, collie "
        "perf / accept / probe -J); it starts " +
        quote(text, text.find('{')));
  }
}

}  // namespace

Evidence read_evidence_text(const std::string& path, const std::string& text,
                            const ReadLimits& limits) {
  Evidence e;
  e.path = path;
  try {
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) throw InvalidArgument("empty (nothing to read)");
    if (text[first] == '{' || text[first] == '[') {
      read_json(text, e);
    } else if (looks_like_nccl_tests_text(text)) {
      e.format = "nccl-tests-text";
      detail::read_run(parse_nccl_tests_text(text), e);
    } else if (text.find("Job summary") != std::string::npos &&
               text.find("Communicators") != std::string::npos) {
      throw InvalidArgument(
          "ncclras text output; collie reads `ncclras -f json` (NCCL >= 2.28.7): run it again "
          "with -f json");
    } else {
      throw InvalidArgument(
          "no format collie reads as evidence (ncclras -f json, nccl-tests -J or its text "
          "output, collie perf / accept / probe -J); it starts " +
          quote(text, first));
    }
  } catch (const InvalidArgument& ex) {
    throw InvalidArgument(path + ": " + ex.what());
  } catch (const nlohmann::json::exception& ex) {  // a value of the wrong type deep inside
    throw InvalidArgument(path + ": a field has the wrong type (" + printable(ex.what()) + ")");
  }
  if (e.facts.size() > limits.max_facts) {
    e.contributed += fmt::format(" ({} facts past the first {} dropped)",
                                 e.facts.size() - limits.max_facts, limits.max_facts);
    e.facts.resize(limits.max_facts);
  }
  for (auto& f : e.findings) f.source = path;
  return e;
}

Evidence read_evidence(const std::string& path, const ReadLimits& limits) {
  RegularFile file(path, limits.max_bytes);
  return read_evidence_text(path, file.read_all(), limits);
}

json fact_json(const Fact& f) {
  json j{{"subject", f.subject}, {"name", f.name}};
  if (f.rank >= 0) j["rank"] = f.rank;
  if (!f.group.empty()) j["group"] = f.group;
  if (!f.host.empty()) j["host"] = f.host;
  if (!f.peer.empty()) j["peer"] = f.peer;
  if (!f.op.empty()) j["op"] = f.op;
  if (f.text.empty())
    j["value"] = f.value;
  else
    j["text"] = f.text;
  if (!f.time.empty()) j["time"] = f.time;
  return j;
}

json finding_json(const Finding& f) {
  return json{{"type", finding_type_name(f.type)},
              {"who", f.who},
              {"ranks", f.ranks},
              {"hosts", f.hosts},
              {"confidence", f.confidence},
              {"evidence", f.evidence},
              {"next_step", f.next_step},
              {"source", f.source}};
}

namespace {

std::vector<const Finding*> by_confidence(const std::vector<Evidence>& all) {
  std::vector<const Finding*> out;
  for (const auto& e : all)
    for (const auto& f : e.findings) out.push_back(&f);
  std::stable_sort(out.begin(), out.end(), [](const Finding* a, const Finding* b) {
    return a->confidence > b->confidence;
  });
  return out;
}

}  // namespace

std::string evidence_text(const std::vector<Evidence>& all) {
  const std::vector<const Finding*> findings = by_confidence(all);
  std::string out =
      fmt::format("# evidence: {} input{}, {} finding{}\n", all.size(), all.size() == 1 ? "" : "s",
                  findings.size(), findings.size() == 1 ? "" : "s");
  for (const auto& e : all)
    out += fmt::format("read {} ({}): {}\n", printable(e.path), e.format, printable(e.contributed));
  for (const Finding* f : findings) out += finding_text(*f);
  if (findings.empty()) out += "no finding: nothing in these inputs names a rank, host or link\n";
  return out;
}

json evidence_json(const std::vector<Evidence>& all) {
  json inputs = json::array(), findings = json::array();
  for (const auto& e : all) {
    json facts = json::array();
    for (const auto& f : e.facts) facts.push_back(fact_json(f));
    inputs.push_back(json{
        {"path", e.path}, {"format", e.format}, {"contributed", e.contributed}, {"facts", facts}});
  }
  for (const Finding* f : by_confidence(all)) findings.push_back(finding_json(*f));
  return json{{"schema", "collie.evidence.v1"}, {"inputs", inputs}, {"findings", findings}};
}

}  // namespace collie::evidence
