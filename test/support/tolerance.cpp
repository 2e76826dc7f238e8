// Per-dtype tolerances, comparison with the reference interpreter, and isolated child runs.
#include "test/support/tolerance.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "lib/frontend/tensor_impl.h"

namespace tj::test {

double epsilon(DType t) {
  switch (t) {
  case kFloat64:
    return std::ldexp(1.0, -52);
  case kFloat32:
    return std::ldexp(1.0, -23);
  case kFloat16:
    return std::ldexp(1.0, -10);
  case kBFloat16:
    return std::ldexp(1.0, -7);
  default:
    return 0.0;
  }
}

double max_finite(DType t) {
  switch (t) {
  case kFloat64:
    return std::numeric_limits<double>::max();
  case kFloat32:
    return std::numeric_limits<float>::max();
  case kFloat16:
    return 65504.0;
  case kBFloat16:
    return 0x1.fep127;
  default:
    return 0.0;
  }
}

double min_normal(DType t) {
  switch (t) {
  case kFloat64:
    return std::numeric_limits<double>::min();
  case kFloat16:
    return std::ldexp(1.0, -14);
  case kFloat32:
  case kBFloat16:
    return std::numeric_limits<float>::min();
  default:
    return 0.0;
  }
}

namespace {

// The smallest positive subnormal of a floating dtype.
double denorm_min(DType t) { return min_normal(t) * epsilon(t); }

} // namespace

Tolerance tolerance(DType t, Accuracy acc) {
  if (!is_floating_point(t) || acc == Accuracy::Exact) return {0.0, 0.0, true, false};
  // Absolute slack of a few subnormal steps: libm results that underflow may round differently.
  const double atol = 4 * denorm_min(t);
  if (acc == Accuracy::Arithmetic) {
    switch (t) {
    case kFloat64:
      return {1e-12, atol, false, false};
    case kFloat32:
      return {1e-6, atol, false, false};
    case kFloat16:
      return {1e-3, atol, false, false};
    default:
      return {1e-2, atol, false, false};
    }
  }
  switch (t) {
  case kFloat64:
    return {1e-9, atol, false, true};
  case kFloat32:
    return {1e-5, atol, false, true};
  case kFloat16:
    return {1e-3, atol, false, true};
  default:
    return {1e-2, atol, false, true};
  }
}

bool close(double actual, double expected, const Tolerance& tol, DType t) {
  if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
  if (std::isinf(actual) || std::isinf(expected)) {
    if (actual == expected) return true;
    if (!tol.overflow_ok || (std::isinf(actual) && std::isinf(expected))) return false;
    double finite = std::isinf(actual) ? expected : actual;
    double inf = std::isinf(actual) ? actual : expected;
    return std::signbit(finite) == std::signbit(inf) &&
           std::fabs(finite) >= max_finite(t) * (1.0 - tol.rtol);
  }
  if (tol.signed_zeros && actual == 0.0 && expected == 0.0)
    return std::signbit(actual) == std::signbit(expected);
  return std::fabs(actual - expected) <= tol.atol + tol.rtol * std::fabs(expected);
}

std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string value_str(double v, DType t) {
  if (!is_floating_point(t)) return fmt::format("{}", static_cast<int64_t>(v));
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (t == kFloat64) return fmt::format("{} ({:a})", v, v);
  float f = static_cast<float>(v);
  return fmt::format("{} ({:a})", f, f);
}

interp::HostArray read_back(const Tensor& t) {
  interp::HostArray h{t.dtype(), t.sizes(), {}, {}};
  if (h.is_float())
    h.f = t.to_vector<double>();
  else
    h.i = t.to_vector<int64_t>();
  return h;
}

namespace {

std::string index_str(size_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  size_t rest = flat;
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? static_cast<int64_t>(rest % static_cast<size_t>(shape[d])) : 0;
    rest = shape[d] ? rest / static_cast<size_t>(shape[d]) : 0;
  }
  return shape_str(idx);
}

std::string tolerance_str(const Tolerance& tol, DType t) {
  if (!is_floating_point(t)) return "exact";
  if (tol.rtol == 0.0 && tol.atol == 0.0) return tol.signed_zeros ? "bit-exact" : "exact";
  return fmt::format("rtol {:g}, atol {:g}{}{}", tol.rtol, tol.atol,
                     tol.signed_zeros ? ", signed zeros" : "",
                     tol.overflow_ok ? ", overflow ok" : "");
}

} // namespace

std::string compare(const interp::HostArray& actual, const interp::HostArray& expected,
                    const Tolerance& tol, const std::string& what, const std::string& reference) {
  if (actual.dtype != expected.dtype)
    return fmt::format("{}: dtype {}, but {}'s is {}", what, dtype_name(actual.dtype), reference,
                       dtype_name(expected.dtype));
  if (actual.shape != expected.shape)
    return fmt::format("{}: shape {}, but {}'s is {}", what, shape_str(actual.shape), reference,
                       shape_str(expected.shape));
  const bool fp = expected.is_float();
  const size_t n = fp ? expected.f.size() : expected.i.size();
  size_t bad = 0;
  std::string details;
  for (size_t k = 0; k < n; ++k) {
    bool ok =
        fp ? close(actual.f[k], expected.f[k], tol, expected.dtype) : actual.i[k] == expected.i[k];
    if (ok) continue;
    if (++bad <= 4)
      details += fmt::format("\n  at {} (element {}): got {}, {} {}", index_str(k, expected.shape),
                             k, value_str(actual.as_double(k), actual.dtype), reference,
                             value_str(expected.as_double(k), expected.dtype));
  }
  if (!bad) return "";
  return fmt::format("{}: {} of {} elements differ from {} ({}, shape {}, {}){}", what, bad, n,
                     reference, dtype_name(expected.dtype), shape_str(expected.shape),
                     tolerance_str(tol, expected.dtype), details);
}

Expectation expect(const Tensor& t, const Tolerance& tol, std::string what) {
  Expectation e{t, std::nullopt, "", tol, std::move(what)};
  ir::NodePtr node = detail::node_of(t); // a copy: the interpreter sees the unrealized graph
  try {
    e.expected = interp::evaluate(node);
  } catch (const Error& ex) {
    e.error = ex.what();
  }
  return e;
}

void OracleBatch::add(const Tensor& t, const Tolerance& tol, std::string what) {
  items_.push_back(expect(t, tol, std::move(what)));
}

void OracleBatch::add(const Tensor& t, Accuracy acc, std::string what) {
  add(t, tolerance(t.dtype(), acc), std::move(what));
}

std::vector<Verdict> OracleBatch::run() {
  std::vector<Verdict> out;
  for (size_t begin = 0; begin < items_.size(); begin += max_joint_) {
    const size_t end = std::min(items_.size(), begin + max_joint_);
    std::vector<Tensor> joint;
    for (size_t k = begin; k < end; ++k)
      if (items_[k].expected) joint.push_back(items_[k].result);
    std::string joint_error;
    try {
      tj::eval(joint);
    } catch (const std::exception& ex) {
      joint_error = ex.what();
    }
    bool all_alone_ok = true;
    for (size_t k = begin; k < end; ++k) {
      Expectation& e = items_[k];
      if (!e.expected) {
        // The interpreter threw: so must materializing.
        try {
          e.result.eval();
          out.push_back({false, fmt::format("{}: the interpreter threw \"{}\", but materializing "
                                            "computed a value",
                                            e.what, e.error)});
        } catch (const Error& ex) {
          bool same = e.error == ex.what();
          out.push_back({same, same ? ""
                                    : fmt::format("{}: threw \"{}\", the interpreter \"{}\"",
                                                  e.what, ex.what(), e.error)});
        }
        continue;
      }
      try {
        if (!joint_error.empty()) e.result.eval();
        std::string msg = compare(read_back(e.result), *e.expected, e.tol, e.what);
        out.push_back({msg.empty(), msg});
      } catch (const std::exception& ex) {
        all_alone_ok = false;
        out.push_back({false, fmt::format("{}: materializing threw: {}", e.what, ex.what())});
      }
    }
    if (!joint_error.empty() && all_alone_ok)
      out.push_back({false, fmt::format("materializing {} tensors together threw, though each "
                                        "computes alone: {}",
                                        joint.size(), joint_error)});
  }
  items_.clear();
  return out;
}

std::vector<Isolated> run_isolated(const std::vector<std::function<std::string()>>& bodies,
                                   double timeout_s) {
  struct Child {
    pid_t pid;
    int fd;
    std::string out;
    bool eof = false;
  };
  std::fflush(nullptr);
  std::vector<Child> kids;
  for (const auto& body : bodies) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("run_isolated: pipe() failed");
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("run_isolated: fork() failed");
    if (pid == 0) {
      ::close(fds[0]);
      std::string msg;
      try {
        msg = body();
      } catch (const std::exception& ex) {
        msg = std::string("threw: ") + ex.what();
      }
      for (size_t off = 0; off < msg.size();) {
        ssize_t w = ::write(fds[1], msg.data() + off, msg.size() - off);
        if (w <= 0) break;
        off += static_cast<size_t>(w);
      }
      _exit(msg.empty() ? 0 : 1); // no atexit handlers: the parent owns the test report
    }
    ::close(fds[1]);
    kids.push_back({pid, fds[0], {}});
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Child*> who;
    for (auto& k : kids)
      if (!k.eof) {
        fds.push_back({k.fd, POLLIN, 0});
        who.push_back(&k);
      }
    if (fds.empty()) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      char buf[4096];
      ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
      if (r > 0)
        who[i]->out.append(buf, static_cast<size_t>(r));
      else
        who[i]->eof = true;
    }
  }
  std::vector<Isolated> out;
  for (auto& k : kids) {
    if (!k.eof) ::kill(k.pid, SIGKILL);
    int status = 0;
    ::waitpid(k.pid, &status, 0);
    ::close(k.fd);
    Isolated r;
    r.finished = k.eof && WIFEXITED(status);
    if (!k.eof)
      r.message = fmt::format("did not finish within {} s", timeout_s);
    else if (WIFSIGNALED(status))
      r.message = fmt::format("died of signal {}", WTERMSIG(status));
    else if (WEXITSTATUS(status) != 0 && k.out.empty())
      r.message = "failed";
    else
      r.message = k.out;
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace tj::test
