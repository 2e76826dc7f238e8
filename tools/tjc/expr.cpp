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
// relu, gelu, sigmoid, tanh, layer_norm, linear, the losses and activations of
// torch.nn.functional;
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

#include "tools/tjc/expr_internal.h"

namespace tj::tjc {
namespace {

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
    else if (auto q = v->get<SeqPtr>())
      // x[[0, 2]]: advanced indexing; x[[]] selects nothing, by an empty int64 index.
      idx.emplace_back((*q)->items.empty() ? empty({0}, TensorOptions(kInt64))
                                           : make_tensor(*v, {}));
    else
      throw Error(fmt::format("only integers, slices (`:`), ellipsis (`...`), None and long or "
                              "byte Variables are valid indices (got {})",
                              type_name(*v)));
  }
  if (items.empty()) idx.emplace_back(indexing::Ellipsis); // x[()]: all of x, as x[...]
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
                         print_.sci_mode);
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
  std::vector<Stmt> program = parse_program(src);
  SettingsGuard settings;
  return Interp(src, echo, live).run(program);
}

} // namespace tj::tjc