"""Literal constants (`slit n d`, coq/Tensor/Scalar.v; issue 13 item 1).

What is checked: the rounding of a literal into each element type against exact
rational arithmetic; the DSL's reading of Python numbers; the Coq round trip; and a
scheduled stencil with a constant, proved by Coq, compiled for float32 and float64
(and AVX2 where the CPU has it) and run against numpy at sizes that are not multiples
of the tile.  The random differential tests (test_codegen_diff.py, test_interp.py)
also draw literals."""

from __future__ import annotations

import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verisched.pybridge.coqterm import parse_program, to_coq
from verisched.pybridge.literals import LiteralError, literal_c, literal_value
from verisched.pybridge.terms import Lit, Zero
from verisched.report.latex import literal_tex
from verisched.schedule import dsl
from verisched.targets.base import ROUNDING

pos = st.integers(1, 10**30)


@settings(max_examples=400, deadline=None)
@given(pos, pos)
def test_float32_literal_is_the_nearest_binary32(num: int, den: int) -> None:
    q = Fraction(num, den)
    try:
        v = literal_value(num, den, "float32")
    except LiteralError:
        assert q > Fraction(float(np.finfo(np.float32).max))
        return
    err = abs(Fraction(float(v)) - q)
    for c in (np.nextafter(v, np.float32(0)), np.nextafter(v, np.float32(np.inf))):
        other = abs(Fraction(float(c)) - q)
        # nearest; on a tie, the even significand
        assert err < other or (err == other and int(v.view(np.uint32)) % 2 == 0)


@settings(max_examples=200, deadline=None)
@given(pos, pos)
def test_float64_and_integer_literals(num: int, den: int) -> None:
    q = Fraction(num, den)
    if q < 2**1000:
        assert literal_value(num, den, "float64") == float(q)
    if num // den < 2**31:
        assert literal_value(num, den, "int32") == num // den  # Coq's Z.div (slit_Z)
    else:
        with pytest.raises(LiteralError, match="does not fit int32"):
            literal_value(num, den, "int32")


# Values whose decimal reading is delicate: a third, a tenth, 2^24 + 1 (a tie in
# float32), the smallest subnormals, the largest finite values, a long fraction.
EXACT_CASES = [(1, 3), (1, 10), (2**24 + 1, 1), (1, 2**149), (1, 2**1074),
               (340282346638528859811704183484516925440, 1), (-123456789, 1000), (5, 7)]


def test_float32_rounds_at_its_largest_value_as_ieee_says() -> None:
    """The largest float32 is a literal (it raised OverflowError from its neighbour,
    infinity); past it, a value below the halfway point to 2^128 rounds to it, one at
    or above overflows (the tie goes to 2^128's even significand)."""
    top = Fraction(int(np.finfo(np.float32).max))
    half_ulp = Fraction(2**103)
    assert literal_value(top.numerator, 1, "float32") == np.finfo(np.float32).max
    assert literal_value(int(top + half_ulp) - 1, 1, "float32") == np.finfo(np.float32).max
    with pytest.raises(LiteralError, match="overflows float32"):
        literal_value(int(top + half_ulp), 1, "float32")
    assert literal_value(-top.numerator, 1, "float32") == -np.finfo(np.float32).max


def test_a_literal_past_every_float_is_refused_by_name() -> None:
    """Past float64's range `float(Fraction)` raised OverflowError, which the lowering
    did not catch (a traceback from `compile`); float64's own overflow tie too."""
    for dt in ("float32", "float64"):
        with pytest.raises(LiteralError, match=f"overflows {dt}"):
            literal_value(10**400, 1, dt)
        with pytest.raises(LiteralError, match=f"overflows {dt}"):
            literal_value(-(10**400), 7, dt)
    with pytest.raises(LiteralError, match="overflows float64"):
        literal_value(2**1024 - 2**970, 1, "float64")
    assert literal_value(2**1024 - 2**970 - 1, 1, "float64") == np.finfo(np.float64).max
    with pytest.raises(LiteralError, match="denominator must be positive"):
        literal_value(1, 0, "float32")


@pytest.mark.parametrize("compiler", ["cc", "c++"])
def test_c_text_is_exact(compiler: str, tmp_path) -> None:
    """The literal the C (and the C++11) compiler reads is bit for bit the value
    `literal_value` rounded: the decimal is the shortest that reads back as it."""
    assert literal_c(7, 2, "int32") == "((int32_t)3)"
    if shutil.which(compiler) is None:
        pytest.skip(f"no {compiler}")
    lines = []
    want = []
    for num, den in EXACT_CASES:
        for dt, bits in (("float32", "uint32_t"), ("float64", "uint64_t")):
            try:
                v = literal_value(num, den, dt)
            except LiteralError:
                continue  # beyond the type: refused before any C is written
            ctype = "float" if dt == "float32" else "double"
            lines.append(f"  {{ {ctype} x = {literal_c(num, den, dt)}; {bits} b; "
                         f"memcpy(&b, &x, sizeof b); printf(\"%llu\\n\", "
                         f"(unsigned long long)b); }}")
            want.append(int(v.view(np.uint32 if dt == "float32" else np.uint64)))
    src = tmp_path / ("t.c" if compiler == "cc" else "t.cpp")
    src.write_text("#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n"
                   "int main(void) {\n" + "\n".join(lines) + "\n  return 0;\n}\n")
    std = "-std=c11" if compiler == "cc" else "-std=c++11"
    subprocess.run([compiler, std, "-Wall", "-Werror", "-pedantic", "-o", str(tmp_path / "t"),
                    str(src)], check=True)
    out = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True)
    assert [int(x) for x in out.stdout.split()] == want


def test_dsl_reads_numbers_as_written() -> None:
    n, = dsl.sizes("n")
    x = dsl.tensor("x", n)
    assert dsl.const(0.1).term == Lit(1, 10)  # the decimal the user wrote, not the double
    assert dsl.const("1/3").term == Lit(1, 3)
    assert dsl.const(Fraction(6, 4)).term == Lit(3, 2)
    assert dsl.const(0).term == Zero()
    assert (2 * x[0]).term.left == Lit(2, 1)
    assert (x[0] / 4).term.right == Lit(4, 1)
    with pytest.raises(dsl.DslError, match="negative"):
        dsl.const(-0.5)
    with pytest.raises(dsl.DslError, match="not a finite number"):
        dsl.const(float("nan"))
    with pytest.raises(ValueError, match="positive integers"):
        Lit(0, 3)


def test_coq_text_round_trip_and_math() -> None:
    e = parse_program("GEN [ i < n ] x _[i] * slit 33333 100000 + slit 5 1")
    assert parse_program(to_coq(e)) == e
    assert Lit(33333, 100000) in (e.body.left.right, e.body.right)
    assert literal_tex(33333, 100000) == "0.33333"
    assert literal_tex(1, 3) == r"\tfrac{1}{3}"


def _jacobi_step() -> dsl.Program:
    n, = dsl.sizes("n")
    A = dsl.tensor("A", n)
    return dsl.program("jacobi_step", dsl.gen("i", n - 2, lambda i:
                       dsl.sum("k", 3, lambda k: 0.33333 * A[i + k])), assume=[n >= 2])


def _reference(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.float64)
    return 0.33333 * (a[:-2] + a[1:-1] + a[2:])


@pytest.mark.usefixtures("coq")
def test_scheduled_stencil_with_a_constant_runs_in_float32_and_float64() -> None:
    from verisched.schedule import Schedule

    with Schedule.of(_jacobi_step()) as s:
        s = s.split("i", 4, "io", "ii")
        assert "slit 33333 100000" in s.text
        checked = s.checked(dtype="float64")
        for dt, tol in (("float32", 1e-5), ("float64", 1e-13)):
            k = s.compile("c", dtype=dt)
            for size in (2, 3, 13, 41):  # 13 and 41: not multiples of the tile 4
                a = np.random.default_rng(size).standard_normal(size).astype(dt)
                np.testing.assert_allclose(k({"A": a}, n=size), _reference(a), rtol=tol,
                                           atol=tol)
    from verisched.pipeline.compile import lower, render
    from verisched.targets.registry import get_target

    src = render(lower(checked, get_target("c"))).c
    assert literal_c(33333, 100000, "float64") in src
    assert "constants 33333/100000 are Coq's exact rationals" in src
    assert "float64" in ROUNDING


@pytest.mark.usefixtures("coq")
def test_vectorized_constant_is_broadcast() -> None:
    from verisched.schedule import Schedule
    from verisched.targets.cpu import cpu_flags

    n, = dsl.sizes("n")
    A = dsl.tensor("A", n)
    scale = dsl.program("scale", dsl.gen("i", n, lambda i: 0.5 * A[i]))
    with Schedule.of(scale) as s:
        s = s.vectorize("i", "avx2")
        assert "avx2_broadcast (slit 1 2)" in s.text
        if "avx2" not in cpu_flags():
            pytest.skip("this CPU has no AVX2: compiled and proved, not run")
        k = s.compile("avx2")
        for size in (1, 9, 20):
            a = np.random.default_rng(size).standard_normal(size).astype(np.float32)
            np.testing.assert_array_equal(k({"A": a}, n=size), np.float32(0.5) * a)


# A derivation over a scalar input alpha, shared with test_wheel_install.py.
AXPY_V = (Path(__file__).parent / "data" / "scalar_axpy.v").read_text()


@pytest.mark.usefixtures("coq")
def test_fix_turns_a_scalar_input_into_a_constant(tmp_path, monkeypatch) -> None:
    from verisched import pipeline
    from verisched.codegen.errors import CodegenError

    monkeypatch.setenv("VERISCHED_NO_CACHE", "1")
    path = tmp_path / "axpy.v"
    path.write_text(AXPY_V)
    derived = pipeline.load(path, "axpy_s")
    checked = pipeline.check(derived, fix={"alpha": "1/3"}, dtype="float64")
    assert [t for t, _ in checked.program.inputs] == ["x", "y"]  # alpha is no argument
    assert checked.constants == {"alpha": Fraction(1, 3)}
    assert Lit(1, 3) in checked.original.body.left.__dict__.values()
    k = pipeline.build(pipeline.render(pipeline.lower(checked, "c")))["axpy_s"]
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(11), rng.standard_normal(11)
    np.testing.assert_allclose(k({"x": x, "y": y}, n=11), x / 3 + y, rtol=1e-15)
    for bad, why in (({"alpha": -1}, "cannot be negative"), ({"x": 2}, "rank 1"),
                     ({"alpha": "abc"}, "must be a number"),
                     ({"beta": 1}, "not a size variable or scalar input")):
        with pytest.raises(CodegenError, match=why):
            pipeline.check(derived, fix=bad)
