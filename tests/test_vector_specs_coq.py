"""Every AVX2 / AVX-512 specification of the registry (pybridge/instrs.py), float32 and
float64 lanes (the pd families, decision #154), is
Coq's own definition (coq/Targets/AVX.v), up to renaming: printed through the
bridge, parsed, and compared.  The interpreter evaluates calls by these
templates, so this is what makes the Python meaning of an instruction the
proved one."""

from __future__ import annotations

import re

import pytest

from verisched.pybridge.coqterm import to_coq
from verisched.pybridge.instr_coq import parse_coq_print
from verisched.pybridge.instrs import (
    TENSOR,
    InstrSpec,
    Param,
    registered,
    result_rank,
    same_spec,
)
from verisched.pybridge.terms import Gen, Get, IConst, IVar, Var

AVX = sorted(n for n, s in registered().items()
             if s.family in ("avx2", "avx512", "avx2pd", "avx512pd"))


def test_every_contract_instruction_is_registered() -> None:
    """The registry's AVX2 / AVX-512 names are exactly the instructions AVX.v
    defines (17 of each family: #143's three-bound masks, #151's reduce_add; #154's
    avx2pd and avx512pd)."""
    from conftest import REPO

    text = (REPO / "coq" / "Targets" / "AVX.v").read_text()
    defined = sorted(re.findall(r"^Definition ((?:avx2|avx512)(?:pd)?_\w+)", text, re.M))
    assert AVX == defined
    assert len(AVX) == 68


def test_templates_are_coqs_definitions(coq) -> None:
    for name in AVX:
        r = coq.run_ok(f"Print {name}.")
        params, body = parse_coq_print(r.output)
        why = same_spec(registered()[name], params, body)
        assert why is None, f"{name}: {why}\nCoq printed: {r.output}"


def test_templates_elaborate_in_coq(coq) -> None:
    """Printed back, each template is accepted by Coq as equal to the instruction."""
    for name in AVX:
        spec = registered()[name]
        if "max" in name:
            continue  # needs the ScalarMax instance of a concrete type; covered above
        binders = " ".join(
            f"({p.name} : {'Z' if p.kind == 'index' else 'Z -> R' if p.kind == TENSOR else 'R'})"
            for p in spec.params)
        args = " ".join(p.name for p in spec.params)
        coq.run_ok("From Coq Require Import Reals.")
        result = "R" if result_rank(spec) == 0 else "Z -> R"   # reduce_add: a scalar
        r = coq.run(f"Check (fun {binders} => (eq_refl : @eq ({result}) ({name} {args}) "
                    f"{to_coq(spec.body)})).")
        assert r.ok, f"{name}: {r.error}"


def test_a_wrong_template_is_caught(coq) -> None:
    r = coq.run_ok("Print avx2_loadu.")
    params, body = parse_coq_print(r.output)
    wrong = InstrSpec("avx2_loadu", (Param("v", TENSOR, 1), Param("o", "index")),
                      Gen("l", IConst(0), IConst(8), Get(Var("v"), IVar("l"))), "avx2", 8)
    assert "bodies differ" in (same_spec(wrong, params, body) or "")
    swapped = InstrSpec("avx2_loadu", (Param("o", "index"), Param("v", TENSOR, 1)),
                        wrong.body, "avx2", 8)
    assert "parameters differ" in (same_spec(swapped, params, body) or "")


@pytest.mark.parametrize("text", [
    "f = fun (S : Type) (H : Scalar S) (H0 : ScalarMax S) (a b : Z -> S) => "
    "GEN [ l < 8 ] smax a _[l] b _[l]\n     : forall S : Type, S\n",
])
def test_parse_coq_print_offline(text: str) -> None:
    params, body = parse_coq_print(text)
    assert [(p.name, p.kind, p.rank) for p in params] == [("a", TENSOR, 1), ("b", TENSOR, 1)]
    assert same_spec(registered()["avx2_max"], params, body) is None
