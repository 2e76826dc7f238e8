// tjc's builtins: the library's functions, tensor methods and attributes, and Python's own, by
// the names and arguments PyTorch and Python give them.
#include "tools/tjc/expr_internal.h"

namespace tj::tjc {

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

namespace {

// torch.tensor(data): nested sequences of numbers, rectangular.
struct Flat {
  std::vector<double> f, im; // im: the imaginary parts
  std::vector<int64_t> i;
  bool any_complex = false, any_float = false, any_int = false;
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
  out.any_complex |= s.is_complex();
  out.any_float |= s.is_floating_point();
  out.any_int |= s.is_integral();
  out.f.push_back(s.to_double());
  out.im.push_back(s.imag());
  out.i.push_back(s.is_floating_point() || s.is_complex() ? 0 : s.to_int());
}

} // namespace

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
  if (flat.any_complex) { // complex64 by default (float32's), as torch.tensor
    const DType t = o.dtype_or(default_dtype() == kFloat64 ? kComplex128 : kComplex64);
    if (!is_complex(t)) throw Error("can't convert complex to float");
    const TensorOptions parts = TensorOptions(kFloat64).device(o.device());
    Tensor z = tj::complex(tj::tensor(flat.f, shape, parts), tj::tensor(flat.im, shape, parts));
    z = z.to(t);
    return o.requires_grad() ? z.requires_grad_() : z;
  }
  bool bools = !flat.any_float && !flat.any_int && !flat.f.empty();
  o = o.dtype(o.dtype_or(flat.any_float ? default_dtype()
                         : flat.any_int ? kInt64
                         : bools        ? kBool
                                        : default_dtype()));
  // torch.tensor's checked conversion of each Python number into an integer dtype (c10's
  // overflows: an int into an unsigned type may also be negative down to minus its maximum; a
  // float must lie in the type's range, NaN nowhere). Data with a float in it is read as floats.
  if (const DType t = o.dtype_or(kFloat32); is_integral(t)) {
    const int bits = static_cast<int>(itemsize(t)) * 8;
    const double hi = t == kUInt8 ? 255.0 : std::ldexp(1.0, bits - 1) - 1;
    const double lo = t == kUInt8 ? 0.0 : -std::ldexp(1.0, bits - 1);
    auto fits = [&](double v) { return v >= lo && v <= hi; };
    const bool ok = flat.any_float ? std::all_of(flat.f.begin(), flat.f.end(), fits)
                                   : std::all_of(flat.i.begin(), flat.i.end(), [&](int64_t v) {
                                       return t == kInt64 || fits(static_cast<double>(v)) ||
                                              (t == kUInt8 && v >= -255 && v < 0);
                                     });
    if (!ok)
      throw Error(fmt::format("value cannot be converted to type {} without overflow",
                              short_dtype_name(t)));
  }
  if (flat.any_float) return tj::tensor(flat.f, shape, o);
  if (bools) return tj::tensor(std::vector<bool>(flat.i.begin(), flat.i.end()), shape, o);
  return tj::tensor(flat.i, shape, o);
}

namespace {

Value tolist(const Tensor& t) {
  if (t.numel() > kMaxSeqLen) throw Error("sequence too long");
  bool fl = t.is_floating_point(), bo = t.dtype() == kBool, cx = t.is_complex();
  std::vector<double> f = fl ? t.to_vector<double>() : std::vector<double>();
  std::vector<std::complex<double>> z =
      cx ? t.to_vector<std::complex<double>>() : std::vector<std::complex<double>>();
  std::vector<int64_t> i = fl || cx ? std::vector<int64_t>() : t.to_vector<int64_t>();
  size_t k = 0;
  std::function<Value(size_t)> build = [&](size_t dim) -> Value {
    if (dim == t.sizes().size())
      return cx ? Value(z[k++]) : fl ? Value(f[k++]) : bo ? Value(i[k++] != 0) : Value(i[k++]);
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

} // namespace

const Tables& tables() {
  static const Tables t;
  return t;
}

Tables::Tables() {
  dtypes = {{"float32", kFloat32},
            {"float", kFloat32},
            {"float64", kFloat64},
            {"double", kFloat64},
            {"float16", kFloat16},
            {"half", kFloat16},
            {"bfloat16", kBFloat16},
            {"uint8", kUInt8},
            {"int8", kInt8},
            {"int16", kInt16},
            {"short", kInt16},
            {"int32", kInt32},
            {"int", kInt32},
            {"int64", kInt64},
            {"long", kInt64},
            {"bool", kBool},
            {"complex64", kComplex64},
            {"cfloat", kComplex64},
            {"complex128", kComplex128},
            {"cdouble", kComplex128}};
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
           {"mH", [](const Tensor& t) { return Value(t.mH()); }},
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
  // The functions of one tensor (tensorjit/elementwise_functions.def), with their in-place methods.
#define TJ_UNARY_INPLACE_0(name) nullptr
#define TJ_UNARY_INPLACE_1(name) &Tensor::name##_
#define TJ_UNARY_FN(name, has_inplace) {#name, tj::name, TJ_UNARY_INPLACE_##has_inplace(name)},
#define TJ_MATH_FN(name, op, grad_fn) {#name, tj::name, &Tensor::name##_},
  static const Unary unary[] = {
#include "tensorjit/elementwise_functions.def"
      {"negative", tj::neg, &Tensor::neg_}};
#undef TJ_UNARY_INPLACE_1
#undef TJ_UNARY_INPLACE_0
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
      // div(input, other, *, rounding_mode=None): 'trunc' or 'floor'.
      if (const Value* mode = op == Op::Div ? a.get(Args::kKw, "rounding_mode") : nullptr;
          mode && !mode->is<NoneV>()) {
        const std::string m = a.to_str(*mode, "rounding_mode");
        Tensor t = a.to_tensor(x, "input");
        if (auto o = y.get<Tensor>()) return t.div(*o, m);
        return t.div(a.to_scalar(y, other), m);
      }
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
      {"logaddexp", tj::logaddexp},
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints) {#name, tj::name},
#include "tensorjit/elementwise_functions.def"
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
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints) {#name "_", &Tensor::name##_},
#include "tensorjit/elementwise_functions.def"
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
  // Losses: (input, target, ..., reduction='mean') as torch.nn.functional's.
  auto reduction = [](Args& a, size_t i) {
    const Value* r = a.get(i, "reduction");
    return r ? a.to_str(*r, "reduction") : std::string("mean");
  };
  // The arguments the library does not take (size_average and reduce, deprecated) must be None
  // where given, rather than ignored.
  auto unsupported = [](Args& a, std::initializer_list<std::pair<size_t, const char*>> args) {
    for (const auto& [i, name] : args)
      if (a.get(i, name))
        throw Error(fmt::format("{}(): argument '{}' is not supported", a.fn, name));
  };
  // Positions as torch's signatures (size_average and reduce, deprecated, stay unset).
  def({"mse_loss", "l1_loss"}, kF, [reduction, unsupported](Args& a) {
    Tensor x = a.self(), y = a.tensor(1, "target");
    unsupported(a, {{2, "size_average"}, {3, "reduce"}});
    const std::string r = reduction(a, 4);
    return a.fn == "mse_loss" ? nn::functional::mse_loss(x, y, r)
                              : nn::functional::l1_loss(x, y, r);
  });
  def({"binary_cross_entropy"}, kF, [reduction, unsupported](Args& a) {
    Tensor x = a.self(), y = a.tensor(1, "target");
    unsupported(a, {{3, "size_average"}, {4, "reduce"}});
    return nn::functional::binary_cross_entropy(x, y, reduction(a, 5), a.opt_tensor(2, "weight"));
  });
  def({"smooth_l1_loss"}, kF, [reduction, unsupported](Args& a) {
    unsupported(a, {{2, "size_average"}, {3, "reduce"}});
    return nn::functional::smooth_l1_loss(a.self(), a.tensor(1, "target"), reduction(a, 4),
                                          a.f64(5, "beta", 1.0));
  });
  def({"huber_loss"}, kF, [reduction](Args& a) {
    return nn::functional::huber_loss(a.self(), a.tensor(1, "target"), reduction(a, 2),
                                      a.f64(3, "delta", 1.0));
  });
  def({"binary_cross_entropy_with_logits"}, kF, [reduction, unsupported](Args& a) {
    Tensor x = a.self(), y = a.tensor(1, "target");
    unsupported(a, {{3, "size_average"}, {4, "reduce"}});
    return nn::functional::binary_cross_entropy_with_logits(
        x, y, reduction(a, 5), a.opt_tensor(6, "pos_weight"), a.opt_tensor(2, "weight"));
  });
  def({"nll_loss", "cross_entropy"}, kF, [reduction, unsupported](Args& a) {
    Tensor x = a.self(), y = a.tensor(1, "target");
    unsupported(a, {{3, "size_average"}, {5, "reduce"}});
    const std::string r = reduction(a, 6);
    const int64_t ignore = a.i64(4, "ignore_index", -100);
    const Tensor w = a.opt_tensor(2, "weight");
    return a.fn == "nll_loss" ? nn::functional::nll_loss(x, y, r, ignore, w)
                              : nn::functional::cross_entropy(x, y, r, ignore, w,
                                                              a.f64(7, "label_smoothing", 0.0));
  });
  def({"kl_div"}, kF, [reduction, unsupported](Args& a) {
    Tensor x = a.self(), y = a.tensor(1, "target");
    unsupported(a, {{2, "size_average"}, {3, "reduce"}});
    return nn::functional::kl_div(x, y, reduction(a, 4), a.flag(5, "log_target", false));
  });
  def({"leaky_relu"}, kF, [](Args& a) {
    return nn::functional::leaky_relu(a.self(), a.f64(1, "negative_slope", 0.01));
  });
  def({"elu"}, kF, [](Args& a) { return nn::functional::elu(a.self(), a.f64(1, "alpha", 1.0)); });
  def({"silu"}, kF, [](Args& a) { return nn::functional::silu(a.self()); });
  def({"softplus"}, kF, [](Args& a) {
    return nn::functional::softplus(a.self(), a.f64(1, "beta", 1.0), a.f64(2, "threshold", 20.0));
  });
  def({"hardtanh"}, kF, [](Args& a) {
    return nn::functional::hardtanh(a.self(), a.f64(1, "min_val", -1.0), a.f64(2, "max_val", 1.0));
  });
  def({"one_hot"}, kF,
      [](Args& a) { return nn::functional::one_hot(a.self(), a.i64(1, "num_classes", -1)); });
  def({"embedding"}, kF,
      [](Args& a) { return nn::functional::embedding(a.self(), a.tensor(1, "weight")); });
  def({"dropout"}, kF, [](Args& a) {
    return nn::functional::dropout(a.self(), a.f64(1, "p", 0.5), a.flag(2, "training", true));
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
  def({"adjoint"}, TM, [](Args& a) { return a.self().adjoint(); });
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
  def({"unbind"}, TM, [](Args& a) { return tuple_of(unbind(a.self(), a.i64(1, "dim", 0))); });
  // sort(input, dim=-1, descending=False, stable=False) -> (values, indices); every sort is
  // stable. argsort takes the same arguments; topk(input, k, dim=-1, largest=True, sorted=True).
  def({"sort", "argsort"}, TM, [](Args& a) -> Value {
    Tensor t = a.self();
    const int64_t dim = a.i64(1, "dim", -1);
    const bool descending = a.flag(2, "descending", false);
    a.flag(3, "stable", false);
    if (a.fn == "argsort") return t.argsort(dim, descending);
    auto [v, i] = t.sort(dim, descending);
    return make_seq(Seq::Named, {v, i}, a.fn, {"values", "indices"});
  });
  def({"topk"}, TM, [](Args& a) -> Value {
    Tensor t = a.self();
    auto [v, i] = t.topk(a.i64(1, "k"), a.i64(2, "dim", -1), a.flag(3, "largest", true),
                         a.flag(4, "sorted", true));
    return make_seq(Seq::Named, {v, i}, a.fn, {"values", "indices"});
  });
  // median(input) -> the value; median(input, dim, keepdim=False) -> (values, indices).
  def({"median"}, TM, [](Args& a) -> Value {
    Tensor t = a.self();
    auto dim = a.opt_i64(1, "dim");
    if (!dim) return t.median();
    auto [v, i] = t.median(*dim, a.keepdim());
    return make_seq(Seq::Named, {v, i}, a.fn, {"values", "indices"});
  });
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
  def({"scatter_add"}, TM, [](Args& a) {
    return scatter_add(a.self(), a.i64(1, "dim"), a.tensor(2, "index"), a.tensor(3, "src"));
  });
  def({"index_add"}, TM, [](Args& a) {
    const Value* alpha = a.get(Args::kKw, "alpha");
    return index_add(a.self(), a.i64(1, "dim"), a.tensor(2, "index"), a.tensor(3, "source"),
                     alpha ? a.to_scalar(*alpha, "alpha") : Scalar(1));
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
  def({"torch.linalg.eig"}, 0, [named](Args& a) {
    auto [L, V] = la::eig(a.tensor(0, "A"));
    return named("linalg_eig", {L, V}, {"eigenvalues", "eigenvectors"});
  });
  def({"torch.linalg.eigvals"}, 0, [](Args& a) { return la::eigvals(a.tensor(0, "A")); });
  def({"polar"}, kTorch,
      [](Args& a) { return tj::polar(a.tensor(0, "abs"), a.tensor(1, "angle")); });
  def({"torch.linalg.eigvalsh"}, 0,
      [uplo](Args& a) { return la::eigvalsh(a.tensor(0, "A"), uplo(a)); });
  def({"torch.linalg.lstsq"}, 0, [named](Args& a) {
    Tensor A = a.tensor(0, "A"), B = a.tensor(1, "B");
    const Value* rc = a.get(2, "rcond");
    const Value* d = a.get(Args::kKw, "driver");
    auto r =
        la::lstsq(A, B, rc ? std::optional(a.to_scalar(*rc, "rcond").to_double()) : std::nullopt,
                  d ? std::optional(a.to_str(*d, "driver")) : std::nullopt);
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
  def({"logcumsumexp"}, TM, [](Args& a) { return a.self().logcumsumexp(a.i64(1, "dim")); });
  // cummax(input, dim) -> (values, indices), printed as torch.return_types.cummax.
  def({"cummax", "cummin"}, TM, [](Args& a) -> Value {
    Tensor t = a.self();
    auto [v, i] = a.fn == "cummax" ? t.cummax(a.i64(1, "dim")) : t.cummin(a.i64(1, "dim"));
    return make_seq(Seq::Named, {v, i}, a.fn, {"values", "indices"});
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
                         opt[1], opt[2], opt[3], sci);
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
    if (v.is_complex())
      throw Error(fmt::format("{}() argument must be a string{} or a real number, not 'complex'",
                              a.fn, integer ? ", a bytes-like object" : ""));
    if (!integer) return v.to_double();
    return v.is_floating_point() ? float_to_int(v.to_double()) : v.to_int();
  });
  // torch.complex of tensors; Python's complex of numbers.
  def({"complex"}, kTorch, [](Args& a) -> Value {
    const Value* re = a.get(0, "real");
    const Value* im = a.get(1, "imag");
    if (re && re->is<Tensor>()) return tj::complex(a.tensor(0, "real"), a.tensor(1, "imag"));
    auto part = [&](const Value* x, const char* name) {
      if (!x) return std::complex<double>(0.0);
      if (!is_num(*x))
        throw Error(fmt::format("complex() argument '{}' must be a real number, not '{}'", name,
                                type_name(*x)));
      return num_scalar(*x).to_complex();
    };
    // real + 1j * imag, without multiplying by zero (complex(0, inf) is infj, not nan+infj).
    const std::complex<double> r = part(re, "real"), i = part(im, "imag");
    return std::complex<double>(r.real() - i.imag(), r.imag() + i.real());
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
    if (auto z = x.get<std::complex<double>>()) return std::abs(*z);
    if (is_num(x)) return unary_op(num_scalar(x).to_int() < 0 ? '-' : '+', x);
    return tj::abs(a.to_tensor(x, "input"));
  });
  def({"round"}, kTorch, [](Args& a) -> Value {
    const Value& x = a.need(0, "input");
    auto d = x.get<double>();
    if (!is_num(x)) {
      // torch.round(input, *, decimals=0).
      auto decimals = a.opt_i64(Args::kKw, "decimals");
      Tensor t = a.to_tensor(x, "input");
      return decimals ? tj::round(t, *decimals) : tj::round(t);
    }
    if (x.is<std::complex<double>>()) throw Error("type complex doesn't define __round__ method");
    auto nd = a.opt_i64(1, "ndigits");
    if (!d) {
      // An int to a negative number of digits: exactly, half to even (round(1250, -2) is 1200).
      const int64_t v = num_scalar(x).to_int();
      if (!nd || *nd >= 0) return v;
      if (*nd < -19) return int64_t{0}; // |v| < 10^20 / 2
      if (*nd == -19) {                 // 10^19 itself does not fit
        const int64_t half = 5'000'000'000'000'000'000;
        if (v > half || v < -half) int_overflow();
        return int64_t{0};
      }
      int64_t scale = 1;
      for (int64_t k = 0; k < -*nd; ++k)
        scale *= 10;
      int64_t q = v / scale, r = v % scale;
      if (r < 0) r += scale, --q; // floor division
      if (r > scale - r || (r == scale - r && q % 2 != 0)) ++q;
      int64_t rounded = 0;
      if (__builtin_mul_overflow(q, scale, &rounded)) int_overflow();
      return rounded;
    }
    if (!nd) return float_to_int(std::nearbyint(*d));
    if (*nd > 300 || !std::isfinite(*d)) return *d;
    if (*nd >= 0) {
      // Python rounds the double's exact value to nd decimals (half to even on exact ties), as
      // printf's conversion does: round(2.675, 2) is 2.67, the double being 2.67499999...
      std::string text(static_cast<size_t>(400 + *nd), '\0');
      text.resize(static_cast<size_t>(
          std::snprintf(text.data(), text.size(), "%.*f", static_cast<int>(*nd), *d)));
      return std::strtod(text.c_str(), nullptr);
    }
    if (*nd < -308) return std::copysign(0.0, *d);
    const double scale = std::pow(10.0, static_cast<double>(-*nd));
    return std::nearbyint(*d / scale) * scale;
  });
  def({"round"}, kMethod, [](Args& a) {
    auto decimals = a.opt_i64(Args::kKw, "decimals");
    return decimals ? a.self().round(*decimals) : a.self().round();
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

} // namespace tj::tjc
