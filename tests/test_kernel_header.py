"""The generated header can be included by someone else's C program: its declarations
survive the caller's macros (issue 13: a size named NI, as PolyBench defines it) and
state the kernel's preconditions."""

from __future__ import annotations

import subprocess
from pathlib import Path

from verisched.codegen import lower
from verisched.codegen.render import render_header, render_source
from verisched.pybridge.coqterm import parse_index, parse_program
from verisched.pybridge.terms import IConst, IVar, PCmp
from verisched.targets.toolchain import compiler as cc


def test_header_survives_the_callers_macros(tmp_path: Path) -> None:
    NI, NJ = IVar("NI"), IVar("NJ")
    k = lower(parse_program("GEN [ i < NI ] SUM [ j < NJ ] A _[ i ] _[ j ]"),
              {"A": (NI, NJ)}, name="rowsum", sizes=["NI", "NJ"],
              assume=[PCmp("<=", IConst(1), NJ)])
    (tmp_path / "rowsum.h").write_text(render_header([k], "rowsum.c", ["rowsum requires 1 <= NJ"]))
    (tmp_path / "rowsum.c").write_text(render_source([k], "c"))
    (tmp_path / "caller.c").write_text(
        "#define NI 4000\n#define NJ 10\n#define A alpha\n#define out 0\n"
        '#include "rowsum.h"\n'
        "float a[NI * NJ], r[NI];\n"
        "int main(void) { rowsum(a, NI, NJ, r); return rowsum_error; }\n")
    compiler = cc()
    for src in ("caller.c", "rowsum.c"):
        proc = subprocess.run([*compiler, "-c", src, "-o", src + ".o"], cwd=tmp_path,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([*compiler, "caller.c.o", "rowsum.c.o", "-o", "caller"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run(["./caller"], cwd=tmp_path).returncode == 0
    assert "requires 1 <= NJ" in (tmp_path / "rowsum.h").read_text()


def test_a_c_caller_breaking_a_precondition_gets_an_error_not_an_overflow(
        tmp_path: Path) -> None:
    # Reads f[2]: in bounds only because 3 <= n, which the kernel's C checks at entry
    # (the Python wrapper checks it before the call); without the check, n = 2 reads
    # past f's end, which ASan reports.
    n = IVar("n")
    k = lower(parse_program("GEN [ i < n ] f _[ 2 ]"), {"f": (n,)}, name="shift",
              sizes=["n"], assume=[PCmp("<=", IConst(3), n)])
    said = _sanitized_caller(tmp_path, k, (
        "int main(void) { float f[2] = {1, 2}, r[2] = {7, 7};\n"
        "  shift(f, 2, r); printf(\"%d %g %g\\n\", shift_error, r[0], r[1]); return 0; }\n"))
    assert said == ["2", "7", "7"]  # refused, the output untouched


def test_a_flattened_extent_beyond_int_is_refused_at_entry(tmp_path: Path) -> None:
    # A flattened m x n output is one dimension of extent m*n, indexed `out[i*n + j]` in
    # int: at m = n = 46341 (m*n = 2^31 + 4665) that index wraps on the last rows and
    # writes before the buffer.  The extent is checked at entry instead (error 2, nothing
    # written), so the C caller's tiny buffers are never touched.
    m, n = IVar("m"), IVar("n")
    k = lower(parse_program("flatten m n (GEN [ i < m ] GEN [ j < n ] x _[ i ] _[ j ])"),
              {"x": (m, n)}, name="flat", sizes=["m", "n"])
    assert [t for t, _ in k.int_exprs] == ["m*n"]
    said = _sanitized_caller(tmp_path, k, (
        "int main(void) { float x[4] = {1, 2, 3, 4}, r[4] = {7, 7, 7, 7};\n"
        "  flat(x, 46341, 46341, r); printf(\"%d %g\\n\", flat_error, r[0]);\n"
        "  flat(x, 2, 2, r); printf(\"%d %g %g\\n\", flat_error, r[0], r[3]); return 0; }\n"))
    assert said == ["2", "7", "0", "1", "4"]


def test_an_index_that_subtracts_a_size_is_bounded_at_entry(tmp_path: Path) -> None:
    # `y[i*n + j - n]` sums `i*n + j` first, in int: up to m*n - 1, past y's extent k by
    # n.  At m = n = 46341, k = 46340*46341 (a C int, as (m - 1)*n <= k asks) that sum
    # leaves int while every size and the index itself fit; the kernel refuses such
    # sizes at entry (k + n must be an int) instead of wrapping.
    k = IVar("k")
    lw = lower(parse_program("GEN [ i < m ] GEN [ j < n ] |[ 1 <=? i ]| y _[ i * n + j - n ]"),
               {"y": (k,)}, name="back", sizes=["m", "n", "k"],
               assume=[PCmp("<=", parse_index("(m - 1) * n"), k)])
    assert [t for t, _ in lw.int_exprs] == ["k + n"]
    said = _sanitized_caller(tmp_path, lw, (
        "int main(void) { float y[2] = {5, 6}, r[4] = {7, 7, 7, 7};\n"
        "  back(y, 46341, 46341, 46340 * 46341, r); printf(\"%d %g\\n\", back_error, r[0]);\n"
        "  back(y, 2, 2, 2, r);\n"
        "  printf(\"%d %g %g %g %g\\n\", back_error, r[0], r[1], r[2], r[3]); return 0; }\n"))
    assert said == ["2", "7", "0", "0", "0", "5", "6"]


def _sanitized_caller(tmp_path: Path, k, main_c: str) -> list[str]:
    """Build kernel `k`, or a list of kernels in one file named after the first (its C
    file and header, as `compile` writes them), with a caller whose `main` is `main_c`,
    under ASan and UBSan (any report fatal); run it; its output's words."""
    ks = k if isinstance(k, list) else [k]
    stem = ks[0].name
    (tmp_path / f"{stem}.h").write_text(render_header(ks, f"{stem}.c"))
    (tmp_path / f"{stem}.c").write_text(render_source(ks, "c"))
    (tmp_path / "caller.c").write_text(f'#include "{stem}.h"\n#include <stdio.h>\n{main_c}')
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
           "-fno-omit-frame-pointer", "-g"]
    proc = subprocess.run([*cc(), *san, "caller.c", f"{stem}.c", "-o", "caller"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run(["./caller"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_codes_are_per_call_and_per_thread_even_from_a_parallel_loop(tmp_path: Path) -> None:
    # The kernel returns its code, and NAME_error is the calling thread's: a user's
    # threads calling one kernel, one with sizes it refuses, saw each other's codes
    # through the one global (4% of valid calls, in an audit).  A code set inside an
    # OpenMP worker (a buffer it could not allocate, here every malloc failing through
    # ld's --wrap) still reaches the caller: the workers write the call's own status.
    n, m = IVar("n"), IVar("m")
    k = lower(parse_program("GEN [ i < n ] (tlet b := GEN [ j < m ] f _[ i ] _[ j ] in "
                            "SUM [ j < m ] b _[ j ])"), {"f": (n, m)}, name="rs",
              sizes=["n", "m"], parallel=True)
    (tmp_path / "rs.h").write_text(render_header([k], "rs.c"))
    (tmp_path / "rs.c").write_text(render_source([k], "openmp"))
    (tmp_path / "caller.c").write_text(
        '#include "rs.h"\n#include <pthread.h>\n#include <stdio.h>\n#include <stdlib.h>\n'
        "void *__real_malloc(size_t);\nstatic volatile int failing;\n"
        "void *__wrap_malloc(size_t b) { return failing ? NULL : __real_malloc(b); }\n"
        "static float f[64 * 3];\n"
        "static void *calls(void *arg) {\n"
        "  int n = *(int *)arg, want = n ? 0 : 2, bad = 0; float out[64];\n"
        "  for (int t = 0; t < 20000; ++t) {\n"
        "    int got = rs(f, n, 3, out);\n"
        "    bad += got != want || rs_error != want;\n"
        "  }\n"
        "  return (void *)(long)bad;\n}\n"
        "int main(void) {\n"
        "  for (int q = 0; q < 64 * 3; ++q) f[q] = (float)(q % 7);\n"
        "  int sizes[2] = {4, 0}; pthread_t th[2]; void *bad[2];\n"
        "  for (int q = 0; q < 2; ++q) pthread_create(&th[q], NULL, calls, &sizes[q]);\n"
        "  for (int q = 0; q < 2; ++q) pthread_join(th[q], &bad[q]);\n"
        "  float out[64];\n"
        "  int ok = rs(f, 64, 3, out);\n"
        "  failing = 1;\n"
        "  int oom = rs(f, 64, 3, out);\n"
        "  int oom_flag = rs_error;\n"
        "  failing = 0;\n"
        '  printf("%ld %ld %d %g %d %d\\n", (long)bad[0], (long)bad[1], ok, out[1], oom,\n'
        "         oom_flag);\n"
        "  return 0;\n}\n")
    proc = subprocess.run([*cc(), "-fopenmp", "-pthread", "caller.c", "rs.c", "-o", "caller",
                           "-Wl,--wrap=malloc", "-lm"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run(["./caller"], cwd=tmp_path, capture_output=True, text=True,
                         env={"OMP_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    # no call saw another's code; row 1 sums f[3..5] = 3 + 4 + 5; every allocation failed
    assert run.stdout.split() == ["0", "0", "0", "12", "1", "1"]


def test_a_project_macro_named_as_a_parameter_is_named(tmp_path: Path) -> None:
    # PolyBench builds with -DNI=4000: the C file's parameter NI became a number and the
    # file a cryptic syntax error.  It now says which macro; the header, whose parameter
    # names are comments, still compiles with it (test above).
    NI = IVar("NI")
    k = lower(parse_program("GEN [ i < NI ] A _[ i ]"), {"A": (NI,)}, name="copy",
              sizes=["NI"])
    (tmp_path / "copy.c").write_text(render_source([k], "c"))
    proc = subprocess.run([*cc(), "-DNI=4000", "-c", "copy.c", "-o", "copy.o"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "NI is defined as a macro (a -DNI=... flag?)" in proc.stderr
    assert proc.stderr.count("error:") == 1, proc.stderr  # that one error, nothing else
    proc = subprocess.run([*cc(), "-c", "copy.c", "-o", "copy.o"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
