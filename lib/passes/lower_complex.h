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
// `parts`, when given, receives for each root the real nodes its pairs were made of by the pass
// (each of the root's shape), or nulls: for a real root, and for one whose pairs lie as they are
// (a Buffer's, a library call's, a reduction's). A kernel can compute and store such parts as
// two real results, each value computed once.
struct RootParts {
  ir::NodePtr re, im;
};
std::vector<ir::NodePtr> lower_complex(const std::vector<ir::NodePtr>& roots,
                                       std::vector<RootParts>* parts = nullptr);

// Where a complex view's pairs lie in memory: strides and offset in parts, with the pair's
// dim (stride 1) last.
ir::View pairs_view(const ir::View& complex_view);
// x of shape S broadcast to S + [2], as a value indexed along a complex node's pairs.
ir::NodePtr along_pairs(const ir::NodePtr& x);

} // namespace tj::passes
