// tj::linalg's products and norms, composed of other ops (so their gradients come with them;
// cross records PyTorch's as one op), and the printed forms of the structured results.
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <ostream>

#include "lib/autograd/formulas.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "tensorjit/functions.h"
#include "tensorjit/indexing.h"
#include "tensorjit/linalg.h"

namespace tj::linalg {

Tensor matmul(const Tensor& a, const Tensor& b, Caller caller) { return tj::matmul(a, b, caller); }

Tensor cross(const Tensor& a, const Tensor& b, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "linalg.cross");
  if (a.dim() != b.dim())
    throw Error("linalg.cross: inputs must have the same number of dimensions.");
  const int64_t d = ir::wrap_dim(dim, a.dim());
  if (a.size(d) != 3 || b.size(d) != 3)
    throw Error(fmt::format("linalg.cross: inputs dimension {} must have length 3. Got {} and {}",
                            dim, a.size(d), b.size(d)));
  Tensor c;
  {
    NoGradGuard no_grad; // one op, with PyTorch's gradient
    // c_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1}, indices mod 3: each component as PyTorch computes
    // it.
    c = a.roll(-1, d) * b.roll(-2, d) - a.roll(-2, d) * b.roll(-1, d);
  }
  // ga = b* x g, gb = g x a*, summed over the batch dims that broadcast.
  autograd::record("LinalgCrossBackward0", {a, b}, {c}, {a, b},
                   [d](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                     return std::vector<Tensor>{
                         autograd::sum_to(cross(s[1].conj(), g[0], d), s[0].sizes()),
                         autograd::sum_to(cross(g[0], s[0].conj(), d), s[1].sizes())};
                   });
  return c;
}

Tensor matrix_power(const Tensor& A, int64_t n, Caller caller) {
  detail::CallSite site(caller, "linalg.matrix_power");
  if (A.dim() < 2)
    throw Error("linalg.matrix_power: The input tensor A must have at least 2 dimensions.");
  if (A.size(-1) != A.size(-2))
    throw Error(fmt::format("linalg.matrix_power: A must be batches of square matrices, but they "
                            "are {} by {} matrices",
                            A.size(-2), A.size(-1)));
  if (n == 0) { // A's clone written over, as PyTorch does: the result stays in A's graph
    Tensor r = A.clone();
    return r.copy_(eye(A.size(-1), TensorOptions(A.dtype()).device(A.device())));
  }
  if (n == 1) return A.clone();
  if (n == -1) return inv(A);
  const Tensor a = n < 0 ? inv(A) : A;
  // |n| unsigned, as -n overflows for the lowest int64.
  uint64_t m = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  if (m == 2) return a.matmul(a);
  if (m == 3) return a.matmul(a).matmul(a);
  // Repeated squaring from the lowest bit, the products in PyTorch's order.
  Tensor z, result;
  for (; m > 0; m /= 2) {
    z = z.defined() ? z.matmul(z) : a;
    if (m % 2) result = result.defined() ? result.matmul(z) : z;
  }
  return result;
}

Tensor multi_dot(const std::vector<Tensor>& tensors, Caller caller) {
  detail::CallSite site(caller, "linalg.multi_dot");
  const size_t n = tensors.size();
  if (n < 2) throw Error(fmt::format("multi_dot(): expected at least 2 tensors but got {}", n));
  const int64_t first = tensors[0].dim(), last = tensors[n - 1].dim();
  if (first != 1 && first != 2)
    throw Error(fmt::format("multi_dot(): the first tensor must be 1D or 2D but got {}D", first));
  if (last != 1 && last != 2)
    throw Error(fmt::format("multi_dot(): the last tensor must be 1D or 2D but got {}D", last));
  for (size_t i = 1; i + 1 < n; ++i)
    if (tensors[i].dim() != 2)
      throw Error(
          fmt::format("multi_dot(): tensor {} must be 2D but got {}D", i, tensors[i].dim()));
  std::vector<Tensor> m(tensors);
  if (first == 1) m[0] = m[0].unsqueeze(0);
  if (last == 1) m[n - 1] = m[n - 1].unsqueeze(-1);
  for (size_t i = 1; i < n; ++i) {
    if (m[i].dtype() != m[0].dtype())
      throw Error(fmt::format("multi_dot(): all tensors must have be the same dtype but tensor 0 "
                              "is {} and tensor {} {}",
                              fe::type_meta_name(m[0].dtype()), i,
                              fe::type_meta_name(m[i].dtype())));
    if (m[i - 1].size(-1) != m[i].size(0))
      throw Error(fmt::format("multi_dot(): tensors {} and {} with shapes {} and {} cannot be "
                              "multiplied",
                              i - 1, i, ir::shape_str(tensors[i - 1].sizes()),
                              ir::shape_str(tensors[i].sizes())));
  }
  // The order of the products with the fewest multiplications (the matrix chain's dynamic
  // program); p[i] x p[i+1] is matrix i's shape. Of equal costs the first split wins, but three
  // matrices take (AB)C then, as PyTorch's shortcut for them does.
  std::vector<int64_t> p{m[0].size(0)};
  for (const Tensor& t : m)
    p.push_back(t.size(1));
  std::vector<std::vector<int64_t>> cost(n, std::vector<int64_t>(n, 0)), split = cost;
  for (size_t len = 1; len < n; ++len)
    for (size_t i = 0; i + len < n; ++i) {
      const size_t j = i + len;
      cost[i][j] = -1;
      for (size_t k = i; k < j; ++k) {
        const int64_t c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1];
        if (cost[i][j] < 0 || c < cost[i][j] || (n == 3 && c == cost[i][j]))
          cost[i][j] = c, split[i][j] = static_cast<int64_t>(k);
      }
    }
  std::function<Tensor(size_t, size_t)> chain = [&](size_t i, size_t j) -> Tensor {
    if (i == j) return m[i];
    const size_t k = static_cast<size_t>(split[i][j]);
    return chain(i, k).mm(chain(k + 1, j));
  };
  // The vectors' dims dropped by a view, as PyTorch ends.
  Shape out;
  if (first == 2) out.push_back(m[0].size(0));
  if (last == 2) out.push_back(m[n - 1].size(1));
  return chain(0, n - 1).view(out);
}

// --- norms ---

namespace {

void check_float(const Tensor& x, const char* f) {
  if (!is_floating_point(x.dtype()) && !x.is_complex())
    throw Error(fmt::format("{}: Expected a floating point or complex tensor as input. Got {}", f,
                            fe::cpp_type_name(x.dtype())));
}

std::string ord_str(const Ord& ord) {
  if (ord.is_name()) return ord.name();
  const double p = ord.number();
  if (std::isinf(p)) return p > 0 ? "inf" : "-inf";
  return p == std::floor(p) ? fmt::format("{}", static_cast<int64_t>(p)) : fmt::format("{}", p);
}

} // namespace

Tensor vector_norm(const Tensor& x, const Ord& ord, IntArrayRef dim, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "linalg.vector_norm");
  check_float(x, "linalg.vector_norm");
  if (ord.is_name())
    throw Error(fmt::format("linalg.vector_norm: ord must be a number, got '{}'", ord.name()));
  // The max and the negative powers' sums have no value over nothing.
  const double p = ord.number();
  if (x.numel() == 0 && (p < 0 || p == INFINITY)) {
    if (dim.empty())
      throw Error(fmt::format("linalg.vector_norm cannot compute the {} norm on an empty tensor "
                              "because the operation does not have an identity",
                              ord_str(ord)));
    for (int64_t d : dim)
      if (x.size(d) == 0) // PyTorch's words, the missing space included
        throw Error(fmt::format("linalg.vector_norm cannot compute the {} norm on the dimension "
                                "{}because this dimension is empty and the operation does not "
                                "have an identity",
                                ord_str(ord), d));
  }
  // A complex vector's norm is its magnitudes' norm.
  return tj::norm(x.is_complex() ? x.abs() : x, p, dim, keepdim);
}

Tensor matrix_norm(const Tensor& A, const Ord& ord, IntArrayRef dim, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "linalg.matrix_norm");
  // The order first, as PyTorch checks it: it decides the dtypes A may have.
  const double p = ord.is_name() ? 0 : ord.number();
  const bool nuc = ord.is_name() && ord.name() == "nuc", fro = ord.is_name() && ord.name() == "fro";
  if (ord.is_name() ? !nuc && !fro : std::abs(p) != 1 && std::abs(p) != 2 && !std::isinf(p))
    throw Error(fmt::format("linalg.matrix_norm: Order {} not supported.", ord_str(ord)));
  const bool singular_values = nuc || std::abs(p) == 2;
  if (A.dim() < 2)
    throw Error("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  check_float(A, "linalg.matrix_norm");
  if (singular_values && !A.is_complex() && A.dtype() != kFloat32 && A.dtype() != kFloat64)
    throw Error(fmt::format("linalg.matrix_norm: Low precision dtypes not supported. Got {}",
                            fe::cpp_type_name(A.dtype())));
  if (dim.size() != 2)
    throw Error(
        fmt::format("linalg.matrix_norm: dim must be a 2-tuple. Got [{}]", fmt::join(dim, ", ")));
  const int64_t d0 = ir::wrap_dim(dim[0], A.dim()), d1 = ir::wrap_dim(dim[1], A.dim());
  if (d0 == d1)
    throw Error(fmt::format("linalg.matrix_norm: dims must be different. Got ({}, {})", d0, d1));
  if (fro) return tj::norm(A.is_complex() ? A.abs() : A, 2, {d0, d1}, keepdim);
  if (singular_values) { // of the dims moved last
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < A.dim(); ++d)
      if (d != d0 && d != d1) perm.push_back(d);
    perm.insert(perm.end(), {d0, d1});
    Tensor S = svdvals(A.permute(perm));
    Tensor r = nuc ? S.sum(-1) : p > 0 ? S.amax(-1) : S.amin(-1);
    if (keepdim) r = r.unsqueeze(std::min(d0, d1)).unsqueeze(std::max(d0, d1));
    return r;
  }
  // 1: the largest column sum of |A|; inf: the largest row sum; negative: the smallest. The
  // second reduction's dim moves down when the first drops a dim before it.
  int64_t summed = std::isinf(p) ? d1 : d0, other = std::isinf(p) ? d0 : d1;
  if (!keepdim && summed < other) --other;
  Tensor sums = vector_norm(A, 1, {summed}, keepdim);
  return p > 0 ? sums.amax({other}, keepdim) : sums.amin({other}, keepdim);
}

Tensor norm(const Tensor& A, const std::optional<Ord>& ord, IntArrayRef dim, bool keepdim,
            Caller caller) {
  detail::CallSite site(caller, "linalg.norm");
  if (!dim.empty() && dim.size() != 1 && dim.size() != 2)
    throw Error(
        fmt::format("linalg.norm: If dim is specified, it mut be of length 1 or 2. Got [{}]",
                    fmt::join(dim, ", ")));
  if (dim.empty() && ord && A.dim() != 1 && A.dim() != 2)
    throw Error(fmt::format("linalg.norm: If dim is not specified but ord is, the input must be "
                            "1D or 2D. Got {}D.",
                            A.dim()));
  // A named order is a matrix's, whatever A and dim are.
  if (ord && (ord->is_name() || dim.size() == 2 || (dim.empty() && A.dim() == 2)))
    return matrix_norm(A, *ord, dim.empty() ? DimList{0, 1} : DimList(dim), keepdim);
  return vector_norm(A, ord ? *ord : Ord(2), dim, keepdim);
}

// --- printing, as Python prints a torch.return_types structseq ---

namespace {
template <class... Field>
std::ostream& print_fields(std::ostream& os, const char* type, const Field&... fields) {
  os << "torch.return_types." << type << "(";
  const char* sep = "\n";
  ((os << sep << fields.first << "=" << fields.second.str(), sep = ",\n"), ...);
  return os << ")";
}
using Field = std::pair<const char*, Tensor>;
} // namespace

std::ostream& operator<<(std::ostream& os, const SlogdetResult& r) {
  return print_fields(os, "linalg_slogdet", Field{"sign", r.sign}, Field{"logabsdet", r.logabsdet});
}
std::ostream& operator<<(std::ostream& os, const SvdResult& r) {
  return print_fields(os, "linalg_svd", Field{"U", r.U}, Field{"S", r.S}, Field{"Vh", r.Vh});
}
std::ostream& operator<<(std::ostream& os, const EighResult& r) {
  return print_fields(os, "linalg_eigh", Field{"eigenvalues", r.eigenvalues},
                      Field{"eigenvectors", r.eigenvectors});
}
std::ostream& operator<<(std::ostream& os, const EigResult& r) {
  return print_fields(os, "linalg_eig", Field{"eigenvalues", r.eigenvalues},
                      Field{"eigenvectors", r.eigenvectors});
}
std::ostream& operator<<(std::ostream& os, const QrResult& r) {
  return print_fields(os, "linalg_qr", Field{"Q", r.Q}, Field{"R", r.R});
}
std::ostream& operator<<(std::ostream& os, const LstsqResult& r) {
  return print_fields(os, "linalg_lstsq", Field{"solution", r.solution},
                      Field{"residuals", r.residuals}, Field{"rank", r.rank},
                      Field{"singular_values", r.singular_values});
}

} // namespace tj::linalg
