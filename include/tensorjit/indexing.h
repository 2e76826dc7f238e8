// Indexing (t.index({...}), t.index_put_({...}, v)) and joining/selection ops.
#pragma once
#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "tensorjit/tensor.h"

namespace tj {

namespace indexing {

// Python's start:stop:step; an absent bound is the dimension's end.
struct Slice {
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start(start), stop(stop), step(step) {}
  std::optional<int64_t> start, stop, step;
};

// A new dimension of size 1 (Python's None).
inline constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType {};
// As many full slices as the other indices leave dims (Python's ...).
inline constexpr EllipsisIndexType Ellipsis{};

// One entry of an index list: an integer, a Slice, None, Ellipsis ("..."),
// a bool, or a tensor (bool masks and integer indices: advanced indexing).
class TensorIndex {
public:
  TensorIndex(int64_t i) : v_(i) {}
  TensorIndex(int i) : v_(static_cast<int64_t>(i)) {}
  TensorIndex(bool b) : v_(b) {}
  TensorIndex(Slice s) : v_(s) {}
  TensorIndex(std::nullopt_t) : v_(std::nullopt) {}
  TensorIndex(EllipsisIndexType) : v_(EllipsisIndexType{}) {}
  TensorIndex(const char* s);
  TensorIndex(Tensor t) : v_(std::move(t)) {}

  using Variant = std::variant<int64_t, bool, Slice, std::nullopt_t, EllipsisIndexType, Tensor>;
  const Variant& value() const { return v_; }

private:
  Variant v_;
};

} // namespace indexing

// --- joining ---
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0, Caller where = {});
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0, Caller where = {});
// Views of consecutive pieces of `split_size` along `dim` (the last may be smaller).
std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim = 0, Caller where = {});
std::vector<Tensor> split(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim = 0,
                          Caller where = {});
std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim = 0, Caller where = {});
// The slices along `dim`, each a view without that dim.
std::vector<Tensor> unbind(const Tensor& t, int64_t dim = 0, Caller where = {});

// --- selection and rearrangement (copies) ---
Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index, Caller where = {});
Tensor masked_select(const Tensor& t, const Tensor& mask, Caller where = {});
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& value, Caller where = {});
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Tensor& value, Caller where = {});
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index, Caller where = {});
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src,
               Caller where = {});
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value,
               Caller where = {});
// t with src's elements (at index's places) added along dim where index says, repeated
// indices adding each (torch.scatter_add).
Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src,
                   Caller where = {});
// t with alpha * source added along dim at the places a 1-d index names, source's slice i at
// index[i] (torch.index_add).
Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1, Caller where = {});
Tensor nonzero(const Tensor& t, Caller where = {});
Tensor flip(const Tensor& t, IntArrayRef dims, Caller where = {});
Tensor roll(const Tensor& t, IntArrayRef shifts, IntArrayRef dims = {}, Caller where = {});
Tensor repeat(const Tensor& t, IntArrayRef repeats, Caller where = {});
// 1-D input: a matrix with it on diagonal `diagonal`; 2-D: that diagonal (a copy).
Tensor diag(const Tensor& t, int64_t diagonal = 0, Caller where = {});
Tensor diagonal(const Tensor& t, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1,
                Caller where = {});
Tensor trace(const Tensor& t, Caller where = {});
Tensor triu(const Tensor& t, int64_t diagonal = 0, Caller where = {});
Tensor tril(const Tensor& t, int64_t diagonal = 0, Caller where = {});
// The sorted distinct values.
Tensor unique(const Tensor& t, Caller where = {});
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length, Caller where = {});
Tensor select(const Tensor& t, int64_t dim, int64_t index, Caller where = {});

} // namespace tj
