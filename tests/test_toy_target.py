"""docs/architecture.md's worked example, run as written: a toy target with one
instruction, its Coq definition, its Python module, and the pipeline using it."""

from __future__ import annotations

import re
import types

import numpy as np
import pytest
from conftest import REPO

from verisched import pipeline
from verisched.codegen.errors import LowerError
from verisched.pybridge import instrs
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.instr_coq import resolving_with
from verisched.pybridge.terms import IVar
from verisched.targets.base import Target

DOC = (REPO / "docs" / "architecture.md").read_text()
SECTION = DOC[DOC.index("## Adding a target"):DOC.index("## Tests and benchmarks")]
COQ = re.search(r"```coq\n(.*?)```", SECTION, re.S).group(1)  # type: ignore[union-attr]
PY = re.search(r"```python\n(.*?)```", SECTION, re.S).group(1)  # type: ignore[union-attr]

# GEN [i < n] toy_fma (a[i]) (b[i]) (c[i])
PROGRAM = "GEN [ i < n ] toy_fma (a _[ i ]) (b _[ i ]) (c _[ i ])"


@pytest.fixture()
def toy(coq):
    """The Coq file in the session, the module imported, the instruction forgotten after."""
    start = coq.state
    for sentence in re.findall(r"[^.]*?(?:\.\s|\.$)", COQ.replace("From Verisched Require "
                                                                 "Import ATL.", "")):
        if sentence.strip():
            coq.run_ok(sentence.strip())
    module = types.ModuleType("verisched_toy_target")
    exec(compile(PY, "docs/architecture.md", "exec"), module.__dict__)  # noqa: S102
    yield coq, module.TARGET
    coq.back_to(start)
    instrs._REGISTRY.pop("toy_fma", None)  # noqa: SLF001 - the example's own instruction


def test_the_documented_toy_target_works(toy) -> None:
    coq, target = toy
    assert isinstance(target, Target) and target.families == ("toy",)
    with resolving_with(coq):  # step 1: read from Coq, no Python specification
        prog = parse_program(PROGRAM)
    env = {t: (IVar("n"),) for t in "abc"}
    checked = pipeline.check(pipeline.from_ast(prog, env, name="toyk", prove=False),
                             unsafe=True)
    lowered = pipeline.lower(checked, target)  # step 2: its rules
    src = pipeline.render(lowered)
    assert "__builtin_fmaf(" in src.c
    kernel = pipeline.build(src)["toyk"]
    rng = np.random.default_rng(0)
    ins = {t: rng.standard_normal(7).astype(np.float32) for t in "abc"}
    np.testing.assert_allclose(kernel(ins, n=7), ins["a"] * ins["b"] + ins["c"], rtol=1e-6)
    with pytest.raises(LowerError, match="which target c does not provide"):
        pipeline.lower(checked, "c")


def test_the_documented_coq_file_proves_bounds_through_the_instruction(toy) -> None:
    coq, _ = toy
    from verisched.pybridge.derivation import Derivation

    with resolving_with(coq):
        prog = parse_program(PROGRAM)
        d = Derivation.from_program(coq, "vs_toy_safe", prog, {t: 1 for t in "abc"}, ["n"],
                                    [f"shaped [n] {t}" for t in "abc"])
        for tactic in ("reschedule.", "check_safe.", "done."):
            res = d.run_tactic(tactic)
            assert not hasattr(res, "message"), getattr(res, "message", "")
        assert d.finish().accepted
