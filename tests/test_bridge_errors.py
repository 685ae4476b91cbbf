"""Bad input and broken processes, by failure mode.

Each failure must come back as the right kind: a typed exception for a
missing or broken Coq, a `StepError` carrying Coq's own message for a
tactic Coq rejects, a parse error naming the place for malformed text.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.derivation import Derivation, StepError, StepOk
from verisched.pybridge.errors import (
    BridgeError,
    CoqCrashedError,
    CoqNotFoundError,
    CoqTimeoutError,
    LibraryNotBuiltError,
    ScriptSyntaxError,
    TermParseError,
)
from verisched.pybridge.replay import replay_file
from verisched.pybridge.session import CoqSession
from verisched.pybridge.terms import IBin, IConst, IVar, Let, Var, gen, get

PIPELINE = Let("buf", gen("j", "n", get(Var("f"), "j")), gen("i", "n", get(Var("buf"), "i")))


# -- startup ------------------------------------------------------------------


def test_coqtop_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CoqNotFoundError, match="apt-get install coq"):
        CoqSession().start()


def test_library_not_built_says_make_proofs(tmp_path: Path) -> None:
    (tmp_path / "coq").mkdir()
    (tmp_path / "coq" / "ATL.v").write_text("(* sources only, never compiled *)\n")
    with pytest.raises(LibraryNotBuiltError, match="make proofs"):
        CoqSession(tmp_path).start()


def test_library_vo_without_dependencies_is_not_built(tmp_path: Path) -> None:
    # ATL.vo exists but the modules it needs do not: loading fails inside Coq.
    (tmp_path / "coq").mkdir()
    (tmp_path / "coq" / "ATL.vo").write_bytes(b"not a vo file")
    with pytest.raises(LibraryNotBuiltError, match="make proofs"):
        CoqSession(tmp_path).start()


# -- tactics Coq rejects --------------------------------------------------------


@pytest.fixture()
def deriv(coq: CoqSession) -> Iterator[Derivation]:
    d = Derivation.from_program(coq, "vs_err_pipe", PIPELINE, {"f": 1}, ["n"])
    assert isinstance(d.run_tactic("reschedule."), StepOk)
    yield d
    d.abort()


def test_unknown_lemma_is_a_step_error(deriv: Derivation) -> None:
    before = deriv.state
    res = deriv.run_tactic("rw no_such_lemma_xyz.")
    assert isinstance(res, StepError)
    assert "no_such_lemma_xyz" in res.message and "not found" in res.message
    assert res.tactic == "rw no_such_lemma_xyz."
    assert deriv.state == before
    # the derivation goes on from the same state
    assert isinstance(deriv.run_tactic("inline."), StepOk)
    deriv.undo()


def test_unprovable_side_condition_is_a_step_error(deriv: Derivation) -> None:
    # sum_split needs lo <= k <= hi; there is no SUM and no site at all here
    res = deriv.run_tactic("rw (sum_split _ 1).")
    assert isinstance(res, StepError)
    assert "no site" in res.message
    assert res.step == len(deriv.steps) + 1


def test_side_condition_that_cannot_be_proved(coq: CoqSession) -> None:
    # get_gen needs the index in range; i + 1 < n is false for i = n - 1
    prog = gen("i", "n", get(gen("j", "n", get(Var("f"), "j")), IBin("+", IVar("i"), IConst(1))))
    d = Derivation.from_program(coq, "vs_err_side", prog, {"f": 1}, ["n"])
    try:
        assert isinstance(d.run_tactic("reschedule."), StepOk)
        res = d.run_tactic("rw get_gen.")
        assert isinstance(res, StepError)
        assert "no site" in res.message
        assert "site:" in res.details and "unproved side condition" in res.details
        assert d.state.program == prog
    finally:
        d.abort()


def test_failing_tactic_keeps_program(deriv: Derivation) -> None:
    prog = deriv.state.program
    res = deriv.run_tactic("inline no_such_definition.")
    assert isinstance(res, StepError)
    assert deriv.state.program == prog
    assert isinstance(deriv.run_tactic("idtac."), StepOk)
    deriv.undo()


def test_malformed_tactic_is_rejected_before_coq(deriv: Derivation) -> None:
    with pytest.raises(ScriptSyntaxError):
        deriv.run_tactic("rw (get_gen.")
    with pytest.raises(ScriptSyntaxError):
        deriv.run_tactic("inline. inline.")


def test_syntax_error_from_coq_is_a_step_error(deriv: Derivation) -> None:
    res = deriv.run_tactic("rw get_gen at at.")
    assert isinstance(res, StepError) and "Syntax error" in res.message


@pytest.mark.parametrize("text", [
    "GEN [ i < n ] f i",                 # application of a variable: not ATL
    "GEN [ i < n ] f _[ Z.opp i ]",     # unsupported index function
    "GEN [ i < n f _[ i ]",             # unbalanced
    "tlet x := in x",
    "SUM [ i < n ] f _[ i ] $",
])
def test_malformed_terms_raise_parse_errors(text: str) -> None:
    with pytest.raises(TermParseError):
        parse_program(text)


def test_replay_refuses_a_session_inside_a_proof(deriv: Derivation, tmp_path: Path) -> None:
    src = tmp_path / "Any.v"
    src.write_text("Check 1.\n")
    with pytest.raises(BridgeError, match="inside proof"):
        replay_file(deriv.session, src)


def test_replay_reports_failing_step(coq: CoqSession, tmp_path: Path) -> None:
    src = tmp_path / "Bad.v"
    src.write_text(
        "From Coq Require Import ZArith.\nFrom Coq Require Import derive.Derive.\n"
        "From Verisched Require Import ATL.\nOpen Scope Z_scope. Open Scope atl_scope.\n"
        "Section Bad.\n  Context {S : Type} `{ScalarLaws S}.\n"
        "  Variables (n : Z) (f : Z -> S).\n"
        "  Definition p := GEN [ i < n ] f _[ i ].\n"
        "  Derive q SuchThat (p = q) As q_correct.\n  Proof.\n"
        "    reschedule.\n    rw sum_swap.\n    done.\n  Qed.\nEnd Bad.\n")
    res = replay_file(coq, src)
    (rd,) = res.derivations
    assert rd.error is not None and rd.error.step == 2
    assert rd.error.tactic == "rw sum_swap." and "line 12" in rd.error.message
    assert not res.ok


def test_replay_of_malformed_file(coq: CoqSession, tmp_path: Path) -> None:
    src = tmp_path / "Broken.v"
    src.write_text("Definition x := (1 + 2.\n")
    with pytest.raises(ScriptSyntaxError, match="line 1"):
        replay_file(coq, src)


# -- broken processes ----------------------------------------------------------


def test_timeout_is_distinct_and_session_survives() -> None:
    with CoqSession(timeout=60) as s:
        s.run_ok("Goal True.")
        with pytest.raises(CoqTimeoutError) as info:
            s.run("let rec loop n := idtac; loop n in loop 1.", timeout=1.0)
        assert info.value.recovered and info.value.timeout == 1.0
        assert s.run("exact I.").ok  # same state as before the runaway tactic


def test_killed_coqtop_raises_crashed() -> None:
    s = CoqSession()
    s.start()
    os.kill(s._child.pid, signal.SIGKILL)  # noqa: SLF001
    with pytest.raises(CoqCrashedError) as info:
        s.run("Check 1.")
    assert info.value.exit_status == 137 and "SIGKILL" in str(info.value)
    with pytest.raises(CoqCrashedError, match="closed"):
        s.run("Check 1.")
    s.close()


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_no_coqtop_survives_an_interrupted_python(how: int) -> None:
    code = (
        "import sys, time\n"
        "from verisched.pybridge.session import CoqSession\n"
        "s = CoqSession(); s.start()\n"
        "print(s._child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    # SIGINT at its default in the child even where the suite was started as a background
    # job of a shell without job control, which starts with SIGINT ignored (POSIX)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         preexec_fn=_default_sigint)
    assert p.stdout is not None
    pid = int(p.stdout.readline())
    os.kill(pid, 0)  # coqtop is alive
    p.send_signal(how)
    p.wait(timeout=30)
    for _ in range(100):  # the kernel reaps asynchronously; poll, no threshold asserted
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        if _is_zombie(pid):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"coqtop {pid} survived its Python process")


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def test_replay_timeout_leaves_session_usable(repo: Path, tmp_path: Path) -> None:
    # A step that runs past its limit: the replay stops with the place and
    # the work done, and the same session replays the next file normally.
    src = tmp_path / "Slow.v"
    src.write_text(
        "From Coq Require Import ZArith.\nFrom Coq Require Import derive.Derive.\n"
        "From Verisched Require Import ATL.\nOpen Scope Z_scope. Open Scope atl_scope.\n"
        "Section Slow.\n  Context {S : Type} `{ScalarLaws S}.\n"
        "  Variables (n : Z) (f : Z -> S).\n"
        "  Definition p := GEN [ i < n ] f _[ i ].\n"
        "  Derive q SuchThat (p = q) As q_correct.\n  Proof.\n    reschedule.\n"
        "    let x := eval cbv in (Pos.iter (fun u : unit => u) tt 1000000000000%positive)"
        " in idtac.\n    done.\n  Qed.\nEnd Slow.\n")
    with CoqSession(timeout=4) as s:
        start = s.state
        with pytest.raises(CoqTimeoutError) as info:
            replay_file(s, src)
        assert info.value.recovered
        assert str(info.value).startswith(f"{src}:12: derivation q, step 2: timeout after 4 s")
        (rd,) = info.value.partial.derivations
        assert [st.tactic for st in rd.derivation.steps] == ["reschedule."]
        assert s.alive and s.proof_name == "Coq" and s.state == start
        assert replay_file(s, repo / "coq" / "Examples" / "Pipeline.v").ok


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
