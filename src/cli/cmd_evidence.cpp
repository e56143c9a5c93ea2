// `collie evidence PATH... [--json] [-o FILE]`: reads what an operator holds after an incident
// (ncclras -f json, nccl-tests -J or text, collie perf / accept / probe -J; src/evidence) and
// prints, per input, what it contributed, then the typed findings, most confident first.
// Exit status: 0 no finding, 1 findings, 2 an input that cannot be read (one line naming it).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/atomic_file.h"
#include "evidence/evidence.h"

namespace collie::cli {
namespace {

struct EvidenceFlags {
  std::vector<std::string> paths;
  bool json = false;
  std::string out;
};

int run(const EvidenceFlags& f) {
  std::vector<evidence::Evidence> all;
  for (const auto& p : f.paths) all.push_back(evidence::read_evidence(p));
  const std::string text = f.json ? evidence::evidence_json(all).dump(
                                        2, ' ', false, nlohmann::json::error_handler_t::replace) +
                                        "\n"
                                  : evidence::evidence_text(all);
  if (!f.out.empty())
    write_file_atomic(f.out, text);
  else
    std::fwrite(text.data(), 1, text.size(), stdout);
  size_t findings = 0;
  for (const auto& e : all) findings += e.findings.size();
  return findings == 0 ? kExitOk : kExitFailure;
}

const Command kCommand{
    "evidence",
    "read ncclras, nccl-tests and collie results: who is behind or broken, and what to do",
    [](CLI::App& app) {
      auto f = std::make_shared<EvidenceFlags>();
      app.add_option("paths", f->paths,
                     "inputs: ncclras -f json (status or -m stream), nccl-tests -J or text "
                     "output, collie perf / accept / probe -J")
          ->required();
      app.add_flag("--json", f->json, "print JSON (collie.evidence.v1) instead of text");
      app.add_option("-o,--output", f->out, "write the report here (atomically) instead of stdout");
      return [f]() -> int { return run(*f); };
    }};

}  // namespace

const Command& evidence_command() { return kCommand; }

}  // namespace collie::cli
