"""Instructions the Python side does not know are read from Coq (pybridge/instrs.py).

A target's Coq file can define and register an instruction (`AtlInstr`); a derivation
calling it replays, parses and evaluates with no Python specification, because the
parser asks the session for the definition of an applied constant it does not know.
"""

from __future__ import annotations

import numpy as np
import pytest

from verisched.pybridge import instr_coq, instrs
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.errors import TermParseError
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import Instr

TWICE = ("Definition vs_toy_twice {S : Type} `{Scalar S} (v : Z -> S) (o : Z) : Z -> S := "
         "GEN [ l < 4 ] v _[ o + l ] <+> v _[ o + l ].")


@pytest.fixture()
def toy(coq):
    start = coq.state
    coq.run_ok(TWICE)
    coq.run_ok("#[global] Instance AtlInstr_vs_toy_twice : AtlInstr (@vs_toy_twice) := {}.")
    yield coq
    coq.back_to(start)
    instrs._REGISTRY.pop("vs_toy_twice", None)  # noqa: SLF001 - the test's own instruction


def test_an_unregistered_instruction_is_learned_from_coq(toy) -> None:
    text = "GEN [ i < 2 ] vs_toy_twice f (4 * i)"
    with pytest.raises(TermParseError):
        parse_program(text)  # no session resolving names: unknown
    with instr_coq.resolving_with(toy):
        e = parse_program(text)
    spec = instrs.lookup("vs_toy_twice")
    assert spec is not None and spec.doc == instrs.LEARNED and spec.lanes == 4
    assert [p.kind for p in spec.params] == [instrs.TENSOR, instrs.INDEX]
    assert isinstance(e.body, Instr)  # type: ignore[union-attr]
    f = np.arange(8.0)
    np.testing.assert_array_equal(evaluate(e, {"f": f}, {}, np.float64),
                                  (2 * f).reshape(2, 4))


def test_a_plain_definition_is_not_an_instruction(coq) -> None:
    start = coq.state
    coq.run_ok("Definition vs_not_instr {S : Type} `{Scalar S} (v : Z -> S) := v.")
    try:
        with instr_coq.resolving_with(coq), pytest.raises(TermParseError):
            parse_program("vs_not_instr f")
        assert instrs.lookup("vs_not_instr") is None
    finally:
        coq.back_to(start)


def test_learned_specifications_agree_with_the_targets(coq) -> None:
    """What Coq says of a registered instruction is what its target registered."""
    for name in ("avx2_fmadd", "avx512_maskload", "gemmini_matmul"):
        registered = instrs.lookup(name)
        printed = coq.run_ok(f"Print {name}.").output
        params, body = instr_coq.parse_coq_print(printed)
        assert instrs.same_spec(registered, params, body) is None, name
