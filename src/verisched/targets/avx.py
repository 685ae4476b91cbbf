"""The AVX instruction contract shared by the avx2 and avx512 targets.

coq/Targets/AVX.v defines each vector instruction once for a lane width W
and instantiates it at W = 8 (AVX2, `avx2_` names) and W = 16 (AVX-512F,
`avx512_` names), and for float64 at W = 4 (`avx2pd_`) and W = 8
(`avx512pd_`).  Here are the same specifications as AST templates, built by
one lane-width-generic function and registered with the instruction
registry (pybridge/instrs.py) when this module is imported: the parser, the
interpreter and the lowering read them there.  tests/test_vector_specs_coq.py
checks every template against Coq's printed definition, so the Python
meaning of an instruction is the proved one.  (Templates, not only Coq's
print, because kernels are also built from programs made in Python, where
no Coq session is at hand.)
"""

from __future__ import annotations

from verisched.pybridge.instrs import INDEX, SCALAR, TENSOR, InstrSpec, Param, register
from verisched.pybridge.terms import (
    Expr,
    Gen,
    Get,
    Guard,
    IBin,
    IConst,
    IVar,
    PCmp,
    SBin,
    Sum,
    Var,
)

AVX2_LANES = 8
AVX512_LANES = 16


def lane_specs(family: str, lanes: int) -> list[InstrSpec]:
    """Loads, broadcast, arithmetic, stores and the lanes' sum of width `lanes`, exactly
    as the Coq contract states them (`GEN [ l < lanes ] ...`, `SUM [ l < lanes ] ...`),
    named `<family>_<op>`."""
    L = IConst(lanes)
    lv = IVar("l")

    def vec(body: Expr) -> Expr:
        return Gen("l", IConst(0), L, body)

    def at(x: str) -> Expr:
        return Get(Var(x), lv)

    def t(n: str) -> Param:
        return Param(n, TENSOR, 1)

    def s(n: str) -> Param:
        return Param(n, SCALAR)

    def i(n: str) -> Param:
        return Param(n, INDEX)

    def mk(op: str, params: list[Param], body: Expr, doc: str) -> InstrSpec:
        return InstrSpec(f"{family}_{op}", tuple(params), body, family, lanes, doc)

    return [
        mk("loadu", [t("v"), i("o")], vec(Get(Var("v"), IBin("+", IVar("o"), lv))),
           "lanes o .. o+W-1 of v"),
        mk("maskload", [t("v"), i("o"), i("n")],
           vec(Guard(PCmp("<", lv, IVar("n")), Get(Var("v"), IBin("+", IVar("o"), lv)))),
           "the first n lanes of v from o, zero elsewhere"),
        mk("maskload_range", [t("v"), i("o"), i("a"), i("b")],
           vec(Guard(PCmp("<=", IVar("a"), lv),
                     Guard(PCmp("<", lv, IVar("b")), Get(Var("v"), IBin("+", IVar("o"), lv))))),
           "the lanes a <= l < b of v from o, zero elsewhere (a border on either side)"),
        mk("maskload_min", [t("v"), i("o"), i("a"), i("b")],
           vec(Guard(PCmp("<", lv, IVar("a")),
                     Guard(PCmp("<", lv, IVar("b")), Get(Var("v"), IBin("+", IVar("o"), lv))))),
           "the lanes l < a and l < b of v from o, zero elsewhere (two upper bounds)"),
        mk("maskload_range_min", [t("v"), i("o"), i("a"), i("b"), i("c")],
           vec(Guard(PCmp("<=", IVar("a"), lv),
                     Guard(PCmp("<", lv, IVar("b")),
                           Guard(PCmp("<", lv, IVar("c")),
                                 Get(Var("v"), IBin("+", IVar("o"), lv)))))),
           "the lanes a <= l < b, l < c of v from o, zero elsewhere"),
        mk("maskload_min3", [t("v"), i("o"), i("a"), i("b"), i("c")],
           vec(Guard(PCmp("<", lv, IVar("a")),
                     Guard(PCmp("<", lv, IVar("b")),
                           Guard(PCmp("<", lv, IVar("c")),
                                 Get(Var("v"), IBin("+", IVar("o"), lv)))))),
           "the lanes l < a, l < b and l < c of v from o, zero elsewhere"),
        mk("maskload_range_min3", [t("v"), i("o"), i("a"), i("b"), i("c"), i("d")],
           vec(Guard(PCmp("<=", IVar("a"), lv),
                     Guard(PCmp("<", lv, IVar("b")),
                           Guard(PCmp("<", lv, IVar("c")),
                                 Guard(PCmp("<", lv, IVar("d")),
                                       Get(Var("v"), IBin("+", IVar("o"), lv))))))),
           "the lanes a <= l < b, l < c, l < d of v from o, zero elsewhere"),
        mk("broadcast", [s("x")], vec(Var("x")), "x in every lane"),
        mk("maskbroadcast_range", [s("x"), i("a"), i("b")],
           vec(Guard(PCmp("<=", IVar("a"), lv), Guard(PCmp("<", lv, IVar("b")), Var("x")))),
           "x in the lanes a <= l < b, zero elsewhere (a constant under a border's guard)"),
        mk("maskbroadcast_range_min", [s("x"), i("a"), i("b"), i("c")],
           vec(Guard(PCmp("<=", IVar("a"), lv),
                     Guard(PCmp("<", lv, IVar("b")), Guard(PCmp("<", lv, IVar("c")), Var("x"))))),
           "x in the lanes a <= l < b, l < c, zero elsewhere (a constant under a window)"),
        mk("mul", [t("a"), t("b")], vec(SBin("*", at("a"), at("b"))), "lane-wise a * b"),
        mk("add", [t("a"), t("b")], vec(SBin("+", at("a"), at("b"))), "lane-wise a + b"),
        mk("max", [t("a"), t("b")], vec(SBin("max", at("a"), at("b"))),
           "lane-wise smax a b (class ScalarMax)"),
        mk("fmadd", [t("a"), t("b"), t("c")],
           vec(SBin("+", SBin("*", at("a"), at("b")), at("c"))), "lane-wise a * b + c"),
        mk("storeu", [t("v")], vec(at("v")), "v, stored with a vector store"),
        mk("maskstore", [i("n"), t("v")], vec(Guard(PCmp("<", lv, IVar("n")), at("v"))),
           "the first n lanes of v, stored with a masked store"),
        mk("reduce_add", [t("v")], Sum("l", IConst(0), L, at("v")),
           "the sum of v's lanes, a scalar (a horizontal add)"),
    ]


# The float64 families (decision #154): the same specifications at the lane counts of
# a register of doubles; over the reals they do not depend on the element type.
AVX2PD_LANES = 4
AVX512PD_LANES = 8

for _spec in (lane_specs("avx2", AVX2_LANES) + lane_specs("avx512", AVX512_LANES)
              + lane_specs("avx2pd", AVX2PD_LANES) + lane_specs("avx512pd", AVX512PD_LANES)):
    register(_spec)
