"""`verisched bench proofs` (benchmarks/bench_proofs.py) on a two-file Coq project: the
TIMED=1 parser, the per-file least, the baseline built from a git revision and
alternated with the working tree, the outputs, and plain errors.  No time is asserted:
the benchmark measures, the test checks what it measured and wrote."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
pytestmark = pytest.mark.skipif(shutil.which("coqc") is None or shutil.which("coq_makefile")
                                is None, reason="needs Coq (make setup installs it)")


@pytest.fixture(scope="module")
def bp():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_proofs", BENCH / "bench_proofs.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_proofs"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_parse_timed_reads_every_file_line(bp) -> None:
    text = ("COQC coq/A.v\n"
            "coq/A.vo (real: 0.19, user: 0.15, sys: 0.04, mem: 274944 ko)\n"
            "noise coq/B.vo (real: 1, user: 1, sys: 1, mem: 1 ko)\n"
            "  coq/Sub/B.vo (real: 2.50, user: 2.20, sys: 0.30, mem: 500000 ko)\n")
    assert bp.parse_timed(text) == {"coq/A.v": (0.15, 0.04), "coq/Sub/B.v": (2.2, 0.3)}


def test_least_per_file_takes_each_files_least_build(bp) -> None:
    b1 = bp.Build("ours", 1.0, 1.0, 1.0, {"a.v": (1.0, 0.5), "b.v": (2.0, 0.1)})
    b2 = bp.Build("ours", 1.0, 1.0, 1.0, {"a.v": (1.2, 0.1), "b.v": (2.5, 0.0)})
    assert bp.least_per_file([b1, b2]) == {"a.v": (1.2, 0.1), "b.v": (2.0, 0.1)}


def test_makefile_defaults_are_the_projects_gc_settings(bp) -> None:
    got = bp.makefile_defaults(BENCH.parent / "CoqMakefile.local")
    assert got["OCAMLRUNPARAM"].startswith("s=32M")
    assert got["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=1"


def _project(root: Path) -> Path:
    (root / "coq").mkdir(parents=True)
    (root / "_CoqProject").write_text("-Q coq T\ncoq/A.v\ncoq/B.v\n")
    (root / "coq" / "A.v").write_text("Definition a := 1.\n")
    (root / "coq" / "B.v").write_text("From T Require Import A.\nLemma b : a = 1.\n"
                                      "Proof. reflexivity. Qed.\n")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], check=True)
    return root


def test_builds_the_tree_and_a_baseline_alternately(bp, tmp_path: Path, capsys) -> None:
    src = _project(tmp_path / "src")
    # The working tree differs from HEAD: one more file, which the baseline lacks.
    (src / "coq" / "C.v").write_text("From T Require Import B.\nDefinition c := 2.\n")
    (src / "_CoqProject").write_text("-Q coq T\ncoq/A.v\ncoq/B.v\ncoq/C.v\n")
    out = tmp_path / "out"
    rc = bp.main(["--source", str(src), "--builds", "2", "--baseline", "HEAD",
                  "--probe-runs", "1", "--out-dir", str(out)])
    log = capsys.readouterr().out
    assert rc == 0, log
    # Alternated: ours, baseline, ours, baseline.
    order = [line.split(" of ")[1].split()[0] for line in log.splitlines()
             if line.startswith("build ")]
    assert order == ["ours", "baseline", "ours", "baseline"]
    data = json.loads((out / "proofs.json").read_text())
    assert [len(data["builds"][k]) for k in ("ours", "baseline")] == [2, 2]
    for b in data["builds"]["ours"]:
        assert set(b["files"]) == {"coq/A.v", "coq/B.v", "coq/C.v"}
        assert b["cpu"] == pytest.approx(b["user"] + b["sys"])
        assert b["cpu"] >= sum(u + s for u, s in b["files"].values()) * 0.9
    assert set(data["least_per_file"]["baseline"]) == {"coq/A.v", "coq/B.v"}
    assert data["probe"]["user"] > 0
    md = (out / "proofs.md").read_text()
    assert "CPU at HEAD" in md and "| `coq/C.v` |" in md and "new |" in md
    assert "goal: at most 60 s of CPU" in md
    assert "settings of the baseline's builds: OCaml's and glibc's defaults" in md
    assert "settings of our tree's builds: " in md
    # Built in a scratch copy: the source tree gained no build products.
    assert not list(src.rglob("*.vo"))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (out / "proofs.png").stat().st_size > 0


def test_errors_are_one_line_and_write_nothing(bp, tmp_path: Path, capsys) -> None:
    src = _project(tmp_path / "src")
    out = tmp_path / "out"
    rc = bp.main(["--source", str(src), "--baseline", "no-such-rev", "--out-dir", str(out)])
    msg = capsys.readouterr().out
    assert rc == 1 and "--baseline no-such-rev" in msg and "Traceback" not in msg
    (src / "coq" / "B.v").write_text("Lemma b : 1 = 2.\nProof. reflexivity. Qed.\n")
    rc = bp.main(["--source", str(src), "--builds", "1", "--out-dir", str(out)])
    msg = capsys.readouterr().out
    assert rc == 1 and "the proof build (ours) failed" in msg
    assert not out.exists()
