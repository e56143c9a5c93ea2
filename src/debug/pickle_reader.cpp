// PickleDoc: a stack machine over the plain-data opcodes of protocols 2-5, building compact
// values (16-byte nodes, strings as views of the input, container items as 8-byte linked slots;
// None and the booleans shared), each charged to the caller's InputBudget as it is made, so
// the memory a pickle costs is bounded by the budget whatever its shape. parse_pickle turns a
// whole document into JSON under a depth limit and the same kind of budget.
#include <fmt/format.h>

#include <bit>
#include <map>

#include "core/error.h"
#include "debug/pickle.h"

namespace collie {

using nlohmann::json;
using Kind = PickleDoc::Kind;
using Ref = PickleDoc::Ref;

class PickleParser {
 public:
  PickleParser(PickleDoc& doc, InputBudget& budget) : doc_(doc), d_(doc.data_), budget_(budget) {}

  void run() {
    if (d_.size() > kMaxPickleBytes) {
      throw InvalidArgument(fmt::format("pickle of {} bytes is larger than the {} accepted",
                                        d_.size(), kMaxPickleBytes));
    }
    // The shared constants: None, False, True.
    make(Kind::None, 0, 0);
    make(Kind::Bool, 0, 0);
    make(Kind::Bool, 0, 1);
    while (true) {
      if (pos_ >= d_.size()) bad("truncated (no STOP opcode)");
      const size_t at = pos_;
      const auto op = static_cast<unsigned char>(d_[pos_++]);
      if (op == '.') break;
      step(op, at);
    }
    if (stack_.empty()) bad("STOP with nothing on the stack");
    doc_.root_ = stack_.back();
  }

 private:
  static constexpr Ref kNone = 0, kFalse = 1, kTrue = 2;
  static constexpr uint32_t kUnset = 0xffffffffu;

  [[noreturn]] void bad(const std::string& what) const {
    throw InvalidArgument(fmt::format("invalid pickle at byte {}: {}", pos_, what));
  }

  // Charges what a vector's growth to hold one more element costs (its new capacity).
  template <typename V>
  void charge_growth(const V& v) {
    if (v.size() == v.capacity()) {
      budget_.charge(std::max<size_t>(v.capacity(), 8) * sizeof(typename V::value_type));
    }
  }

  std::string_view take(uint64_t n) {
    if (n > d_.size() - pos_)
      bad(fmt::format("truncated ({} bytes needed, {} left)", n, d_.size() - pos_));
    std::string_view v = d_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  uint64_t le(int n) {
    std::string_view b = take(n);
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(b[k]);
    return v;
  }

  Ref make(Kind k, uint32_t a, uint64_t b) {
    if (doc_.nodes_.size() >= 0xfffffff0u) bad("more values than this reader counts");
    budget_.charge(sizeof(PickleDoc::Node));
    doc_.nodes_.push_back(PickleDoc::Node{k, a, b});
    return static_cast<Ref>(doc_.nodes_.size() - 1);
  }
  Ref container(Kind k) { return make(k, PickleDoc::kNoSlot, PickleDoc::kNoSlot); }
  void append(Ref c, Ref item) {
    if (doc_.slots_.size() >= 0xfffffff0u) bad("more items than this reader counts");
    budget_.charge(sizeof(PickleDoc::Slot));
    doc_.slots_.push_back(PickleDoc::Slot{item, PickleDoc::kNoSlot});
    const auto s = static_cast<uint32_t>(doc_.slots_.size() - 1);
    PickleDoc::Node& n = doc_.nodes_[c];
    if (n.a == PickleDoc::kNoSlot) {
      n.a = s;
    } else {
      doc_.slots_[n.b].next = s;
    }
    n.b = s;
  }

  void push(Ref n) {
    charge_growth(stack_);
    stack_.push_back(n);
  }
  Ref pop() {
    if (stack_.size() <= floor()) bad("stack underflow");
    const Ref n = stack_.back();
    stack_.pop_back();
    return n;
  }
  Ref top() {
    if (stack_.size() <= floor()) bad("stack underflow");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // Moves the values above the topmost MARK (which is removed) into container c.
  void pop_mark_into(Ref c) {
    if (marks_.empty()) bad("no MARK to pop to");
    const size_t m = marks_.back();
    marks_.pop_back();
    for (size_t i = m; i < stack_.size(); ++i) append(c, stack_[i]);
    stack_.resize(m);
  }
  size_t above_mark() const {
    if (marks_.empty()) bad("no MARK to pop to");
    return stack_.size() - marks_.back();
  }
  // The container just below the topmost MARK (APPENDS, SETITEMS add to it); it must lie above
  // the MARK before that one, as in Python, whose MARK starts a new stack.
  Ref below_mark(Kind k, const char* op) {
    (void)above_mark();  // throws without a MARK
    const size_t m = marks_.back();
    const size_t prev = marks_.size() >= 2 ? marks_[marks_.size() - 2] : 0;
    if (m == 0 || m - 1 < prev) bad(fmt::format("{} without a container below its MARK", op));
    const Ref c = stack_[m - 1];
    if (doc_.nodes_[c].kind != k)
      bad(fmt::format("{} on a value that is not a {}", op, k == Kind::Dict ? "dict" : "list"));
    return c;
  }
  Ref expect(Kind k, const char* op) {
    const Ref c = top();
    if (doc_.nodes_[c].kind != k)
      bad(fmt::format("{} on a value that is not a {}", op, k == Kind::Dict ? "dict" : "list"));
    return c;
  }

  // MEMOIZE numbers the memo densely; BINPUT / LONG_BINPUT may name any index: those far past
  // the dense part go to a map (charged more).
  void memo_put(uint64_t idx) {
    const Ref v = top();
    if (idx < memo_.size()) {
      memo_[idx] = v;
    } else if (idx < memo_.size() + 4096) {
      while (memo_.size() <= idx) {
        charge_growth(memo_);
        memo_.push_back(kUnset);
      }
      memo_[idx] = v;
    } else {
      budget_.charge(64);
      sparse_memo_[idx] = v;
    }
  }
  void memo_get(uint64_t idx) {
    Ref v = kUnset;
    if (idx < memo_.size()) {
      v = memo_[idx];
    } else if (auto it = sparse_memo_.find(idx); it != sparse_memo_.end()) {
      v = it->second;
    }
    if (v == kUnset) bad(fmt::format("memo entry {} was never stored", idx));
    push(v);
  }
  void str(Kind k, uint64_t n) {
    const size_t at = pos_;
    take(n);
    push(make(k, static_cast<uint32_t>(n), at));
  }
  void integer(int64_t v) { push(make(Kind::Int, 0, static_cast<uint64_t>(v))); }
  // A tuple of the top `n` values (TUPLE1..3).
  void tuple_of(size_t n) {
    if (stack_.size() < floor() + n) bad("stack underflow");
    const Ref t = container(Kind::Tuple);
    for (size_t i = stack_.size() - n; i < stack_.size(); ++i) append(t, stack_[i]);
    stack_.resize(stack_.size() - n);
    push(t);
  }

  void step(unsigned char op, size_t at) {
    switch (op) {
      case 0x80: {  // PROTO
        const uint64_t v = le(1);
        if (v < 2 || v > 5) bad(fmt::format("protocol {} (2 to 5 are read)", v));
        return;
      }
      case 0x95:
        le(8);
        return;  // FRAME: a length hint only
      case '(':
        charge_growth(marks_);
        marks_.push_back(static_cast<uint32_t>(stack_.size()));
        return;
      case '}':
        return push(container(Kind::Dict));
      case ']':
        return push(container(Kind::List));
      case ')':
        return push(container(Kind::Tuple));
      case 'N':
        return push(kNone);
      case 0x88:
        return push(kTrue);
      case 0x89:
        return push(kFalse);
      case 'K':
        return integer(static_cast<int64_t>(le(1)));
      case 'M':
        return integer(static_cast<int64_t>(le(2)));
      case 'J':
        return integer(static_cast<int32_t>(static_cast<uint32_t>(le(4))));
      case 0x8a: {  // LONG1
        const uint64_t n = le(1);
        if (n > 8) bad(fmt::format("integer of {} bytes (wider than 64 bits)", n));
        if (n == 0) return integer(0);
        uint64_t v = le(static_cast<int>(n));
        if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        return integer(static_cast<int64_t>(v));
      }
      case 'G': {
        const uint64_t be = le(8);
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | ((be >> (8 * k)) & 0xff);
        return push(make(Kind::Float, 0, bits));
      }
      case 0x8c:
        return str(Kind::Str, le(1));
      case 'X':
        return str(Kind::Str, le(4));
      case 0x8d:
        return str(Kind::Str, le(8));
      case 'C':
        return str(Kind::Bytes, le(1));
      case 'B':
        return str(Kind::Bytes, le(4));
      case 0x8e:
        return str(Kind::Bytes, le(8));
      case 0x94:
        return memo_put(memo_.size());
      case 'q':
        return memo_put(le(1));
      case 'r':
        return memo_put(le(4));
      case 'h':
        return memo_get(le(1));
      case 'j':
        return memo_get(le(4));
      case 't': {
        const Ref t = container(Kind::Tuple);
        pop_mark_into(t);
        return push(t);
      }
      case 0x85:
      case 0x86:
      case 0x87:
        return tuple_of(op - 0x84);
      case 'l': {
        const Ref x = container(Kind::List);
        pop_mark_into(x);
        return push(x);
      }
      case 'd': {
        if (above_mark() % 2 != 0) bad("DICT with a key and no value");
        const Ref x = container(Kind::Dict);
        pop_mark_into(x);
        return push(x);
      }
      case 'a': {
        const Ref v = pop();
        return append(expect(Kind::List, "APPEND"), v);
      }
      case 'e':
        return pop_mark_into(below_mark(Kind::List, "APPENDS"));
      case 's': {
        const Ref v = pop();
        const Ref k = pop();
        const Ref c = expect(Kind::Dict, "SETITEM");
        append(c, k);
        return append(c, v);
      }
      case 'u': {
        if (above_mark() % 2 != 0) bad("SETITEMS with a key and no value");
        return pop_mark_into(below_mark(Kind::Dict, "SETITEMS"));
      }
      default:
        pos_ = at;
        bad(
            fmt::format("opcode 0x{:02x} is not plain data (only dict, list, tuple, str, bytes, "
                        "int, float, bool and None are read; nothing is executed)",
                        op));
    }
  }

  PickleDoc& doc_;
  std::string_view d_;
  InputBudget& budget_;
  size_t pos_ = 0;
  std::vector<Ref> stack_;
  std::vector<uint32_t> marks_;
  std::vector<Ref> memo_;
  std::map<uint64_t, Ref> sparse_memo_;
};

PickleDoc::PickleDoc(std::string_view data, InputBudget& budget) : data_(data) {
  PickleParser(*this, budget).run();
}

double PickleDoc::real(Ref r) const { return std::bit_cast<double>(nodes_[r].b); }

std::string_view PickleDoc::str(Ref r) const {
  return data_.substr(static_cast<size_t>(nodes_[r].b), nodes_[r].a);
}

std::optional<Ref> PickleDoc::get(Ref dict, std::string_view key, InputBudget* steps) const {
  std::optional<Ref> found;
  bool is_key = true;
  bool match = false;
  for_each(dict, [&](Ref x) {
    if (steps != nullptr) steps->charge(1);
    if (is_key) {
      match = kind(x) == Kind::Str && str(x) == key;
    } else if (match) {
      found = x;
    }
    is_key = !is_key;
  });
  return found;
}

json PickleDoc::to_json(Ref r, InputBudget& budget, InputBudget* steps) const {
  return to_json(r, budget, steps, 0);
}

json PickleDoc::to_json(Ref r, InputBudget& budget, InputBudget* steps, int depth) const {
  if (steps != nullptr) steps->charge(1);
  if (depth > kMaxPickleDepth) {
    throw InvalidArgument(
        fmt::format("invalid pickle: nested deeper than {} levels (or a value that contains "
                    "itself)",
                    kMaxPickleDepth));
  }
  // What a value allocates (a scalar lives in its parent's slot; the parent charges the slot):
  // nlohmann keeps a string, an array and an object on the heap, each with its malloc overhead.
  if (kind(r) == Kind::Str || kind(r) == Kind::Bytes) budget.charge(48 + str(r).size());
  switch (kind(r)) {
    case Kind::None:
      return nullptr;
    case Kind::Bool:
      return integer(r) != 0;
    case Kind::Int:
      return integer(r);
    case Kind::Float:
      return real(r);
    case Kind::Str:
      return std::string(str(r));
    case Kind::Bytes: {
      const std::string_view s = str(r);
      return json::binary(std::vector<uint8_t>(s.begin(), s.end()));
    }
    case Kind::List:
    case Kind::Tuple: {
      size_t n = 0;
      for_each(r, [&](Ref) { ++n; });
      budget.charge(32 + std::max<size_t>(n, 2) * sizeof(json));  // reserved exactly
      json a = json::array();
      a.get_ref<json::array_t&>().reserve(n);
      for_each(r, [&](Ref x) { a.push_back(to_json(x, budget, steps, depth + 1)); });
      return a;
    }
    case Kind::Dict: {
      budget.charge(64);
      json o = json::object();
      std::optional<Ref> key;
      for_each(r, [&](Ref x) {
        if (!key) {
          key = x;
          return;
        }
        std::string k;
        if (kind(*key) == Kind::Str) {
          k = std::string(str(*key));
        } else if (kind(*key) == Kind::Int) {
          k = std::to_string(integer(*key));
        } else {
          throw InvalidArgument("invalid pickle: a dict key that is neither str nor int");
        }
        budget.charge(96 + k.size());  // the object's map node: header, key, value
        o[k] = to_json(x, budget, steps, depth + 1);
        key.reset();
      });
      return o;
    }
  }
  return nullptr;
}

json parse_pickle(std::string_view data) {
  InputBudget budget(16 * data.size() + (size_t{1} << 20), "pickle");
  const PickleDoc doc(data, budget);
  return doc.to_json(doc.root(), budget);
}

}  // namespace collie
