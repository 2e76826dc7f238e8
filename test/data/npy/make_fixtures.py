#!/usr/bin/env python3
"""Writes the .npy fixtures that test/test_npy.cpp reads, with NumPy itself.

The files are committed; run this again (python3 with numpy) only to change them.
Every array holds values the test can name without NumPy: see test_npy.cpp.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, a, version=None):
    path = os.path.join(HERE, name + ".npy")
    if version is None:
        np.save(path, a)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, a, version=version)


signed = np.array([[-2, -1, 0], [1, 2, 3]])
# Every dtype tensorjit has, in the host's order and (for multi-byte ones) big-endian.
save("bool", np.array([[True, False, True], [False, False, True]]))
save("uint8", np.array([[0, 1, 2], [253, 254, 255]], dtype="u1"))
names = {"i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
         "f2": "float16", "f4": "float32", "f8": "float64"}
for code, name in names.items():
    save(name, signed.astype("<" + code))
    if code != "i1":
        save(name + "_be", signed.astype(">" + code))

# Extremes and special values.
save("int64_extremes", np.array([-2**63, 2**63 - 1, 0], dtype="<i8"))
save("float32_special",
     np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45, 3.4028235e38], dtype="<f4"))

# Layouts and header versions.
save("fortran_3d", np.asfortranarray(np.arange(24, dtype="<f4").reshape(2, 3, 4)))
save("fortran_2d_be", np.asfortranarray(np.arange(6, dtype=">i8").reshape(3, 2)))
save("scalar", np.array(3.5))
save("empty", np.zeros((0, 3), dtype="<f4"))
save("v2", np.arange(4, dtype="<f8").reshape(2, 2) / 4, version=(2, 0))
save("v3", np.arange(5, dtype="<i4"), version=(3, 0))

# Types tensorjit cannot hold.
save("uint16", np.arange(3, dtype="<u2"))
save("unicode", np.array(["ab", "c"]))
