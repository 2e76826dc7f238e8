// lower_complex: complex numbers as pairs of reals, before scheduling.
#pragma once
#include <vector>

#include "lib/ir/node.h"

namespace tj::passes {

// Returns the roots with every complex node rewritten as a real one: a complex node of shape S
// becomes a node of shape S + [2] (real part, imaginary part) of its parts' dtype, which is how
// complex memory lies (interleaved, as std::complex). Complex arithmetic becomes real
// arithmetic on the parts (products, quotients as PyTorch's CPU computes them, exp, log, sqrt,
// sin, cos), Real/Imag become views of the pairs, Complex pairs two reals. A root that was
// complex comes back as its pairs. Realized nodes are replaced by their buffers; graphs without
// complex nodes come back unchanged. Kernels, libraries and the interpreter only ever see the
// result.
std::vector<ir::NodePtr> lower_complex(const std::vector<ir::NodePtr>& roots);

// Where a complex view's pairs lie in memory: strides and offset in parts, with the pair's
// dim (stride 1) last.
ir::View pairs_view(const ir::View& complex_view);
// x of shape S broadcast to S + [2], as a value indexed along a complex node's pairs.
ir::NodePtr along_pairs(const ir::NodePtr& x);

} // namespace tj::passes
