// .npy files: the fixtures in test/data/npy were written by NumPy itself
// (make_fixtures.py there); load_npy reads them all and save_npy writes the
// same bytes np.save wrote.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <tensorjit/tensorjit.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "test/support/temp_dir.h"

using namespace tj;
using tj::test::TempDir;

namespace {

std::string fixture(const std::string& name) {
  return std::string(TJ_TEST_DATA_DIR) + "/npy/" + name + ".npy";
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

const std::vector<double> kSigned = {-2, -1, 0, 1, 2, 3};

} // namespace

TEST_CASE("load_npy reads every dtype NumPy wrote, in either byte order", "[npy]") {
  struct Case {
    const char* name;
    DType dtype;
  };
  for (Case c :
       {Case{"int8", kInt8}, Case{"int16", kInt16}, Case{"int32", kInt32}, Case{"int64", kInt64},
        Case{"float16", kFloat16}, Case{"float32", kFloat32}, Case{"float64", kFloat64}}) {
    INFO(c.name);
    Tensor t = load_npy(fixture(c.name));
    CHECK(t.dtype() == c.dtype);
    CHECK(t.sizes() == Shape{2, 3});
    CHECK(t.is_contiguous());
    CHECK(values(t) == kSigned);
    if (c.dtype != kInt8) {
      Tensor be = load_npy(fixture(std::string(c.name) + "_be"));
      CHECK(be.dtype() == c.dtype);
      CHECK(values(be) == kSigned);
    }
  }
  Tensor b = load_npy(fixture("bool"));
  CHECK(b.dtype() == kBool);
  CHECK(values(b) == std::vector<double>{1, 0, 1, 0, 0, 1});
  Tensor u = load_npy(fixture("uint8"));
  CHECK(u.dtype() == kUInt8);
  CHECK(values(u) == std::vector<double>{0, 1, 2, 253, 254, 255});
  CHECK(u.str() == "tensor([[  0,   1,   2],\n        [253, 254, 255]], dtype=torch.uint8)");
}

TEST_CASE("load_npy keeps extremes and special floats bit for bit", "[npy]") {
  Tensor i = load_npy(fixture("int64_extremes"));
  auto iv = i.to_vector<int64_t>();
  CHECK(iv == std::vector<int64_t>{std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max(), 0});
  auto f = load_npy(fixture("float32_special")).to_vector<float>();
  REQUIRE(f.size() == 6);
  CHECK(std::isnan(f[0]));
  CHECK(f[1] == std::numeric_limits<float>::infinity());
  CHECK(f[2] == -std::numeric_limits<float>::infinity());
  CHECK(f[3] == 0.0f);
  CHECK(std::signbit(f[3]));
  CHECK(f[4] == std::numeric_limits<float>::denorm_min());
  CHECK(f[5] == std::numeric_limits<float>::max());
}

TEST_CASE("load_npy reads Fortran order as Fortran strides, and versions 2.0 and 3.0", "[npy]") {
  Tensor f = load_npy(fixture("fortran_3d"));
  CHECK(f.sizes() == Shape{2, 3, 4});
  CHECK(f.stride() == std::vector<int64_t>{1, 2, 6});
  CHECK_FALSE(f.is_contiguous());
  std::vector<double> expect(24);
  for (int i = 0; i < 24; ++i)
    expect[i] = i;
  CHECK(values(f) == expect);
  CHECK(values(f[1][2]) == std::vector<double>{20, 21, 22, 23});

  Tensor g = load_npy(fixture("fortran_2d_be"));
  CHECK(g.dtype() == kInt64);
  CHECK(g.stride() == std::vector<int64_t>{1, 3});
  CHECK(values(g) == std::vector<double>{0, 1, 2, 3, 4, 5});

  Tensor s = load_npy(fixture("scalar"));
  CHECK(s.dim() == 0);
  CHECK(s.item<double>() == 3.5);
  Tensor e = load_npy(fixture("empty"));
  CHECK(e.sizes() == Shape{0, 3});
  CHECK(e.str() == "tensor([], size=(0, 3))");
  CHECK(values(load_npy(fixture("v2"))) == std::vector<double>{0, 0.25, 0.5, 0.75});
  Tensor v3 = load_npy(fixture("v3"));
  CHECK(v3.dtype() == kInt32);
  CHECK(values(v3) == std::vector<double>{0, 1, 2, 3, 4});
}

TEST_CASE("save_npy writes the bytes np.save writes", "[npy]") {
  TempDir tmp("tj-npy");
  for (const char* name : {"bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                           "float64", "int64_extremes", "float32_special", "scalar", "empty"}) {
    INFO(name);
    std::string out = tmp.file(std::string(name) + ".npy");
    save_npy(load_npy(fixture(name)), out);
    CHECK(read_bytes(out) == read_bytes(fixture(name)));
  }
  // A Fortran-order input is written in C order, as np.save(np.ascontiguousarray(a)).
  std::string out = tmp.file("fortran.npy");
  save_npy(load_npy(fixture("fortran_3d")), out);
  Tensor back = load_npy(out);
  CHECK(back.is_contiguous());
  CHECK(values(back) == values(load_npy(fixture("fortran_3d"))));
}

TEST_CASE("save_npy of lazy values, views, and bfloat16 round-trips", "[npy]") {
  TempDir tmp("tj-npy");
  Tensor lazy = arange(12, TensorOptions().dtype(kFloat32)).reshape({3, 4}) * 0.5 + 1;
  save_npy(lazy, tmp.file("lazy.npy"));
  CHECK(values(load_npy(tmp.file("lazy.npy"))) == values(lazy));

  Tensor view = arange(12).reshape({3, 4}).t().narrow(1, 1, 2);
  save_npy(view, tmp.file("view.npy"));
  Tensor v = load_npy(tmp.file("view.npy"));
  CHECK(v.sizes() == Shape{4, 2});
  CHECK(values(v) == std::vector<double>{4, 8, 5, 9, 6, 10, 7, 11});

  Tensor bf = tensor({1.5, -2.0, 3.25}).to(kBFloat16);
  save_npy(bf, tmp.file("bf16.npy"));
  CHECK(read_bytes(tmp.file("bf16.npy")).find("'descr': '<V2'") != std::string::npos);
  Tensor bb = load_npy(tmp.file("bf16.npy"));
  CHECK(bb.dtype() == kBFloat16);
  CHECK(values(bb) == std::vector<double>{1.5, -2.0, 3.25});

  // The file is a copy: writing the tensor afterwards changes nothing on disk.
  Tensor w = zeros({3});
  save_npy(w, tmp.file("w.npy"));
  w.fill_(7);
  CHECK(values(load_npy(tmp.file("w.npy"))) == std::vector<double>{0, 0, 0});
  // And the loaded tensor owns its memory: it is writable through views.
  Tensor l = load_npy(fixture("float32"));
  l[0][0] = 100;
  CHECK(values(l) == std::vector<double>{100, -1, 0, 1, 2, 3});
  CHECK(values(load_npy(fixture("float32"))) == kSigned);
}

TEST_CASE("load_npy rejects corrupt, truncated and unsupported files clearly", "[npy][errors]") {
  TempDir tmp("tj-npy");
  const std::string good = read_bytes(fixture("float32"));
  auto load_bytes = [&](const std::string& bytes) {
    std::string p = tmp.file("bad.npy");
    write_bytes(p, bytes);
    return load_npy(p);
  };
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(load_npy(tmp.file("missing.npy")), Contains("cannot open"));
  CHECK_THROWS_WITH(load_bytes(""), Contains("is not a .npy file"));
  CHECK_THROWS_WITH(load_bytes("PK\x03\x04 this is a zip file"), Contains("is not a .npy file"));
  CHECK_THROWS_WITH(load_bytes(good.substr(0, 7)), Contains("is truncated"));
  CHECK_THROWS_WITH(load_bytes(good.substr(0, 9)), Contains("is truncated"));
  CHECK_THROWS_WITH(load_bytes(good.substr(0, 60)), Contains("is truncated"));
  CHECK_THROWS_WITH(load_bytes(good.substr(0, good.size() - 3)),
                    Contains("its header promises 24 bytes of data, the file holds 21"));
  std::string v9 = good;
  v9[6] = 9;
  CHECK_THROWS_WITH(load_bytes(v9), Contains("has format version 9.0"));

  auto with_header = [&](std::string dict) {
    // A version 1.0 file around `dict`, with 24 bytes of data.
    dict += '\n';
    std::string s = std::string("\x93NUMPY\x01\x00", 8);
    s += static_cast<char>(dict.size() & 0xFF);
    s += static_cast<char>(dict.size() >> 8);
    return s + dict + std::string(24, '\0');
  };
  CHECK(values(load_bytes(with_header("{'descr': '<f4', 'fortran_order': False, "
                                      "'shape': (6,)}"))) == std::vector<double>(6, 0.0));
  // np.load reads a bare code or a name as the host's order.
  for (const char* descr : {"f4", "float32", "=f4"}) {
    INFO(descr);
    const Tensor t = load_bytes(with_header(fmt::format(
        "{{'descr': '{}', 'fortran_order': False, 'shape': (6,)}}", descr)));
    CHECK(t.dtype() == kFloat32);
    CHECK(values(t) == std::vector<double>(6, 0.0));
  }
  CHECK(load_bytes(with_header("{'descr': '?', 'fortran_order': False, 'shape': (24,)}"))
            .dtype() == kBool);
  // Types it cannot take, by NumPy's names for them.
  for (auto [descr, name] : std::initializer_list<std::pair<const char*, const char*>>{
           {"|O", "object_"},
           {"<M8[ns]", "datetime64"},
           {"<m8[s]", "timedelta64"},
           {"|S3", "bytes_"},
           {"|V4", "void"},
           {"<u8", "uint64"},
           {"<f16", "float128"}}) {
    INFO(descr);
    CHECK_THROWS_WITH(load_bytes(with_header(fmt::format(
                          "{{'descr': '{}', 'fortran_order': False, 'shape': (6,)}}", descr))),
                      Contains(fmt::format("of type numpy.{}. The only supported", name)));
  }
  CHECK_THROWS_WITH(load_bytes(with_header("{'descr': '<f4', 'shape': (6,)}")),
                    Contains("must have the keys"));
  CHECK_THROWS_WITH(load_bytes(with_header("{'descr': '<f4', 'fortran_order': False, "
                                           "'shape': (-6,)}")),
                    Contains("expected a non-negative integer"));
  CHECK_THROWS_WITH(load_bytes(with_header("{'descr': '<f4', 'fortran_order': Maybe, "
                                           "'shape': (6,)}")),
                    Contains("must be True or False"));
  CHECK_THROWS_WITH(load_bytes(with_header("{'descr': '<f4', 'fortran_order': False, "
                                           "'shape': (99999999999, 99999999999)}")),
                    Contains("is too large"));
  CHECK_THROWS_WITH(load_bytes(with_header("{'descr': '<f4', 'fortran_order': False, "
                                           "'shape': (99999999999999999999,)}")),
                    Contains("does not fit in 64 bits"));
  CHECK_THROWS_WITH(load_bytes(with_header("{'descr': [('a', '<f4')], 'fortran_order': False, "
                                           "'shape': (6,)}")),
                    Contains("structured dtypes are not supported"));
  CHECK_THROWS_WITH(load_bytes(with_header("{'descr': '<f4', 'fortran_order': False, "
                                           "'shape': (6,)")),
                    Contains("cannot parse the header"));

  CHECK_THROWS_WITH(load_npy(fixture("uint16")),
                    Contains("can't convert np.ndarray of type numpy.uint16. The only supported "
                             "types are: float64, float32, float16, complex64, complex128, int64, "
                             "int32, int16, int8, uint8, and bool."));
  CHECK_THROWS_WITH(load_npy(fixture("unicode")), Contains("of type numpy.str_"));
  CHECK_THROWS_WITH(save_npy(ones({2}), tmp.file("no/such/dir/x.npy")), Contains("cannot open"));
  CHECK_THROWS_WITH(save_npy(Tensor(), tmp.file("x.npy")), Contains("undefined"));
}

TEST_CASE("a bool .npy with bytes other than 0 and 1 reads them as true", "[npy]") {
  TempDir tmp("tj-npy");
  std::string bytes = read_bytes(fixture("bool"));
  bytes[bytes.size() - 1] = 7;
  write_bytes(tmp.file("b.npy"), bytes);
  Tensor b = load_npy(tmp.file("b.npy"));
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false, true, false, false, true});
  CHECK(b.sum().item<int64_t>() == 3);
}
