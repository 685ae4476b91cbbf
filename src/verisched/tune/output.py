"""What a tuning run leaves behind: the winner as a standalone `.v` derivation (and
Coq's verdict on it), a Python script that reproduces it, and a plot of the best
time so far.

Why `coqc` runs on the winner here: the log records candidates proved in a worker's
live session and replayed by the pipeline, but the file handed to the user is
written again from the logged steps, and nothing unproved is reported as a result
(docs/decisions.md): the file is checked as it is on disk.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from verisched.pybridge.derivation import write_text_atomic
from verisched.pybridge.session import REPO_ROOT
from verisched.schedule.coqfile import derived_name, standalone
from verisched.schedule.dsl import Program

from .log import Record
from .space import Op

COQ_ROOT = REPO_ROOT / "coq"


@dataclass(frozen=True)
class CoqVerdict:
    ok: bool | None      # None: coqc could not be run (said in `text`)
    text: str


def write_winner(out_dir: Path, program: Program, rec: Record) -> Path:
    """The winner's standalone derivation, OUT_DIR/NAME_tuned.v."""
    path = out_dir / f"{program.name}_tuned.v"
    write_text_atomic(path, standalone(program, rec.steps, closed=True))
    return path


def coqc(path: Path, coq_root: Path = COQ_ROOT, timeout: float = 600.0) -> CoqVerdict:
    """Check `path` with coqc against the library under `coq_root` (built by
    `make proofs`)."""
    exe = shutil.which("coqc")
    if exe is None:
        return CoqVerdict(None, "coqc not found: the winner's file was not checked here")
    if not (coq_root / "ATL.vo").is_file():
        return CoqVerdict(None, f"{coq_root}/ATL.vo missing (run `make proofs`): not checked")
    cache = path.parent / ".lia.cache"  # lia's, written where coqc runs: not the user's
    had_cache = cache.exists()
    try:
        r = subprocess.run([exe, "-Q", str(coq_root), "Verisched", "-w", "-notation-overridden",
                            path.name], cwd=path.parent, capture_output=True, text=True,
                           timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CoqVerdict(False, f"coqc did not finish: {exc}")
    finally:
        if not had_cache:
            cache.unlink(missing_ok=True)
    for ext in (".vo", ".vok", ".vos", ".glob"):
        path.with_suffix(ext).unlink(missing_ok=True)
        (path.parent / f".{path.stem}.aux").unlink(missing_ok=True)
    if r.returncode != 0:
        why = " ".join((r.stderr + r.stdout).split())[:400]
        return CoqVerdict(False, f"coqc refused it: {why}")
    return CoqVerdict(True, "coqc accepted it")


SCRIPT = '''"""Reproduce the schedule verisched tune found for {name} (candidate #{number}, target
{target}, sizes {sizes}, median {median}).

Run: python {stem}.py   (from the repository root, after `make proofs`)
It applies the directives below with verisched.schedule (each proved by Coq), writes
the standalone derivation {stem}_reproduced.v beside this script (the same text as
{stem}.v) and checks the kernel against the reference interpreter at the tuned sizes.
"""

from pathlib import Path

import numpy as np

from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import *  # noqa: F401,F403  (the program's AST below)
from verisched.pybridge.terms import eval_idx
from verisched.schedule import Schedule
from verisched.schedule.dsl import Ix, Program

PROGRAM = {program}
SIZES = {sizes}


def schedule(s: Schedule) -> Schedule:
    return (s{calls})


def main() -> None:
    with Schedule.of(PROGRAM) as s:
        t = schedule(s)
        t.save(Path(__file__).with_name("{stem}_reproduced.v"))
        kernel = t.compile({target!r})
    rng = np.random.default_rng(0)
    shapes = {{name: tuple(eval_idx(d, SIZES) for d in shape) for name, shape in PROGRAM.inputs}}
    inputs = {{name: rng.standard_normal(shape).astype(np.float32)
              for name, shape in shapes.items()}}
    got = kernel(inputs, **SIZES)
    want = evaluate(PROGRAM.expr, {{k: v.astype(np.float64) for k, v in inputs.items()}},
                    SIZES, np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    print("{stem}_reproduced.v written; the kernel matches the reference interpreter")


if __name__ == "__main__":
    main()
'''


def write_script(out_dir: Path, program: Program, rec: Record) -> Path:
    """OUT_DIR/NAME_tuned.py: the winner's directives as Schedule calls."""
    stem = f"{program.name}_tuned"
    ops = [Op.from_json(o) for o in rec.ops]
    calls = "".join(f"\n            {op.python()}" for op in ops) or ""
    median = "-" if rec.median_s is None else f"{rec.median_s * 1e3:.4g} ms"
    text = SCRIPT.format(name=program.name, number=rec.number, target=rec.target,
                         sizes=dict(rec.sizes), median=median, stem=stem,
                         program=repr(program), calls=calls)
    path = out_dir / f"{stem}.py"
    write_text_atomic(path, text)
    return path


def plot(out_dir: Path, records: list[Record], name: str, untuned_s: float | None
         ) -> Path | None:
    """OUT_DIR/NAME_tune.png: best median so far against the run's elapsed time (None
    when matplotlib is not installed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    xs, ys, best = [], [], None
    for r in sorted(records, key=lambda r: r.elapsed_s):
        if r.status == "proved" and r.median_s is not None:
            best = r.median_s if best is None else min(best, r.median_s)
        if best is not None:
            xs.append(r.elapsed_s)
            ys.append(best * 1e3)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    # Markers too: a step line through one point (one candidate timed) draws nothing.
    ax.step(xs, ys, where="post", marker="o", markersize=3, label="best proved candidate")
    if untuned_s:
        ax.axhline(untuned_s * 1e3, color="grey", ls="--", label="untuned")
    ax.set_xlabel("tuning time (s)")
    ax.set_ylabel("median time (ms)")
    ax.set_yscale("log")
    ax.set_title(f"verisched tune: {name}")
    ax.legend()
    fig.tight_layout()
    path = out_dir / f"{name}_tune.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def derivation_name(program: Program) -> str:
    return derived_name(program)
