// tjc's expression language (`tjc -e 'EXPR'`): a small, Python-like subset of
// PyTorch programs, run statement by statement through the public API, so that
// the tensors it builds are exactly as lazy as C++ code would leave them.
//
// Grammar (docs/tjc.md copies it):
//
//   program    := { stmt ( NEWLINE | ';' ) }
//   stmt       := 'import' dotted [ 'as' NAME ]
//               | 'from' dotted 'import' NAME [ 'as' NAME ] { ',' NAME [ 'as' NAME ] }
//               | exprlist { '=' exprlist }    assignment; targets are NAME, x[...],
//                                              x.requires_grad, x.grad, tuples of these
//               | target AUGOP expr            += -= *= /= //= %= **= @= &= |= ^=
//                                              (in place on tensors, as in Python)
//   exprlist   := expr { ',' expr } [ ',' ]   a tuple when there is a comma
//   expr       := or [ 'if' or 'else' expr ]
//   or         := and { 'or' and }
//   and        := not { 'and' not }
//   not        := 'not' not | comparison
//   comparison := bitor { ( '==' | '!=' | '<' | '<=' | '>' | '>=' | 'is' [ 'not' ] ) bitor }
//   bitor      := bitxor { '|' bitxor }
//   bitxor     := bitand { '^' bitand }
//   bitand     := arith { '&' arith }
//   arith      := term { ( '+' | '-' ) term }
//   term       := unary { ( '*' | '/' | '//' | '%' | '@' ) unary }
//   unary      := ( '-' | '+' | '~' ) unary | power
//   power      := postfix [ '**' unary ]       right associative: -2**2 == -4
//   postfix    := atom { '(' [ arg { ',' arg } [ ',' ] ] ')' | '[' subscript ']' | '.' NAME }
//   arg        := expr | NAME '=' expr
//   subscript  := item { ',' item } [ ',' ]
//   item       := expr | [ expr ] ':' [ expr ] [ ':' [ expr ] ]   (and '...')
//   atom       := NAME | INT | FLOAT | STRING { STRING } | 'True' | 'False' | 'None'
//               | '...' | '(' [ exprlist ] ')' | '[' [ expr { ',' expr } [ ',' ] ] ']'
//
// Lexical rules: '#' starts a comment; inside brackets, or after a backslash,
// a newline continues the statement; INT is decimal or 0x hex, with optional
// '_' separators, and must fit in 64 bits; FLOAT is 1.5, 20., .5, 1e-3;
// strings are '...' or "..." with backslash escapes.
//
// Names: variables; the library's functions, bare or as torch.NAME (zeros,
// torch.zeros); torch.nn.functional.NAME or F.NAME for softmax, log_softmax,
// relu, gelu, sigmoid, tanh, layer_norm, linear, mse_loss, cross_entropy;
// dtypes (torch.float32, float32, torch.long, ...); torch.cuda.is_available(),
// torch.autograd.grad(...); math.pi, math.sqrt(...), ...; and Python's print,
// len, int, float, bool, str, abs, round, min, max, pow, list, tuple.
// Tensor methods and attributes are PyTorch's (x.sum(0), x.shape, x.T, ...).
//
// Values are None, bool, int (64-bit), float, str, torch.dtype, torch.device,
// tuples, lists, torch.Size, torch.return_types (max/min with a dim) and
// tensors. Python numbers follow Python (7 // 2 == 3, -7 // 2 == -4,
// 7 / 2 == 3.5) except that an integer overflowing 64 bits is an error; they
// combine with tensors as PyTorch's Python scalars do.
//
// Limits, so that no input can exhaust the stack or the memory: nesting
// deeper than 200, sequences of more than 2^16 elements, and tensors of more
// than 2^24 elements or 64 dimensions are errors.
#include "tools/tjc/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <numbers>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace tj::tjc {
namespace {

constexpr int kMaxDepth = 200;                   // brackets, operators, postfixes, values
constexpr int64_t kMaxSeqLen = int64_t{1} << 16; // elements of a tuple or list, nested too
constexpr int64_t kMaxNumel = int64_t{1} << 24;  // elements of a tensor
constexpr size_t kMaxDims = 64;                  // dimensions of a tensor

// An error that already carries its location: passed on unchanged.
class LocatedError : public Error {
public:
  using Error::Error;
};

// ------------------------------------------------------------------ values

struct Seq;
struct Builtin;
using SeqPtr = std::shared_ptr<const Seq>;
struct NoneV {};
struct Func {
  const Builtin* fn;
  std::string name;
  Tensor self; // defined for a method bound to its tensor
};
struct Module {
  std::string name; // "torch", "torch.nn.functional", "math", ...
};
struct Opaque {
  std::string repr; // shown, never operated on (grad_fn)
};

struct Value {
  std::variant<NoneV, bool, int64_t, double, std::string, DType, Device, SeqPtr, Tensor, Func,
               Module, Opaque>
      v;
  Value() = default;
  Value(bool b) : v(b) {}
  Value(int64_t i) : v(i) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(DType d) : v(d) {}
  Value(Device d) : v(d) {}
  Value(SeqPtr s) : v(std::move(s)) {}
  // An undefined tensor (a grad before backward) is Python's None.
  Value(Tensor t) {
    if (t.defined()) v = std::move(t);
  }
  Value(Func f) : v(std::move(f)) {}
  Value(Module m) : v(std::move(m)) {}
  Value(Opaque o) : v(std::move(o)) {}
  template <typename T> const T* get() const { return std::get_if<T>(&v); }
  template <typename T> bool is() const { return std::holds_alternative<T>(v); }
};

struct Seq {
  enum Kind : uint8_t { Tuple, List, Size, Named } kind;
  std::vector<Value> items;
  std::string name;                // Named: "max" of torch.return_types.max
  std::vector<std::string> fields; // Named: "values", "indices"
  int depth;
  int64_t size; // elements, nested ones included
};

Value make_seq(Seq::Kind kind, std::vector<Value> items, std::string name = {},
               std::vector<std::string> fields = {}) {
  int depth = 1;
  int64_t size = static_cast<int64_t>(items.size());
  for (const Value& x : items)
    if (auto s = x.get<SeqPtr>()) depth = std::max(depth, (*s)->depth + 1), size += (*s)->size;
  if (depth > kMaxDepth) throw Error("value nested too deeply");
  if (size > kMaxSeqLen) throw Error("sequence too long");
  return SeqPtr(std::make_shared<const Seq>(
      Seq{kind, std::move(items), std::move(name), std::move(fields), depth, size}));
}
Value size_value(const std::vector<int64_t>& dims, Seq::Kind kind = Seq::Size) {
  return make_seq(kind, std::vector<Value>(dims.begin(), dims.end()));
}
Value tuple_of(const std::vector<Tensor>& ts) {
  return make_seq(Seq::Tuple, std::vector<Value>(ts.begin(), ts.end()));
}

std::string type_name(const Value& x) {
  static const char* const seqs[] = {"tuple", "list", "torch.Size", "torch.return_types."};
  if (auto s = x.get<SeqPtr>())
    return seqs[(*s)->kind] + ((*s)->kind == Seq::Named ? (*s)->name : "");
  static const char* const names[] = {
      "NoneType",    "bool",         "int", "float",  "str",
      "torch.dtype", "torch.device", "",    "Tensor", "builtin_function_or_method",
      "module",      "object"};
  return names[x.v.index()];
}

bool is_num(const Value& x) { return x.is<bool>() || x.is<int64_t>() || x.is<double>(); }
Scalar num_scalar(const Value& x) {
  if (auto b = x.get<bool>()) return Scalar(*b);
  if (auto i = x.get<int64_t>()) return Scalar(*i);
  return Scalar(*x.get<double>());
}
Value from_scalar(const Scalar& s) {
  if (s.is_bool()) return s.to_bool();
  if (s.is_integral()) return s.to_int();
  return s.to_double();
}

[[noreturn]] void int_overflow() { throw Error("integer overflow (tjc's integers are 64-bit)"); }
int64_t float_to_int(double d) {
  if (std::isnan(d)) throw Error("cannot convert float NaN to integer");
  if (std::isinf(d)) throw Error("cannot convert float infinity to integer");
  if (!(d >= -0x1p63 && d < 0x1p63)) int_overflow();
  return static_cast<int64_t>(d);
}

// Refuses sizes past kMaxNumel, before the library multiplies them (it does not check
// for overflow). A zero dim does not help: the product of the others is computed first.
void check_numel(const std::vector<int64_t>& sizes) {
  if (sizes.size() > kMaxDims)
    throw Error(fmt::format("too many dimensions: tjc allows at most {}", kMaxDims));
  int64_t n = 1;
  for (int64_t d : sizes)
    if (__builtin_mul_overflow(n, std::max<int64_t>(d, 1), &n) || n > kMaxNumel)
      throw Error(fmt::format("tensor too large: tjc allows at most {} elements", kMaxNumel));
}
// The broadcast of two shapes, near enough for check_numel (mismatches are the library's).
Shape broadcast(Shape a, const Shape& b) {
  if (a.size() < b.size()) a.insert(a.begin(), b.size() - a.size(), 1);
  for (size_t i = 0; i < b.size(); ++i)
    a[a.size() - b.size() + i] = std::max(a[a.size() - b.size() + i], b[i]);
  return a;
}

// Python's repr of a str.
std::string quote(const std::string& s) {
  char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string r(1, q);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\')
      r += '\\', r += static_cast<char>(c);
    else if (c == '\n' || c == '\t' || c == '\r')
      r += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
    else if (c < 0x20 || c == 0x7f)
      r += fmt::format("\\x{:02x}", c);
    else
      r += static_cast<char>(c);
  }
  return r + q;
}

// Python's repr(x), or with `str` its str(x) (what print shows).
std::string repr(const Value& x, bool str = false) {
  if (x.is<NoneV>()) return "None";
  if (is_num(x)) return num_scalar(x).str();
  if (auto s = x.get<std::string>()) return str ? *s : quote(*s);
  if (auto d = x.get<DType>()) return dtype_name(*d);
  if (auto d = x.get<Device>()) {
    std::string type = d->is_cpu() ? "cpu" : "cuda";
    if (str) return d->index() < 0 ? type : fmt::format("{}:{}", type, d->index());
    return d->index() < 0 ? fmt::format("device(type='{}')", type)
                          : fmt::format("device(type='{}', index={})", type, d->index());
  }
  if (auto t = x.get<Tensor>()) return t->str();
  if (auto f = x.get<Func>())
    return f->self.defined() ? fmt::format("<built-in method {} of Tensor object>", f->name)
                             : fmt::format("<built-in function {}>", f->name);
  if (auto m = x.get<Module>()) return fmt::format("<module '{}'>", m->name);
  if (auto o = x.get<Opaque>()) return o->repr;
  const Seq& q = **x.get<SeqPtr>();
  std::string body;
  for (size_t i = 0; i < q.items.size(); ++i) {
    if (i) body += q.kind == Seq::Named ? ",\n" : ", ";
    if (q.kind == Seq::Named) body += q.fields[i] + "=";
    body += repr(q.items[i]);
  }
  if (q.kind == Seq::Tuple) return "(" + body + (q.items.size() == 1 ? ",)" : ")");
  if (q.kind == Seq::List) return "[" + body + "]";
  if (q.kind == Seq::Size) return "torch.Size([" + body + "])";
  return "torch.return_types." + q.name + "(\n" + body + ")";
}

bool truthy(const Value& x) {
  if (x.is<NoneV>()) return false;
  if (is_num(x)) return num_scalar(x).to_bool();
  if (auto s = x.get<std::string>()) return !s->empty();
  if (auto q = x.get<SeqPtr>()) return !(*q)->items.empty();
  if (auto t = x.get<Tensor>()) {
    if (t->numel() == 1) return t->item().to_bool();
    throw Error(t->numel() == 0 ? "Boolean value of Tensor with no values is ambiguous"
                                : "Boolean value of Tensor with more than one value is ambiguous");
  }
  return true;
}

// ------------------------------------------------------------------ operators

enum class Op : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  MatMul,
  BitAnd,
  BitOr,
  BitXor,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Is,
  IsNot
};
const char* op_text(Op op) {
  static const char* const text[] = {"+", "-",  "*",  "/", "//", "%", "**", "@",  "&",     "|",
                                     "^", "==", "!=", "<", "<=", ">", ">=", "is", "is not"};
  return text[static_cast<int>(op)];
}
bool is_compare(Op op) { return op >= Op::Eq && op <= Op::Ge; }
template <typename T> bool compare(Op op, T x, T y) {
  const bool r[] = {x == y, x != y, (x < y), x <= y, (x > y), x >= y};
  return r[static_cast<int>(op) - static_cast<int>(Op::Eq)];
}

[[noreturn]] void unsupported(Op op, const Value& a, const Value& b) {
  if (is_compare(op))
    throw Error(fmt::format("'{}' not supported between instances of '{}' and '{}'", op_text(op),
                            type_name(a), type_name(b)));
  throw Error(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op_text(op),
                          type_name(a), type_name(b)));
}

// Python's float divmod: the quotient floored, the remainder with the divisor's sign.
std::pair<double, double> py_divmod(double x, double y) {
  double mod = std::fmod(x, y), div = (x - mod) / y;
  if (mod == 0)
    mod = std::copysign(0.0, y);
  else if ((y < 0) != (mod < 0))
    mod += y, div -= 1.0;
  if (div == 0) return {std::copysign(0.0, x / y), mod};
  double floordiv = std::floor(div);
  return {div - floordiv > 0.5 ? floordiv + 1.0 : floordiv, mod};
}
double py_pow(double x, double y) {
  if (x == 0 && y < 0) throw Error("0.0 cannot be raised to a negative power");
  if (x < 0 && std::isfinite(y) && y != std::floor(y))
    throw Error("negative number cannot be raised to a fractional power");
  return std::pow(x, y);
}
int64_t int_pow(int64_t base, int64_t e) {
  int64_t r = 1;
  // Squaring past 64 bits means the result would be past them too.
  for (; e > 0; e >>= 1) {
    if ((e & 1) && __builtin_mul_overflow(r, base, &r)) int_overflow();
    if (e > 1 && __builtin_mul_overflow(base, base, &base)) int_overflow();
  }
  return r;
}

// Python's arithmetic on bools, ints and floats.
Value num_binary(Op op, const Value& a, const Value& b) {
  bool division = op == Op::Div || op == Op::FloorDiv || op == Op::Mod;
  if (a.is<double>() || b.is<double>()) {
    double x = num_scalar(a).to_double(), y = num_scalar(b).to_double();
    if (is_compare(op)) return compare(op, x, y);
    if (division && y == 0)
      throw Error(op == Op::Div   ? "float division by zero"
                  : op == Op::Mod ? "float modulo by zero"
                                  : "float floor division by zero");
    if (op == Op::Add) return x + y;
    if (op == Op::Sub) return x - y;
    if (op == Op::Mul) return x * y;
    if (op == Op::Div) return x / y;
    if (op == Op::FloorDiv) return py_divmod(x, y).first;
    if (op == Op::Mod) return py_divmod(x, y).second;
    if (op == Op::Pow) return py_pow(x, y);
    unsupported(op, a, b);
  }
  int64_t x = num_scalar(a).to_int(), y = num_scalar(b).to_int(), r = 0;
  if (is_compare(op)) return compare(op, x, y);
  if (division && y == 0)
    throw Error(op == Op::Div ? "division by zero" : "integer division or modulo by zero");
  switch (op) {
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
    if (op == Op::Add   ? __builtin_add_overflow(x, y, &r)
        : op == Op::Sub ? __builtin_sub_overflow(x, y, &r)
                        : __builtin_mul_overflow(x, y, &r))
      int_overflow();
    return r;
  case Op::Div:
    return static_cast<double>(x) / static_cast<double>(y);
  case Op::FloorDiv:
    if (x == std::numeric_limits<int64_t>::min() && y == -1) int_overflow();
    return x / y - (x % y != 0 && (x < 0) != (y < 0));
  case Op::Mod:
    r = y == -1 ? 0 : x % y;
    return r != 0 && (r < 0) != (y < 0) ? r + y : r;
  case Op::Pow:
    return y < 0 ? Value(py_pow(static_cast<double>(x), static_cast<double>(y)))
                 : Value(int_pow(x, y));
  case Op::BitAnd:
  case Op::BitOr:
  case Op::BitXor:
    r = op == Op::BitAnd ? x & y : op == Op::BitOr ? x | y : x ^ y;
    return a.is<bool>() && b.is<bool>() ? Value(r != 0) : Value(r);
  default:
    unsupported(op, a, b);
  }
}

// A Python scalar as the 0-d tensor PyTorch would make of it next to `like`.
Tensor wrap_scalar(const Scalar& s, const Tensor& like) {
  DType d = like.dtype();
  if (s.is_floating_point() && !is_floating_point(d))
    d = default_dtype();
  else if (s.is_integral() && d == kBool)
    d = kInt64;
  return scalar_tensor(s, TensorOptions(d).device(like.device()));
}

// a OP b as a tensor method; b is a Tensor or a Scalar.
template <typename B> Tensor method_op(Op op, const Tensor& a, const B& b) {
  if (op == Op::Add) return a.add(b);
  if (op == Op::Sub) return a.sub(b);
  if (op == Op::Mul) return a.mul(b);
  if (op == Op::Div) return a.div(b);
  if (op == Op::FloorDiv) return a.floor_divide(b);
  if (op == Op::Mod) return a.remainder(b);
  if (op == Op::Pow) return a.pow(b);
  if (op == Op::Eq) return a.eq(b);
  if (op == Op::Ne) return a.ne(b);
  if (op == Op::Lt) return a.lt(b);
  if (op == Op::Le) return a.le(b);
  if (op == Op::Gt) return a.gt(b);
  if (op == Op::Ge) return a.ge(b);
  if constexpr (std::is_same_v<B, Scalar>) {
    return method_op(op, a, wrap_scalar(b, a));
  } else {
    if (op == Op::MatMul) return a.matmul(b);
    if (op == Op::BitAnd) return a.bitwise_and(b);
    if (op == Op::BitOr) return a.bitwise_or(b);
    if (op == Op::BitXor) return a.bitwise_xor(b);
    throw Error(
        fmt::format("unsupported operand type(s) for {}: 'Tensor' and 'Tensor'", op_text(op)));
  }
}
// s OP b for a Python scalar s.
Tensor reflected_op(Op op, const Scalar& s, const Tensor& b) {
  static const Op flipped[] = {Op::Eq, Op::Ne, Op::Gt, Op::Ge, Op::Lt, Op::Le};
  if (op == Op::Add || op == Op::Mul) return method_op(op, b, s);
  if (is_compare(op))
    return method_op(flipped[static_cast<int>(op) - static_cast<int>(Op::Eq)], b, s);
  if (op == Op::Sub) return s - b;
  if (op == Op::Div) return s / b;
  if (op == Op::Pow) return tj::pow(s, b);
  return method_op(op, wrap_scalar(s, b), b);
}
// a OP= b in place (what Python's x += y calls on a tensor).
template <typename B> Tensor& inplace_op(Tensor& a, Op op, const B& b, const Scalar& alpha = 1) {
  if (op == Op::Add) return a.add_(b, alpha);
  if (op == Op::Sub) return a.sub_(b, alpha);
  if (op == Op::Mul) return a.mul_(b);
  if (op == Op::Div) return a.div_(b);
  if (op == Op::FloorDiv) return a.floor_divide_(b);
  if (op == Op::Mod) return a.remainder_(b);
  if (op == Op::Pow) return a.pow_(b);
  if (op == Op::Eq) return a.eq_(b);
  if (op == Op::Ne) return a.ne_(b);
  if (op == Op::Lt) return a.lt_(b);
  if (op == Op::Le) return a.le_(b);
  if (op == Op::Gt) return a.gt_(b);
  if (op == Op::Ge) return a.ge_(b);
  if constexpr (std::is_same_v<B, Scalar>) {
    return inplace_op(a, op, wrap_scalar(b, a));
  } else {
    if (op == Op::BitAnd) return a.bitwise_and_(b);
    if (op == Op::BitOr) return a.bitwise_or_(b);
    if (op == Op::BitXor) return a.bitwise_xor_(b);
    throw Error(
        fmt::format("unsupported operand type(s) for {}=: 'Tensor' and 'Tensor'", op_text(op)));
  }
}
Tensor& inplace_value(Tensor& a, Op op, const Value& b, const Scalar& alpha = 1) {
  if (auto t = b.get<Tensor>()) return inplace_op(a, op, *t, alpha);
  if (!is_num(b)) unsupported(op, a, b);
  return inplace_op(a, op, num_scalar(b), alpha);
}

// Python's == for everything but tensors (which compare elementwise), or `is`.
bool equal_values(const Value& a, const Value& b, bool identity = false) {
  if (is_num(a) && is_num(b) && (!identity || a.v.index() == b.v.index()))
    return truthy(num_binary(Op::Eq, a, b));
  if (a.v.index() != b.v.index()) return false;
  if (auto t = a.get<Tensor>()) return t->impl() == b.get<Tensor>()->impl();
  if (auto o = a.get<Opaque>()) return o->repr == b.get<Opaque>()->repr;
  if (auto s = a.get<std::string>()) return *s == *b.get<std::string>();
  if (auto d = a.get<DType>()) return *d == *b.get<DType>();
  if (auto d = a.get<Device>()) return *d == *b.get<Device>();
  if (auto m = a.get<Module>()) return m->name == b.get<Module>()->name;
  if (auto f = a.get<Func>())
    return f->fn == b.get<Func>()->fn && f->self.impl() == b.get<Func>()->self.impl();
  if (auto q = a.get<SeqPtr>()) {
    const Seq &x = **q, &y = **b.get<SeqPtr>();
    if (identity) return &x == &y;
    if ((x.kind == Seq::List) != (y.kind == Seq::List) || x.items.size() != y.items.size())
      return false;
    for (size_t i = 0; i < x.items.size(); ++i)
      if (!equal_values(x.items[i], y.items[i])) return false;
    return true;
  }
  return true; // None
}

Value binary_op(Op op, const Value& a, const Value& b) {
  if (op == Op::Is || op == Op::IsNot) return equal_values(a, b, true) == (op == Op::Is);
  const Tensor* ta = a.get<Tensor>();
  const Tensor* tb = b.get<Tensor>();
  if (ta && tb) return method_op(op, *ta, *tb);
  if (ta && is_num(b)) return method_op(op, *ta, num_scalar(b));
  if (tb && is_num(a)) return reflected_op(op, num_scalar(a), *tb);
  if (is_num(a) && is_num(b)) return num_binary(op, a, b);
  if (op == Op::Eq || op == Op::Ne) return equal_values(a, b) == (op == Op::Eq);
  auto qa = a.get<SeqPtr>(), qb = b.get<SeqPtr>();
  if (op == Op::Add && qa && qb && ((*qa)->kind == Seq::List) == ((*qb)->kind == Seq::List)) {
    std::vector<Value> items = (*qa)->items;
    items.insert(items.end(), (*qb)->items.begin(), (*qb)->items.end());
    return make_seq((*qa)->kind == Seq::Named ? Seq::Tuple : (*qa)->kind, std::move(items));
  }
  const Value& count = qa ? b : a;
  if (op == Op::Mul && (qa || qb) && (count.is<int64_t>() || count.is<bool>())) {
    const Seq& q = **(qa ? qa : qb);
    int64_t n = q.items.empty() ? 0 : std::max<int64_t>(num_scalar(count).to_int(), 0);
    if (n > kMaxSeqLen / std::max<int64_t>(q.size, 1)) throw Error("sequence too long");
    std::vector<Value> items;
    for (int64_t i = 0; i < n; ++i)
      items.insert(items.end(), q.items.begin(), q.items.end());
    return make_seq(q.kind == Seq::Named ? Seq::Tuple : q.kind, std::move(items));
  }
  auto sa = a.get<std::string>(), sb = b.get<std::string>();
  if (op == Op::Add && sa && sb) {
    if (sa->size() + sb->size() > static_cast<size_t>(kMaxSeqLen) * 16)
      throw Error("string too long");
    return *sa + *sb;
  }
  unsupported(op, a, b);
}

Value unary_op(char op, const Value& x) {
  if (auto t = x.get<Tensor>()) return op == '-' ? -*t : op == '~' ? t->bitwise_not() : *t;
  if (x.is<bool>() || x.is<int64_t>()) {
    int64_t i = num_scalar(x).to_int();
    if (op == '-' && i == std::numeric_limits<int64_t>::min()) int_overflow();
    return op == '-' ? -i : op == '~' ? ~i : i;
  }
  if (auto d = x.get<double>(); d && op != '~') return op == '-' ? -*d : *d;
  throw Error(fmt::format("bad operand type for unary {}: '{}'", op, type_name(x)));
}

// ------------------------------------------------------------------ arguments

// The arguments of a call, read by position or by keyword as PyTorch names them.
struct Args {
  static constexpr size_t kKw = static_cast<size_t>(-1); // keyword-only
  std::string fn;
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  std::vector<bool> used; // per keyword
  size_t seen = 0;        // positions read
  std::string* out = nullptr;

  [[noreturn]] void bad(std::string_view name, std::string_view want, const Value& got) const {
    throw Error(
        fmt::format("{}(): argument '{}' must be {}, not {}", fn, name, want, type_name(got)));
  }
  // Position i or keyword `name`; null when absent or None.
  const Value* get(size_t i, std::string_view name) {
    const Value* r = nullptr;
    if (i < pos.size()) seen = std::max(seen, i + 1), r = &pos[i];
    for (size_t k = 0; k < kw.size(); ++k) {
      if (kw[k].first != name) continue;
      if (r) throw Error(fmt::format("{}() got multiple values for argument '{}'", fn, name));
      used[k] = true, r = &kw[k].second;
    }
    return r && !r->is<NoneV>() ? r : nullptr;
  }
  const Value& need(size_t i, std::string_view name) {
    if (const Value* x = get(i, name)) return *x;
    throw Error(fmt::format("{}() missing required argument '{}'", fn, name));
  }
  void finish() const {
    for (size_t k = 0; k < kw.size(); ++k)
      if (!used[k])
        throw Error(fmt::format("{}() got an unexpected keyword argument '{}'", fn, kw[k].first));
    if (pos.size() > seen)
      throw Error(fmt::format("{}() takes {} positional argument{} but {} were given", fn, seen,
                              seen == 1 ? "" : "s", pos.size()));
  }

  // Conversions, as PyTorch's argument parser does them.
  Tensor to_tensor(const Value& x, std::string_view name) const {
    if (auto t = x.get<Tensor>()) return *t;
    bad(name, "Tensor", x);
  }
  int64_t to_int(const Value& x, std::string_view name) const {
    if (x.is<int64_t>() || x.is<bool>()) return num_scalar(x).to_int();
    if (auto t = x.get<Tensor>(); t && t->numel() == 1 && is_integral(t->dtype(), true))
      return t->item().to_int();
    bad(name, "int", x);
  }
  Scalar to_scalar(const Value& x, std::string_view name) const {
    if (is_num(x)) return num_scalar(x);
    if (auto t = x.get<Tensor>(); t && t->numel() == 1) return t->item();
    bad(name, "Number", x);
  }
  std::vector<int64_t> to_ints(const Value& x, std::string_view name) const {
    auto q = x.get<SeqPtr>();
    if (!q) return {to_int(x, name)};
    std::vector<int64_t> r;
    for (const Value& e : (*q)->items)
      r.push_back(to_int(e, name));
    return r;
  }
  std::string to_str(const Value& x, std::string_view name) const {
    if (auto s = x.get<std::string>()) return *s;
    bad(name, "str", x);
  }
  DType to_dtype(const Value& x, std::string_view name) const;
  Device to_device(const Value& x, std::string_view name) const {
    if (auto d = x.get<Device>()) return *d;
    if (auto s = x.get<std::string>()) return Device(*s);
    if (auto i = x.get<int64_t>(); i && *i >= 0 && *i <= 1024)
      return Device(kCUDA, static_cast<int>(*i));
    bad(name, "torch.device", x);
  }

  Tensor self() { return tensor(0, "input"); }
  Tensor tensor(size_t i, std::string_view name) { return to_tensor(need(i, name), name); }
  Tensor opt_tensor(size_t i, std::string_view name) {
    const Value* x = get(i, name);
    return x ? to_tensor(*x, name) : Tensor();
  }
  std::vector<Tensor> tensors(size_t i, std::string_view name) {
    const Value& x = need(i, name);
    if (auto t = x.get<Tensor>()) return {*t};
    auto q = x.get<SeqPtr>();
    if (!q) bad(name, "tuple of Tensors", x);
    std::vector<Tensor> r;
    for (const Value& e : (*q)->items)
      r.push_back(to_tensor(e, name));
    return r;
  }
  int64_t i64(size_t i, std::string_view name) { return to_int(need(i, name), name); }
  int64_t i64(size_t i, std::string_view name, int64_t dflt) {
    const Value* x = get(i, name);
    return x ? to_int(*x, name) : dflt;
  }
  std::optional<int64_t> opt_i64(size_t i, std::string_view name) {
    const Value* x = get(i, name);
    return x ? std::optional<int64_t>(to_int(*x, name)) : std::nullopt;
  }
  double f64(size_t i, std::string_view name, double dflt) {
    const Value* x = get(i, name);
    return x ? to_scalar(*x, name).to_double() : dflt;
  }
  bool flag(size_t i, std::string_view name, bool dflt) {
    const Value* x = get(i, name);
    if (x && !x->is<bool>() && !x->is<int64_t>()) bad(name, "bool", *x);
    return x ? num_scalar(*x).to_bool() : dflt;
  }
  bool keepdim(size_t i = 2) { return flag(i, "keepdim", false); }
  Scalar scalar(size_t i, std::string_view name) { return to_scalar(need(i, name), name); }
  std::optional<Scalar> opt_scalar(size_t i, std::string_view name) {
    const Value* x = get(i, name);
    return x ? std::optional<Scalar>(to_scalar(*x, name)) : std::nullopt;
  }
  // An int or a sequence of them; absent gives none.
  std::vector<int64_t> ints(size_t i, std::string_view name) {
    const Value* x = get(i, name);
    return x ? to_ints(*x, name) : std::vector<int64_t>{};
  }
  // Varargs, x.permute(1, 0), or one sequence, x.permute((1, 0)) or dims=(1, 0).
  std::vector<int64_t> varargs(size_t i, std::string_view name) {
    if (pos.size() <= i + 1) return to_ints(need(i, name), name);
    std::vector<int64_t> r;
    for (size_t k = i; k < pos.size(); ++k)
      r.push_back(to_int(pos[k], name));
    seen = pos.size();
    return r;
  }
  // The sizes of a new tensor or view, as varargs or a sequence.
  std::vector<int64_t> sizes(size_t i, std::string_view name, bool var = true) {
    auto r = var ? varargs(i, name) : to_ints(need(i, name), name);
    check_numel(r);
    return r;
  }
  std::optional<DType> opt_dtype(size_t i = kKw, std::string_view name = "dtype") {
    const Value* x = get(i, name);
    return x ? std::optional<DType>(to_dtype(*x, name)) : std::nullopt;
  }
  // dtype=, device= and requires_grad= of the creation functions.
  TensorOptions options(TensorOptions o = {}) {
    if (auto d = opt_dtype()) o = o.dtype(*d);
    if (const Value* x = get(kKw, "device")) o = o.device(to_device(*x, "device"));
    return o.requires_grad(flag(kKw, "requires_grad", false));
  }
};

// ------------------------------------------------------------------ builtins

using Fn = std::function<Value(Args&)>;
enum Flag : uint8_t {
  kTorch = 1,  // torch.NAME and bare NAME
  kF = 2,      // torch.nn.functional.NAME and bare NAME
  kPy = 4,     // Python's builtin: bare NAME only
  kMethod = 8, // tensor.NAME(...)
};
constexpr uint8_t TM = kTorch | kMethod;
struct Builtin {
  Fn fn;
  uint8_t flags; // 0: only through its module ("math.sqrt")
};

DType Args::to_dtype(const Value& x, std::string_view name) const {
  if (auto d = x.get<DType>()) return *d;
  // Python's types stand for PyTorch's dtypes of their kind.
  if (auto f = x.get<Func>(); f && (f->fn->flags & kPy) && !f->self.defined()) {
    if (f->name == "int") return kInt64;
    if (f->name == "float") return kFloat64;
    if (f->name == "bool") return kBool;
  }
  bad(name, "torch.dtype", x);
}

TensorOptions like(const Tensor& t) { return TensorOptions(t.dtype()).device(t.device()); }

// torch.tensor(data): nested sequences of numbers, rectangular.
struct Flat {
  std::vector<double> f;
  std::vector<int64_t> i;
  bool any_float = false, any_int = false;
};
void flatten_data(const Value& x, size_t d, const Shape& shape, Flat& out) {
  if (d < shape.size()) {
    auto q = x.get<SeqPtr>();
    if (!q || static_cast<int64_t>((*q)->items.size()) != shape[d])
      throw Error(fmt::format("expected sequence of length {} at dim {} (got {})", shape[d], d,
                              q ? std::to_string((*q)->items.size()) : type_name(x)));
    for (const Value& e : (*q)->items)
      flatten_data(e, d + 1, shape, out);
    return;
  }
  auto t = x.get<Tensor>();
  if (!is_num(x) && !(t && t->numel() == 1))
    throw Error("Could not infer dtype of " + type_name(x));
  Scalar s = t ? t->item() : num_scalar(x);
  out.any_float |= s.is_floating_point();
  out.any_int |= s.is_integral();
  out.f.push_back(s.to_double());
  out.i.push_back(s.is_floating_point() ? 0 : s.to_int());
}
Tensor make_tensor(const Value& data, TensorOptions o) {
  if (auto t = data.get<Tensor>()) {
    Tensor r = t->detach().clone();
    if (auto d = o.dtype_opt()) r = r.to(*d);
    if (o.has_device()) r = r.to(o.device());
    return o.requires_grad() ? r.requires_grad_() : r;
  }
  Shape shape;
  for (const Value* cur = &data; auto q = cur->get<SeqPtr>(); cur = &(*q)->items[0]) {
    shape.push_back(static_cast<int64_t>((*q)->items.size()));
    if ((*q)->items.empty()) break;
  }
  check_numel(shape);
  Flat flat;
  flatten_data(data, 0, shape, flat);
  bool bools = !flat.any_float && !flat.any_int && !flat.f.empty();
  o = o.dtype(o.dtype_or(flat.any_float ? default_dtype()
                         : flat.any_int ? kInt64
                         : bools        ? kBool
                                        : default_dtype()));
  if (flat.any_float) return tj::tensor(flat.f, shape, o);
  if (bools) return tj::tensor(std::vector<bool>(flat.i.begin(), flat.i.end()), shape, o);
  return tj::tensor(flat.i, shape, o);
}

Value tolist(const Tensor& t) {
  if (t.numel() > kMaxSeqLen) throw Error("sequence too long");
  bool fl = t.is_floating_point(), bo = t.dtype() == kBool;
  std::vector<double> f = fl ? t.to_vector<double>() : std::vector<double>();
  std::vector<int64_t> i = fl ? std::vector<int64_t>() : t.to_vector<int64_t>();
  size_t k = 0;
  std::function<Value(size_t)> build = [&](size_t dim) -> Value {
    if (dim == t.sizes().size())
      return fl ? Value(f[k++]) : bo ? Value(i[k++] != 0) : Value(i[k++]);
    std::vector<Value> items;
    for (int64_t n = 0; n < t.sizes()[dim]; ++n)
      items.push_back(build(dim + 1));
    return make_seq(Seq::List, std::move(items));
  };
  return build(0);
}

Value where_op(const Tensor& c, const Value& x, const Value& y) {
  const Tensor* tx = x.get<Tensor>();
  const Tensor* ty = y.get<Tensor>();
  // Three shapes may broadcast past 64 bits: refuse before the library multiplies them.
  Shape b = c.sizes();
  for (const Tensor* t : {tx, ty})
    if (t) b = broadcast(b, t->sizes());
  check_numel(b);
  if (tx && ty) return tj::where(c, *tx, *ty);
  if (tx && is_num(y)) return tj::where(c, *tx, num_scalar(y));
  if (ty && is_num(x)) return tj::where(c, num_scalar(x), *ty);
  if (!is_num(x) || !is_num(y)) unsupported(Op::Eq, x, y);
  Scalar sx = num_scalar(x), sy = num_scalar(y);
  DType d = sx.is_floating_point() || sy.is_floating_point() ? default_dtype()
            : sx.is_bool() && sy.is_bool()                   ? kBool
                                                             : kInt64;
  return tj::where(c, scalar_tensor(sx, TensorOptions(d).device(c.device())), sy);
}

// Python's max(a, b, ...) and max(sequence), and min.
Value py_extreme(Args& a, bool is_max) {
  std::vector<Value> xs = a.pos;
  a.seen = a.pos.size();
  if (xs.size() == 1)
    if (auto q = xs[0].get<SeqPtr>()) xs = (*q)->items;
  if (xs.empty()) throw Error(fmt::format("{}() arg is an empty sequence", a.fn));
  Value best = xs[0];
  for (size_t i = 1; i < xs.size(); ++i)
    if (truthy(binary_op(is_max ? Op::Gt : Op::Lt, xs[i], best))) best = xs[i];
  return best;
}

// Python's int("12") and float(" 2.5 ").
Value parse_number(const std::string& text, bool integer) {
  std::string s = text;
  s.erase(0, s.find_first_not_of(" \t\n\r\f\v"));
  s.erase(s.find_last_not_of(" \t\n\r\f\v") + 1);
  if (!s.empty() && s[0] == '+' && s.size() > 1 && s[1] != '-') s.erase(0, 1);
  const char* end = s.data() + s.size();
  if (integer) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), end, v);
    if (ec == std::errc::result_out_of_range) int_overflow();
    if (ec == std::errc() && p == end && !s.empty()) return v;
    throw Error("invalid literal for int() with base 10: " + quote(text));
  }
  char* p = nullptr;
  double d = std::strtod(s.c_str(), &p);
  // strtod also reads hex floats, which Python's float() does not.
  if (s.empty() || p != end || s.find_first_of("xX") != std::string::npos)
    throw Error("could not convert string to float: " + quote(text));
  return d;
}

class Tables {
public:
  std::unordered_map<std::string, Builtin> funcs, methods;
  std::unordered_map<std::string, std::function<Value(const Tensor&)>> attrs;
  std::unordered_map<std::string, DType> dtypes;
  std::unordered_map<std::string, Value> consts; // by module: "torch.pi", "math.e"
  Tables();

private:
  void def(std::initializer_list<std::string_view> names, uint8_t flags, const Fn& fn) {
    for (std::string_view n : names) {
      if (flags & kMethod) methods[std::string(n)] = {fn, kMethod};
      if (flags != kMethod) funcs[std::string(n)] = {fn, static_cast<uint8_t>(flags & ~kMethod)};
    }
  }
  void creation();
  void elementwise();
  void shapes();
  void reductions();
  void linalg();
  void tensor_methods();
  void python();
};

const Tables& tables() {
  static const Tables t;
  return t;
}

Tables::Tables() {
  dtypes = {
      {"float32", kFloat32}, {"float", kFloat32}, {"float64", kFloat64},   {"double", kFloat64},
      {"float16", kFloat16}, {"half", kFloat16},  {"bfloat16", kBFloat16}, {"uint8", kUInt8},
      {"int8", kInt8},       {"int16", kInt16},   {"short", kInt16},       {"int32", kInt32},
      {"int", kInt32},       {"int64", kInt64},   {"long", kInt64},        {"bool", kBool}};
  for (std::string m : {"torch.", "math."}) {
    consts[m + "pi"] = std::numbers::pi, consts[m + "e"] = std::numbers::e;
    consts[m + "inf"] = std::numeric_limits<double>::infinity();
    consts[m + "nan"] = std::numeric_limits<double>::quiet_NaN();
  }
  consts["math.tau"] = 2 * std::numbers::pi;
  attrs = {{"shape", [](const Tensor& t) { return size_value(t.sizes()); }},
           {"dtype", [](const Tensor& t) { return Value(t.dtype()); }},
           {"device", [](const Tensor& t) { return Value(t.device()); }},
           {"T", [](const Tensor& t) { return Value(t.T()); }},
           {"mT", [](const Tensor& t) { return Value(t.mT()); }},
           {"grad", [](const Tensor& t) { return Value(t.grad()); }},
           {"data", [](const Tensor& t) { return Value(t.detach()); }},
           {"requires_grad", [](const Tensor& t) { return Value(t.requires_grad()); }},
           {"is_leaf", [](const Tensor& t) { return Value(t.is_leaf()); }},
           {"is_cuda", [](const Tensor& t) { return Value(t.device().is_cuda()); }},
           {"ndim", [](const Tensor& t) { return Value(t.dim()); }},
           {"grad_fn", [](const Tensor& t) {
              auto g = t.grad_fn();
              return g ? Value(Opaque{"<" + g->name() + " object>"}) : Value();
            }}};
  creation();
  elementwise();
  shapes();
  reductions();
  linalg();
  tensor_methods();
  python();
}

void Tables::creation() {
  using Make = Tensor (*)(IntArrayRef, TensorOptions, Caller);
  static const std::pair<const char*, Make> makers[] = {{"empty", tj::empty},
                                                        {"zeros", tj::zeros},
                                                        {"ones", tj::ones},
                                                        {"rand", tj::rand},
                                                        {"randn", tj::randn}};
  for (auto [name, make] : makers)
    def({name}, kTorch,
        [make = make](Args& a) { return make(a.sizes(0, "size"), a.options(), {}); });
  using MakeLike = Tensor (*)(const Tensor&, TensorOptions, Caller);
  static const std::pair<const char*, MakeLike> like_makers[] = {{"empty_like", tj::empty_like},
                                                                 {"zeros_like", tj::zeros_like},
                                                                 {"ones_like", tj::ones_like},
                                                                 {"rand_like", tj::rand_like},
                                                                 {"randn_like", tj::randn_like}};
  for (auto [name, make] : like_makers)
    def({name}, kTorch, [make = make](Args& a) { return make(a.self(), a.options(), {}); });
  def({"full"}, kTorch, [](Args& a) {
    return tj::full(a.sizes(0, "size", false), a.scalar(1, "fill_value"), a.options());
  });
  def({"full_like"}, kTorch,
      [](Args& a) { return tj::full_like(a.self(), a.scalar(1, "fill_value"), a.options()); });
  // new_zeros and friends default to their tensor's dtype and device.
  def({"new_zeros", "new_ones", "new_empty"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    auto size = a.sizes(1, "size");
    TensorOptions o = a.options(like(t));
    return a.fn == "new_zeros"  ? zeros(size, o)
           : a.fn == "new_ones" ? ones(size, o)
                                : empty(size, o);
  });
  def({"new_full"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    return full(a.sizes(1, "size", false), a.scalar(2, "fill_value"), a.options(like(t)));
  });
  def({"new_tensor"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    return make_tensor(a.need(1, "data"), a.options(like(t)));
  });
  def({"tensor", "as_tensor"}, kTorch,
      [](Args& a) { return make_tensor(a.need(0, "data"), a.options()); });
  def({"scalar_tensor"}, kTorch,
      [](Args& a) { return scalar_tensor(a.scalar(0, "s"), a.options()); });
  def({"randint"}, kTorch, [](Args& a) {
    // randint(high, size) or randint(low, high, size).
    size_t h = a.pos.size() >= 3 ? 1 : 0;
    int64_t low = h ? a.i64(0, "low") : a.i64(Args::kKw, "low", 0);
    return randint(low, a.i64(h, "high"), a.sizes(h + 1, "size", false), a.options());
  });
  def({"randperm"}, kTorch, [](Args& a) {
    int64_t n = a.i64(0, "n");
    check_numel({n});
    return randperm(n, a.options());
  });
  def({"arange"}, kTorch, [](Args& a) {
    TensorOptions o = a.options();
    bool end_only = a.pos.size() <= 1 && std::none_of(a.kw.begin(), a.kw.end(),
                                                      [](auto& k) { return k.first == "end"; });
    Scalar start = end_only ? Scalar(0) : a.opt_scalar(0, "start").value_or(0);
    Scalar end = a.scalar(end_only ? 0 : 1, "end");
    Scalar step = end_only ? Scalar(1) : a.opt_scalar(2, "step").value_or(1);
    // The library turns the length into an integer: it must fit.
    double s = start.to_double(), e = end.to_double(), st = step.to_double();
    if (st != 0 && std::isfinite(s) && std::isfinite(e) && !(std::ceil((e - s) / st) <= kMaxNumel))
      check_numel({kMaxNumel + 1});
    return tj::arange(start, end, step, o);
  });
  def({"linspace", "logspace"}, kTorch, [](Args& a) {
    Scalar start = a.scalar(0, "start"), end = a.scalar(1, "end");
    int64_t steps = a.i64(2, "steps");
    check_numel({steps});
    if (a.fn == "linspace") return linspace(start, end, steps, a.options());
    return logspace(start, end, steps, a.f64(3, "base", 10.0), a.options());
  });
  def({"eye"}, kTorch, [](Args& a) {
    int64_t n = a.i64(0, "n"), m = a.i64(1, "m", n);
    check_numel({n, m});
    return eye(n, m, a.options());
  });
  def({"manual_seed"}, kTorch, [](Args& a) {
    tj::manual_seed(static_cast<uint64_t>(a.i64(0, "seed")));
    return Value();
  });
}

void Tables::elementwise() {
  struct Unary {
    const char* name;
    Tensor (*fn)(const Tensor&, Caller);
    Tensor& (Tensor::*inplace)(Caller);
  };
  // The unary functions of functions.h, with their in-place methods.
  static const Unary unary[] = {{"neg", tj::neg, &Tensor::neg_},
                                {"abs", tj::abs, &Tensor::abs_},
                                {"sign", tj::sign, &Tensor::sign_},
                                {"ceil", tj::ceil, &Tensor::ceil_},
                                {"floor", tj::floor, &Tensor::floor_},
                                {"round", tj::round, &Tensor::round_},
                                {"trunc", tj::trunc, &Tensor::trunc_},
                                {"sqrt", tj::sqrt, &Tensor::sqrt_},
                                {"rsqrt", tj::rsqrt, &Tensor::rsqrt_},
                                {"exp", tj::exp, &Tensor::exp_},
                                {"exp2", tj::exp2, &Tensor::exp2_},
                                {"expm1", tj::expm1, &Tensor::expm1_},
                                {"log", tj::log, &Tensor::log_},
                                {"log2", tj::log2, &Tensor::log2_},
                                {"log10", tj::log10, &Tensor::log10_},
                                {"log1p", tj::log1p, &Tensor::log1p_},
                                {"sin", tj::sin, &Tensor::sin_},
                                {"cos", tj::cos, &Tensor::cos_},
                                {"tan", tj::tan, &Tensor::tan_},
                                {"asin", tj::asin, &Tensor::asin_},
                                {"acos", tj::acos, &Tensor::acos_},
                                {"atan", tj::atan, &Tensor::atan_},
                                {"sinh", tj::sinh, &Tensor::sinh_},
                                {"cosh", tj::cosh, &Tensor::cosh_},
                                {"tanh", tj::tanh, &Tensor::tanh_},
                                {"sigmoid", tj::sigmoid, &Tensor::sigmoid_},
                                {"relu", tj::relu, &Tensor::relu_},
                                {"erf", tj::erf, &Tensor::erf_},
                                {"square", tj::square, &Tensor::square_},
                                {"reciprocal", tj::reciprocal, &Tensor::reciprocal_},
                                {"logical_not", tj::logical_not, &Tensor::logical_not_},
                                {"bitwise_not", tj::bitwise_not, &Tensor::bitwise_not_},
                                {"negative", tj::neg, &Tensor::neg_},
                                {"gelu", tj::gelu, nullptr},
                                {"isnan", tj::isnan, nullptr},
                                {"isinf", tj::isinf, nullptr},
                                {"isfinite", tj::isfinite, nullptr}};
  for (const Unary& u : unary) {
    std::string_view n = u.name;
    bool functional = n == "relu" || n == "gelu" || n == "sigmoid" || n == "tanh";
    def({n}, TM | (functional ? kF : 0), [fn = u.fn](Args& a) { return fn(a.self(), {}); });
    if (u.inplace)
      def({std::string(n) + "_"}, kMethod, [ip = u.inplace](Args& a) {
        Tensor t = a.self();
        return (t.*ip)({});
      });
  }
  // Binary ops take a tensor or a Python number on either side, as the operators do.
  static const std::pair<const char*, Op> binary[] = {{"add", Op::Add},
                                                      {"sub", Op::Sub},
                                                      {"subtract", Op::Sub},
                                                      {"mul", Op::Mul},
                                                      {"multiply", Op::Mul},
                                                      {"div", Op::Div},
                                                      {"divide", Op::Div},
                                                      {"true_divide", Op::Div},
                                                      {"floor_divide", Op::FloorDiv},
                                                      {"remainder", Op::Mod},
                                                      {"pow", Op::Pow},
                                                      {"eq", Op::Eq},
                                                      {"ne", Op::Ne},
                                                      {"not_equal", Op::Ne},
                                                      {"lt", Op::Lt},
                                                      {"less", Op::Lt},
                                                      {"le", Op::Le},
                                                      {"less_equal", Op::Le},
                                                      {"gt", Op::Gt},
                                                      {"greater", Op::Gt},
                                                      {"ge", Op::Ge},
                                                      {"greater_equal", Op::Ge},
                                                      {"bitwise_and", Op::BitAnd},
                                                      {"bitwise_or", Op::BitOr},
                                                      {"bitwise_xor", Op::BitXor}};
  for (auto [name, op] : binary) {
    const char* other = op == Op::Pow ? "exponent" : "other";
    bool alpha = op == Op::Add || op == Op::Sub;
    def({name}, TM, [op = op, other, alpha](Args& a) -> Value {
      const Value &x = a.need(0, "input"), &y = a.need(1, other);
      auto s = alpha ? a.opt_scalar(Args::kKw, "alpha") : std::nullopt;
      if (!s) return binary_op(op, x, y);
      Tensor t = a.to_tensor(x, "input"); // x + alpha * y
      if (auto o = y.get<Tensor>()) return op == Op::Add ? t.add(*o, *s) : t.sub(*o, *s);
      return op == Op::Add ? t.add(a.to_scalar(y, other), *s) : t.sub(a.to_scalar(y, other), *s);
    });
    def({std::string(name) + "_"}, kMethod, [op = op, other, alpha](Args& a) {
      Tensor t = a.self();
      Scalar s = alpha ? a.opt_scalar(Args::kKw, "alpha").value_or(1) : Scalar(1);
      return inplace_value(t, op, a.need(1, other), s);
    });
  }
  using Binary = Tensor (*)(const Tensor&, const Tensor&, Caller);
  static const std::pair<const char*, Binary> tensor_only[] = {
      {"maximum", tj::maximum},
      {"minimum", tj::minimum},
      {"atan2", tj::atan2},
      {"logical_and", tj::logical_and},
      {"logical_or", tj::logical_or},
      {"logical_xor", tj::logical_xor},
      {"matmul", tj::matmul},
      {"mm", tj::mm},
      {"bmm", tj::bmm},
      {"mv", tj::mv},
      {"dot", tj::dot},
      {"masked_select", tj::masked_select}};
  for (auto [name, fn] : tensor_only)
    def({name}, TM, [fn = fn](Args& a) { return fn(a.self(), a.tensor(1, "other"), {}); });
  using Inplace = Tensor& (Tensor::*)(const Tensor&, Caller);
  static const std::pair<const char*, Inplace> tensor_only_[] = {
      {"atan2_", &Tensor::atan2_},
      {"logical_and_", &Tensor::logical_and_},
      {"logical_or_", &Tensor::logical_or_},
      {"logical_xor_", &Tensor::logical_xor_},
      {"copy_", &Tensor::copy_}};
  for (auto [name, fn] : tensor_only_)
    def({name}, kMethod, [fn = fn](Args& a) {
      Tensor t = a.self();
      return (t.*fn)(a.tensor(1, "other"), {});
    });
  def({"fmod", "fmod_"}, TM, [](Args& a) {
    Tensor t = a.self();
    const Value& o = a.need(1, "other");
    auto ot = o.get<Tensor>();
    if (a.fn == "fmod") return ot ? t.fmod(*ot) : t.fmod(a.to_scalar(o, "other"));
    return ot ? t.fmod_(*ot) : t.fmod_(a.to_scalar(o, "other"));
  });
  auto masked_fill = [](Args& a) {
    Tensor t = a.self();
    Tensor mask = a.tensor(1, "mask");
    const Value& v = a.need(2, "value");
    auto vt = v.get<Tensor>();
    if (a.fn == "masked_fill")
      return vt ? t.masked_fill(mask, *vt) : t.masked_fill(mask, a.to_scalar(v, "value"));
    return vt ? t.masked_fill_(mask, *vt) : t.masked_fill_(mask, a.to_scalar(v, "value"));
  };
  def({"masked_fill"}, TM, masked_fill);
  def({"masked_fill_"}, kMethod, masked_fill); // no torch.masked_fill_, as in PyTorch
  def({"where"}, kTorch, [](Args& a) {
    return where_op(a.tensor(0, "condition"), a.need(1, "input"), a.need(2, "other"));
  });
  def({"where"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    return where_op(a.tensor(1, "condition"), t, a.need(2, "other"));
  });
  def({"clamp", "clip"}, TM,
      [](Args& a) { return a.self().clamp(a.opt_scalar(1, "min"), a.opt_scalar(2, "max")); });
  def({"clamp_", "clip_"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    return t.clamp_(a.opt_scalar(1, "min"), a.opt_scalar(2, "max"));
  });
  def({"clamp_min"}, TM, [](Args& a) { return a.self().clamp_min(a.scalar(1, "min")); });
  def({"clamp_max"}, TM, [](Args& a) { return a.self().clamp_max(a.scalar(1, "max")); });
  def({"isclose", "allclose"}, TM, [](Args& a) -> Value {
    Tensor x = a.self(), y = a.tensor(1, "other");
    double rtol = a.f64(2, "rtol", 1e-5), atol = a.f64(3, "atol", 1e-8);
    bool nan = a.flag(4, "equal_nan", false);
    if (a.fn == "allclose") return x.allclose(y, rtol, atol, nan);
    return x.isclose(y, rtol, atol, nan);
  });
  def({"equal"}, TM, [](Args& a) { return a.self().equal(a.tensor(1, "other")); });
  def({"softmax", "log_softmax"}, TM | kF, [](Args& a) {
    Tensor t = a.self();
    int64_t dim = a.i64(1, "dim");
    if (auto d = a.opt_dtype()) t = t.to(*d);
    return a.fn == "softmax" ? nn::functional::softmax(t, dim)
                             : nn::functional::log_softmax(t, dim);
  });
  def({"layer_norm"}, kTorch | kF, [](Args& a) {
    Tensor t = a.self();
    auto shape = a.to_ints(a.need(1, "normalized_shape"), "normalized_shape");
    return nn::functional::layer_norm(t, shape, a.opt_tensor(2, "weight"), a.opt_tensor(3, "bias"),
                                      a.f64(4, "eps", 1e-5));
  });
  def({"linear"}, kF, [](Args& a) {
    return nn::functional::linear(a.self(), a.tensor(1, "weight"), a.opt_tensor(2, "bias"));
  });
  def({"mse_loss", "cross_entropy"}, kF, [](Args& a) {
    Tensor x = a.self(), y = a.tensor(1, "target");
    return a.fn == "mse_loss" ? nn::functional::mse_loss(x, y)
                              : nn::functional::cross_entropy(x, y);
  });
}

void Tables::shapes() {
  def({"reshape"}, TM, [](Args& a) { return a.self().reshape(a.sizes(1, "shape")); });
  def({"view"}, kMethod, [](Args& a) { return a.self().view(a.sizes(1, "size")); });
  def({"expand"}, kMethod, [](Args& a) { return a.self().expand(a.sizes(1, "size")); });
  def({"repeat"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    auto reps = a.sizes(1, "repeats");
    // Both factors are checked, so the result's sizes cannot overflow.
    auto out = reps;
    for (size_t i = 1; i <= std::min(reps.size(), t.sizes().size()); ++i)
      out[reps.size() - i] *= t.sizes()[t.sizes().size() - i];
    check_numel(out);
    return repeat(t, reps);
  });
  def({"permute"}, TM, [](Args& a) { return a.self().permute(a.varargs(1, "dims")); });
  def({"flip"}, TM, [](Args& a) { return flip(a.self(), a.varargs(1, "dims")); });
  def({"view_as", "reshape_as", "expand_as", "type_as"}, kMethod, [](Args& a) {
    Tensor t = a.self(), o = a.tensor(1, "other");
    if (a.fn == "type_as") return t.to(o.dtype());
    if (a.fn == "expand_as") return t.expand_as(o);
    return a.fn == "view_as" ? t.view(o.sizes()) : t.reshape(o.sizes());
  });
  def({"flatten"}, TM,
      [](Args& a) { return a.self().flatten(a.i64(1, "start_dim", 0), a.i64(2, "end_dim", -1)); });
  def({"ravel"}, TM, [](Args& a) { return a.self().reshape({-1}); });
  def({"squeeze"}, TM, [](Args& a) {
    Tensor t = a.self();
    auto d = a.opt_i64(1, "dim");
    return d ? t.squeeze(*d) : t.squeeze();
  });
  def({"unsqueeze"}, TM, [](Args& a) { return a.self().unsqueeze(a.i64(1, "dim")); });
  def({"transpose", "swapaxes", "swapdims"}, TM,
      [](Args& a) { return a.self().transpose(a.i64(1, "dim0"), a.i64(2, "dim1")); });
  def({"transpose_"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    return t.transpose_(a.i64(1, "dim0"), a.i64(2, "dim1"));
  });
  def({"t"}, TM, [](Args& a) { return a.self().t(); });
  def({"t_"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    return t.t_();
  });
  def({"narrow"}, TM, [](Args& a) {
    return a.self().narrow(a.i64(1, "dim"), a.i64(2, "start"), a.i64(3, "length"));
  });
  def({"select"}, TM, [](Args& a) { return a.self().select(a.i64(1, "dim"), a.i64(2, "index")); });
  def({"diagonal"}, TM, [](Args& a) {
    return a.self().diagonal(a.i64(1, "offset", 0), a.i64(2, "dim1", 0), a.i64(3, "dim2", 1));
  });
  using WithInt = Tensor (*)(const Tensor&, int64_t, Caller);
  static const std::pair<const char*, WithInt> with_diagonal[] = {
      {"diag", tj::diag}, {"triu", tj::triu}, {"tril", tj::tril}};
  for (auto [name, fn] : with_diagonal)
    def({name}, TM, [fn = fn](Args& a) { return fn(a.self(), a.i64(1, "diagonal", 0), {}); });
  using Plain = Tensor (*)(const Tensor&, Caller);
  static const std::pair<const char*, Plain> plain[] = {
      {"trace", tj::trace}, {"unique", tj::unique}, {"nonzero", tj::nonzero}};
  for (auto [name, fn] : plain)
    def({name}, TM, [fn = fn](Args& a) { return fn(a.self(), {}); });
  def({"roll"}, TM, [](Args& a) {
    return roll(a.self(), a.to_ints(a.need(1, "shifts"), "shifts"), a.ints(2, "dims"));
  });
  def({"cat", "concat", "concatenate"}, kTorch,
      [](Args& a) { return cat(a.tensors(0, "tensors"), a.i64(1, "dim", 0)); });
  def({"stack"}, kTorch,
      [](Args& a) { return stack(a.tensors(0, "tensors"), a.i64(1, "dim", 0)); });
  def({"split"}, TM, [](Args& a) {
    Tensor t = a.self();
    const Value& s = a.need(1, "split_size_or_sections");
    int64_t dim = a.i64(2, "dim", 0);
    if (s.is<SeqPtr>()) return tuple_of(split(t, a.to_ints(s, "split_size_or_sections"), dim));
    return tuple_of(split(t, a.to_int(s, "split_size_or_sections"), dim));
  });
  def({"chunk"}, TM,
      [](Args& a) { return tuple_of(chunk(a.self(), a.i64(1, "chunks"), a.i64(2, "dim", 0))); });
  def({"index_select", "gather"}, TM, [](Args& a) {
    Tensor t = a.self(), idx = a.tensor(2, "index");
    int64_t dim = a.i64(1, "dim");
    return a.fn == "gather" ? gather(t, dim, idx) : index_select(t, dim, idx);
  });
  def({"scatter"}, TM, [](Args& a) {
    Tensor t = a.self(), idx = a.tensor(2, "index");
    int64_t dim = a.i64(1, "dim");
    const Value* src = a.get(3, "src");
    if (!src) src = &a.need(Args::kKw, "value");
    if (auto s = src->get<Tensor>()) return scatter(t, dim, idx, *s);
    return scatter(t, dim, idx, a.to_scalar(*src, "value"));
  });
}

// torch.linalg.NAME (only through the module, as in PyTorch).
void Tables::linalg() {
  namespace la = tj::linalg;
  auto named = [](const char* type, std::vector<Tensor> ts, std::vector<std::string> fields) {
    return make_seq(Seq::Named, std::vector<Value>(ts.begin(), ts.end()), type, std::move(fields));
  };
  auto ord = [](Args& a, size_t i) -> std::optional<la::Ord> {
    const Value* x = a.get(i, "ord");
    if (!x) return std::nullopt;
    if (auto s = x->get<std::string>()) return la::Ord(*s);
    return la::Ord(a.to_scalar(*x, "ord").to_double());
  };
  def({"torch.linalg.matmul"}, 0,
      [](Args& a) { return la::matmul(a.self(), a.tensor(1, "other")); });
  def({"torch.linalg.cross"}, 0,
      [](Args& a) { return la::cross(a.self(), a.tensor(1, "other"), a.i64(2, "dim", -1)); });
  def({"torch.linalg.solve"}, 0, [](Args& a) {
    return la::solve(a.tensor(0, "A"), a.tensor(1, "B"), a.flag(2, "left", true));
  });
  def({"torch.linalg.inv"}, 0, [](Args& a) { return la::inv(a.tensor(0, "A")); });
  def({"torch.linalg.det"}, 0, [](Args& a) { return la::det(a.tensor(0, "A")); });
  def({"torch.linalg.slogdet"}, 0, [named](Args& a) {
    auto [sign, logabsdet] = la::slogdet(a.tensor(0, "A"));
    return named("linalg_slogdet", {sign, logabsdet}, {"sign", "logabsdet"});
  });
  def({"torch.linalg.cholesky"}, 0,
      [](Args& a) { return la::cholesky(a.tensor(0, "A"), a.flag(Args::kKw, "upper", false)); });
  def({"torch.linalg.qr"}, 0, [named](Args& a) {
    const Value* m = a.get(1, "mode");
    auto [Q, R] = la::qr(a.tensor(0, "A"), m ? a.to_str(*m, "mode") : "reduced");
    return named("linalg_qr", {Q, R}, {"Q", "R"});
  });
  def({"torch.linalg.svd"}, 0, [named](Args& a) {
    auto [U, S, Vh] = la::svd(a.tensor(0, "A"), a.flag(1, "full_matrices", true));
    return named("linalg_svd", {U, S, Vh}, {"U", "S", "Vh"});
  });
  def({"torch.linalg.svdvals"}, 0, [](Args& a) { return la::svdvals(a.tensor(0, "A")); });
  auto uplo = [](Args& a) {
    const Value* u = a.get(1, "UPLO");
    return u ? a.to_str(*u, "UPLO") : std::string("L");
  };
  def({"torch.linalg.eigh"}, 0, [named, uplo](Args& a) {
    auto [L, V] = la::eigh(a.tensor(0, "A"), uplo(a));
    return named("linalg_eigh", {L, V}, {"eigenvalues", "eigenvectors"});
  });
  def({"torch.linalg.eigvalsh"}, 0,
      [uplo](Args& a) { return la::eigvalsh(a.tensor(0, "A"), uplo(a)); });
  def({"torch.linalg.lstsq"}, 0, [named](Args& a) {
    Tensor A = a.tensor(0, "A"), B = a.tensor(1, "B");
    a.get(2, "rcond"); // PyTorch's default cutoff only
    const Value* d = a.get(Args::kKw, "driver");
    auto r = la::lstsq(A, B, d ? std::optional(a.to_str(*d, "driver")) : std::nullopt);
    return named("linalg_lstsq", {r.solution, r.residuals, r.rank, r.singular_values},
                 {"solution", "residuals", "rank", "singular_values"});
  });
  def({"torch.linalg.pinv"}, 0,
      [](Args& a) { return la::pinv(a.tensor(0, "A"), a.flag(Args::kKw, "hermitian", false)); });
  def({"torch.linalg.matrix_rank"}, 0, [](Args& a) {
    return la::matrix_rank(a.tensor(0, "A"), a.flag(Args::kKw, "hermitian", false));
  });
  def({"torch.linalg.matrix_power"}, 0,
      [](Args& a) { return la::matrix_power(a.tensor(0, "A"), a.i64(1, "n")); });
  def({"torch.linalg.multi_dot"}, 0,
      [](Args& a) { return la::multi_dot(a.tensors(0, "tensors")); });
  def({"torch.linalg.tensorsolve"}, 0, [](Args& a) {
    return la::tensorsolve(a.tensor(0, "A"), a.tensor(1, "B"), a.ints(2, "dims"));
  });
  def({"torch.linalg.tensorinv"}, 0,
      [](Args& a) { return la::tensorinv(a.tensor(0, "A"), a.i64(1, "ind", 2)); });
  def({"torch.linalg.vector_norm"}, 0, [ord](Args& a) {
    return la::vector_norm(a.tensor(0, "x"), ord(a, 1).value_or(la::Ord(2)), a.ints(2, "dim"),
                           a.keepdim(3));
  });
  def({"torch.linalg.matrix_norm"}, 0, [ord](Args& a) {
    const Value* d = a.get(2, "dim");
    return la::matrix_norm(a.tensor(0, "A"), ord(a, 1).value_or(la::Ord("fro")),
                           d ? a.to_ints(*d, "dim") : std::vector<int64_t>{-2, -1}, a.keepdim(3));
  });
  def({"torch.linalg.norm"}, 0, [ord](Args& a) {
    return la::norm(a.tensor(0, "A"), ord(a, 1), a.ints(2, "dim"), a.keepdim(3));
  });
}

void Tables::reductions() {
  // sum(input, dim, keepdim, *, dtype): dim an int or a tuple; none reduces every dim.
  def({"sum", "mean"}, TM, [](Args& a) {
    Tensor t = a.self();
    const Value* dim = a.get(1, "dim");
    bool keep = a.keepdim(), sum = a.fn == "sum";
    auto dt = a.opt_dtype();
    if (!dim) return sum ? t.sum(dt) : t.mean(dt);
    auto dims = a.to_ints(*dim, "dim");
    return sum ? t.sum(dims, keep, dt) : t.mean(dims, keep, dt);
  });
  def({"cumsum", "cumprod"}, TM, [](Args& a) {
    Tensor t = a.self();
    int64_t dim = a.i64(1, "dim");
    auto dt = a.opt_dtype();
    return a.fn == "cumsum" ? t.cumsum(dim, dt) : t.cumprod(dim, dt);
  });
  def({"prod"}, TM, [](Args& a) {
    Tensor t = a.self();
    auto dim = a.opt_i64(1, "dim");
    bool keep = a.keepdim();
    auto dt = a.opt_dtype();
    return dim ? t.prod(*dim, keep, dt) : t.prod(dt);
  });
  // max(input), max(input, dim, keepdim) -> (values, indices), max(input, other),
  // and Python's max(1, 2).
  def({"max", "min"}, TM, [](Args& a) -> Value {
    bool is_max = a.fn == "max";
    const Value& x = a.need(0, "input");
    if (!x.is<Tensor>()) return py_extreme(a, is_max);
    Tensor t = *x.get<Tensor>();
    const Value* d = a.get(1, "dim");
    if (!d) return is_max ? t.max() : t.min();
    if (auto o = d->get<Tensor>()) return is_max ? t.maximum(*o) : t.minimum(*o);
    int64_t dim = a.to_int(*d, "dim");
    auto [v, i] = is_max ? t.max(dim, a.keepdim()) : t.min(dim, a.keepdim());
    return make_seq(Seq::Named, {v, i}, a.fn, {"values", "indices"});
  });
  def({"amax", "amin"}, TM, [](Args& a) {
    Tensor t = a.self();
    auto dims = a.ints(1, "dim");
    return a.fn == "amax" ? t.amax(dims, a.keepdim()) : t.amin(dims, a.keepdim());
  });
  def({"argmax", "argmin"}, TM, [](Args& a) {
    Tensor t = a.self();
    auto dim = a.opt_i64(1, "dim");
    return a.fn == "argmax" ? t.argmax(dim, a.keepdim()) : t.argmin(dim, a.keepdim());
  });
  def({"all", "any"}, TM, [](Args& a) {
    Tensor t = a.self();
    auto dim = a.opt_i64(1, "dim");
    bool all = a.fn == "all";
    if (!dim) return all ? t.all() : t.any();
    return all ? t.all(*dim, a.keepdim()) : t.any(*dim, a.keepdim());
  });
  // std(input, dim, unbiased, keepdim, *, correction), and the older std(input, unbiased).
  def({"std", "var"}, TM, [](Args& a) {
    Tensor t = a.self();
    std::vector<int64_t> dims;
    int64_t correction = 1;
    if (const Value* d = a.get(1, "dim")) {
      if (d->is<bool>())
        correction = *d->get<bool>();
      else
        dims = a.to_ints(*d, "dim");
    }
    if (a.get(2, "unbiased")) correction = a.flag(2, "unbiased", true);
    correction = a.i64(Args::kKw, "correction", correction);
    bool keep = a.keepdim(3);
    return a.fn == "std" ? t.std(dims, correction, keep) : t.var(dims, correction, keep);
  });
  def({"norm"}, TM, [](Args& a) {
    Tensor t = a.self();
    double p = 2;
    if (const Value* pv = a.get(1, "p")) {
      auto s = pv->get<std::string>();
      if (s && *s != "fro") throw Error(fmt::format("norm(): unsupported norm type {}", quote(*s)));
      if (!s) p = a.to_scalar(*pv, "p").to_double();
    }
    return t.norm(p, a.ints(2, "dim"), a.keepdim(3));
  });
  def({"logsumexp"}, TM,
      [](Args& a) { return a.self().logsumexp(a.to_ints(a.need(1, "dim"), "dim"), a.keepdim()); });
}

void Tables::tensor_methods() {
  static const std::pair<const char*, DType> casts[] = {
      {"float", kFloat32}, {"double", kFloat64}, {"half", kFloat16}, {"bfloat16", kBFloat16},
      {"int", kInt32},     {"long", kInt64},     {"short", kInt16},  {"bool", kBool},
      {"byte", kUInt8},    {"char", kInt8}};
  for (auto [name, d] : casts)
    def({name}, kMethod, [d = d](Args& a) { return a.self().to(d); });
  // to(dtype), to(device), to(device, dtype), to(other), and the keywords.
  def({"to"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    std::optional<DType> dt;
    std::optional<Device> dev;
    for (size_t i = 1; i < a.pos.size(); ++i) {
      const Value& x = a.pos[i];
      if (auto o = x.get<Tensor>())
        dt = o->dtype(), dev = o->device();
      else if (x.is<DType>() || x.is<Func>())
        dt = a.to_dtype(x, "dtype");
      else
        dev = a.to_device(x, "device");
    }
    a.seen = a.pos.size();
    if (auto d = a.opt_dtype()) dt = d;
    if (const Value* x = a.get(Args::kKw, "device")) dev = a.to_device(*x, "device");
    if (dev && dt) return t.to(*dev, *dt);
    return dev ? t.to(*dev) : dt ? t.to(*dt) : t;
  });
  def({"type"}, kMethod, [](Args& a) -> Value {
    static const char* const names[] = {"Bool", "Byte", "Char",     "Short", "Int",
                                        "Long", "Half", "BFloat16", "Float", "Double"};
    Tensor t = a.self();
    if (auto d = a.opt_dtype(1)) return t.to(*d);
    return fmt::format("torch.{}{}Tensor", t.device().is_cuda() ? "cuda." : "",
                       names[static_cast<int>(t.dtype())]);
  });
  def({"cpu"}, kMethod, [](Args& a) { return a.self().cpu(); });
  def({"cuda"}, kMethod, [](Args& a) { return a.self().cuda(); });
  def({"contiguous"}, kMethod, [](Args& a) { return a.self().contiguous(); });
  def({"clone"}, TM, [](Args& a) { return a.self().clone(); });
  def({"detach"}, TM, [](Args& a) { return a.self().detach(); });
  def({"detach_"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    return t.detach_();
  });
  def({"item"}, kMethod, [](Args& a) { return from_scalar(a.self().item()); });
  def({"tolist"}, kMethod, [](Args& a) { return tolist(a.self()); });
  def({"numel"}, TM, [](Args& a) { return a.self().numel(); });
  def({"dim", "ndimension"}, kMethod, [](Args& a) { return a.self().dim(); });
  def({"size", "stride"}, kMethod, [](Args& a) -> Value {
    Tensor t = a.self();
    bool size = a.fn == "size";
    if (auto d = a.opt_i64(1, "dim")) return size ? t.size(*d) : t.stride(*d);
    return size ? size_value(t.sizes()) : size_value(t.stride(), Seq::Tuple);
  });
  def({"storage_offset"}, kMethod, [](Args& a) { return a.self().storage_offset(); });
  def({"is_contiguous"}, kMethod, [](Args& a) { return a.self().is_contiguous(); });
  def({"is_floating_point"}, TM, [](Args& a) { return a.self().is_floating_point(); });
  def({"element_size"}, kMethod,
      [](Args& a) { return static_cast<int64_t>(itemsize(a.self().dtype())); });
  def({"data_ptr"}, kMethod, [](Args& a) {
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(a.self().data_ptr()));
  });
  def({"requires_grad_"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    return t.requires_grad_(a.flag(1, "requires_grad", true));
  });
  def({"retain_grad"}, kMethod, [](Args& a) {
    a.self().retain_grad();
    return Value();
  });
  def({"backward"}, kMethod, [](Args& a) {
    Tensor t = a.self(), g = a.opt_tensor(1, "gradient");
    std::optional<bool> retain;
    if (a.get(2, "retain_graph")) retain = a.flag(2, "retain_graph", false);
    t.backward(g, retain, a.flag(3, "create_graph", false));
    return Value();
  });
  def({"torch.autograd.grad"}, 0, [](Args& a) {
    auto outs = a.tensors(0, "outputs"), ins = a.tensors(1, "inputs");
    auto gouts = a.get(2, "grad_outputs") ? a.tensors(2, "grad_outputs") : std::vector<Tensor>();
    std::optional<bool> retain;
    if (a.get(3, "retain_graph")) retain = a.flag(3, "retain_graph", false);
    bool create = a.flag(4, "create_graph", false), unused = a.flag(5, "allow_unused", false);
    return tuple_of(autograd::grad(outs, ins, gouts, retain, create, unused));
  });
  def({"zero_"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    return t.zero_();
  });
  def({"fill_"}, kMethod, [](Args& a) {
    Tensor t = a.self();
    const Value& v = a.need(1, "value");
    if (auto vt = v.get<Tensor>()) return t.fill_(*vt);
    return t.fill_(a.to_scalar(v, "value"));
  });
  def({"Size"}, kTorch, [](Args& a) { return size_value(a.ints(0, "sizes")); });
  def({"is_tensor"}, kTorch, [](Args& a) { return a.need(0, "obj").is<Tensor>(); });
  def({"torch.cuda.is_available"}, 0, [](Args&) { return cuda::is_available(); });
  def({"torch.cuda.device_count"}, 0, [](Args&) { return int64_t{cuda::device_count()}; });
  def({"torch.cuda.synchronize"}, 0, [](Args&) {
    cuda::synchronize();
    return Value();
  });
  def({"device"}, kTorch, [](Args& a) {
    Device d = a.to_device(a.need(0, "type"), "type");
    if (auto i = a.opt_i64(1, "index"))
      d = Device(d.type(), static_cast<int>(std::clamp<int64_t>(*i, -1, 1024)));
    return d;
  });
  def({"get_default_dtype"}, kTorch, [](Args&) { return default_dtype(); });
  def({"set_default_dtype"}, kTorch, [](Args& a) {
    set_default_dtype(a.to_dtype(a.need(0, "d"), "d"));
    return Value();
  });
  def({"is_grad_enabled"}, kTorch, [](Args&) { return GradMode::is_enabled(); });
  def({"set_grad_enabled"}, kTorch, [](Args& a) {
    GradMode::set_enabled(a.flag(0, "mode", true));
    return Value();
  });
  def({"set_printoptions"}, kTorch, [](Args& a) {
    std::optional<int64_t> opt[4]; // precision, threshold, edgeitems, linewidth
    if (const Value* p = a.get(4, "profile")) {
      std::string s = a.to_str(*p, "profile");
      opt[0] = s == "short" ? 2 : 4, opt[2] = s == "short" ? 2 : 3, opt[3] = 80;
      opt[1] = s == "full" ? std::numeric_limits<int64_t>::max() : 1000;
    }
    const char* names[] = {"precision", "threshold", "edgeitems", "linewidth"};
    for (size_t i = 0; i < 4; ++i)
      if (auto v = a.opt_i64(i, names[i])) {
        // Past these, printing would not end (the threshold is bounded by kMaxNumel).
        if (*v < 0 || (i != 1 && *v > (i == 0 ? 100 : 1000000)))
          throw Error(fmt::format("set_printoptions(): {} out of range", names[i]));
        opt[i] = v;
      }
    std::optional<bool> sci;
    if (const Value* s = a.get(5, "sci_mode")) sci = truthy(*s);
    tj::set_printoptions(opt[0] ? std::optional<int>(static_cast<int>(*opt[0])) : std::nullopt,
                         opt[1], opt[2], opt[3],
                         std::optional<std::optional<bool>>(std::in_place, sci));
    return Value();
  });
}

void Tables::python() {
  def({"print"}, kPy, [](Args& a) {
    std::string sep = " ", end = "\n", line;
    if (const Value* s = a.get(Args::kKw, "sep")) sep = a.to_str(*s, "sep");
    if (const Value* e = a.get(Args::kKw, "end")) end = a.to_str(*e, "end");
    a.get(Args::kKw, "flush");
    for (size_t i = 0; i < a.pos.size(); ++i)
      line += (i ? sep : "") + repr(a.pos[i], true);
    a.seen = a.pos.size();
    *a.out += line + end;
    return Value();
  });
  def({"len"}, kPy, [](Args& a) -> Value {
    const Value& x = a.need(0, "obj");
    if (auto q = x.get<SeqPtr>()) return static_cast<int64_t>((*q)->items.size());
    if (auto s = x.get<std::string>()) return static_cast<int64_t>(s->size());
    if (auto t = x.get<Tensor>(); t && t->dim() > 0) return t->size(0);
    throw Error(x.is<Tensor>() ? "len() of a 0-d tensor"
                               : fmt::format("object of type '{}' has no len()", type_name(x)));
  });
  def({"int", "float"}, kPy, [](Args& a) -> Value {
    bool integer = a.fn == "int";
    const Value* x = a.get(0, "x");
    if (!x) return integer ? Value(int64_t{0}) : Value(0.0);
    if (auto s = x->get<std::string>()) return parse_number(*s, integer);
    if (x->is<Tensor>() && x->get<Tensor>()->numel() != 1)
      throw Error("only one element tensors can be converted to Python scalars");
    Scalar v = a.to_scalar(*x, "x");
    if (!integer) return v.to_double();
    return v.is_floating_point() ? float_to_int(v.to_double()) : v.to_int();
  });
  def({"bool"}, kPy, [](Args& a) {
    const Value* x = a.get(0, "x");
    return x && truthy(*x);
  });
  def({"str"}, kPy, [](Args& a) {
    const Value* x = a.get(0, "object");
    return x ? repr(*x, true) : std::string();
  });
  def({"list", "tuple"}, kPy, [](Args& a) {
    Seq::Kind kind = a.fn == "list" ? Seq::List : Seq::Tuple;
    const Value* x = a.get(0, "iterable");
    if (!x) return make_seq(kind, {});
    if (auto q = x->get<SeqPtr>()) return make_seq(kind, (*q)->items);
    Tensor t = a.to_tensor(*x, "iterable");
    if (t.dim() == 0) throw Error("iteration over a 0-d tensor");
    if (t.size(0) > kMaxSeqLen) throw Error("sequence too long");
    std::vector<Value> items;
    for (int64_t i = 0; i < t.size(0); ++i)
      items.emplace_back(t.select(0, i));
    return make_seq(kind, std::move(items));
  });
  // Python's abs and round on numbers, torch's on tensors.
  def({"abs"}, kTorch, [](Args& a) -> Value {
    const Value& x = a.need(0, "input");
    if (auto d = x.get<double>()) return std::fabs(*d);
    if (is_num(x)) return unary_op(num_scalar(x).to_int() < 0 ? '-' : '+', x);
    return tj::abs(a.to_tensor(x, "input"));
  });
  def({"round"}, kTorch, [](Args& a) -> Value {
    const Value& x = a.need(0, "input");
    auto d = x.get<double>();
    if (!is_num(x)) return tj::round(a.to_tensor(x, "input"));
    auto nd = a.opt_i64(1, "ndigits");
    if (!d) return num_scalar(x).to_int();
    if (!nd) return float_to_int(std::nearbyint(*d));
    if (*nd > 300 || !std::isfinite(*d)) return *d;
    double scale = std::pow(10.0, static_cast<double>(std::max<int64_t>(*nd, -300)));
    return std::nearbyint(*d * scale) / scale;
  });
  using MathFn = double (*)(double);
  static const std::pair<const char*, MathFn> math[] = {{"sqrt", [](double x) { return std::sqrt(x); }},
                                                        {"exp", [](double x) { return std::exp(x); }},
                                                        {"log", [](double x) { return std::log(x); }},
                                                        {"sin", [](double x) { return std::sin(x); }},
                                                        {"cos", [](double x) { return std::cos(x); }},
                                                        {"tan", [](double x) { return std::tan(x); }},
                                                        {"atan", [](double x) { return std::atan(x); }},
                                                        {"fabs", [](double x) { return std::fabs(x); }}};
  for (auto [name, fn] : math)
    def({std::string("math.") + name}, 0, [fn = fn](Args& a) {
      double x = a.scalar(0, "x").to_double(), r = fn(x);
      if (std::isnan(r) && !std::isnan(x)) throw Error("math domain error");
      if (std::isinf(r) && std::isfinite(x))
        throw Error(x == 0 ? "math domain error" : "math range error");
      return r;
    });
  def({"math.floor", "math.ceil"}, 0, [](Args& a) {
    const Value& x = a.need(0, "x");
    if (!x.is<double>()) return a.to_int(x, "x");
    return float_to_int(a.fn == "ceil" ? std::ceil(*x.get<double>())
                                       : std::floor(*x.get<double>()));
  });
}

// Where torch.NAME and the other modules' names lead.
std::optional<Value> module_attr(const std::string& mod, const std::string& name) {
  const Tables& tb = tables();
  auto func = [&](const std::string& key, uint8_t flag) -> std::optional<Value> {
    auto it = tb.funcs.find(key);
    if (it == tb.funcs.end() || (flag ? !(it->second.flags & flag) : it->second.flags != 0))
      return std::nullopt;
    return Value(Func{&it->second, name, {}});
  };
  if (auto it = tb.consts.find(mod + "." + name); it != tb.consts.end()) return it->second;
  if (mod == "torch") {
    if (name == "nn" || name == "cuda" || name == "autograd" || name == "linalg")
      return Value(Module{"torch." + name});
    if (auto it = tb.dtypes.find(name); it != tb.dtypes.end()) return Value(it->second);
    return func(name, kTorch);
  }
  if (mod == "torch.nn" && name == "functional") return Value(Module{"torch.nn.functional"});
  if (mod == "torch.nn.functional") return func(name, kF);
  return func(mod + "." + name, 0);
}

// ------------------------------------------------------------------ lexer

enum class Tok : uint8_t { Name, Int, Float, Str, Op, Newline, End };
struct Token {
  Tok kind;
  std::string text; // a name, an operator, a string's contents
  int line, col;
  int64_t i = 0;
  double f = 0;
};

struct Source {
  std::string_view text, file;
  [[noreturn]] void fail(int line, int col, std::string_view msg) const {
    throw LocatedError(located_message(file, text, line, col, msg));
  }
};

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

// ------------------------------------------------------------------ parser

enum class K : uint8_t {
  Const,
  Name,
  Tuple,
  List,
  Attr,
  Call,
  Index,
  Slice,
  Ellipsis,
  Unary,
  Chain,
  Compare,
  And,
  Or,
  Not,
  IfExp
};
struct Node;
using NodePtr = std::unique_ptr<Node>;
struct Node {
  K kind;
  int line, col; // a call's are its callee's name's, for the errors the call raises
  int depth = 1;
  std::string text;                    // Name, Attr: the name; Unary: the operator
  Value value;                         // Const
  std::vector<NodePtr> kids;           // operands; a Slice's absent bounds are null
  std::vector<Op> ops;                 // Chain, Compare
  std::vector<std::pair<int, int>> at; // Chain, Compare: where each operator is
  std::vector<std::string> keywords;   // Call: the names of the last keywords.size() args
};

struct Stmt {
  enum Kind : uint8_t { Expr, Assign, AugAssign, Import } kind = Expr;
  int line = 0, col = 0;
  std::vector<NodePtr> targets;
  NodePtr value;
  Op op = Op::Add;                                        // AugAssign
  std::string module;                                     // Import
  std::vector<std::pair<std::string, std::string>> names; // Import: (attribute or "", bound as)
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
    if (t.kind == Tok::Int || t.kind == Tok::Float) {
      n = make(K::Const, take());
      n->value = t.kind == Tok::Int ? Value(t.i) : Value(t.f);
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

// ------------------------------------------------------------------ evaluation

struct SliceV {
  std::optional<int64_t> start, stop, step;
};
struct EllipsisV {};
using IndexItem = std::variant<Value, SliceV, EllipsisV>;

std::vector<indexing::TensorIndex> tensor_indices(const std::vector<IndexItem>& items) {
  std::vector<indexing::TensorIndex> idx;
  for (const IndexItem& it : items) {
    const Value* v = std::get_if<Value>(&it);
    if (auto s = std::get_if<SliceV>(&it))
      idx.emplace_back(indexing::Slice(s->start, s->stop, s->step));
    else if (!v)
      idx.emplace_back(indexing::Ellipsis);
    else if (v->is<NoneV>())
      idx.emplace_back(indexing::None);
    else if (auto b = v->get<bool>())
      idx.emplace_back(*b);
    else if (auto i = v->get<int64_t>())
      idx.emplace_back(*i);
    else if (auto t = v->get<Tensor>())
      idx.emplace_back(*t);
    else if (v->is<SeqPtr>())
      idx.emplace_back(make_tensor(*v, {})); // x[[0, 2]]: advanced indexing
    else
      throw Error(fmt::format("only integers, slices (`:`), ellipsis (`...`), None and long or "
                              "byte Variables are valid indices (got {})",
                              type_name(*v)));
  }
  return idx;
}

Value seq_index(const Seq& q, const IndexItem& it) {
  auto n = static_cast<int64_t>(q.items.size());
  Seq::Kind kind = q.kind == Seq::Named ? Seq::Tuple : q.kind;
  std::string what = kind == Seq::List ? "list" : "tuple";
  if (auto s = std::get_if<SliceV>(&it)) {
    // Python's slice.indices.
    int64_t step = s->step.value_or(1), lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
    if (step == 0) throw Error("slice step cannot be zero");
    auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
      return !v ? dflt : *v < 0 ? std::max(*v + n, lower) : std::min(*v, upper);
    };
    int64_t i = clamp(s->start, step > 0 ? lower : upper),
            stop = clamp(s->stop, step > 0 ? upper : lower);
    std::vector<Value> items;
    while (step > 0 ? i < stop : i > stop) {
      items.push_back(q.items[static_cast<size_t>(i)]);
      if (__builtin_add_overflow(i, step, &i)) break; // past the end either way
    }
    return make_seq(kind, std::move(items));
  }
  auto v = std::get_if<Value>(&it);
  if (!v || !(v->is<int64_t>() || v->is<bool>()))
    throw Error(fmt::format("{} indices must be integers or slices, not {}", what,
                            v ? type_name(*v) : "ellipsis"));
  int64_t i = num_scalar(*v).to_int();
  if (i < -n || i >= n) throw Error(what + " index out of range");
  return q.items[static_cast<size_t>(i < 0 ? i + n : i)];
}

Value subscript(const Value& obj, const std::vector<IndexItem>& items, bool multi) {
  if (auto t = obj.get<Tensor>()) {
    // A tuple held in a variable indexes like one written out: x[idx] with idx = (0, 1).
    auto v = multi ? nullptr : std::get_if<Value>(&items[0]);
    if (auto q = v ? v->get<SeqPtr>() : nullptr; q && (*q)->kind != Seq::List)
      return t->index(
          tensor_indices(std::vector<IndexItem>((*q)->items.begin(), (*q)->items.end())));
    return t->index(tensor_indices(items));
  }
  if (auto q = obj.get<SeqPtr>()) {
    if (multi) throw Error("tuple indices must be integers or slices, not tuple");
    return seq_index(**q, items[0]);
  }
  throw Error(fmt::format("'{}' object is not subscriptable", type_name(obj)));
}

void set_item(const Value& obj, const std::vector<IndexItem>& items, const Value& v) {
  auto t = obj.get<Tensor>();
  if (!t) throw Error(fmt::format("'{}' object does not support item assignment", type_name(obj)));
  Tensor target = *t;
  auto idx = tensor_indices(items);
  if (auto vt = v.get<Tensor>())
    target.index_put_(idx, *vt);
  else if (is_num(v))
    target.index_put_(idx, num_scalar(v));
  else if (v.is<SeqPtr>())
    target.index_put_(idx, make_tensor(v, TensorOptions(target.dtype())));
  else
    throw Error(fmt::format("can't assign a {} to a Tensor", type_name(v)));
}

Value attribute(const Value& obj, const std::string& name) {
  const Tables& tb = tables();
  if (auto m = obj.get<Module>()) {
    if (auto v = module_attr(m->name, name)) return *v;
    throw Error(fmt::format("module '{}' has no attribute '{}'", m->name, name));
  }
  if (auto t = obj.get<Tensor>()) {
    if (auto it = tb.attrs.find(name); it != tb.attrs.end()) return it->second(*t);
    if (auto it = tb.methods.find(name); it != tb.methods.end()) return Func{&it->second, name, *t};
  } else if (auto q = obj.get<SeqPtr>(); q && (*q)->kind == Seq::Named) {
    for (size_t i = 0; i < (*q)->fields.size(); ++i)
      if ((*q)->fields[i] == name) return (*q)->items[i];
  } else if (auto d = obj.get<Device>(); d && (name == "type" || name == "index")) {
    if (name == "type") return d->is_cpu() ? "cpu" : "cuda";
    return d->index() < 0 ? Value() : Value(int64_t{d->index()});
  } else if (auto dt = obj.get<DType>(); dt && name == "is_floating_point") {
    return is_floating_point(*dt);
  }
  throw Error(fmt::format("'{}' object has no attribute '{}'", type_name(obj), name));
}

void set_attr(const Value& obj, const std::string& name, const Value& v) {
  auto t = obj.get<Tensor>();
  if (!t) throw Error(fmt::format("'{}' object attribute '{}' is read-only", type_name(obj), name));
  Tensor x = *t;
  if (name == "requires_grad") {
    x.requires_grad_(truthy(v));
  } else if (name == "grad") {
    if (!v.is<NoneV>() && !v.is<Tensor>())
      throw Error("assigned grad expected to be a Tensor or None but got grad of type " +
                  type_name(v));
    x.set_grad(v.is<Tensor>() ? *v.get<Tensor>() : Tensor());
  } else {
    throw Error(fmt::format("attribute '{}' of 'Tensor' objects is not writable", name));
  }
}

std::vector<Value> unpack(const Value& v, size_t n) {
  std::vector<Value> items;
  size_t m = 0;
  if (auto q = v.get<SeqPtr>()) {
    items = (*q)->items, m = items.size();
  } else if (auto t = v.get<Tensor>(); t && t->dim() > 0) {
    m = static_cast<size_t>(t->size(0));
    for (size_t i = 0; m == n && i < m; ++i)
      items.emplace_back(t->select(0, static_cast<int64_t>(i)));
  } else {
    throw Error(t ? std::string("iteration over a 0-d tensor")
                  : fmt::format("cannot unpack non-iterable {} object", type_name(v)));
  }
  if (m > n) throw Error(fmt::format("too many values to unpack (expected {})", n));
  if (m < n) throw Error(fmt::format("not enough values to unpack (expected {}, got {})", n, m));
  return items;
}

// The value of the last statement, as run_expr reports it.
void set_result(ExprResult& r, const Value& v, const std::string& base) {
  r.names.clear(), r.tensors.clear();
  auto q = v.get<SeqPtr>();
  const std::vector<Value> one = {v}, &items = q ? (*q)->items : one;
  if (items.empty() ||
      !std::all_of(items.begin(), items.end(), [](auto& x) { return x.template is<Tensor>(); }))
    return;
  for (size_t i = 0; i < items.size(); ++i) {
    r.names.push_back(q ? base + std::to_string(i) : base);
    r.tensors.push_back(*items[i].get<Tensor>());
  }
}

// Settings a program may change are restored after it: each run is a program of its own.
class SettingsGuard {
public:
  SettingsGuard()
      : print_(get_printoptions()), dtype_(default_dtype()), grad_(GradMode::is_enabled()) {}
  ~SettingsGuard() {
    tj::set_printoptions(print_.precision, print_.threshold, print_.edgeitems, print_.linewidth,
                         std::optional<std::optional<bool>>(std::in_place, print_.sci_mode));
    set_default_dtype(dtype_);
    GradMode::set_enabled(grad_);
  }
  SettingsGuard(const SettingsGuard&) = delete;
  SettingsGuard& operator=(const SettingsGuard&) = delete;

private:
  PrintOptions print_;
  DType dtype_;
  bool grad_;
};

class Interp {
public:
  Interp(const Source& src, bool echo, std::ostream* live) : src_(src), echo_(echo), live_(live) {}

  ExprResult run(const std::vector<Stmt>& program) {
    ExprResult r;
    try {
      for (size_t i = 0; i < program.size(); ++i) {
        exec(program[i], i + 1 == program.size() ? &r : nullptr);
        pass_on();
      }
    } catch (...) {
      pass_on(); // what was printed before the error, as Python shows it
      throw;
    }
    r.printed = std::move(out_);
    return r;
  }

private:
  const Source& src_;
  bool echo_;
  std::ostream* live_;
  std::unordered_map<std::string, Value> env_;
  std::string out_;

  void pass_on() {
    if (!live_) return;
    *live_ << out_;
    live_->flush();
    out_.clear();
  }

  // The site a call or an operator of the program builds its tensors at, "<expr>:1:9 (softmax)",
  // as a C++ program's lines are: dumps and errors computing them name it. Nodes keep sites as
  // long as they live, so the texts are kept for the process.
  const char* site_at(int line, int col, std::string_view what) const {
    static std::mutex mu;
    static auto* texts = new std::set<std::string, std::less<>>;
    std::string text = fmt::format("{}:{}:{} ({})", src_.file, line, col, what);
    std::lock_guard lock(mu);
    return texts->insert(std::move(text)).first->c_str();
  }

  // Runs f, locating at (line, col) the errors it raises that carry no location yet.
  template <typename F> auto at(int line, int col, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const LocatedError&) {
      throw;
    } catch (const std::exception& e) {
      src_.fail(line, col, e.what());
    }
  }
  template <typename F> auto at(const Node& n, F&& f) -> decltype(f()) {
    return at(n.line, n.col, std::forward<F>(f));
  }

  Value lookup(const Node& n) const {
    if (auto it = env_.find(n.text); it != env_.end()) return it->second;
    const Tables& tb = tables();
    if (n.text == "torch" || n.text == "math") return Module{n.text};
    if (n.text == "F") return Module{"torch.nn.functional"};
    if (auto it = tb.funcs.find(n.text); it != tb.funcs.end() && it->second.flags)
      return Func{&it->second, n.text, {}};
    if (auto it = tb.dtypes.find(n.text); it != tb.dtypes.end()) return it->second;
    src_.fail(n.line, n.col, fmt::format("name '{}' is not defined", n.text));
  }

  Value call(const Value& callee, std::vector<Value> pos,
             std::vector<std::pair<std::string, Value>> kw) {
    auto f = callee.get<Func>();
    if (!f) throw Error(fmt::format("'{}' object is not callable", type_name(callee)));
    Args a;
    a.fn = f->name, a.out = &out_;
    if (f->self.defined()) pos.insert(pos.begin(), f->self);
    a.pos = std::move(pos);
    a.used.assign(kw.size(), false);
    a.kw = std::move(kw);
    Value r = f->fn->fn(a);
    a.finish();
    return r;
  }

  std::vector<IndexItem> index_items(const Node& n, bool& multi) {
    auto one = [&](const Node& k) -> IndexItem {
      if (k.kind == K::Ellipsis) return EllipsisV{};
      if (k.kind != K::Slice) return eval(k);
      SliceV s;
      std::optional<int64_t>* parts[] = {&s.start, &s.stop, &s.step};
      for (size_t i = 0; i < 3; ++i) {
        Value v = k.kids[i] ? eval(*k.kids[i]) : Value();
        if (v.is<NoneV>()) continue;
        *parts[i] = at(*k.kids[i], [&] {
          auto t = v.get<Tensor>();
          if (v.is<int64_t>() || v.is<bool>() || (t && t->numel() == 1 && is_integral(t->dtype())))
            return t ? t->item().to_int() : num_scalar(v).to_int();
          throw Error("slice indices must be integers or None or have an __index__ method");
        });
      }
      return s;
    };
    std::vector<IndexItem> items;
    multi = n.kind == K::Tuple;
    if (!multi) items.push_back(one(n));
    for (size_t i = 0; multi && i < n.kids.size(); ++i)
      items.push_back(one(*n.kids[i]));
    return items;
  }

  // Every tensor a program makes is checked against kMaxNumel: views and
  // broadcasts could otherwise ask the library for any amount of memory.
  static Value checked(Value v) {
    if (auto t = v.get<Tensor>(); t && (t->numel() > kMaxNumel || t->sizes().size() > kMaxDims))
      check_numel(t->sizes());
    return v;
  }

  Value eval(const Node& n) {
    switch (n.kind) {
    case K::Const:
      return n.value;
    case K::Name:
      return lookup(n);
    case K::Tuple:
    case K::List: {
      std::vector<Value> items;
      for (const NodePtr& k : n.kids)
        items.push_back(eval(*k));
      Seq::Kind kind = n.kind == K::Tuple ? Seq::Tuple : Seq::List;
      return at(n, [&] { return make_seq(kind, std::move(items)); });
    }
    case K::Attr: {
      Value obj = eval(*n.kids[0]);
      tj::detail::CallSite site(site_at(n.line, n.col, n.text));
      return at(n, [&] { return checked(attribute(obj, n.text)); });
    }
    case K::Call: {
      Value f = eval(*n.kids[0]);
      size_t npos = n.kids.size() - 1 - n.keywords.size();
      std::vector<Value> pos;
      std::vector<std::pair<std::string, Value>> kw;
      for (size_t i = 1; i < n.kids.size(); ++i) {
        if (i <= npos)
          pos.push_back(eval(*n.kids[i]));
        else
          kw.emplace_back(n.keywords[i - 1 - npos], eval(*n.kids[i]));
      }
      const Func* fn = f.get<Func>();
      tj::detail::CallSite site(fn ? site_at(n.line, n.col, fn->name) : nullptr);
      return at(n, [&] { return checked(call(f, std::move(pos), std::move(kw))); });
    }
    case K::Index: {
      Value obj = eval(*n.kids[0]);
      bool multi = false;
      auto items = index_items(*n.kids[1], multi);
      tj::detail::CallSite site(site_at(n.line, n.col, "[]"));
      return at(n, [&] { return checked(subscript(obj, items, multi)); });
    }
    case K::Unary: {
      Value x = eval(*n.kids[0]);
      tj::detail::CallSite site(site_at(n.line, n.col, n.text));
      return at(n, [&] { return unary_op(n.text[0], x); });
    }
    case K::Chain: {
      Value v = eval(*n.kids[0]);
      for (size_t i = 0; i < n.ops.size(); ++i) {
        Value rhs = eval(*n.kids[i + 1]);
        tj::detail::CallSite site(site_at(n.at[i].first, n.at[i].second, op_text(n.ops[i])));
        v = at(n.at[i].first, n.at[i].second, [&] { return checked(binary_op(n.ops[i], v, rhs)); });
      }
      return v;
    }
    case K::Compare: {
      // Python's chains: a < b < c is a < b and b < c, with b evaluated once.
      Value lhs = eval(*n.kids[0]);
      for (size_t i = 0;; ++i) {
        Value rhs = eval(*n.kids[i + 1]);
        auto [line, col] = n.at[i];
        tj::detail::CallSite site(site_at(line, col, op_text(n.ops[i])));
        Value r = at(line, col, [&] { return checked(binary_op(n.ops[i], lhs, rhs)); });
        if (i + 1 == n.ops.size() || !at(line, col, [&] { return truthy(r); })) return r;
        lhs = std::move(rhs);
      }
    }
    case K::And:
    case K::Or: {
      Value v = eval(*n.kids[0]);
      for (size_t i = 1; i < n.kids.size(); ++i) {
        if (at(n, [&] { return truthy(v); }) == (n.kind == K::Or)) return v;
        v = eval(*n.kids[i]);
      }
      return v;
    }
    case K::Not: {
      Value x = eval(*n.kids[0]);
      return !at(n, [&] { return truthy(x); });
    }
    case K::IfExp: {
      Value c = eval(*n.kids[0]);
      return at(n, [&] { return truthy(c); }) ? eval(*n.kids[1]) : eval(*n.kids[2]);
    }
    case K::Slice:
    case K::Ellipsis:
      break;
    }
    src_.fail(n.line, n.col, "slices and '...' are only allowed in subscripts");
  }

  void assign(const Node& t, const Value& v) {
    if (t.kind == K::Name) {
      env_[t.text] = v;
    } else if (t.kind == K::Index) {
      Value obj = eval(*t.kids[0]);
      bool multi = false;
      auto items = index_items(*t.kids[1], multi);
      tj::detail::CallSite site(site_at(t.line, t.col, "[]="));
      at(t, [&] { set_item(obj, items, v); });
    } else if (t.kind == K::Attr) {
      Value obj = eval(*t.kids[0]);
      at(t, [&] { set_attr(obj, t.text, v); });
    } else {
      auto items = at(t, [&] { return unpack(v, t.kids.size()); });
      for (size_t i = 0; i < items.size(); ++i)
        assign(*t.kids[i], items[i]);
    }
  }

  // x op= y: in place on a tensor (but @=), as Python's operators do.
  void augment(const Stmt& s) {
    const Node& t = *s.targets[0];
    Value obj, rhs;
    std::vector<IndexItem> items;
    bool multi = false, view = true;
    auto update = [&](const Value& cur) {
      tj::detail::CallSite site(site_at(s.line, s.col, std::string(op_text(s.op)) + "="));
      return at(s.line, s.col, [&] {
        auto x = cur.get<Tensor>();
        if (!x || !view || s.op == Op::MatMul) return checked(binary_op(s.op, cur, rhs));
        Tensor out = *x;
        return Value(inplace_value(out, s.op, rhs));
      });
    };
    if (t.kind == K::Name) {
      Value cur = lookup(t);
      rhs = eval(*s.value);
      env_[t.text] = update(cur);
      return;
    }
    obj = eval(*t.kids[0]);
    if (t.kind == K::Index) {
      items = index_items(*t.kids[1], multi);
      // A view is updated through itself; a copy (advanced indexing) is written back.
      view = std::all_of(items.begin(), items.end(), [](const IndexItem& it) {
        auto v = std::get_if<Value>(&it);
        return !v || v->is<NoneV>() || v->is<int64_t>();
      });
    }
    Value cur = [&] {
      tj::detail::CallSite site(site_at(t.line, t.col, t.kind == K::Index ? "[]" : t.text));
      return at(t, [&] {
        return t.kind == K::Index ? subscript(obj, items, multi) : attribute(obj, t.text);
      });
    }();
    rhs = eval(*s.value);
    Value next = update(cur);
    if (t.kind == K::Attr)
      at(t, [&] { set_attr(obj, t.text, next); });
    else if (!view) {
      tj::detail::CallSite site(site_at(t.line, t.col, "[]="));
      at(t, [&] { set_item(obj, items, next); });
    }
  }

  void run_import(const Stmt& s) {
    static const char* const known[] = {"torch",      "torch.nn",     "torch.nn.functional",
                                        "torch.cuda", "torch.linalg", "torch.autograd",
                                        "math"};
    if (std::find(std::begin(known), std::end(known), s.module) == std::end(known))
      src_.fail(s.line, s.col, fmt::format("No module named '{}'", s.module));
    for (const auto& [attr, as] : s.names) {
      std::string root = s.module.substr(0, s.module.find('.'));
      auto v = attr.empty() ? std::optional<Value>(Module{as.empty() ? root : s.module})
                            : module_attr(s.module, attr);
      if (!v)
        src_.fail(s.line, s.col, fmt::format("cannot import name '{}' from '{}'", attr, s.module));
      env_[as.empty() ? root : as] = *v;
    }
  }

  void exec(const Stmt& s, ExprResult* last) {
    if (s.kind == Stmt::Import) return run_import(s);
    if (s.kind == Stmt::AugAssign) {
      augment(s);
      if (last && s.targets[0]->kind == K::Name)
        set_result(*last, env_[s.targets[0]->text], s.targets[0]->text);
      return;
    }
    Value v = eval(*s.value);
    if (s.kind == Stmt::Expr) {
      if (echo_ && !v.is<NoneV>()) out_ += at(s.line, s.col, [&] { return repr(v); }) + "\n";
      if (last) set_result(*last, v, s.value->kind == K::Name ? s.value->text : "out");
      return;
    }
    for (const NodePtr& t : s.targets)
      assign(*t, v);
    const Node& t = *s.targets[0];
    if (!last || (t.kind != K::Name && t.kind != K::Tuple && t.kind != K::List)) return;
    if (t.kind == K::Name) return set_result(*last, v, t.text);
    // a, b = ...: each tensor under its own name.
    for (const NodePtr& k : t.kids) {
      auto it = k->kind == K::Name ? env_.find(k->text) : env_.end();
      if (it == env_.end() || !it->second.is<Tensor>()) return set_result(*last, Value(), "");
      last->names.push_back(k->text);
      last->tensors.push_back(*it->second.get<Tensor>());
    }
  }
};

} // namespace

ExprResult run_expr(std::string_view source, bool echo, std::string_view filename,
                    std::ostream* live) {
  Source src{source, filename};
  std::vector<Stmt> program = Parser(src).program();
  SettingsGuard settings;
  return Interp(src, echo, live).run(program);
}

} // namespace tj::tjc
