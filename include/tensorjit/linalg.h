// tj::linalg, as torch.linalg: factorizations (computed by LAPACK), solves, inverses,
// determinants, norms and products, batched over leading dims, float32 and float64.
// Structured results are structs with PyTorch's field names: `auto [U, S, Vh] =
// tj::linalg::svd(A);` works, and `std::cout << tj::linalg::svd(A)` prints what PyTorch prints.
// Like every op, these are lazy: a factorization runs (and a singular matrix raises its error)
// when a value it feeds is needed. On a CUDA device the factorizations compute through the CPU.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "tensorjit/tensor.h"

namespace tj::linalg {

// A norm's order: a number (2, 1, -1, INFINITY, ...) or "fro" or "nuc". A string literal is an
// Ord, never a Scalar through bool.
class Ord {
public:
  Ord(double p) : p_(p) {}
  Ord(int p) : p_(p) {}
  Ord(const char* name) : name_(name) {}
  Ord(std::string name) : name_(std::move(name)) {}
  bool is_name() const { return !name_.empty(); }
  double number() const { return p_; }
  const std::string& name() const { return name_; }

private:
  double p_ = 0;
  std::string name_;
};

struct SlogdetResult { // torch.return_types.linalg_slogdet
  Tensor sign, logabsdet;
};
struct SvdResult { // torch.return_types.linalg_svd
  Tensor U, S, Vh;
};
struct EighResult { // torch.return_types.linalg_eigh
  Tensor eigenvalues, eigenvectors;
};
struct EigResult { // torch.return_types.linalg_eig: complex eigenvalues and eigenvectors
  Tensor eigenvalues, eigenvectors;
};
struct QrResult { // torch.return_types.linalg_qr
  Tensor Q, R;
};
struct LstsqResult { // torch.return_types.linalg_lstsq
  Tensor solution, residuals, rank, singular_values;
};
std::ostream& operator<<(std::ostream& os, const SlogdetResult& r);
std::ostream& operator<<(std::ostream& os, const SvdResult& r);
std::ostream& operator<<(std::ostream& os, const EighResult& r);
std::ostream& operator<<(std::ostream& os, const EigResult& r);
std::ostream& operator<<(std::ostream& os, const QrResult& r);
std::ostream& operator<<(std::ostream& os, const LstsqResult& r);

// Products.
Tensor matmul(const Tensor& a, const Tensor& b, Caller where = {});
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim = -1, Caller where = {});
Tensor matrix_power(const Tensor& A, int64_t n, Caller where = {});
Tensor multi_dot(const std::vector<Tensor>& tensors, Caller where = {});

// Solves and inverses. B is a matrix (or a batch) or, where A's batch allows, a vector.
Tensor solve(const Tensor& A, const Tensor& B, bool left = true, Caller where = {});
Tensor inv(const Tensor& A, Caller where = {});
Tensor pinv(const Tensor& A, bool hermitian = false, Caller where = {});
// rcond: singular values below rcond times the largest count as zero (default: the dtype's
// epsilon times max(m, n)); the gels driver reads none.
LstsqResult lstsq(const Tensor& A, const Tensor& B, std::optional<std::string> driver = {},
                  Caller where = {});
LstsqResult lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond,
                  std::optional<std::string> driver = {}, Caller where = {});
Tensor tensorsolve(const Tensor& A, const Tensor& B, IntArrayRef dims = {}, Caller where = {});
Tensor tensorinv(const Tensor& A, int64_t ind = 2, Caller where = {});

// Determinants.
Tensor det(const Tensor& A, Caller where = {});
SlogdetResult slogdet(const Tensor& A, Caller where = {});

// Factorizations and spectra.
Tensor cholesky(const Tensor& A, bool upper = false, Caller where = {});
QrResult qr(const Tensor& A, const std::string& mode = "reduced", Caller where = {});
SvdResult svd(const Tensor& A, bool full_matrices = true, Caller where = {});
Tensor svdvals(const Tensor& A, Caller where = {});
EighResult eigh(const Tensor& A, const std::string& UPLO = "L", Caller where = {});
Tensor eigvalsh(const Tensor& A, const std::string& UPLO = "L", Caller where = {});
// A general square matrix's eigenvalues and eigenvectors (complex, through LAPACK's geev).
EigResult eig(const Tensor& A, Caller where = {});
Tensor eigvals(const Tensor& A, Caller where = {});
Tensor matrix_rank(const Tensor& A, bool hermitian = false, Caller where = {});

// Norms. vector_norm over `dim` (all dims when empty); matrix_norm over the two dims of `dim`;
// norm as torch.linalg.norm: a vector norm of the flattened input when neither ord nor dim is
// given, otherwise a vector or matrix norm by the number of dims.
Tensor vector_norm(const Tensor& x, const Ord& ord = 2, IntArrayRef dim = {}, bool keepdim = false,
                   Caller where = {});
Tensor matrix_norm(const Tensor& A, const Ord& ord = "fro", IntArrayRef dim = {-2, -1},
                   bool keepdim = false, Caller where = {});
Tensor norm(const Tensor& A, const std::optional<Ord>& ord = {}, IntArrayRef dim = {},
            bool keepdim = false, Caller where = {});

} // namespace tj::linalg
