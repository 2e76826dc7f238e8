// simplify: constant folding and algebraic identities over the tensor graph.
#pragma once
#include <vector>

#include "lib/ir/node.h"

namespace tj::passes {

// Returns the roots rewritten: realized nodes replaced by their buffers,
// operations on constants folded, and identities (x+0, x*1, x/1, --x,
// where on a constant condition, casts to the same dtype) removed. Nodes
// that do not change are returned as they are.
std::vector<ir::NodePtr> simplify(const std::vector<ir::NodePtr>& roots);

// Evaluates an ALU op on constant inputs, as the interpreter would.
Scalar fold_constant(ir::Op op, DType out, const std::vector<ir::NodePtr>& src);

} // namespace tj::passes
