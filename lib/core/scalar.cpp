// Scalar's Python-style text form and equality.
#include "tensorjit/scalar.h"

#include <fmt/format.h>

#include <cmath>

namespace tj {

namespace {
// Python's repr of a float: shortest round-trip digits, always with a '.' or exponent.
std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Python's repr of one part of a complex: integral values without ".0".
std::string complex_part_repr(double d) {
  std::string s = float_repr(d);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}
} // namespace

std::string Scalar::str() const {
  switch (kind_) {
  case Kind::Complex: {
    // Python: "1j" for a zero real part of positive sign, else "(1+2j)".
    std::string im = complex_part_repr(im_) + "j";
    if (d_ == 0.0 && !std::signbit(d_)) return im;
    const bool sign = im[0] == '-' || im[0] == '+';
    return "(" + complex_part_repr(d_) + (sign ? "" : "+") + im + ")";
  }
  case Kind::Bool:
    return i_ ? "True" : "False";
  case Kind::Int:
    return std::to_string(i_);
  case Kind::Double:
    return float_repr(d_);
  }
  return "";
}

bool Scalar::operator==(const Scalar& o) const {
  if (kind_ == Kind::Complex || o.kind_ == Kind::Complex) return to_complex() == o.to_complex();
  if (kind_ == Kind::Double || o.kind_ == Kind::Double) return to_double() == o.to_double();
  return i_ == o.i_;
}

} // namespace tj
