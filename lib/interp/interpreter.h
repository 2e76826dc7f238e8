// The reference interpreter: a plain evaluator of the tensor graph, the oracle
// that tests hold the JIT to.
#pragma once
#include <vector>

#include "lib/ir/node.h"

namespace tj::interp {

// A row-major value: floats in double (rounded to the node's dtype after each
// op), integers and bools exactly in int64.
struct HostArray {
  DType dtype;
  ir::Shape shape;
  std::vector<double> f;  // floating dtypes
  std::vector<int64_t> i; // integral dtypes and bool
  bool is_float() const { return is_floating_point(dtype); }
  double as_double(size_t k) const { return is_float() ? f[k] : static_cast<double>(i[k]); }
};

// Evaluates `root` without the scheduler or any compiled code. Complex values are evaluated as
// the pairs of reals passes/lower_complex makes of them: a complex root comes back as its pairs
// (its parts' dtype, its shape with a trailing 2); a complex Call runs LAPACK's complex128
// routine on its evaluated operands first. Throws
// tj::Error("ZeroDivisionError") on integer division by zero.
HostArray evaluate(const ir::NodePtr& root);

} // namespace tj::interp
