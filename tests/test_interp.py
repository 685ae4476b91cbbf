"""The reference interpreter, against direct numpy and against Coq itself."""

from __future__ import annotations

import numpy as np
import pytest
from atl_strategies import programs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.crosscheck import coq_evaluate, parse_coq_value
from verisched.pybridge.interp import InterpError, evaluate
from verisched.pybridge.session import CoqSession
from verisched.pybridge.terms import (
    Concat,
    Expr,
    Flatten,
    IConst,
    IVar,
    PadL,
    PadR,
    Split,
    Transpose,
    TruncL,
    TruncR,
    Var,
)

rng = np.random.default_rng(7)

BLUR = parse_program(
    "GEN [ y < n ] GEN [ x < m ] SUM [ dy < 3 ] SUM [ dx < 3 ] l _[y + dy - 1] _[x + dx - 1]")
PIPELINE = parse_program(
    "tlet buf := GEN [ j < n ] f _[j] in "
    "GEN [ i < n ] (|[ 0 <=? (i - 1) ]| buf _[i - 1]) <+> (buf _[i])")
MATMUL = parse_program("GEN [ i < n ] GEN [ j < m ] SUM [ k < p ] a _[i] _[k] * b _[k] _[j]")


def blur_reference(img: np.ndarray) -> np.ndarray:
    padded = np.pad(img, 1)
    n, m = img.shape
    return sum(padded[dy:dy + n, dx:dx + m] for dy in range(3) for dx in range(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (37, 64), (256, 256)])
def test_blur_matches_numpy(dtype: type, shape: tuple[int, int]) -> None:
    img = (rng.standard_normal(shape) * 10).astype(dtype)
    out = evaluate(BLUR, {"l": img}, {"n": shape[0], "m": shape[1]})
    assert out.dtype == np.dtype(dtype) and out.shape == shape
    np.testing.assert_allclose(out, blur_reference(img), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("nmp", [(1, 1, 1), (13, 7, 5), (64, 33, 17)])
def test_matmul(nmp: tuple[int, int, int]) -> None:
    n, m, p = nmp
    a, b = rng.standard_normal((n, p)), rng.standard_normal((p, m))
    out = evaluate(MATMUL, {"a": a, "b": b}, {"n": n, "m": m, "p": p})
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)


def test_pipeline_and_out_of_bounds_reads_are_zero() -> None:
    f = np.array([3, -1, 4, 1, 5])
    assert evaluate(PIPELINE, {"f": f}, {"n": 5}).tolist() == [3, 2, 3, 5, 6]
    # a larger range than the input: reads past the end give zero
    assert evaluate(PIPELINE, {"f": f}, {"n": 7}).tolist() == [3, 2, 3, 5, 6, 5, 0]
    neg = parse_program("GEN [ i < 3 ] f _[ i - 2 ]")
    assert evaluate(neg, {"f": f}).tolist() == [0, 0, 3]


def test_tadd_pads_the_shorter_operand() -> None:
    e = parse_program("(GEN [ i < 2 ] f _[i]) <+> (GEN [ i < 4 ] f _[i])")
    assert evaluate(e, {"f": np.array([1, 2, 3, 4])}).tolist() == [2, 4, 3, 4]


def test_integer_division_follows_coq() -> None:
    e = parse_program("GEN [ i < 5 ] f _[ (i - 2) / 2 ] / g _[ i mod 0 ]")
    f = np.array([10, 20, 30, 40])
    g = np.array([3, -4, 0, 2, 5])
    # (i-2)/2 floors: -1,-1,0,0,1 ; i mod 0 = i ; x / 0 = 0 (Z.div)
    assert evaluate(e, {"f": f, "g": g}).tolist() == [0, 0, 0, 5, 4]


def test_triangular_bounds_depend_on_outer_variable() -> None:
    e = parse_program("GEN [ i < n ] SUMR [ 1 <= j < i ] f _[j]")
    f = np.arange(10)
    assert evaluate(e, {"f": f}, {"n": 6}).tolist() == [0, 0, 1, 3, 6, 10]


def _idx(v: int | str) -> IConst | IVar:
    return IConst(v) if isinstance(v, int) else IVar(v)


@pytest.mark.parametrize("n,k", [(7, 3), (8, 4), (1, 5), (10, 1)])
def test_reshape_identities_of_fig_5(n: int, k: int) -> None:
    v = rng.integers(-9, 9, size=(n, 3))
    V = Var("v")
    nk = -(-n // k)
    cases: list[tuple[Expr, np.ndarray]] = [
        (TruncR(_idx(n), Flatten(IConst(nk), IConst(k), Split(IConst(k), IConst(n), V))), v),
        (TruncR(_idx(n), PadR(IConst(k), IConst(n), V)), v),
        (TruncL(_idx(n), IConst(n + k), PadL(IConst(k), IConst(n), V)), v),
        (Transpose(IConst(3), IConst(n), Transpose(IConst(n), IConst(3), V)), v),
        (Split(IConst(3), IConst(3 * n), Flatten(IConst(n), IConst(3), V)), v),
        (Concat(IConst(2), IConst(n - 2 if n > 2 else 0),
                TruncR(IConst(2), V), TruncL(IConst(max(n - 2, 0)), IConst(n), V)),
         v if n >= 2 else np.pad(v, ((0, 2 - n), (0, 0)))),
    ]
    for e, expected in cases:
        out = evaluate(e, {"v": v})
        np.testing.assert_array_equal(out, expected, err_msg=str(e))


def test_split_pads_with_zeros() -> None:
    out = evaluate(Split(IConst(3), IConst(7), Var("v")), {"v": np.arange(1, 8)})
    assert out.tolist() == [[1, 2, 3], [4, 5, 6], [7, 0, 0]]


def test_errors_name_the_cause() -> None:
    with pytest.raises(InterpError, match="unbound tensor variable 'g'"):
        evaluate(parse_program("GEN [ i < 2 ] g _[i]"), {"f": np.zeros(2)})
    with pytest.raises(InterpError, match="unbound index variable 'n'"):
        evaluate(parse_program("GEN [ i < n ] f _[i]"), {"f": np.zeros(2)})


def test_parse_coq_value() -> None:
    assert parse_coq_value("((-1) :: (0 :: nil))%list") == [-1, 0]
    assert parse_coq_value("((1 :: nil) :: ((2 :: (3 :: nil)) :: nil))%list") == [[1], [2, 3]]
    assert parse_coq_value("-4") == -4
    assert parse_coq_value("[[-7; 0]; (-1) :: [2]; []]") == [[-7, 0], [-1, 2], []]


# -- against Coq's own evaluation (scalars := Z, vm_compute) ---------------------


def _random_inputs(r: np.random.Generator) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    sizes = {"n": int(r.integers(0, 4)), "m": int(r.integers(1, 4))}
    inputs = {"a": np.array(int(r.integers(-3, 4))),
              "u": r.integers(-3, 4, size=int(r.integers(0, 5))),
              "w": r.integers(-3, 4, size=(int(r.integers(1, 4)), int(r.integers(0, 4))))}
    return inputs, sizes


def agree_with_coq(coq: CoqSession, e: Expr, rank: int, inputs: dict[str, np.ndarray],
                   sizes: dict[str, int]) -> None:
    ours = evaluate(e, inputs, sizes, dtype=np.int64, rank=rank)
    assert ours.ndim == rank
    box = tuple(d + 1 for d in ours.shape)  # one past the extent: zeros must agree too
    theirs = coq_evaluate(coq, e, rank, box, inputs, sizes, timeout=60)
    padded = np.pad(ours, [(0, 1)] * rank) if rank else ours
    np.testing.assert_array_equal(padded, theirs, err_msg=str(e))


@pytest.mark.parametrize("prog,inputs,sizes", [
    (PIPELINE, {"f": np.array([3, -1, 4, 1, 5])}, {"n": 5}),
    (MATMUL, {"a": np.arange(6).reshape(2, 3) - 2, "b": np.arange(12).reshape(3, 4) % 5},
     {"n": 2, "m": 4, "p": 3}),
    (BLUR, {"l": np.arange(12).reshape(3, 4) - 5}, {"n": 3, "m": 4}),
])
def test_examples_agree_with_coq(coq: CoqSession, prog: Expr, inputs: dict, sizes: dict
                                 ) -> None:
    rank = evaluate(prog, inputs, sizes).ndim
    agree_with_coq(coq, prog, rank, inputs, sizes)


@given(programs(depth=3), st.integers(0, 2**32 - 1))
@settings(max_examples=int(__import__("os").environ.get("VS_EXAMPLES", "100")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_random_programs_agree_with_coq(coq: CoqSession, prog: tuple[Expr, int],
                                        seed: int) -> None:
    e, rank = prog
    inputs, sizes = _random_inputs(np.random.default_rng(seed))
    agree_with_coq(coq, e, rank, inputs, sizes)


def test_batch_elements_sizes_the_interpreters_largest_array() -> None:
    """The estimate pipeline.execute refuses a `--check` by: a matmul is evaluated as one
    M x N x K array, an extent that depends on an outer binder is taken at its largest,
    and an instruction counts its specification's loops.  The traced peak of a real
    evaluation lies between one such array and the three the estimate allows for."""
    import tracemalloc

    from verisched.pybridge.interp import batch_elements

    mm = parse_program("GEN [ i < M ] GEN [ j < N ] SUM [ k < K ] "
                       "A _[ i ] _[ k ] * B _[ k ] _[ j ]")
    assert batch_elements(mm, {"M": 30, "N": 20, "K": 10}) == 6000
    tri = parse_program("GEN [ i < n ] GEN [ j < i ] f _[ j ]")
    assert batch_elements(tri, {"n": 50}) == 50 * 49
    tiled = parse_program("GEN [ io < n / 4 ] GEN [ ii < 4 ] SUM [ k < K ] "
                          "A _[ io * 4 + ii ] _[ k ]")
    assert batch_elements(tiled, {"n": 64, "K": 7}) == 64 * 7
    rng = np.random.default_rng(0)
    m, n, k = 40, 30, 50
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    tracemalloc.start()
    try:
        out = evaluate(mm, {"A": a, "B": b}, {"M": m, "N": n, "K": k})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.allclose(out, a @ b)
    batch = batch_elements(mm, {"M": m, "N": n, "K": k})
    assert 8 * batch <= peak <= 8 * (3 * batch + a.size + b.size + 2 * out.size)
