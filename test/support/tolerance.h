// Per-dtype tolerances and helpers that hold computed tensors to the reference interpreter.
//
// The interpreter (lib/interp) evaluates a graph in double (rounded to the node's dtype after
// every op) or exact int64; the JIT computes float16/bfloat16 in float32 and calls glibc's libm
// and libmvec. What may differ, and so what a test may tolerate:
//
//  - Nothing, for IEEE-exact ops: + - * / sqrt fmod, floor/ceil/round/trunc, min/max,
//    comparisons, casts and every integer op. Both sides round each op's exact result to the
//    dtype (double rounding through double or float32 is innocuous for these ops: 53 >= 2*24+2
//    and 24 >= 2*11+2), so results are bit for bit equal, the sign of zero included.
//  - A few ulps of the compute dtype for libm functions (exp, sin, pow, atan2, erf, ...):
//    libmvec is accurate to 4 ulps, and for 16-bit floats the float32 result can then round to
//    the neighbouring float16/bfloat16 value.
//  - Beyond that only where a test composes functions with cancellation (gelu: 1 + erf(x) for
//    x < 0), and such a test says so and scales the tolerance explicitly.
//
// A result whose value then goes through a discontinuity (a cast to an integer, a comparison,
// floor) can differ by a whole unit: tests avoid feeding approximate values into those.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/interp/interpreter.h"
#include "tensorjit/tensorjit.h"

namespace tj::test {

// How closely a computed value must follow the interpreter's.
enum class Accuracy {
  Exact,          // bit for bit, the sign of zero included
  Arithmetic,     // +, -, *, / up to a few ulps
  Transcendental, // libm / libmvec functions: 4 ulps of the compute dtype, then rounding
};

struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
  bool signed_zeros = false; // +0.0 and -0.0 differ
  // A finite value within rtol of the dtype's largest finite value matches the infinity of its
  // sign: for approximate results near the overflow threshold.
  bool overflow_ok = false;

  Tolerance scaled(double k) const { return {rtol * k, atol * k, signed_zeros, overflow_ok}; }
};

// Relative spacing of a floating dtype (2^-52, 2^-23, 2^-10, 2^-7); 0 for other dtypes.
double epsilon(DType t);
// Largest finite value and smallest normal value of a floating dtype.
double max_finite(DType t);
double min_normal(DType t);

// The tolerance of `acc` for dtype `t`; integers and bool are always exact.
//   float64: Arithmetic 1e-12, Transcendental 1e-9
//   float32: Arithmetic 1e-6,  Transcendental 1e-5
//   float16: Arithmetic 1e-3,  Transcendental 1e-3
//   bfloat16: Arithmetic 1e-2, Transcendental 1e-2
// (relative; the absolute part is the dtype's subnormal scale).
Tolerance tolerance(DType t, Accuracy acc);

// Whether `actual` matches `expected` under `tol` for a floating dtype `t`: NaN matches NaN, an
// infinity only the same infinity, otherwise |actual - expected| <= atol + rtol * |expected|.
bool close(double actual, double expected, const Tolerance& tol, DType t);

// "[2, 3]"
std::string shape_str(const std::vector<int64_t>& shape);
// A value as the tests print it: shortest round-trip decimal, with its bits for floats.
std::string value_str(double v, DType t);

// The tensor's values (materializing it) in the interpreter's row-major layout.
interp::HostArray read_back(const Tensor& t);

// Empty when `actual` matches `expected` (dtype, shape and every element); otherwise a message
// naming `what`, the number of differing elements, the first few with their indices and both
// values, and the tolerance. `reference` names where `expected` came from.
std::string compare(const interp::HostArray& actual, const interp::HostArray& expected,
                    const Tolerance& tol, const std::string& what,
                    const std::string& reference = "the interpreter");

// What the interpreter says a tensor holds, taken before the tensor is materialized
// (materializing replaces the tensor's node by its buffer, which the interpreter would only read
// back).
struct Expectation {
  Tensor result;
  std::optional<interp::HostArray> expected; // empty when the interpreter threw
  std::string error;                         // the interpreter's error then
  Tolerance tol;
  std::string what;
};
Expectation expect(const Tensor& t, const Tolerance& tol, std::string what);

struct Verdict {
  bool ok;
  std::string message;
};

// Collects expectations, then materializes them together, `max_joint` tensors per tj::eval (one
// schedule: one kernel per distinct shape, so a table of ops costs a few compilations; bounded,
// because LLVM's code generation time explodes on kernels with many dozens of outputs), and
// compares each result with the interpreter. An expectation whose interpreter run threw is
// materialized alone and must throw a tj::Error with the same message. When a joint tj::eval
// throws, each of its tensors is materialized alone so that the failure names the op that caused
// it.
class OracleBatch {
public:
  explicit OracleBatch(size_t max_joint = 32) : max_joint_(max_joint) {}
  void add(const Tensor& t, const Tolerance& tol, std::string what);
  void add(const Tensor& t, Accuracy acc, std::string what);
  size_t size() const { return items_.size(); }
  std::vector<Verdict> run();

private:
  size_t max_joint_;
  std::vector<Expectation> items_;
};

// Runs `body` in a forked child process that is killed after `timeout_s` seconds, for checks of
// code known to hang (see the tests that use it): the check then fails instead of stalling the
// suite. `body` returns an empty string on success or a failure message.
struct Isolated {
  bool finished = false; // false: killed at the deadline
  std::string message;   // the body's message, its exception, or how the child ended
  bool ok() const { return finished && message.empty(); }
};
std::vector<Isolated> run_isolated(const std::vector<std::function<std::string()>>& bodies,
                                   double timeout_s);

} // namespace tj::test

// One Catch2 assertion per expectation of an OracleBatch, each failure with its message.
#define TJ_CHECK_BATCH(batch)                                                                      \
  do {                                                                                             \
    for (const ::tj::test::Verdict& tj_verdict_ : (batch).run()) {                                 \
      INFO(tj_verdict_.message);                                                                   \
      CHECK(tj_verdict_.ok);                                                                       \
    }                                                                                              \
  } while (false)

// One Catch2 assertion: `actual` (a tensor, materialized here) against a HostArray.
#define TJ_CHECK_MATCHES(actual, expected, tol, what)                                              \
  do {                                                                                             \
    std::string tj_message_ =                                                                      \
        ::tj::test::compare(::tj::test::read_back(actual), (expected), (tol), (what));             \
    INFO(tj_message_);                                                                             \
    CHECK(tj_message_.empty());                                                                    \
  } while (false)
