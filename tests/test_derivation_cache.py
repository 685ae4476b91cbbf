"""The cache of checked derivations (pipeline/cache.py) and the progress of replays.

The cache must never be wrong: a second load of an unchanged file starts no Coq
session, any edit of the file (a comment included) replays it, a corrupted entry is
evicted and replayed, and VERISCHED_NO_CACHE=1 or `cache=False` turn it off.  The
commands check their arguments before any replay and report replay steps on stderr.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
from pathlib import Path

import pytest
from conftest import requires_coq

from verisched import pipeline
from verisched.commands.common import Progress
from verisched.pipeline import cache, derive
from verisched.pybridge import instrs
from verisched.pybridge.terms import Instr, Var, gen, get

SOURCE = """
From Coq Require Import ZArith List.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL Rewrites.Normalize.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Rows.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (f : Z -> Z -> S).
  Hypothesis Hf : shaped [n; m] f.
  Hypothesis Hn : 1 <= n.

  Definition pipeline_rows :=
    tlet buf := GEN [ j < n ] f _[ j ] in
    GEN [ i < n ] (|[ 0 <=? i - 1 ]| buf _[ i - 1 ]) <+> buf _[ i ].

  Derive rows_fused SuchThat (pipeline_rows = rows_fused) As rows_fused_correct.
  Proof. reschedule. inline. rw get_gen. rw get_gen. normalize. check_safe. done. Qed.

  Derive rows_copy SuchThat (pipeline_rows = rows_copy) As rows_copy_correct.
  Proof. reschedule. inline. rw get_gen. rw get_gen. normalize. check_safe. done. Qed.
End Rows.
"""


@pytest.fixture
def vfile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A derivation file, with a private cache directory."""
    monkeypatch.setenv("VERISCHED_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VERISCHED_NO_CACHE", raising=False)
    p = tmp_path / "Rows.v"
    p.write_text(SOURCE)
    return p


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the Coq sessions the pipeline starts."""
    started: list[int] = []
    real = derive.CoqSession

    class Counting(real):  # type: ignore[misc, valid-type]
        def start(self) -> None:
            started.append(1)
            super().start()

    monkeypatch.setattr(derive, "CoqSession", Counting)
    return started


def _untimed(dp: pipeline.DerivedProgram) -> pipeline.DerivedProgram:
    """`dp` without its trace's timings (the one thing two replays differ in)."""
    def strip(x: object) -> object:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if not k.endswith("_seconds")}
        return [strip(v) for v in x] if isinstance(x, list) else x
    return dataclasses.replace(dp, trace=strip(dp.trace))


def _entries() -> list[Path]:
    return sorted(cache.cache_dir().glob("*.json"))


@requires_coq
def test_second_load_starts_no_coq_and_gives_the_same_program(vfile, starts):
    first = pipeline.load(vfile, "rows_fused")
    assert len(starts) == 1 and len(_entries()) == 1
    # The timeout is not part of the key: it changes whether a replay ends, not its result.
    second = pipeline.load(vfile, "rows_fused", timeout=17.0)
    assert len(starts) == 1
    assert second == first
    # ... and it builds and runs the same kernel.
    k = pipeline.compile_derivation(vfile, "rows_fused", "c")
    assert len(starts) == 1
    assert k.name == "rows_fused"


@requires_coq
def test_an_edit_of_the_file_replays_it(vfile, starts):
    pipeline.load(vfile, "rows_fused")
    vfile.write_text(SOURCE + "\n(* only a comment changed *)\n")
    pipeline.load(vfile, "rows_fused")
    assert len(starts) == 2
    # A real change is seen: the derivation now fails, and nothing stale is served.
    vfile.write_text(SOURCE.replace("rw get_gen. rw get_gen. normalize. check_safe. done. Qed."
                                    "\n\n  Derive rows_copy",
                                    "rw no_such_lemma. done. Qed.\n\n  Derive rows_copy"))
    with pytest.raises(pipeline.DerivationError, match="no_such_lemma"):
        pipeline.load(vfile, "rows_fused")
    assert len(starts) == 3


@requires_coq
def test_a_corrupted_entry_is_evicted_and_replayed(vfile, starts):
    good = pipeline.load(vfile, "rows_fused")
    [entry] = _entries()
    for bad in ("{not json", json.dumps({"schema": cache.SCHEMA, "key": entry.stem,
                                         "name": "rows_fused", "value": {"$c": "os.system",
                                                                         "f": {}},
                                         "instructions": []}), ""):
        entry.write_text(bad)
        again = pipeline.load(vfile, "rows_fused")
        assert again.expr == good.expr and again.sizes == good.sizes
        assert json.loads(entry.read_text())["name"] == "rows_fused"  # rewritten, valid
    assert len(starts) == 4


@requires_coq
def test_the_cache_can_be_turned_off(vfile, starts, monkeypatch):
    pipeline.load(vfile, "rows_fused", cache=False)
    assert not _entries()
    pipeline.load(vfile, "rows_fused")
    pipeline.load(vfile, "rows_fused", cache=False)
    assert len(starts) == 3
    pipeline.compile_derivation(vfile, "rows_fused", cache=False)
    assert len(starts) == 4
    monkeypatch.setenv("VERISCHED_NO_CACHE", "1")
    pipeline.load(vfile, "rows_fused")
    assert len(starts) == 5
    monkeypatch.setenv("VERISCHED_NO_CACHE", "0")
    pipeline.load(vfile, "rows_fused")
    assert len(starts) == 5


@requires_coq
def test_load_many_uses_the_cache_per_derivation(vfile, starts):
    both = pipeline.load_many(vfile)
    assert len(starts) == 1 and len(_entries()) == 2
    assert pipeline.load(vfile, "rows_copy") == both["rows_copy"]
    assert pipeline.load_many(vfile, ["rows_copy", "rows_fused"]) == both
    assert len(starts) == 1


@requires_coq
def test_a_load_keeps_the_derivations_its_replay_passed(vfile, starts):
    """Loading a file's derivations one by one, last first, costs one replay: the
    replay of rows_copy runs rows_fused's proof anyway, and keeps its result too."""
    copy = pipeline.load(vfile, "rows_copy")
    assert len(starts) == 1 and len(_entries()) == 2
    fused = pipeline.load(vfile, "rows_fused")
    assert len(starts) == 1
    alone = pipeline.load(vfile, "rows_fused", cache=False)  # a replay of it alone
    assert _untimed(fused) == _untimed(alone)
    assert copy.name == "rows_copy" and fused.name == "rows_fused"
    # One the replay passed and Coq did not accept is not kept, and does not stop the
    # one asked for; asked for, it is replayed and its failure said.
    vfile.write_text(SOURCE.replace("rw get_gen. rw get_gen. normalize. check_safe. done. Qed."
                                    "\n\n  Derive rows_copy",
                                    "rw no_such_lemma. done. Qed.\n\n  Derive rows_copy"))
    for entry in _entries():
        entry.unlink()
    assert pipeline.load(vfile, "rows_copy").expr == copy.expr
    assert len(_entries()) == 1
    with pytest.raises(pipeline.DerivationError, match="no_such_lemma"):
        pipeline.load(vfile, "rows_fused")


@requires_coq
def test_replay_reports_step_k_of_n_then_the_cache(vfile):
    seen: list[str] = []
    pipeline.load(vfile, "rows_fused", progress=seen.append)
    steps = [m for m in seen if isinstance(m, derive.ReplayStep)]
    assert [(s.step, s.total) for s in steps] == [(k, 7) for k in range(1, 8)]
    assert str(steps[0]) == "rows_fused: step 1 of 7: reschedule."
    seen.clear()
    pipeline.load(vfile, "rows_fused", progress=seen.append)
    assert len(seen) == 1 and "unchanged" in seen[0]


def test_entries_are_json_of_known_classes_only():
    classes = cache._classes([pipeline.DerivedProgram])
    e = gen("i", 4, get(Var("v"), "i"))
    assert cache.decode(json.loads(json.dumps(cache.encode(e))), classes) == e
    assert cache.decode(cache.encode({"a": (1, [2, "x"])}), classes) == {"a": (1, [2, "x"])}
    with pytest.raises(ValueError):
        cache.decode({"$c": "Popen", "f": {}}, classes)


def test_instructions_read_from_coq_come_back_with_the_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("VERISCHED_CACHE_DIR", str(tmp_path))
    spec = instrs.InstrSpec("cachetest_copy", (instrs.Param("x", instrs.SCALAR),), Var("x"),
                            "cachetest", None, instrs.LEARNED)
    instrs.register(spec)
    call = Instr("cachetest_copy", (Var("a"),))
    dp = derive.DerivedProgram(source="t", name="t", expr=call, original=None, sizes=(),
                               tensors=(("a", 0),), hypotheses=derive.parse_hypotheses([]),
                               safety_gap=None)
    assert cache.store("k" * 32, "t", dp, (dp.expr,))
    monkeypatch.delitem(instrs._REGISTRY, "cachetest_copy")  # noqa: SLF001 - a fresh process
    assert cache.fetch("k" * 32, "t", derive.DerivedProgram) == dp
    assert instrs.lookup("cachetest_copy") == spec
    assert cache.fetch("k" * 32, "other", derive.DerivedProgram) is None  # evicted
    assert not (tmp_path / "derivations" / ("k" * 32 + ".json")).exists()
    monkeypatch.delitem(instrs._REGISTRY, "cachetest_copy")  # noqa: SLF001


def test_files_that_load_other_files_are_not_cached(tmp_path):
    for text in ('Load "other.v".', "From Mine Require Import Lib.", "Require Import Lib.",
                 "Declare ML Module \"x\"."):
        p = tmp_path / "F.v"
        p.write_text(text + "\n" + SOURCE)
        assert not cache.cacheable(p), text
    p.write_text(SOURCE)
    assert cache.cacheable(p)


@requires_coq
def test_run_refuses_bad_sizes_before_any_replay(vfile, starts, capsys):
    from verisched.cli import main

    for args, message in ((["--size", "m=3"], "no value for size n"),
                          (["--size", "m=3", "--size", "N=4"],  # misspelt: both said
                           "no value for size n of derivation rows_fused: pass --size n=INT "
                           "(sizes: n, m); --size N: not a size of derivation rows_fused"),
                          (["--size", "n=4", "--size", "m=x"], "--size m=x: not an integer"),
                          (["--size", "n=4", "--size", "m=3", "--size", "q=2"],
                           "--size q: not a size of derivation rows_fused"),
                          (["--size", "n=4", "--size", "m=3", "--fix", "k"], "--fix 'k'")):
        assert main(["run", str(vfile), "--derivation", "rows_fused", *args]) == 1
        assert message in capsys.readouterr().err
    assert starts == []
    assert main(["run", str(vfile), "--derivation", "rows_fused", "--size", "n=4",
                 "--size", "m=3", "--quiet"]) == 0
    assert capsys.readouterr().err == ""  # --quiet: no progress
    assert main(["run", str(vfile), "--derivation", "rows_fused", "--size", "n=4",
                 "--size", "m=3"]) == 0
    assert "unchanged" in capsys.readouterr().err and len(starts) == 1


def test_progress_in_a_log_and_on_a_terminal():
    log = io.StringIO()
    p = Progress(stream=log)
    p("replaying X in Coq ...")
    for k in range(1, 31):
        p(derive.ReplayStep("d", k, 30, "rw x."))
    lines = log.getvalue().splitlines()
    assert lines[0] == "replaying X in Coq ..."
    assert [ln.split(":")[1] for ln in lines[1:]] == [
        f" step {k} of 30" for k in (1, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30)]

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    term = Tty()
    p = Progress(stream=term)
    for k in range(1, 4):
        p(derive.ReplayStep("d", k, 3, "rw x."))
    p("done")
    shown = term.getvalue()  # rich's live line: redrawn in place, closed at the last step
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)
    assert all(f"{k}/3 d: rw x." in plain for k in (1, 2, 3))
    assert shown.count("\r\x1b[2K") >= 3 and shown.endswith("done\n")
    assert max(len(line) for line in plain.replace("\r", "\n").splitlines()) <= 100
    quiet = io.StringIO()
    Progress(quiet=True, stream=quiet)(derive.ReplayStep("d", 1, 3, "rw x."))
    assert quiet.getvalue() == ""


@pytest.fixture
def lowerings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts the C family's lowerings (names of the kernels lowered)."""
    from verisched.targets.native import NativeTarget

    done: list[str] = []
    real = NativeTarget.lower

    def counting(self, program):  # noqa: ANN001, ANN202 - the wrapped method's own types
        done.append(program.name)
        return real(self, program)

    monkeypatch.setattr(NativeTarget, "lower", counting)
    return done


@requires_coq
def test_the_lowering_is_cached_and_gives_the_same_c(vfile, lowerings, monkeypatch):
    checked = pipeline.check(pipeline.load(vfile, "rows_fused"))
    fresh = pipeline.render(pipeline.lower(checked, "openmp", cache=False)).c
    assert pipeline.render(pipeline.lower(checked, "openmp")).c == fresh
    again = pipeline.lower(checked, "openmp")
    assert pipeline.render(again).c == fresh and again.program == checked.program
    assert len(lowerings) == 2  # cache=False, then the first cached one
    # Anything the lowering reads changes the key: the target, the program.
    pipeline.lower(checked, "c")
    pipeline.lower(pipeline.check(checked.derived, fix={"m": 4}), "openmp")
    assert len(lowerings) == 4
    # A corrupted entry is evicted and the program lowered again.
    key = cache.value_key(checked.program, "openmp",
                          cache.instruction_specs((checked.program.expr,)))
    entry = cache.cache_dir().parent / cache.LOWERINGS / f"{key}.json"
    entry.write_text(entry.read_text()[:100])
    assert pipeline.render(pipeline.lower(checked, "openmp")).c == fresh
    assert len(lowerings) == 5
    monkeypatch.setenv("VERISCHED_NO_CACHE", "1")
    pipeline.lower(checked, "openmp")
    assert len(lowerings) == 6


@requires_coq
def test_an_unusable_cache_directory_only_costs_the_replay(vfile, starts, monkeypatch):
    blocker = vfile.parent / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("VERISCHED_CACHE_DIR", str(blocker / "cache"))  # cannot be created
    k = pipeline.compile_derivation(vfile, "rows_fused", "c")
    k2 = pipeline.compile_derivation(vfile, "rows_fused", "c")
    assert k.name == k2.name == "rows_fused" and len(starts) == 2


def test_the_cache_is_bounded_least_recently_used_first(tmp_path, monkeypatch):
    # Past the size bound, the least recently used entries go (a fetch marks an entry
    # used), down to 80% of the bound; a temporary file of a concurrent writer stays.
    import os

    from verisched.pipeline import cache

    monkeypatch.setenv("VERISCHED_CACHE_DIR", str(tmp_path / "c"))
    for k in range(10):
        assert cache.store(f"k{k}", "x", {"v": "a" * 1000}, [])
        p = tmp_path / "c" / "derivations" / f"k{k}.json"
        os.utime(p, (1000 + k, 1000 + k))  # k0 oldest
    (tmp_path / "c" / "derivations" / "partial.tmp").write_text("x" * 5000)
    assert cache.fetch("k0", "x", dict) is None  # a dict is no dataclass: evicted
    size = (tmp_path / "c" / "derivations" / "k1.json").stat().st_size
    os.utime(tmp_path / "c" / "derivations" / "k1.json")  # k1 used just now
    removed = cache.trim(limit=6 * size)
    left = sorted(p.stem for p in (tmp_path / "c" / "derivations").glob("*.json"))
    assert removed == 5 and left == ["k1", "k7", "k8", "k9"], left
    assert (tmp_path / "c" / "derivations" / "partial.tmp").exists()
    monkeypatch.setenv("VERISCHED_CACHE_MAX_MB", "not a number")
    assert cache.limit_bytes() == cache.MAX_MB * 10**6
