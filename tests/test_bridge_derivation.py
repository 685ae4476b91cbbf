"""Derivations through the bridge: open from an AST or a file, step, undo,
branch, finish, export."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.derivation import Derivation, StepError, StepOk, write_json_atomic
from verisched.pybridge.interp import evaluate
from verisched.pybridge.replay import replay_file
from verisched.pybridge.session import CoqSession

PIPELINE = parse_program(
    "tlet buf := GEN [ j < n ] f _[j] in "
    "GEN [ i < n ] (|[ 0 <=? (i - 1) ]| buf _[i - 1]) <+> (buf _[i])")
FUSED = parse_program("GEN [ i < n ] (|[ 0 <=? (i - 1) ]| f _[i - 1]) <+> (f _[i])")


def _ok(res: StepOk | StepError) -> StepOk:
    assert isinstance(res, StepOk), res.describe() if isinstance(res, StepError) else res
    return res


def test_derive_from_ast_to_qed(coq: CoqSession, tmp_path: Path) -> None:
    d = Derivation.from_program(coq, "vs_t_pipe", PIPELINE, {"f": 1}, ["n"])
    assert d.state.program is not None  # the program's name before reschedule
    s1 = _ok(d.run_tactic("reschedule."))
    assert s1.after.program == PIPELINE and s1.before.program != PIPELINE
    _ok(d.run_tactic("inline."))
    _ok(d.run_tactic("rw get_gen."))
    s4 = _ok(d.run_tactic("rw get_gen."))
    assert s4.after.program == FUSED
    assert s4.coq_seconds >= 0 and s4.bridge_seconds >= 0
    done = _ok(d.run_tactic("done."))
    assert done.after.finished
    verdict = d.finish()
    assert verdict.accepted, verdict.message
    assert not verdict.disallowed_axioms  # generic scalars: at most funext
    out = tmp_path / "trace.json"
    d.export_json(out)
    trace = json.loads(out.read_text())
    assert [s["tactic"] for s in trace["steps"]] == [
        "reschedule.", "inline.", "rw get_gen.", "rw get_gen.", "done."]
    assert parse_program(trace["steps"][3]["after"]["coq"]) == FUSED
    assert trace["verdict"]["accepted"] is True
    # the derived program means the same as the original
    f = np.arange(1.0, 8.0)
    np.testing.assert_array_equal(evaluate(PIPELINE, {"f": f}, {"n": 7}),
                                  evaluate(FUSED, {"f": f}, {"n": 7}))


def test_undo_and_branching(coq: CoqSession) -> None:
    d = Derivation.from_program(coq, "vs_t_branch", PIPELINE, {"f": 1}, ["n"])
    start = _ok(d.run_tactic("reschedule.")).after
    inlined = _ok(d.run_tactic("inline.")).after
    _ok(d.run_tactic("rw get_gen."))
    assert d.undo() == inlined
    assert d.state.program == inlined.program and len(d.steps) == 2
    # branch from an earlier handle: a different second step
    alt = _ok(d.run_tactic("rw get_gen.", state=inlined))
    assert alt.before == inlined
    back = _ok(d.run_tactic("idtac.", state=start))
    assert back.after.program == PIPELINE
    assert [s.tactic for s in d.steps] == ["reschedule.", "idtac."]
    d.abort()
    assert coq.proof_name == "Coq"


def test_side_goals_are_reported(coq: CoqSession) -> None:
    d = Derivation.from_program(coq, "vs_t_side", PIPELINE, {"f": 1}, ["n"])
    _ok(d.run_tactic("reschedule."))
    st = _ok(d.run_tactic("assert (n + 0 = n).")).after
    assert st.side_goals == ("(n + 0) = n",) or "n + 0" in st.side_goals[0]
    assert st.program == PIPELINE
    _ok(d.run_tactic("apply Z.add_0_r."))
    assert d.state.side_goals == ()
    d.abort()


def test_finish_rejects_incomplete_proof(coq: CoqSession) -> None:
    d = Derivation.from_program(coq, "vs_t_inc", PIPELINE, {"f": 1}, ["n"])
    _ok(d.run_tactic("reschedule."))
    verdict = d.finish()
    assert not verdict.accepted and verdict.message
    d.abort()


def test_shape_hypotheses_and_sizes(coq: CoqSession) -> None:
    prog = parse_program("GEN [ i < n ] SUM [ j < m ] w _[i] _[j]")
    d = Derivation.from_program(coq, "vs_t_hyp", prog, {"w": 2}, ["n", "m"],
                                hypotheses=["shaped [n; m] w", "0 < m"])
    assert _ok(d.run_tactic("reschedule.")).after.program == prog
    _ok(d.run_tactic("done."))
    assert d.finish().accepted


def test_replay_file_records_every_step(coq: CoqSession, repo: Path) -> None:
    res = replay_file(coq, repo / "coq" / "Examples" / "Pipeline.v", semantics=True)
    assert res.ok
    (rd,) = res.derivations
    assert rd.signature.sizes == ("n",) and rd.signature.tensors == {"f": 1}
    assert [s.tactic for s in rd.derivation.steps] == [
        "reschedule.", "inline.", "rw get_gen.", "rw get_gen.", "check_safe.", "done."]
    assert rd.derivation.steps[-3].after.program == FUSED
    assert rd.derivation.steps[-2].after.program == FUSED  # check_safe changes nothing
    assert rd.semantics[0] == PIPELINE  # `pipeline` unfolded
    assert coq.proof_name == "Coq"  # the file's definitions are gone again
    assert not coq.run("Check pipeline.").ok


def test_write_json_atomic_leaves_no_partial_file(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    write_json_atomic(out, {"a": 1})
    with pytest.raises(TypeError):
        write_json_atomic(out, {"a": object()})
    assert json.loads(out.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_finish_flags_a_derivation_resting_on_an_axiom(coq: CoqSession) -> None:
    start = coq.state
    coq.run_ok("Axiom vs_bad_axiom : forall (S : Type) (a b : S), a = b.")
    try:
        d = Derivation.from_program(coq, "vs_t_ax", PIPELINE, {"f": 1}, ["n"])
        _ok(d.run_tactic("reschedule."))
        # an unjustified step: the whole program becomes an arbitrary one
        _ok(d.run_tactic("rewrite (vs_bad_axiom _ _ (GEN [ i < n ] f _[ i ]))."))
        _ok(d.run_tactic("done."))
        verdict = d.finish()
        assert verdict.accepted
        assert "vs_bad_axiom" in verdict.axioms
        assert verdict.disallowed_axioms == ("vs_bad_axiom",)
    finally:
        coq.back_to(start)


def test_parse_axioms() -> None:
    from verisched.pybridge.derivation import parse_axioms

    out = ("Section Variables:\nn\n: Z\nAxioms:\n"
           "FunctionalExtensionality.functional_extensionality_dep : forall A, A\n"
           "ClassicalDedekindReals.sig_forall_dec\n  : forall P : nat -> Prop, P 0\n")
    assert parse_axioms(out) == ("FunctionalExtensionality.functional_extensionality_dep",
                                 "ClassicalDedekindReals.sig_forall_dec")
    assert parse_axioms("Closed under the global context") == ()


def test_write_json_atomic_gives_a_plain_files_mode(tmp_path: Path) -> None:
    # mkstemp's 0600 must not leak into the trace: same mode as open(path, "w").
    plain = tmp_path / "plain.json"
    plain.write_text("{}")
    out = tmp_path / "t.json"
    write_json_atomic(out, {"a": 1})
    assert out.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777
    out.chmod(0o640)  # an existing file keeps its mode
    write_json_atomic(out, {"a": 2})
    assert out.stat().st_mode & 0o777 == 0o640 and json.loads(out.read_text()) == {"a": 2}
