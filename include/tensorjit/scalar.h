// tj::Scalar: a bool, an int64, a double or a complex double, as item() returns.
#pragma once
#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

#include "tensorjit/dtype.h"

namespace tj {

class Scalar {
public:
  enum class Kind : uint8_t { Bool, Int, Double, Complex };

  Scalar() : kind_(Kind::Int), i_(0) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(static_cast<int64_t>(v)) {}
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Double), d_(static_cast<double>(v)) {}
  template <typename T>
  Scalar(std::complex<T> v)
      : kind_(Kind::Complex), d_(static_cast<double>(v.real())),
        im_(static_cast<double>(v.imag())) {}

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Double; }
  bool is_complex() const { return kind_ == Kind::Complex; }

  // A complex value converts to a real one by its real part, as C++'s std::real.
  double to_double() const { return has_double() ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return has_double() ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return has_double() ? d_ != 0.0 || im_ != 0.0 : i_ != 0; }
  std::complex<double> to_complex() const { return {to_double(), imag()}; }
  // The imaginary part (0 for a real value).
  double imag() const { return kind_ == Kind::Complex ? im_ : 0.0; }
  template <typename T> T to() const {
    if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
      return T(to_complex());
    else if constexpr (std::is_same_v<T, bool>)
      return to_bool();
    else if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(to_double());
    else
      return static_cast<T>(to_int());
  }

  // The dtype a Python scalar of this kind has in type promotion.
  DType dtype() const {
    return kind_ == Kind::Bool      ? kBool
           : kind_ == Kind::Int     ? kInt64
           : kind_ == Kind::Complex ? kComplex128
                                    : kFloat64;
  }
  // Python's repr of the value: "True", "3", "2.5", "(1+2j)".
  std::string str() const;

  bool operator==(const Scalar& o) const;

private:
  bool has_double() const { return kind_ == Kind::Double || kind_ == Kind::Complex; }

  Kind kind_;
  union {
    int64_t i_;
    double d_; // Double, and Complex's real part
  };
  double im_ = 0.0;
};

} // namespace tj
