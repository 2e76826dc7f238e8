// TensorOptions: dtype, device and requires_grad for creation functions.
#pragma once
#include <optional>

#include "tensorjit/device.h"
#include "tensorjit/dtype.h"

namespace tj {

class TensorOptions {
public:
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}
  TensorOptions(Device d) : device_(d) {}

  TensorOptions dtype(DType d) const {
    auto o = *this;
    o.dtype_ = d;
    return o;
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool b) const {
    auto o = *this;
    o.requires_grad_ = b;
    return o;
  }

  std::optional<DType> dtype_opt() const { return dtype_; }
  DType dtype_or(DType fallback) const { return dtype_.value_or(fallback); }
  Device device() const { return device_.value_or(Device(kCPU)); }
  std::optional<Device> device_opt() const { return device_; }
  bool has_device() const { return device_.has_value(); }
  bool requires_grad() const { return requires_grad_; }
  bool has_dtype() const { return dtype_.has_value(); }

private:
  std::optional<DType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
};

inline TensorOptions dtype(DType d) { return TensorOptions().dtype(d); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool b = true) { return TensorOptions().requires_grad(b); }

} // namespace tj
