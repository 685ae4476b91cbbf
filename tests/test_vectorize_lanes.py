"""`vectorize` on lane-wise bodies beyond a flat sum or product, end to end: operations
nested in any order (a scaled sum), a lane-free operand of `+` (a bias), `smax` as the
whole body (two arrays; a ReLU of an affine map, its 0 a broadcast) and below a sum and
a product.  Each derivation is proved by Coq (coq/Targets/Vectorize.v), lowered to AVX2
or AVX-512 C, and run at sizes below, at and past the vector width (the masked tail)
against the reference interpreter (`run --check`), where this CPU has the ISA.  The
derived terms themselves are pinned in tests/coq/Vectorize.v."""

from __future__ import annotations

import shutil

import pytest

from verisched.cli import main
from verisched.targets.cpu import cpu_flags

pytestmark = pytest.mark.skipif(shutil.which("coqtop") is None, reason="needs coqtop")

SOURCE = """
From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.
Section Lanes.
  Context {S : Type} `{ScalarLaws S} {Sm : ScalarMax S}.
  Variables (n : Z) (c : S) (u v : Z -> S).
  Hypothesis Hu : shaped [n + 1] u.
  Hypothesis Hv : shaped [n + 1] v.
  Hypothesis Hn : 0 <= n.
  Definition avg := GEN [ i < n ] c * (u _[ i ] + u _[ i + 1 ]).
  Derive avg_v SuchThat (avg = avg_v) As avg_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  Definition bias := GEN [ i < n ] u _[ i ] + c.
  Derive bias_v SuchThat (bias = bias_v) As bias_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  Definition mx := GEN [ i < n ] smax (u _[ i ]) (v _[ i ]).
  Derive mx_v SuchThat (mx = mx_v) As mx_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  Definition relu := GEN [ i < n ] smax (c * u _[ i ] + v _[ i ]) szero.
  Derive relu_v SuchThat (relu = relu_v) As relu_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  Definition nest := GEN [ i < n ] c * (smax c (u _[ i ]) + v _[ i ]).
  Derive nest_v SuchThat (nest = nest_v) As nest_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
End Lanes.
"""

FLAG = {"avx2": "avx2", "avx512": "avx512f"}


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
@pytest.mark.parametrize("name", ["avg_v", "bias_v", "mx_v", "relu_v", "nest_v"])
def test_nested_lanes_compute_as_the_interpreter(isa, name, tmp_path, capsys) -> None:
    if FLAG[isa] not in cpu_flags():
        pytest.skip(f"this CPU has no {isa}")
    vfile = tmp_path / f"Lanes_{isa}.v"
    vfile.write_text(SOURCE.replace("ISA", isa))
    lanes = 8 if isa == "avx2" else 16
    for n in (1, lanes, 2 * lanes + 5):
        assert main(["run", str(vfile), "--derivation", name, "--target", isa,
                     "--size", f"n={n}", "--check"]) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert "reference interpreter on the original program: OK" in out, out
    c = (tmp_path / f"{name}.c")
    assert main(["compile", str(vfile), "--derivation", name, "--target", isa,
                 "-o", str(c)]) == 0
    text = c.read_text()
    # Vector code, its tail masked; a max where the program has one.
    assert ("_mm256_" if isa == "avx2" else "_mm512_") in text
    assert ("max_ps" in text) == (name in ("mx_v", "relu_v", "nest_v"))


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_dsl_max_relu_vectorized_from_python(isa) -> None:
    """`dsl.max` (smax) from the Python API: the generated section gets its ScalarMax
    instance, `vectorize` makes it a vector max, and the kernel is a ReLU at sizes
    below, at and past the width."""
    import numpy as np

    from verisched.schedule import Schedule, dsl

    if FLAG[isa] not in cpu_flags():
        pytest.skip(f"this CPU has no {isa}")
    (n,) = dsl.sizes("n")
    x, b = dsl.tensor("x", n), dsl.tensor("b", n)
    relu = dsl.program("relu", dsl.gen("i", n, lambda i: dsl.max(x[i] * 2 + b[i], 0)),
                       inputs=[x, b])
    with Schedule.of(relu) as s:
        v = s.vectorize("i", isa)
        assert "Context {ScalarMax_S : ScalarMax S}." in v.to_coq()
        k = v.compile(isa)
        for m in (1, 8 if isa == "avx2" else 16, 37):
            rng = np.random.default_rng(m)
            xs = rng.standard_normal(m).astype(np.float32)
            bs = rng.standard_normal(m).astype(np.float32)
            np.testing.assert_allclose(k({"x": xs, "b": bs}, n=m),
                                       np.maximum(2 * xs + bs, 0), rtol=1e-6)


def test_smax_at_nan_is_the_same_in_the_interpreter_scalar_c_and_vectors() -> None:
    """`smax a b` is `a < b ? b : a` everywhere: NaN in a gives NaN, NaN in b gives a.
    The reals have no NaN, so the proof leaves the choice open; the interpreter took
    np.maximum (NaN from either side) and maxps took the other operand, so `--check`
    and the scalar kernel disagreed with the vector kernel where a NaN arose."""
    import numpy as np

    from verisched.pybridge.interp import evaluate
    from verisched.schedule import Schedule, dsl

    (n,) = dsl.sizes("n")
    x, y = dsl.tensor("x", n), dsl.tensor("y", n)
    p = dsl.program("mx", dsl.gen("i", n, lambda i: dsl.max(x[i], y[i])), inputs=[x, y])
    xs = np.array([np.nan, 1, np.nan, -2, 3, np.nan, 0.5, -1] * 5, dtype=np.float32)
    ys = np.array([2, np.nan, np.nan, -3, 4, 1, np.nan, -0.5] * 5, dtype=np.float32)
    want = evaluate(p.expr, {"x": xs.astype(np.float64), "y": ys.astype(np.float64)},
                    {"n": xs.size}, np.float64)
    np.testing.assert_array_equal(np.isnan(want), np.isnan(xs))
    with Schedule.of(p) as s:
        kernels = {"c": s.compile("c")}
        kernels.update({isa: s.vectorize("i", isa).compile(isa) for isa in FLAG
                        if FLAG[isa] in cpu_flags()})
    for isa, k in kernels.items():
        for m in (1, 7, 16, 40):
            np.testing.assert_array_equal(k({"x": xs[:m], "y": ys[:m]}, n=m),
                                          want[:m].astype(np.float32), err_msg=isa)


def test_a_loop_whose_body_does_not_use_its_index_is_vectorized() -> None:
    """After `reorder j i`, loop i of a row broadcast does not use its index: Coq prints
    it `_`, and `vectorize i` found no loop named i.  Now a broadcast of `x[j] * 3` per
    vector, the tail masked, at sizes below, at and past the width."""
    import numpy as np

    from verisched.schedule import Schedule, dsl

    isas = [isa for isa in FLAG if FLAG[isa] in cpu_flags()]
    if not isas:
        pytest.skip("this CPU has neither AVX2 nor AVX-512")
    n, m = dsl.sizes("n m")
    x = dsl.tensor("x", m)
    p = dsl.program("rows", dsl.gen("i", n, lambda i: dsl.gen("j", m, lambda j: x[j] * 3)))
    xs = np.random.default_rng(6).standard_normal(5).astype(np.float32)
    with Schedule.of(p) as s:
        t = s.reorder("j", "i")
        for isa in isas[-1:]:
            k = t.vectorize("i", isa).compile(isa)
            for size in (1, 7, 16, 37):
                np.testing.assert_allclose(k({"x": xs}, n=size, m=5),
                                           np.tile(xs * 3, (size, 1)), rtol=1e-6)


def test_vectorize_says_which_same_named_loops_stay_scalar() -> None:
    """A peeled split leaves two generations named `ii` (the blocks' and the
    epilogue's); the directive takes the first, and the Python method now says that
    the other stays scalar instead of leaving it to be found in the C."""
    from verisched.schedule import Schedule, dsl

    (n,) = dsl.sizes("n")
    u = dsl.tensor("u", n)
    p = dsl.program("dbl", dsl.gen("i", n, lambda i: u[i] * 2))
    with Schedule.of(p) as s:
        sp = s.split("i", 32, "io", "ii", tail="peel")
        with pytest.warns(UserWarning, match="2 generations are named ii; the first was "
                          "vectorized, the other 1 stay scalar"):
            sp.vectorize("ii", "avx2")
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            s.vectorize("i", "avx2")   # one loop of that name: nothing to say


def test_vectorize_into_names_the_vector_loops() -> None:
    """`into` names the vector loops (full vectors and tail), where Coq's binders were
    `io` (`io0` under a split's `io`); the name is checked as every new name is, and may
    reuse the vectorized loop's own; the kernel still computes the program."""
    import numpy as np

    from verisched.schedule import Schedule, ScheduleArgumentError, dsl

    (n,) = dsl.sizes("n")
    u = dsl.tensor("u", n)
    p = dsl.program("dbl", dsl.gen("i", n, lambda i: u[i] * 2))
    with Schedule.of(p) as s:
        sp = s.split("i", 32, "io", "ii", tail="peel")
        with pytest.warns(UserWarning):   # the peeled epilogue's ii stays scalar
            v = sp.vectorize("ii", "avx2", into="iv")
        assert v.steps[-1] == "vectorize ii with avx2 into iv."
        assert "GEN [ iv <" in v.text and "io0" not in v.text
        with pytest.raises(ScheduleArgumentError, match="argument into: 'io' already names"):
            sp.vectorize("ii", "avx2", into="io")
        same = s.vectorize("i", "avx2", into="i")
        assert "GEN [ i <" in same.text
        if FLAG["avx2"] in cpu_flags():
            x = np.arange(75, dtype=np.float32)
            np.testing.assert_array_equal(v.compile("avx2")({"u": x}, n=75), 2 * x)


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_split_window_vectorized_from_python(isa) -> None:
    """Halide's `split(x, xo, xi, 60).vectorize(xi)` from the Python API, over a
    window (`x[i]` for `i < 21` only): the vectors' tail has three upper bounds on a
    lane (the split's, its own, the window's), one masked load (`maskload_min3`,
    decision #143). Against numpy at sizes around the width, the window and the split's
    factor."""
    import numpy as np

    from verisched.schedule import Schedule, dsl

    if FLAG[isa] not in cpu_flags():
        pytest.skip(f"this CPU has no {isa}")
    (n,) = dsl.sizes("n")
    x = dsl.tensor("x", n)
    p = dsl.program("win", dsl.gen("i", n, lambda i: dsl.guard(i < 21, x[i]) + x[i] * x[i]),
                    inputs=[x])
    with Schedule.of(p) as s:
        v = s.split("i", 60, "io", "ii").vectorize("ii", isa)
        assert "maskload_min3" in v.text, v.text
        k = v.compile(isa)
        for m in (1, 9, 20, 21, 22, 60, 61, 127):
            xs = np.random.default_rng(m).standard_normal(m).astype(np.float32)
            x64 = xs.astype(np.float64)
            # (in float64: the vectors compute x*x + x as one fused multiply-add,
            # rounded once, which near x = -1 differs from float32's two roundings)
            want = np.where(np.arange(m) < 21, x64, 0.0) + x64 * x64
            np.testing.assert_allclose(k({"x": xs}, n=m), want, rtol=1e-6, err_msg=str(m))
