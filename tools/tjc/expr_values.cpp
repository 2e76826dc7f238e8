// tjc's values (Python's None, numbers, strings, sequences; tensors, dtypes, devices) and the
// operators on them: Python's rules for numbers, PyTorch's for tensors.
#include "tools/tjc/expr_internal.h"

namespace tj::tjc {

Value make_seq(Seq::Kind kind, std::vector<Value> items, std::string name,
               std::vector<std::string> fields) {
  int depth = 1;
  int64_t size = static_cast<int64_t>(items.size());
  for (const Value& x : items)
    if (auto s = x.get<SeqPtr>()) depth = std::max(depth, (*s)->depth + 1), size += (*s)->size;
  if (depth > kMaxDepth) throw Error("value nested too deeply");
  if (size > kMaxSeqLen) throw Error("sequence too long");
  return SeqPtr(std::make_shared<const Seq>(
      Seq{kind, std::move(items), std::move(name), std::move(fields), depth, size}));
}
Value size_value(const std::vector<int64_t>& dims, Seq::Kind kind) {
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
      "NoneType",    "bool",         "int",    "float",  "str",
      "torch.dtype", "torch.device", "",       "Tensor", "builtin_function_or_method",
      "module",      "object",       "complex"};
  return names[x.v.index()];
}

bool is_num(const Value& x) {
  return x.is<bool>() || x.is<int64_t>() || x.is<double>() || x.is<std::complex<double>>();
}
Scalar num_scalar(const Value& x) {
  if (auto b = x.get<bool>()) return Scalar(*b);
  if (auto i = x.get<int64_t>()) return Scalar(*i);
  if (auto z = x.get<std::complex<double>>()) return Scalar(*z);
  return Scalar(*x.get<double>());
}
Value from_scalar(const Scalar& s) {
  if (s.is_bool()) return s.to_bool();
  if (s.is_integral()) return s.to_int();
  if (s.is_complex()) return s.to_complex();
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
std::string repr(const Value& x, bool str) {
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

const char* op_text(Op op) {
  static const char* const text[] = {"+", "-",  "*",  "/", "//", "%", "**", "@",  "&",     "|",
                                     "^", "==", "!=", "<", "<=", ">", ">=", "is", "is not"};
  return text[static_cast<int>(op)];
}

namespace {
bool is_compare(Op op) { return op >= Op::Eq && op <= Op::Ge; }
template <typename T> bool compare(Op op, T x, T y) {
  const bool r[] = {x == y, x != y, (x < y), x <= y, (x > y), x >= y};
  return r[static_cast<int>(op) - static_cast<int>(Op::Eq)];
}
} // namespace

[[noreturn]] void unsupported(Op op, const Value& a, const Value& b) {
  if (is_compare(op))
    throw Error(fmt::format("'{}' not supported between instances of '{}' and '{}'", op_text(op),
                            type_name(a), type_name(b)));
  throw Error(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op_text(op),
                          type_name(a), type_name(b)));
}

namespace {

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

// Python's complex power: by squarings for an integer exponent up to 100 in magnitude (so that
// 1j**2 is exactly -1), else through the polar form.
std::complex<double> complex_pow(std::complex<double> x, std::complex<double> y) {
  if (y == 0.0) return 1.0;
  if (x == 0.0) {
    if (y.imag() != 0 || y.real() < 0) throw Error("0.0 to a negative or complex power");
    return 0.0;
  }
  if (y.imag() == 0 && y.real() == std::floor(y.real()) && std::fabs(y.real()) <= 100) {
    auto n = static_cast<int64_t>(std::fabs(y.real()));
    std::complex<double> r = 1.0, p = x;
    for (; n > 0; n >>= 1) {
      if (n & 1) r *= p;
      p *= p;
    }
    if (y.real() < 0) {
      if (r == 0.0) throw Error("complex division by zero");
      r = 1.0 / r;
    }
    return r;
  }
  const double magnitude = std::hypot(x.real(), x.imag()), angle = std::atan2(x.imag(), x.real());
  double len = std::pow(magnitude, y.real()), phase = angle * y.real();
  if (y.imag() != 0) {
    len /= std::exp(angle * y.imag());
    phase += y.imag() * std::log(magnitude);
  }
  return {len * std::cos(phase), len * std::sin(phase)};
}

// Python's arithmetic on complex numbers (and a real number beside one).
Value complex_binary(Op op, const Value& a, const Value& b) {
  const std::complex<double> x = num_scalar(a).to_complex(), y = num_scalar(b).to_complex();
  switch (op) {
  case Op::Eq:
    return x == y;
  case Op::Ne:
    return x != y;
  case Op::Add:
    return x + y;
  case Op::Sub:
    return x - y;
  case Op::Mul:
    return x * y;
  case Op::Div:
    if (y == 0.0) throw Error("complex division by zero");
    return x / y;
  case Op::Pow:
    return complex_pow(x, y);
  default:
    unsupported(op, a, b);
  }
}

// Python's arithmetic on bools, ints, floats and complex numbers.
Value num_binary(Op op, const Value& a, const Value& b) {
  if (a.is<std::complex<double>>() || b.is<std::complex<double>>()) return complex_binary(op, a, b);
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

} // namespace

Tensor& inplace_value(Tensor& a, Op op, const Value& b, const Scalar& alpha) {
  if (auto t = b.get<Tensor>()) return inplace_op(a, op, *t, alpha);
  if (!is_num(b)) unsupported(op, a, b);
  return inplace_op(a, op, num_scalar(b), alpha);
}

namespace {

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

} // namespace

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
  if (auto z = x.get<std::complex<double>>(); z && op != '~') return op == '-' ? -*z : *z;
  throw Error(fmt::format("bad operand type for unary {}: '{}'", op, type_name(x)));
}

} // namespace tj::tjc
