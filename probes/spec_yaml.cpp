#include "probes/spec_yaml.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <set>

#include "core/printable.h"
#include "probes/accept_spec.h"

namespace collie::probes {
namespace {

using json = nlohmann::json;

bool is_float_text(const std::string& s) {
  size_t i = s[0] == '-' || s[0] == '+' ? 1 : 0;
  bool digits = false, dot = false;
  for (; i < s.size() && s[i] != 'e' && s[i] != 'E'; ++i) {
    if (s[i] == '.' && !dot) {
      dot = true;
    } else if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      digits = true;
    } else {
      return false;
    }
  }
  if (!digits) return false;
  if (i == s.size()) return true;
  ++i;  // exponent
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

json scalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always a string
  static const std::set<std::string> kNull{"", "~", "null", "Null", "NULL"};
  static const std::set<std::string> kTrue{"true", "True", "TRUE"};
  static const std::set<std::string> kFalse{"false", "False", "FALSE"};
  if (kNull.count(s)) return nullptr;
  if (kTrue.count(s)) return true;
  if (kFalse.count(s)) return false;
  int64_t i = 0;
  const char* b = s.data() + (s[0] == '+' ? 1 : 0);
  if (auto [p, ec] = std::from_chars(b, s.data() + s.size(), i);
      ec == std::errc() && p == s.data() + s.size())
    return i;
  if (is_float_text(s)) return std::strtod(s.c_str(), nullptr);
  return s;
}

// Aliases make a YAML document a graph: a few hundred bytes of nested aliases name billions of
// nodes (the "billion laughs"). Conversion counts every node it produces and stops at these.
constexpr size_t kMaxNodes = 100000;
constexpr int kMaxDepth = 64;

struct Converter {
  const std::string& path;
  YamlLines& lines;
  size_t nodes = 0;

  [[noreturn]] void fail(const YAML::Mark& m, const std::string& what) const {
    throw SpecError(fmt::format("{}:{}:{}: {}", path, m.line + 1, m.column + 1, what));
  }

  json convert(const YAML::Node& n, const std::string& ptr, int line, int depth = 0) {
    if (++nodes > kMaxNodes) {
      fail(n.Mark(), fmt::format("the spec has more than {} values (nested aliases?)", kMaxNodes));
    }
    if (depth > kMaxDepth) fail(n.Mark(), fmt::format("nested deeper than {} levels", kMaxDepth));
    lines.by_pointer.emplace(ptr, line);
    switch (n.Type()) {
      case YAML::NodeType::Map: {
        json obj = json::object();
        for (const auto& entry : n) {  // entry: a pair of Node values (not references)
          const YAML::Node k = entry.first;
          if (!k.IsScalar()) fail(k.Mark(), "a key must be a plain name");
          const std::string key = k.Scalar();
          if (obj.contains(key)) fail(k.Mark(), fmt::format("duplicate key {}", quote(key)));
          obj[key] = convert(entry.second, (json::json_pointer(ptr) / key).to_string(),
                             k.Mark().line + 1, depth + 1);
        }
        return obj;
      }
      case YAML::NodeType::Sequence: {
        json arr = json::array();
        for (const auto& item : n) {
          const YAML::Node v = item;
          arr.push_back(
              convert(v, fmt::format("{}/{}", ptr, arr.size()), v.Mark().line + 1, depth + 1));
        }
        return arr;
      }
      case YAML::NodeType::Scalar:
        return scalar(n);
      default:
        return nullptr;
    }
  }
};

}  // namespace

int YamlLines::line_of(std::string pointer) const {
  while (true) {
    if (auto it = by_pointer.find(pointer); it != by_pointer.end() && it->second > 0)
      return it->second;
    if (pointer.empty()) return 0;
    pointer.erase(pointer.rfind('/') == std::string::npos ? 0 : pointer.rfind('/'));
  }
}

json yaml_to_json(const std::string& text, const std::string& path, YamlLines& lines) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw SpecError(fmt::format("{}:{}:{}: not valid YAML: {}", path, e.mark.line + 1,
                                e.mark.column + 1, e.msg));
  }
  Converter c{path, lines};
  return c.convert(root, "", root.IsDefined() && !root.IsNull() ? root.Mark().line + 1 : 0);
}

}  // namespace collie::probes
