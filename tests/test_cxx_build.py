"""The kernel file builds as C++ too, and a C++ program calls it.

The header was made C++-safe earlier (test_codegen_commands.py); the `.c` file was
not: `restrict`, `void *` from malloc and C linkage broke a build that compiles every
source as C++ (a CMake or Bazel project set to C++, a unity build including the
file into a `.cpp`).  These build every kind of kernel file the CPU targets write
(scalar and OpenMP; float32, float64, int32, int8; let buffers on the heap, reshape
operators, guards; AVX2 and AVX-512 vector code with masks and register buffers) with
g++ and warnings as errors, and run one, as C++, against the reference interpreter."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from codegen_reference import run_reference
from test_targets import n, sanitizer_programs
from test_vector_lower import DOT, DOT_ENV, LANES, MASKED, MM_ENV, SGEMM, VEC_ENV, program

from verisched.codegen import lower
from verisched.codegen.render import render_header, render_source
from verisched.pybridge.terms import Lit, SBin, Var, gen, get, specialize
from verisched.targets.avx2 import AVX2
from verisched.targets.avx512 import AVX512

CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (make test installs g++)")
STRICT = ["-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror", "-O1"]


def _cxx(args: list[str], cwd: Path) -> None:
    assert CXX is not None
    proc = subprocess.run([CXX, *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, (args, proc.stderr[-4000:])


@pytest.mark.parametrize("target", ["c", "openmp"])
def test_scalar_and_openmp_kernel_files_build_as_cxx(target: str, tmp_path: Path) -> None:
    for dtype in ("float32", "float64", "int32", "int8"):
        # and a literal: a hex float constant is C++17's, not C++11's (literals.py)
        progs = [*sanitizer_programs(), gen("i", n, SBin("*", get(Var("f"), "i"), Lit(5, 2)))]
        kernels = [lower(e, {"f": (n,)}, name=f"s{i}", dtype=dtype, parallel=target == "openmp")
                   for i, e in enumerate(progs)]
        c = tmp_path / f"k_{dtype}.c"
        c.write_text(render_source(kernels, target))
        _cxx([*STRICT, *(["-fopenmp"] if target == "openmp" else []), "-x", "c++", "-c",
              c.name, "-o", f"{c.stem}.o"], tmp_path)


@pytest.mark.parametrize("isa", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_vector_kernel_files_build_as_cxx(isa, tmp_path: Path) -> None:
    """Compiled only (this CPU may lack the ISA): masks, register buffers, packing, the
    lanes' sum (vs_hsum8 / vs_hsum16: no header intrinsic g++ -Wall flags)."""
    mm = specialize(program(SGEMM, isa.name), {"kc": 4})
    kernels = [lower(e, env, name=f"v{i}", isa=isa)
               for i, (e, env) in enumerate([(program(MASKED, isa.name), VEC_ENV),
                                             (program(LANES, isa.name), VEC_ENV),
                                             (program(DOT, isa.name), DOT_ENV),
                                             (mm, MM_ENV)])]
    (tmp_path / "v.c").write_text(render_source(kernels, isa.name))
    _cxx([*STRICT, *isa.cflags, "-x", "c++", "-c", "v.c", "-o", "v.o"], tmp_path)


def test_a_kernel_built_as_cxx_runs_from_cxx(tmp_path: Path) -> None:
    """The let-buffer program (heap buffer, vs_alloc's cast) built as C++, called
    through the header from C++, its NAME_error thread_local: the reference's values
    at sizes 1-9, and the error code 2 for a size of 0."""
    e = sanitizer_programs()[-1]
    k = lower(e, {"f": (n,)}, name="twice")
    (tmp_path / "k.c").write_text(render_source([k], "c"))
    (tmp_path / "k.h").write_text(render_header([k], "k.c"))
    (tmp_path / "main.cpp").write_text(
        '#include "k.h"\n#include <cstdio>\n#include <vector>\n'
        "int main() {\n"
        "  for (int size = 1; size <= 9; ++size) {\n"
        "    std::vector<float> f(size), o(size);\n"
        "    for (int i = 0; i < size; ++i) f[i] = float(i + 1);\n"
        "    int rc = twice(f.data(), size, o.data());\n"
        '    std::printf("%d %d", rc, twice_error);\n'
        '    for (float v : o) std::printf(" %g", v);\n'
        '    std::printf("\\n");\n'
        "  }\n"
        "  float x = 0, y = 0;\n"
        '  std::printf("%d\\n", twice(&x, 0, &y));\n'
        "  return 0;\n}\n")
    _cxx([*STRICT, "-x", "c++", "-c", "k.c", "-o", "k.o"], tmp_path)
    _cxx([*STRICT, "-c", "main.cpp", "-o", "main.o"], tmp_path)
    _cxx(["main.o", "k.o", "-o", "main"], tmp_path)
    lines = subprocess.run(["./main"], cwd=tmp_path, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert lines[-1] == "2"
    for size, line in enumerate(lines[:-1], start=1):
        rc, err, *vals = line.split()
        assert (rc, err) == ("0", "0")
        x = np.arange(1, size + 1, dtype=np.float64)
        want = run_reference(e, {"f": x}, {"n": size}, (size,), np.float64)
        np.testing.assert_allclose(np.array(vals, dtype=np.float64), want, rtol=1e-6)
