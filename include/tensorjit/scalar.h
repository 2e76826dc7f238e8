// tj::Scalar: a bool, an int64 or a double, as item() returns.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "tensorjit/dtype.h"

namespace tj {

class Scalar {
public:
  enum class Kind : uint8_t { Bool, Int, Double };

  Scalar() : kind_(Kind::Int), i_(0) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(static_cast<int64_t>(v)) {}
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Double), d_(static_cast<double>(v)) {}

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Double; }

  double to_double() const { return kind_ == Kind::Double ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::Double ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Double ? d_ != 0.0 : i_ != 0; }
  template <typename T> T to() const {
    if constexpr (std::is_same_v<T, bool>)
      return to_bool();
    else if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(to_double());
    else
      return static_cast<T>(to_int());
  }

  // The dtype a Python scalar of this kind has in type promotion.
  DType dtype() const {
    return kind_ == Kind::Bool ? kBool : kind_ == Kind::Int ? kInt64 : kFloat64;
  }
  // Python's repr of the value: "True", "3", "2.5".
  std::string str() const;

  bool operator==(const Scalar& o) const;

private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

} // namespace tj
