// tjc's lexer and parser: a program's text to statements (docs/tjc.md gives the grammar).
#include "tools/tjc/expr_internal.h"

namespace tj::tjc {
namespace {

bool is_digit(char c, bool hex = false) {
  return (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
}
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident(char c) { return is_ident_start(c) || is_digit(c); }

class Lexer {
public:
  explicit Lexer(const Source& src) : src_(src), s_(src.text) {}

  std::vector<Token> run() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      tline_ = line_, tcol_ = static_cast<int>(i_ - line_start_) + 1;
      if (c == '\n') {
        if (depth_ == 0) out_.push_back(Token{Tok::Newline, "\n", tline_, tcol_});
        newline(i_ + 1);
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
        ++i_;
      } else if (c == '#') {
        i_ = std::min(s_.find('\n', i_), s_.size());
      } else if (c == '\\' && (s_.substr(i_ + 1, 1) == "\n" || s_.substr(i_ + 1, 2) == "\r\n")) {
        newline(s_.find('\n', i_) + 1);
      } else if (is_ident_start(c)) {
        size_t b = i_;
        while (i_ < s_.size() && is_ident(s_[i_]))
          ++i_;
        push(Tok::Name, std::string(s_.substr(b, i_ - b)));
      } else if (is_digit(c) || (c == '.' && i_ + 1 < s_.size() && is_digit(s_[i_ + 1]))) {
        number();
      } else if (c == '\'' || c == '"') {
        string();
      } else {
        op();
      }
    }
    out_.push_back(Token{Tok::End, "", end_line_, end_col_});
    return std::move(out_);
  }

private:
  const Source& src_;
  std::string_view s_;
  std::vector<Token> out_;
  size_t i_ = 0, line_start_ = 0;
  int line_ = 1, depth_ = 0;
  int tline_ = 1, tcol_ = 1;       // where the current token starts
  int end_line_ = 1, end_col_ = 1; // just past the last token

  void newline(size_t next) { ++line_, i_ = line_start_ = next; }
  Token& push(Tok kind, std::string text) {
    out_.push_back(Token{kind, std::move(text), tline_, tcol_});
    end_line_ = line_, end_col_ = static_cast<int>(i_ - line_start_) + 1;
    return out_.back();
  }
  [[noreturn]] void fail(std::string_view msg) const { src_.fail(tline_, tcol_, msg); }

  // Appends the digits at i_ (and the '_' between them) to `out`.
  void digits(std::string& out, bool hex) {
    for (; i_ < s_.size(); ++i_) {
      if (s_[i_] == '_' && i_ + 1 < s_.size() && is_digit(s_[i_ + 1], hex) && !out.empty())
        continue;
      if (!is_digit(s_[i_], hex)) break;
      out += s_[i_];
    }
  }
  void number() {
    std::string text;
    bool is_float = false, hex = s_.substr(i_, 2) == "0x" || s_.substr(i_, 2) == "0X";
    if (hex) {
      i_ += 2;
      digits(text, true);
      if (text.empty()) fail("invalid hexadecimal literal");
    } else {
      digits(text, false);
      if (i_ < s_.size() && s_[i_] == '.') is_float = true, text += s_[i_++], digits(text, false);
      size_t j = i_ + 1;
      if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
      if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E') && j < s_.size() && is_digit(s_[j])) {
        is_float = true;
        text += 'e';
        text += s_.substr(i_ + 1, j - i_ - 1);
        i_ = j;
        digits(text, false);
      }
    }
    if (!hex && i_ < s_.size() && (s_[i_] == 'j' || s_[i_] == 'J') &&
        !(i_ + 1 < s_.size() && is_ident(s_[i_ + 1]))) {
      ++i_; // an imaginary literal: 2j, 1.5e3J (leading zeros allowed, as in Python)
      push(Tok::Imag, "").f = std::strtod(text.c_str(), nullptr);
      return;
    }
    if (i_ < s_.size() && is_ident(s_[i_])) fail("invalid decimal literal");
    if (!is_float && !hex && text[0] == '0' && text.find_first_not_of('0') != std::string::npos)
      fail("leading zeros in decimal integer literals are not permitted");
    if (is_float) {
      // strtod gives inf past the range of doubles, as Python does.
      push(Tok::Float, "").f = std::strtod(text.c_str(), nullptr);
      return;
    }
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, hex ? 16 : 10);
    if (ec != std::errc() || end != text.data() + text.size()) fail("integer literal too large");
    push(Tok::Int, "").i = v;
  }
  void string() {
    static constexpr std::string_view escapes("n\nt\tr\r0\0\\\\''\"\"", 14);
    char q = s_[i_++];
    std::string v;
    while (true) {
      if (i_ >= s_.size() || s_[i_] == '\n') fail("unterminated string literal");
      char c = s_[i_++];
      if (c == q) break;
      if (c != '\\') {
        v += c;
      } else if (i_ < s_.size() && s_[i_] == '\n') {
        newline(i_ + 1);
      } else if (size_t e = escapes.find(s_.substr(i_, 1)); e % 2 == 0 && i_ < s_.size()) {
        v += escapes[e + 1], ++i_;
      } else if (s_.substr(i_, 1) == "x" && i_ + 2 < s_.size() && is_digit(s_[i_ + 1], true) &&
                 is_digit(s_[i_ + 2], true)) {
        v += static_cast<char>(std::stoi(std::string(s_.substr(i_ + 1, 2)), nullptr, 16));
        i_ += 3;
      } else {
        v += '\\'; // unknown escapes stay as written, as in Python
      }
    }
    push(Tok::Str, std::move(v));
  }
  void op() {
    static constexpr std::string_view ops[] = {
        "**=", "//=", "...", "**", "//", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=",
        "@=",  "&=",  "|=",  "^=", "+",  "-",  "*",  "/",  "%",  "@",  "<",  ">",  "=",  "(",
        ")",   "[",   "]",   "{",  "}",  ",",  ":",  ".",  "~",  "&",  "|",  "^",  ";"};
    for (std::string_view o : ops) {
      if (s_.substr(i_, o.size()) != o) continue;
      i_ += o.size();
      if (o == "(" || o == "[" || o == "{") ++depth_;
      if ((o == ")" || o == "]" || o == "}") && depth_ > 0) --depth_;
      push(o == ";" ? Tok::Newline : Tok::Op, std::string(o));
      return;
    }
    auto c = static_cast<unsigned char>(s_[i_]);
    fail(c >= 0x20 && c < 0x7f ? fmt::format("unexpected character '{}'", static_cast<char>(c))
                               : fmt::format("unexpected character '\\x{:02x}'", c));
  }
};

bool is_keyword(std::string_view s) {
  static constexpr std::string_view kw[] = {
      "True",     "False", "None",   "and",   "or",    "not",    "is",       "if",    "else",
      "import",   "from",  "as",     "in",    "for",   "while",  "def",      "class", "return",
      "lambda",   "with",  "del",    "pass",  "try",   "except", "finally",  "raise", "global",
      "nonlocal", "yield", "assert", "async", "await", "break",  "continue", "elif"};
  return std::find(std::begin(kw), std::end(kw), s) != std::end(kw);
}

template <typename T> std::optional<Op> find_op(const T& table, const std::string& text) {
  for (auto [t, op] : table)
    if (text == t) return op;
  return std::nullopt;
}

class Parser {
public:
  explicit Parser(const Source& src) : src_(src), toks_(Lexer(src).run()) {}

  std::vector<Stmt> program() {
    std::vector<Stmt> out;
    while (true) {
      while (peek().kind == Tok::Newline)
        take();
      if (peek().kind == Tok::End) return out;
      out.push_back(statement());
      if (peek().kind != Tok::Newline && peek().kind != Tok::End) error(peek(), "invalid syntax");
    }
  }

private:
  const Source& src_;
  std::vector<Token> toks_;
  size_t p_ = 0;
  int depth_ = 0;

  // Counts the parser's recursion, which brackets alone do not show in the tree.
  struct Nest {
    Parser& p;
    Nest(Parser& parser, const Token& at) : p(parser) {
      if (++p.depth_ > kMaxDepth) p.src_.fail(at.line, at.col, "expression nested too deeply");
    }
    ~Nest() { --p.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
  };

  const Token& peek(size_t k = 0) const { return toks_[std::min(p_ + k, toks_.size() - 1)]; }
  const Token& take() {
    const Token& t = toks_[p_];
    p_ = std::min(p_ + 1, toks_.size() - 1);
    return t;
  }
  bool is_op(std::string_view op, size_t k = 0) const {
    return peek(k).kind == Tok::Op && peek(k).text == op;
  }
  bool is_kw(std::string_view kw, size_t k = 0) const {
    return peek(k).kind == Tok::Name && peek(k).text == kw;
  }
  [[noreturn]] void error(const Token& t, std::string_view msg) const {
    if (t.kind == Tok::End) src_.fail(t.line, t.col, "unexpected end of input");
    if (t.kind == Tok::Name && is_keyword(t.text))
      src_.fail(t.line, t.col, fmt::format("'{}' is not supported here", t.text));
    src_.fail(t.line, t.col, msg);
  }
  void expect(std::string_view op) {
    if (!is_op(op)) error(peek(), fmt::format("expected '{}'", op));
    take();
  }
  const std::string& name() {
    if (peek().kind != Tok::Name || is_keyword(peek().text)) error(peek(), "expected a name");
    return take().text;
  }
  NodePtr make(K kind, int line, int col) {
    auto n = std::make_unique<Node>();
    n->kind = kind, n->line = line, n->col = col;
    return n;
  }
  NodePtr make(K kind, const Token& at) { return make(kind, at.line, at.col); }
  void add(Node& n, NodePtr kid) {
    if (kid && kid->depth >= n.depth) {
      n.depth = kid->depth + 1;
      if (n.depth > kMaxDepth) src_.fail(n.line, n.col, "expression nested too deeply");
    }
    n.kids.push_back(std::move(kid));
  }
  std::optional<Op> aug_op() const {
    static const std::pair<std::string_view, Op> ops[] = {
        {"+=", Op::Add},       {"-=", Op::Sub},   {"*=", Op::Mul},   {"/=", Op::Div},
        {"//=", Op::FloorDiv}, {"%=", Op::Mod},   {"**=", Op::Pow},  {"@=", Op::MatMul},
        {"&=", Op::BitAnd},    {"|=", Op::BitOr}, {"^=", Op::BitXor}};
    return peek().kind == Tok::Op ? find_op(ops, peek().text) : std::nullopt;
  }

  Stmt statement() {
    Stmt s;
    s.line = peek().line, s.col = peek().col;
    if (is_kw("import") || is_kw("from")) return import_stmt(std::move(s));
    NodePtr e = exprlist();
    if (is_op("=")) {
      s.kind = Stmt::Assign;
      for (; is_op("="); e = exprlist()) {
        check_target(*e);
        s.targets.push_back(std::move(e));
        take();
      }
    } else if (auto op = aug_op()) {
      if (e->kind != K::Name && e->kind != K::Index && e->kind != K::Attr)
        src_.fail(e->line, e->col, "illegal expression for augmented assignment");
      s.kind = Stmt::AugAssign, s.op = *op, s.line = peek().line, s.col = peek().col;
      take();
      s.targets.push_back(std::move(e));
      e = expr();
    }
    s.value = std::move(e);
    return s;
  }

  Stmt import_stmt(Stmt s) {
    s.kind = Stmt::Import;
    bool from = take().text == "from";
    for (s.module = name(); is_op(".");) {
      take();
      s.module += "." + name();
    }
    if (!from) {
      std::string as = is_kw("as") ? (take(), name()) : "";
      s.names.emplace_back("", as);
      return s;
    }
    if (!is_kw("import")) error(peek(), "expected 'import'");
    do {
      take();
      std::string attr = name();
      s.names.emplace_back(attr, is_kw("as") ? (take(), name()) : attr);
    } while (is_op(","));
    return s;
  }

  void check_target(const Node& n) const {
    if (n.kind == K::Name || n.kind == K::Index || n.kind == K::Attr) return;
    if ((n.kind != K::Tuple && n.kind != K::List) || n.kids.empty())
      src_.fail(n.line, n.col, "cannot assign to expression");
    for (const NodePtr& k : n.kids)
      check_target(*k);
  }

  // expr, or a tuple of them: `a, b` and `(a, b)`.
  NodePtr exprlist() {
    const Token& t = peek();
    NodePtr e = expr();
    if (!is_op(",")) return e;
    NodePtr tuple = make(K::Tuple, t);
    add(*tuple, std::move(e));
    while (is_op(",")) {
      take();
      Tok k = peek().kind;
      if (k == Tok::Newline || k == Tok::End || is_op("=") || is_op(")") || aug_op()) break;
      add(*tuple, expr());
    }
    return tuple;
  }

  NodePtr expr() {
    Nest nest(*this, peek());
    NodePtr e = logic(false);
    if (!is_kw("if")) return e;
    NodePtr n = make(K::IfExp, take());
    add(*n, logic(false));
    if (!is_kw("else")) error(peek(), "expected 'else'");
    take();
    add(*n, std::move(e));
    add(*n, expr());
    return n;
  }

  // `or` chains of `and` chains.
  NodePtr logic(bool is_and) {
    const char* kw = is_and ? "and" : "or";
    auto operand = [&] { return is_and ? not_expr() : logic(true); };
    NodePtr e = operand();
    if (!is_kw(kw)) return e;
    NodePtr n = make(is_and ? K::And : K::Or, peek());
    add(*n, std::move(e));
    while (is_kw(kw))
      take(), add(*n, operand());
    return n;
  }

  NodePtr not_expr() {
    if (!is_kw("not")) return comparison();
    const Token& t = take();
    Nest nest(*this, t);
    NodePtr n = make(K::Not, t);
    add(*n, not_expr());
    return n;
  }

  NodePtr comparison() {
    static const std::pair<std::string_view, Op> ops[] = {{"==", Op::Eq}, {"!=", Op::Ne},
                                                          {"<", Op::Lt},  {"<=", Op::Le},
                                                          {">", Op::Gt},  {">=", Op::Ge}};
    NodePtr e = binary(0);
    NodePtr n;
    while (true) {
      std::optional<Op> op = is_kw("is") ? std::optional(is_kw("not", 1) ? Op::IsNot : Op::Is)
                             : peek().kind == Tok::Op ? find_op(ops, peek().text)
                                                      : std::nullopt;
      if (!op) return n ? std::move(n) : std::move(e);
      const Token& t = take();
      if (*op == Op::IsNot) take();
      if (!n) n = make(K::Compare, t), add(*n, std::move(e));
      n->ops.push_back(*op);
      n->at.emplace_back(t.line, t.col);
      add(*n, binary(0));
    }
  }

  // The left-associative levels, loosest first: | ^ & (+ -) (* / // % @). A run
  // of one level is one node, so that long sums do not deepen the tree.
  NodePtr binary(int level) {
    static const std::pair<std::string_view, Op> ops[][5] = {
        {{"|", Op::BitOr}},
        {{"^", Op::BitXor}},
        {{"&", Op::BitAnd}},
        {{"+", Op::Add}, {"-", Op::Sub}},
        {{"*", Op::Mul}, {"/", Op::Div}, {"//", Op::FloorDiv}, {"%", Op::Mod}, {"@", Op::MatMul}}};
    if (level == 5) return unary();
    auto op_here = [&] {
      return peek().kind == Tok::Op ? find_op(ops[level], peek().text) : std::nullopt;
    };
    NodePtr e = binary(level + 1);
    if (!op_here()) return e;
    NodePtr n = make(K::Chain, e->line, e->col);
    add(*n, std::move(e));
    while (auto op = op_here()) {
      const Token& t = take();
      n->ops.push_back(*op);
      n->at.emplace_back(t.line, t.col);
      add(*n, binary(level + 1));
    }
    return n;
  }

  NodePtr unary() {
    if (!is_op("-") && !is_op("+") && !is_op("~")) return power();
    const Token& t = take();
    Nest nest(*this, t);
    NodePtr n = make(K::Unary, t);
    n->text = t.text;
    add(*n, unary());
    return n;
  }

  NodePtr power() {
    NodePtr base = postfix();
    if (!is_op("**")) return base;
    const Token& t = take();
    Nest nest(*this, t);
    NodePtr n = make(K::Chain, t);
    n->ops.push_back(Op::Pow);
    n->at.emplace_back(t.line, t.col);
    add(*n, std::move(base));
    add(*n, unary());
    return n;
  }

  NodePtr postfix() {
    for (NodePtr e = atom();;) {
      NodePtr n;
      if (is_op("(")) {
        const Token& lp = take();
        bool named = e->kind == K::Name || e->kind == K::Attr;
        n = named ? make(K::Call, e->line, e->col) : make(K::Call, lp);
        add(*n, std::move(e));
        arguments(*n);
      } else if (is_op("[")) {
        n = make(K::Index, take());
        add(*n, std::move(e));
        add(*n, subscript());
        expect("]");
      } else if (is_op(".")) {
        take();
        n = make(K::Attr, peek());
        n->text = name();
        add(*n, std::move(e));
      } else {
        return e;
      }
      e = std::move(n);
    }
  }

  void arguments(Node& call) {
    while (!is_op(")")) {
      if (peek().kind == Tok::Name && is_op("=", 1)) {
        const Token& k = take();
        take();
        if (std::find(call.keywords.begin(), call.keywords.end(), k.text) != call.keywords.end())
          src_.fail(k.line, k.col, "keyword argument repeated: " + k.text);
        call.keywords.push_back(k.text);
      } else if (!call.keywords.empty()) {
        error(peek(), "positional argument follows keyword argument");
      }
      add(call, expr());
      if (!is_op(",")) break;
      take();
    }
    expect(")");
  }

  NodePtr subscript() {
    const Token& t = peek();
    NodePtr first = slice_item();
    if (!is_op(",")) return first;
    NodePtr tuple = make(K::Tuple, t);
    add(*tuple, std::move(first));
    while (is_op(",") && !is_op("]", 1))
      take(), add(*tuple, slice_item());
    if (is_op(",")) take();
    return tuple;
  }

  NodePtr slice_item() {
    const Token& t = peek();
    NodePtr lo;
    if (!is_op(":")) {
      lo = expr();
      if (!is_op(":")) return lo;
    }
    take();
    auto bound = [&]() -> NodePtr {
      return is_op(":") || is_op("]") || is_op(",") ? nullptr : expr();
    };
    NodePtr n = make(K::Slice, t);
    add(*n, std::move(lo));
    add(*n, bound());
    add(*n, is_op(":") ? (take(), bound()) : nullptr);
    return n;
  }

  NodePtr atom() {
    const Token& t = peek();
    NodePtr n;
    if (t.kind == Tok::Int || t.kind == Tok::Float || t.kind == Tok::Imag) {
      n = make(K::Const, take());
      n->value = t.kind == Tok::Int     ? Value(t.i)
                 : t.kind == Tok::Float ? Value(t.f)
                                        : Value(std::complex<double>(0.0, t.f));
    } else if (t.kind == Tok::Str) {
      n = make(K::Const, take());
      std::string s = t.text;
      while (peek().kind == Tok::Str)
        s += take().text;
      n->value = std::move(s);
    } else if (is_kw("True") || is_kw("False") || is_kw("None")) {
      n = make(K::Const, take());
      if (t.text != "None") n->value = t.text == "True";
    } else if (t.kind == Tok::Name && !is_keyword(t.text)) {
      n = make(K::Name, take());
      n->text = t.text;
    } else if (is_op("(")) {
      take();
      if (is_op(")")) return make(K::Tuple, take());
      n = exprlist();
      expect(")");
    } else if (is_op("[")) {
      n = make(K::List, take());
      while (!is_op("]")) {
        add(*n, expr());
        if (!is_op(",")) break;
        take();
      }
      expect("]");
    } else if (is_op("...")) {
      n = make(K::Ellipsis, take());
    } else {
      error(t, "expected an expression");
    }
    return n;
  }
};

} // namespace

std::vector<Stmt> parse_program(const Source& src) { return Parser(src).program(); }

} // namespace tj::tjc
