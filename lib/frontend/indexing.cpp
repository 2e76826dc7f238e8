// Indexing and selection. Basic indexing is a view; reads at data-dependent places (gather,
// index_select, advanced indexing, masked_select) are Gather nodes and writes there (scatter,
// index_put_ with tensors, their gradients) Scatter nodes, computed by kernels. Index values are
// read when the op is called, to check them and to shape the result; nonzero and unique run on
// the host over materialized values. Joining and rearranging are in joining.cpp.
#include "tensorjit/indexing.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>

#include "lib/autograd/formulas.h"
#include "lib/autograd/node.h"
#include "lib/frontend/graph_builders.h"
#include "lib/frontend/overlap.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/ir/scalar_semantics.h"
#include "tensorjit/functions.h"

namespace tj {

using indexing::EllipsisIndexType;
using indexing::Slice;
using indexing::TensorIndex;

indexing::TensorIndex::TensorIndex(const char* s) : v_(EllipsisIndexType{}) {
  if (std::string_view(s) != "...")
    throw Error(fmt::format("Expected \"...\" to represent an ellipsis index, but got \"{}\"", s));
}

namespace {

// --- host memory of materialized values ---

// The tensor's elements, contiguous in host memory.
struct HostValues {
  ir::NodePtr buf;
  const char* data;
  size_t item;

  explicit HostValues(const Tensor& t)
      : buf(detail::host_contiguous(t)), item(itemsize(t.dtype())) {
    data = static_cast<const char*>(buf->storage->data()) +
           buf->view.offset * static_cast<int64_t>(item);
  }
  const char* at(int64_t i) const { return data + i * static_cast<int64_t>(item); }
  int64_t as_int(int64_t i) const { return ir::load_int(at(i), buf->dtype); }
  double as_double(int64_t i) const { return ir::load_float(at(i), buf->dtype); }
};

bool is_index_dtype(DType t) { return t == kInt64 || t == kInt32 || t == kInt16 || t == kInt8; }
bool is_mask_dtype(DType t) { return t == kBool || t == kUInt8; }

int64_t checked_index(int64_t i, int64_t size, int64_t dim) {
  if (i < -size || i >= size)
    throw Error(
        fmt::format("index {} is out of bounds for dimension {} with size {}", i, dim, size));
  return i < 0 ? i + size : i;
}

// --- index lists ---

// An advanced index: integer positions along `dim` of the view, or a mask
// over `mask.dim()` dims from `dim`.
struct Advanced {
  int64_t dim;
  Tensor index; // integer tensor, or the bool mask
  bool is_mask;
};

struct Parsed {
  Tensor view; // after the basic indices
  std::vector<Advanced> advanced;
  // Whether PyTorch's basic indexing left the tensor itself (no select, unsqueeze or narrowing
  // slice), so that a write through the index is a write to it rather than to a view of it.
  bool is_self = true;
};

// The advanced indices of `p` as an index list over `p.view`: each at its dim, a full slice
// at every other dim.
std::vector<TensorIndex> advanced_indices(const Parsed& p) {
  std::vector<TensorIndex> out;
  for (int64_t d = 0; d < p.view.dim();) {
    auto a = std::find_if(p.advanced.begin(), p.advanced.end(),
                          [d](const Advanced& x) { return x.dim == d; });
    if (a == p.advanced.end()) {
      out.emplace_back(Slice());
      ++d;
    } else {
      out.emplace_back(a->index);
      d += a->is_mask ? std::max<int64_t>(a->index.dim(), 1) : 1;
    }
  }
  return out;
}

Parsed parse(const Tensor& self, const std::vector<TensorIndex>& indices) {
  int64_t consumed = 0, ellipses = 0;
  for (const auto& ix : indices) {
    const auto& v = ix.value();
    if (std::holds_alternative<int64_t>(v) || std::holds_alternative<Slice>(v))
      ++consumed;
    else if (const Tensor* t = std::get_if<Tensor>(&v))
      consumed += is_mask_dtype(t->dtype()) ? t->dim() : 1; // a 0-d mask adds a dim
    else if (std::holds_alternative<EllipsisIndexType>(v))
      ++ellipses;
  }
  if (ellipses > 1) throw Error("an index can only have a single ellipsis ('...')");
  if (consumed > self.dim())
    throw Error(fmt::format("too many indices for tensor of dimension {}", self.dim()));

  Parsed p{detail::alias(self), {}};
  autograd::record("AliasBackward0", {self}, {p.view}, {},
                   [](const std::vector<Tensor>& g, const std::vector<Tensor>&) { return g; });
  Tensor& cur = p.view;
  int64_t d = 0;
  // PyTorch names a dim in select's errors by the index's place in the list (`position`).
  auto select = [&](int64_t i, int64_t position) {
    cur = cur.select(d, checked_index(i, cur.size(d), position));
    p.is_self = false;
  };
  // A bool is an advanced index over a new dim of size 1: {0} keeps it, {} empties it (PyTorch's
  // boolToIndexingTensor), so several bools broadcast together and the result is a copy.
  auto boolean = [&](bool b) {
    cur = cur.unsqueeze(d);
    p.advanced.push_back({d++,
                          tensor(std::vector<int64_t>(b ? 1 : 0, 0), {b ? 1 : 0},
                                 TensorOptions().dtype(kInt64).device(self.device())),
                          false});
    p.is_self = false;
  };
  for (size_t position = 0; position < indices.size(); ++position) {
    const auto& v = indices[position].value();
    if (const int64_t* i = std::get_if<int64_t>(&v)) {
      select(*i, static_cast<int64_t>(position));
    } else if (const Slice* s = std::get_if<Slice>(&v)) {
      int64_t step = s->step.value_or(1);
      if (step <= 0) throw Error("step must be greater than zero");
      // Only a slice written as exactly [0, size) with step 1 is skipped by PyTorch.
      p.is_self &= s->start.value_or(0) == 0 && s->stop == cur.size(d) && step == 1;
      cur = cur.slice(d, s->start, s->stop, step);
      ++d;
    } else if (std::holds_alternative<std::nullopt_t>(v)) {
      cur = cur.unsqueeze(d++);
      p.is_self = false;
    } else if (std::holds_alternative<EllipsisIndexType>(v)) {
      d += self.dim() - consumed;
    } else if (const bool* b = std::get_if<bool>(&v)) {
      boolean(*b);
    } else {
      const Tensor& t = std::get<Tensor>(v);
      // A 0-d bool or integer tensor is its value: a bool, or an integer that selects (a view).
      if (is_mask_dtype(t.dtype()) && t.dim() == 0) {
        boolean(HostValues(t).as_int(0) != 0);
      } else if (is_index_dtype(t.dtype()) && t.dim() == 0) {
        select(HostValues(t).as_int(0), static_cast<int64_t>(position));
      } else if (is_mask_dtype(t.dtype())) {
        int64_t k = t.dim();
        for (int64_t j = 0; j < t.dim(); ++j)
          if (t.size(j) != cur.size(d + j))
            throw Error(fmt::format("The shape of the mask {} at index {} does not match the "
                                    "shape of the indexed tensor {} at index {}",
                                    ir::shape_str(t.sizes()), j, ir::shape_str(cur.sizes()),
                                    d + j));
        p.advanced.push_back({d, t, true});
        d += k;
      } else if (is_index_dtype(t.dtype())) {
        p.advanced.push_back({d, t, false});
        ++d;
      } else {
        throw Error("tensors used as indices must be long, int, byte or bool tensors");
      }
    }
  }
  return p;
}

// The advanced indices as integer indices, each with the view dim it indexes: a mask becomes one
// per dim it covers (its nonzero positions), as PyTorch expands it. Each has rank >= 1.
using IntIndices = std::vector<std::pair<int64_t, Tensor>>;
IntIndices integer_indices(const std::vector<Advanced>& adv) {
  IntIndices idx;
  for (const auto& a : adv) {
    if (!a.is_mask) {
      idx.emplace_back(a.dim, a.index);
      continue;
    }
    Tensor nz = nonzero(a.index);
    for (int64_t j = 0; j < a.index.dim(); ++j)
      idx.emplace_back(a.dim + j, nz.select(1, j));
  }
  return idx;
}

// The shape of an advanced-index result: the indices' broadcast shape in place of the indexed
// dims when they are adjacent, else first, and the view's other dims (out_dims: -1 for the
// broadcast dims, else the view dim).
struct Layout {
  Shape broadcast;
  std::vector<int64_t> out_dims;
  Shape shape;
};

Layout layout_of(const Shape& vs, const IntIndices& idx) {
  Layout l;
  try {
    for (const auto& [dim, t] : idx)
      l.broadcast = ir::broadcast_shapes(l.broadcast, t.sizes());
  } catch (const Error&) {
    std::vector<std::string> shapes;
    for (const auto& [dim, t] : idx)
      shapes.push_back(ir::shape_str(t.sizes()));
    throw Error(fmt::format(
        "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
        fmt::join(shapes, ", ")));
  }
  // No index value fits a dim of size 0; PyTorch says so before it reads any.
  const bool empty_dim =
      std::any_of(idx.begin(), idx.end(), [&](const auto& x) { return vs[x.first] == 0; });
  if (empty_dim && ir::numel(l.broadcast) != 0)
    throw Error("index is out of bounds for dimension with size 0");
  bool adjacent = true;
  for (size_t i = 1; i < idx.size(); ++i)
    adjacent &= idx[i].first == idx[i - 1].first + 1;
  std::vector<bool> indexed(vs.size(), false);
  for (const auto& [dim, t] : idx)
    indexed[dim] = true;
  const int64_t first = idx.front().first;
  if (!adjacent) l.out_dims.push_back(-1);
  for (int64_t dd = 0; dd < static_cast<int64_t>(vs.size()); ++dd) {
    if (adjacent && dd == first) l.out_dims.push_back(-1);
    if (!indexed[dd]) l.out_dims.push_back(dd);
  }
  for (int64_t od : l.out_dims) {
    if (od < 0)
      l.shape.insert(l.shape.end(), l.broadcast.begin(), l.broadcast.end());
    else
      l.shape.push_back(vs[od]);
  }
  return l;
}

// The element positions (in the view's row-major order) that the indices select, in the order
// of the result of layout `l`. Index values are checked here.
std::vector<int64_t> select_positions(const Tensor& view, const IntIndices& idx, const Layout& l) {
  std::vector<HostValues> values;
  std::vector<Tensor> expanded;
  for (const auto& [dim, t] : idx) {
    expanded.push_back(t.expand(l.broadcast));
    values.emplace_back(expanded.back());
  }
  std::vector<int64_t> cs = ir::contiguous_strides(view.sizes());
  int64_t nb = ir::numel(l.broadcast), total = ir::numel(l.shape);
  std::vector<int64_t> positions(static_cast<size_t>(total));
  // Walk the output in row-major order: the broadcast part is one flat index.
  std::vector<int64_t> extents;
  for (int64_t od : l.out_dims)
    extents.push_back(od < 0 ? nb : view.size(od));
  std::vector<int64_t> counter(extents.size(), 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t pos = 0;
    for (size_t k = 0; k < l.out_dims.size(); ++k) {
      if (l.out_dims[k] >= 0) {
        pos += counter[k] * cs[l.out_dims[k]];
        continue;
      }
      // PyTorch's kernel names a bad value's index by its place among the index tensors.
      for (size_t j = 0; j < idx.size(); ++j) {
        int64_t dim = idx[j].first;
        pos +=
            checked_index(values[j].as_int(counter[k]), view.size(dim), static_cast<int64_t>(j)) *
            cs[dim];
      }
    }
    positions[o] = pos;
    for (size_t k = counter.size(); k-- > 0;) {
      if (++counter[k] < extents[k]) break;
      counter[k] = 0;
    }
  }
  return positions;
}

Tensor add_at_positions(const Tensor& g, const Shape& shape, const Tensor& positions);

// Flat element positions (see select_positions) as a 1-d int64 tensor on `device`: the index that
// the selection's Gather and its gradient's Scatter read, and that their nodes save.
Tensor positions_tensor(const std::vector<int64_t>& positions, Device device) {
  return tensor(positions, {static_cast<int64_t>(positions.size())}, TensorOptions().dtype(kInt64))
      .to(device);
}

// The elements of x (row-major) at `positions` (a positions_tensor on x's device), as a tensor of
// `shape`: a Gather of x's flattened value, so x is read in place (or computed) by the kernel
// that uses the selection. The positions were checked when they were computed. The node saves
// them, as PyTorch's IndexBackward0 saves its indices: a backward without retain_graph frees
// them.
Tensor take_positions(const Tensor& x, const Shape& shape, const Tensor& positions) {
  Tensor out;
  if (positions.numel() == 0 || x.numel() == 0) {
    out = empty(shape, x.options());
  } else {
    NoGradGuard no_grad;
    out = autograd::gather_at(x.reshape({x.numel()}), 0, positions, "").reshape(shape);
  }
  autograd::record(
      "IndexBackward0", {x}, {out}, {positions},
      [in = x.sizes()](const std::vector<Tensor>& g, const std::vector<Tensor>& saved) {
        return std::vector<Tensor>{add_at_positions(g[0], in, saved[0])};
      });
  return out;
}

// Zeros of `shape` with g's elements added at `positions` (repeats add up): take_positions'
// adjoint, a Scatter that accumulates.
Tensor add_at_positions(const Tensor& g, const Shape& shape, const Tensor& positions) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = zeros({ir::numel(shape)}, g.options());
    if (positions.numel() != 0)
      out = autograd::scatter_at(out, 0, positions, g.reshape({g.numel()}), true, "");
    out = out.reshape(shape);
  }
  autograd::record(
      "IndexPutBackward0", {g}, {out}, {positions},
      [vs = g.sizes()](const std::vector<Tensor>& gr, const std::vector<Tensor>& saved) {
        return std::vector<Tensor>{take_positions(gr[0], vs, saved[0])};
      });
  return out;
}

// How index values are checked: advanced indexing counts negative ones from the end; gather and
// scatter reject them; index_select rejects them, and those too large, in its own words.
enum class IndexRule { Wrap, Bounds, Select };

// index as int64 values in [0, size) on `device`. Its values are read now, so that a bad one is
// this call's error (naming dim `error_dim`).
Tensor checked_indices(const Tensor& index, int64_t size, int64_t error_dim, IndexRule rule,
                       Device device) {
  bool negative = false;
  {
    HostValues ix(index);
    const int64_t n = index.numel();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = ix.as_int(i);
      if (rule == IndexRule::Select && (v < 0 || v >= size))
        throw Error("index out of range in self");
      if (rule == IndexRule::Bounds && v < 0)
        throw Error(fmt::format("index {} is out of bounds for dimension {} with size {}", v,
                                error_dim, size));
      negative |= checked_index(v, size, error_dim) != v;
    }
  }
  ir::NodePtr idx = fe::cast(detail::node_of(index.to(device)), kInt64);
  if (negative) { // idx + size where negative
    ir::NodePtr zero = fe::constant(0, kInt64, {}, idx->device);
    idx = fe::where(fe::binary(ir::Op::CmpLt, idx, zero),
                    fe::binary(ir::Op::Add, idx, fe::constant(size, kInt64, {}, idx->device)), idx);
  }
  return detail::wrap(idx);
}

// The shape of view[..., idx, ...] for an index of shape `idx` at dim d of a view of shape `vs`:
// idx's dims in place of d.
Shape selection_shape(const Shape& vs, int64_t d, const Shape& idx) {
  Shape shape = vs;
  shape.erase(shape.begin() + d);
  shape.insert(shape.begin() + d, idx.begin(), idx.end());
  return shape;
}

// idx (an index of rank >= 1 at dim d of a view of shape `vs`) flattened into dim d and broadcast
// over the view's other dims, and that shape: a Scatter along d with this index writes the
// selection view[..., idx, ...] reshaped to it.
struct FlatIndex {
  Tensor index;
  Shape shape;
};
FlatIndex flat_along(const Tensor& idx, const Shape& vs, int64_t d) {
  Shape shape = vs, at_d(vs.size(), 1);
  shape[static_cast<size_t>(d)] = at_d[static_cast<size_t>(d)] = idx.numel();
  return {idx.reshape(at_d).expand(shape), shape};
}

// view[..., idx, ...] for one integer index tensor idx (rank >= 1) at dim d: idx's shape
// replaces dim d. One Gather along the last of idx's dims, of the view with idx's other dims
// broadcast in front of d, so the view is read in place (or computed) by the kernel that uses
// the selection.
Tensor index_along(const Tensor& view, int64_t d, const Tensor& index) {
  // Moved before it is broadcast; its values are read (checked) from the caller's copy. PyTorch
  // names a bad value's index by its place among the index tensors: 0, the only one.
  const Tensor idx = checked_indices(index, view.size(d), 0, IndexRule::Wrap, view.device());
  const auto nb = static_cast<size_t>(idx.dim()), at = static_cast<size_t>(d);
  const Shape shape = selection_shape(view.sizes(), d, idx.sizes());
  Tensor src = view;
  Shape along(shape.size(), 1);
  std::copy(idx.sizes().begin(), idx.sizes().end(), along.begin() + d);
  Tensor out;
  {
    NoGradGuard no_grad;
    for (size_t k = 1; k < nb; ++k)
      src = src.unsqueeze(d);
    Shape src_shape = shape;
    src_shape[at + nb - 1] = view.size(d);
    out = autograd::gather_at(src.expand(src_shape), d + static_cast<int64_t>(nb) - 1,
                              idx.reshape(along).expand(shape), "");
  }
  // The gradient adds into the view's own shape (not the broadcast source's, which would be as
  // many times larger as idx has rows), with idx's dims flattened into dim d. The index is saved,
  // as PyTorch's IndexBackward0 saves its indices.
  autograd::record(
      "IndexBackward0", {view}, {out}, {idx},
      [vs = view.sizes(), d](const std::vector<Tensor>& g, const std::vector<Tensor>& saved) {
        FlatIndex flat = flat_along(saved[0], vs, d);
        return std::vector<Tensor>{autograd::scatter_at(zeros(vs, g[0].options()), d, flat.index,
                                                        g[0].reshape(flat.shape), true,
                                                        "IndexPutBackward0")};
      });
  return out;
}

// `view` with `value`'s elements written at `positions` (a positions_tensor on view's device;
// later writes win): a Scatter of the flattened view, recorded: the written positions take
// value's gradient, the rest keep view's. The node saves the positions, as PyTorch's
// IndexPutBackward0 saves its indices.
Tensor put_positions(const Tensor& view, const Tensor& positions, const Tensor& value,
                     const char* grad_name) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = view.numel() == 0 ? view.clone()
                            : autograd::scatter_at(view.reshape({view.numel()}), 0, positions,
                                                   value.reshape({value.numel()}), false, "")
                                  .reshape(view.sizes());
  }
  autograd::record(
      grad_name, {view, value}, {out}, {positions},
      [vs = value.sizes()](const std::vector<Tensor>& g, const std::vector<Tensor>& saved) {
        const Tensor& positions = saved[0];
        const int64_t n = g[0].numel();
        Tensor kept = n == 0 ? g[0]
                             : autograd::scatter_at(g[0].reshape({n}), 0, positions,
                                                    zeros({positions.numel()}, g[0].options()),
                                                    false, "IndexPutBackward0")
                                   .reshape(g[0].sizes());
        return std::vector<Tensor>{kept, take_positions(g[0], vs, positions)};
      });
  return out;
}

} // namespace

// --- Tensor::index and index_put_ ---

namespace {
// PyTorch's checks of the index list before it is parsed.
void check_index_list(const Tensor& t, const std::vector<TensorIndex>& indices, const char* op) {
  if (indices.empty())
    throw Error(fmt::format("Passing an empty index list to Tensor::{}() is not valid syntax", op));
  if (t.dim() == 0 && indices.size() == 1 && std::holds_alternative<int64_t>(indices[0].value()))
    throw Error("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
}

// `t` without its leading size-1 dims, which PyTorch drops from a value before broadcasting it
// into an index (NumPy's rule, slicePrefix1sSize).
Tensor without_leading_ones(const Tensor& t) {
  const Shape& s = t.sizes();
  auto first = std::find_if(s.begin(), s.end(), [](int64_t n) { return n != 1; });
  return first == s.begin() ? t : t.view(Shape(first, s.end()));
}

// PyTorch's copy_to, the write through basic indices: a value of the view's shape is copied, a
// 0-d one fills (defined where elements share memory), any other is broadcast to the view.
void copy_to(Tensor view, const Tensor& value) {
  if (view.sizes() == value.sizes())
    view.copy_(value);
  else if (value.dim() == 0)
    view.fill_(value);
  else
    view.copy_(without_leading_ones(value).expand(view.sizes()));
}

} // namespace

Tensor Tensor::index(std::initializer_list<TensorIndex> indices, Caller caller) const {
  detail::CallSite site(caller, "index");
  return index(std::vector<TensorIndex>(indices));
}
Tensor Tensor::index(const std::vector<TensorIndex>& indices, Caller caller) const {
  detail::CallSite site(caller, "index");
  check_index_list(*this, indices, "index");
  Parsed p = parse(*this, indices);
  if (p.advanced.empty()) return p.view;
  const IntIndices idx = integer_indices(p.advanced);
  const Layout l = layout_of(p.view.sizes(), idx);
  if (idx.size() == 1) return index_along(p.view, idx[0].first, idx[0].second);
  return take_positions(p.view, l.shape,
                        positions_tensor(select_positions(p.view, idx, l), p.view.device()));
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value,
                           Caller caller) {
  detail::CallSite site(caller, "index_put_");
  return index_put_(std::vector<TensorIndex>(indices), value);
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value,
                           Caller caller) {
  detail::CallSite site(caller, "index_put_");
  return index_put_(std::vector<TensorIndex>(indices), value);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Scalar& value,
                           Caller caller) {
  detail::CallSite site(caller, "index_put_");
  return index_put_(indices, full({}, value, TensorOptions().dtype(dtype()).device(device())));
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& value,
                           Caller caller) {
  detail::CallSite site(caller, "index_put_");
  check_index_list(*this, indices, "index_put_");
  // PyTorch's setitem writes a lone bool as a basic index: false writes nothing, true writes
  // through a new leading dim.
  if (const bool* b = indices.size() == 1 ? std::get_if<bool>(&indices[0].value()) : nullptr) {
    if (*b) copy_to(unsqueeze(0), value);
    return *this;
  }
  Parsed p = parse(*this, indices);
  if (p.is_self) detail::check_inplace_grad(*this); // its error for the tensor, not a view of it
  if (p.advanced.empty()) {
    copy_to(p.view, value);
    return *this;
  }
  const Tensor v = without_leading_ones(value);
  const Advanced& first = p.advanced[0];
  if (p.advanced.size() == 1 && first.is_mask && v.numel() == 1 && v.device().is_cpu() &&
      first.index.device() == device()) {
    // PyTorch fills through a lone mask with a one-element value on the CPU, whatever its dtype
    // and shape (masked_fill_ with value.item(), checked against the dtype). An elementwise
    // select, which stays lazy.
    fe::check_scalar_fits(v.item(), dtype());
    Shape s(static_cast<size_t>(first.dim), 1);
    s.insert(s.end(), first.index.sizes().begin(), first.index.sizes().end());
    s.resize(static_cast<size_t>(p.view.dim()), 1);
    p.view.masked_fill_(first.index.to(kBool).reshape(s), v.reshape({}));
  } else {
    // PyTorch's index_put_: the value and the indices may not share the tensor's memory.
    detail::assert_no_overlap(*this, v);
    for (const Advanced& a : p.advanced)
      detail::assert_no_overlap(*this, a.index);
    const IntIndices idx = integer_indices(p.advanced);
    const Layout l = layout_of(p.view.sizes(), idx);
    if (!ir::expandable_to(v.sizes(), l.shape))
      throw Error(fmt::format("shape mismatch: value tensor of shape {} cannot be broadcast to "
                              "indexing result of shape {}",
                              ir::shape_str(v.sizes()), ir::shape_str(l.shape)));
    if (v.dtype() != dtype())
      throw Error(fmt::format("Index put requires the source and destination dtypes match, got "
                              "{} for the destination and {} for the source.",
                              fe::cpp_type_name(dtype()), fe::cpp_type_name(v.dtype())));
    if (detail::has_internal_overlap(p.view)) {
      // Elements share locations (an expanded tensor): one value is defined, written where any
      // element naming a location is selected; values that differ per element are not.
      if (v.numel() != 1) detail::assert_no_internal_overlap(p.view);
      Tensor selected = zeros(p.view.sizes(), TensorOptions().dtype(kBool).device(device()));
      selected.index_put_(advanced_indices(p), true);
      p.view.masked_fill_(selected, v.reshape({}));
      return *this;
    }
    if (idx.size() == 1) {
      // One index tensor (or 1-d mask) at dim d: a Scatter along d of the value broadcast to the
      // selection's shape, with the index's dims flattened into dim d.
      const auto& [d, index] = idx[0];
      const Tensor checked =
          checked_indices(index, p.view.size(d), 0, IndexRule::Wrap, p.view.device());
      FlatIndex flat = flat_along(checked, p.view.sizes(), d);
      Tensor put = v.to(p.view.device()).expand(l.shape).reshape(flat.shape);
      p.view.copy_(autograd::scatter_at(p.view, d, flat.index, put, false, "IndexPutBackward0"));
    } else {
      const Tensor positions = positions_tensor(select_positions(p.view, idx, l), device());
      p.view.copy_(put_positions(p.view, positions, v.to(p.view.device()).expand(l.shape),
                                 "IndexPutBackward0"));
    }
  }
  // Written as a whole, the tensor's history is this op, as PyTorch names it.
  if (p.view.sizes() == sizes() && p.view.stride() == stride() &&
      p.view.storage_offset() == storage_offset())
    autograd::rename(*this, "IndexPutBackward0");
  return *this;
}

// --- selection ---

Tensor nonzero(const Tensor& t, Caller caller) {
  detail::CallSite site(caller, "nonzero");
  if (t.is_complex()) return nonzero(t != 0); // nonzero where either part is
  HostValues v(t);
  std::vector<int64_t> hits;
  const bool is_float = t.is_floating_point();
  for (int64_t i = 0, count = t.numel(); i < count; ++i)
    if (is_float ? v.as_double(i) != 0.0 : v.as_int(i) != 0) hits.push_back(i);
  const Shape shape = t.sizes();
  const int64_t nd = t.dim(), n = static_cast<int64_t>(hits.size());
  const std::vector<int64_t> cs = ir::contiguous_strides(shape);
  std::vector<int64_t> coords(static_cast<size_t>(n * nd));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t k = 0; k < nd; ++k)
      coords[static_cast<size_t>(r * nd + k)] = hits[r] / cs[k] % shape[k];
  return tensor(coords, {n, nd}, TensorOptions().dtype(kInt64).device(t.device()));
}

namespace {
// gather's and scatter's checks count a 0-d tensor as a vector of one, as PyTorch does.
int64_t nonempty_dim(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
int64_t nonempty_size(const Tensor& t, int64_t k) { return t.dim() == 0 ? 1 : t.size(k); }

// gather's checks, for a nonempty index (PyTorch checks nothing of an empty one).
void check_gather_shapes(const Tensor& t, int64_t d, const Tensor& index) {
  if (index.dtype() != kInt64) throw Error("gather(): Expected dtype int64 for index");
  if (nonempty_dim(index) != nonempty_dim(t))
    throw Error("Index tensor must have the same number of dimensions as input tensor");
  for (int64_t k = 0; k < t.dim(); ++k)
    if (k != d && index.size(k) > t.size(k))
      throw Error(fmt::format("Size does not match at dimension {} expected index {} to be "
                              "smaller than self {} apart from dimension {}",
                              k, ir::shape_str(index.sizes()), ir::shape_str(t.sizes()), d));
}

// scatter's checks; src is null for a scalar value.
// PyTorch checks the dtypes first, and no shapes for an empty index.
void check_scatter_shapes(const Tensor& t, int64_t d, const Tensor& index, const Tensor* src,
                          const char* op = "scatter") {
  if (index.numel() != 0 && index.dtype() != kInt64)
    throw Error(fmt::format("{}(): Expected dtype int64 for index", op));
  if (src && src->dtype() != t.dtype())
    throw Error(fmt::format("{}(): Expected self.dtype to be equal to src.dtype", op));
  if (index.numel() == 0) return;
  if (nonempty_dim(index) != nonempty_dim(t))
    throw Error("Index tensor must have the same number of dimensions as self tensor");
  if (src && nonempty_dim(*src) != nonempty_dim(index))
    throw Error("Index tensor must have the same number of dimensions as src tensor");
  for (int64_t k = 0; k < nonempty_dim(t); ++k)
    if ((k != d && nonempty_size(index, k) > nonempty_size(t, k)) ||
        (src && nonempty_size(index, k) > nonempty_size(*src, k))) {
      std::string msg =
          fmt::format("Expected index {} to be smaller than self {} apart from dimension {}",
                      ir::shape_str(index.sizes()), ir::shape_str(t.sizes()), d);
      if (src)
        msg += fmt::format(" and to be smaller size than src {}", ir::shape_str(src->sizes()));
      throw Error(msg);
    }
}
} // namespace

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index, Caller caller) {
  detail::CallSite site(caller, "index_select");
  if (index.dim() > 1) throw Error("index_select(): Index is supposed to be a vector");
  if (t.dim() == 0 && index.numel() != 1)
    throw Error(fmt::format(
        "index_select(): Index to scalar can have only 1 value, got {} value(s)", index.numel()));
  if (index.dtype() != kInt64 && index.dtype() != kInt32)
    throw Error("index_select(): Expected dtype int32 or int64 for index");
  int64_t d = ir::wrap_dim(dim, std::max<int64_t>(t.dim(), 1));
  if (t.dim() == 0) { // the one index must be 0 (or -1)
    checked_indices(index, 1, 0, IndexRule::Select, t.device());
    Tensor first = zeros({1}, TensorOptions().dtype(kInt64).device(t.device()));
    Tensor out = autograd::gather_at(t.reshape({1}), 0, first, "IndexSelectBackward0").reshape({});
    autograd::rename(out, "IndexSelectBackward0");
    return out;
  }
  // The index along d, broadcast over t's other dims.
  Shape along(static_cast<size_t>(t.dim()), 1), shape = t.sizes();
  along[static_cast<size_t>(d)] = shape[static_cast<size_t>(d)] = index.numel();
  Tensor idx = checked_indices(index, t.size(d), d, IndexRule::Select, t.device());
  return autograd::gather_at(t, d, idx.reshape(along).expand(shape), "IndexSelectBackward0");
}

Tensor masked_select(const Tensor& t, const Tensor& mask, Caller caller) {
  detail::CallSite site(caller, "masked_select");
  if (!is_mask_dtype(mask.dtype()))
    throw Error("masked_select: expected BoolTensor or ByteTensor for mask");
  Shape s = ir::broadcast_shapes(mask.sizes(), t.sizes()); // PyTorch's order, for its error
  // The flat positions of the mask's true elements in the broadcast shape.
  std::vector<int64_t> hits;
  {
    HostValues m(mask.to(kBool).expand(s));
    for (int64_t i = 0, n = ir::numel(s); i < n; ++i)
      if (m.as_int(i) != 0) hits.push_back(i);
  }
  const Tensor positions = positions_tensor(hits, t.device());
  Tensor out;
  {
    NoGradGuard no_grad; // one node, straight from t
    out = take_positions(t.expand(s), {positions.numel()}, positions);
  }
  // PyTorch's MaskedSelectBackward0 saves the mask (here its positions), which a backward
  // without retain_graph frees: g goes to the selected places, summed over the dims t was
  // broadcast along.
  autograd::record(
      "MaskedSelectBackward0", {t}, {out}, {positions},
      [s, in = t.sizes()](const std::vector<Tensor>& g, const std::vector<Tensor>& saved) {
        return std::vector<Tensor>{autograd::sum_to(add_at_positions(g[0], s, saved[0]), in)};
      });
  return out;
}

Tensor masked_fill(const Tensor& t, const Tensor& mask, const Tensor& value, Caller caller) {
  detail::CallSite site(caller, "masked_fill");
  if (mask.dtype() != kBool)
    throw Error(fmt::format("masked_fill_ only supports boolean masks, but got mask with dtype {}",
                            fe::type_meta_name(mask.dtype())));
  if (value.dim() != 0)
    throw Error(fmt::format("masked_fill_ only supports a 0-dimensional value tensor, but got "
                            "tensor with {} dimension(s).",
                            value.dim()));
  Tensor out = where(mask, value.to(t.device()).to(t.dtype()), t);
  // PyTorch numbers the overloads: masked_fill.Scalar 0, masked_fill.Tensor 1.
  autograd::rename(out, "MaskedFillBackward1");
  return out;
}

Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& value, Caller caller) {
  detail::CallSite site(caller, "masked_fill");
  Tensor out = masked_fill(t, mask, full({}, value, t.options()));
  autograd::rename(out, "MaskedFillBackward0");
  return out;
}

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index, Caller caller) {
  detail::CallSite site(caller, "gather");
  int64_t d = ir::wrap_dim(dim, std::max<int64_t>(t.dim(), 1));
  if (index.numel() == 0) { // nothing read: PyTorch checks nothing
    Tensor out = zeros(index.sizes(), t.options());
    autograd::record("GatherBackward0", {t}, {out}, {index}, // saved, as PyTorch saves it
                     [shape = t.sizes(), options = t.options()](const std::vector<Tensor>&,
                                                                const std::vector<Tensor>&) {
                       return std::vector<Tensor>{zeros(shape, options)};
                     });
    return out;
  }
  check_gather_shapes(t, d, index);
  if (t.dim() == 0 || index.dim() == 0) { // 0-d among vectors: all seen as vectors
    Tensor out = gather(t.reshape({-1}), 0, index.reshape({-1})).reshape(index.sizes());
    autograd::rename(out, "GatherBackward0");
    return out;
  }
  return autograd::gather_at(
      t, d, checked_indices(index, t.size(d), d, IndexRule::Bounds, t.device()), "GatherBackward0");
}

namespace {
// value's elements added into t along d at idx (checked indices, value's shape). Bools add as
// "or": in int64, where no count of them wraps to false.
Tensor add_at(const Tensor& t, int64_t d, const Tensor& idx, const Tensor& value,
              const char* grad_name) {
  if (t.dtype() == kBool)
    return autograd::scatter_at(t.to(kInt64), d, idx, value.to(kInt64), true, grad_name) != 0;
  return autograd::scatter_at(t, d, idx, value, true, grad_name);
}

// scatter and scatter_add: src's elements at index's places (src may be larger than index)
// written, or added, along d where index says.
Tensor scatter_src(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, bool add) {
  const char* op = add ? "scatter_add" : "scatter";
  const char* grad_name = add ? "ScatterAddBackward0" : "ScatterBackward0";
  int64_t d = ir::wrap_dim(dim, std::max<int64_t>(t.dim(), 1));
  check_scatter_shapes(t, d, index, &src, op);
  if (src.device() != t.device()) fe::throw_device_mismatch(t.device(), src.device());
  if (index.numel() == 0 || std::min({t.dim(), index.dim(), src.dim()}) == 0) {
    // Nothing written, or 0-d tensors among vectors: all seen as vectors.
    Tensor out = index.numel() == 0
                     ? t.clone()
                     : scatter_src(t.reshape({-1}), 0, index.reshape({-1}), src.reshape({-1}), add)
                           .reshape(t.sizes());
    autograd::rename(out, grad_name);
    return out;
  }
  std::vector<TensorIndex> box;
  for (int64_t k = 0; k < index.dim(); ++k)
    box.emplace_back(Slice(0, index.size(k)));
  Tensor idx = checked_indices(index, t.size(d), d, IndexRule::Bounds, t.device());
  if (add) return add_at(t, d, idx, src.index(box), grad_name);
  return autograd::scatter_at(t, d, idx, src.index(box), false, grad_name);
}
} // namespace

Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src,
               Caller caller) {
  detail::CallSite site(caller, "scatter");
  return scatter_src(t, dim, index, src, false);
}

Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src,
                   Caller caller) {
  detail::CallSite site(caller, "scatter_add");
  return scatter_src(t, dim, index, src, true);
}

Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha, Caller caller) {
  detail::CallSite site(caller, "index_add");
  // PyTorch's index_add meta function's checks, in its order.
  const int64_t d = ir::wrap_dim(dim, std::max<int64_t>(t.dim(), 1));
  if (index.dim() > 1) throw Error("index_add_(): Index is supposed to be a vector");
  if (index.dtype() != kInt64 && index.dtype() != kInt32)
    throw Error("index_add_(): Expected dtype int32/int64 for index");
  if (source.dtype() != t.dtype())
    throw Error(
        fmt::format("index_add_(): self ({}) and source ({}) must have the same scalar type",
                    fe::cpp_type_name(t.dtype()), fe::cpp_type_name(source.dtype())));
  if (d != 0 && d >= source.dim())
    throw Error(fmt::format(
        "index_add_(): Indexing dim {} is out of bounds of the source tensor with dim {}", d,
        source.dim()));
  const int64_t along = source.dim() == 0 ? 1 : source.size(d);
  if (index.numel() != along)
    throw Error(fmt::format("index_add_(): Number of indices ({}) should be equal to "
                            "source.size(dim) ({})",
                            index.numel(), along));
  Shape self_rest = t.sizes(), source_rest = source.sizes();
  if (t.dim() != 0 && source.dim() != 0) {
    self_rest.erase(self_rest.begin() + d);
    source_rest.erase(source_rest.begin() + d);
  }
  if (self_rest != source_rest)
    throw Error(fmt::format("source tensor shape must match self tensor shape, excluding the "
                            "specified dimension. Got self.shape = {} source.shape = {}",
                            ir::shape_str(t.sizes()), ir::shape_str(source.sizes())));
  if (source.device() != t.device()) fe::throw_device_mismatch(t.device(), source.device());
  fe::check_scalar_fits(alpha, t.dtype());
  const int64_t size = t.dim() == 0 ? 1 : t.size(d);
  Tensor idx = checked_indices(index, size, d, IndexRule::Select, t.device());
  // alpha in self's dtype first, as PyTorch's kernel takes it (2.5 into int32 is 2): the product
  // keeps the source's dtype.
  const Scalar a = ir::to_dtype(alpha, t.dtype());
  Tensor value = a.to_double() == 1.0 && a.imag() == 0.0 ? source : source * a;
  if (t.dim() == 0 || source.dim() == 0) { // both 0-d (the shape check above): as vectors
    Tensor out =
        add_at(t.reshape({-1}), 0, idx.reshape({-1}), value.reshape({-1}), "IndexAddBackward0")
            .reshape(t.sizes());
    autograd::rename(out, "IndexAddBackward0");
    return out;
  }
  // index[i] for source's slice i along d: the index along d, broadcast over source's dims.
  Shape lifted(static_cast<size_t>(source.dim()), 1);
  lifted[static_cast<size_t>(d)] = along;
  return add_at(t, d, idx.reshape(lifted).expand(source.sizes()), value, "IndexAddBackward0");
}

Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value,
               Caller caller) {
  detail::CallSite site(caller, "scatter");
  check_scatter_shapes(t, ir::wrap_dim(dim, std::max<int64_t>(t.dim(), 1)), index, nullptr);
  Tensor out;
  {
    NoGradGuard no_grad; // one node, with t its only input
    out = scatter(t, dim, index, full(index.sizes(), value, t.options()));
  }
  // PyTorch's ScatterBackward1 (scatter.value) saves the index and writes zeros there.
  autograd::record("ScatterBackward1", {t}, {out}, {index},
                   [dim](const std::vector<Tensor>& g, const std::vector<Tensor>& saved) {
                     return std::vector<Tensor>{g[0].scatter(dim, saved[0], Scalar(0.0))};
                   });
  return out;
}

Tensor unique(const Tensor& t, Caller caller) {
  detail::CallSite site(caller, "unique");
  // PyTorch's unique kernel takes no complex dtype.
  if (t.is_complex())
    throw Error(fmt::format("\"unique\" not implemented for '{}'", fe::cpp_type_name(t.dtype())));
  TensorOptions o = TensorOptions().dtype(t.dtype()).device(t.device());
  if (t.is_floating_point()) {
    std::vector<double> v = t.to_vector<double>();
    std::sort(v.begin(), v.end(),
              [](double a, double b) { return a < b || (!std::isnan(a) && std::isnan(b)); });
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return tensor(v, {static_cast<int64_t>(v.size())}, TensorOptions().dtype(kFloat64))
        .to(t.dtype())
        .to(t.device());
  }
  HostValues h(t);
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = h.as_int(static_cast<int64_t>(i));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return tensor(v, {static_cast<int64_t>(v.size())}, TensorOptions().dtype(kInt64))
      .to(o.dtype_or(kInt64))
      .to(t.device());
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length, Caller caller) {
  detail::CallSite site(caller, "narrow");
  return t.narrow(dim, start, length);
}
Tensor select(const Tensor& t, int64_t dim, int64_t index, Caller caller) {
  detail::CallSite site(caller, "select");
  return t.select(dim, index);
}

// --- the members that name the free functions above ---

Tensor Tensor::index_select(int64_t dim, const Tensor& index, Caller caller) const {
  return tj::index_select(*this, dim, index, caller);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index, Caller caller) const {
  return tj::gather(*this, dim, index, caller);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src, Caller caller) const {
  return tj::scatter(*this, dim, index, src, caller);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value, Caller caller) const {
  return tj::scatter(*this, dim, index, value, caller);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src,
                           Caller caller) const {
  return tj::scatter_add(*this, dim, index, src, caller);
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha, Caller caller) const {
  return tj::index_add(*this, dim, index, source, alpha, caller);
}
Tensor Tensor::masked_select(const Tensor& mask, Caller caller) const {
  return tj::masked_select(*this, mask, caller);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value, Caller caller) const {
  return tj::masked_fill(*this, mask, value, caller);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value, Caller caller) const {
  return tj::masked_fill(*this, mask, value, caller);
}
std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t dim,
                                  Caller caller) const {
  return tj::split(*this, sizes, dim, caller);
}
Tensor Tensor::flip(IntArrayRef dims, Caller caller) const { return tj::flip(*this, dims, caller); }
Tensor Tensor::trace(Caller caller) const { return tj::trace(*this, caller); }
} // namespace tj
