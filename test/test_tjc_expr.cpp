// tjc's expression language (tools/tjc/expr.cpp): what programs print, checked
// character for character against PyTorch, their results, and their errors.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tools/tjc/expr.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using tj::tjc::run_expr;

namespace {

// What the program prints, with the REPL's echo of expression statements.
std::string run(const std::string& program) { return run_expr(program, true).printed; }

// The message of the tj::Error the program raises.
std::string error_of(const std::string& program, const std::string& file = "<expr>") {
  try {
    run_expr(program, true, file);
  } catch (const tj::Error& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("tjc expr: a seed program prints as PyTorch does", "[tjc]") {
  const char* program = R"(import torch
a = torch.ones((2, 3), dtype=torch.int16)
print(a)
some_constants = torch.tensor([[3.1415926, 2.71828], [1.61803, 0.0072897]])
print(some_constants)
more_integers = torch.tensor(((2, 4, 6), [3, 6, 9]))
print(more_integers)
x = torch.empty(2, 2, 3)
print(x.shape)

ones = torch.zeros(2, 2) + 1   # a comment
twos = torch.ones(2, 2) * 2
threes = (torch.ones(2, 2) * 7 - 1) / 2
fours = twos ** 2
sqrt2s = twos ** 0.5
print(threes)
print(fours, sqrt2s)
print(torch.abs(x).shape); print(x.dtype)
)";
  CHECK(run(program) == "tensor([[1, 1, 1],\n"
                        "        [1, 1, 1]], dtype=torch.int16)\n"
                        "tensor([[3.1416, 2.7183],\n"
                        "        [1.6180, 0.0073]])\n"
                        "tensor([[2, 4, 6],\n"
                        "        [3, 6, 9]])\n"
                        "torch.Size([2, 2, 3])\n"
                        "tensor([[3., 3.],\n"
                        "        [3., 3.]])\n"
                        "tensor([[4., 4.],\n"
                        "        [4., 4.]]) tensor([[1.4142, 1.4142],\n"
                        "        [1.4142, 1.4142]])\n"
                        "torch.Size([2, 2, 3])\n"
                        "torch.float32\n");
}

TEST_CASE("tjc expr: the examples of tjc --help", "[tjc]") {
  auto r = run_expr("softmax(randn(4, 8), 1)", false);
  REQUIRE(r.tensors.size() == 1);
  CHECK(r.names == std::vector<std::string>{"out"});
  CHECK(r.tensors[0].sizes() == tj::Shape{4, 8});
  CHECK(r.tensors[0].sum(std::vector<int64_t>{1}).allclose(tj::ones({4})));
  CHECK(run("x = arange(6).reshape(2, 3); (x * 2).sum(0)") == "tensor([ 6, 10, 14])\n");
  CHECK(run("torch.zeros(3).index_add(0, torch.tensor([2, 0, 2]), torch.ones(3), alpha=2); "
            "torch.zeros(3).scatter_add(0, torch.tensor([1, 1]), torch.ones(2))") ==
        "tensor([2., 0., 4.])\ntensor([0., 2., 0.])\n");
  CHECK(run("torch.randn(2, 3, dtype=torch.float64).shape") == "torch.Size([2, 3])\n");
  CHECK(run("x = torch.tensor([7, -7]); torch.div(x, 2, rounding_mode='floor'); "
            "x.div(2, rounding_mode='trunc'); torch.round(torch.tensor([0.125]), decimals=2)") ==
        "tensor([ 3, -4])\ntensor([ 3, -3])\ntensor([0.1200])\n");
  // x[()] is all of x (a 0-d tensor too); x[[]] selects nothing.
  CHECK(run("x = torch.zeros(2); x[()] = 5; x[()]; torch.tensor(7)[()]; x[[]]; "
            "torch.ones(2, 3)[[]]") ==
        "tensor([5., 5.])\ntensor(7)\ntensor([])\ntensor([], size=(0, 3))\n");
  CHECK(run("torch.sort(torch.tensor([3., 1., float('nan'), 2.]), descending=True)") ==
        "torch.return_types.sort(\nvalues=tensor([nan, 3., 2., 1.]),\n"
        "indices=tensor([2, 0, 3, 1]))\n");
  CHECK(run("x = torch.tensor([3, 1, 2]); x.topk(2).indices; x.argsort(); x.unbind()") ==
        "tensor([0, 2])\ntensor([1, 2, 0])\n(tensor(3), tensor(1), tensor(2))\n");
  CHECK(run("x = torch.tensor([[3., 1., 2.], [0., 5., 4.]]); x.median(); "
            "torch.median(x, 1, keepdim=True).indices") ==
        "tensor(2.)\ntensor([[2],\n        [2]])\n");
  CHECK(run("F.softmax(torch.tensor([1., 1.]), dim=0)") == "tensor([0.5000, 0.5000])\n");
  CHECK(run("import torch.nn.functional as G\nG.relu(torch.tensor([-1., 2.]))") ==
        "tensor([0., 2.])\n");
}

TEST_CASE("tjc expr: Python numbers follow Python", "[tjc]") {
  CHECK(run("7 // 2; -7 // 2; 7 / 2; 7 % -3; -7 % 3; 7.5 // 2; -7.5 % 2; 6 / 3") ==
        "3\n-4\n3.5\n-2\n2\n3.0\n0.5\n2.0\n");
  CHECK(run("-2**2; 2**-1; 2**3**2; (-2)**2; 2**0.5") == "-4\n0.5\n512\n4\n1.4142135623730951\n");
  CHECK(run("True + True; 1e-3; 20.; .5; 0x10; 1_000; 1e16; 1e15; 0.1 + 0.2") ==
        "2\n0.001\n20.0\n0.5\n16\n1000\n1e+16\n1000000000000000.0\n0.30000000000000004\n");
  CHECK(run("3 == 3.0; 1 < 2 < 3; 1 < 3 < 2; not 0; 1 and 0; 0 or 'x'; 5 & 3; 5 | 3; ~5") ==
        "True\nTrue\nFalse\nTrue\n0\n'x'\n1\n7\n-6\n");
  CHECK(run("None; (1,); (1, 2); [1, 2.5, 'a']; (); 'it' \"'s\"; 1 if 0 else 2") ==
        "(1,)\n(1, 2)\n[1, 2.5, 'a']\n()\n\"it's\"\n2\n");
  CHECK(run("int('12') + int(3.9) + int(-3.9); float('inf'); round(2.5); round(3.5); abs(-3)") ==
        "12\ninf\n2\n4\n3\n");
  CHECK(run("max(1, 5, 3); min([4, 2]); len((1, 2, 3)); str(3) + 'x'; [1, 2] + [3]; (0,) * 3") ==
        "5\n2\n3\n'3x'\n[1, 2, 3]\n(0, 0, 0)\n");
  CHECK(run("x = None; x is None; x is not None; 1 is True; 1 == True") ==
        "True\nFalse\nFalse\nTrue\n");
  // round's digits: the double's exact value, half to even; ints exactly.
  CHECK(run("round(2.675, 2); round(0.125, 2); round(1250.0, -2); round(1234, -2); "
            "round(1250, -2); round(-1250, -2); round(1350, -2); round(7, 2)") ==
        "2.67\n0.12\n1200.0\n1200\n1200\n-1200\n1400\n7\n");
  CHECK(run("torch.tensor([1+2j, 3]).tolist(); torch.scalar_tensor(3)") ==
        "[(1+2j), (3+0j)]\ntensor(3.)\n");
  // torch.tensor's data into an integer dtype: checked, as Python 3.10's torch converts it.
  CHECK(run("torch.tensor([-1, 255], dtype=torch.uint8); torch.tensor([127, -128], "
            "dtype=torch.int8)") ==
        "tensor([255, 255], dtype=torch.uint8)\ntensor([ 127, -128], dtype=torch.int8)\n");
  CHECK_THROWS_WITH(run("torch.tensor([200], dtype=torch.int8)"),
                    Catch::Contains("value cannot be converted to type int8 without overflow"));
  CHECK_THROWS_WITH(run("torch.tensor([300.5], dtype=torch.uint8)"),
                    Catch::Contains("value cannot be converted to type uint8 without overflow"));
  CHECK_THROWS_WITH(run("torch.tensor([-1.0], dtype=torch.uint8)"),
                    Catch::Contains("value cannot be converted to type uint8 without overflow"));
  CHECK_THROWS_WITH(run("torch.tensor([math.nan], dtype=torch.int64)"),
                    Catch::Contains("value cannot be converted to type int64 without overflow"));
  CHECK_THROWS_WITH(run("round(9223372036854775807, -1)"), Catch::Contains("integer overflow"));
  CHECK(run("round(-5, -1); round(-15, -1); round(4000000000000000000, -19)") == "0\n-20\n0\n");
  CHECK(run("math.pi; math.sqrt(2); math.floor(-2.5)") ==
        "3.141592653589793\n1.4142135623730951\n-3\n");
  CHECK(error_of("1 // 0") ==
        "<expr>:1:3: error: integer division or modulo by zero\n  1 // 0\n    ^");
  CHECK(error_of("2 ** 64") ==
        "<expr>:1:3: error: integer overflow (tjc's integers are 64-bit)\n  2 ** 64\n    ^");
  CHECK(error_of("x = 9223372036854775807\nx + 1") ==
        "<expr>:2:3: error: integer overflow (tjc's integers are 64-bit)\n  x + 1\n    ^");
  CHECK(error_of("99999999999999999999") ==
        "<expr>:1:1: error: integer literal too large\n  99999999999999999999\n  ^");
}

TEST_CASE("tjc expr: complex numbers follow Python", "[tjc][complex]") {
  CHECK(run("1j; 2+3j; (1+2j)*(3-1j); (1+2j)/(1-1j); -(1+1j); 2J; 1e3j; 0j; 1.5j + 1") ==
        "1j\n(2+3j)\n(5+5j)\n(-0.5+1.5j)\n(-1-1j)\n2j\n1000j\n0j\n(1+1.5j)\n");
  // An integer power multiplies (1j**2 is exactly -1), another goes through the polar form.
  CHECK(run("1j**2; (1+1j)**-2; 2**0.5j == complex(math.cos(math.log(2) / 2), "
            "math.sin(math.log(2) / 2))") == "(-1+0j)\n-0.5j\nTrue\n");
  CHECK(run("abs(3+4j); complex(1, 2); complex(1); complex(); 1j == 1j; 1j != 1; bool(0j)") ==
        "5.0\n(1+2j)\n(1+0j)\n0j\nTrue\nTrue\nFalse\n");
  CHECK(error_of("1j / 0") == "<expr>:1:4: error: complex division by zero\n  1j / 0\n     ^");
  CHECK_THAT(error_of("1j // 2"),
             Contains("unsupported operand type(s) for //: 'complex' and 'int'"));
  CHECK_THAT(error_of("1j < 2"),
             Contains("'<' not supported between instances of 'complex' and 'int'"));
  CHECK_THAT(error_of("0 ** -1j"), Contains("0.0 to a negative or complex power"));
  CHECK_THAT(error_of("int(1j)"), Contains("int() argument must be a string, a bytes-like object "
                                           "or a real number, not 'complex'"));
  CHECK_THAT(error_of("float(1j)"),
             Contains("float() argument must be a string or a real number, not 'complex'"));
  CHECK_THAT(error_of("round(1j)"), Contains("type complex doesn't define __round__ method"));
  // Tensors of complex numbers, as torch.tensor makes them (complex64 by default).
  CHECK(run("z = torch.tensor([1+2j, 3j]); z; z.dtype; z[0].item(); z * 1j") ==
        "tensor([1.+2.j, 0.+3.j])\ntorch.complex64\n(1+2j)\ntensor([-2.+1.j, -3.+0.j])\n");
  CHECK(run("torch.tensor([1, 2]) * 1j; torch.tensor([[1j]], dtype=torch.complex128)") ==
        "tensor([0.+1.j, 0.+2.j])\ntensor([[0.+1.j]], dtype=torch.complex128)\n");
  CHECK_THAT(error_of("torch.tensor([1j], dtype=torch.float32)"),
             Contains("can't convert complex to float"));
}

TEST_CASE("tjc expr: Python scalars combine with tensors as in PyTorch", "[tjc]") {
  CHECK(run("2 ** torch.tensor([1, 2, 3])") == "tensor([2, 4, 8])\n");
  CHECK(run("1 - torch.tensor([1, 2]); 10 // torch.tensor([3, 4]); 7 % torch.tensor([3, 4])") ==
        "tensor([ 0, -1])\ntensor([3, 2])\ntensor([1, 3])\n");
  CHECK(run("torch.tensor([1, 2, 3]) > 1; 2 < torch.tensor([1, 2, 3])") ==
        "tensor([False,  True,  True])\ntensor([False, False,  True])\n");
  CHECK(run("torch.tensor([1, 2]) / 2; torch.tensor([1, 2]) * 2.5; -torch.tensor([1, 2])") ==
        "tensor([0.5000, 1.0000])\ntensor([2.5000, 5.0000])\ntensor([-1, -2])\n");
  CHECK(run("~torch.tensor([True, False]); torch.tensor([True, False]) & True") ==
        "tensor([False,  True])\ntensor([ True, False])\n");
  CHECK(run("x = torch.arange(4.); x @ x; torch.where(x > 1, x, 0); torch.where(x > 1, 1.0, 0)") ==
        "tensor(14.)\ntensor([0., 0., 2., 3.])\ntensor([0., 0., 1., 1.])\n");
}

TEST_CASE("tjc expr: creation functions and keyword arguments", "[tjc]") {
  CHECK(run("torch.zeros(2, dtype=torch.int64); zeros((2, 3)).shape; zeros([2, 3]).shape") ==
        "tensor([0, 0])\ntorch.Size([2, 3])\ntorch.Size([2, 3])\n");
  CHECK(run("torch.zeros(2, dtype=float); torch.full((2,), 7); torch.ones(size=(1,))") ==
        "tensor([0., 0.], dtype=torch.float64)\ntensor([7, 7])\ntensor([1.])\n");
  CHECK(run("torch.arange(start=1, end=4); torch.arange(0, 1, 0.25); torch.arange(3.)") ==
        "tensor([1, 2, 3])\ntensor([0.0000, 0.2500, 0.5000, 0.7500])\ntensor([0., 1., 2.])\n");
  CHECK(run("torch.linspace(0, 1, steps=5); torch.eye(2, dtype=torch.int32)") ==
        "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])\n"
        "tensor([[1, 0],\n        [0, 1]], dtype=torch.int32)\n");
  CHECK(run("torch.tensor([]); torch.tensor(3.5); torch.tensor([True, False])") ==
        "tensor([])\ntensor(3.5000)\ntensor([ True, False])\n");
  CHECK(run("torch.ones(2, requires_grad=True); torch.zeros_like(torch.ones(2, 1))") ==
        "tensor([1., 1.], requires_grad=True)\ntensor([[0.],\n        [0.]])\n");
  CHECK(run("torch.randint(0, 10, (3,)).shape; torch.randint(10, (3,)).dtype") ==
        "torch.Size([3])\ntorch.int64\n");
  CHECK(run("torch.ones(2).new_zeros(3, dtype=torch.int8)") ==
        "tensor([0, 0, 0], dtype=torch.int8)\n");
  CHECK(error_of("torch.tensor([[1, 2], [3]])") ==
        "<expr>:1:7: error: expected sequence of length 2 at dim 1 (got 1)\n"
        "  torch.tensor([[1, 2], [3]])\n        ^");
}

TEST_CASE("tjc expr: tensor methods and attributes", "[tjc]") {
  const char* setup = "x = torch.arange(6).reshape(2, 3)\n";
  auto with_x = [&](const std::string& s) { return run(setup + s); };
  CHECK(with_x("x.shape; x.size(1); x.dim(); x.numel(); x.T.is_contiguous(); x.t().stride()") ==
        "torch.Size([2, 3])\n3\n2\n6\nFalse\n(1, 3)\n");
  CHECK(with_x("x.float().mean(); x.max(); x.sum().item(); x.tolist(); x.dtype; x.device") ==
        "tensor(2.5000)\ntensor(5)\n15\n[[0, 1, 2], [3, 4, 5]]\ntorch.int64\n"
        "device(type='cpu')\n");
  CHECK(with_x("x.max(1)") ==
        "torch.return_types.max(\nvalues=tensor([2, 5]),\nindices=tensor([2, 2]))\n");
  CHECK(with_x("v, i = x.min(dim=0); v; i; x.max(1).values") ==
        "tensor([0, 1, 2])\ntensor([0, 0, 0])\ntensor([2, 5])\n");
  CHECK(with_x("x.sum(dim=1, keepdim=True); torch.sum(x, (0, 1)); x.sum(0, dtype=torch.float64)") ==
        "tensor([[ 3],\n        [12]])\ntensor(15)\ntensor([3., 5., 7.], dtype=torch.float64)\n");
  CHECK(with_x("x.view(-1); x.flatten().unsqueeze(0).shape; x.permute(1, 0).shape") ==
        "tensor([0, 1, 2, 3, 4, 5])\ntorch.Size([1, 6])\ntorch.Size([3, 2])\n");
  CHECK(with_x("x.to(torch.float64).dtype; x.double().dtype; x.float().std(); x.type()") ==
        "torch.float64\ntorch.float64\ntensor(1.8708)\n'torch.LongTensor'\n");
  CHECK(with_x("torch.cat([x, x], dim=0).shape; torch.stack((x, x)).shape; x.transpose(0, 1)") ==
        "torch.Size([4, 3])\ntorch.Size([2, 2, 3])\ntensor([[0, 3],\n        [1, 4],\n"
        "        [2, 5]])\n");
  CHECK(with_x("torch.split(torch.arange(5), 2); x.clamp(min=2, max=4); x.flip(0)[0]") ==
        "(tensor([0, 1]), tensor([2, 3]), tensor([4]))\ntensor([[2, 2, 2],\n        [3, 4, 4]])\n"
        "tensor([3, 4, 5])\n");
  CHECK(run("x = torch.ones(2, requires_grad=True); y = (x * x).sum(); y.backward()\n"
            "x.grad; y; x.is_leaf; y.is_leaf") ==
        "tensor([2., 2.])\ntensor(2., grad_fn=<SumBackward0>)\nTrue\nFalse\n");
}

TEST_CASE("tjc expr: indexing reads and writes", "[tjc]") {
  const char* setup = "x = torch.arange(6).reshape(2, 3)\n";
  CHECK(run(setup + std::string("x[1]; x[:, 1]; x[0, 1:]; x[..., ::2]; x[None].shape; x[0][2]")) ==
        "tensor([3, 4, 5])\ntensor([1, 4])\ntensor([1, 2])\ntensor([[0, 2],\n        [3, 5]])\n"
        "torch.Size([1, 2, 3])\ntensor(2)\n");
  CHECK(run(setup + std::string("x[x > 2]; x[[0, 1], [2, 0]]; x[-1, -1]; x.shape[-1]")) ==
        "tensor([3, 4, 5])\ntensor([2, 3])\ntensor(5)\n3\n");
  CHECK(run("s = torch.Size([2, 3, 4])\ns[1:]; s[::-1]; (1, 2, 3)[-1]") ==
        "torch.Size([3, 4])\ntorch.Size([4, 3, 2])\n3\n");
  CHECK(run("y = torch.zeros(2, 3); y[0, 1] = 5; y[1][2] = 561; y[:, 0] = torch.tensor([7., 8.])\n"
            "print(y)") == "tensor([[  7.,   5.,   0.],\n        [  8.,   0., 561.]])\n");
  // += is in place: another name for the tensor sees it.
  CHECK(run("y = torch.ones(2, 2); z = y; y += 1; y[0] *= 3; z; y[y > 5] -= 6; z") ==
        "tensor([[6., 6.],\n        [2., 2.]])\ntensor([[0., 0.],\n        [2., 2.]])\n");
  CHECK(run("y = torch.ones(3); y.add_(1, alpha=2); y.mul_(2).sub_(1); y.zero_()") ==
        "tensor([3., 3., 3.])\ntensor([5., 5., 5.])\ntensor([0., 0., 0.])\n");
  CHECK(error_of("x = torch.arange(4)\nx /= 2") ==
        "<expr>:2:3: error: result type Float can't be cast to the desired output type Long\n"
        "  x /= 2\n    ^");
  CHECK(error_of("x = 5; x[0] = 1") ==
        "<expr>:1:9: error: 'int' object does not support item assignment\n"
        "  x = 5; x[0] = 1\n          ^");
}

TEST_CASE("tjc expr: echo and print", "[tjc]") {
  CHECK(run("print(1, 'a', None, 2.5, sep='-'); print(); print('a\\tb'); 'a\\tb'") ==
        "1-a-None-2.5\n\na\tb\n'a\\tb'\n");
  CHECK(run("print((1, 'b'), [torch.float32], end='!')") == "(1, 'b') [torch.float32]!");
  CHECK(run("torch.float32; torch.device('cpu'); print(torch.device('cpu'))") ==
        "torch.float32\ndevice(type='cpu')\ncpu\n");
  // Without echo only print() shows anything.
  auto r = run_expr("x = torch.ones(2)\nx * 2\nprint(3)\nx + 1", false);
  CHECK(r.printed == "3\n");
  CHECK(r.names == std::vector<std::string>{"out"});
  REQUIRE(r.tensors.size() == 1);
  CHECK(r.tensors[0].str() == "tensor([2., 2.])");
  CHECK(run("# only a comment\n\n;  \n") == "");
  // With a live stream, what was printed before an error is shown, as Python does.
  std::ostringstream live;
  CHECK_THROWS_WITH(
      run_expr("print(1)\nx = torch.zeros(2)\nx\nx[5]\nprint(2)", true, "<expr>", &live),
      Contains("index 5 is out of bounds for dimension 0 with size 2"));
  CHECK(live.str() == "1\ntensor([0., 0.])\n");
}

TEST_CASE("tjc expr: masked_fill and advanced indexing", "[tjc]") {
  CHECK(run("x = torch.arange(4.)\nx.masked_fill(x > 1, -1)") == "tensor([ 0.,  1., -1., -1.])\n");
  CHECK(run("x = torch.arange(4)\nx.masked_fill_(x < 2, torch.tensor(9))\nx") ==
        "tensor([9, 9, 2, 3])\ntensor([9, 9, 2, 3])\n");
  CHECK(run("x = torch.arange(6).reshape(2, 3)\nx[torch.tensor([1, 0, 1])]") ==
        "tensor([[3, 4, 5],\n        [0, 1, 2],\n        [3, 4, 5]])\n");
}

TEST_CASE("tjc expr: the tensors of the last statement", "[tjc]") {
  auto names = [](const std::string& program) { return run_expr(program, false).names; };
  using V = std::vector<std::string>;
  CHECK(names("a = torch.ones(2)") == V{"a"});
  CHECK(names("b = torch.ones(3)\nb") == V{"b"});
  CHECK(names("b = torch.ones(3)\nb += 1") == V{"b"});
  CHECK(names("v, i = torch.ones(3).max(0)") == V{"v", "i"});
  CHECK(names("torch.ones(3).max(0)") == V{"out0", "out1"});
  CHECK(names("p = (torch.ones(1), torch.ones(2))") == V{"p0", "p1"});
  CHECK(names("torch.ones(3)\nprint(1)").empty());
  CHECK(names("torch.ones(3).shape").empty());
  CHECK(names("(torch.ones(1), 2)").empty());
  auto r = run_expr("x = torch.arange(3)\ny = x * 2", false);
  REQUIRE(r.tensors.size() == 1);
  CHECK(r.tensors[0].to_vector<int64_t>() == std::vector<int64_t>{0, 2, 4});
}

TEST_CASE("tjc expr: errors are located", "[tjc]") {
  CHECK(error_of("zeros(2, 3") ==
        "<expr>:1:11: error: unexpected end of input\n  zeros(2, 3\n            ^");
  CHECK(error_of("x = 1\ny = (x 2)") == "<expr>:2:8: error: expected ')'\n  y = (x 2)\n         ^");
  CHECK(error_of("x = 1 $ 2") ==
        "<expr>:1:7: error: unexpected character '$'\n  x = 1 $ 2\n        ^");
  CHECK(error_of("1 +", "prog.py") == "prog.py:1:4: error: unexpected end of input\n  1 +\n     ^");
  CHECK(error_of("for x in y: pass") ==
        "<expr>:1:1: error: 'for' is not supported here\n  for x in y: pass\n  ^");
  CHECK(error_of("a = 1\nb = foo + a") ==
        "<expr>:2:5: error: name 'foo' is not defined\n  b = foo + a\n      ^");
  CHECK(error_of("torch.ones(2).foo") ==
        "<expr>:1:15: error: 'Tensor' object has no attribute 'foo'\n"
        "  torch.ones(2).foo\n                ^");
  CHECK(error_of("torch.foo(1)") ==
        "<expr>:1:7: error: module 'torch' has no attribute 'foo'\n  torch.foo(1)\n        ^");
  CHECK(error_of("torch.zeros(2, x=1)") ==
        "<expr>:1:7: error: zeros() got an unexpected keyword argument 'x'\n"
        "  torch.zeros(2, x=1)\n        ^");
  CHECK(error_of("torch.zeros(2.5)") ==
        "<expr>:1:7: error: zeros(): argument 'size' must be int, not float\n"
        "  torch.zeros(2.5)\n        ^");
  // The library's own errors keep its message, located at the call.
  CHECK(error_of("x = torch.ones(2, 3)\ny = x.matmul(torch.ones(2, 3))") ==
        "<expr>:2:7: error: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)\n"
        "  y = x.matmul(torch.ones(2, 3))\n        ^");
  CHECK(
      error_of("x = torch.ones(2, 2)\nx.sum(5)") ==
      "<expr>:2:3: error: Dimension out of range (expected to be in range of [-2, 1], but got 5)\n"
      "  x.sum(5)\n    ^");
  CHECK(error_of("torch.ones(2, 3) + torch.ones(3, 2)") ==
        "<expr>:1:18: error: The size of tensor a (3) must match the size of tensor b (2) at "
        "non-singleton dimension 1\n  torch.ones(2, 3) + torch.ones(3, 2)\n                   ^");
  CHECK(error_of("print(torch.ones(2) == 1 and 2)") ==
        "<expr>:1:26: error: Boolean value of Tensor with more than one value is ambiguous\n"
        "  print(torch.ones(2) == 1 and 2)\n                           ^");
  CHECK(error_of("import numpy") ==
        "<expr>:1:1: error: No module named 'numpy'\n  import numpy\n  ^");
  CHECK_THROWS_WITH(run("torch.zeros(2**40, 2**40)"), Contains("tensor too large"));
  CHECK_THROWS_WITH(run("torch.ones(2**20).expand(2**20, 2**20)"), Contains("tensor too large"));
  CHECK_THROWS_WITH(run("torch.arange(0, 1, 1e-300)"), Contains("tensor too large"));
  CHECK_THROWS_WITH(run("torch.zeros([1] * 65)"), Contains("too many dimensions"));
}

TEST_CASE("tjc expr: deep nesting is refused, long chains are not", "[tjc]") {
  for (const std::string& deep : {std::string(10000, '(') + "1" + std::string(10000, ')'),
                                  std::string(10000, '[') + "1", std::string(10000, '-') + "1",
                                  [] {
                                    std::string s = "x = torch.ones(1)\nx";
                                    for (int i = 0; i < 1000; ++i)
                                      s += ".T";
                                    return s;
                                  }(),
                                  [] {
                                    std::string s = "2";
                                    for (int i = 0; i < 1000; ++i)
                                      s += "**2";
                                    return s;
                                  }(),
                                  [] {
                                    std::string s;
                                    for (int i = 0; i < 1000; ++i)
                                      s += "not ";
                                    return s + "1";
                                  }()}) {
    CHECK_THAT(error_of(deep), Contains("expression nested too deeply"));
  }
  CHECK(error_of(std::string(10000, '(') + "1" + std::string(10000, ')')) ==
        "<expr>:1:201: error: expression nested too deeply\n  " + std::string(10000, '(') + "1" +
            std::string(10000, ')') + "\n  " + std::string(200, ' ') + "^");
  std::string sum = "1";
  for (int i = 0; i < 50000; ++i)
    sum += "+1";
  CHECK(run(sum) == "50001\n");
  std::string program = "x = 0";
  for (int i = 0; i < 2000; ++i)
    program += "\nx = x + 1";
  CHECK(run(program + "\nx") == "2000\n");
  CHECK_THAT(error_of("a = [1] * 65536; a = [a, 1]"), Contains("sequence too long"));
}

TEST_CASE("tjc expr: settings a program changes are restored", "[tjc]") {
  CHECK(run("torch.set_printoptions(precision=2); torch.tensor([1.23456])") == "tensor([1.23])\n");
  CHECK(tj::get_printoptions().precision == 4);
  CHECK(run("torch.set_default_dtype(torch.float64); torch.tensor([1.5]).dtype") ==
        "torch.float64\n");
  CHECK(tj::default_dtype() == tj::kFloat32);
}

// Random token soup: whatever it parses to, the only failure is a tj::Error.
TEST_CASE("tjc expr: random programs fail only with tj::Error", "[tjc]") {
  const std::vector<std::string> tokens = {
      "x",        "y",       "=",          "(",
      ")",        "[",       "]",          ",",
      ":",        ".",       "0",          "1",
      "2",        "3",       "-1",         "1.5",
      "+",        "-",       "*",          "/",
      "//",       "%",       "**",         "@",
      "==",       "<",       "not",        "and",
      "or",       "if",      "else",       "is",
      "None",     "True",    "'s'",        "...",
      "\n",       ";",       "+=",         "torch",
      "ones",     "zeros",   "arange",     "sum",
      "T",        "shape",   "reshape",    "print",
      "F",        "softmax", "max",        "dim=",
      "keepdim=", "item",    "tensor",     "float",
      "int",      "len",     "[0]",        "[:, 1]",
      "x[0]",     "dtype=",  "torch.int8", "requires_grad=True",
      "backward", "grad",    "view",       "expand",
      "where",    "cat",     "tolist",     "~",
      "&",        "|",       "^",          "#",
      "\\",       "\"",      "'",          "2**62",
      "9**9",     "1j",      "complex"};
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string program = "x = torch.arange(6).reshape(2, 3)\ny = torch.ones(3)\n";
    int n = 1 + static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k)
      program += tokens[rng() % tokens.size()] + (rng() % 3 ? "" : " ");
    INFO(program);
    try {
      run_expr(program, rng() % 2 == 0);
    } catch (const tj::Error&) {
    }
  }
}

TEST_CASE("tjc -e: cumsum and cumprod with PyTorch's arguments", "[tjc]") {
  CHECK(run("print(torch.cumsum(torch.tensor([1, 2, 3]), 0))") == "tensor([1, 3, 6])\n");
  CHECK(run("x = torch.arange(6.).reshape(2, 3)\nprint(x.cumprod(dim=1, dtype=torch.float64))") ==
        "tensor([[ 0.,  0.,  0.],\n        [ 3., 12., 60.]], dtype=torch.float64)\n");
}

TEST_CASE("tjc expr: tensors record the program's calls and operators as their sites", "[tjc]") {
  auto r = run_expr("x = randn(4, 8)\nsoftmax(x * 2, 1) + 1", false, "model.tj");
  REQUIRE(r.tensors.size() == 1);
  std::string graph = tj::ir::dump(r.tensors, "graph");
  CHECK(graph.find("ReduceMax %2 axes=[1] : float32[4, 1] at \"model.tj:2:1 (softmax)\"") !=
        std::string::npos);
  CHECK(graph.find("at \"model.tj:2:11 (*)\"") != std::string::npos);
  CHECK(graph.find("at \"model.tj:2:19 (+)\"") != std::string::npos);
  CHECK(graph.find(".cpp:") == std::string::npos);
}

TEST_CASE("tjc expr: torch.linalg as the seed tutorials use it", "[tjc][linalg]") {
  const char* program = R"(import torch
A = torch.tensor([[2., 3., -1.], [1., -2., 8.], [6., 1., -3.]]); print(A)
b = torch.tensor([5., 21., -1.]); print(b)
x = torch.linalg.solve(A, b); print(x)
torch.allclose(A @ x, b)
v1 = torch.tensor([1., 0., 0.])
v2 = torch.tensor([0., 1., 0.])
print(torch.linalg.cross(v2, v1))
m1 = torch.tensor([[0.7375, 0.83283], [0.84441, 0.29407]])
m3 = torch.linalg.matmul(m1, torch.tensor([[3., 0.], [0., 3.]]))
print(m3)
print(torch.linalg.svd(m3))
U, S, Vh = torch.linalg.svd(m3, full_matrices=False)
print(torch.linalg.norm(m3), torch.linalg.matrix_norm(m3, 'nuc'), torch.linalg.det(m3))
from torch import linalg
linalg.lstsq(A, b).rank
)";
  CHECK(run(program) == "tensor([[ 2.,  3., -1.],\n"
                        "        [ 1., -2.,  8.],\n"
                        "        [ 6.,  1., -3.]])\n"
                        "tensor([ 5., 21., -1.])\n"
                        "tensor([1., 2., 3.])\n"
                        "True\n"
                        "tensor([ 0.,  0., -1.])\n"
                        "tensor([[2.2125, 2.4985],\n"
                        "        [2.5332, 0.8822]])\n"
                        "torch.return_types.linalg_svd(\n"
                        "U=tensor([[-0.7889, -0.6145],\n"
                        "        [-0.6145,  0.7889]]),\n"
                        "S=tensor([4.1498, 1.0548]),\n"
                        "Vh=tensor([[-0.7957, -0.6056],\n"
                        "        [ 0.6056, -0.7957]]))\n"
                        "tensor(4.2817) tensor(5.2046) tensor(-4.3774)\n"
                        "tensor(3)\n");
  // eigvals: complex results, and complex numbers made in the program.
  CHECK(run("import torch\nprint(torch.linalg.eigvals(torch.tensor([[0., -1.], [1., 0.]])))\n"
            "z = torch.complex(torch.tensor([1., 0.]), torch.tensor([2., -1.]))\n"
            "print(z * z, torch.zeros(1, dtype=torch.cdouble))") ==
        "tensor([0.+1.j, 0.-1.j])\n"
        "tensor([-3.+4.j, -1.-0.j]) tensor([0.+0.j], dtype=torch.complex128)\n");
  CHECK_THAT(error_of("import torch\ntorch.linalg.inv(torch.ones(2, 3))"),
             Contains("linalg.inv: A must be batches of square matrices, but they are 2 by 3 "
                      "matrices"));
  CHECK_THAT(error_of("import torch\ntorch.linalg.nope(torch.ones(2, 3))"), Contains("nope"));
}

TEST_CASE("tjc expr: torch.nn.functional's losses and activations take torch's arguments",
          "[tjc]") {
  const char* program = R"(x = torch.tensor([[1., 2., 3.], [0.5, -1., 2.]], requires_grad=True)
print(F.cross_entropy(x, torch.tensor([2, 0]), reduction='sum'))
print(F.nll_loss(F.log_softmax(x, 1), torch.tensor([2, -100])))
print(F.cross_entropy(x, torch.tensor([2, 0]), None, None, 0))
print(F.huber_loss(x, torch.zeros(2, 3), delta=0.5))
print(F.one_hot(torch.tensor([0, 2])))
print(F.leaky_relu(torch.tensor([-1., 2.]), 0.5))
print(F.cross_entropy(x, torch.tensor([2, 0]), weight=torch.tensor([1., 2., 3.]), label_smoothing=0.1))
print(F.kl_div(torch.tensor([[-1., -2.], [-0.5, -3.]]), torch.tensor([[0.25, 0.75], [0., 1.]]), reduction='batchmean'))
)";
  CHECK(run(program) == "tensor(2.1489, grad_fn=<NllLossBackward0>)\n"
                        "tensor(0.4076, grad_fn=<NllLossBackward0>)\n"
                        "tensor(0.4076, grad_fn=<NllLossBackward0>)\n"
                        "tensor(0.6667, grad_fn=<HuberLossBackward0>)\n"
                        "tensor([[1, 0, 0],\n        [0, 0, 1]])\n"
                        "tensor([-0.5000,  2.0000])\n"
                        "tensor(0.7952, grad_fn=<AddBackward0>)\n"
                        "tensor(2.0938)\n");
  CHECK_THAT(error_of("F.mse_loss(torch.ones(2), torch.ones(2), reduction='avg')"),
             StartsWith("<expr>:1:3: error: avg is not a valid value for reduction"));
}
