"""The lowering's extension interface (codegen/hooks.py): a target plugs in its own
rules by implementing `TargetHooks`, without subclassing the core.

A toy target with a memory SCRATCH is built here from the C targets' rules
(`VectorRules`) plus its own `let_in_memory` and `let_ctype`; its kernels
must carry its marks in the C and still compute what the interpreter does
(and run clean under ASan+UBSan), so the hooks are consulted where the
interface says and the core's rules keep working around them.
"""

from __future__ import annotations

import numpy as np
import pytest

from verisched.codegen.core import Lowering
from verisched.codegen.errors import LowerError
from verisched.codegen.hooks import LetBody, TargetHooks
from verisched.codegen.ir import Ctx, Dest, Emitter
from verisched.codegen.lower import lower
from verisched.codegen.vector import VectorRules
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import Expr, Instr, IVar, Let, Mem
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target


class ScratchRules:
    """The C target's rules, plus lets in memory SCRATCH: DRAM buffers of doubles,
    announced by a comment (what a target with its own memory would allocate)."""

    def __init__(self, core: Lowering) -> None:
        self.core = core
        self.base = VectorRules(core, None)
        self.scratch: set[str] = set()
        self.consulted: list[str] = []

    def meaning(self, e: Instr) -> Expr:
        return self.base.meaning(e)

    def lower_term(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter
                   ) -> bool | None:
        self.consulted.append("lower_term")
        return self.base.lower_term(e, dest, mode, ctx, out)

    def scalar_term(self, e: Expr, ctx: Ctx, out: Emitter) -> str | None:
        self.consulted.append("scalar_term")
        return None

    def let_in_memory(self, e: Let, ctx: Ctx, out: Emitter, body: LetBody) -> bool | None:
        assert isinstance(e.value, Mem)
        if e.value.memory != "SCRATCH":
            return self.base.let_in_memory(e, ctx, out, body)
        out.line(f"/* {e.var} in SCRATCH */")
        self.scratch.add(e.var)
        return self.core.with_let(Let(e.var, e.value.body, e.body), ctx, out, body)

    def let_ctype(self, var: str) -> str | None:
        return "double" if var in self.scratch else None

    def zero_fill(self, dest: Dest, ctx: Ctx, out: Emitter) -> bool:
        self.consulted.append("zero_fill")
        return False


def test_a_target_plugs_in_through_the_hooks() -> None:
    prog = parse_program("tlet t := in_mem SCRATCH (GEN [ i < n ] A _[ i ] * A _[ i ]) in "
                         "GEN [ i < n + 2 ] |[ i <? n ]| GEN [ j < 2 ] "
                         "(t _[ i ] + A _[ i - j ])")
    made: list[ScratchRules] = []

    def hooks(core: Lowering) -> TargetHooks:
        made.append(ScratchRules(core))
        return made[0]

    env = {"A": (IVar("n"),)}
    k = lower(prog, env, name="scratch", hooks=hooks)
    text = "\n".join(k.body)
    assert "/* t in SCRATCH */" in text
    assert "double *t = " in text or "double t[" in text
    assert {"lower_term", "scalar_term", "zero_fill"} <= set(made[0].consulted)
    # The same program without the marker lowers as before: a float buffer, no comment.
    plain = "\n".join(lower(parse_program(
        "tlet t := GEN [ i < n ] A _[ i ] * A _[ i ] in GEN [ i < n + 2 ] |[ i <? n ]| "
        "GEN [ j < 2 ] (t _[ i ] + A _[ i - j ])"), env, name="plain").body)
    assert "SCRATCH" not in plain and "double" not in plain
    target = get_target("c")
    kernel = build([k], target)["scratch"]
    exe = build_sanitized([k], target)
    rng = np.random.default_rng(3)
    for n in (1, 5, 40):
        a = rng.uniform(-2, 2, n).astype(np.float32)
        want = evaluate(prog, {"A": a.astype(np.float64)}, {"n": n}, np.float64)
        np.testing.assert_allclose(kernel({"A": a}, n=n), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(run_sanitized(exe, k, {"A": a}, {"n": n}, want.shape), want,
                                   rtol=1e-5, atol=1e-6)


def test_the_c_targets_refuse_an_unknown_memory_by_name() -> None:
    prog = parse_program("tlet t := in_mem SCRATCH (GEN [ i < n ] A _[ i ]) in "
                         "GEN [ i < n ] t _[ i ]")
    with pytest.raises(LowerError, match="let t is placed in memory SCRATCH, which target c"):
        lower(prog, {"A": (IVar("n"),)}, name="k")
