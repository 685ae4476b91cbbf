"""The gemmini_ instructions: their specifications (for the registry) and their roles.

Each instruction of coq/Targets/Gemmini.v is a definition whose body is its
ATL specification over Z (Exo thesis Sec. 2.3 and App. D: `ld_i8`,
`matmul_acc_i8`, `st_acc_i8` are procedures whose body is their semantics).
The registry (pybridge/instrs.py) imports this module on the first lookup of
a `gemmini_` name; the interpreter then evaluates a call by its
specification, and tests/test_vector_terms.py-style checks compare each
template with Coq's printed definition.

The lowering does not read the specification: it reads the instruction's
*role* (what moves where) and which parameters carry the source, offsets,
valid extents and output configuration (`ROLES`).  A spec and its role are
kept side by side so that a change to one is seen next to the other.

Every tile is DIM x DIM (16 x 16), zero outside its valid rows and columns,
as every ATL generation is zero outside its extent.
"""

from __future__ import annotations

from dataclasses import dataclass

from verisched.pybridge.instrs import INDEX, TENSOR, InstrSpec, Param, register
from verisched.pybridge.terms import (
    Expr,
    Gen,
    Get,
    Guard,
    IBin,
    IConst,
    IVar,
    PAnd,
    PCmp,
    SBin,
    Sum,
    Var,
    Zero,
)
from verisched.targets.gemmini.config import DIM

LOAD, ZERO, COMPUTE, STORE_FULL, STORE_SPAD = "load", "zero", "compute", "store_full", "store_spad"


@dataclass(frozen=True)
class Role:
    """What an instruction does, for the lowering.

    kind: load (DRAM -> `memory`), zero (-> `memory`), compute (SPAD x SPAD -> ACC,
    overwrite or accumulate by the store mode), store_full (ACC -> DRAM as raw int32),
    store_spad (SPAD -> DRAM as int8).  The other fields name the parameters holding
    the source tensor, the row/column offsets into it and the valid rows/columns
    (None: the whole tile, clipped to the source's extents)."""

    kind: str
    memory: str | None = None
    src: str | None = None
    a: str | None = None
    b: str | None = None
    row: str | None = None
    col: str | None = None
    rows: str | None = None
    cols: str | None = None


def _tile(body: Expr, rows: str | None = None, cols: str | None = None) -> Expr:
    """`GEN [ i < 16 ] GEN [ j < 16 ] (|[ i <? rows && j <? cols ]| body)`."""
    if rows is not None:
        body = Guard(PAnd(PCmp("<", IVar("i"), IVar(rows)), PCmp("<", IVar("j"), IVar(cols))),
                     body)
    return Gen("i", IConst(0), IConst(DIM), Gen("j", IConst(0), IConst(DIM), body))


def _at(v: str, di: object = None, dj: object = None) -> Expr:
    ri = IVar("i") if di is None else IBin("+", IVar(di), IVar("i"))  # type: ignore[arg-type]
    cj = IVar("j") if dj is None else IBin("+", IVar(dj), IVar("j"))  # type: ignore[arg-type]
    return Get(Get(Var(v), ri), cj)


def _t(name: str) -> Param:
    return Param(name, TENSOR, 2)


def _i(name: str) -> Param:
    return Param(name, INDEX)


def _spec(name: str, params: list[Param], body: Expr, doc: str) -> InstrSpec:
    return InstrSpec(name, tuple(params), body, "gemmini", None, doc)


_MATMUL_BODY = Gen("i", IConst(0), IConst(DIM), Gen("j", IConst(0), IConst(DIM), Sum(
    "k", IConst(0), IConst(DIM),
    SBin("*", Get(Get(Var("a"), IVar("i")), IVar("k")), Get(Get(Var("b"), IVar("k")),
                                                             IVar("j"))))))

SPECS: list[tuple[InstrSpec, Role]] = [
    (_spec("gemmini_mvin", [_t("v"), _i("r"), _i("c"), _i("rows"), _i("cols")],
           _tile(_at("v", "r", "c"), "rows", "cols"),
           "rows x cols of v from (r, c) into a scratchpad tile (mvin, int8)"),
     Role(LOAD, "GEMMINI_SPAD", src="v", row="r", col="c", rows="rows", cols="cols")),
    (_spec("gemmini_mvin_acc", [_t("v"), _i("r"), _i("c"), _i("rows"), _i("cols")],
           _tile(_at("v", "r", "c"), "rows", "cols"),
           "rows x cols of v from (r, c) into an accumulator tile (mvin, int32)"),
     Role(LOAD, "GEMMINI_ACC", src="v", row="r", col="c", rows="rows", cols="cols")),
    (_spec("gemmini_zero_acc", [], _tile(Zero()), "a zero accumulator tile (mvin from 0)"),
     Role(ZERO, "GEMMINI_ACC")),
    (_spec("gemmini_matmul", [_t("a"), _t("b")], _MATMUL_BODY,
           "a 16x16x16 product a @ b (preload b, compute_preloaded a; weight-stationary)"),
     Role(COMPUTE, "GEMMINI_ACC", a="a", b="b")),
    (_spec("gemmini_mvout_acc", [_t("c"), _i("rows"), _i("cols")],
           _tile(_at("c"), "rows", "cols"),
           "rows x cols of an accumulator tile to DRAM, full-width int32 (mvout)"),
     Role(STORE_FULL, "GEMMINI_ACC", src="c", rows="rows", cols="cols")),
]

ROLES: dict[str, Role] = {}

for _spec_, _role in SPECS:
    register(_spec_)
    ROLES[_spec_.name] = _role
