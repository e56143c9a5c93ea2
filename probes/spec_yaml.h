#pragma once
// YAML acceptance specs: yaml-cpp parses the file and the document becomes the JSON model that
// parse_spec validates, so both formats obey the same rules. Plain scalars are typed as YAML 1.2
// core does (null, true/false, integers, floats, else strings); quoted scalars stay strings, so
// `bytes: 4M` and `bytes: "4M"` are the same size. Pure functions; thread-safe.
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace collie::probes {

// Source line (1-based) of every converted value, keyed by its JSON pointer; a map value is
// placed on its key's line, so an error about a key points at the key.
struct YamlLines {
  std::map<std::string, int> by_pointer;
  // The line of `pointer`, else of its nearest ancestor that has one; 0 when none has.
  int line_of(std::string pointer) const;
};

// Throws SpecError ("PATH:LINE:COL: ..." for YAML syntax errors and duplicate keys, and for a
// document of more than 100000 values once aliases are expanded or nested deeper than 64).
nlohmann::json yaml_to_json(const std::string& text, const std::string& path, YamlLines& lines);

}  // namespace collie::probes
