"""The autotuner (verisched.tune, `verisched tune`): a tiny-budget tune of matvec
finds a proved schedule whose `.v` coqc accepts, whose script reproduces it and
whose kernel matches numpy at sizes that are not tile multiples; resume does not
re-measure; an interrupt keeps the log; refusals are logged as refused; the Ray
path runs against a local instance.  Budgets are counts of candidates (`trials`),
never wall-clock thresholds."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, requires_coq

from verisched import pipeline
from verisched.schedule import ScheduleArgumentError, dsl
from verisched.schedule.coqfile import derived_name
from verisched.targets.auto import best_isa
from verisched.tune import log as tlog
from verisched.tune import tune

pytestmark = requires_coq

n, m = dsl.sizes("n m")
A, x = dsl.tensor("A", n, m), dsl.tensor("x", m)
MATVEC = dsl.program("matvec", dsl.gen("i", n, lambda i:
                                       dsl.sum("j", m, lambda j: A[i, j] * x[j])))
SIZES = {"n": 37, "m": 45}      # not multiples of any tile factor of the space
TILED = {"order": "i,j", "tile_at": 0, "tile_outer": 8, "tile_inner": 16, "unroll": 1}
# A sum over a generation: `tile` refuses it (reorder them first).
REFUSED = {"order": "j,i", "tile_at": 0, "tile_outer": 8, "tile_inner": 8, "unroll": 1}
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("tune")
    res = tune(MATVEC, target="c", sizes=SIZES, budget=None, trials=4, jobs=1, out_dir=out,
               enqueue=[TILED, REFUSED])
    return res


def test_finds_a_proved_schedule_that_coqc_accepts(run, tmp_path: Path) -> None:
    assert run.best is not None and run.best.status == "proved"
    assert run.best.median_s > 0
    assert run.coq is not None and run.coq.ok, run.coq
    # coqc's own leftovers (lia's cache, .vo, .glob) are not left in the output directory
    assert not [p.name for p in run.winner_v.parent.iterdir()
                if p.name == ".lia.cache" or p.suffix in (".vo", ".vok", ".vos", ".glob")]
    # checked again here, as the user would, on the file as written
    copy = tmp_path / run.winner_v.name
    shutil.copy(run.winner_v, copy)
    r = subprocess.run(["coqc", "-Q", str(REPO / "coq"), "Verisched", "-w",
                        "-notation-overridden", copy.name], capture_output=True, text=True,
                       timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert run.final.get("tuned") and run.final.get("untuned")
    assert run.plot is None or run.plot.is_file()


def test_log_has_one_line_per_candidate(run) -> None:
    lines = run.log.read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    assert len(recs) == len(run.records) == 4       # the untuned point, 2 enqueued, 1 more
    for r in recs:
        assert r["status"] in tlog.STATUSES
        assert {"params", "steps", "median_s", "timestamp", "ops"} <= set(r)
        if r["status"] == "proved":
            assert r["median_s"] > 0 and r["steps"][-1] == "done."
    assert recs[0]["ops"] == []       # the untuned program is measured first


def test_refused_candidate_is_logged_as_refused(run) -> None:
    refused = [r for r in run.records if r.params == REFUSED]
    assert len(refused) == 1 and refused[0].status == "refused"
    assert "tile" in refused[0].message and refused[0].median_s is None
    assert run.counters.refused >= 1


def test_every_proved_candidate_matches_numpy_off_tile_sizes(run, tmp_path: Path) -> None:
    tiled = [r for r in run.records if r.params == TILED]
    assert tiled and tiled[0].status == "proved"
    assert any(op[0] == "tile" for op in tiled[0].ops)
    rng = np.random.default_rng(3)
    from verisched.schedule.coqfile import standalone

    for k, rec in enumerate(r for r in run.records if r.status == "proved"):
        path = tmp_path / f"c{k}.v"
        path.write_text(standalone(MATVEC, rec.steps, closed=True))
        kern = pipeline.compile_derivation(path, derived_name(MATVEC), "c")
        for rows, cols in ((37, 45), (70, 9), (1, 1), (129, 200)):
            a = rng.standard_normal((rows, cols)).astype(np.float32)
            v = rng.standard_normal(cols).astype(np.float32)
            np.testing.assert_allclose(kern({"A": a, "x": v}, n=rows, m=cols),
                                       a.astype(np.float64) @ v, rtol=1e-4, atol=1e-4)


def test_script_reproduces_the_winner(run) -> None:
    r = subprocess.run([sys.executable, str(run.winner_py)], capture_output=True, text=True,
                       timeout=600, env=ENV, cwd=run.out_dir)
    assert r.returncode == 0, r.stderr
    again = run.winner_py.with_name("matvec_tuned_reproduced.v")
    assert again.read_text() == run.winner_v.read_text()


def test_resume_does_not_remeasure(run, tmp_path: Path) -> None:
    before = tlog.read(run.log)
    res = tune(MATVEC, target="c", sizes=SIZES, budget=None, trials=1, jobs=1,
               out_dir=tmp_path, resume=run.log, enqueue=[TILED, REFUSED])
    assert res.counters.resumed == len(before)
    new = tlog.read(res.log)
    assert [r.to_line() for r in new[:len(before)]] == [r.to_line() for r in before]
    # the known points (untuned, tiled, refused) are not candidates again
    assert res.counters.measured + res.counters.refused + res.counters.failed == 1
    assert len(new) == len(before) + 1
    for p in (TILED, REFUSED, before[0].params):
        assert sum(r.params == p for r in new) == 1


def test_a_resumed_log_says_what_it_skipped_and_a_file_that_is_no_log_is_refused(
        run, tmp_path: Path) -> None:
    """Records for other sizes were dropped without a word, so a resumed run looked
    like one that had found nothing to resume; an unreadable line was a Python
    warning with a source line; a file with no record (or not text) resumed nothing."""
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(run.log.read_text() + '{"broken\n')
    other = {"n": 38, "m": 45}
    res = tune(MATVEC, target="c", sizes=other, budget=None, trials=1, jobs=1,
               out_dir=tmp_path / "a", resume=mixed)
    assert res.counters.resumed == 0
    notes = " | ".join(res.notes)
    assert "skipped 1 line(s) that are no record" in notes and "mixed.jsonl:" in notes
    assert (f"0 of its {len(tlog.read(run.log))} records are for matvec on c at these "
            "sizes; not used: matvec on c at m=45,n=37") in notes
    for text, says in ((b"hello\n{}\n", "is not a tuning log: none of its lines is a "
                        "record"), (b"\xff\xfe\x00", "is not a tuning log (not UTF-8 text")):
        junk = tmp_path / "junk.jsonl"
        junk.write_bytes(text)
        with pytest.raises(ScheduleArgumentError, match="argument resume: .*" + re.escape(says)):
            tune(MATVEC, target="c", sizes=SIZES, budget=None, trials=1, jobs=1,
                 out_dir=tmp_path / "b", resume=junk)
        assert not (tmp_path / "b").exists()


def test_interrupt_keeps_the_log_and_the_best(tmp_path: Path) -> None:
    seen: list[int] = []

    def stop(rec: tlog.Record) -> None:
        seen.append(rec.number)
        if len(seen) == 2:
            raise KeyboardInterrupt

    res = tune(MATVEC, target="c", sizes=SIZES, budget=None, trials=10, jobs=1,
               out_dir=tmp_path, enqueue=[TILED], on_record=stop)
    assert res.stopped == "interrupted"
    assert len(tlog.read(res.log)) == 2
    assert res.best is not None and res.winner_v is not None and res.winner_v.is_file()


def test_cli_tune_and_its_errors(tmp_path: Path) -> None:
    exe = [sys.executable, "-m", "verisched.cli", "tune", str(REPO / "coq/Examples/Pipeline.v"),
           "--program", "fused"]
    r = subprocess.run(exe + ["--size", "n=1000", "--trials", "2", "--jobs", "1",
                              "-o", str(tmp_path)], capture_output=True, text=True,
                       timeout=600, env=ENV)
    assert r.returncode == 0, r.stderr
    assert "best: #" in r.stdout and "coqc accepted it" in r.stdout
    # the final comparison with the hand derivation (its median and range, and the ratio)
    assert "final timing (medians of" in r.stdout and ", hand " in r.stdout
    assert re.search(r"speed of tuned: (.*, )?[0-9.]+x hand", r.stdout), r.stdout
    assert "proved" in r.stderr and "refused" in r.stderr
    assert len((tmp_path / "fused.tune.jsonl").read_text().splitlines()) == 2
    # no --target: `native`, whose candidates may use this CPU's vector ISAs
    assert "tuned fused for native" in r.stdout
    if best_isa() != "c":
        used = [ln for ln in r.stdout.splitlines() if "candidates could use:" in ln]
        assert used and best_isa() in used[0].split(":", 2)[2], r.stdout
    bad = subprocess.run(exe + ["--trials", "1", "-o", str(tmp_path / "x")],
                         capture_output=True, text=True, timeout=600, env=ENV)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "no value for size n" in bad.stderr
    typo = subprocess.run(exe + ["--size", "n=1000,nn=10", "--trials", "1", "-o",
                                 str(tmp_path / "y")], capture_output=True, text=True,
                          timeout=600, env=ENV)
    assert typo.returncode == 1 and "Traceback" not in typo.stderr
    assert "fused has no size nn (its sizes: n; the hand derivation's: n" in typo.stderr
    assert not (tmp_path / "y").exists()
    # The simulator has no timing model: refused, naming the flag (an AttributeError
    # traceback once, after the replay); tune()'s argument names read as the flags.
    for extra, says in ((["--size", "n=7", "--target", "gemmini"],
                         "verisched tune: --target gemmini: it runs on a simulator"),
                        (["--size", "n=0"], "verisched tune: --size: n = 0: must be positive")):
        r = subprocess.run(exe + [*extra, "--trials", "1", "-o", str(tmp_path / "z")],
                           capture_output=True, text=True, timeout=600, env=ENV)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert says in r.stderr, r.stderr
        assert not (tmp_path / "z").exists()


@pytest.mark.parametrize("sizes, why", [
    ({"n": 0, "m": 4}, "n = 0: must be positive"),
    ({"n": -3, "m": 4}, "n = -3: must be positive"),
    ({"n": 5, "m": 2**31}, "m = 2147483648: must be positive (and fit in a C int)"),
    ({"n": 5}, "no value for m"),
    ({"n": 1, "m": 4}, "violate matvec2's hypothesis 2 <= n"),
    ({"n": 5, "m": 4, "N": 5}, "matvec2 has no size N (its sizes: "),
])
def test_sizes_no_kernel_takes_are_refused_before_anything_runs(
        tmp_path: Path, sizes: dict[str, int], why: str) -> None:
    """Every candidate's kernel would refuse them after its proof; numpy cannot even
    draw a negative extent.  So the search never starts, and writes nothing."""
    prog = dsl.program("matvec2", dsl.gen(
        "i", n, lambda i: dsl.sum("j", m, lambda j: A[i, j] * x[j])), assume=[n >= 2])
    out = tmp_path / "out"
    with pytest.raises(ScheduleArgumentError, match="argument sizes") as err:
        tune(prog, target="c", sizes=sizes, budget=None, trials=1, jobs=1, out_dir=out)
    assert why in str(err.value)
    assert not out.exists()
    # a hand schedule given as a function has the program's sizes, and no others
    with pytest.raises(ScheduleArgumentError, match="argument sizes") as err:
        tune(prog, target="c", sizes=sizes, budget=None, trials=1, jobs=1, out_dir=out,
             hand=lambda s: s.split("i", 4, "io", "ii"))
    assert why in str(err.value)


@pytest.mark.parametrize("kw, says", [
    ({"budget": float("nan")}, "argument budget: seconds above 0, not nan"),
    ({"budget": -1}, "argument budget: seconds above 0, not -1"),
    ({"trials": 0}, "argument trials: at least 1, not 0"),
    ({"trials": "2"}, "argument trials: an integer, not '2'"),
    ({"trials": 1, "jobs": 0}, "argument jobs: at least 1, not 0"),
    ({"trials": 1, "timeout": 0}, "argument timeout: seconds above 0, not 0"),
    ({"trials": 1, "seed": -1}, "argument seed: at least 0, not -1"),
])
def test_a_wrong_argument_is_named_before_a_worker_starts(kw: dict, says: str,
                                                          tmp_path: Path) -> None:
    """A NaN budget never ran out (the search went on until the space was exhausted),
    `trials=0` ran nothing without a word, `jobs=0` quietly meant one worker and
    `timeout=0` failed every candidate."""
    kw = {"budget": None, "jobs": 1, **kw}
    with pytest.raises(ScheduleArgumentError) as err:
        tune(MATVEC, target="c", sizes=SIZES, out_dir=tmp_path / "out", **kw)
    assert str(err.value) == f"tune: {says}"
    assert not (tmp_path / "out").exists()
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ScheduleArgumentError, match="argument out_dir: .* cannot be made a "
                       "directory"):
        tune(MATVEC, target="c", sizes=SIZES, budget=None, trials=1, out_dir=blocker / "x")


def test_ctrl_c_keeps_the_log_and_resume_continues(tmp_path: Path) -> None:
    """A real Ctrl-C (SIGINT to the command's process group) once two candidates are
    logged: the log is kept, the best so far reported (exit 130); `--resume` then
    continues from the log without measuring its candidates again."""
    exe = [sys.executable, "-m", "verisched.cli", "tune", str(REPO / "coq/Examples/Pipeline.v"),
           "--program", "fused", "--size", "n=1000", "--jobs", "1"]
    log = tmp_path / "a" / "fused.tune.jsonl"
    proc = subprocess.Popen(exe + ["--trials", "200", "-o", str(tmp_path / "a")], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if log.is_file() and len(log.read_text().splitlines()) >= 2:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "stopped by interrupted" in out and "Traceback" not in err
    kept = tlog.read(log)
    assert len(kept) >= 2
    r = subprocess.run(exe + ["--trials", "1", "--resume", str(log), "-o", str(tmp_path / "b")],
                       capture_output=True, text=True, timeout=600, env=ENV)
    assert r.returncode == 0, r.stderr
    again = tlog.read(tmp_path / "b" / "fused.tune.jsonl")
    assert [x.to_line() for x in again[:len(kept)]] == [x.to_line() for x in kept]
    assert len(again) == len(kept) + 1
    assert f"{len(kept)} from the resumed log" in r.stdout


@pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                    reason="ray is not installed (pip install 'verisched[ray]')")
def test_ray_local_instance(tmp_path: Path) -> None:
    res = tune(MATVEC, target="c", sizes=SIZES, budget=None, trials=2, jobs=1,
               out_dir=tmp_path, ray="auto", enqueue=[TILED])
    assert res.best is not None and res.coq is not None and res.coq.ok
    workers = {r.worker for r in res.records}
    assert workers and all(w and not w.endswith(f":{os.getpid()}") for w in workers)
    assert shutil.which("coqc")


def _default_sigint() -> None:
    """SIGINT at its default in the child: a suite started as a background job of a shell
    without job control inherits SIGINT ignored (POSIX), and Ctrl-C would then do
    nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_simulator_target_is_refused(tmp_path: Path) -> None:
    """The search ranks candidates by time; gemmini's simulator has no timing model."""
    with pytest.raises(ScheduleArgumentError, match="argument target: gemmini runs on a "
                       "simulator without a timing model"):
        tune(MATVEC, target="gemmini", sizes=SIZES, budget=None, trials=1, jobs=1,
             out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
