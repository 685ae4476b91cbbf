"""The BLAS idioms (coq/Targets/Blas.v) as instruction specifications.

LIAR (issue 14) recognises library idioms in naive array programs; here each
idiom is, like an AVX instruction (targets/avx.py), a specification whose
body is an ATL term, registered with the instruction registry when this
module is imported, so the parser, the interpreter and the search
(verisched.search) know its meaning without a Coq session.  tests/test_search.py
compares every template with Coq's printed definition, so the Python meaning
is the proved one.  Lowering to CBLAS calls is not done yet: the C targets
refuse a program with a `blas_` call (docs/search.md).
"""

from __future__ import annotations

from verisched.pybridge.instrs import INDEX, SCALAR, TENSOR, InstrSpec, Param, register
from verisched.pybridge.terms import Expr, Gen, Get, IConst, IVar, SBin, Sum, Var

FAMILY = "blas"


def _g(t: str, *ix: str) -> Expr:
    e: Expr = Var(t)
    for i in ix:
        e = Get(e, IVar(i))
    return e


def _gen(v: str, n: str, body: Expr) -> Expr:
    return Gen(v, IConst(0), IVar(n), body)


def _sum(v: str, n: str, body: Expr) -> Expr:
    return Sum(v, IConst(0), IVar(n), body)


def _mul(a: Expr, b: Expr) -> Expr:
    return SBin("*", a, b)


def blas_specs() -> list[InstrSpec]:
    """The specifications of coq/Targets/Blas.v, parameter for parameter."""
    def t(n: str, rank: int = 1) -> Param:
        return Param(n, TENSOR, rank)

    def s(n: str) -> Param:
        return Param(n, SCALAR)

    def i(n: str) -> Param:
        return Param(n, INDEX)

    def mk(name: str, params: list[Param], body: Expr, doc: str) -> InstrSpec:
        return InstrSpec(name, tuple(params), body, FAMILY, None, doc)

    return [
        mk("blas_dot", [i("n"), t("x"), t("y")],
           _sum("k", "n", _mul(_g("x", "k"), _g("y", "k"))), "cblas_sdot"),
        mk("blas_axpy", [i("n"), s("a"), t("x"), t("y")],
           _gen("i", "n", SBin("+", _mul(Var("a"), _g("x", "i")), _g("y", "i"))),
           "cblas_saxpy (out of place)"),
        mk("blas_gemv", [i("m"), i("n"), t("A", 2), t("x")],
           _gen("i", "m", _sum("j", "n", _mul(_g("A", "i", "j"), _g("x", "j")))),
           "cblas_sgemv, no transpose"),
        mk("blas_gemvT", [i("m"), i("n"), t("A", 2), t("x")],
           _gen("j", "n", _sum("i", "m", _mul(_g("A", "i", "j"), _g("x", "i")))),
           "cblas_sgemv, transposed"),
        mk("blas_gemm", [i("m"), i("n"), i("p"), t("A", 2), t("B", 2)],
           _gen("i", "m", _gen("j", "n", _sum("k", "p", _mul(_g("A", "i", "k"),
                                                            _g("B", "k", "j"))))),
           "cblas_sgemm"),
        mk("blas_gemv_scaled", [i("m"), i("n"), s("a"), t("A", 2), t("x")],
           _gen("i", "m", _mul(Var("a"), _sum("j", "n", _mul(_g("A", "i", "j"),
                                                            _g("x", "j"))))),
           "cblas_sgemv, no transpose, alpha = a"),
        mk("blas_gemvT_scaled", [i("m"), i("n"), s("a"), t("A", 2), t("x")],
           _gen("j", "n", _mul(Var("a"), _sum("i", "m", _mul(_g("A", "i", "j"),
                                                            _g("x", "i"))))),
           "cblas_sgemv, transposed, alpha = a"),
        mk("blas_gemm_scaled", [i("m"), i("n"), i("p"), s("a"), t("A", 2), t("B", 2)],
           _gen("i", "m", _gen("j", "n", _mul(Var("a"), _sum("k", "p", _mul(
               _g("A", "i", "k"), _g("B", "k", "j")))))),
           "cblas_sgemm, alpha = a"),
        mk("blas_fill", [i("n"), s("c")], _gen("i", "n", Var("c")), "memset / fill"),
        mk("blas_transpose", [i("m"), i("n"), t("A", 2)],
           _gen("j", "n", _gen("i", "m", _g("A", "i", "j"))), "out-of-place transpose"),
    ]


for _spec in blas_specs():
    register(_spec)
