// matmul and its special cases (dot, mv, mm, bmm, tensordot): a broadcast
// product reduced over the shared dimension, so they fuse like any reduction;
// or, where a library computes products (cuBLAS on a CUDA device), a Call node
// that materialization hands to it.
#include <fmt/format.h>

#include "lib/autograd/formulas.h"
#include "lib/frontend/graph_builders.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/ir/routine.h"
#include "lib/pipeline/library_calls.h"
#include "tensorjit/functions.h"

namespace tj {

using detail::node_of;
using detail::wrap;
using fe::NodePtr;
using ir::Op;

namespace {

// PyTorch's words when a product's operands differ in dtype: its kernel dispatches on the
// first operand and finds the second.
void check_same_dtype(const NodePtr& a, const NodePtr& b) {
  if (a->dtype != b->dtype)
    throw Error(fmt::format("expected scalar type {} but found {}", fe::cpp_type_name(a->dtype),
                            fe::cpp_type_name(b->dtype)));
}

// (..., n, k) x (..., k, m) -> (..., n, m), batch dims broadcast. Where a library computes
// products of this dtype on the operands' device (pipeline/library_calls.h), a Call of gemm;
// elsewhere the broadcast product reduced over the shared dim, which fuses like any reduction.
// Operands on different devices or of different dtypes take the second path, which raises
// PyTorch's errors.
NodePtr batched(const NodePtr& a, const NodePtr& b) {
  if (is_complex(a->dtype) && b->dtype == a->dtype && b->device == a->device) {
    // Four real products of the parts: the libraries' speed, and the complex product's FLOPs.
    auto part = [](Op op, const NodePtr& z) {
      return ir::make_node(op, real_part_dtype(z->dtype), z->shape, {z});
    };
    NodePtr ar = part(Op::Real, a), ai = part(Op::Imag, a);
    NodePtr br = part(Op::Real, b), bi = part(Op::Imag, b);
    NodePtr re = fe::binary(Op::Sub, batched(ar, br), batched(ai, bi));
    NodePtr im = fe::binary(Op::Add, batched(ar, bi), batched(ai, br));
    return ir::make_node(Op::Complex, a->dtype, re->shape, {re, im});
  }
  const int64_t n = a->shape[a->ndim() - 2], k = a->shape.back(), m = b->shape.back();
  const ir::Shape batch = ir::broadcast_shapes(ir::Shape(a->shape.begin(), a->shape.end() - 2),
                                               ir::Shape(b->shape.begin(), b->shape.end() - 2));
  // 16-bit floats are multiplied as float32 (their accumulator) and rounded once, at the end;
  // bfloat16 operands go to the library as they are where it multiplies them so (the CPU's dot
  // instruction: pairs of exact products added in float32).
  const bool lib =
      b->device == a->device && b->dtype == a->dtype && k > 0 && n * m * ir::numel(batch) > 0;
  const DType lib_dtype =
      lib && a->dtype == kBFloat16 &&
              pipeline::gemm_library(a->device, kBFloat16, n, m, k, ir::numel(batch))
          ? kBFloat16
          : fe::float_accumulator(a->dtype);
  if (lib && pipeline::gemm_library(a->device, lib_dtype, n, m, k, ir::numel(batch))) {
    ir::Shape as = batch, bs = batch;
    as.insert(as.end(), {n, k});
    bs.insert(bs.end(), {k, m});
    NodePtr c = ir::make_call(ir::Routine::Gemm, {fe::expand(fe::cast(a, lib_dtype), as),
                                                  fe::expand(fe::cast(b, lib_dtype), bs)});
    return fe::cast(c, a->dtype);
  }
  if (k == 0 && b->device == a->device) { // no products to sum: zeros, reading no operand
    ir::Shape out = batch;
    out.insert(out.end(), {n, m});
    return fe::constant(0, a->dtype, out, a->device); // the operands' dtypes agree here
  }
  ir::Shape as = a->shape, bs = b->shape;
  as.push_back(1);            // (..., n, k, 1)
  bs.insert(bs.end() - 2, 1); // (..., 1, k, m)
  // 16-bit floats multiply and add in float32, as PyTorch's CPU kernels (their opmath type), and
  // are rounded once: a product rounded to float16 first loses what the sum may need (in
  // float16, (1 + 3/1024)^2 - 1 came out 0.005859375, not 0.005867004).
  const bool widen = (a->dtype == kFloat16 || a->dtype == kBFloat16) && b->dtype == a->dtype;
  auto factor = [&](const NodePtr& v, const ir::Shape& s) {
    NodePtr r = fe::reshape(v, s);
    return widen ? fe::cast(r, kFloat32) : r;
  };
  NodePtr prod = fe::binary(Op::Mul, factor(a, as), factor(b, bs));
  int64_t axis = prod->ndim() - 2;
  const DType res = widen ? a->dtype : prod->dtype;
  // Bools add in int64; the result is cast back.
  DType acc = prod->dtype == kBool ? kInt64 : prod->dtype;
  NodePtr x = fe::cast(prod, acc);
  NodePtr s = ir::make_node(Op::ReduceSum, acc,
                            [&] {
                              ir::Shape k = x->shape;
                              k[axis] = 1;
                              return k;
                            }(),
                            {x}, {axis});
  ir::Shape out = prod->shape;
  out.erase(out.begin() + axis);
  return fe::cast(fe::reshape(s, out), res);
}

std::string dims2(const ir::Shape& s) { return fmt::format("{}x{}", s[0], s[1]); }

// PyTorch's should_fold: `t` (3-D or more) times a vector or a matrix folds t's batch into its
// rows, one mm or mv, unless t is 3-D with its last two dims transposed over a contiguous batch.
bool folds(const Tensor& t, int64_t other_dim) {
  if (t.dim() < 3 || (other_dim != 1 && other_dim != 2)) return false;
  const Shape s = t.sizes();
  const std::vector<int64_t> st = t.stride();
  return !(t.dim() == 3 && other_dim == 2 && st.back() != 1 && st.front() == s[1] * s[2]);
}

// Raises PyTorch's errors for a product where an operand has 3 or more dims, in its order:
// when it folds, those of the mm or mv it calls (on b^T and a^T when b has more dims);
// otherwise those of broadcasting the batch dims and of its bmm; then a dtype mismatch.
void check_batched(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  const Shape sa = a.sizes(), sb = b.sizes();
  if (folds(a, db) || folds(b, da)) {
    const bool transpose = db > da;
    // t1 (3 or more dims, folded to rows) times t2 (a vector or a matrix).
    Shape s1 = transpose ? sb : sa;
    if (transpose) std::swap(s1[s1.size() - 1], s1[s1.size() - 2]);
    const Shape s2 = !transpose ? sb : da == 2 ? Shape{sa[1], sa[0]} : sa;
    const int64_t k = s1.back(), rows = ir::numel(Shape(s1.begin(), s1.end() - 1));
    if (s2.size() == 2 && k != s2[0])
      throw Error(fmt::format("mat1 and mat2 shapes cannot be multiplied ({}x{} and {})", rows, k,
                              dims2(s2)));
    if (s2.size() == 1 && k != s2[0])
      throw Error(fmt::format("size mismatch, got {}, {}x{},{}", rows, rows, k, s2[0]));
    if (transpose)
      check_same_dtype(node_of(b), node_of(a));
    else
      check_same_dtype(node_of(a), node_of(b));
    return;
  }
  const Shape batch = ir::broadcast_shapes(Shape(sa.begin(), sa.end() - std::min<int64_t>(da, 2)),
                                           Shape(sb.begin(), sb.end() - std::min<int64_t>(db, 2)));
  const int64_t count = ir::numel(batch), k = sa.back(), k2 = db > 1 ? sb[db - 2] : sb[0];
  if (k != k2)
    throw Error(fmt::format("Expected size for first two dimensions of batch2 tensor to be: [{}, "
                            "{}] but got: [{}, {}].",
                            count, k, count, k2));
  check_same_dtype(node_of(a), node_of(b));
}

// Whether t's last two dims lie column-major in memory (w.t() of a row-major w).
bool column_major(const Tensor& t) {
  const int64_t d = t.dim();
  if (d < 2) return false;
  const std::vector<int64_t> st = t.stride();
  return st[d - 2] == 1 && st[d - 1] == t.size(d - 2) && t.size(d - 1) > 1;
}

// Records out = a @ b, computed as the broadcast batched product of a seen
// with shape la and b with shape lb (1-D operands lifted to matrices), with
// result shape lo: the gradients are g @ b^H and a^H @ g (conjugate
// transposes), summed over the batch dims an operand was broadcast along.
// An operand that lies column-major (the weight of a linear layer, w.t()) has its gradient
// computed as the transposed product and viewed back, as PyTorch's mm_mat1_backward and
// mm_mat2_backward do: the gradient then lies as the operand does, and the transposing view's
// own backward finds w's gradient contiguous (no transposed copy; an update w - lr * grad runs
// as the product's epilogue).
Tensor recorded_product(const char* name, const Tensor& a, const Tensor& b, Tensor out,
                        ir::Shape la, ir::Shape lb, ir::Shape lo) {
  // Saved tensors come back without their strides: the layouts are read now.
  const bool a_cols = la == a.sizes() && column_major(a);
  const bool b_cols = lb == b.sizes() && column_major(b);
  autograd::record(
      name, {a, b}, {out}, {a, b},
      [la, lb, lo, a_cols, b_cols](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
        Tensor gl = g[0].reshape(lo);
        Tensor al = s[0].reshape(la), bl = s[1].reshape(lb);
        Tensor ga = a_cols ? matmul(bl.conj(), gl.mT()).mT() : matmul(gl, bl.mT().conj());
        Tensor gb = b_cols ? matmul(gl.mT(), al.conj()).mT() : matmul(al.mT().conj(), gl);
        return std::vector<Tensor>{autograd::sum_to(ga, la).reshape(s[0].sizes()),
                                   autograd::sum_to(gb, lb).reshape(s[1].sizes())};
      });
  return out;
}

} // namespace

Tensor dot(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "dot");
  NodePtr x = node_of(a), y = node_of(b);
  if (x->ndim() != 1 || y->ndim() != 1)
    throw Error(
        fmt::format("1D tensors expected, but got {}D and {}D tensors", x->ndim(), y->ndim()));
  if (x->dtype != y->dtype)
    throw Error(fmt::format("dot : expected both vectors to have same dtype, but found {} and {}",
                            fe::cpp_type_name(x->dtype), fe::cpp_type_name(y->dtype)));
  if (x->shape[0] != y->shape[0])
    throw Error(fmt::format(
        "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of "
        "elements, but got {} and {} elements respectively",
        x->shape[0], y->shape[0], x->shape[0], y->shape[0]));
  const int64_t k = x->shape[0];
  return recorded_product(
      "DotBackward0", a, b,
      wrap(fe::reshape(batched(fe::reshape(x, {1, k}), fe::reshape(y, {k, 1})), {})), {1, k},
      {k, 1}, {1, 1});
}

Tensor mv(const Tensor& a, const Tensor& v, Caller caller) {
  detail::CallSite site(caller, "mv");
  NodePtr x = node_of(a), y = node_of(v);
  if (x->ndim() != 2 || y->ndim() != 1)
    throw Error(
        fmt::format("vector + matrix @ vector expected, got 1, {}, {}", x->ndim(), y->ndim()));
  if (x->shape[1] != y->shape[0])
    throw Error(
        fmt::format("size mismatch, got {}, {},{}", x->shape[0], dims2(x->shape), y->shape[0]));
  check_same_dtype(x, y);
  return recorded_product(
      "MvBackward0", a, v,
      wrap(fe::reshape(batched(x, fe::reshape(y, {y->shape[0], 1})), {x->shape[0]})), x->shape,
      {y->shape[0], 1}, {x->shape[0], 1});
}

Tensor mm(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "mm");
  NodePtr x = node_of(a), y = node_of(b);
  if (x->ndim() != 2) throw Error(fmt::format("self must be a matrix"));
  if (y->ndim() != 2) throw Error(fmt::format("mat2 must be a matrix"));
  if (x->shape[1] != y->shape[0])
    throw Error(fmt::format("mat1 and mat2 shapes cannot be multiplied ({} and {})",
                            dims2(x->shape), dims2(y->shape)));
  check_same_dtype(x, y);
  return recorded_product("MmBackward0", a, b, wrap(batched(x, y)), x->shape, y->shape,
                          {x->shape[0], y->shape[1]});
}

Tensor bmm(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "bmm");
  NodePtr x = node_of(a), y = node_of(b);
  if (x->ndim() != 3) throw Error("batch1 must be a 3D tensor");
  if (y->ndim() != 3) throw Error("batch2 must be a 3D tensor");
  if (y->shape[0] != x->shape[0] || y->shape[1] != x->shape[2])
    throw Error(fmt::format("Expected size for first two dimensions of batch2 tensor to be: [{}, "
                            "{}] but got: [{}, {}].",
                            x->shape[0], x->shape[2], y->shape[0], y->shape[1]));
  check_same_dtype(x, y);
  return recorded_product("BmmBackward0", a, b, wrap(batched(x, y)), x->shape, y->shape,
                          {x->shape[0], x->shape[1], y->shape[2]});
}

Tensor matmul(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "matmul");
  NodePtr x = node_of(a), y = node_of(b);
  int64_t da = x->ndim(), db = y->ndim();
  if (da == 0 || db == 0)
    throw Error(fmt::format(
        "both arguments to matmul need to be at least 1D, but they are {}D and {}D", da, db));
  if (da == 1 && db == 1) return dot(a, b);
  if (da == 2 && db == 1) return mv(a, b);
  if (da == 1 && db == 2) {
    if (x->shape[0] != y->shape[0])
      throw Error(fmt::format("mat1 and mat2 shapes cannot be multiplied (1x{} and {})",
                              x->shape[0], dims2(y->shape)));
    check_same_dtype(x, y);
    return recorded_product(
        "SqueezeBackward4", a, b,
        wrap(fe::reshape(batched(fe::reshape(x, {1, x->shape[0]}), y), {y->shape[1]})),
        {1, x->shape[0]}, y->shape, {1, y->shape[1]});
  }
  if (da == 2 && db == 2) return mm(a, b);
  check_batched(a, b);
  // Batched: 1-D operands gain a dim that is dropped from the result.
  NodePtr xa = da == 1 ? fe::reshape(x, {1, x->shape[0]}) : x;
  NodePtr yb = db == 1 ? fe::reshape(y, {y->shape[0], 1}) : y;
  int64_t n = xa->shape[xa->ndim() - 2], k = xa->shape.back(), m = yb->shape.back();
  ir::Shape ba(xa->shape.begin(), xa->shape.end() - 2), bb(yb->shape.begin(), yb->shape.end() - 2);
  ir::Shape batch = ir::broadcast_shapes(ba, bb);
  ir::Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {n, k});
  sb.insert(sb.end(), {k, m});
  NodePtr r = batched(fe::expand(xa, sa), fe::expand(yb, sb));
  ir::Shape out = batch;
  if (da != 1) out.push_back(n);
  if (db != 1) out.push_back(m);
  ir::Shape lo = batch;
  lo.insert(lo.end(), {n, m});
  return recorded_product("UnsafeViewBackward0", a, b, wrap(fe::reshape(r, out)), xa->shape,
                          yb->shape, lo);
}

Tensor tensordot(const Tensor& a, const Tensor& b, IntArrayRef dims_a, IntArrayRef dims_b,
                 Caller caller) {
  detail::CallSite site(caller, "tensordot");
  if (dims_a.size() != dims_b.size())
    throw Error(fmt::format("both dimension lists should have same length"));
  NodePtr x = node_of(a), y = node_of(b);
  std::vector<int64_t> ca, cb, fa, fb;
  for (size_t i = 0; i < dims_a.size(); ++i) {
    ca.push_back(ir::wrap_dim(dims_a[i], x->ndim()));
    cb.push_back(ir::wrap_dim(dims_b[i], y->ndim()));
    if (x->shape[ca.back()] != y->shape[cb.back()])
      throw Error(fmt::format(
          "contracted dimensions need to match, but first has size {} in dim {} and second has "
          "size {} in dim {}",
          x->shape[ca.back()], dims_a[i], y->shape[cb.back()], dims_b[i]));
  }
  for (int64_t d = 0; d < x->ndim(); ++d)
    if (std::find(ca.begin(), ca.end(), d) == ca.end()) fa.push_back(d);
  for (int64_t d = 0; d < y->ndim(); ++d)
    if (std::find(cb.begin(), cb.end(), d) == cb.end()) fb.push_back(d);
  // Free dims of a, then contracted; contracted dims of b, then free: one mm.
  std::vector<int64_t> pa = fa, pb = cb;
  pa.insert(pa.end(), ca.begin(), ca.end());
  pb.insert(pb.end(), fb.begin(), fb.end());
  int64_t m = 1, kk = 1, n = 1;
  ir::Shape out;
  for (int64_t d : fa)
    m *= x->shape[d], out.push_back(x->shape[d]);
  for (int64_t d : ca)
    kk *= x->shape[d];
  for (int64_t d : fb)
    n *= y->shape[d], out.push_back(y->shape[d]);
  Tensor am = a.permute(pa).reshape({m, kk});
  Tensor bm = b.permute(pb).reshape({kk, n});
  return mm(am, bm).reshape(out);
}

Tensor Tensor::matmul(const Tensor& o, Caller caller) const { return tj::matmul(*this, o, caller); }
Tensor Tensor::mm(const Tensor& o, Caller caller) const { return tj::mm(*this, o, caller); }
Tensor Tensor::mv(const Tensor& v, Caller caller) const { return tj::mv(*this, v, caller); }
Tensor Tensor::dot(const Tensor& o, Caller caller) const { return tj::dot(*this, o, caller); }

} // namespace tj
