"""Parallel loop bodies moved into functions of their own (codegen/outline.py).

GCC 12 ignores `#pragma GCC unroll` inside an OpenMP parallel region; the
rewrite moves each parallel loop's body into a `static inline` function, and
must leave a body in place whenever moving it could change what it reads or
writes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from verisched.codegen.outline import outline
from verisched.schedule import Schedule, dsl
from verisched.schedule.annotations import annotated_source

SIG = "const float *restrict A, int n, int m, float *restrict out"


def _kernel(body: str) -> list[str]:
    return body.strip("\n").split("\n")


def test_a_parallel_body_moves_with_the_names_it_reads() -> None:
    body = _kernel("""
  const int64_t count = vs_cmul(n, 4);
  float *Bp = (float *)vs_alloc(count, sizeof(float), 0);
  #pragma omp parallel for schedule(static) collapse(2)
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < 4; ++j) {
      float acc = 0.0f;
      #pragma GCC unroll 4
      for (int k = 0; k < m; ++k) {
        acc += A[(int64_t)i*m + k] * Bp[k];
      }
      if (acc < 0.0f) k_error = 1;
      out[i*4 + j] = acc;
    }
  }
  vs_free(Bp);""")
    res = outline("k", SIG, "k_error", body)
    assert len(res.helpers) == 1
    helper = res.helpers[0]
    # Sizes and loop variables by value, pointers as declared; only what the body reads,
    # in the order of their declarations.
    assert helper[0] == ("static inline void vs_k_p1(const float *restrict A, int m, "
                         "float *restrict out, float *Bp, int i, int j) {")
    assert "  #pragma GCC unroll 4" in helper and helper[-1] == "}"
    assert res.body[3:7] == ["  for (int i = 0; i < n; ++i) {",
                             "    for (int j = 0; j < 4; ++j) {",
                             "      vs_k_p1(A, m, out, Bp, i, j);", "    }"]
    assert res.body[-1] == "  vs_free(Bp);"


@pytest.mark.parametrize("stmt", [
    "out[i] = mystery[i];",          # an identifier declared nowhere this module reads
    "if (A[i] < 0.0f) continue;",    # a jump out of the body
    "total = total + A[i];",         # a write to a scalar of the enclosing scope
    "out[i] = sizeof(buf) * A[i];",  # a stack array's size (a pointer's, once passed)
    "out[i] = grid[i % 4][0];",      # a stack array of two dimensions
])
def test_a_body_it_cannot_move_stays_in_place(stmt: str) -> None:
    body = _kernel(f"""
  float total = 0.0f;
  float buf[16];
  float grid[4][4];
  #pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {{
    {stmt}
  }}""")
    res = outline("k", SIG, "k_error", body)
    assert res.helpers == [] and res.body == body


def test_a_stack_array_of_the_enclosing_scope_is_passed_by_address() -> None:
    """A let buffer of fixed size is a stack array (`float Ap[96];`, Sgemm.v's packed A
    with the block sizes fixed): a body that fills or reads it moves, the array passed
    as `float Ap[]`, so every thread works on the one array, as OpenMP shares it."""
    body = _kernel("""
  for (int io = 0; io < n; ++io) {
    float Ap[96];
    #pragma omp parallel for schedule(static)
    for (int im = 0; im < 4; ++im) {
      Ap[im] = A[(int64_t)io*m + im];
    }
    #pragma omp parallel for schedule(static)
    for (int j = 0; j < m; ++j) {
      out[(int64_t)io*m + j] = Ap[j % 4];
    }
  }""")
    res = outline("k", SIG, "k_error", body)
    assert [h[0] for h in res.helpers] == [
        "static inline void vs_k_p1(const float *restrict A, int m, int io, float Ap[], "
        "int im) {",
        "static inline void vs_k_p2(int m, float *restrict out, int io, float Ap[], int j) {"]
    assert "      vs_k_p1(A, m, io, Ap, im);" in res.body


def test_fallback_loops_inside_a_moved_body_move_from_its_function() -> None:
    body = _kernel("""
  if (n > 1) {
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) {
      out[i] = A[i];
    }
  }
  else {
    for (int i_1 = 0; i_1 < n; ++i_1) {
      #pragma omp parallel for schedule(static) if(!omp_in_parallel())
      for (int j = 0; j < m; ++j) {
        #pragma GCC unroll 4
        for (int k = 0; k < m; ++k) {
          out[i_1*m + j] += A[k];
        }
      }
    }
  }""")
    res = outline("k", SIG, "k_error", body)
    names = [h[0].split("(")[0].split()[-1] for h in res.helpers]
    assert names == ["vs_k_p1", "vs_k_p2"]
    assert res.helpers[1][0] == ("static inline void vs_k_p2(const float *restrict A, int m, "
                                 "float *restrict out, int i_1, int j) {")
    assert "        vs_k_p2(A, m, out, i_1, j);" in res.body


def _unrolled_lines(c: str, tmp_path: Path) -> set[int]:
    """Lines of `c` where gcc reports a loop it unrolled (its -fopt-info notes)."""
    path = tmp_path / "k.c"
    path.write_text(c)
    run = subprocess.run(["gcc", "-std=c11", "-O3", "-fopenmp", "-fopt-info-loop-optimized",
                          "-c", str(path), "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True, check=True)
    return {int(m.group(1)) for m in re.finditer(r"k\.c:(\d+):\d+: optimized: loop unrolled",
                                                 run.stderr)}


def test_gcc_unrolls_an_unroll_directive_inside_a_parallel_loop(tmp_path: Path) -> None:
    # Before the rewrite gcc reported nothing for this loop: the pragma sat in the
    # body of `#pragma omp parallel for` (decision #113).
    n, m = dsl.sizes("n m")
    a, x = dsl.tensor("A", n, m), dsl.tensor("x", m)
    p = dsl.program("mv", dsl.gen("i", n, lambda i: dsl.sum("j", m, lambda j: a[i, j] * x[j])))
    with Schedule.of(p) as s:
        t = s.unroll("j", 4)
        src = annotated_source(t.checked(), t.annotations, "openmp")
        k = t.compile("openmp")
    lines = src.c.split("\n")
    pragma = next(i for i, x in enumerate(lines) if x.strip() == "#pragma GCC unroll 4")
    # The pragma is in the function the parallel loop calls, not in the kernel.
    opened = [x for x in lines[:pragma] if re.match(r"(static inline )?void ", x)]
    assert opened[-1].startswith("static inline void vs_mv_scheduled_p1(")
    assert "#pragma omp parallel for" in src.c
    end = pragma + 1
    while lines[end] != lines[pragma].replace("#pragma GCC unroll 4", "}"):
        end += 1
    # 1-based: the loop spans lines pragma + 2 .. end + 1.
    assert any(pragma + 2 <= x <= end + 1 for x in _unrolled_lines(src.c, tmp_path))
    av = np.random.default_rng(11).standard_normal((7, 13)).astype(np.float32)
    xv = np.random.default_rng(12).standard_normal(13).astype(np.float32)
    np.testing.assert_allclose(k({"A": av, "x": xv}, n=7, m=13),
                               av.astype(np.float64) @ xv, rtol=1e-4, atol=1e-4)
