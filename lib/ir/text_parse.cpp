// The tensor graph's text form, parsed with every op's rules checked (docs/ir.md), and the
// verifier that runs those rules on graphs the frontend and the passes build.
#include "lib/ir/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "lib/ir/routine.h"
#include "lib/ir/scalar_semantics.h"
#include "tensorjit/config.h"
#include "tensorjit/error.h"

namespace tj::ir {

namespace {

std::optional<DType> parse_dtype(std::string_view s) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (short_dtype_name(static_cast<DType>(i)) == s) return static_cast<DType>(i);
  return std::nullopt;
}

constexpr int64_t kMaxRank = 64;

struct Token {
  enum Kind { End, Newline, Word, Id, String, Punct } kind;
  std::string text;
  int line, col;
};

class Parser {
public:
  Parser(std::string_view text, std::string_view file,
         const std::function<std::shared_ptr<rt::Storage>(const StorageDecl&)>& storage_for,
         std::optional<Device> device, bool label_storages = true)
      : text_(text), file_(file), storage_for_(storage_for), device_(device),
        label_storages_(label_storages) {
    advance();
  }

  ParsedGraph run() {
    while (tok_.kind != Token::End) {
      if (tok_.kind == Token::Newline) {
        advance();
        continue;
      }
      if (tok_.kind == Token::Word && tok_.text == "storage")
        storage();
      else if (tok_.kind == Token::Word && tok_.text == "output")
        output();
      else if (tok_.kind == Token::Id)
        node();
      else
        fail(tok_,
             fmt::format("expected 'storage', 'output' or a node '%N =', got {}", what(tok_)));
      if (tok_.kind != Token::End) expect_newline();
    }
    if (graph_.outputs.empty()) fail(tok_, "the graph has no outputs (add a line 'output %N')");
    for (const auto& [a, at] : in_place_)
      check_in_place(*a, at);
    return std::move(graph_);
  }

private:
  [[noreturn]] void fail(const Token& at, const std::string& msg) const {
    throw Error(located_message(file_, text_, at.line, at.col, msg));
  }

  static std::string what(const Token& t) {
    switch (t.kind) {
    case Token::End:
      return "the end of the file";
    case Token::Newline:
      return "the end of the line";
    case Token::String:
      return fmt::format("\"{}\"", t.text);
    case Token::Id:
      return "%" + t.text;
    default:
      return fmt::format("'{}'", t.text);
    }
  }

  // --- lexing ---
  void advance() {
    auto at_end = [&] { return pos_ >= text_.size(); };
    auto ch = [&] { return text_[pos_]; };
    auto step = [&] {
      if (text_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
      ++pos_;
    };
    while (!at_end()) {
      if (ch() == '#') {
        while (!at_end() && ch() != '\n')
          step();
      } else if (ch() == ' ' || ch() == '\t' || ch() == '\r') {
        step();
      } else {
        break;
      }
    }
    tok_ = Token{Token::End, "", line_, col_};
    if (at_end()) return;
    char c = ch();
    if (c == '\n') {
      tok_.kind = Token::Newline;
      step();
      return;
    }
    auto word_char = [](char x) {
      return std::isalnum(static_cast<unsigned char>(x)) || x == '_' || x == '.';
    };
    if (c == '%') {
      step();
      tok_.kind = Token::Id;
      while (!at_end() && std::isdigit(static_cast<unsigned char>(ch()))) {
        tok_.text += ch();
        step();
      }
      if (tok_.text.empty()) fail(tok_, "expected a node number after '%'");
      return;
    }
    if (c == '"') {
      step();
      tok_.kind = Token::String;
      while (!at_end() && ch() != '"' && ch() != '\n') {
        tok_.text += ch();
        step();
      }
      if (at_end() || ch() != '"') fail(tok_, "unterminated string");
      step();
      return;
    }
    if (word_char(c) || c == '-' || c == '+') {
      tok_.kind = Token::Word;
      // A number's exponent sign ("1e-05") is part of the word.
      // So are a complex literal's sign between its parts ("1.5-2j") and its exponents.
      auto sign_continues = [&] {
        if (tok_.text.empty()) return true;
        char last = tok_.text.back();
        return last == 'e' || last == 'E' || std::isdigit(static_cast<unsigned char>(last)) ||
               last == '.' || tok_.text.ends_with("inf") || tok_.text.ends_with("nan");
      };
      while (!at_end() && (word_char(ch()) || ((ch() == '-' || ch() == '+') && sign_continues()))) {
        tok_.text += ch();
        step();
      }
      return;
    }
    if (c == '[' || c == ']' || c == ',' || c == '=' || c == ':') {
      tok_.kind = Token::Punct;
      tok_.text = std::string(1, c);
      step();
      return;
    }
    fail(tok_, fmt::format("unexpected character '{}'", c));
  }

  bool is_punct(char c) const { return tok_.kind == Token::Punct && tok_.text[0] == c; }
  void expect_punct(char c) {
    if (!is_punct(c)) fail(tok_, fmt::format("expected '{}', got {}", c, what(tok_)));
    advance();
  }
  void expect_newline() {
    if (tok_.kind != Token::Newline)
      fail(tok_, fmt::format("expected the end of the line, got {}", what(tok_)));
    advance();
  }
  std::string word(const char* what_for) {
    if (tok_.kind != Token::Word)
      fail(tok_, fmt::format("expected {}, got {}", what_for, what(tok_)));
    std::string s = tok_.text;
    advance();
    return s;
  }
  bool accept_word(std::string_view w) {
    if (tok_.kind != Token::Word || tok_.text != w) return false;
    advance();
    return true;
  }

  int64_t integer(const Token& t) const {
    int64_t v = 0;
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    if (*b == '+') ++b;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range) fail(t, "integer out of range");
    if (ec != std::errc() || p != e) fail(t, fmt::format("expected an integer, got {}", what(t)));
    return v;
  }
  int64_t integer() {
    if (tok_.kind != Token::Word)
      fail(tok_, fmt::format("expected an integer, got {}", what(tok_)));
    Token t = tok_;
    advance();
    return integer(t);
  }
  std::vector<int64_t> int_list() {
    expect_punct('[');
    std::vector<int64_t> v;
    if (!is_punct(']')) {
      v.push_back(integer());
      while (is_punct(',')) {
        advance();
        v.push_back(integer());
      }
    }
    expect_punct(']');
    return v;
  }

  // A literal of dtype `t` (docs/ir.md: true/false, integers, floats, inf, nan).
  Scalar value(DType t) {
    Token at = tok_;
    word("a value");
    return value_of(at, t);
  }
  Scalar value_of(const Token& at, DType t) const {
    const std::string& s = at.text;
    if (t == kBool) {
      if (s == "true") return Scalar(true);
      if (s == "false") return Scalar(false);
      fail(at, fmt::format("expected true or false for bool, got '{}'", s));
    }
    if (is_complex(t)) {
      // re+imj, re-imj, or a real number; the sign that splits is not an exponent's.
      size_t split = std::string::npos;
      for (size_t i = 1; i < s.size(); ++i)
        if ((s[i] == '+' || s[i] == '-') && s[i - 1] != 'e' && s[i - 1] != 'E') split = i;
      if (split == std::string::npos || s.back() != 'j')
        return Scalar(std::complex<double>(number(at, s), 0.0));
      return Scalar(std::complex<double>(number(at, s.substr(0, split)),
                                         number(at, s.substr(split, s.size() - split - 1))));
    }
    if (!is_floating_point(t)) {
      int64_t v = integer(at);
      if (wrap_to_dtype(v, t) != v)
        fail(at, fmt::format("{} is out of range for {}", v, short_dtype_name(t)));
      return Scalar(v);
    }
    return Scalar(number(at, s));
  }
  // strtod reads nan, inf and every decimal form; it needs the whole word.
  double number(const Token& at, const std::string& s) const {
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || std::isspace(static_cast<unsigned char>(s[0])))
      fail(at, fmt::format("expected a number, got '{}'", at.text));
    return d;
  }

  DType dtype() {
    Token at = tok_;
    std::string s = word("a dtype");
    auto t = parse_dtype(s);
    if (!t) fail(at, fmt::format("unknown dtype '{}'", s));
    return *t;
  }

  Shape shape() {
    Token at = tok_;
    Shape s = int_list();
    if (static_cast<int64_t>(s.size()) > kMaxRank)
      fail(at, fmt::format("a tensor has at most {} dims", kMaxRank));
    int64_t n = 1;
    for (int64_t d : s) {
      if (d < 0) fail(at, fmt::format("negative size {}", d));
      // As check_sizes: byte counts of 8-byte elements must fit too, and
      // strides (products of the other dims) even when a dim is 0.
      if (__builtin_mul_overflow(n, std::max<int64_t>(d, 1), &n) || n > (INT64_MAX >> 3))
        fail(at, "the shape has too many elements");
    }
    return s;
  }

  Device device() {
    Token at = tok_;
    std::string s = word("a device");
    if (s == "cpu") return kCPU;
    if (s == "cuda" && is_punct(':')) {
      advance();
      int64_t i = integer();
      if (i < 0 || i > 1024) fail(at, fmt::format("no device cuda:{}", i));
      return Device(kCUDA, static_cast<int>(i));
    }
    fail(at, fmt::format("expected a device (cpu or cuda:N), got '{}'", s));
  }

  // --- lines ---
  void storage() {
    advance();
    Token at = tok_;
    StorageDecl d;
    d.name = word("a storage name");
    if (!std::isalpha(static_cast<unsigned char>(d.name[0])) && d.name[0] != '_')
      fail(at, fmt::format("a storage name starts with a letter, got '{}'", d.name));
    if (storages_.count(d.name)) fail(at, fmt::format("storage '{}' is declared twice", d.name));
    expect_punct(':');
    d.dtype = dtype();
    Token size_at = tok_;
    Shape s = shape();
    if (s.size() != 1) fail(size_at, "a storage is declared with one size: its element count");
    d.numel = s[0];
    if (d.numel > (int64_t{1} << 40) / static_cast<int64_t>(itemsize(d.dtype)))
      fail(size_at, "the storage is too large");
    d.device = kCPU;
    if (accept_word("on")) d.device = device();
    if (device_) d.device = *device_;
    if (is_punct('=')) {
      advance();
      if (tok_.kind == Token::String) {
        d.file = tok_.text;
        advance();
      } else {
        Token list_at = tok_;
        expect_punct('[');
        d.has_inline = true;
        if (!is_punct(']')) {
          d.values.push_back(value(d.dtype));
          while (is_punct(',')) {
            advance();
            d.values.push_back(value(d.dtype));
          }
        }
        expect_punct(']');
        if (static_cast<int64_t>(d.values.size()) != d.numel)
          fail(list_at, fmt::format("storage '{}' has {} elements but {} values are given", d.name,
                                    d.numel, d.values.size()));
      }
    }
    std::shared_ptr<rt::Storage> st;
    try {
      if (storage_for_) st = storage_for_(d);
    } catch (const Error& e) {
      fail(at, e.what());
    }
    if (!st && d.has_inline) {
      st = rt::Storage::allocate(static_cast<size_t>(d.numel) * itemsize(d.dtype));
      char* p = static_cast<char*>(st->data());
      for (int64_t i = 0; i < d.numel; ++i)
        store_scalar(p + i * itemsize(d.dtype), d.values[static_cast<size_t>(i)], d.dtype);
      if (d.device.is_cuda()) {
        try {
          st = rt::copy_to_device(st, d.device);
        } catch (const Error& e) {
          fail(at, e.what());
        }
      }
    }
    if (!st)
      fail(at,
           fmt::format("storage '{}' has no data: give it as an input (tjc --input {}=FILE.npy)",
                       d.name, d.name));
    if (st->nbytes() != static_cast<size_t>(d.numel) * itemsize(d.dtype))
      fail(at, fmt::format("storage '{}' was given {} bytes, its declaration needs {}", d.name,
                           st->nbytes(), static_cast<size_t>(d.numel) * itemsize(d.dtype)));
    if (label_storages_) st->set_label(d.name); // fresh memory: storage_for copies it
    storages_[d.name] = {st, d.dtype};
    graph_.storages.push_back({d.name, make_buffer(st, d.dtype, {d.numel}, View{{1}, 0})});
  }

  void output() {
    advance();
    std::string name;
    if (tok_.kind == Token::Word) {
      name = tok_.text;
      advance();
      expect_punct('=');
    }
    graph_.output_names.push_back(name.empty() ? fmt::format("out{}", graph_.outputs.size())
                                               : name);
    graph_.outputs.push_back(ref());
  }

  NodePtr ref() {
    if (tok_.kind != Token::Id) fail(tok_, fmt::format("expected a node '%N', got {}", what(tok_)));
    Token at = tok_;
    advance();
    auto it = nodes_.find(at.text);
    if (it == nodes_.end()) fail(at, fmt::format("%{} is not defined before this line", at.text));
    return it->second;
  }

  void node() {
    Token id = tok_;
    if (nodes_.count(id.text)) fail(id, fmt::format("%{} is defined twice", id.text));
    advance();
    expect_punct('=');
    Token op_at = tok_;
    std::string op_name = word("an op name");
    std::optional<Op> op;
    for (int i = 0; i < kNumOps; ++i)
      if (ir::name(static_cast<Op>(i)) == op_name) op = static_cast<Op>(i);
    if (op_name == "Mod") op = Op::Fmod; // its name in files written before the rename
    if (!op) fail(op_at, fmt::format("unknown op '{}'", op_name));

    // Operands: a storage, a literal (read once the dtype is known) or nodes.
    std::string storage_name;
    Token literal_at = tok_;
    std::vector<NodePtr> src;
    if (*op == Op::Buffer) {
      storage_name = word("a storage name");
      if (!storages_.count(storage_name))
        fail(literal_at,
             fmt::format("storage '{}' is not declared before this line", storage_name));
    } else if (*op == Op::Const) {
      word("a value");
    }
    std::optional<Routine> called;
    if (*op == Op::Call) {
      Token at = tok_;
      std::string routine_name = word("a routine name");
      called = routine_named(routine_name);
      if (!called) fail(at, fmt::format("unknown routine '{}'", routine_name));
    }
    if (!is_leaf(*op)) {
      src.push_back(ref());
      while (is_punct(',')) {
        advance();
        src.push_back(ref());
      }
    }
    std::map<std::string, std::pair<Token, std::vector<int64_t>>> attr;
    std::optional<Token> rcond; // lstsq's, the one attribute that is a float
    while (tok_.kind == Token::Word) {
      Token at = tok_;
      std::string key = tok_.text;
      advance();
      expect_punct('=');
      if (key == "rcond") {
        if (rcond) fail(at, "attribute 'rcond' is given twice");
        if (called != Routine::Lstsq) fail(at, fmt::format("{} has no attribute 'rcond'", op_name));
        rcond = tok_;
        word("a value");
        continue;
      }
      std::vector<int64_t> v = is_punct('[') ? int_list() : std::vector<int64_t>{integer()};
      if (!attr.emplace(key, std::make_pair(at, std::move(v))).second)
        fail(at, fmt::format("attribute '{}' is given twice", key));
    }
    expect_punct(':');
    DType t = dtype();
    Shape s = shape();
    Device dev = kCPU;
    if (accept_word("on")) {
      Token at = tok_;
      dev = device();
      if (*op != Op::Const && *op != Op::Iota && *op != Op::Philox)
        fail(at, "only Const, Iota and Philox leaves name a device");
    }
    if (device_) dev = *device_;
    Site site = nullptr;
    if (accept_word("at")) {
      if (tok_.kind != Token::String)
        fail(tok_, fmt::format("expected a quoted place after 'at', got {}", what(tok_)));
      site = intern_site(tok_.text);
      advance();
    }

    // A literal is read once its dtype is known.
    if (called == Routine::Lstsq && !rcond) fail(op_at, "Call: missing attribute 'rcond'");
    Scalar v = *op == Op::Const ? value_of(literal_at, t)
               : rcond          ? value_of(*rcond, kFloat64)
                                : Scalar();
    Checker c{*this, op_at, *op, t, s, src, attr, called};
    NodePtr n = c.build(storage_name, v, dev);
    // The place recorded where the graph was built (an equal node built
    // before keeps its own).
    Site none = nullptr;
    if (site) n->site.compare_exchange_strong(none, site);
    if (n->op == Op::Assign && n->args.back() == 1) in_place_.push_back({n.get(), op_at});
    order_.push_back(n);
    nodes_[id.text] = std::move(n);
  }

  // Checks one node against its op's rules (the ones the frontend follows
  // when it builds nodes) and builds it.
  struct Checker {
    Parser& p;
    const Token& at;
    Op op;
    DType t;
    const Shape& s;
    const std::vector<NodePtr>& src;
    std::map<std::string, std::pair<Token, std::vector<int64_t>>>& attr;
    std::optional<Routine> routine; // a Call's

    [[noreturn]] void fail(const std::string& msg) const {
      p.fail(at, fmt::format("{}: {}", name(op), msg));
    }
    std::vector<int64_t> take(const char* key, size_t count) {
      auto it = attr.find(key);
      if (it == attr.end()) fail(fmt::format("missing attribute '{}'", key));
      auto v = std::move(it->second.second);
      if (v.size() != count)
        p.fail(it->second.first, fmt::format("{}: '{}' needs {} value{}, got {}", name(op), key,
                                             count, count == 1 ? "" : "s", v.size()));
      attr.erase(it);
      return v;
    }
    int64_t take1(const char* key) { return take(key, 1)[0]; }
    // Strides, offsets, starts and steps stay far from overflow wherever the
    // scheduler multiplies and adds them, even along empty or size-1 dims.
    static constexpr int64_t kMaxIndex = int64_t{1} << 40;
    void bounded(const std::vector<int64_t>& v, const char* key) const {
      for (int64_t x : v)
        if (x < -kMaxIndex || x > kMaxIndex)
          fail(fmt::format("'{}' value {} is out of range (at most 2^40 in magnitude)", key, x));
    }
    View take_view(size_t rank) {
      View v;
      v.strides = take("strides", rank);
      v.offset = take1("offset");
      bounded(v.strides, "strides");
      bounded({v.offset}, "offset");
      return v;
    }
    // The lowest and highest element a strided view reaches (none when empty).
    std::optional<std::pair<int64_t, int64_t>>
    extent(const Shape& sizes, const std::vector<int64_t>& strides, int64_t offset) const {
      int64_t lo = offset, hi = offset;
      for (size_t k = 0; k < sizes.size(); ++k) {
        if (sizes[k] == 0) return std::nullopt;
        int64_t d = 0;
        if (__builtin_mul_overflow(sizes[k] - 1, strides[k], &d) ||
            __builtin_add_overflow(d < 0 ? lo : hi, d, d < 0 ? &lo : &hi))
          fail("the view's extent overflows");
      }
      return std::make_pair(lo, hi);
    }
    void check_within(const Shape& sizes, const std::vector<int64_t>& strides, int64_t offset,
                      int64_t limit, const char* what) const {
      auto e = extent(sizes, strides, offset);
      if (e && (e->first < 0 || e->second >= limit))
        fail(fmt::format("the view reaches elements {}..{} of {} with {} elements", e->first,
                         e->second, what, limit));
    }
    void same(const NodePtr& a, const char* role) const {
      if (a->shape != s)
        fail(fmt::format("{} has shape {}, not {}", role, shape_str(a->shape), shape_str(s)));
    }
    void dtype_is(const NodePtr& a, DType want, const char* role) const {
      if (a->dtype != want)
        fail(fmt::format("{} is {}, not {}", role, short_dtype_name(a->dtype),
                         short_dtype_name(want)));
    }

    // Which dtypes each ALU op takes (what the frontend ever builds).
    void check_alu_dtype(DType in) const {
      bool fl = is_floating_point(in), b = in == kBool;
      bool ok = true;
      if (is_complex(in)) { // passes/lower_complex lowers these
        if (!takes_complex(op)) fail(fmt::format("does not take {}", short_dtype_name(in)));
        return;
      }
      switch (op) {
      case Op::Not:
        ok = b;
        break;
      case Op::BitNot:
      case Op::And:
      case Op::Or:
      case Op::Xor:
        ok = !fl;
        break;
      case Op::Neg:
      case Op::Abs:
      case Op::Add:
      case Op::Sub:
      case Op::Mul:
      case Op::Div:
      case Op::Fmod:
      case Op::Pow:
        ok = !b;
        break;
      case Op::Max: // maximum and minimum of bools: or and and
      case Op::Min:
      case Op::CmpEq:
      case Op::CmpNe:
      case Op::CmpLt:
      case Op::CmpLe:
      case Op::Where:
        break;
      default: // the float functions
        ok = fl;
      }
      if (!ok) fail(fmt::format("does not take {}", short_dtype_name(in)));
    }

    NodePtr build(const std::string& storage_name, const Scalar& v, Device dev) {
      size_t arity = static_cast<size_t>(info(op).arity);
      if (!is_leaf(op) && !is_call(op) && src.size() != arity)
        fail(fmt::format("takes {} operand{}, got {}", arity, arity == 1 ? "" : "s", src.size()));
      for (const auto& x : src)
        if (x->device != src[0]->device)
          fail(fmt::format("operands on {} and {}", src[0]->device.str(), x->device.str()));
      std::vector<int64_t> args;
      View view;
      std::shared_ptr<rt::Storage> storage;
      switch (category(op)) {
      case OpCategory::Leaf:
        if (op == Op::Buffer) {
          auto& [st, dt] = p.storages_.at(storage_name);
          if (dt != t)
            fail(fmt::format("storage '{}' holds {}, not {}", storage_name, short_dtype_name(dt),
                             short_dtype_name(t)));
          view = take_view(s.size());
          check_within(s, view.strides, view.offset,
                       static_cast<int64_t>(st->nbytes() / itemsize(t)), "the storage");
          storage = st;
          args = {static_cast<int64_t>(st->version())};
        } else if (op == Op::Iota || op == Op::Philox) {
          if (t != kInt64) fail("produces int64");
          if (op == Op::Philox) {
            args = {take1("seed"), take1("counter"), take1("word")};
            if (args[2] < 0 || args[2] > 3) fail("word is 0..3");
            if (args[1] < 0 || args[1] > (int64_t{1} << 62)) fail("counter is 0..2^62");
          }
          view = take_view(s.size());
        }
        break;
      case OpCategory::Unary:
      case OpCategory::Binary:
      case OpCategory::Ternary: {
        size_t first = op == Op::Where ? 1 : 0;
        for (const auto& x : src)
          same(x, "an operand");
        if (op == Op::Where) dtype_is(src[0], kBool, "the condition");
        for (size_t i = first; i < src.size(); ++i)
          dtype_is(src[i], src[first]->dtype, "an operand");
        check_alu_dtype(src[first]->dtype);
        if (is_comparison(op)) {
          if (t != kBool) fail("produces bool");
        } else if (op == Op::Abs && is_complex(src[0]->dtype)) {
          if (t != real_part_dtype(src[0]->dtype))
            fail(fmt::format("produces {}", short_dtype_name(real_part_dtype(src[0]->dtype))));
        } else if (t != src[first]->dtype)
          fail(fmt::format("produces its operands' dtype {}", short_dtype_name(src[first]->dtype)));
        break;
      }
      case OpCategory::Cast:
        same(src[0], "the operand");
        break;
      case OpCategory::Complex:
        for (const auto& x : src)
          same(x, "an operand");
        if (op == Op::Complex) {
          dtype_is(src[1], src[0]->dtype, "the imaginary part");
          if (src[0]->dtype != kFloat32 && src[0]->dtype != kFloat64)
            fail("pairs float32 or float64 parts");
          if (t != complex_dtype(src[0]->dtype))
            fail(fmt::format("produces {}", short_dtype_name(complex_dtype(src[0]->dtype))));
        } else {
          if (!is_complex(src[0]->dtype)) fail("takes a complex operand");
          if (t != real_part_dtype(src[0]->dtype))
            fail(fmt::format("produces {}", short_dtype_name(real_part_dtype(src[0]->dtype))));
        }
        break;
      case OpCategory::Reduce: {
        args = take("axes", attr.count("axes") ? attr.at("axes").second.size() : 0);
        const Shape& in = src[0]->shape;
        Shape want = in;
        for (size_t i = 0; i < args.size(); ++i) {
          if (args[i] < 0 || args[i] >= static_cast<int64_t>(in.size()) ||
              (i && args[i] <= args[i - 1]))
            fail("axes are increasing dims of the operand");
          want[static_cast<size_t>(args[i])] = 1;
        }
        if (args.empty()) fail("reduces at least one axis");
        if (s != want) fail(fmt::format("the result's shape is {}", shape_str(want)));
        if (numel(in) == 0) fail("reduces an empty tensor (its value is the identity: a Const)");
        dtype_is(src[0], t, "the operand");
        // A max or min is exact in any dtype; sums and products round (and overflow a bool).
        if (is_complex(t) && op != Op::ReduceSum)
          fail(fmt::format("does not take {}", short_dtype_name(t)));
        if ((op == Op::ReduceSum || op == Op::ReduceProd) &&
            (t == kBool || t == kFloat16 || t == kBFloat16))
          fail(fmt::format("does not accumulate in {} (cast first)", short_dtype_name(t)));
        break;
      }
      case OpCategory::Scan: {
        const int64_t axis = take1("axis");
        args = {axis};
        if (axis < 0 || axis >= static_cast<int64_t>(src[0]->shape.size()))
          fail("scans along a dim of the operand");
        same(src[0], "the operand");
        dtype_is(src[0], t, "the operand");
        if (is_complex(t) || t == kBool ||
            ((op == Op::ScanSum || op == Op::ScanProd || op == Op::ScanLogSumExp) &&
             (t == kBool || t == kFloat16 || t == kBFloat16)) ||
            (op == Op::ScanLogSumExp && !is_floating_point(t)))
          fail(fmt::format("does not accumulate in {}", short_dtype_name(t)));
        break;
      }
      case OpCategory::Movement:
        dtype_is(src[0], t, "the operand");
        check_movement();
        args = movement_args();
        break;
      case OpCategory::Gather: {
        dtype_is(src[0], t, "the source");
        dtype_is(src[1], kInt64, "the index");
        const Shape &in = src[0]->shape, &index = src[1]->shape;
        const int64_t dim = take1("dim");
        if (index.size() != in.size() || dim < 0 || dim >= static_cast<int64_t>(in.size()))
          fail("gathers along a dim of a source of the index's rank");
        for (size_t d = 0; d < in.size(); ++d)
          if (static_cast<int64_t>(d) != dim && index[d] > in[d])
            fail(
                fmt::format("index dim {} of size {} exceeds the source's {}", d, index[d], in[d]));
        if (s != index)
          fail(fmt::format("the result's shape is the index's, {}", shape_str(index)));
        if (in[static_cast<size_t>(dim)] == 0 && numel(index) > 0)
          fail("gathers along an empty dim");
        args = {dim};
        break;
      }
      case OpCategory::Scatter: {
        same(src[0], "the base");
        dtype_is(src[0], t, "the base");
        dtype_is(src[1], kInt64, "the index");
        dtype_is(src[2], t, "the value");
        const Shape &base = src[0]->shape, &index = src[1]->shape;
        const int64_t dim = take1("dim"), accumulate = take1("accumulate");
        if (index.size() != base.size() || dim < 0 || dim >= static_cast<int64_t>(base.size()))
          fail("scatters along a dim of a base of the index's rank");
        if (accumulate != 0 && accumulate != 1) fail("accumulate is 0 or 1");
        if (accumulate && t == kBool) fail("does not accumulate bool");
        for (size_t d = 0; d < base.size(); ++d)
          if (static_cast<int64_t>(d) != dim && index[d] > base[d])
            fail(
                fmt::format("index dim {} of size {} exceeds the base's {}", d, index[d], base[d]));
        if (src[2]->shape != index)
          fail(fmt::format("the value's shape is the index's, {}", shape_str(index)));
        if (base[static_cast<size_t>(dim)] == 0 && numel(index) > 0)
          fail("scatters along an empty dim");
        args = {dim, accumulate};
        break;
      }
      case OpCategory::Mutation: {
        same(src[0], "the base");
        dtype_is(src[0], t, "the base");
        dtype_is(src[1], t, "the value");
        const Shape& vs = src[1]->shape;
        args = take("strides", vs.size());
        int64_t offset = take1("offset");
        int64_t mode = take1("in_place");
        if (mode != 0 && mode != 1) fail("in_place is 0 or 1");
        bounded(args, "strides");
        bounded({offset}, "offset");
        check_within(vs, args, offset, numel(s), "the base");
        args.push_back(offset);
        args.push_back(mode);
        break;
      }
      case OpCategory::Call: {
        std::vector<int64_t> params;
        for (size_t i = 0; i < num_params(*routine); ++i)
          params.push_back(take1(std::string(info(*routine).params[i]).c_str()));
        if (std::string why = call_mismatch(*routine, src, params, t, s); !why.empty()) fail(why);
        args = {static_cast<int64_t>(*routine)};
        args.insert(args.end(), params.begin(), params.end());
        break;
      }
      }
      if (!attr.empty())
        p.fail(attr.begin()->second.first,
               fmt::format("{} has no attribute '{}'", name(op), attr.begin()->first));
      if (op == Op::Const) return make_const(v, t, s, dev);
      return make_node(op, t, s, src, std::move(args), v, std::move(storage), std::move(view), dev);
    }

    void check_movement() {
      const Shape& in = src[0]->shape;
      switch (op) {
      case Op::Reshape:
        if (numel(in) != numel(s))
          fail(fmt::format("shape {} is invalid for input of size {}", shape_str(s), numel(in)));
        break;
      case Op::Expand:
        if (in.size() != s.size()) fail("keeps the rank");
        for (size_t k = 0; k < s.size(); ++k)
          if (in[k] != s[k] && in[k] != 1)
            fail(fmt::format("dim {} of size {} cannot expand to {}", k, in[k], s[k]));
        break;
      default:
        break;
      }
    }

    std::vector<int64_t> movement_args() {
      const Shape& in = src[0]->shape;
      switch (op) {
      case Op::Reshape:
      case Op::Expand:
        return s;
      case Op::Permute: {
        std::vector<int64_t> perm = take("perm", in.size());
        std::vector<bool> seen(in.size(), false);
        if (s.size() != in.size()) fail("keeps the rank");
        for (size_t k = 0; k < perm.size(); ++k) {
          if (perm[k] < 0 || perm[k] >= static_cast<int64_t>(in.size()) ||
              seen[static_cast<size_t>(perm[k])])
            fail("perm is a permutation of the operand's dims");
          seen[static_cast<size_t>(perm[k])] = true;
          if (s[k] != in[static_cast<size_t>(perm[k])])
            fail(fmt::format("the result's shape does not follow perm"));
        }
        return perm;
      }
      case Op::Slice: {
        if (s.size() != in.size()) fail("keeps the rank");
        std::vector<int64_t> start = take("start", in.size()), step = take("step", in.size());
        std::vector<int64_t> args;
        for (size_t k = 0; k < in.size(); ++k) {
          if (step[k] == 0) fail("a step is not zero");
          bounded({start[k]}, "start");
          bounded({step[k]}, "step");
          if (s[k] == 0 && (start[k] < 0 || start[k] > in[k]))
            fail(fmt::format("start {} of dim {} is outside its size {}", start[k], k, in[k]));
          check_within({s[k]}, {step[k]}, start[k], in[k], fmt::format("dim {}", k).c_str());
          args.push_back(start[k]);
          args.push_back(step[k]);
        }
        return args;
      }
      case Op::AsStrided: {
        std::vector<int64_t> strides = take("strides", s.size());
        int64_t offset = take1("offset");
        bounded(strides, "strides");
        bounded({offset}, "offset");
        check_within(s, strides, offset, numel(in), "the operand");
        strides.push_back(offset);
        return strides;
      }
      default:
        fail("is not a movement op");
      }
    }
  };

  std::string_view text_;
  std::string_view file_;
  const std::function<std::shared_ptr<rt::Storage>(const StorageDecl&)>& storage_for_;
  std::optional<Device> device_;
  bool label_storages_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  Token tok_;
  // A write into memory (in_place=1) is sound only when nothing reads the
  // memory's old value after it: everything that reads it (not through the
  // writes) must feed only the written values, as the frontend ensures.
  void check_in_place(const Node& a, const Token& at) const {
    std::unordered_set<const Node*> chain, values;
    const Node* b = &a;
    for (; b->op == Op::Assign; b = b->src[0].get()) {
      chain.insert(b);
      std::vector<const Node*> stack{b->src[1].get()};
      while (!stack.empty()) {
        const Node* n = stack.back();
        stack.pop_back();
        if (values.insert(n).second)
          for (const auto& s : n->src)
            stack.push_back(s.get());
      }
      // A write into a copy: the writes after it overwrite the copy, not memory anything reads.
      if (b->args.back() == 0) return;
    }
    if (b->op != Op::Buffer) return; // the first write copies: nothing is overwritten
    std::unordered_set<const Node*> outputs, reads;
    for (const auto& o : graph_.outputs)
      outputs.insert(o.get());
    for (const auto& n : order_) {
      bool r = n->op == Op::Buffer && n->storage == b->storage;
      for (const auto& s : n->src)
        r |= reads.count(s.get()) > 0;
      if (!r || chain.count(n.get())) continue;
      // The memory itself feeds the first write; anything else must feed a written value.
      if (outputs.count(n.get()) || (n.get() != b && !values.count(n.get())))
        fail(at, "Assign: in_place=1, but the memory it overwrites is read elsewhere "
                 "(write in_place=0)");
      reads.insert(n.get());
    }
  }

  std::unordered_map<std::string, NodePtr> nodes_;
  std::vector<NodePtr> order_; // every node, in the order defined
  std::vector<std::pair<const Node*, Token>> in_place_;
  std::unordered_map<std::string, std::pair<std::shared_ptr<rt::Storage>, DType>> storages_;
  ParsedGraph graph_;
};

} // namespace

ParsedGraph
parse_graph(std::string_view text, std::string_view filename,
            const std::function<std::shared_ptr<rt::Storage>(const StorageDecl&)>& storage_for,
            std::optional<Device> device) {
  return Parser(text, filename, storage_for, device).run();
}

void verify(const std::vector<NodePtr>& roots, std::string_view stage) {
  if (roots.empty()) return;
  std::unordered_map<const rt::Storage*, std::shared_ptr<rt::Storage>> owners;
  for (const auto& n : topological_order(roots))
    if (n->op == Op::Buffer) owners.emplace(n->storage.get(), n->storage);
  std::unordered_map<std::string, std::shared_ptr<rt::Storage>> memory;
  PrintOptions po;
  po.inline_limit = -1; // no data: the parser is handed the same memory
  po.storage_name = [&](const rt::Storage& st) {
    std::string name = fmt::format("m{}", memory.size());
    memory.emplace(name, owners.at(&st));
    return name;
  };
  std::string text = print_graph(roots, po);
  try {
    Parser(
        text, fmt::format("<graph after {}>", stage),
        [&](const StorageDecl& d) { return memory.at(d.name); }, std::nullopt,
        /*label_storages=*/false)
        .run();
  } catch (const Error& e) {
    throw Error(fmt::format("internal error: the graph after {} breaks a rule of its ops:\n{}{}",
                            stage, e.what(),
                            config().debug >= 1 ? "\nThe graph:\n" + text : std::string()));
  }
}

} // namespace tj::ir
