// What the parts of tjc's expression language share (expr.cpp runs programs): values and the
// operators on them (expr_values.cpp), call arguments and the builtin tables
// (expr_builtins.cpp), tokens and the syntax tree (expr_parse.cpp). Private to tools/tjc.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <complex>
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

#include "tools/tjc/expr.h"

namespace tj::tjc {

inline constexpr int kMaxDepth = 200;                   // brackets, operators, postfixes, values
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 16; // elements of a tuple or list, nested too
inline constexpr int64_t kMaxNumel = int64_t{1} << 24;  // elements of a tensor
inline constexpr size_t kMaxDims = 64;                  // dimensions of a tensor

// An error that already carries its location: passed on unchanged.
class LocatedError : public Error {
public:
  using Error::Error;
};

// ------------------------------------------------------------------ values (expr_values.cpp)

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
               Module, Opaque, std::complex<double>>
      v;
  Value() = default;
  Value(bool b) : v(b) {}
  Value(int64_t i) : v(i) {}
  Value(double d) : v(d) {}
  Value(std::complex<double> z) : v(z) {}
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
               std::vector<std::string> fields = {});
Value size_value(const std::vector<int64_t>& dims, Seq::Kind kind = Seq::Size);
Value tuple_of(const std::vector<Tensor>& ts);
// Python's type(x).__name__.
std::string type_name(const Value& x);
bool is_num(const Value& x);
Scalar num_scalar(const Value& x);
Value from_scalar(const Scalar& s);
[[noreturn]] void int_overflow();
int64_t float_to_int(double d);
// Refuses sizes past kMaxNumel, before the library multiplies them.
void check_numel(const std::vector<int64_t>& sizes);
// The broadcast of two shapes, near enough for check_numel.
Shape broadcast(Shape a, const Shape& b);
// Python's repr of a str.
std::string quote(const std::string& s);
// Python's repr(x), or with `str` its str(x) (what print shows).
std::string repr(const Value& x, bool str = false);
bool truthy(const Value& x);

// ------------------------------------------------------------------ operators (expr_values.cpp)

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
const char* op_text(Op op);
// Python's TypeError for an operator its operands do not support.
[[noreturn]] void unsupported(Op op, const Value& a, const Value& b);
Value binary_op(Op op, const Value& a, const Value& b);
Value unary_op(char op, const Value& x);
// a OP= b in place on a tensor (what Python's x += y calls).
Tensor& inplace_value(Tensor& a, Op op, const Value& b, const Scalar& alpha = 1);

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

// ------------------------------------------------------------------ builtins (expr_builtins.cpp)

using Fn = std::function<Value(Args&)>;
enum Flag : uint8_t {
  kTorch = 1,  // torch.NAME and bare NAME
  kF = 2,      // torch.nn.functional.NAME and bare NAME
  kPy = 4,     // Python's builtin: bare NAME only
  kMethod = 8, // tensor.NAME(...)
};
inline constexpr uint8_t TM = kTorch | kMethod;
struct Builtin {
  Fn fn;
  uint8_t flags; // 0: only through its module ("math.sqrt")
};

TensorOptions like(const Tensor& t);
// torch.tensor(data): nested sequences of numbers, rectangular.
Tensor make_tensor(const Value& data, TensorOptions o);

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
const Tables& tables();
// Where torch.NAME and the other modules' names lead.
std::optional<Value> module_attr(const std::string& mod, const std::string& name);

// ------------------------------------------------------------------ syntax (expr_parse.cpp)

enum class Tok : uint8_t { Name, Int, Float, Imag, Str, Op, Newline, End };
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

// The statements of a program, or a located syntax error.
std::vector<Stmt> parse_program(const Source& src);

} // namespace tj::tjc
