// Reference interpreter: one straightforward loop per node, memoized.
#include "lib/interp/interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "lib/frontend/graph_builders.h"
#include "lib/ir/routine.h"
#include "lib/ir/scalar_semantics.h"
#include "lib/passes/lower_complex.h"
#include "lib/pipeline/library_calls.h"
#include "runtime/lapack.h"
#include "runtime/storage.h"
#include "tensorjit/error.h"

namespace tj::interp {
namespace {

using ir::Node;
using ir::NodePtr;
using ir::Op;

std::vector<int64_t> unravel(int64_t lin, const ir::Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? lin % shape[d] : 0;
    lin = shape[d] ? lin / shape[d] : 0;
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const ir::Shape& shape) {
  int64_t lin = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    lin = lin * shape[d] + idx[d];
  return lin;
}

int64_t view_offset(const ir::View& v, const std::vector<int64_t>& idx) {
  int64_t off = v.offset;
  for (size_t d = 0; d < idx.size(); ++d)
    off += idx[d] * v.strides[d];
  return off;
}

HostArray make(DType t, const ir::Shape& shape) {
  HostArray a{t, shape, {}, {}};
  size_t n = static_cast<size_t>(ir::numel(shape));
  if (a.is_float())
    a.f.resize(n);
  else
    a.i.resize(n);
  return a;
}

void read_buffer(const Node& n, HostArray& out) {
  const char* base = static_cast<const char*>(n.storage->data());
  const auto size = static_cast<int64_t>(itemsize(n.dtype));
  for (int64_t k = 0; k < n.numel(); ++k) {
    const char* p = base + view_offset(n.view, unravel(k, n.shape)) * size;
    if (out.is_float())
      out.f[k] = ir::load_float(p, n.dtype);
    else
      out.i[k] = ir::load_int(p, n.dtype);
  }
}

class Interpreter {
public:
  const HostArray& eval(const NodePtr& in) {
    NodePtr n = ir::resolve(in);
    if (auto it = memo_.find(n.get()); it != memo_.end()) return it->second;
    HostArray v = compute(*n);
    keep_.push_back(n);
    return memo_.emplace(n.get(), std::move(v)).first->second;
  }

private:
  HostArray compute(const Node& n) {
    HostArray out = make(n.dtype, n.shape);
    const int64_t count = n.numel();
    switch (n.op) {
    case Op::Buffer:
      read_buffer(n, out);
      return out;
    case Op::Const:
      for (int64_t k = 0; k < count; ++k)
        set_scalar(out, k, n.value);
      return out;
    case Op::Iota:
      for (int64_t k = 0; k < count; ++k)
        out.i[k] = view_offset(n.view, unravel(k, n.shape));
      return out;
    case Op::Philox:
      for (int64_t k = 0; k < count; ++k) {
        uint32_t w[4];
        uint64_t ctr = static_cast<uint64_t>(n.args[1]) +
                       static_cast<uint64_t>(view_offset(n.view, unravel(k, n.shape)));
        ir::philox4x32(ctr, static_cast<uint64_t>(n.args[0]), w);
        out.i[k] = w[n.args[2]];
      }
      return out;
    default:
      break;
    }
    if (ir::is_movement(n.op)) {
      const HostArray& s = eval(n.src[0]);
      for (int64_t k = 0; k < count; ++k) {
        int64_t from = source_index(n, k);
        if (out.is_float())
          out.f[k] = s.f[from];
        else
          out.i[k] = s.i[from];
      }
      return out;
    }
    if (ir::is_reduce(n.op)) return reduce(n, eval(n.src[0]));
    if (ir::is_scan(n.op)) return scan(n, eval(n.src[0]));
    if (n.op == Op::Call && ir::routine(n) == ir::Routine::Gemm)
      return gemm(n, eval(n.src[0]), eval(n.src[1]));
    if (n.op == Op::Call) {
      std::vector<const HostArray*> in;
      for (const auto& s : n.src)
        in.push_back(&eval(s));
      return factorization(n, in);
    }
    if (n.op == Op::Gather) {
      const HostArray &s = eval(n.src[0]), &index = eval(n.src[1]);
      const size_t dim = static_cast<size_t>(n.args[0]);
      const int64_t size = n.src[0]->shape[dim];
      for (int64_t k = 0; k < count; ++k) {
        std::vector<int64_t> idx = unravel(k, n.shape);
        idx[dim] = index.i[static_cast<size_t>(k)];
        if (idx[dim] < 0 || idx[dim] >= size)
          throw Error(fmt::format("index {} is out of bounds for dimension {} with size {}",
                                  idx[dim], dim, size));
        int64_t from = ravel(idx, n.src[0]->shape);
        if (out.is_float())
          out.f[k] = s.f[from];
        else
          out.i[k] = s.i[from];
      }
      return out;
    }
    if (n.op == Op::Scatter) { // in order: later writes win; sums round at each addition
      out = eval(n.src[0]);
      const HostArray &index = eval(n.src[1]), &v = eval(n.src[2]);
      const size_t dim = static_cast<size_t>(n.args[0]);
      const bool accumulate = n.args[1] != 0;
      const ir::Shape& is = n.src[1]->shape;
      for (int64_t k = 0; k < ir::numel(is); ++k) {
        std::vector<int64_t> idx = unravel(k, is);
        idx[dim] = index.i[static_cast<size_t>(k)];
        if (idx[dim] < 0 || idx[dim] >= n.shape[dim])
          throw Error(fmt::format("index {} is out of bounds for dimension {} with size {}",
                                  idx[dim], dim, n.shape[dim]));
        const int64_t to = ravel(idx, n.shape);
        if (out.is_float())
          out.f[to] = accumulate ? ir::round_to_dtype(out.f[to] + v.f[k], n.dtype) : v.f[k];
        else
          out.i[to] =
              accumulate ? ir::eval_int(Op::Add, n.dtype, out.i[to], v.i[k], nullptr) : v.i[k];
      }
      return out;
    }
    if (n.op == Op::Assign) {
      out = eval(n.src[0]);
      const HostArray& v = eval(n.src[1]);
      const ir::Shape& vs = n.src[1]->shape;
      for (int64_t k = 0; k < ir::numel(vs); ++k) {
        std::vector<int64_t> idx = unravel(k, vs);
        int64_t to = n.args[vs.size()];
        for (size_t i = 0; i < idx.size(); ++i)
          to += idx[i] * n.args[i];
        if (out.is_float())
          out.f[to] = v.f[k];
        else
          out.i[to] = v.i[k];
      }
      return out;
    }
    std::vector<const HostArray*> src;
    for (const auto& s : n.src)
      src.push_back(&eval(s));
    for (int64_t k = 0; k < count; ++k)
      elementwise(n, src, out, k);
    return out;
  }

  // Reductions accumulate in double (floats, then rounded) or wrapping int64.
  static HostArray reduce(const Node& n, const HostArray& in) {
    HostArray out = make(n.dtype, n.shape);
    const ir::Shape& ss = n.src[0]->shape;
    std::vector<bool> started(static_cast<size_t>(n.numel()), false);
    for (int64_t k = 0; k < ir::numel(ss); ++k) {
      std::vector<int64_t> idx = unravel(k, ss);
      for (int64_t ax : n.args)
        idx[ax] = 0;
      int64_t o = ravel(idx, n.shape);
      if (out.is_float()) {
        double v = in.f[k], &acc = out.f[o];
        if (!started[o]) acc = n.op == Op::ReduceSum ? 0.0 : n.op == Op::ReduceProd ? 1.0 : v;
        switch (n.op) {
        case Op::ReduceSum:
          acc += v;
          break;
        case Op::ReduceProd:
          acc *= v;
          break;
        default:
          acc = ir::eval_float(n.op == Op::ReduceMax ? Op::Max : Op::Min, acc, v);
        }
      } else {
        int64_t v = in.i[k], &acc = out.i[o];
        if (!started[o]) acc = n.op == Op::ReduceSum ? 0 : n.op == Op::ReduceProd ? 1 : v;
        Op op = n.op == Op::ReduceSum    ? Op::Add
                : n.op == Op::ReduceProd ? Op::Mul
                : n.op == Op::ReduceMax  ? Op::Max
                                         : Op::Min;
        acc = ir::eval_int(op, n.dtype, acc, v, nullptr);
      }
      started[o] = true;
    }
    for (int64_t o = 0; o < n.numel(); ++o) {
      if (out.is_float()) {
        if (!started[o])
          out.f[o] = n.op == Op::ReduceSum ? 0.0 : n.op == Op::ReduceProd ? 1.0 : 0.0;
        out.f[o] = ir::round_to_dtype(out.f[o], n.dtype);
      } else if (!started[o]) {
        out.i[o] = n.op == Op::ReduceProd ? 1 : 0;
      }
    }
    return out;
  }

  // Scans run along their axis in order, rounding to the dtype at each step (floats) or
  // wrapping (integers), as the kernels do.
  static HostArray scan(const Node& n, const HostArray& in) {
    HostArray out = make(n.dtype, n.shape);
    const Op op = ir::combine_op(n.op);
    const auto axis = static_cast<size_t>(n.args[0]);
    int64_t inner = 1;
    for (size_t d = axis + 1; d < n.shape.size(); ++d)
      inner *= n.shape[d];
    const int64_t len = n.shape[axis], outer = len && inner ? n.numel() / (len * inner) : 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        for (int64_t k = 0; k < len; ++k) {
          const auto at = static_cast<size_t>((o * len + k) * inner + i);
          const size_t before = at - static_cast<size_t>(inner);
          // A sum starts from +0, as a loop does: -0 alone sums to +0.
          if (out.is_float())
            out.f[at] = ir::round_to_dtype(k ? ir::eval_float(op, out.f[before], in.f[at])
                                             : (n.op == Op::ScanSum ? 0.0 + in.f[at] : in.f[at]),
                                           n.dtype);
          else
            out.i[at] = k ? ir::eval_int(op, n.dtype, out.i[before], in.i[at], nullptr) : in.i[at];
        }
    return out;
  }

  // A Gemm: each (batch, i, j) the sum of products over the shared dim, in double, rounded once.
  static HostArray gemm(const Node& n, const HostArray& a, const HostArray& b) {
    if (ir::routine(n) != ir::Routine::Gemm)
      throw Error(fmt::format("interpreter: no routine {}", ir::name(ir::routine(n))));
    HostArray out = make(n.dtype, n.shape);
    const ir::Shape& as = n.src[0]->shape;
    const int64_t rows = as[as.size() - 2], k = as.back(), cols = n.shape.back();
    const int64_t batches = rows != 0 && cols != 0 ? n.numel() / (rows * cols) : 0;
    for (int64_t bt = 0; bt < batches; ++bt)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += a.f[static_cast<size_t>((bt * rows + i) * k + p)] *
                   b.f[static_cast<size_t>((bt * k + p) * cols + j)];
          out.f[static_cast<size_t>((bt * rows + i) * cols + j)] = ir::round_to_dtype(acc, n.dtype);
        }
    return out;
  }

  // A factorization: LAPACK's, in double on the operands' values, rounded once. A failure is
  // the routine's error, as the library's would be.
  static HostArray factorization(const Node& n, const std::vector<const HostArray*>& in) {
    HostArray out = make(n.dtype, n.shape);
    rt::lapack::Failure failure;
    if (n.numel() > 0) {
      std::vector<rt::lapack::Matrices> matrices;
      for (const HostArray* a : in)
        matrices.push_back(
            rt::lapack::strided(a->f.data(), a->shape, ir::contiguous_strides(a->shape), 0));
      failure = pipeline::factor_with_lapack(n, kFloat64, matrices, out.f.data(), n.shape.back());
    }
    if (failure)
      throw Error(fmt::format("interpreter: {} failed on batch entry {} (info {})",
                              ir::name(ir::routine(n)), failure.entry, failure.info));
    for (double& v : out.f)
      v = ir::round_to_dtype(v, n.dtype);
    return out;
  }

  static void set_scalar(HostArray& out, int64_t k, const Scalar& v) {
    Scalar c = ir::to_dtype(v, out.dtype);
    if (out.is_float())
      out.f[k] = c.to_double();
    else
      out.i[k] = c.to_int();
  }

  // Row-major index into the source of a movement node for output element k.
  static int64_t source_index(const Node& n, int64_t k) {
    const ir::Shape& ss = n.src[0]->shape;
    if (n.op == Op::Reshape) return k;
    if (n.op == Op::AsStrided) {
      std::vector<int64_t> idx = unravel(k, n.shape);
      int64_t from = n.args.back();
      for (size_t i = 0; i < idx.size(); ++i)
        from += idx[i] * n.args[i];
      return from;
    }
    std::vector<int64_t> idx = unravel(k, n.shape), sidx(ss.size());
    switch (n.op) {
    case Op::Permute:
      for (size_t i = 0; i < n.args.size(); ++i)
        sidx[n.args[i]] = idx[i];
      break;
    case Op::Expand:
      for (size_t i = 0; i < ss.size(); ++i)
        sidx[i] = ss[i] == 1 ? 0 : idx[i];
      break;
    case Op::Slice:
      for (size_t i = 0; i < ss.size(); ++i)
        sidx[i] = n.args[2 * i] + n.args[2 * i + 1] * idx[i];
      break;
    default:
      break;
    }
    return ravel(sidx, ss);
  }

  static void elementwise(const Node& n, const std::vector<const HostArray*>& src, HostArray& out,
                          int64_t k) {
    const HostArray& a = *src[0];
    if (n.op == Op::Where) {
      const HostArray& x = *src[1];
      const HostArray& y = *src[2];
      const HostArray& pick = a.i[k] ? x : y;
      if (out.is_float())
        out.f[k] = pick.f[k];
      else
        out.i[k] = pick.i[k];
      return;
    }
    if (n.op == Op::Cast) {
      if (out.is_float())
        out.f[k] = a.is_float() ? ir::round_to_dtype(a.f[k], out.dtype)
                                : ir::int_to_float(a.i[k], out.dtype);
      else if (a.is_float())
        out.i[k] = ir::float_to_int(a.f[k], out.dtype);
      else
        out.i[k] = ir::wrap_to_dtype(a.i[k], out.dtype);
      return;
    }
    const HostArray* b = src.size() > 1 ? src[1] : &a;
    if (ir::is_comparison(n.op)) {
      out.i[k] = a.is_float() ? ir::eval_compare_float(n.op, a.f[k], b->f[k])
                              : ir::eval_compare_int(n.op, a.i[k], b->i[k]);
      return;
    }
    if (out.is_float()) {
      out.f[k] = ir::round_to_dtype(ir::eval_float(n.op, a.f[k], b->f[k]), out.dtype);
      return;
    }
    bool div0 = false;
    out.i[k] = ir::eval_int(n.op, n.dtype, a.i[k], b->i[k], &div0);
    if (div0) throw Error("ZeroDivisionError");
  }

  std::unordered_map<const Node*, HostArray> memo_;
  std::vector<NodePtr> keep_;
};

// The graph with every complex Call not yet performed replaced by its result, computed in
// complex128 through LAPACK from operands the interpreter evaluates (and rounded to the Call's
// dtype): lower_complex takes no Call, and LAPACK's complex routines want complex memory.
class ComplexCalls {
public:
  NodePtr run(const NodePtr& in) {
    NodePtr n = ir::resolve(in);
    if (!n->complex) return n;
    if (auto it = memo_.find(n.get()); it != memo_.end()) return it->second;
    std::vector<NodePtr> src;
    for (const auto& s : n->src)
      src.push_back(run(s));
    NodePtr out = n->op == Op::Call && is_complex(n->dtype) ? perform(*n, src)
                                                            : ir::with_sources(*n, std::move(src));
    memo_.emplace(n.get(), out);
    keep_.push_back(n);
    return out;
  }

private:
  static NodePtr perform(const Node& call, const std::vector<NodePtr>& src) {
    std::vector<HostArray> ops;
    std::vector<rt::lapack::Matrices> matrices;
    for (const auto& s : src)
      ops.push_back(evaluate(fe::cast(s, kComplex128))); // pairs of float64
    for (size_t k = 0; k < ops.size(); ++k)
      matrices.push_back(rt::lapack::strided(ops[k].f.data(), src[k]->shape,
                                             ir::contiguous_strides(src[k]->shape), 0));
    auto storage = rt::Storage::allocate(
        static_cast<size_t>(std::max<int64_t>(call.numel(), 1)) * itemsize(kComplex128), kCPU);
    if (call.numel() > 0) {
      rt::lapack::Failure failure = pipeline::factor_with_lapack(
          call, kComplex128, matrices, storage->data(), call.shape.back());
      if (failure)
        throw Error(fmt::format("interpreter: {} failed on batch entry {} (info {})",
                                ir::name(ir::routine(call)), failure.entry, failure.info));
    }
    NodePtr b = ir::make_buffer(storage, kComplex128, call.shape,
                                ir::View{ir::contiguous_strides(call.shape), 0});
    return fe::cast(b, call.dtype);
  }

  std::unordered_map<const Node*, NodePtr> memo_;
  std::vector<NodePtr> keep_;
};

} // namespace

HostArray evaluate(const NodePtr& root) {
  return Interpreter().eval(passes::lower_complex({ComplexCalls().run(root)})[0]);
}

} // namespace tj::interp
