// parse_pickle: a stack machine over the plain-data opcodes of protocols 2-5. Values live in an
// arena owned by one parse (nodes point at each other, so the memo shares them exactly as
// Python's does — a dict memoized while empty and filled afterwards is the filled dict — and a
// self-containing value cannot leak). The arena becomes JSON at STOP, under a depth limit and a
// budget proportional to the input, so memo references cannot multiply it.
#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "core/error.h"
#include "debug/pickle.h"

namespace collie {
namespace {

using nlohmann::json;

enum class Kind : uint8_t { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict };

struct Node {
  Kind kind = Kind::None;
  int64_t i = 0;  // Bool, Int
  double f = 0;
  std::string s;             // Str, Bytes
  std::vector<Node*> items;  // List, Tuple; Dict: key, value, key, value...
};

class Parser {
 public:
  explicit Parser(std::string_view d) : d_(d) {}

  json run() {
    if (d_.size() > kMaxPickleBytes) {
      throw InvalidArgument(fmt::format("pickle of {} bytes is larger than the {} accepted",
                                        d_.size(), kMaxPickleBytes));
    }
    while (true) {
      if (pos_ >= d_.size()) bad("truncated (no STOP opcode)");
      const size_t at = pos_;
      const auto op = static_cast<unsigned char>(d_[pos_++]);
      if (op == '.') break;
      step(op, at);
    }
    if (stack_.empty()) bad("STOP with nothing on the stack");
    budget_ = 8 * d_.size() + 4096;
    return to_json(*stack_.back(), 0);
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw InvalidArgument(fmt::format("invalid pickle at byte {}: {}", pos_, what));
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

  Node* make(Kind k) {
    arena_.emplace_back();
    arena_.back().kind = k;
    return &arena_.back();
  }
  void push(Node* n) { stack_.push_back(n); }
  Node* pop() {
    if (stack_.size() <= floor()) bad("stack underflow");
    Node* n = stack_.back();
    stack_.pop_back();
    return n;
  }
  Node* top() {
    if (stack_.size() <= floor()) bad("stack underflow");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The values above the topmost MARK, which is removed.
  std::vector<Node*> pop_mark() {
    if (marks_.empty()) bad("no MARK to pop to");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Node*> v(stack_.begin() + static_cast<ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return v;
  }
  Node* container(Kind k, const char* op) {
    Node* c = top();
    if (c->kind != k)
      bad(fmt::format("{} on a value that is not a {}", op, k == Kind::Dict ? "dict" : "list"));
    return c;
  }
  void memo_put(uint64_t idx) { memo_[idx] = top(); }
  void memo_get(uint64_t idx) {
    auto it = memo_.find(idx);
    if (it == memo_.end()) bad(fmt::format("memo entry {} was never stored", idx));
    push(it->second);
  }
  void str(Kind k, uint64_t n) {
    Node* x = make(k);
    x->s = std::string(take(n));
    push(x);
  }
  void integer(int64_t v) {
    Node* x = make(Kind::Int);
    x->i = v;
    push(x);
  }
  void tuple(std::vector<Node*> items) {
    Node* x = make(Kind::Tuple);
    x->items = std::move(items);
    push(x);
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
        marks_.push_back(stack_.size());
        return;
      case '}':
        push(make(Kind::Dict));
        return;
      case ']':
        push(make(Kind::List));
        return;
      case ')':
        tuple({});
        return;
      case 'N':
        push(make(Kind::None));
        return;
      case 0x88:
      case 0x89: {
        Node* x = make(Kind::Bool);
        x->i = op == 0x88;
        push(x);
        return;
      }
      case 'K':
        integer(static_cast<int64_t>(le(1)));
        return;
      case 'M':
        integer(static_cast<int64_t>(le(2)));
        return;
      case 'J':
        integer(static_cast<int32_t>(static_cast<uint32_t>(le(4))));
        return;
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
        Node* x = make(Kind::Float);
        x->f = std::bit_cast<double>(bits);
        push(x);
        return;
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
      case 't':
        return tuple(pop_mark());
      case 0x85:
      case 0x86:
      case 0x87: {
        std::vector<Node*> items(op - 0x84);
        for (size_t k = items.size(); k-- > 0;) items[k] = pop();
        return tuple(std::move(items));
      }
      case 'l': {
        Node* x = make(Kind::List);
        x->items = pop_mark();
        return push(x);
      }
      case 'd': {
        std::vector<Node*> kv = pop_mark();
        if (kv.size() % 2 != 0) bad("DICT with a key and no value");
        Node* x = make(Kind::Dict);
        x->items = std::move(kv);
        return push(x);
      }
      case 'a': {
        Node* v = pop();
        container(Kind::List, "APPEND")->items.push_back(v);
        return;
      }
      case 'e': {
        std::vector<Node*> v = pop_mark();
        Node* c = container(Kind::List, "APPENDS");
        c->items.insert(c->items.end(), v.begin(), v.end());
        return;
      }
      case 's': {
        Node* v = pop();
        Node* k = pop();
        Node* c = container(Kind::Dict, "SETITEM");
        c->items.push_back(k);
        c->items.push_back(v);
        return;
      }
      case 'u': {
        std::vector<Node*> kv = pop_mark();
        if (kv.size() % 2 != 0) bad("SETITEMS with a key and no value");
        Node* c = container(Kind::Dict, "SETITEMS");
        c->items.insert(c->items.end(), kv.begin(), kv.end());
        return;
      }
      default:
        pos_ = at;
        bad(
            fmt::format("opcode 0x{:02x} is not plain data (only dict, list, tuple, str, bytes, "
                        "int, float, bool and None are read; nothing is executed)",
                        op));
    }
  }

  void spend(size_t n) {
    if (n > budget_) bad("memo references expand the value beyond 8 times the input's size");
    budget_ -= n;
  }

  std::string key_text(const Node& k) {
    if (k.kind == Kind::Str) return k.s;
    if (k.kind == Kind::Int) return std::to_string(k.i);
    bad("a dict key that is neither str nor int");
  }

  json to_json(const Node& n, int depth) {
    if (depth > kMaxPickleDepth) {
      bad(fmt::format("nested deeper than {} levels (or a value that contains itself)",
                      kMaxPickleDepth));
    }
    spend(1 + n.s.size() + n.items.size());
    switch (n.kind) {
      case Kind::None:
        return nullptr;
      case Kind::Bool:
        return n.i != 0;
      case Kind::Int:
        return n.i;
      case Kind::Float:
        return n.f;
      case Kind::Str:
        return n.s;
      case Kind::Bytes:
        return json::binary(std::vector<uint8_t>(n.s.begin(), n.s.end()));
      case Kind::List:
      case Kind::Tuple: {
        json a = json::array();
        for (const Node* x : n.items) a.push_back(to_json(*x, depth + 1));
        return a;
      }
      case Kind::Dict: {
        json o = json::object();
        for (size_t k = 0; k + 1 < n.items.size(); k += 2) {
          o[key_text(*n.items[k])] = to_json(*n.items[k + 1], depth + 1);
        }
        return o;
      }
    }
    return nullptr;
  }

  std::string_view d_;
  size_t pos_ = 0;
  std::deque<Node> arena_;
  std::vector<Node*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Node*> memo_;
  size_t budget_ = 0;
};

}  // namespace

json parse_pickle(std::string_view data) { return Parser(data).run(); }

}  // namespace collie
