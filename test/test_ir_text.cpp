// The IR made visible: the .tjir text form round-trips, every stage prints,
// malformed text gets located errors, and tjc behaves as documented.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <tensorjit/tensorjit.h>

#include <fstream>
#include <set>
#include <sstream>

#include "codegen/cuda/nvrtc_compile.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/ir/text.h"
#include "test/support/temp_dir.h"
#include "tools/tjc/driver.h"

using namespace tj;
using tj::indexing::Slice;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// Compares `text` with test/golden/NAME; TJ_UPDATE_GOLDEN=1 rewrites the file.
void check_golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(TJ_TEST_DATA_DIR) + "/../golden/" + name;
  if (const char* u = std::getenv("TJ_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    write_file(path, text);
    return;
  }
  INFO("golden file test/golden/" << name << " (TJ_UPDATE_GOLDEN=1 rewrites it)");
  CHECK(read_file(path) == text);
}

struct TjcResult {
  int code;
  std::string out, err;
};
TjcResult run_tjc(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = tjc::run(args, out, err);
  return {code, out.str(), err.str()};
}

// The tensors of a corpus that covers every op, dtype and kind of view.
std::vector<Tensor> corpus() {
  std::vector<Tensor> out;
  manual_seed(7);
  Tensor x = arange(12, kFloat32).reshape({3, 4}) / 7 - 0.5;
  Tensor y = rand({3, 4});
  Tensor i = arange(12, kInt64).reshape({3, 4}) - 5;
  Tensor b = x > 0;
  // Unary float functions.
  for (auto f : {tj::neg, tj::abs, tj::floor, tj::ceil, tj::round, tj::trunc, tj::reciprocal})
    out.push_back(f(x, {}));
  out.push_back((x.abs() + 1).sqrt());
  // Every function of the C math library (its rows in tensorjit/elementwise_functions.def).
#define TJ_MATH_FN(name, op, grad_fn) out.push_back(tj::name(x));
#include "tensorjit/elementwise_functions.def"
  // Binary, comparisons and logic.
  out.push_back(x + y * 2 - x / (y + 1));
  out.push_back(fmod(x, y + 0.5) + pow(y, x) + maximum(x, y) + minimum(x, y));
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints) out.push_back(tj::name(x, y));
#include "tensorjit/elementwise_functions.def"
  out.push_back(x.eq(y) + x.ne(y) + x.lt(y) + x.le(y));
  out.push_back(i / 3 + i.fmod(4) + i * i - (-i).abs());
  out.push_back(i.bitwise_and(full_like(i, 6)) + i.bitwise_or(full_like(i, 1)) +
                i.bitwise_xor(full_like(i, 3)) + bitwise_not(i));
  out.push_back(logical_and(b, y > 0.5).logical_or(b.logical_not()));
  out.push_back(where(b, x, y));
  // Every dtype, through casts.
  for (DType t :
       {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64})
    out.push_back(x.mul(10).to(t));
  out.push_back(tensor({1.5, -0.0, std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity(), 1e-300},
                       TensorOptions().dtype(kFloat64)));
  out.push_back(tensor(std::vector<int64_t>{INT64_MIN, INT64_MAX, 0}));
  out.push_back(tensor(std::vector<float>{0.1f, 3.4028235e38f, 1e-45f}).to(kFloat16));
  // Reductions.
  out.push_back(x.sum({1}) + x.amax({1}) + x.amin({1}) + y.prod(1));
  out.push_back(nn::functional::softmax(x, 1));
  // Scans: along rows and columns, fused with what reads them.
  out.push_back(x.cumsum(1) / 4 + y.cumprod(1));
  out.push_back(i.cumsum(0) * 2);
  out.push_back(logaddexp(x, y).logcumsumexp(1));
  // Views: transpose, slices with steps, flips, expand, diagonal, narrow.
  out.push_back(x.t().contiguous());
  out.push_back(x.slice(1, 0, 4, 2) + flip(x, {1}).slice(1, 1, 3));
  out.push_back(x.select(0, 1).unsqueeze(0).expand({5, 4}));
  out.push_back(x.diagonal());
  out.push_back(x.narrow(0, 1, 2).reshape({8}));
  out.push_back(x.t().reshape({12}));
  // Gathers along a dim, one of them through a transposed source.
  out.push_back(index_select(x * 2, 1, tensor(std::vector<int64_t>{2, 0, 2})));
  out.push_back(gather(x.t(), 0, tensor(std::vector<int64_t>{1, 0, 3, 2}).reshape({2, 2})));
  out.push_back(scatter(x * 2, 1, tensor(std::vector<int64_t>{3, 0, 1, 1}).reshape({2, 2}), -x));
  // Complex values: their ops, parts, constants and memory.
  Tensor c = complex(x, y);
  out.push_back(c * c.conj() / (c + 1) - c.exp() + (c.abs() + 1).log() + c.sqrt() + c.sin());
  out.push_back(c.abs() + c.real() * c.imag() + c.angle() + c.sum(1).real().unsqueeze(1));
  out.push_back(c.to(kComplex128) * Scalar(std::complex<double>(1.5, -2)) + c.cos());
  Tensor cm = complex(tensor({1.5f, -0.f}), tensor({-2.f, 3.f}));
  cm.eval();
  out.push_back(cm * 2 == cm.reciprocal());
  // An in-place write through a view.
  Tensor z = zeros({4, 4});
  z.slice(1, 0, 4, 2).add_(1);
  z.select(0, 3).fill_(5);
  out.push_back(z);
  return out;
}

} // namespace

TEST_CASE("The text form round-trips every op, dtype and view of a corpus", "[ir][text]") {
  std::vector<Tensor> ts = corpus();
  std::string text = ir::print(ts);
  ir::Graph g = ir::parse(text, "corpus.tjir");
  REQUIRE(g.outputs.size() == ts.size());
  CHECK(ir::print(g.outputs) == text);
  // The parsed graph computes the same values, bit for bit.
  for (size_t k = 0; k < ts.size(); ++k) {
    INFO("output " << k);
    CHECK(g.outputs[k].scalar_type() == ts[k].scalar_type());
    CHECK(g.outputs[k].sizes() == ts[k].sizes());
    Tensor a = ts[k], b = g.outputs[k];
    if (is_floating_point(a.scalar_type())) CHECK(equal(a.isnan(), b.isnan()));
    CHECK(equal(where(a.isnan(), zeros_like(a), a), where(b.isnan(), zeros_like(b), b)));
  }
  // Every op of the op table appears in the corpus's graph.
  std::vector<ir::NodePtr> roots;
  for (const auto& t : corpus())
    roots.push_back(detail::node_of(t));
  // The frontend writes transposes as strided views: Permute comes from text.
  const char* permuted = "%0 = Iota strides=[3, 1] offset=0 : int64[2, 3]\n"
                         "%1 = Neg %0 : int64[2, 3]\n"
                         "%2 = Permute %1 perm=[1, 0] : int64[3, 2]\n"
                         "output %2\n";
  ir::Graph p = ir::parse(permuted);
  CHECK(ir::print(p.outputs) == permuted);
  CHECK(equal(p.outputs[0], -arange(6).reshape({2, 3}).t()));
  roots.push_back(detail::node_of(p.outputs[0]));
  // cummax and cummin compute their input, and then the values' index, first: their scans come
  // from text.
  const char* extrema = "%0 = Iota strides=[3, 1] offset=0 : int64[2, 3]\n"
                        "%1 = ScanMax %0 axis=1 : int64[2, 3]\n"
                        "%2 = ScanMin %1 axis=0 : int64[2, 3]\n"
                        "output %2\n";
  ir::Graph e = ir::parse(extrema);
  CHECK(ir::print(e.outputs) == extrema);
  roots.push_back(detail::node_of(e.outputs[0]));
  // A product is a Call only where a library computes it (a GPU): here it comes from text, and
  // kernels compute it.
  const char* called = "%0 = Iota strides=[3, 1] offset=0 : int64[2, 3]\n"
                       "%1 = Cast %0 : float32[2, 3]\n"
                       "%2 = Iota strides=[2, 1] offset=0 : int64[3, 2]\n"
                       "%3 = Cast %2 : float32[3, 2]\n"
                       "%4 = Call gemm %1, %3 : float32[2, 2]\n"
                       "output %4\n";
  ir::Graph c = ir::parse(called);
  CHECK(ir::print(c.outputs) == called);
  roots.push_back(detail::node_of(c.outputs[0]));
  std::set<std::string> seen, missing;
  for (const auto& n : ir::topological_order(roots))
    seen.insert(std::string(ir::name(n->op)));
  for (int o = 0; o < ir::kNumOps; ++o)
    if (!seen.count(std::string(ir::name(static_cast<ir::Op>(o)))))
      missing.insert(std::string(ir::name(static_cast<ir::Op>(o))));
  INFO("ops never printed: " << Catch::Detail::stringify(
           std::vector<std::string>(missing.begin(), missing.end())));
  CHECK(missing.empty());
  // Computed last: it realizes the Call node, which the walk above would then not see.
  CHECK(equal(c.outputs[0], tensor({10.0f, 13.0f, 28.0f, 40.0f}).reshape({2, 2})));
}

TEST_CASE("save writes large storages to .npy files beside the graph and load reads them",
          "[ir][text]") {
  test::TempDir dir;
  Tensor w = arange(200, kFloat64).reshape({10, 20}) / 3;
  w.eval(); // memory, so that it is a storage of its own
  Tensor v = tensor({1.0f, 2.0f, 3.0f});
  Tensor out = (w.sum({1}).to(kFloat32).narrow(0, 0, 3) * v).exp();
  ir::SaveOptions o;
  o.output_names = {"y"};
  o.inputs = {{"w", w}};
  ir::save({out}, dir.file("model.tjir"), o);
  std::string text = read_file(dir.file("model.tjir"));
  CHECK(text.find("storage w : float64[200] = \"model.w.npy\"") != std::string::npos);
  CHECK(text.find("output y = %") != std::string::npos);
  ir::Graph g = ir::load_graph(dir.file("model.tjir"));
  REQUIRE(g.output_names == std::vector<std::string>{"y"});
  CHECK(equal(g.outputs[0], out));
  // An input replaces the stored data, converted to the declared dtype.
  ir::LoadOptions lo;
  lo.inputs["w"] = ones({200}, kFloat32);
  ir::Graph g2 = ir::load_graph(dir.file("model.tjir"), lo);
  CHECK(allclose(g2.outputs[0], (full({3}, 20.0) * v).exp()));
}

TEST_CASE("Malformed .tjir text gets an error with file, line, column and a caret", "[ir][text]") {
  auto error_of = [](const std::string& text) -> std::string {
    try {
      ir::parse(text, "bad.tjir");
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  CHECK(error_of("storage x : float32[2] = [1, 2]\n%0 = Buffer x strides=[1] offset=1 : "
                 "float32[2]\noutput %0\n") ==
        "bad.tjir:2:6: error: Buffer: the view reaches elements 1..2 of the storage with 2 "
        "elements\n  %0 = Buffer x strides=[1] offset=1 : float32[2]\n       ^");
  CHECK(error_of("%0 = Const 1 : float32[2]\n%1 = Add %0, %7 : float32[2]\noutput %1\n") ==
        "bad.tjir:2:14: error: %7 is not defined before this line\n"
        "  %1 = Add %0, %7 : float32[2]\n               ^");
  CHECK(error_of("%0 = Const 1 : float33[2]\n") ==
        "bad.tjir:1:16: error: unknown dtype 'float33'\n  %0 = Const 1 : float33[2]\n"
        "                 ^");
  CHECK(error_of("%0 = Const 1 : float32[2]\n") ==
        "bad.tjir:2:1: error: the graph has no outputs (add a line 'output %N')\n  \n  ^");
  CHECK(error_of("%0 = Const 1 : int32[2]\n%1 = Exp %0 : int32[2]\noutput %1") ==
        "bad.tjir:2:6: error: Exp: does not take int32\n  %1 = Exp %0 : int32[2]\n       ^");
  CHECK(error_of("storage x : float32[3]\n") ==
        "bad.tjir:1:9: error: storage 'x' has no data: give it as an input (tjc --input "
        "x=FILE.npy)\n  storage x : float32[3]\n          ^");

  // Nothing malformed crashes: each of these is a located tj::Error.
  const char* bad[] = {
      "", "%", "%0 =", "%0 = Const", "%0 = Const 1 :", "%0 = Const 1 : float32[",
      "%0 = Const 1 : float32[-1]\noutput %0", "%0 = Const 1e999999 : int64[]\noutput %0",
      "%0 = Const 99999999999999999999 : int64[]\noutput %0", "%0 = Const 300 : uint8[]\noutput %0",
      "%0 = Const 1 : float32[4611686018427387904, 4]", "%0 = Const x : float32[]",
      "storage x : float32[2] = [1]", "storage x : float32[1] = [1]\nstorage x : float32[1] = [1]",
      "%0 = Const 1 : float32[2, 3]\n%1 = ReduceSum %0 axes=[1, 0] : float32[1, 1]",
      "%0 = Const 1 : float32[2, 3]\n%1 = ReduceSum %0 axes=[] : float32[2, 3]",
      "%0 = Const 1 : float32[0, 3]\n%1 = ReduceSum %0 axes=[0] : float32[1, 3]",
      "%0 = Const 1 : float32[2, 3]\n%1 = ScanSum %0 axis=2 : float32[2, 3]",
      "%0 = Const 1 : float32[2, 3]\n%1 = ScanSum %0 axis=0 : float32[1, 3]",
      "%0 = Const true : bool[2, 3]\n%1 = ScanSum %0 axis=0 : bool[2, 3]",
      "%0 = Const 1 : float32[2, 3]\n%1 = Permute %0 perm=[0, 0] : float32[2, 3]",
      "%0 = Const 1 : float32[4]\n%1 = Slice %0 start=[3] step=[2] : float32[2]",
      "%0 = Const 1 : float32[4]\n%1 = Slice %0 start=[0] step=[0] : float32[2]",
      "%0 = Const 1 : float32[4]\n%1 = AsStrided %0 strides=[9223372036854775807] offset=1 : "
      "float32[3]",
      "%0 = Const 1 : float32[4]\n%1 = Reshape %0 : float32[5]",
      "%0 = Const 1 : float32[4]\n%1 = Expand %0 : float32[2, 4]",
      "%0 = Const 1 : float32[4]\n%1 = Assign %0, %0 strides=[1] offset=1 in_place=0 : "
      "float32[4]",
      "%0 = Const 1 : float32[4]\n%1 = Where %0, %0, %0 : float32[4]",
      "%0 = Iota strides=[1] offset=0 : float32[4]",
      "%0 = Philox seed=1 counter=0 word=7 strides=[1] offset=0 : int64[4]",
      "%0 = Const 1 : float32[] on cuda:99999999999", "%0 = Const 1 : float32[] on tpu",
      "%0 = Buffer nowhere strides=[] offset=0 : float32[]", "output %0", "\"unterminated",
      "%0 = Const 1 : float32[] extra", "%0 = Nope 1 : float32[]", "$",
      "%0 = Const 1 : float32[]\n%0 = Const 2 : float32[]",
      "%0 = Const 1 : float32[4]\n%1 = Neg %0 bogus=1 : float32[4]",
      "%0 = Const 1 : float32[4]\n%1 = CmpLt %0, %0 : float32[4]",
      "%0 = Const true : bool[4]\n%1 = Add %0, %0 : bool[4]",
      // Sizes and views that would overflow the scheduler's index arithmetic.
      "%0 = Const 0 : float32[0, 4294967296, 4294967296]\noutput %0",
      "storage w : float32[1] = [1]\n%0 = Buffer w strides=[2] offset=0 : float32[1]\n"
      "%1 = Slice %0 start=[0] step=[-9223372036854775808] : float32[1]\noutput %1",
      "%0 = Iota strides=[1] offset=9223372036854775807 : int64[1]\noutput %0",
      "%0 = Iota strides=[1] offset=0 : int64[4]\n%1 = Slice %0 start=[9] step=[1] : int64[0]",
      // An in-place write whose memory is read after it.
      "storage a : float32[2] = [1, 2]\n%0 = Buffer a strides=[1] offset=0 : float32[2]\n"
      "%1 = Neg %0 : float32[2]\n%2 = Assign %0, %1 strides=[1] offset=0 in_place=1 : "
      "float32[2]\noutput x = %0\noutput y = %2"};
  for (const char* text : bad) {
    INFO(text);
    std::string e = error_of(text);
    CHECK(e.rfind("bad.tjir:", 0) == 0);
    CHECK(e.find("\n  ") != std::string::npos);
  }
}

TEST_CASE("dump prints every stage, and TJ_DUMP writes them per materialization", "[ir][text]") {
  Tensor x = arange(8, kFloat32).reshape({2, 4});
  Tensor s = nn::functional::softmax(x, 1);
  for (const auto& stage : ir::stages()) {
    if (stage == "grad") continue;
    INFO(stage);
    if ((stage == "cuda" || stage == "ptx") && !cudagen::nvrtc_available()) {
      CHECK_THROWS_WITH(ir::dump({s}, stage), Catch::Contains("needs the CUDA backend"));
      continue;
    }
    CHECK(!ir::dump({s}, stage).empty());
  }
  if (cudagen::nvrtc_available()) {
    // NVRTC needs no GPU: the CUDA source and PTX print anywhere.
    CHECK(ir::dump({s}, "cuda").find("tj_kernel") != std::string::npos);
    std::string ptx = ir::dump({s}, "ptx");
    CHECK(ptx.find(".entry tj_kernel") != std::string::npos);
    CHECK(ptx.find('\0') == std::string::npos);
  }
  CHECK(ir::dump({s}, "llvm").find("define") != std::string::npos);
  CHECK(ir::dump({s}, "schedule").find("because") != std::string::npos);
  CHECK(ir::dump({s}, "dot").rfind("digraph", 0) == 0);
  CHECK_THROWS_WITH(ir::dump({s}, "bogus"),
                    Catch::Contains("dump: unknown stage 'bogus' (expected one of graph"));
  // Dumping computes nothing.
  CHECK(ir::dump({s}, "graph").find("Exp") != std::string::npos);

  Tensor w = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor loss = (w * w).sum();
  std::string grad = ir::dump({loss}, "grad");
  CHECK(grad.find("output grad0 = %") != std::string::npos);

  test::TempDir dir;
  Config saved = config();
  config().dump = "graph,schedule,kernel";
  config().dump_dir = dir.path.string();
  (x.exp() + 1).sum().item();
  config() = saved;
  CHECK(read_file(dir.file("0000-graph.txt")).find("ReduceSum") != std::string::npos);
  CHECK(read_file(dir.file("0000-schedule.txt")).find("kernel 0") != std::string::npos);
  CHECK(read_file(dir.file("0000-kernel.txt")).find("ReduceSum") != std::string::npos);
}

TEST_CASE("tjc: stages of the golden programs", "[ir][tjc]") {
  test::TempDir dir;
  // Softmax, an MLP step with its gradients, and a strided in-place update.
  const std::string golden = std::string(TJ_TEST_DATA_DIR) + "/../golden/";
  for (const char* prog : {"softmax", "mlp_step", "strided_update"}) {
    const std::string file = golden + prog + ".tjir";
    for (const char* stage : {"graph", "simplified", "schedule", "kernel", "dot"}) {
      INFO(prog << " --emit=" << stage);
      TjcResult r = run_tjc({file, std::string("--emit=") + stage});
      REQUIRE(r.code == 0);
      check_golden(std::string(prog) + "." + stage + ".txt", r.out);
    }
    TjcResult r = run_tjc({file, "--run"});
    REQUIRE(r.code == 0);
    check_golden(std::string(prog) + ".run.txt", r.out);
  }
  TjcResult grad = run_tjc(
      {golden + "mlp_step.tjir", "--grad", "loss", "--wrt", "w1,w2", "--emit=grad,schedule"});
  REQUIRE(grad.code == 0);
  check_golden("mlp_step.grad.txt", grad.out);
}

TEST_CASE("tjc: gradients of a .tjir graph match autograd and finite differences", "[ir][tjc]") {
  const std::string file = std::string(TJ_TEST_DATA_DIR) + "/../golden/mlp_step.tjir";
  ir::Graph g = ir::load_graph(file);
  REQUIRE(g.storages.count("w1"));
  ir::Graph d = ir::differentiate(g, "loss", {"w1"});
  Tensor grad = d.outputs.back();
  // Finite differences in float64 of the same graph.
  Tensor w1 = g.storages["w1"];
  for (int64_t k : {0, 3, 7}) {
    auto loss_at = [&](double delta) {
      Tensor w = w1.to(kFloat64).clone();
      w.index_put_({k}, w.index({k}) + delta);
      ir::LoadOptions lo;
      lo.inputs["w1"] = w;
      return ir::load_graph(file, lo).outputs[0].to(kFloat64).item<double>();
    };
    double h = 1e-3;
    double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
    CHECK(grad.index({k}).item<double>() == Approx(fd).margin(2e-3));
  }
  // Through a comparison (relu as a where): the gradient flows around it.
  ir::Graph relu = ir::parse("storage w : float32[3] = [-1, 2, 3]\n"
                             "%0 = Buffer w strides=[1] offset=0 : float32[3]\n"
                             "%1 = Const 0 : float32[3]\n"
                             "%2 = CmpLt %1, %0 : bool[3]\n"
                             "%3 = Where %2, %0, %1 : float32[3]\n"
                             "output y = %3\n");
  CHECK(equal(ir::differentiate(relu, "y", {"w"}).outputs.back(), tensor({0.0f, 1.0f, 1.0f})));
  TjcResult r = run_tjc({file, "--grad", "loss", "--wrt", "w1", "--emit=grad"});
  CHECK(r.code == 0);
  CHECK(r.out.find("output grad_w1 = %") != std::string::npos);
}

TEST_CASE("tjc: usage, errors and exit codes", "[ir][tjc]") {
  TjcResult help = run_tjc({"--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("--emit=STAGE") != std::string::npos);
  CHECK(run_tjc({}).code == 2);
  CHECK(run_tjc({"x.tjir", "--run=0"}).code == 2);
  CHECK(run_tjc({"x.tjir", "--device", "cuda:99999999999"}).code == 2);
  CHECK(run_tjc({"-e", "-h"}).code == 1); // "-h" is the program here, not the flag
  CHECK(run_tjc({"x.tjir", "--emit=nope"}).code == 2);
  CHECK(run_tjc({"x.tjir", "--frobnicate"}).code == 2);
  CHECK(run_tjc({"x.tjir", "--grad", "y"}).code == 2);
  TjcResult missing = run_tjc({"/nonexistent/x.tjir"});
  CHECK(missing.code == 1);
  CHECK(missing.err == "load: cannot open '/nonexistent/x.tjir'\n");

  test::TempDir dir;
  write_file(dir.file("bad.tjir"), "%0 = Const 1 : float32[2]\n%1 = Exp %0 : float32[3]\n");
  TjcResult bad = run_tjc({dir.file("bad.tjir"), "--run"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("bad.tjir:2:6: error: Exp: an operand has shape [2], not [3]") !=
        std::string::npos);

  // Inputs and outputs as .npy files.
  write_file(dir.file("f.tjir"), "storage x : float32[3]\n%0 = Buffer x strides=[1] offset=0 : "
                                 "float32[3]\n%1 = Mul %0, %0 : float32[3]\noutput sq = %1\n");
  save_npy(tensor({1.0, 2.0, 3.0}), dir.file("x.npy"));
  TjcResult run = run_tjc({dir.file("f.tjir"), "--input", "x=" + dir.file("x.npy"), "--output",
                           dir.file("out"), "--time"});
  CHECK(run.code == 0);
  CHECK(run.out.rfind("tensor([1., 4., 9.])\n# first run: ", 0) == 0);
  CHECK(equal(load_npy(dir.file("out/sq.npy")), tensor({1.0f, 4.0f, 9.0f})));
  // --output computes the outputs also where only stages are printed, and saves an expression's.
  TjcResult emitted = run_tjc({dir.file("f.tjir"), "--input", "x=" + dir.file("x.npy"), "--emit",
                               "graph", "--output", dir.file("emitted")});
  CHECK(emitted.code == 0);
  CHECK(equal(load_npy(dir.file("emitted/sq.npy")), tensor({1.0f, 4.0f, 9.0f})));
  TjcResult expr = run_tjc({"-e", "torch.ones(2) * 3", "--output", dir.file("expr")});
  CHECK(expr.code == 0);
  CHECK(expr.out == "tensor([3., 3.])\n");
  CHECK(equal(load_npy(dir.file("expr/out.npy")), tensor({3.0f, 3.0f})));
  TjcResult no_input = run_tjc({dir.file("f.tjir")});
  CHECK(no_input.code == 1);
  CHECK(no_input.err.find("storage 'x' has no data") != std::string::npos);
}

TEST_CASE("Nodes remember where the program built them; dumps and errors say it", "[ir][text]") {
  Tensor x = arange(8, kFloat32).reshape({2, 4});
  const int softmax_line = __LINE__ + 1;
  Tensor s = nn::functional::softmax(x, 1);
  const std::string at_softmax = fmt::format("test_ir_text.cpp:{} (softmax)", softmax_line);
  // Every node the composite op built has the user's line, not the library's.
  std::string graph = ir::dump({s}, "graph");
  CHECK(graph.find("ReduceMax %7 axes=[1] : float32[2, 1] at \"" + at_softmax + "\"") !=
        std::string::npos);
  CHECK(graph.find("reductions.cpp") == std::string::npos);
  CHECK(ir::dump({s}, "kernel").find("// from " + at_softmax) != std::string::npos);
  CHECK(ir::dump({s}, "schedule").find("  from " + at_softmax) != std::string::npos);
  // The gradient of an op is built at the op's place too.
  Tensor w = tensor({1.0, 2.0, 3.0}).requires_grad_();
  const int grad_line = __LINE__ + 1;
  Tensor p = nn::functional::softmax(w, 0);
  Tensor g = autograd::grad({p.select(0, 0)}, {w})[0];
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
      ++n;
    return n;
  };
  const std::string at_grad = fmt::format("test_ir_text.cpp:{} (softmax)", grad_line);
  CHECK(count(ir::dump({g}, "graph"), at_grad) > count(ir::dump({p}, "graph"), at_grad));
  // The places survive the text form.
  CHECK(ir::print(ir::parse(ir::print({s})).outputs) == ir::print({s}));

  // A scope names what operators build inside it (named functions keep their own line); an error
  // computing it names both.
  Tensor i = arange(4);
  Tensor q;
  int scope_line = 0;
  {
    scope_line = __LINE__ + 1;
    ir::Scope scope("ratios");
    q = i.floor_divide((i - 2).abs() - 1) + 1; // divides by zero at i = 1 and 3
  }
  CHECK(ir::dump({q}, "graph").find(fmt::format("test_ir_text.cpp:{} (ratios)", scope_line)) !=
        std::string::npos);
  CHECK(ir::dump({q}, "graph")
            .find(fmt::format("test_ir_text.cpp:{} (floor_divide)", scope_line + 1)) !=
        std::string::npos);
  CHECK_THROWS_WITH(q.sum().item(), Catch::Contains("(while computing values built at ") &&
                                        Catch::Contains(fmt::format("test_ir_text.cpp:{} (ratios), "
                                                                    "test_ir_text.cpp:{} (abs)",
                                                                    scope_line, scope_line + 1)));
}

TEST_CASE("Every API function records its caller's line; library-internal calls record none",
          "[ir][text]") {
  auto site_of = [](const Tensor& t) { // the place of the output's node, the last one printed
    std::string g = ir::dump({t}, "graph");
    size_t end = g.rfind("\noutput");
    std::string last = g.substr(g.rfind('\n', end - 1) + 1, end - g.rfind('\n', end - 1) - 1);
    size_t at = last.find(" at \"");
    return at == std::string::npos ? std::string() : last.substr(at + 5, last.size() - at - 6);
  };
  const int line = __LINE__ + 1;
  Tensor a = randn({4, 3});
  Tensor b = a.exp();
  Tensor c = tj::maximum(b, a);
  Tensor d = c.sum(std::vector<int64_t>{1}, true);
  Tensor e = a.transpose(0, 1).contiguous();
  Tensor f = tj::where(a > 0, a, b);
  Tensor h = tj::cat({a, b}, 0);
  Tensor k = a.clamp_min(0.5); // an inline function of the header passes its caller on
  CHECK(site_of(a) == fmt::format("test_ir_text.cpp:{} (randn)", line));
  CHECK(site_of(b) == fmt::format("test_ir_text.cpp:{} (exp)", line + 1));
  CHECK(site_of(c) == fmt::format("test_ir_text.cpp:{} (maximum)", line + 2));
  CHECK(site_of(d) == fmt::format("test_ir_text.cpp:{} (sum)", line + 3));
  CHECK(site_of(e) == fmt::format("test_ir_text.cpp:{} (contiguous)", line + 4));
  CHECK(site_of(f) == fmt::format("test_ir_text.cpp:{} (where)", line + 5));
  CHECK(site_of(h) == fmt::format("test_ir_text.cpp:{} (cat)", line + 6));
  CHECK(site_of(k) == fmt::format("test_ir_text.cpp:{} (clamp)", line + 7));
  // Operators have no line of their own: outside a scope their nodes have none, and no node ever
  // names a file of the library.
  Tensor m = a * 2 + b;
  CHECK(site_of(m).empty());
  for (const Tensor& t : {a, b, c, d, e, f, h, k, m}) {
    std::string g = ir::dump({t}, "graph");
    for (size_t at = g.find(" at \""); at != std::string::npos; at = g.find(" at \"", at + 1))
      CHECK(g.compare(at + 5, 17, "test_ir_text.cpp:") == 0);
  }
  // A backend's failure (here LLVM's, refusing an optimization level) names the places too.
  Tensor x16 = arange(7, kInt16).to(kFloat64);
  const int failing_line = __LINE__ + 1;
  Tensor odd = tj::atan2(tj::log10(x16 + 1), tj::cosh(x16));
  const int saved_opt = config().opt_level;
  config().opt_level = 9;
  CHECK_THROWS_WITH(odd.eval(),
                    Catch::Contains("opt_level 9 is not in 0..3") &&
                        Catch::Contains(fmt::format("test_ir_text.cpp:{} (atan2)", failing_line)));
  config().opt_level = saved_opt;
  CHECK(odd.eval().numel() == 7);
  // A helper passes its own caller on.
  auto helper = [](const Tensor& x, Caller where = {}) { return tj::relu(x, where) * 2; };
  const int helper_line = __LINE__ + 1;
  Tensor r = helper(a);
  CHECK(ir::dump({r}, "graph").find(fmt::format("test_ir_text.cpp:{} (relu)", helper_line)) !=
        std::string::npos);
}
