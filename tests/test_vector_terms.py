"""Memories and instructions in the AST: parsing Coq's printed form, printing
back, the registry's specifications, and their meaning in the interpreter.

The interpreter evaluates an instruction by instantiating its specification;
these tests check that against numpy written from the contract's prose
(docs: shared contract, issue 5), independently of the template.
"""

from __future__ import annotations

import numpy as np
import pytest

from verisched.codegen.errors import NotNormalError
from verisched.codegen.normal import check_normal, rank_of
from verisched.pybridge.coqterm import parse_program, pretty, to_coq
from verisched.pybridge.errors import TermParseError
from verisched.pybridge.instrs import (
    INDEX,
    SCALAR,
    TENSOR,
    InstrError,
    InstrSpec,
    Param,
    alpha_equal,
    instantiate,
    lookup,
    register,
    registered,
)
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import (
    Gen,
    Get,
    IBin,
    IConst,
    Instr,
    IVar,
    Let,
    Mem,
    SBin,
    Var,
    free_vars,
    shape_of,
    subst,
)

RNG = np.random.default_rng(3)


def test_parse_memory_marker_and_instruction_calls() -> None:
    e = parse_program("tlet C := in_mem AVX2_REG (GEN [ i < 6 ] avx2_mul "
                      "(avx2_broadcast (A _[ i ])) (avx2_loadu (B _[ k ]) (8 * jv))) in "
                      "GEN [ i < 6 ] avx2_storeu (C _[ i ])")
    assert isinstance(e, Let) and isinstance(e.value, Mem)
    assert e.value.memory == "AVX2_REG"
    call = e.value.body.body
    assert call == Instr("avx2_mul", (
        Instr("avx2_broadcast", (Get(Var("A"), IVar("i")),)),
        Instr("avx2_loadu", (Get(Var("B"), IVar("k")), IBin("*", IConst(8), IVar("jv"))))))
    assert parse_program(to_coq(e)) == e
    # The people's printer is also parseable.
    assert parse_program(pretty(e, width=200)) == e
    assert parse_program(pretty(e, width=30).replace("\n", " ")) == e


def test_qualified_names_and_index_first_arguments() -> None:
    e = parse_program("Instr.in_mem Instr.DRAM (AVX.avx2_maskstore (n - 8 * j) "
                      "(avx2_maskload v (8 * j) (n - 8 * j)))")
    assert e == Mem("DRAM", Instr("avx2_maskstore", (
        IBin("-", IVar("n"), IBin("*", IConst(8), IVar("j"))),
        Instr("avx2_maskload", (Var("v"), IBin("*", IConst(8), IVar("j")),
                                IBin("-", IVar("n"), IBin("*", IConst(8), IVar("j"))))))))


@pytest.mark.parametrize("text", ["avx2_loadu v", "GEN [ i < 2 ] (avx2_mul a)",
                                  "avx2_maskload v 0"])
def test_partial_application_is_a_parse_error(text: str) -> None:
    with pytest.raises(TermParseError, match="expects"):
        parse_program(text)


def test_registry_has_the_contracts_avx_instructions() -> None:
    names = set(registered())
    for p in ("avx2_", "avx512_"):
        for op in ("loadu", "maskload", "broadcast", "mul", "add", "fmadd", "storeu",
                   "maskstore"):
            assert p + op in names
    assert lookup("avx2_loadu").kinds == (TENSOR, INDEX)
    assert lookup("avx2_maskstore").kinds == (INDEX, TENSOR)
    assert lookup("avx512_broadcast").kinds == (SCALAR,)
    assert lookup("avx512_mul").lanes == 16 and lookup("avx2_mul").lanes == 8
    assert lookup("not_an_instruction") is None


def test_register_rejects_bad_specs() -> None:
    with pytest.raises(InstrError, match="not parameters"):
        register(InstrSpec("bad_free", (Param("a", TENSOR, 1),),
                           Gen("l", IConst(0), IConst(4), Get(Var("b"), IVar("l"))), "test"))
    with pytest.raises(InstrError, match="already registered"):
        register(InstrSpec("avx2_loadu", (Param("y", SCALAR),), Var("y"), "test"))


def test_instantiate_avoids_capture() -> None:
    # The argument mentions `l`, the specification's own lane binder.
    call = Instr("avx2_loadu", (Get(Var("B"), IVar("l")), IVar("l")))
    body = instantiate(call)
    assert isinstance(body, Gen) and body.var != "l"
    assert free_vars(body) == {"B", "l"}
    x = RNG.standard_normal((12, 20))
    got = evaluate(Gen("l", IConst(0), IConst(3), call), {"B": x})
    for r in range(3):
        np.testing.assert_allclose(got[r], x[r, r:r + 8])
    # Substitution under a let that shadows a parameter leaves the bound one alone.
    e = Let("v", Var("w"), Get(Var("v"), IConst(0)))
    assert subst(e, {"v": Var("z")}, {}) == Let("v", Var("w"), Get(Var("v"), IConst(0)))


def test_alpha_equal() -> None:
    a = Gen("l", IConst(0), IConst(8), Get(Var("v"), IVar("l")))
    b = Gen("k", IConst(0), IConst(8), Get(Var("v"), IVar("k")))
    c = Gen("k", IConst(0), IConst(8), Get(Var("w"), IVar("k")))
    assert alpha_equal(a, b) and not alpha_equal(a, c)


def _vec(rng, n):
    return rng.standard_normal(n)


@pytest.mark.parametrize("prefix,W", [("avx2_", 8), ("avx512_", 16)])
def test_interpreter_evaluates_specifications(prefix: str, W: int) -> None:
    n = 2 * W + 3  # not a multiple of the width
    v = _vec(RNG, n)
    a, b, c = _vec(RNG, W), _vec(RNG, W), _vec(RNG, W)
    ins = {"v": v, "a": a, "b": b, "c": c, "x": np.float64(1.5)}
    o, k = W + 5, 3

    def run(call):
        return evaluate(call, ins, {"o": o, "k": k})

    def padded(lo):
        out = np.zeros(W)
        seg = v[lo:lo + W]
        out[:len(seg)] = seg
        return out

    np.testing.assert_allclose(run(Instr(prefix + "loadu", (Var("v"), IVar("o")))), padded(o))
    mask = np.arange(W) < k
    np.testing.assert_allclose(run(Instr(prefix + "maskload", (Var("v"), IConst(1), IVar("k")))),
                               np.where(mask, padded(1), 0))
    np.testing.assert_allclose(run(Instr(prefix + "broadcast", (Var("x"),))), np.full(W, 1.5))
    np.testing.assert_allclose(run(Instr(prefix + "mul", (Var("a"), Var("b")))), a * b)
    np.testing.assert_allclose(run(Instr(prefix + "add", (Var("a"), Var("b")))), a + b)
    np.testing.assert_allclose(run(Instr(prefix + "fmadd", (Var("a"), Var("b"), Var("c")))),
                               a * b + c)
    np.testing.assert_allclose(run(Instr(prefix + "storeu", (Var("a"),))), a)
    np.testing.assert_allclose(run(Instr(prefix + "maskstore", (IVar("k"), Var("a")))),
                               np.where(mask, a, 0))
    # A memory marker is the identity.
    np.testing.assert_allclose(run(Mem("AVX2_REG", Instr(prefix + "storeu", (Var("a"),)))), a)


def test_shapes_ranks_free_vars() -> None:
    call = Instr("avx2_mul", (Instr("avx2_broadcast", (Get(Var("A"), IVar("i")),)),
                              Instr("avx2_loadu", (Var("B"), IVar("o")))))
    assert shape_of(call, {"A": (IVar("n"),), "B": (IVar("m"),)}) == (IConst(8),)
    assert free_vars(call) == {"A", "B", "i", "o"}
    assert rank_of(call, {"A": 1, "B": 1}) == 1
    assert rank_of(Mem("AVX2_REG", Gen("i", IConst(0), IConst(2), call)), {"A": 1, "B": 1}) == 2
    check_normal(Gen("i", IConst(0), IConst(2), call), {"A": 1, "B": 1}, 2)
    with pytest.raises(NotNormalError, match="rank 1 used at rank 0"):
        check_normal(Gen("i", IConst(0), IConst(2), Gen("j", IConst(0), IConst(8), call)),
                     {"A": 1, "B": 1}, 2)
    bad = Instr("avx2_loadu", (Get(Get(Var("B"), IConst(0)), IConst(0)), IConst(0)))
    with pytest.raises(NotNormalError, match="has rank 0, expected 1"):
        check_normal(bad, {"B": 2}, 1)
    with pytest.raises(NotNormalError, match="takes 2 arguments"):
        check_normal(Instr("avx2_loadu", (Var("B"),)), {"B": 1}, 1)


def test_scalar_operand_inside_a_call_is_checked() -> None:
    call = Instr("avx2_broadcast", (SBin("*", Var("A"), Var("A")),))
    with pytest.raises(NotNormalError):
        check_normal(call, {"A": 1}, 1)
