// Scalar's Python-style text form and equality.
#include "tensorjit/scalar.h"

#include <fmt/format.h>

#include <cmath>

namespace tj {

std::string Scalar::str() const {
  switch (kind_) {
  case Kind::Bool:
    return i_ ? "True" : "False";
  case Kind::Int:
    return std::to_string(i_);
  case Kind::Double:
    if (std::isnan(d_)) return "nan";
    if (std::isinf(d_)) return d_ > 0 ? "inf" : "-inf";
    {
      // Python's repr: shortest round-trip digits, always with a '.' or exponent.
      std::string s = fmt::format("{}", d_);
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
  }
  return "";
}

bool Scalar::operator==(const Scalar& o) const {
  if (kind_ == Kind::Double || o.kind_ == Kind::Double) return to_double() == o.to_double();
  return i_ == o.i_;
}

} // namespace tj
