// .npy files, NumPy's format for one array: a magic string, a version, a
// Python dict literal describing the array, then its bytes.
//
// load_npy reads versions 1.0, 2.0 and 3.0, either byte order, C or Fortran
// order (a Fortran file loads as a tensor with Fortran strides, as
// torch.from_numpy(np.load(f)) does). save_npy writes what np.save writes
// on a little-endian host, byte for byte: version 1.0 (2.0 once the header
// outgrows 64 KiB), little-endian, C order.
#include <bit>
#include <cstring>
#include <fstream>
#include <numeric>

#include <fmt/format.h>

#include "lib/frontend/tensor_impl.h"
#include "tensorjit/tensorjit.h"

namespace tj {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// NumPy aligns the data to this many bytes from the start of the file.
constexpr size_t kAlign = 64;
// NumPy leaves room in the header for the length of the axis that grows when
// data are appended to reach this many digits.
constexpr size_t kGrowthDigits = 21;

constexpr bool kLittleHost = std::endian::native == std::endian::little;

// --- the header: a Python dict literal ---

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  Header parse() {
    Header h;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (!peek('}')) {
      std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        if (peek('[')) fail("structured dtypes are not supported");
        h.descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        has_shape = true;
      } else {
        fail(fmt::format("unexpected key '{}'", key));
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    if (!has_descr || !has_order || !has_shape)
      fail("the header must have the keys 'descr', 'fortran_order' and 'shape'");
    return h;
  }

private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(fmt::format("load_npy: cannot parse the header of '{}': {}", path_, why));
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n'))
      ++i_;
  }
  bool peek(char c) {
    skip_space();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(fmt::format("expected '{}' at offset {}", c, i_));
    ++i_;
  }
  std::string string_literal() {
    skip_space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"'))
      fail(fmt::format("expected a string at offset {}", i_));
    char quote = s_[i_++];
    size_t end = s_.find(quote, i_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(i_, end - i_));
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      size_t n = std::strlen(word);
      if (s_.substr(i_, n) == word) {
        i_ += n;
        return value;
      }
    }
    fail("'fortran_order' must be True or False");
  }
  Shape tuple() {
    Shape out;
    expect('(');
    while (!peek(')')) {
      skip_space();
      size_t start = i_;
      int64_t v = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[i_] - '0', &v))
          fail("a dimension does not fit in 64 bits");
        ++i_;
      }
      if (i_ == start) fail(fmt::format("expected a non-negative integer at offset {}", i_));
      out.push_back(v);
      if (!peek(')')) expect(',');
    }
    expect(')');
    return out;
  }

  std::string_view s_;
  const std::string& path_;
  size_t i_ = 0;
};

// --- dtypes ---

// The dtype of a descr, and whether its bytes need swapping on this host. NumPy writes an
// order and a code ("<f4"); it also reads a bare code ("f4", "?") or a name ("float32") as the
// host's order, and so does this. bfloat16, which NumPy lacks, is saved as raw 16-bit words
// ("<V2") and read back as such.
DType dtype_of(const std::string& descr, bool& swap, const std::string& path) {
  static const std::pair<const char*, DType> codes[] = {
      {"b1", kBool},    {"u1", kUInt8},    {"i1", kInt8},      {"i2", kInt16},
      {"i4", kInt32},   {"i8", kInt64},    {"f2", kFloat16},   {"f4", kFloat32},
      {"f8", kFloat64}, {"V2", kBFloat16}, {"c8", kComplex64}, {"c16", kComplex128}};
  static const std::pair<const char*, const char*> names[] = {
      {"?", "b1"},       {"bool", "b1"},    {"uint8", "u1"},     {"int8", "i1"},
      {"int16", "i2"},   {"int32", "i4"},   {"int64", "i8"},     {"float16", "f2"},
      {"float32", "f4"}, {"float64", "f8"}, {"complex64", "c8"}, {"complex128", "c16"}};
  const bool ordered =
      !descr.empty() && std::string_view("<>|=").find(descr[0]) != std::string::npos;
  const char order = ordered ? descr[0] : '=';
  std::string code = ordered ? descr.substr(1) : descr;
  for (auto [name, c] : names)
    if (!ordered && code == name) code = c;
  for (auto [c, t] : codes) {
    if (code != c) continue;
    swap = itemsize(t) > 1 && ((order == '>' && kLittleHost) || (order == '<' && !kLittleHost));
    return t;
  }
  // PyTorch's from_numpy error, with NumPy's name for the type.
  std::string name = descr;
  if (!code.empty()) {
    int bits = code.size() > 1 ? 0 : -1;
    for (char c : code.substr(1))
      bits = (c >= '0' && c <= '9' && bits >= 0 && bits < 1000) ? bits * 10 + (c - '0') : -1;
    const char* kind = code[0] == 'u'   ? "uint"
                       : code[0] == 'i' ? "int"
                       : code[0] == 'f' ? "float"
                       : code[0] == 'c' ? "complex"
                                        : nullptr;
    if (kind && bits > 0) name = fmt::format("{}{}", kind, bits * 8);
    switch (code[0]) {
    case 'O':
      name = "object_";
      break;
    case 'M':
      name = "datetime64";
      break;
    case 'm':
      name = "timedelta64";
      break;
    case 'S':
    case 'a':
      name = "bytes_";
      break;
    case 'U':
      name = "str_";
      break;
    case 'V':
      name = "void";
      break;
    default:
      break;
    }
  }
  throw Error(fmt::format("load_npy: '{}': can't convert np.ndarray of type numpy.{}. The only "
                          "supported types are: float64, float32, float16, complex64, complex128, "
                          "int64, int32, int16, int8, uint8, and bool.",
                          path, name));
}

// A complex number's parts are swapped each on its own.
void swap_bytes(char* p, int64_t n, DType t) {
  size_t size = itemsize(t);
  if (is_complex(t)) {
    n *= 2;
    size /= 2;
  }
  for (int64_t i = 0; i < n; ++i, p += size)
    std::reverse(p, p + size);
}

// --- writing ---

std::string shape_repr(const Shape& s) {
  // Python's repr of a tuple: "()", "(3,)", "(2, 3)".
  if (s.size() == 1) return fmt::format("({},)", s[0]);
  return fmt::format("({})", fmt::join(s, ", "));
}

std::string header_bytes(DType t, const Shape& shape) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 numpy_str(t), shape_repr(shape));
  if (!shape.empty()) dict.append(kGrowthDigits - std::to_string(shape[0]).size(), ' ');
  // Pads with spaces and a newline so that the data start aligned.
  auto frame = [&](size_t len_bytes) {
    size_t used = kMagicLen + 2 + len_bytes + dict.size() + 1;
    return dict.size() + 1 + (kAlign - used % kAlign);
  };
  bool v1 = frame(2) <= 0xFFFF;
  size_t len = frame(v1 ? 2 : 4);
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v1 ? 1 : 2);
  out += '\0';
  for (size_t b = 0; b < (v1 ? 2u : 4u); ++b)
    out += static_cast<char>((len >> (8 * b)) & 0xFF);
  out += dict;
  out.append(len - dict.size() - 1, ' ');
  out += '\n';
  return out;
}

} // namespace

void save_npy(const Tensor& tensor, const std::string& path) {
  detail::check_defined(tensor, "save_npy");
  ir::NodePtr b = detail::host_contiguous(tensor);
  const size_t item = itemsize(b->dtype);
  const char* data = static_cast<const char*>(b->storage->data()) + b->view.offset * item;
  std::string head = header_bytes(b->dtype, b->shape);
  std::vector<char> body(static_cast<size_t>(b->numel()) * item);
  if (!body.empty()) std::memcpy(body.data(), data, body.size());
  if (!kLittleHost) {
    // The header names little-endian data ("<f4") whatever the host.
    swap_bytes(body.data(), b->numel(), b->dtype);
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(fmt::format("save_npy: cannot open '{}' for writing", path));
  f.write(head.data(), static_cast<std::streamsize>(head.size()));
  f.write(body.data(), static_cast<std::streamsize>(body.size()));
  if (!f.flush()) throw Error(fmt::format("save_npy: failed writing '{}'", path));
}

Tensor load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("load_npy: cannot open '{}'", path));
  f.seekg(0, std::ios::end);
  const int64_t file_size = f.tellg();
  f.seekg(0);
  auto truncated = [&](const char* what) {
    return Error(fmt::format("load_npy: '{}' is truncated: it ends inside the {}", path, what));
  };

  char prefix[kMagicLen + 2] = {};
  const bool whole = static_cast<bool>(f.read(prefix, sizeof prefix));
  if (std::memcmp(prefix, kMagic, kMagicLen) != 0)
    throw Error(
        fmt::format("load_npy: '{}' is not a .npy file (no \\x93NUMPY magic string)", path));
  if (!whole) throw truncated("format version");
  const int major = static_cast<unsigned char>(prefix[kMagicLen]);
  const int minor = static_cast<unsigned char>(prefix[kMagicLen + 1]);
  if (major < 1 || major > 3 || minor != 0)
    throw Error(fmt::format("load_npy: '{}' has format version {}.{}; versions 1.0, 2.0 and 3.0 "
                            "are supported",
                            path, major, minor));
  const size_t len_bytes = major == 1 ? 2 : 4;
  unsigned char len_buf[4] = {};
  if (!f.read(reinterpret_cast<char*>(len_buf), static_cast<std::streamsize>(len_bytes)))
    throw truncated("header length");
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i)
    header_len |= static_cast<size_t>(len_buf[i]) << (8 * i);
  const int64_t data_start = static_cast<int64_t>(kMagicLen + 2 + len_bytes + header_len);
  if (data_start > file_size) throw truncated("header");
  std::string text(header_len, '\0');
  f.read(text.data(), static_cast<std::streamsize>(header_len));
  Header h = HeaderParser(text, path).parse();

  bool swap = false;
  const DType t = dtype_of(h.descr, swap, path);
  const size_t item = itemsize(t);
  // The strides span every dim, an empty one counted as 1: (0, 2**62, 4)
  // holds nothing, yet its strides must still fit.
  int64_t numel = 1, nbytes = 0, span = 1;
  bool overflow = false;
  for (int64_t d : h.shape) {
    overflow |= __builtin_mul_overflow(numel, d, &numel);
    overflow |= __builtin_mul_overflow(span, std::max<int64_t>(d, 1), &span);
  }
  overflow |= __builtin_mul_overflow(numel, static_cast<int64_t>(item), &nbytes);
  if (overflow)
    throw Error(
        fmt::format("load_npy: the shape {} of '{}' is too large", shape_repr(h.shape), path));
  if (file_size - data_start < nbytes)
    throw Error(fmt::format("load_npy: '{}' is truncated: its header promises {} bytes of data, "
                            "the file holds {}",
                            path, nbytes, file_size - data_start));

  ir::NodePtr buf = ir::make_empty(t, {numel});
  char* p = static_cast<char*>(buf->storage->data());
  if (nbytes > 0 && !f.read(p, nbytes)) throw truncated("data");
  if (swap) swap_bytes(p, numel, t);
  if (t == kBool) {
    // Any nonzero byte is true; a bool holds exactly 0 or 1.
    for (int64_t i = 0; i < numel; ++i)
      p[i] = p[i] != 0;
  }
  std::vector<int64_t> order(h.shape.size());
  std::iota(order.begin(), order.end(), 0);
  if (h.fortran_order) std::reverse(order.begin(), order.end());
  return detail::make_view(detail::wrap(buf), h.shape, ir::dense_strides(h.shape, order), 0);
}

} // namespace tj
