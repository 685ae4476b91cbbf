"""The coqtop session: prompt synchronisation, errors, undo, lifecycle."""

from __future__ import annotations

import os

import pytest

from verisched.pybridge.errors import ScriptSyntaxError
from verisched.pybridge.sentences import single_sentence, split_sentences
from verisched.pybridge.session import CoqSession


def test_split_sentences_comments_strings_bullets() -> None:
    src = '''(* a comment. with (* nested. *) periods. *)
Lemma x : 1 = 1.
Proof.
  - idtac "a. b"" c.". (* "tricky" comment *)
  + rw (sum_split _ 1).
  { exact (f_equal (fun x => x) eq_refl). }
  rewrite Z.add_0_r.
Qed.'''
    texts = [s.text for s in split_sentences(src)]
    assert texts == [
        "Lemma x : 1 = 1.", "Proof.", "-", 'idtac "a. b"" c.".', "+",
        "rw (sum_split _ 1).", "{", "exact (f_equal (fun x => x) eq_refl).", "}",
        "rewrite Z.add_0_r.", "Qed.",
    ]
    assert split_sentences(src)[1].line == 3


def test_multiline_sentence_is_one_sentence() -> None:
    s = split_sentences("Definition p :=\n  GEN [ i < n ]\n  f _[ i ].\nCheck p.")
    assert [x.text for x in s] == ["Definition p := GEN [ i < n ] f _[ i ].", "Check p."]


@pytest.mark.parametrize("bad", ["Check (1 + 2.", "Check 1", "(* never closed",
                                 'idtac "open.', "Check 1).", ])
def test_malformed_scripts_are_rejected(bad: str) -> None:
    with pytest.raises(ScriptSyntaxError):
        split_sentences(bad)


def test_single_sentence_refuses_two() -> None:
    with pytest.raises(ScriptSyntaxError, match="exactly one"):
        single_sentence("Check 1. Check 2.")


def test_run_output_and_errors_keep_state(coq: CoqSession) -> None:
    r = coq.run("Check (1 + 2).")
    assert r.ok and "1 + 2" in r.output and ": Z" in r.output
    before = coq.state
    bad = coq.run("Check undefined_thing_xyz.")
    assert not bad.ok and "undefined_thing_xyz" in bad.error
    assert coq.state == before  # Coq kept the last good state, and so do we
    assert coq.run("Definition vs_sess_a := 3.").ok
    assert coq.state > before


def test_back_to_undoes_exactly(coq: CoqSession) -> None:
    start = coq.state
    coq.run_ok("Definition vs_sess_b := 1.")
    assert coq.run("Check vs_sess_b.").ok
    coq.back_to(start)
    assert not coq.run("Check vs_sess_b.").ok


def test_several_sessions_are_independent(coq: CoqSession) -> None:
    with CoqSession() as other:
        other.run_ok("Definition vs_only_here := 5.")
        assert other.run("Check vs_only_here.").ok
        assert not coq.run("Check vs_only_here.").ok
        assert other.alive and coq.alive


def test_close_kills_the_process_group() -> None:
    s = CoqSession()
    s.start()
    pid = s._child.pid  # noqa: SLF001 - the test checks the process itself
    s.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    s.close()  # idempotent


def test_a_sentence_longer_than_a_pty_line_is_read_whole(coq: CoqSession) -> None:
    # The pty's canonical mode cut lines at 4,095 bytes: a longer sentence never reached
    # coqtop whole, and the session waited for its prompt until the timeout.
    body = " + ".join(["1"] * 3000)  # 11,997 characters
    r = coq.run(f"Definition vs_sess_long := ({body})%nat.", timeout=60)
    assert r.ok, r.error
    assert "3000" in coq.run_ok("Eval compute in vs_sess_long.").output
