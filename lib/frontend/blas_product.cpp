#include "frontend/blas_product.h"

#include "frontend/graph_builders.h"
#include "frontend/tensor_impl.h"
#include "tensorjit/error.h"

namespace tj::fe {
namespace {

const GemmRunner* g_override = nullptr;

// `x` computed into fresh contiguous memory: a Cast to its own dtype, as Tensor::contiguous.
NodePtr contiguous_copy(const NodePtr& x) {
  NodePtr copy = ir::make_node(Op::Cast, x->dtype, x->shape, {x});
  detail::realize({copy});
  NodePtr r = ir::resolve(copy);
  if (r->op != Op::Buffer || r->view.strides != ir::contiguous_strides(x->shape) ||
      r->view.offset != 0)
    throw Error("internal error: a copy for a matrix product is not contiguous");
  return r;
}

// `x` computed: a Buffer over memory, seen through whatever view the memory's layout
// expresses (a leaf the scheduler reads without memory is given some).
NodePtr computed(const NodePtr& x) {
  detail::realize({x});
  NodePtr r = ir::resolve(x);
  return r->op == Op::Buffer ? r : contiguous_copy(r);
}

rt::GemmOperand layout(const NodePtr& buffer) {
  return {buffer->shape, buffer->view.strides, buffer->view.offset};
}

} // namespace

ScopedBlasOverride::ScopedBlasOverride(GemmRunner run) {
  g_override = new GemmRunner(std::move(run));
}
ScopedBlasOverride::~ScopedBlasOverride() {
  delete g_override;
  g_override = nullptr;
}
const GemmRunner* blas_override() { return g_override; }

NodePtr blas_product(const NodePtr& a0, const NodePtr& b0, const GemmRunner& run) {
  const int64_t n = a0->shape[a0->ndim() - 2], k = a0->shape.back(), m = b0->shape.back();
  Shape batch = ir::broadcast_shapes(Shape(a0->shape.begin(), a0->shape.end() - 2),
                                     Shape(b0->shape.begin(), b0->shape.end() - 2));
  Shape as = batch, bs = batch, cs = batch;
  as.insert(as.end(), {n, k});
  bs.insert(bs.end(), {k, m});
  cs.insert(cs.end(), {n, m});
  NodePtr c = ir::make_empty(a0->dtype, cs, a0->device);
  if (c->numel() == 0) return c;
  if (k == 0) return constant(0, a0->dtype, cs, a0->device);
  // Broadcast batch dims stay views (stride 0): the plan reads them in place.
  NodePtr a = computed(expand(a0, as)), b = computed(expand(b0, bs));
  rt::GemmPlan plan = rt::plan_gemm(layout(a), layout(b), layout(c));
  if (plan.copy_a || plan.copy_b) {
    if (plan.copy_a) a = contiguous_copy(a);
    if (plan.copy_b) b = contiguous_copy(b);
    plan = rt::plan_gemm(layout(a), layout(b), layout(c));
    if (plan.copy_a || plan.copy_b)
      throw Error("internal error: contiguous operands of a matrix product found no plan");
  }
  for (const rt::GemmCall& call : plan.calls)
    run(call, *b, *a, *c);
  return c;
}

} // namespace tj::fe
