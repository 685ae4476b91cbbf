"""Regression tests for faults an independent differential run found in the lowering.

1. Sizes the API accepts crashed a kernel: a let buffer's element count and the
   flat indices into it were `int` arithmetic, so N = 65537 allocated a wrapped,
   too small buffer and wrote past it.  Counts are now checked 64-bit arithmetic
   (too large is an allocation failure, reported through the error flag) and
   flat indices into buffers of several dimensions are 64-bit.
2. `concat` of operands with different inner extents dropped the longer one's
   data; Coq (Reshape/Defs.v) and the interpreter keep each operand's own rows.
3. Zero-valued lets and outputs (`GEN [ i < 2 ] tzero`) were refused, some as
   ill-shaped; they are lowered now (no buffer for the let, zeros for the output).

Each runs against the interpreter, compiled and under ASan+UBSan.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from verisched.codegen import KernelCallError, lower
from verisched.codegen.errors import LowerError
from verisched.codegen.lower import LoweredKernel
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import IConst, IVar, Shape
from verisched.targets.base import TargetUnavailable
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

SRC = Path(__file__).resolve().parents[1] / "src"
N, M = IVar("n"), IVar("m")
# The program of fault 1: an N x N let of products, summed by rows.
OUTER = ("tlet t := GEN [ i < n ] GEN [ j < n ] A _[ i ] * A _[ j ] in "
         "GEN [ i < n ] SUM [ j < n ] t _[ i ] _[ j ]")


def check_against_interpreter(progs: list[str], env: dict[str, Shape],
                              sizes_list: list[dict[str, int]], target: str = "c",
                              dtype: str = "float32") -> list[LoweredKernel]:
    """Lower, compile (and build the sanitized harness for) the programs; each must
    agree with the interpreter, shape and values, at every size."""
    exprs = [parse_program(p) for p in progs]
    t = get_target(target)
    lowered = [lower(e, env, name=f"f{k}", dtype=dtype, parallel=t.parallel)
               for k, e in enumerate(exprs)]
    kernels = build(lowered, t)
    exe = build_sanitized(lowered, t)
    rng = np.random.default_rng(7)
    npd = np.float32 if dtype == "float32" else np.int32
    for sizes in sizes_list:
        for e, lw in zip(exprs, lowered, strict=True):
            k = kernels[lw.name]
            sizes_k = {a: sizes[a] for a, _ in lw.sizes}
            shapes, out = k.extents(sizes_k)
            inputs = {a: rng.integers(-4, 5, size=s).astype(npd) for a, s in shapes.items()}
            want = evaluate(e, {a: v.astype(np.float64) for a, v in inputs.items()}, sizes_k,
                            np.float64)
            assert want.shape == out, (e, want.shape, out)
            np.testing.assert_allclose(k.call(inputs, sizes_k), want, rtol=1e-5, atol=1e-5,
                                       err_msg=str(e))
            np.testing.assert_allclose(run_sanitized(exe, lw, inputs, sizes_k, out), want,
                                       rtol=1e-5, atol=1e-5, err_msg=f"sanitized {e}")
    return lowered


# ---- 1. element counts and flat indices in 64 bits ------------------------------------


def test_let_counts_and_flat_indices_are_64_bit() -> None:
    k = lower(parse_program(OUTER), {"A": (N,)}, name="outer")
    text = "\n".join(k.body)
    # Checked count (VS_BAD when too large: the kernel's error flag, never a short buffer).
    # Over sizes only, the count is computed once in the prologue, then used.
    assert "const int64_t count = vs_cmul(n, n);" in text
    assert "float *t = (float *)vs_alloc(count, sizeof(float), 0);" in text
    assert text.index("const int64_t count") < text.index("vs_alloc(count")
    # Flat indices: per-dimension indices (int) accumulated in 64 bits.
    assert "t[(int64_t)i*n + j] = " in text and "t[(int64_t)i_1*n + j_1]" in text
    assert "(size_t)(n*n)" not in text
    # An extent that is not a single size is checked against int (the loops are int).
    k2 = lower(parse_program("tlet t := GEN [ i < n * m ] GEN [ j < 3 ] A _[ j ] in "
                             "GEN [ i < n ] t _[ i * m ] _[ 1 ]"), {"A": (N,)}, name="wide")
    text2 = "\n".join(k2.body)
    assert "const int64_t count = vs_cmul(vs_cext(vs_cmul(m, n)), 3);" in text2
    assert "vs_alloc(count, sizeof(float), 0)" in text2
    # The output's and inputs' flat indices too, and the count of an output zeroed first.
    k3 = lower(parse_program("GEN [ i < n ] GEN [ j < m ] (|[ i <? 2 ]| B _[ i ] _[ j ])"),
               {"B": (N, M)}, name="out2")
    text3 = "\n".join(k3.body)
    assert "out[(int64_t)i*m + j] = " in text3 and "B[(int64_t)i*m + j]" in text3
    k4 = lower(parse_program("split 3 n (GEN [ i < n ] A _[ i ])"), {"A": (N,)}, name="split")
    memset = "memset(out, 0, (size_t)(3*(int64_t)((n + 2) / 3)) * sizeof(float));"
    assert memset in "\n".join(k4.body)


def test_fault_program_agrees_with_the_interpreter_on_the_heap_and_sanitized() -> None:
    # n = 150: the let (22500 floats) is on the heap, through vs_alloc.
    check_against_interpreter([OUTER], {"A": (N,)}, [{"n": 1}, {"n": 37}, {"n": 150}])


def test_n_65537_reports_the_failed_allocation_instead_of_crashing() -> None:
    """The let needs 2^32 + 2^17 + 1 floats (16 GiB).  In a child process limited to
    4 GiB of address space the allocation fails: the kernel must say so through its
    error flag (KernelCallError), not crash or write past a wrapped-around size."""
    script = textwrap.dedent(f"""
        import resource
        import numpy as np
        from verisched.codegen import KernelCallError, lower
        from verisched.pybridge.coqterm import parse_program
        from verisched.pybridge.terms import IVar
        from verisched.targets.registry import get_target
        from verisched.targets.native import build
        lw = lower(parse_program({OUTER!r}), {{"A": (IVar("n"),)}}, name="outer65537")
        k = build([lw], get_target("c"))["outer65537"]
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        try:
            k({{"A": np.ones(65537, np.float32)}}, n=65537)
        except KernelCallError as exc:
            print("refused:", exc)
        else:
            print("computed")
    """)
    path = os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])])
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600, env=dict(os.environ, PYTHONPATH=path))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "refused:" in res.stdout and "could not allocate" in res.stdout, res.stdout


def test_counts_beyond_int_or_int64_are_refused_without_allocating() -> None:
    progs = [
        # One extent, n * n, beyond int at n = 50000: its int loops could not cover it.
        "tlet t := GEN [ i < n * n ] A _[ 0 ] in GEN [ i < 2 ] t _[ i ] + A _[ i ]",
        # Four extents of n: the count overflows int64 at n = 2^31 - 1.
        "tlet t := GEN [ i < n ] GEN [ j < n ] GEN [ k < n ] GEN [ l < n ] A _[ 0 ] in "
        "GEN [ i < 2 ] t _[ i ] _[ i ] _[ i ] _[ i ] + A _[ i ]",
    ]
    env = {"A": (IConst(2),)}
    # Small sizes: right, also under the sanitizers.
    lowered = check_against_interpreter(progs, env, [{"n": 1}, {"n": 3}])
    assert all("vs_alloc(" in "\n".join(lw.body) for lw in lowered)
    kernels = build(lowered, get_target("c"))
    a = np.array([1.5, -2.0], np.float32)
    # The first one's loop `i < n*n` is int arithmetic: its overflow is now refused at
    # entry (Ctx.int_exprs), before the allocation, which used to refuse it first.
    says = (r"the C's n\*n is 2500000000, beyond the int", "could not allocate")
    for lw, n, why in zip(lowered, (50000, 2**31 - 1), says, strict=True):
        with pytest.raises(KernelCallError, match=why):
            kernels[lw.name]({"A": a}, n=n)


def test_index_constants_beyond_int_are_refused_by_the_lowering() -> None:
    # A split by 2^31 is proved by Coq, but `(n + 2147483647) / 2147483648` wrapped in
    # the C's int loop bound: the loop ran zero times, the output was left unwritten
    # and the error flag said 0.  The lowering names the constant instead; the
    # largest int is still lowered.
    env = {"A": (N,)}
    tile = ("trunc_r n (flatten (cdiv n {k}) {k} (GEN [ io < cdiv n {k} ] GEN [ ii < {k} ] "
            "|[ io * {k} + ii <? n ]| A _[ io * {k} + ii ]))")
    wrapped = "GEN [ i < n ] A _[ i ] + A _[ 4294967296 - 4294967296 + i ]"
    for prog in (tile.format(k=2**31), wrapped):
        with pytest.raises(LowerError, match=r"index constant \d+ is beyond C int"):
            lower(parse_program(prog), env, name="big")
    with pytest.raises(LowerError, match="index constant 2147483648 is beyond C int"):
        lower(parse_program("GEN [ i < n ] A _[ i ]"), {"A": (IConst(2**31),)}, name="big")
    lower(parse_program(tile.format(k=2**31 - 1)), env, name="edge")


def test_int_arithmetic_over_the_sizes_is_checked_at_entry() -> None:
    # A fused loop runs to m*n in C int, which wraps at n = m = 46341 (as its memset's
    # count would; read from the C, not run: each array is 8.6 GB).  The kernel's entry
    # check now refuses such sizes (error 2, nothing touched), called from C directly,
    # and the wrapper names the expression first; the allocation-free small case agrees
    # with the interpreter.
    import ctypes

    fused = ("GEN [ ij < m * n ] |[ ij / m <? n ]| A _[ ij / m ] _[ ij mod m ] + "
             "A _[ ij / m ] _[ ij mod m ]")
    env = {"A": (N, M)}
    (lw,) = check_against_interpreter([fused], env, [{"n": 3, "m": 4}, {"n": 1, "m": 7}])
    assert "vs_cint(vs_cmul(m, n))" in "\n".join(lw.body)
    k = build([lw], get_target("c"))[lw.name]
    with pytest.raises(KernelCallError, match=r"the C's m\*n is 2147488281, beyond the int"):
        k.extents({"n": 46341, "m": 46341})
    null = ctypes.POINTER(ctypes.c_float)()
    sizes = {"n": 46341, "m": 46341}
    # the C alone: refuses, no access; its code returned and in the thread's NAME_error
    assert k._fn(null, *(sizes[a] for a, _ in lw.sizes), null) == 2
    assert ctypes.c_int.in_dll(k._lib, f"{lw.name}_error").value == 2


# ---- 2. concat keeps each operand's own data ----------------------------------------------


CONCATS = [
    # Left rows narrower than the right's, and wider.
    "concat 2 1 (GEN [ i < 2 ] GEN [ j < 2 ] A _[ i ] _[ j ]) "
    "(GEN [ i < 1 ] GEN [ j < 4 ] A _[ j ] _[ i ])",
    "concat 1 2 (GEN [ i < 1 ] GEN [ j < n ] A _[ i ] _[ j ]) "
    "(GEN [ i < 2 ] GEN [ j < 2 ] A _[ j ] _[ i ] * A _[ 0 ] _[ 0 ])",
    # Symbolic inner extents n and m (either may be larger), and a zero left operand.
    "concat n 1 (GEN [ i < n ] GEN [ j < m ] A _[ i ] _[ j ]) "
    "(GEN [ i < 1 ] GEN [ j < n ] A _[ j ] _[ 0 ])",
    "concat 1 n tzero (GEN [ i < n ] GEN [ j < m ] A _[ i ] _[ j ])",
    # In a let, read back by a transpose of it.
    "tlet c := concat 1 1 (GEN [ i < 1 ] GEN [ j < 3 ] A _[ 0 ] _[ j ]) "
    "(GEN [ i < 1 ] GEN [ j < m + 2 ] A _[ 1 ] _[ j ]) in "
    "GEN [ j < m + 2 ] GEN [ i < 2 ] c _[ i ] _[ j ]",
]


def test_concat_of_different_inner_extents_matches_the_interpreter() -> None:
    check_against_interpreter(CONCATS, {"A": (N, M)},
                              [{"n": 2, "m": 1}, {"n": 2, "m": 5}, {"n": 6, "m": 3}])


def test_concat_output_extent_is_the_larger_inner_extent() -> None:
    k = lower(parse_program(CONCATS[0]), {"A": (N, M)}, name="cat")
    assert k.out_extents_c == ["3", "4"]
    k = lower(parse_program(CONCATS[2]), {"A": (N, M)}, name="cat2")
    assert k.out_extents_c[0] == "n + 1" and "vs_max(m, n)" in k.out_extents_c[1]


# ---- 3. zero-valued lets and outputs ------------------------------------------------------


ZEROS = [
    "GEN [ i < 2 ] tzero",
    "GEN [ i < 2 ] GEN [ j < n ] tzero",
    "tlet t := GEN [ i < 2 ] tzero in GEN [ i < 2 ] t _[ i ]",
    "tlet t := GEN [ i < 2 ] tzero in GEN [ i < n ] t _[ i ] + A _[ i ]",
    # Used deeper than its generations: zero at every index, whatever the rank.
    "tlet t := GEN [ i < 2 ] tzero in GEN [ i < 3 ] GEN [ j < n ] t _[ i ] _[ j ] + A _[ j ]",
    "tlet t := GEN [ i < 2 ] GEN [ j < 3 ] tzero in GEN [ i < 2 ] SUM [ j < 3 ] t _[ i ] _[ j ]",
    "tlet t := tzero in GEN [ i < n ] t + A _[ i ]",
    # A zero let feeding another let, and one shadowed by a let of data.
    "tlet t := GEN [ i < 2 ] tzero in tlet u := GEN [ i < n ] t _[ i ] in "
    "GEN [ i < n ] u _[ i ] + A _[ i ]",
    "tlet t := GEN [ i < 2 ] tzero in tlet t := GEN [ i < n ] A _[ i ] * A _[ i ] in "
    "GEN [ i < n ] t _[ i ]",
]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_zero_valued_lets_and_outputs_match_the_interpreter(dtype: str) -> None:
    check_against_interpreter(ZEROS, {"A": (N,)}, [{"n": 1}, {"n": 4}], dtype=dtype)


def test_zero_output_is_written_not_refused() -> None:
    k = lower(parse_program(ZEROS[1]), {}, name="z")
    assert k.out_extents_c == ["2", "n"]
    assert any("out[" in line and "= 0.0f;" in line for line in k.body)
    with pytest.raises(LowerError, match="starts with a prefix reserved"):
        lower(parse_program(ZEROS[0]), {}, name="vs_bad")


@pytest.mark.parametrize("target", ["c", "openmp", "avx2"])
def test_names_the_c_headers_declare_are_renamed_in_the_c(target: str) -> None:
    """A tensor called INT_MAX or stdout, a loop called NULL or exit, a size called
    SIZE_MAX: legal in Coq, and each was pasted into the C, where the headers' macros and
    declarations broke the build ("expected identifier before 'void'").  The lowering
    renames them (c_names.txt); the kernel's inputs and sizes keep their names in Python."""
    t = get_target(target)
    try:
        t.check_runtime()
    except TargetUnavailable as exc:  # this CPU cannot run it
        pytest.skip(str(exc))
    big = IVar("SIZE_MAX")
    e = parse_program("GEN [ NULL < SIZE_MAX ] SUM [ exit < SIZE_MAX ] "
                      "INT_MAX _[NULL] * stdout _[exit] + _Bool _[exit]")
    env = {"INT_MAX": (big,), "stdout": (big,), "_Bool": (big,)}
    k = lower(e, env, name="kern", sizes=["SIZE_MAX"], dtype="float32", parallel=t.parallel)
    kern = build([k], t)["kern"]
    rng = np.random.default_rng(3)
    for size in (1, 5, 17):
        ins = {a: rng.standard_normal(size).astype(np.float32) for a in env}
        np.testing.assert_allclose(kern.call(ins, {"SIZE_MAX": size}),
                                   evaluate(e, ins, {"SIZE_MAX": size}), rtol=1e-4, atol=1e-4)
