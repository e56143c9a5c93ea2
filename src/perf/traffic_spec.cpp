// TrafficSpec: what people write (--traffic, nccl-tests' NCCL_TESTS_ALLTOALLV_* variables, a
// matrix file) into one spec, and the spec back into words (describe, repeat_flags).
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>

#include "core/env.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/regular_file.h"
#include "core/size.h"
#include "perf/traffic.h"

namespace collie::perf {
namespace {

constexpr const char* kFlag = "--traffic";
constexpr const char* kForms = "spread[:S], uniform, zipf:S, hot:K[:F] or file:PATH";
// The largest cell a scaled matrix may hold (bytes): far above any buffer, far below overflow.
constexpr double kMaxCellBytes = 1e15;

std::string num(double v) { return fmt::format("{}", v); }

int parse_count(const std::string& text, const std::string& what, int lo, int hi) {
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi)
    throw InvalidArgument(
        fmt::format("{} {} is not an integer in [{}, {}]", what, quote(text), lo, hi));
  return v;
}

std::string kind_word(const TrafficSpec& s) {
  switch (s.kind) {
    case TrafficKind::Spread:
      return "spread:" + num(s.spread);
    case TrafficKind::Matrix:
      return "file:" + s.matrix_path;
    case TrafficKind::Uniform:
      return "uniform";
    case TrafficKind::Zipf:
      return "zipf:" + num(s.zipf_s);
    case TrafficKind::Hot:
      return fmt::format("hot:{}:{}", s.hot_ranks, num(s.hot_share));
  }
  return "?";
}

bool generated(const TrafficSpec& s) {
  return s.kind == TrafficKind::Uniform || s.kind == TrafficKind::Zipf ||
         s.kind == TrafficKind::Hot;
}

uint64_t mix_in(uint64_t h, uint64_t v) {  // FNV-1a over the 8 bytes of v
  for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ULL;
  return h;
}

uint64_t bits(double v) {
  uint64_t b = 0;
  static_assert(sizeof b == sizeof v);
  std::memcpy(&b, &v, sizeof b);
  return b;
}

}  // namespace

std::string TrafficSpec::word() const { return kind_word(*this); }

std::string TrafficSpec::describe() const {
  std::string s = kind_word(*this);
  if (kind == TrafficKind::Matrix) {
    s = fmt::format("matrix {} ({}x{} bytes, scale {})", matrix_path, matrix_dim, matrix_dim,
                    num(matrix_scale));
  } else if (kind == TrafficKind::Spread) {
    s += " (nccl-tests' distance-weighted pattern)";
  } else {
    s += fmt::format(" seed {}, {} tokens per rank", seed, kTrafficTokens);
  }
  if (!source.empty()) s += ", from " + source;
  return s;
}

std::string TrafficSpec::repeat_flags() const {
  std::string s = std::string(kFlag) + " " + kind_word(*this);
  if (kind == TrafficKind::Matrix) s += " --traffic-scale " + num(matrix_scale);
  if (generated(*this)) s += fmt::format(" --traffic-seed {}", seed);
  return s;
}

uint64_t TrafficSpec::fingerprint() const {
  uint64_t h = 0xcbf29ce484222325ULL;
  h = mix_in(h, static_cast<uint64_t>(kind));
  switch (kind) {
    case TrafficKind::Spread:
      return mix_in(h, bits(spread));
    case TrafficKind::Matrix:
      h = mix_in(h, static_cast<uint64_t>(matrix_dim));
      for (int64_t v : matrix_bytes) h = mix_in(h, static_cast<uint64_t>(v));
      return h;
    case TrafficKind::Zipf:
      h = mix_in(h, bits(zipf_s));
      break;
    case TrafficKind::Hot:
      h = mix_in(mix_in(h, static_cast<uint64_t>(hot_ranks)), bits(hot_share));
      break;
    case TrafficKind::Uniform:
      break;
  }
  return mix_in(h, seed);
}

TrafficSpec parse_traffic(const std::string& word, uint64_t seed, double scale) {
  TrafficSpec s;
  s.seed = seed;
  const size_t colon = word.find(':');
  const std::string head = word.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : word.substr(colon + 1);
  const bool has_arg = colon != std::string::npos;
  const std::string what = fmt::format("{} {}", kFlag, word);
  if (head == "spread") {
    s.kind = TrafficKind::Spread;
    if (has_arg) s.spread = parse_finite(arg, what + ": S", 0, 1);
  } else if (head == "uniform" && !has_arg) {
    s.kind = TrafficKind::Uniform;
  } else if (head == "zipf") {
    s.kind = TrafficKind::Zipf;
    if (has_arg) s.zipf_s = parse_finite(arg, what + ": S", 0, 10);
  } else if (head == "hot" && has_arg) {
    s.kind = TrafficKind::Hot;
    const size_t second = arg.find(':');
    s.hot_ranks = parse_count(arg.substr(0, second), what + ": K", 1, kMaxMatrixDim);
    if (second != std::string::npos)
      s.hot_share = parse_finite(arg.substr(second + 1), what + ": F", 0, 1);
  } else if ((head == "file" || head == "matrix") && has_arg && !arg.empty()) {
    s.kind = TrafficKind::Matrix;
    s.matrix_path = arg;
    s.matrix_scale = check_finite(scale, "--traffic-scale", 0, 1e12);
    load_matrix(s);
  } else {
    throw InvalidArgument(fmt::format("{} {} is not {}", kFlag, quote(word), kForms));
  }
  return s;
}

TrafficSpec traffic_from_env(const Env& env, std::optional<double> scale) {
  TrafficSpec s;
  const auto file = env.get("NCCL_TESTS_ALLTOALLV_MATRIX_FILE");
  if (file && !file->empty()) {
    s.kind = TrafficKind::Matrix;
    s.matrix_path = *file;
    s.source = "NCCL_TESTS_ALLTOALLV_MATRIX_FILE";
    const auto var = env.get("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE");
    if (scale)
      s.matrix_scale = *scale;
    else if (var && !var->empty())
      s.matrix_scale = parse_finite(*var, "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", 0, 1e12);
    load_matrix(s);
    return s;
  }
  const auto spread = env.get("NCCL_TESTS_ALLTOALLV_SPREAD");
  if (spread && !spread->empty()) {
    s.spread = parse_finite(*spread, "NCCL_TESTS_ALLTOALLV_SPREAD", 0, 1);
    s.source = "NCCL_TESTS_ALLTOALLV_SPREAD";
  }
  return s;
}

void load_matrix(TrafficSpec& s) {
  const std::string& path = s.matrix_path;
  std::string text;
  try {
    text = RegularFile(path, static_cast<uint64_t>(kMaxMatrixFileBytes)).read_all();
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("traffic matrix: {}", e.what()));
  }
  // Rows end at newlines (empty lines do not count); cells are separated by white space.
  std::vector<int64_t> cells;
  size_t cols = 0, rows = 0, in_row = 0;
  auto end_row = [&] {
    if (in_row == 0) return;
    if (rows == 0) cols = in_row;
    if (in_row != cols)
      throw InvalidArgument(fmt::format("traffic matrix {}: row {} has {} values, row 1 has {}",
                                        path, rows + 1, in_row, cols));
    ++rows;
    in_row = 0;
    if (rows > static_cast<size_t>(kMaxMatrixDim))
      throw InvalidArgument(
          fmt::format("traffic matrix {}: more than {} rows", path, kMaxMatrixDim));
  };
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      end_row();
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else {
      size_t j = i;
      while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
      const std::string where =
          fmt::format("traffic matrix {} row {} column {}", path, rows + 1, in_row + 1);
      const double v = parse_finite(std::string_view(text).substr(i, j - i), where, 0, 1e15);
      const double scaled = v * s.matrix_scale;
      if (!(scaled <= kMaxCellBytes))
        throw InvalidArgument(fmt::format("{}: {} x scale {} is more than {} bytes", where, num(v),
                                          num(s.matrix_scale), num(kMaxCellBytes)));
      cells.push_back(static_cast<int64_t>(scaled) & ~(kTrafficAlign - 1));
      ++in_row;
      i = j;
    }
  }
  end_row();
  if (rows == 0) throw InvalidArgument(fmt::format("traffic matrix {}: no values", path));
  if (rows != cols)
    throw InvalidArgument(
        fmt::format("traffic matrix {}: {} rows of {} values, not square", path, rows, cols));
  s.matrix_dim = static_cast<int>(rows);
  s.matrix_bytes = std::move(cells);
}

}  // namespace collie::perf
