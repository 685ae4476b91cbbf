"""What `tune` reports about its measurements: no speedup claimed where the best
candidate is the program as written (its ratio to itself is noise), the spread of the
final rounds, the OpenMP threads of the search and of the final timing, a note where
the final timing on more threads is far slower than the search (the team waited for
busy cores), and a resumed log reused only where it was timed on this CPU with the
same team (audit, decision #138).  Built from records: no kernel is timed here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verisched.targets.cpu import cpu_model
from verisched.tune import log as tlog
from verisched.tune.api import TuneResult, _resumed
from verisched.tune.search import Counters


def _rec(number: int, ops: list, median: float, **kw) -> tlog.Record:
    return tlog.Record(number, {"p": number}, {}, ops, ["reschedule."], [], "proved",
                       median_s=median, program="mv", target="openmp", sizes={"n": 5}, **kw)


def _result(best: tlog.Record, records: list[tlog.Record], final: dict, threads=(1, 2)
            ) -> TuneResult:
    res = TuneResult("mv", "openmp", {"n": 5}, best, records, Counters(), "trials",
                     Path("mv.tune.jsonl"), Path("."))
    res.final = final
    res.final_spread = {k: (v * 0.9, v * 1.2) for k, v in final.items()}
    res.threads = threads
    return res


def test_no_speedup_is_claimed_when_the_untuned_program_won() -> None:
    untuned = _rec(0, [], 1e-3)
    res = _result(untuned, [untuned], {"tuned": 0.6e-3, "untuned": 0.8e-3, "hand": 0.7e-3})
    text = res.summary()
    assert "the best candidate is the untuned program (no directive): no schedule beat it" in text
    assert "x untuned" not in text
    assert ("final timing (medians of 5 interleaved rounds, their range in parentheses): "
            "tuned 0.6 ms (0.54-0.72), untuned 0.8 ms (0.72-0.96), hand 0.7 ms (0.63-0.84)"
            in text)
    assert "speed of tuned: 1.17x hand (the ranges overlap: within the noise)" in text
    assert "timing threads: 1 in the search" in text and "2 in the final timing" in text


def test_a_tuned_winner_is_compared_with_its_spread() -> None:
    untuned, tiled = _rec(0, [], 2e-3), _rec(1, [["tile"]], 1e-3)
    res = _result(tiled, [untuned, tiled], {"tuned": 1e-3, "untuned": 2e-3}, (None, None))
    text = res.summary()
    assert "tuned 1 ms (0.9-1.2), untuned 2 ms (1.8-2.4)" in text
    assert "speed of tuned: 2.00x untuned\n" in text + "\n"   # the ranges do not overlap
    assert "timing threads" not in text   # a serial target
    assert res.stall_notes() == []


def test_a_final_timing_far_slower_on_more_threads_is_flagged() -> None:
    """The audit's run: 0.015 ms in the search on 1 thread, 7.99 ms in the final
    timing on 2 (a 2-thread team on a busy 2-core machine), reported as a 2.00x win."""
    untuned, fused = _rec(0, [], 0.0465e-3), _rec(1, [["inline"]], 0.0149e-3)
    res = _result(fused, [untuned, fused], {"tuned": 7.987e-3, "untuned": 15.98e-3})
    notes = res.stall_notes()
    assert len(notes) == 2 and notes[0].startswith("tuned: 536x slower in the final timing")
    assert "on 2 threads (7.987 ms) than in the search on 1 (0.0149 ms)" in notes[0]
    assert "measure the machine's load" in notes[0]
    # the same kernel as fast as in the search: nothing to say
    calm = _result(fused, [untuned, fused], {"tuned": 0.012e-3, "untuned": 0.04e-3})
    assert calm.stall_notes() == []


def test_resume_reuses_medians_only_from_this_cpu_and_team(tmp_path: Path) -> None:
    from verisched.schedule import dsl

    (n,) = dsl.sizes("n")
    x = dsl.tensor("x", n)
    prog = dsl.program("mv", dsl.gen("i", n, lambda i: x[i]))
    here = cpu_model()
    log = tmp_path / "mv.tune.jsonl"
    recs = [_rec(0, [], 1e-3, cpu=here, threads=1), _rec(1, [], 1e-3, cpu="Some Other CPU",
                                                          threads=1),
            _rec(2, [], 1e-3, cpu=here, threads=4), _rec(3, [], 1e-3)]
    for r in recs:
        tlog.append(log, r)
    use, notes = _resumed(log, prog, "openmp", {"n": 5}, threads=1)
    assert [r.number for r in use] == [0, 3]
    said = " | ".join(notes)
    assert "1 timed on another CPU (Some Other CPU)" in said
    assert "1 timed with 4 OpenMP thread(s), this run times with 1" in said
    assert "1 record(s) do not say on which CPU they were timed" in said
    # a serial target: the team does not matter
    use, _ = _resumed(log, prog, "openmp", {"n": 5}, threads=None)
    assert [r.number for r in use] == [0, 2, 3]


SCALAR_V = """
From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.
Section T.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (alpha : S) (x : Z -> S).
  Hypothesis Hx : shaped [n] x.
  Definition sc := GEN [ i < n ] alpha * x _[ i ].
  Derive sc_d SuchThat (sc = sc_d) As sc_d_correct.
  Proof. reschedule. check_safe. done. Qed.
End T.
"""


def test_a_scalar_input_needs_no_shape_hypothesis(tmp_path: Path) -> None:
    """`tune FILE.v --program NAME` refused a scalar without `shaped [] alpha`, which
    `search` accepts: a scalar has no extent to state."""
    import shutil

    import pytest

    from verisched.tune.api import program_of

    if shutil.which("coqtop") is None:
        pytest.skip("needs coqtop")
    v = tmp_path / "S.v"
    v.write_text(SCALAR_V)
    prog = program_of(v, "sc_d")
    assert dict(prog.inputs) == {"alpha": (), "x": prog.inputs[1][1]} and prog.sizes == ("n",)


def test_a_plot_of_one_candidate_shows_it(tmp_path) -> None:
    """One candidate timed: a step line through one point drew nothing (a blank plot);
    the point is marked, in the line's colour."""
    pytest.importorskip("matplotlib")
    import matplotlib.image as mpimg

    from verisched.tune.log import Record
    from verisched.tune.output import plot

    r = Record(0, {}, {}, [], [], [], "proved", median_s=0.002, elapsed_s=3.0)
    path = plot(tmp_path, [r], "one", None)
    rgb = mpimg.imread(path)[..., :3]
    blue = np.array([0x1f, 0x77, 0xb4]) / 255  # matplotlib's first colour (C0)
    near = np.abs(rgb - blue).max(axis=-1) < 0.08
    assert near[:, : int(rgb.shape[1] * 0.6)].sum() > 5  # beside the legend's sample
