#!/usr/bin/env python3
"""Differential programs against PyTorch: generates random small programs over tensorjit's public
API, runs each in PyTorch, and writes them as C++ test cases (test/difftest/programs.inc) with
PyTorch's printed output as golden text (test/difftest/expected.txt). test/test_difftest.cpp
runs the C++ side against the golden text.

Run by hand, with PyTorch 1.13 (Debian's python3-torch), when the API grows:

    /usr/bin/python3 scripts/difftest/difftest.py [--count 400] [--seed 1]

Each program builds tensors from literals, applies elementwise ops with type promotion,
reductions, views, in-place writes through views, joins, products and casts, and prints some
results; some end in a deliberate error, whose message is the expected output. Only programs
whose printed result cannot depend on legitimate rounding differences are kept: a program with
an inexact op (division, transcendental functions, means, products of non-dyadic values) is run
again with its float inputs perturbed by a few parts in 10^6, and dropped when any printed digit
changes. Programs of exact ops only (sums and products of small dyadic numbers, comparisons,
views, casts) must match to the bit, the sign of zero included.
"""
import argparse
import os
import random
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# dtype: (torch name, tj name, kind)
DTYPES = {
    "float32": ("torch.float32", "tj::kFloat32", "float"),
    "float64": ("torch.float64", "tj::kFloat64", "float"),
    "int64": ("torch.int64", "tj::kInt64", "int"),
    "int32": ("torch.int32", "tj::kInt32", "int"),
    "bool": ("torch.bool", "tj::kBool", "bool"),
}


def promote(a, b):
    return str(torch.promote_types(getattr(torch, a), getattr(torch, b))).replace("torch.", "")


def ilist(xs):
    return ", ".join(str(int(x)) for x in xs)


def fnum(x):
    """A float literal both languages read the same."""
    r = repr(float(x))
    return r if ("." in r or "e" in r or "n" in r) else r + ".0"


class Value:
    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, list(shape), dtype

    @property
    def kind(self):
        return DTYPES[self.dtype][2]

    @property
    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n


class Program:
    """Statements rendered twice, in Python for PyTorch and in C++ for tensorjit."""

    def __init__(self, rng):
        self.rng = rng
        self.py, self.cpp = [], []
        self.values = []
        self.inputs = []  # (name, literal values, kind) for perturbation
        self.exact = True
        self.prints = []
        self.error = False

    def fresh(self, shape, dtype):
        v = Value(f"v{len(self.values)}", shape, dtype)
        self.values.append(v)
        return v

    def emit(self, v, py_expr, cpp_expr):
        self.py.append(f"{v.name} = {py_expr}")
        self.cpp.append(f"tj::Tensor {v.name} = {cpp_expr};")
        return v

    def stmt(self, py, cpp):
        self.py.append(py)
        self.cpp.append(cpp + ";")

    # --- leaves ---
    def literal(self, shape=None, dtype=None):
        r = self.rng
        if shape is None:
            shape = [r.randint(1, 4) for _ in range(r.choice([0, 1, 1, 2, 2, 2, 3]))]
        if dtype is None:
            dtype = r.choice(["float32"] * 6 + ["float64", "int64", "int64", "int32", "bool"])
        n = 1
        for s in shape:
            n *= s
        kind = DTYPES[dtype][2]
        if kind == "float":
            vals = [r.randint(-12, 12) / 4 for _ in range(n)]
            if r.random() < 0.15:
                vals[r.randrange(n)] = -0.0
        elif kind == "int":
            vals = [r.randint(-5, 5) for _ in range(n)]
        else:
            vals = [r.randint(0, 1) for _ in range(n)]
        v = self.fresh(shape, dtype)
        self.inputs.append((v.name, vals, kind))
        tp, tc, _ = DTYPES[dtype]
        if kind == "float":
            py_vals = "[" + ", ".join(fnum(x) for x in vals) + "]"
            cpp_vals = "std::vector<double>{" + ", ".join(fnum(x) for x in vals) + "}"
        else:
            py_vals = "[" + ilist(vals) + "]"
            cpp_vals = "std::vector<int64_t>{" + ilist(vals) + "}"
        if kind == "bool":
            py = f"torch.tensor({py_vals}).reshape([{ilist(shape)}]).to(torch.bool)"
            cpp = f"tj::tensor({cpp_vals}).reshape({{{ilist(shape)}}}).to(tj::kBool)"
        else:
            py = f"torch.tensor(INPUT['{v.name}'], dtype={tp}).reshape([{ilist(shape)}])"
            cpp = f"tj::tensor({cpp_vals}, tj::dtype({tc})).reshape({{{ilist(shape)}}})"
        self.py.append(f"{v.name} = {py}")
        self.cpp.append(f"tj::Tensor {v.name} = {cpp};")
        return v

    def arange(self):
        n = self.rng.randint(2, 12)
        dtype = self.rng.choice(["float32", "int64"])
        v = self.fresh([n], dtype)
        tp, tc, _ = DTYPES[dtype]
        return self.emit(v, f"torch.arange({n}, dtype={tp})", f"tj::arange({n}, tj::dtype({tc}))")

    # --- ops ---
    def pick(self, pred=lambda v: True):
        cands = [v for v in self.values if pred(v)]
        return self.rng.choice(cands) if cands else None

    def unary(self, x):
        r = self.rng
        exact_ops = ["neg", "abs", "relu", "square", "floor", "ceil", "clamp", "clamp_min"]
        inexact_ops = ["exp", "tanh", "sigmoid", "sin", "sqrt_abs", "log_abs1", "reciprocal"]
        op = r.choice(exact_ops * 2 + inexact_ops)
        if x.kind == "bool" or (x.kind == "int" and op in ("floor", "ceil")):
            x = self.cast(x, "float32")
        out = x.dtype if op in exact_ops else ("float32" if x.kind != "float" else x.dtype)
        v = self.fresh(x.shape, out)
        n = x.name
        if op in inexact_ops:
            self.exact = False
        if op == "clamp":
            lo, hi = sorted([r.randint(-8, 8) / 4, r.randint(-8, 8) / 4])
            if x.kind == "int":
                lo, hi = int(lo), int(hi)
            return self.emit(v, f"{n}.clamp({lo}, {hi})", f"{n}.clamp({lo}, {hi})")
        if op == "clamp_min":
            return self.emit(v, f"{n}.clamp(min=0)", f"{n}.clamp_min(0)")
        if op == "sqrt_abs":
            return self.emit(v, f"{n}.abs().sqrt()", f"{n}.abs().sqrt()")
        if op == "log_abs1":
            return self.emit(v, f"({n}.abs() + 1).log()", f"({n}.abs() + 1).log()")
        return self.emit(v, f"{n}.{op}()", f"{n}.{op}()")

    def broadcast_partner(self, x):
        """A value whose shape broadcasts with x's, made if none is at hand."""
        r = self.rng
        def ok(v):
            try:
                torch.broadcast_shapes(tuple(v.shape), tuple(x.shape))
                return True
            except RuntimeError:
                return False
        y = self.pick(lambda v: v is not x and ok(v))
        if y is None or r.random() < 0.4:
            shape = list(x.shape)
            for i in range(len(shape)):
                if r.random() < 0.3:
                    shape[i] = 1
            if shape and r.random() < 0.3:
                shape = shape[r.randint(0, len(shape) - 1):]
            y = self.literal(shape)
        return y

    def binary(self, x):
        r = self.rng
        op = r.choice(["+", "-", "*", "*", "/", "max", "min", "gt", "le", "eq", "where", "pow2"])
        if r.random() < 0.3 and op in ("+", "-", "*", "/"):
            s = r.choice([2, -3, 0.5, 1.25, -0.75])
            if x.kind == "bool" and op == "-":
                x = self.cast(x, "int64")
            out = x.dtype
            if isinstance(s, float) and x.kind != "float":
                out = "float32"
            if op == "/":
                out = x.dtype if x.kind == "float" else "float32"
                if s not in (2, 0.5):
                    self.exact = False
            v = self.fresh(x.shape, out)
            return self.emit(v, f"{x.name} {op} {s}", f"{x.name} {op} {s}")
        y = self.broadcast_partner(x)
        shape = list(torch.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
        if op in ("+", "-", "*", "/", "max", "min", "where") and "bool" in (x.kind, y.kind):
            if op == "-" or op in ("/", "max", "min") or r.random() < 0.5:
                x = self.cast(x, "int64") if x.kind == "bool" else x
                y = self.cast(y, "int64") if y.kind == "bool" else y
        out = promote(x.dtype, y.dtype)
        if op == "/":
            self.exact = False
            if DTYPES[out][2] != "float":
                out = "float32"
        if op in ("gt", "le", "eq"):
            v = self.fresh(shape, "bool")
            sym = {"gt": ">", "le": "<=", "eq": "=="}[op]
            return self.emit(v, f"{x.name} {sym} {y.name}", f"{x.name} {sym} {y.name}")
        if op in ("max", "min"):
            f = "maximum" if op == "max" else "minimum"
            v = self.fresh(shape, out)
            return self.emit(v, f"{f.upper()}({x.name}, {y.name})", f"tj::{f}({x.name}, {y.name})")
        if op == "where":
            c = self.literal(shape[r.randint(0, len(shape)):] if shape else [], "bool")
            v = self.fresh(shape, out)
            return self.emit(v, f"torch.where({c.name}, {x.name}, {y.name})",
                             f"tj::where({c.name}, {x.name}, {y.name})")
        if op == "pow2":
            if x.kind == "bool":
                x = self.cast(x, "int64")
            v = self.fresh(x.shape, x.dtype)
            return self.emit(v, f"{x.name}.pow(2)", f"{x.name}.pow(2)")
        v = self.fresh(shape, out)
        return self.emit(v, f"{x.name} {op} {y.name}", f"{x.name} {op} {y.name}")

    def cast(self, x, dtype=None):
        dtype = dtype or self.rng.choice(list(DTYPES))
        v = self.fresh(x.shape, dtype)
        return self.emit(v, f"{x.name}.to({DTYPES[dtype][0]})", f"{x.name}.to({DTYPES[dtype][1]})")

    def reduce(self, x):
        r = self.rng
        op = r.choice(["sum", "sum_dim", "amax", "amin", "mean", "prod", "argmax", "any", "all"])
        if x.kind == "bool" and op in ("sum", "sum_dim", "mean", "amax", "amin", "prod", "argmax"):
            x = self.cast(x, "int64")
        if not x.shape and op in ("sum_dim", "amax", "amin", "prod", "argmax"):
            op = "sum"
        if op == "mean":
            if x.kind != "float":
                x = self.cast(x, "float32")
            self.exact = False
            v = self.fresh([], x.dtype)
            return self.emit(v, f"{x.name}.mean()", f"{x.name}.mean()")
        if op == "sum":
            out = x.dtype if x.kind == "float" else "int64"
            v = self.fresh([], out)
            return self.emit(v, f"{x.name}.sum()", f"{x.name}.sum()")
        if op in ("any", "all"):
            v = self.fresh([], "bool")
            return self.emit(v, f"{x.name}.{op}()", f"{x.name}.{op}()")
        d = r.randrange(len(x.shape))
        keep = r.random() < 0.4
        shape = list(x.shape)
        if keep:
            shape[d] = 1
        else:
            del shape[d]
        k = "True" if keep else "False"
        kc = "true" if keep else "false"
        if op == "sum_dim":
            out = x.dtype if x.kind == "float" else "int64"
            v = self.fresh(shape, out)
            return self.emit(v, f"{x.name}.sum({d}, keepdim={k})", f"{x.name}.sum({{{d}}}, {kc})")
        if op in ("amax", "amin"):
            v = self.fresh(shape, x.dtype)
            return self.emit(v, f"{x.name}.{op}({d}, keepdim={k})", f"{x.name}.{op}({{{d}}}, {kc})")
        if op == "prod":
            out = x.dtype if x.kind == "float" else "int64"
            v = self.fresh(shape, out)
            return self.emit(v, f"{x.name}.prod({d}, keepdim={k})", f"{x.name}.prod({d}, {kc})")
        v = self.fresh(shape, "int64")
        return self.emit(v, f"{x.name}.argmax({d}, keepdim={k})", f"{x.name}.argmax({d}, {kc})")

    def view(self, x):
        r = self.rng
        nd = len(x.shape)
        ops = ["reshape", "unsqueeze", "flatten", "expand"]
        if nd >= 1:
            ops += ["narrow", "narrow", "select", "slice_step"]
        if nd >= 2:
            ops += ["t", "transpose", "permute"]
        if 1 in x.shape:
            ops.append("squeeze")
        op = r.choice(ops)
        n = x.name
        if op == "reshape":
            shape = factor(x.numel, r)
            v = self.fresh(shape, x.dtype)
            return self.emit(v, f"{n}.reshape([{ilist(shape)}])", f"{n}.reshape({{{ilist(shape)}}})")
        if op == "unsqueeze":
            d = r.randint(0, nd)
            shape = x.shape[:d] + [1] + x.shape[d:]
            v = self.fresh(shape, x.dtype)
            return self.emit(v, f"{n}.unsqueeze({d})", f"{n}.unsqueeze({d})")
        if op == "flatten":
            v = self.fresh([x.numel], x.dtype)
            return self.emit(v, f"{n}.flatten()", f"{n}.flatten()")
        if op == "expand":
            shape = [r.randint(2, 3)] + list(x.shape)
            v = self.fresh(shape, x.dtype)
            return self.emit(v, f"{n}.expand([{ilist(shape)}])", f"{n}.expand({{{ilist(shape)}}})")
        if op == "squeeze":
            shape = [s for s in x.shape if s != 1]
            v = self.fresh(shape, x.dtype)
            return self.emit(v, f"{n}.squeeze()", f"{n}.squeeze()")
        d = r.randrange(nd)
        if op == "narrow":
            size = x.shape[d]
            start = r.randint(0, size - 1)
            length = r.randint(1, size - start)
            shape = list(x.shape)
            shape[d] = length
            v = self.fresh(shape, x.dtype)
            return self.emit(v, f"{n}.narrow({d}, {start}, {length})",
                             f"{n}.narrow({d}, {start}, {length})")
        if op == "select":
            i = r.randint(-x.shape[d], x.shape[d] - 1)
            shape = x.shape[:d] + x.shape[d + 1:]
            v = self.fresh(shape, x.dtype)
            return self.emit(v, f"{n}.select({d}, {i})", f"{n}.select({d}, {i})")
        if op == "slice_step":
            step = r.randint(1, 3)
            start = r.randint(0, max(0, x.shape[d] - 1))
            shape = list(x.shape)
            shape[d] = len(range(start, x.shape[d], step))
            idx_py = ", ".join([":"] * d + [f"{start}::{step}"])
            idx_cpp = ", ".join(["tj::indexing::Slice()"] * d +
                                [f"tj::indexing::Slice({start}, tj::indexing::None, {step})"])
            v = self.fresh(shape, x.dtype)
            return self.emit(v, f"{n}[{idx_py}]", f"{n}.index({{{idx_cpp}}})")
        if op == "t":
            if nd != 2:
                return self.view(x)
            v = self.fresh([x.shape[1], x.shape[0]], x.dtype)
            return self.emit(v, f"{n}.t()", f"{n}.t()")
        if op == "transpose":
            a, b = r.sample(range(nd), 2)
            shape = list(x.shape)
            shape[a], shape[b] = shape[b], shape[a]
            v = self.fresh(shape, x.dtype)
            return self.emit(v, f"{n}.transpose({a}, {b})", f"{n}.transpose({a}, {b})")
        perm = list(range(nd))
        r.shuffle(perm)
        v = self.fresh([x.shape[p] for p in perm], x.dtype)
        return self.emit(v, f"{n}.permute([{ilist(perm)}])", f"{n}.permute({{{ilist(perm)}}})")

    def inplace(self, x):
        """A write through x, often a view: what reads its storage sees the write."""
        r = self.rng
        op = r.choice(["add_", "mul_", "fill_", "zero_", "copy_", "setitem", "sub_t"])
        n = x.name
        if op in ("add_", "mul_"):
            s = r.choice([1, 2, -1, 0.5]) if x.kind == "float" else r.choice([1, 2, -1])
            if x.kind == "bool":
                s = True if op == "mul_" else 1
                if op == "add_":
                    return self.stmt(f"{n}.logical_not_()", f"{n}.logical_not_()")
                s_py, s_cpp = "True", "true"
            else:
                s_py = s_cpp = s
            self.stmt(f"{n}.{op}({s_py})", f"{n}.{op}({s_cpp})")
        elif op == "fill_":
            s = r.randint(-3, 3) if x.kind != "bool" else 1
            self.stmt(f"{n}.fill_({s})", f"{n}.fill_({s})")
        elif op == "zero_":
            self.stmt(f"{n}.zero_()", f"{n}.zero_()")
        elif op == "setitem" and x.shape:
            d0 = x.shape[0]
            a = r.randint(0, d0 - 1)
            b = r.randint(a + 1, d0)
            s = r.randint(-3, 3) if x.kind != "bool" else 1
            self.stmt(f"{n}[{a}:{b}] = {s}",
                      f"{n}.index_put_({{tj::indexing::Slice({a}, {b})}}, {s})")
        elif op == "sub_t" and x.kind != "bool":
            y = self.pick(lambda v: v.shape == x.shape and v.kind != "bool" and
                          DTYPES[promote(v.dtype, x.dtype)][2] == x.kind or
                          (v.kind == "int" and x.kind == "float" and v.shape == x.shape))
            if y is None:
                return self.stmt(f"{n}.sub_(1)", f"{n}.sub_(1)")
            self.stmt(f"{n}.sub_({y.name})", f"{n}.sub_({y.name})")
        else:  # copy_ from a value broadcasting to x (possibly sharing its memory)
            y = self.pick(lambda v: v is not x and len(v.shape) <= len(x.shape) and
                          _broadcasts_to(v.shape, x.shape))
            if y is None:
                y = self.literal(x.shape[1:] if x.shape else [])
            self.stmt(f"{n}.copy_({y.name})", f"{n}.copy_({y.name})")
        return None

    def more(self, x):
        """Advanced indexing, masked fills, out= forms, scans and softmax."""
        r = self.rng
        op = r.choice(["index", "masked_fill_", "add_out", "cumsum", "softmax", "var",
                       "fill_expanded", "int_div"])
        n = x.name
        if op == "index" and x.shape:
            k = r.randint(1, 4)
            ids = [r.randint(-x.shape[0], x.shape[0] - 1) for _ in range(k)]
            v = self.fresh([k] + x.shape[1:], x.dtype)
            return self.emit(v, f"{n}[torch.tensor([{ilist(ids)}])]",
                             f"{n}.index({{tj::tensor(std::vector<int64_t>{{{ilist(ids)}}})}})")
        if op == "masked_fill_":
            m = self.literal(x.shape[r.randint(0, len(x.shape)):] if x.shape else [], "bool")
            val = r.choice([0, 1, -2]) if x.kind != "bool" else 1
            return self.stmt(f"{n}.masked_fill_({m.name}, {val})",
                             f"{n}.masked_fill_({m.name}, {val})")
        if op == "add_out" and x.kind == "float":
            y = self.literal(x.shape, x.dtype)
            out = self.literal(x.shape, x.dtype)
            return self.stmt(f"torch.add({n}, {y.name}, out={out.name})",
                             f"tj::add_out({out.name}, {n}, {y.name})")
        if op == "cumsum" and x.shape and x.kind != "bool":
            d = r.randrange(len(x.shape))
            out = x.dtype if x.kind == "float" else "int64"
            v = self.fresh(x.shape, out)
            return self.emit(v, f"{n}.cumsum({d})", f"{n}.cumsum({d})")
        if op == "softmax" and x.shape and x.kind == "float":
            self.exact = False
            d = r.randrange(len(x.shape))
            v = self.fresh(x.shape, x.dtype)
            return self.emit(v, f"{n}.softmax({d})", f"{n}.softmax({d})")
        if op == "var" and x.kind == "float" and x.numel > 1:
            self.exact = False
            v = self.fresh([], x.dtype)
            return self.emit(v, f"{n}.var()", f"{n}.var()")
        if op == "fill_expanded" and x.shape and x.kind != "bool":
            shape = [2] + x.shape
            return self.stmt(f"{n}.expand([{ilist(shape)}]).fill_(3)",
                             f"{n}.expand({{{ilist(shape)}}}).fill_(3)")
        if op == "int_div" and x.kind == "int":
            self.exact = False
            v = self.fresh(x.shape, "float32")
            return self.emit(v, f"{n} / 4", f"{n} / 4")
        return self.unary(x)

    def join(self, x):
        r = self.rng
        op = r.choice(["cat", "stack"])
        y = self.literal(x.shape, x.dtype)
        if op == "stack" or not x.shape:
            d = r.randint(0, len(x.shape))
            shape = x.shape[:d] + [2] + x.shape[d:]
            v = self.fresh(shape, x.dtype)
            return self.emit(v, f"torch.stack([{x.name}, {y.name}], {d})",
                             f"tj::stack({{{x.name}, {y.name}}}, {d})")
        d = r.randrange(len(x.shape))
        shape = list(x.shape)
        shape[d] *= 2
        v = self.fresh(shape, x.dtype)
        return self.emit(v, f"torch.cat([{x.name}, {y.name}], {d})",
                         f"tj::cat({{{x.name}, {y.name}}}, {d})")

    def product(self):
        r = self.rng
        dtype = r.choice(["float32", "float32", "float64", "int64"])
        n, k, m = r.randint(1, 4), r.randint(1, 4), r.randint(1, 4)
        form = r.choice(["mm", "mv", "batched", "bt"])
        if form == "mv":
            a, b = self.literal([n, k], dtype), self.literal([k], dtype)
            v = self.fresh([n], dtype)
        elif form == "batched":
            a, b = self.literal([2, 1, n, k], dtype), self.literal([3, k, m], dtype)
            v = self.fresh([2, 3, n, m], dtype)
        elif form == "bt":
            a, b0 = self.literal([n, k], dtype), self.literal([m, k], dtype)
            b = self.fresh([k, m], dtype)
            self.emit(b, f"{b0.name}.t()", f"{b0.name}.t()")
            v = self.fresh([n, m], dtype)
        else:
            a, b = self.literal([n, k], dtype), self.literal([k, m], dtype)
            v = self.fresh([n, m], dtype)
        return self.emit(v, f"torch.matmul({a.name}, {b.name})", f"tj::matmul({a.name}, {b.name})")

    def deliberate_error(self):
        r = self.rng
        kind = r.choice(["broadcast", "matmul", "dim", "reshape", "cast_", "expand_write",
                         "overlap", "cat", "transposed_add_"])
        if kind == "broadcast":
            a, b = self.literal([2, 3]), self.literal([4])
            self.stmt(f"_ = {a.name} + {b.name}", f"(void)({a.name} + {b.name})")
        elif kind == "matmul":
            a, b = self.literal([2, 3]), self.literal([4, 2])
            self.stmt(f"_ = torch.matmul({a.name}, {b.name})", f"(void)tj::matmul({a.name}, {b.name})")
        elif kind == "dim":
            a = self.literal([2, 3])
            self.stmt(f"_ = {a.name}.sum(2)", f"(void){a.name}.sum({{2}})")
        elif kind == "reshape":
            a = self.literal([2, 3])
            self.stmt(f"_ = {a.name}.reshape([4])", f"(void){a.name}.reshape({{4}})")
        elif kind == "cast_":
            a = self.literal([3], "int64")
            self.stmt(f"{a.name}.add_(1.5)", f"{a.name}.add_(1.5)")
        elif kind == "expand_write":
            a = self.literal([1, 3])
            self.stmt(f"{a.name}.expand([2, 3]).add_(1)", f"{a.name}.expand({{2, 3}}).add_(1)")
        elif kind == "overlap":
            a = self.literal([5])
            self.stmt(f"{a.name}.narrow(0, 0, 3).copy_({a.name}.narrow(0, 2, 3))",
                      f"{a.name}.narrow(0, 0, 3).copy_({a.name}.narrow(0, 2, 3))")
        elif kind == "transposed_add_":
            a = self.literal([3, 3])
            self.stmt(f"{a.name}.add_({a.name}.t())", f"{a.name}.add_({a.name}.t())")
        else:
            a, b = self.literal([2, 3]), self.literal([2, 4])
            self.stmt(f"_ = torch.cat([{a.name}, {b.name}], 0)",
                      f"(void)tj::cat({{{a.name}, {b.name}}}, 0)")
        self.error = True

    def build(self, steps):
        r = self.rng
        self.literal()
        if r.random() < 0.3:
            self.arange()
        for _ in range(steps):
            choice = r.random()
            x = self.pick()
            if choice < 0.08:
                self.literal()
            elif choice < 0.30:
                self.unary(x)
            elif choice < 0.52:
                self.binary(x)
            elif choice < 0.62:
                self.reduce(x)
            elif choice < 0.74:
                self.view(x)
            elif choice < 0.82:
                self.inplace(x)
            elif choice < 0.87:
                self.cast(x)
            elif choice < 0.90:
                self.join(x)
            elif choice < 0.95:
                self.more(x)
            else:
                self.product()
        if r.random() < 0.12:
            self.deliberate_error()
        # Print the last value and up to two others.
        shown = [self.values[-1]]
        for v in r.sample(self.values, min(2, len(self.values))):
            if v not in shown:
                shown.append(v)
        self.prints = shown


def _broadcasts_to(src, dst):
    if len(src) > len(dst):
        return False
    for a, b in zip(reversed(src), reversed(dst)):
        if a != b and a != 1:
            return False
    return True


def factor(n, r):
    """A random shape of n elements, up to 3 dims."""
    dims = []
    while n > 1 and len(dims) < 2 and r.random() < 0.6:
        ds = [d for d in range(2, n + 1) if n % d == 0]
        d = r.choice(ds)
        dims.append(d)
        n //= d
    dims.append(n)
    r.shuffle(dims)
    return dims


class Ambiguous(Exception):
    """PyTorch's own result depends on which of its loops runs."""


def tie_checked(f):
    # maximum/minimum of +0 and -0: PyTorch's scalar loop keeps the first operand, its vector
    # loop the second, so its printed sign depends on the tensor's length.
    def g(a, b):
        x, y = torch.broadcast_tensors(a, b)
        if x.is_floating_point() or y.is_floating_point():
            x, y = x.double(), y.double()
            if ((x == 0) & (y == 0) & (torch.signbit(x) != torch.signbit(y))).any():
                raise Ambiguous()
        return f(a, b)
    return g


def near_rounding(t):
    """Whether a value two ulps away would print differently: a legitimate rounding difference
    (libm's last bit, a sum's order) could then show."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        return False
    for direction in (float("inf"), float("-inf")):
        x = t
        for _ in range(2):
            x = torch.nextafter(x, torch.full_like(x, direction))
        x = torch.where((t == 0) | ~torch.isfinite(t), t, x)
        if str(x) != str(t):
            return True
    return False


def run_python(prog, inputs):
    """The printed output of the program in PyTorch, or its error (None: ambiguous)."""
    ns = {"torch": torch, "INPUT": inputs, "MAXIMUM": tie_checked(torch.maximum),
          "MINIMUM": tie_checked(torch.minimum)}
    out = []
    try:
        exec("\n".join(prog.py), ns)
        if not prog.error:
            for v in prog.prints:
                if not prog.exact and near_rounding(ns[v.name]):
                    raise Ambiguous()
                out.append(str(ns[v.name]))
    except Ambiguous:
        return None
    except (RuntimeError, IndexError, ValueError, TypeError) as e:
        return "ERROR: " + str(e).splitlines()[0]
    return "\n".join(out)


def perturbed(prog, rng):
    inputs = {}
    for name, vals, kind in prog.inputs:
        if kind == "float":
            inputs[name] = [x * (1 + rng.uniform(-4e-6, 4e-6)) for x in vals]
        else:
            inputs[name] = vals
    return inputs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "test", "difftest"))
    args = ap.parse_args()
    torch.set_printoptions(profile="default")
    rng = random.Random(args.seed)
    kept, tried = [], 0
    errors = 0
    while len(kept) < args.count:
        tried += 1
        prog = Program(random.Random(rng.getrandbits(64)))
        try:
            prog.build(rng.randint(2, 7))
        except (IndexError, ValueError):
            continue
        exact_inputs = {name: vals for name, vals, _ in prog.inputs}
        expected = run_python(prog, exact_inputs)
        if expected is None:
            continue
        # A program that fails where it did not mean to is a generator slip: dropped.
        if expected.startswith("ERROR") != prog.error:
            continue
        if len(expected) > 3000:
            continue
        if not prog.exact and any(run_python(prog, perturbed(prog, rng)) != expected
                                  for _ in range(3)):
            continue
        errors += prog.error
        kept.append((prog, expected))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "programs.inc"), "w") as f:
        f.write("// Generated by scripts/difftest/difftest.py: random programs over the public API.\n"
                f"// --count {args.count} --seed {args.seed}. Do not edit; regenerate.\n")
        for i, (prog, _) in enumerate(kept):
            f.write(f"{{\"p{i:04d}\", [] {{\n")
            for line in prog.cpp:
                f.write(f"   {line}\n")
            if prog.error:
                f.write("   return std::string();\n")
            else:
                shown = " + \"\\n\" + ".join(f"{v.name}.str()" for v in prog.prints)
                f.write(f"   return {shown};\n")
            f.write("}},\n")
    with open(os.path.join(args.out, "expected.txt"), "w") as f:
        f.write(f"# PyTorch {torch.__version__}'s output for programs.inc, one block per program.\n")
        for i, (_, expected) in enumerate(kept):
            f.write(f"=== p{i:04d}\n{expected}\n")
    print(f"kept {len(kept)} of {tried} programs ({errors} ending in an error)", file=sys.stderr)


if __name__ == "__main__":
    main()
