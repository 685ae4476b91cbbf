"""The chained matmul's micro-kernel points failed to compile (decisions #78): the C
declared one hoisted element count twice (`const int64_t count_2` for the producer's
pack and for `AB`).  The vector lowering's mask-split probe (codegen/vloops.py) lowers
a loop body into a scratch emitter and gives back the C names it took, but kept the
counts it hoisted into the prologue (codegen/lets.py); the real lowering then reused
such a count without reserving its name, and a later count got the same name.  Fast
unit tests of the lowering's state; no timings."""

from __future__ import annotations

from verisched.codegen import lets
from verisched.codegen.core import Lowering
from verisched.codegen.ir import Ctx
from verisched.codegen.poly import Poly
from verisched.codegen.prover import Facts


def _lowering() -> tuple[Lowering, Ctx]:
    return Lowering("float32", False), Ctx(Facts(sizes=frozenset({"n", "p"})), {}, {})


def test_a_reused_hoisted_count_keeps_its_name_reserved() -> None:
    lw, ctx = _lowering()
    pack = (Poly.const(16), Poly.const(6), Poly.var("n"))
    ab = (Poly.var("n"), Poly.var("p"))
    given_back = set(lw.names.used)
    first = lets._allocation(lw, pack, True, ctx)
    lw.names.used = given_back          # what a discarded probe does with its names
    assert lets._allocation(lw, pack, True, ctx) == first   # the real lowering
    lets._allocation(lw, ab, True, ctx)
    names = list(lw.hoisted.values())
    assert len(names) == 2 and len(set(names)) == 2, lw.hoisted

