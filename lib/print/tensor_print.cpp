// PyTorch's tensor repr (torch/_tensor_str.py) and the process-wide print options.
#include "lib/print/tensor_print.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tensorjit/error.h"

namespace tj {

namespace {
// Process-wide, as torch's PRINT_OPTS. Writers take the lock; repr() copies the
// options under it so that one repr sees one consistent set.
std::mutex g_print_mutex;
PrintOptions g_print_options;
} // namespace

void set_printoptions(std::optional<int> precision, std::optional<int64_t> threshold,
                      std::optional<int64_t> edgeitems, std::optional<int64_t> linewidth,
                      std::optional<bool> sci_mode) {
  if (precision && *precision < 0)
    throw Error(
        fmt::format("set_printoptions: precision must be non-negative, got {}", *precision));
  if (edgeitems && *edgeitems < 0)
    throw Error(
        fmt::format("set_printoptions: edgeitems must be non-negative, got {}", *edgeitems));
  std::lock_guard<std::mutex> lock(g_print_mutex);
  if (precision) g_print_options.precision = *precision;
  if (threshold) g_print_options.threshold = *threshold;
  if (edgeitems) g_print_options.edgeitems = *edgeitems;
  if (linewidth) g_print_options.linewidth = *linewidth;
  g_print_options.sci_mode = sci_mode;
}

const PrintOptions& get_printoptions() { return g_print_options; }

void reset_printoptions() {
  std::lock_guard<std::mutex> lock(g_print_mutex);
  g_print_options = PrintOptions{};
}

} // namespace tj

namespace tj::detail {

namespace {

PrintOptions snapshot_options() {
  std::lock_guard<std::mutex> lock(g_print_mutex);
  return g_print_options;
}

// Python's format(value, ".{p}f") / ".{p}e" / ".0f" for a double. fmt rounds
// correctly (ties on the exact binary value), as Python does; the non-finite
// spellings are Python's (no "-nan").
std::string py_float(double v, char spec, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (spec == 'e') return fmt::format("{:.{}e}", v, precision);
  return fmt::format("{:.{}f}", v, precision);
}

// torch._tensor_str._Formatter: decides int/sci mode and the common width over
// the values it is shown.
// A complex tensor has one for its real parts and one for its imaginary parts (`imag`).
class Formatter {
public:
  Formatter(const PrintSource& src, const std::vector<int64_t>& indices, const PrintOptions& opts,
            bool imag = false)
      : src_(src), get_(imag ? src.get_imag : src.get_float),
        floating_(is_floating_point(src.dtype) || is_complex(src.dtype)),
        precision_(opts.precision) {
    if (!floating_) {
      for (int64_t i : indices)
        max_width_ = std::max<int64_t>(max_width_, format_int(src_.get_int(i)).size());
      return;
    }
    std::vector<double> vals; // the nonzero finite values
    for (int64_t i : indices) {
      double v = get_(i);
      if (std::isfinite(v) && v != 0.0) vals.push_back(v);
    }
    // No valid number: PyTorch returns before even applying PRINT_OPTS.sci_mode.
    if (vals.empty()) return;

    double min_abs = std::abs(vals[0]);
    double max_abs = min_abs;
    for (double v : vals) {
      min_abs = std::min(min_abs, std::abs(v));
      max_abs = std::max(max_abs, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    // A forced sci_mode also decides the width, as in current PyTorch
    // (pytorch#126859); older releases measured the width in the automatic mode.
    sci_mode_ = opts.sci_mode ? *opts.sci_mode
                              : max_abs / min_abs > 1000.0 || max_abs > 1.0e8 || min_abs < 1.0e-4;
    for (double v : vals) {
      int64_t w;
      if (sci_mode_)
        w = py_float(v, 'e', precision_).size();
      else if (int_mode_) // room for the '.' that marks a floating tensor
        w = py_float(v, 'f', 0).size() + 1;
      else
        w = py_float(v, 'f', precision_).size();
      max_width_ = std::max(max_width_, w);
    }
  }

  int64_t width() const { return max_width_; }

  // The element at a linear index, right-aligned to the common width.
  std::string format(int64_t index) const {
    std::string ret;
    if (floating_) {
      double v = get_(index);
      if (sci_mode_) {
        ret = py_float(v, 'e', precision_);
      } else if (int_mode_) {
        ret = py_float(v, 'f', 0);
        if (std::isfinite(v)) ret += '.';
      } else {
        ret = py_float(v, 'f', precision_);
      }
    } else {
      ret = format_int(src_.get_int(index));
    }
    int64_t pad = max_width_ - static_cast<int64_t>(ret.size());
    return pad > 0 ? std::string(pad, ' ') + ret : ret;
  }

private:
  // Python's str() of the element: an int, or True/False for bool.
  std::string format_int(int64_t v) const {
    if (src_.dtype == kBool) return v ? "True" : "False";
    return std::to_string(v);
  }

  const PrintSource& src_;
  const std::function<double(int64_t)>& get_;
  bool floating_;
  int precision_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int64_t max_width_ = 1;
};

// The formatters of one tensor: a complex element is its real part, then its imaginary part
// with its sign and a "j" (_tensor_str's formatter1 and formatter2).
struct Formatters {
  const Formatter& real;
  const Formatter* imag;

  // The width an element takes in a row (the separator's two characters not included).
  int64_t width() const { return real.width() + (imag ? imag->width() + 1 : 0); }

  std::string format(int64_t index) const {
    std::string re = real.format(index);
    if (!imag) return re;
    std::string im = imag->format(index) + "j";
    im.erase(0, im.find_first_not_of(' '));
    return im[0] == '+' || im[0] == '-' ? re + im : re + "+" + im;
  }
};

// One tensor being printed: its shape, row-major strides and the options.
class Printer {
public:
  Printer(const PrintSource& src, const PrintOptions& opts)
      : src_(src), opts_(opts), shape_(src.shape), strides_(src.shape.size()) {
    int64_t stride = 1;
    for (size_t d = shape_.size(); d-- > 0;) {
      strides_[d] = stride;
      stride *= shape_[d];
    }
    numel_ = stride;
  }

  int64_t numel() const { return numel_; }

  // torch._tensor_str._tensor_str for a non-empty tensor.
  std::string tensor_str(int64_t indent) {
    summarize_ = numel_ > opts_.threshold;
    std::vector<int64_t> visible;
    if (summarize_) {
      summarized_indices(0, 0, visible);
    } else {
      visible.resize(numel_);
      for (int64_t i = 0; i < numel_; ++i)
        visible[i] = i;
    }
    Formatter real(src_, visible, opts_);
    std::optional<Formatter> imag;
    if (is_complex(src_.dtype)) imag.emplace(src_, visible, opts_, true);
    Formatters f{real, imag ? &*imag : nullptr};
    if (shape_.empty()) return f.format(0);
    return str_with_formatter(0, 0, indent, f);
  }

private:
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }

  // get_summarized_data: the linear indices the formatter sees, for the
  // sub-tensor at dimension d starting at offset base.
  void summarized_indices(int64_t d, int64_t base, std::vector<int64_t>& out) const {
    if (rank() == 0) {
      out.push_back(0);
      return;
    }
    int64_t n = shape_[d];
    int64_t e = opts_.edgeitems;
    bool last = d == rank() - 1;
    if (!last && e == 0) return; // self.new_empty([0] * dim)
    auto keep = [&](int64_t i) {
      int64_t offset = base + i * strides_[d];
      if (last)
        out.push_back(offset);
      else
        summarized_indices(d + 1, offset, out);
    };
    // cat(self[:e], self[-e:]) or stack of the edge rows; for a vector with
    // e == 0, self[-0:] is the whole vector.
    if (n <= 2 * e || e == 0) {
      for (int64_t i = 0; i < n; ++i)
        keep(i);
    } else {
      for (int64_t i = 0; i < e; ++i)
        keep(i);
      for (int64_t i = n - e; i < n; ++i)
        keep(i);
    }
  }

  // _tensor_str_with_formatter for the sub-tensor at dimension d (d < rank).
  std::string str_with_formatter(int64_t d, int64_t base, int64_t indent,
                                 const Formatters& formatter) const {
    if (d == rank() - 1) return vector_str(d, base, indent, formatter);
    int64_t n = shape_[d];
    int64_t e = opts_.edgeitems;
    std::vector<std::string> slices;
    auto add = [&](int64_t i) {
      slices.push_back(str_with_formatter(d + 1, base + i * strides_[d], indent + 1, formatter));
    };
    if (summarize_ && n > 2 * e) {
      for (int64_t i = 0; i < e; ++i)
        add(i);
      slices.push_back("...");
      for (int64_t i = n - e; i < n; ++i)
        add(i);
    } else {
      for (int64_t i = 0; i < n; ++i)
        add(i);
    }
    std::string sep = "," + std::string(rank() - d - 1, '\n') + std::string(indent + 1, ' ');
    return "[" + join(slices, sep) + "]";
  }

  // _vector_str: elements wrapped at the line width, continuation lines indented.
  std::string vector_str(int64_t d, int64_t base, int64_t indent,
                         const Formatters& formatter) const {
    int64_t element_length = formatter.width() + 2;
    auto per_line = static_cast<int64_t>(
        std::floor(static_cast<double>(opts_.linewidth - indent) / element_length));
    int64_t elements_per_line = std::max<int64_t>(1, per_line);

    int64_t n = shape_[d];
    int64_t e = opts_.edgeitems;
    std::vector<std::string> data;
    auto add = [&](int64_t i) { data.push_back(formatter.format(base + i * strides_[d])); };
    if (summarize_ && e == 0) {
      data.push_back("...");
    } else if (summarize_ && n > 2 * e) {
      for (int64_t i = 0; i < e; ++i)
        add(i);
      data.push_back(" ...");
      for (int64_t i = n - e; i < n; ++i)
        add(i);
    } else {
      for (int64_t i = 0; i < n; ++i)
        add(i);
    }

    std::vector<std::string> lines;
    for (size_t i = 0; i < data.size(); i += elements_per_line) {
      std::vector<std::string> line(data.begin() + i,
                                    data.begin() + std::min(data.size(), i + elements_per_line));
      lines.push_back(join(line, ", "));
    }
    return "[" + join(lines, ",\n" + std::string(indent + 1, ' ')) + "]";
  }

  static std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i) out += sep;
      out += parts[i];
    }
    return out;
  }

  const PrintSource& src_;
  const PrintOptions& opts_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  int64_t numel_ = 1;
  bool summarize_ = false;
};

// Python's str(tuple(shape)): "()", "(5,)", "(0, 3)".
std::string tuple_str(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + ")";
}

// _add_suffixes: a suffix that would pass the line width starts a new line.
std::string add_suffixes(const std::string& tensor_str, const std::vector<std::string>& suffixes,
                         int64_t indent, int64_t linewidth) {
  std::string out = tensor_str;
  // len(s) - s.rfind("\n") + 1, with rfind giving -1 when there is no newline.
  size_t nl = tensor_str.rfind('\n');
  int64_t last_line_len = static_cast<int64_t>(tensor_str.size()) -
                          (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const std::string& suffix : suffixes) {
    auto suffix_len = static_cast<int64_t>(suffix.size());
    if (last_line_len + suffix_len + 2 > linewidth) {
      out += ",\n" + std::string(indent, ' ') + suffix;
      last_line_len = indent + suffix_len;
    } else {
      out += ", " + suffix;
      last_line_len += suffix_len + 2;
    }
  }
  return out + ")";
}

} // namespace

std::string repr(const PrintSource& src, const PrintSuffixes& sfx) {
  if (is_complex(src.dtype)          ? !src.get_float || !src.get_imag
      : is_floating_point(src.dtype) ? !src.get_float
                                     : !src.get_int)
    throw Error("repr: the PrintSource has no element reader for " + dtype_name(src.dtype));
  PrintOptions opts = snapshot_options();
  const std::string prefix = "tensor(";
  const auto indent = static_cast<int64_t>(prefix.size());
  std::vector<std::string> suffixes;
  if (!sfx.device.empty()) suffixes.push_back("device='" + sfx.device + "'");

  Printer printer(src, opts);
  std::string tensor_str;
  if (printer.numel() == 0) {
    // NumPy shows the shape unless it is (0,); with no elements, even int64
    // and bool need their dtype spelled out.
    if (src.shape.size() != 1) suffixes.push_back("size=" + tuple_str(src.shape));
    if (src.dtype != default_dtype()) suffixes.push_back("dtype=" + dtype_name(src.dtype));
    tensor_str = "[]";
  } else {
    if (opts.edgeitems == 0) suffixes.push_back("size=" + tuple_str(src.shape));
    bool has_default_dtype = src.dtype == default_dtype() ||
                             src.dtype == complex_dtype(default_dtype()) || src.dtype == kInt64 ||
                             src.dtype == kBool;
    if (!has_default_dtype) suffixes.push_back("dtype=" + dtype_name(src.dtype));
    tensor_str = printer.tensor_str(indent);
  }

  if (!sfx.grad_fn.empty())
    suffixes.push_back("grad_fn=<" + sfx.grad_fn + ">");
  else if (sfx.requires_grad)
    suffixes.push_back("requires_grad=True");

  return add_suffixes(prefix + tensor_str, suffixes, indent, opts.linewidth);
}

} // namespace tj::detail
