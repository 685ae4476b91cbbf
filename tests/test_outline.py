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
from conftest import REPO, requires_coq

from verisched import pipeline
from verisched.codegen.errors import LowerError, UnsafeProgramError
from verisched.codegen.outline import outline
from verisched.pybridge.replay import outline_file
from verisched.schedule import Schedule, dsl
from verisched.schedule.state import annotated_source

SIG = "const float *restrict A, int n, int m, float *restrict out"
EXAMPLES = sorted((REPO / "coq" / "Examples").rglob("*.v"))


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
    "out[i] = buf[i];",              # a stack array of the enclosing scope
])
def test_a_body_it_cannot_move_stays_in_place(stmt: str) -> None:
    body = _kernel(f"""
  float total = 0.0f;
  float buf[16];
  #pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {{
    {stmt}
  }}""")
    res = outline("k", SIG, "k_error", body)
    assert res.helpers == [] and res.body == body


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


@requires_coq
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_parallel_loop_of_an_example_is_outlined(path: Path) -> None:
    """Decision #113's property on every example the OpenMP target builds: each parallel
    loop's body is a function of its own, where GCC honours the unroll pragmas.  The
    rewrite leaves a body in place when it cannot read it, which no correctness test
    would notice (the kernel is only slower), so this checks it never does on the
    examples.  Gemmini kernels (another target) and programs whose accesses are not
    proved in bounds (refused by every target) are not OpenMP kernels."""
    checked = 0
    for name in outline_file(path):
        try:
            c = pipeline.render(pipeline.lower(
                pipeline.check(pipeline.load(path, name), fix={}), "native-openmp")).c
        except UnsafeProgramError:
            continue
        except LowerError as e:
            assert "uses instructions of gemmini" in str(e), (name, str(e))
            continue
        loops = len(re.findall(r"#pragma omp parallel for", c))
        helpers = re.findall(rf"^static inline void vs_{name}_p\d+\(", c, re.M)
        assert len(helpers) == loops, (name, loops, len(helpers))
        checked += 1
    assert checked or path.stem.startswith("Gemmini"), f"{path.name}: no OpenMP kernel built"
