// split_scans: a long scan over few rows, split into segments that the CPU's threads scan apart.
#pragma once
#include <vector>

#include "lib/ir/node.h"

namespace tj::passes {

// Returns the roots with each long scan on the CPU (at least kLongScan elements along its dim, in
// fewer than kFewRows rows) whose steps may be combined in another order (integer sums and
// products, extrema, sums and products in float64 unless config().ordered_scans) rewritten in
// segments of L elements, L a divisor of the dim's length: the segments' totals (a reduction,
// each segment on its own), the totals scanned, and each segment scanned from the combination of
// the totals before it. Kernels then run the segments as rows, on every thread. Other graphs
// come back unchanged.
std::vector<ir::NodePtr> split_long_scans(const std::vector<ir::NodePtr>& roots);

} // namespace tj::passes
