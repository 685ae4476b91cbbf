"""Programs with several outputs (issue 13 item 3): a pair at the top of the program,
one kernel that writes every output (one output pointer each, in order), checked
against the interpreter and numpy, also under ASan; refusals where it is not supported.
coq/Examples/PolyBench/Mvt.v and Bicg.v derive such programs (tests/test_polybench.py)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_coq

from verisched.codegen import lower
from verisched.codegen.errors import CodegenError, KernelCallError
from verisched.pybridge.coqterm import parse_program, to_coq
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import IVar, Tuple
from verisched.schedule import dsl
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

MVT = ("(GEN [ i < n ] x1 _[i] <+> (SUM [ j < n ] A _[i] _[j] * y1 _[j]), "
       "(GEN [ i2 < n ] x2 _[i2]) <+> (SUM [ j2 < n ] GEN [ i2 < n ] A _[j2] _[i2] * y2 _[j2]))")
n = IVar("n")
ENV = {"A": (n, n), "x1": (n,), "x2": (n,), "y1": (n,), "y2": (n,)}
# What fuse_outputs leaves of mvt (coq/Rewrites/Outputs.v, pair_gen_sum): one sweep over
# the rows of A, row i adding x1's element i (a one-hot slice) and A's row into x2.
MVT_SWEEP = ("(tzero, GEN [ i2 < n ] x2 _[i2]) <+> SUM [ i < n ] "
             "(GEN [ k < n ] |[ k =? i ]| (x1 _[i] + (SUM [ j < n ] A _[i] _[j] * y1 _[j])), "
             "GEN [ i2 < n ] A _[i] _[i2] * y2 _[i])")


def test_parse_print_and_interpret() -> None:
    e = parse_program(MVT)
    assert isinstance(e, Tuple) and len(e.items) == 2 and parse_program(to_coq(e)) == e
    rng = np.random.default_rng(0)
    ins = {a: rng.standard_normal((5, 5) if a == "A" else 5) for a in ENV}
    x1, x2 = evaluate(e, ins, {"n": 5})
    np.testing.assert_allclose(x1, ins["x1"] + ins["A"] @ ins["y1"])
    np.testing.assert_allclose(x2, ins["x2"] + ins["A"].T @ ins["y2"])


@pytest.mark.parametrize("program", ["pair", "sweep"])
@pytest.mark.parametrize("target", ["c", "openmp"])
def test_one_kernel_writes_every_output(target: str, program: str) -> None:
    e = parse_program(MVT if program == "pair" else MVT_SWEEP)
    t = get_target(target)
    k = lower(e, ENV, name="mvt", sizes=["n"], dtype="float64", parallel=t.parallel)
    assert k.more_outputs and len(k.outputs) == 2
    body = "\n".join(k.body)
    if program == "sweep":  # one loop over the rows of A; row i's x1 element stored once
        assert body.count("for (int i = 0; i < n; ++i)") == 1
        assert "for (int k = i; k < i + 1; ++k)" in body
    kern, exe = build([k], t)["mvt"], build_sanitized([k], t)
    rng = np.random.default_rng(1)
    for size in (1, 6, 19):
        ins = {a: rng.standard_normal((size, size) if a == "A" else size) for a in ENV}
        want = evaluate(e, ins, {"n": size})
        np.testing.assert_allclose(want[0], ins["x1"] + ins["A"] @ ins["y1"], rtol=1e-12)
        np.testing.assert_allclose(want[1], ins["x2"] + ins["A"].T @ ins["y2"], rtol=1e-12)
        got = kern.call(ins, {"n": size})
        assert isinstance(got, tuple) and len(got) == 2
        _, first = kern.extents({"n": size})
        san = run_sanitized(exe, k, ins, {"n": size}, [first, *kern.more_shapes({"n": size})])
        for g, s, w in zip(got, san, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)
            np.testing.assert_allclose(s, w, rtol=1e-12)
    with pytest.raises(KernelCallError, match="bind takes one output"):
        kern.bind(ins, {"n": size}, np.empty(size))


def test_dsl_program_with_two_outputs() -> None:
    m, = dsl.sizes("m")
    a, b = dsl.tensor("a", m), dsl.tensor("b", m)
    p = dsl.program("both", (dsl.gen("i", m, lambda i: a[i] * b[i]),
                             dsl.sum("j", m, lambda j: a[j])))
    assert isinstance(p.expr, Tuple) and p.to_coq().startswith("((GEN")
    got = evaluate(p.expr, {"a": np.arange(3.0), "b": np.ones(3)}, {"m": 3})
    np.testing.assert_allclose(got[0], [0, 1, 2])
    assert float(got[1]) == 3.0
    with pytest.raises(dsl.DslError, match="at least two"):
        dsl.program("one", (a[0],))


def test_a_tuple_inside_a_program_is_refused() -> None:
    inner = parse_program("GEN [ i < n ] (x1 _[i], x2 _[i])")
    with pytest.raises(CodegenError, match="tuple"):
        lower(inner, ENV, name="bad", sizes=["n"])
    # A SUM of tuples after something that is not a tuple of initial values.
    odd = parse_program("GEN [ i < n ] x1 _[i] <+> SUM [ i < n ] (x1, x2)")
    with pytest.raises(CodegenError, match="fuse_outputs"):
        lower(odd, ENV, name="bad", sizes=["n"])


@requires_coq
def test_fuse_outputs_from_python_sweeps_both_outputs_once() -> None:
    from verisched.schedule import DirectiveRefused, Schedule, ScheduleArgumentError

    m, = dsl.sizes("m")
    A, x1, x2, y1, y2 = (dsl.tensor("A", m, m), dsl.tensor("x1", m), dsl.tensor("x2", m),
                         dsl.tensor("y1", m), dsl.tensor("y2", m))
    p = dsl.program("mvt", (
        dsl.gen("i", m, lambda i: x1[i] + dsl.sum("j", m, lambda j: A[i, j] * y1[j])),
        dsl.gen("c", m, lambda c: x2[c])
        + dsl.sum("r", m, lambda r: dsl.gen("c", m, lambda c: A[r, c] * y2[r]))))
    with Schedule.of(p) as s:
        t = s.fuse_outputs()
        assert t.text.startswith("((tzero, GEN")
        k = t.compile("openmp", dtype="float64")
        with pytest.raises(DirectiveRefused, match=r"not a pair \(a, b\) of two outputs"):
            t.fuse_outputs()
    with Schedule.of(dsl.program("one", dsl.gen("i", m, lambda i: x1[i]))) as s:
        with pytest.raises(ScheduleArgumentError, match="one output"):
            s.fuse_outputs()
    rng = np.random.default_rng(4)
    for size in (1, 13):
        ins = {"A": rng.random((size, size)), **{v: rng.random(size)
                                                  for v in ("x1", "x2", "y1", "y2")}}
        a, b = k(ins)
        np.testing.assert_allclose(a, ins["x1"] + ins["A"] @ ins["y1"], rtol=1e-12)
        np.testing.assert_allclose(b, ins["x2"] + ins["A"].T @ ins["y2"], rtol=1e-12)


@requires_coq
def test_fuse_outputs_takes_any_pair_of_loops_over_one_range_and_names_what_it_refuses() -> None:
    """Two generations, two sums, a bare sum, a scalar beside a tensor: each pair is put
    in the form `x <+> SUM` and swept by one loop (Outputs.v, gen_as_tadd_sum and
    sum_as_tadd_sum, then pair_sum_sum); the kernel's outputs are numpy's.  A refusal
    says which output is not a loop, or which ranges differ."""
    from verisched.schedule import DirectiveRefused, Schedule

    k_, m_ = dsl.sizes("k m")
    f, a = dsl.tensor("f", k_), dsl.tensor("a", k_, m_)
    shapes = {
        "gen_scalar": ((dsl.gen("i", k_, lambda i: f[i] * f[i]),
                        dsl.sum("j", k_, lambda j: f[j] * f[j])),
                       lambda v, w: (v * v, (v * v).sum())),
        "gen_gen": ((dsl.gen("i", k_, lambda i: f[i]), dsl.gen("j", k_, lambda j: f[j] * f[j])),
                    lambda v, w: (v, v * v)),
        "sum_sum": ((dsl.sum("i", k_, lambda i: f[i]), dsl.sum("j", k_, lambda j: f[j] * f[j])),
                    lambda v, w: (v.sum(), (v * v).sum())),
        "sum_rows": ((dsl.sum("i", k_, lambda i: f[i]),
                      dsl.gen("j", k_, lambda j: dsl.sum("l", m_, lambda l_: a[j, l_]))),
                     lambda v, w: (v.sum(), w.sum(axis=1))),
    }
    rng = np.random.default_rng(9)
    for name, (outputs, want) in shapes.items():
        with Schedule.of(dsl.program(name, outputs)) as s:
            t = s.fuse_outputs()
            assert t.text.count("SUM [") == 1 + ("sum_rows" in name), t.text
            kern = t.compile("openmp", dtype="float64")
        for size, cols in ((1, 1), (7, 5), (13, 17)):
            v, w = rng.random(size), rng.random((size, cols))
            two = name == "sum_rows"
            got = kern({"f": v, "a": w}, k=size, m=cols) if two else kern({"f": v}, k=size)
            for g, e in zip(got, want(v, w), strict=True):
                np.testing.assert_allclose(g, e, rtol=1e-12)
    refused = {
        (dsl.gen("i", k_, lambda i: f[i]), dsl.sum("j", m_, lambda j: f[j])):
            r"different ranges, 0 \.\. k and 0 \.\. m",
        (f[0] * f[1], dsl.sum("j", k_, lambda j: f[j])):
            "the first output is not a generation or a sum",
        (dsl.sum("j", k_, lambda j: f[j]), f[0] * f[1]):
            "the second output is not a generation or a sum",
    }
    for outputs, message in refused.items():
        with Schedule.of(dsl.program("bad", outputs)) as s:
            with pytest.raises(DirectiveRefused, match=message):
                s.fuse_outputs()
            assert s.text.startswith("(")  # the session survives, the program unchanged
