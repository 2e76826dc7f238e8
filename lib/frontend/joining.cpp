// Joining and rearranging: cat and stack write the pieces into a fresh storage, split and
// chunk are views; flip, roll, repeat, diagonals and triangles build their results from the
// input's elements, each with its PyTorch backward.
#include "tensorjit/indexing.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "lib/autograd/formulas.h"
#include "lib/autograd/node.h"
#include "lib/frontend/graph_builders.h"
#include "lib/frontend/overlap.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "tensorjit/functions.h"

namespace tj {

// --- joining ---

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "cat");
  if (tensors.empty()) throw Error("torch.cat(): expected a non-empty list of Tensors");
  // PyTorch skips 1-D empty tensors, a legacy placeholder for "nothing"; its errors still count
  // positions in the whole list.
  std::vector<Tensor> parts;
  std::vector<size_t> positions;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    detail::check_defined(t, "cat");
    if (t.dim() == 0)
      throw Error(
          fmt::format("zero-dimensional tensor (at position {}) cannot be concatenated", i));
    if (!(t.dim() == 1 && t.numel() == 0)) {
      parts.push_back(t);
      positions.push_back(i);
    }
  }
  DType dtype = tensors[0].dtype();
  for (const auto& t : tensors)
    dtype = promote_types(dtype, t.dtype());
  Device device = tensors[0].device();
  for (const auto& t : tensors)
    if (t.device() != device) fe::throw_device_mismatch(device, t.device());
  if (parts.empty()) return empty({0}, TensorOptions().dtype(dtype).device(device));
  const Tensor& ref = parts[0];
  int64_t d = ir::wrap_dim(dim, ref.dim());
  Shape shape = ref.sizes();
  shape[d] = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = parts[i];
    if (t.dim() != ref.dim())
      throw Error(fmt::format("Tensors must have same number of dimensions: got {} and {}",
                              ref.dim(), t.dim()));
    for (int64_t k = 0; k < ref.dim(); ++k)
      if (k != d && t.size(k) != ref.size(k))
        throw Error(fmt::format("Sizes of tensors must match except in dimension {}. Expected "
                                "size {} but got size {} for tensor number {} in the list.",
                                d, ref.size(k), t.size(k), positions[i]));
    shape[d] += t.size(d);
  }
  Tensor out = empty(shape, TensorOptions().dtype(dtype).device(device));
  std::vector<int64_t> lengths;
  {
    NoGradGuard no_grad; // one node for the whole join
    int64_t at = 0;
    for (const auto& t : parts) {
      if (t.size(d) > 0) out.narrow(d, at, t.size(d)).copy_(t);
      lengths.push_back(t.size(d));
      at += t.size(d);
    }
  }
  // Each part's gradient is its slice of the result's; a skipped placeholder's is empty, as
  // PyTorch's.
  std::vector<int64_t> skipped_or_length(tensors.size(), -1);
  for (size_t i = 0; i < positions.size(); ++i)
    skipped_or_length[positions[i]] = lengths[i];
  autograd::record(
      "CatBackward0", tensors, {out}, {},
      [d, skipped_or_length](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
        std::vector<Tensor> out;
        int64_t at = 0;
        for (int64_t n : skipped_or_length) {
          if (n < 0) {
            out.push_back(zeros({0}, g[0].options()));
            continue;
          }
          out.push_back(g[0].narrow(d, at, n));
          at += n;
        }
        return out;
      });
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "stack");
  if (tensors.empty()) throw Error("stack expects a non-empty TensorList");
  for (size_t i = 1; i < tensors.size(); ++i)
    if (tensors[i].sizes() != tensors[0].sizes())
      throw Error(fmt::format(
          "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
          ir::shape_str(tensors[0].sizes()), ir::shape_str(tensors[i].sizes()), i));
  int64_t d = ir::wrap_dim(dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  for (const auto& t : tensors)
    parts.push_back(t.unsqueeze(d));
  Tensor out = cat(parts, d);
  autograd::rename(out, "StackBackward0");
  return out;
}

namespace {
// Each piece's history is named after the op that split it, as PyTorch names it; made with grad
// mode on, the pieces are views that refuse in-place writes autograd would track (PyTorch's
// MULTI_OUTPUT_NODE).
std::vector<Tensor> named(std::vector<Tensor> pieces, const char* grad_name) {
  for (size_t i = 0; i < pieces.size(); ++i) {
    autograd::rename(pieces[i], grad_name);
    detail::TensorImpl& impl = *pieces[i].impl();
    if (impl.is_view && !impl.made_without_grad) impl.multi_output = static_cast<int32_t>(i);
  }
  return pieces;
}
} // namespace

std::vector<Tensor> unbind(const Tensor& t, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "unbind");
  if (t.dim() == 0)
    throw Error(fmt::format("Dimension specified as {} but tensor has no dimensions", dim));
  const int64_t d = ir::wrap_dim(dim, t.dim());
  std::vector<Tensor> out;
  for (int64_t i = 0; i < t.size(d); ++i)
    out.push_back(t.select(d, i));
  return named(std::move(out), "UnbindBackward0");
}

std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "split");
  if (t.dim() == 0) throw Error("split expects at least a 1-dimensional tensor");
  if (split_size < 0)
    throw Error(
        fmt::format("split expects split_size be non-negative, but got split_size={}", split_size));
  int64_t d = ir::wrap_dim(dim, t.dim());
  int64_t n = t.size(d);
  if (split_size == 0 && n != 0)
    throw Error(fmt::format("split_size can only be 0 if dimension size is 0, but got dimension "
                            "size of {}",
                            n));
  std::vector<Tensor> out;
  if (n == 0) return named({t.narrow(d, 0, 0)}, "SplitBackward0");
  for (int64_t at = 0; at < n; at += split_size)
    out.push_back(t.narrow(d, at, std::min(split_size, n - at)));
  return named(std::move(out), "SplitBackward0");
}

std::vector<Tensor> split(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim,
                          Caller caller) {
  detail::CallSite site(caller, "split");
  if (t.dim() == 0) throw Error("split expects at least a 1-dimensional tensor");
  int64_t d = ir::wrap_dim(dim, t.dim());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      throw Error(
          fmt::format("split_with_sizes expects split_sizes have only non-negative entries, "
                      "but got split_sizes=[{}]",
                      fmt::join(sizes, ", ")));
    total += s;
  }
  if (total != t.size(d))
    throw Error(fmt::format("split_with_sizes expects split_sizes to sum exactly to {} (input "
                            "tensor's size at dimension {}), but got split_sizes=[{}]",
                            t.size(d), d, fmt::join(sizes, ", ")));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(t.narrow(d, at, s));
    at += s;
  }
  return named(std::move(out), "SplitWithSizesBackward0");
}

std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "chunk");
  if (t.dim() == 0) throw Error("chunk expects at least a 1-dimensional tensor");
  if (chunks <= 0)
    throw Error(fmt::format("chunk expects `chunks` to be greater than 0, got: {}", chunks));
  int64_t d = ir::wrap_dim(dim, t.dim());
  // An empty dim still gives `chunks` (empty) pieces: split would give one.
  if (t.size(d) == 0) return split(t, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  int64_t size = (t.size(d) + chunks - 1) / chunks;
  return split(t, size, d);
}

// --- rearranging ---

Tensor flip(const Tensor& t, IntArrayRef dims, Caller caller) {
  detail::CallSite site(caller, "flip");
  // A 0-d tensor takes dim 0 (or -1) and has nothing to reverse.
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(t.dim(), 1)), false);
  ir::NodePtr n = detail::node_of(t);
  for (int64_t dim : dims) {
    int64_t d = ir::wrap_dim(dim, t.dim());
    if (seen[d]) throw Error(fmt::format("dim {} appears multiple times in the list of dims", d));
    seen[d] = true;
    if (t.dim() > 0) n = fe::slice(n, d, t.size(d) - 1, -1, -1);
  }
  Tensor out = detail::wrap(ir::make_node(ir::Op::Cast, n->dtype, n->shape, {n}));
  if (const auto layout = detail::preserved_layout(t)) { // laid out as t is, as PyTorch's
    NoGradGuard no_grad;
    out = detail::with_layout(out.permute(layout->order).contiguous(), t, *layout);
  }
  autograd::record("FlipBackward0", {t}, {out}, {},
                   [dims](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
                     return std::vector<Tensor>{flip(g[0], dims)};
                   });
  return out;
}

Tensor roll(const Tensor& t, IntArrayRef shifts, IntArrayRef dims, Caller caller) {
  detail::CallSite site(caller, "roll");
  if (shifts.empty()) throw Error("`shifts` required");
  if (dims.empty() && shifts.size() != 1)
    throw Error(fmt::format("shifts and dimensions must align. shifts: {}, dims:0", shifts.size()));
  if (!dims.empty() && shifts.size() != dims.size())
    throw Error(fmt::format("shifts and dimensions must align. shifts: {}, dims:{}", shifts.size(),
                            dims.size()));
  Tensor out;
  {
    NoGradGuard no_grad; // one node for the whole roll
    if (dims.empty()) {  // the flattened tensor rolled, in storage of its own (not a view)
      out = detail::wrap(detail::node_of(roll(t.flatten(), shifts, {0}).view(t.sizes())));
    } else {
      out = t.clone();
      for (size_t i = 0; i < dims.size(); ++i) {
        int64_t n = t.size(dims[i]); // a 0-d tensor has no dim to roll along: PyTorch's error
        int64_t d = ir::wrap_dim(dims[i], t.dim());
        int64_t s = n ? ((shifts[i] % n) + n) % n : 0;
        if (s) out = cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
      }
    }
  }
  // The gradient rolls back by the opposite shifts; it reads no saved value.
  std::vector<int64_t> back(shifts.begin(), shifts.end());
  for (int64_t& s : back)
    s = -s;
  autograd::record("RollBackward0", {t}, {out}, {},
                   [back, dims = std::vector<int64_t>(dims.begin(), dims.end())](
                       const std::vector<Tensor>& g, const std::vector<Tensor>&) {
                     return std::vector<Tensor>{roll(g[0], back, dims)};
                   });
  return out;
}

Tensor repeat(const Tensor& t, IntArrayRef repeats, Caller caller) {
  detail::CallSite site(caller, "repeat");
  if (static_cast<int64_t>(repeats.size()) < t.dim())
    throw Error("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                "of tensor");
  size_t lead = repeats.size() - static_cast<size_t>(t.dim());
  Shape padded(lead, 1), inter, expanded, result;
  padded.insert(padded.end(), t.sizes().begin(), t.sizes().end());
  for (size_t i = 0; i < repeats.size(); ++i) {
    inter.insert(inter.end(), {1, padded[i]});
    expanded.insert(expanded.end(), {repeats[i], padded[i]});
    result.push_back(repeats[i] * padded[i]);
  }
  for (int64_t size : result) // PyTorch names the first negative size of the result
    if (size < 0)
      throw Error(fmt::format("Trying to create tensor with negative dimension {}: [{}]", size,
                              fmt::join(result, ", ")));
  Tensor out = t.reshape(inter).expand(expanded).contiguous().view(result);
  autograd::rename(out, "RepeatBackward0");
  return out;
}

Tensor diag(const Tensor& t, int64_t k, Caller caller) {
  detail::CallSite site(caller, "diag");
  if (t.dim() == 1) {
    int64_t n = t.size(0) + (k < 0 ? -k : k);
    Tensor out = zeros({n, n}, t.options());
    {
      NoGradGuard no_grad;
      out.diagonal(k).copy_(t);
    }
    autograd::record("DiagEmbedBackward0", {t}, {out}, {},
                     [k](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
                       return std::vector<Tensor>{g[0].diagonal(k)};
                     });
    return out;
  }
  if (t.dim() == 2) return t.diagonal(k).clone();
  throw Error("matrix or a vector expected");
}

Tensor diagonal(const Tensor& t, int64_t offset, int64_t dim1, int64_t dim2, Caller caller) {
  detail::CallSite site(caller, "diagonal");
  return t.diagonal(offset, dim1, dim2);
}

Tensor trace(const Tensor& t, Caller caller) {
  detail::CallSite site(caller, "trace");
  if (t.dim() != 2)
    throw Error(fmt::format("trace: expected a matrix, but got tensor with dim {}", t.dim()));
  // The CPU kernel's dispatch: every real and complex type but bool and the 16-bit floats.
  if (t.device().is_cpu() &&
      (t.dtype() == kBool || t.dtype() == kFloat16 || t.dtype() == kBFloat16))
    throw Error(fmt::format("\"trace\" not implemented for '{}'", fe::cpp_type_name(t.dtype())));
  // PyTorch's CPU kernel adds a float32 diagonal in float64 (its accumulate type), in order:
  // the trace of diag(1e8, 1, -1e8) is 1.
  Tensor out = t.dtype() == kFloat32 && t.device().is_cpu()
                   ? t.diagonal().sum(kFloat64).to(kFloat32)
                   : t.diagonal().sum();
  autograd::rename(out, "TraceBackward0");
  return out;
}

namespace {
// Keeps the elements with col - row >= k (upper) or <= k (lower) of the last two dims.
Tensor triangle(const Tensor& t, int64_t k, bool upper) {
  if (t.dim() == 0) throw Error("Dimension specified as -2 but tensor has no dimensions");
  if (t.dim() < 2) ir::wrap_dim(-2, t.dim()); // a vector: throws, dim -2 is out of range
  TensorOptions o = TensorOptions().dtype(kInt64).device(t.device());
  Tensor row = arange(t.size(-2), o).unsqueeze(1), col = arange(t.size(-1), o);
  Tensor diff = col - row;
  Tensor keep = upper ? diff >= k : diff <= k;
  return where(keep, t, zeros_like(t));
}
} // namespace

Tensor triu(const Tensor& t, int64_t k, Caller caller) {
  detail::CallSite site(caller, "triu");
  Tensor out = triangle(t, k, true);
  autograd::rename(out, "TriuBackward0");
  return out;
}
Tensor tril(const Tensor& t, int64_t k, Caller caller) {
  detail::CallSite site(caller, "tril");
  Tensor out = triangle(t, k, false);
  autograd::rename(out, "TrilBackward0");
  return out;
}

// --- the members that name the free functions above ---

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim, Caller caller) const {
  return tj::split(*this, split_size, dim, caller);
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim, Caller caller) const {
  return tj::chunk(*this, chunks, dim, caller);
}

std::vector<Tensor> Tensor::unbind(int64_t dim, Caller caller) const {
  return tj::unbind(*this, dim, caller);
}

Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims, Caller caller) const {
  return tj::roll(*this, shifts, dims, caller);
}

Tensor Tensor::repeat(IntArrayRef repeats, Caller caller) const {
  return tj::repeat(*this, repeats, caller);
}

Tensor Tensor::diag(int64_t diagonal, Caller caller) const {
  return tj::diag(*this, diagonal, caller);
}

Tensor Tensor::triu(int64_t diagonal, Caller caller) const {
  return tj::triu(*this, diagonal, caller);
}

Tensor Tensor::tril(int64_t diagonal, Caller caller) const {
  return tj::tril(*this, diagonal, caller);
}

} // namespace tj
