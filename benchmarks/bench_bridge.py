"""Bridge benchmark: what the Python side adds on top of Coq.

Measures (medians over repeats):
  1. session start with the library loaded (goal < 2 s);
  2. the full replay of each example derivation, against `coqc` compiling
     the same file (Coq alone, no bridge);
  3. the bridge's own overhead per tactic step, i.e. a step's wall time
     minus the time Coq spends on the tactic itself, using the no-op tactic
     `idtac` on the pipeline program and on the largest example state
     (goal: median < 20 ms);
  4. the reference interpreter on the 256x256 blur, original and derived
     programs (goal: well under a second).

Run: verisched bench bridge [--repeats N] [--steps N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from verisched.commands.common import positive_int
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.derivation import Derivation, StepOk
from verisched.pybridge.interp import evaluate
from verisched.pybridge.replay import DERIVE_RE, replay_file
from verisched.pybridge.sentences import split_sentences
from verisched.pybridge.session import REPO_ROOT, CoqSession

PIPELINE = parse_program(
    "tlet buf := GEN [ j < n ] f _[j] in "
    "GEN [ i < n ] (|[ 0 <=? (i - 1) ]| buf _[i - 1]) <+> (buf _[i])")


# Shown by `verisched bench --help` (read without importing this module).
PEERS = "coqc alone (the same file, no bridge)"
DURATION = "about 6 min on the 2-core development machine (5 min 39 s measured)"


def _ms(x: float) -> str:
    return f"{x * 1000:8.1f} ms"


def bench_startup(repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        with CoqSession() as s:
            times.append(time.perf_counter() - t0)
            assert s.alive
    return times


def bench_steps(d: Derivation, steps: int) -> tuple[list, list, list]:
    total, coq, overhead = [], [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        r = d.run_tactic("idtac.")
        wall = time.perf_counter() - t0
        assert isinstance(r, StepOk)
        total.append(wall)
        coq.append(r.coq_seconds)
        overhead.append(wall - r.coq_seconds)
    return total, coq, overhead


def examples(repo: Path) -> list[Path]:
    return sorted(p for p in (repo / "coq" / "Examples").glob("*.v")
                  if any(DERIVE_RE.match(s.text) for s in split_sentences(p.read_text())))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench bridge", description=__doc__)
    ap.add_argument("--repeats", type=positive_int, default=5)
    ap.add_argument("--steps", type=positive_int, default=50)
    args = ap.parse_args(argv)
    repo = REPO_ROOT

    print("== 1. session start (coqtop + Verisched library + prelude)")
    st = bench_startup(args.repeats)
    print(f"   median {_ms(statistics.median(st))}   min {_ms(min(st))}   "
          f"max {_ms(max(st))}   (n={len(st)}, goal < 2000 ms)")

    print(f"== 2. full replay per example (median of {max(1, args.repeats // 2)}) vs coqc")
    print(f"   {'file':<22}{'derivations':>12}{'steps':>7}{'replay':>12}{'coqc':>12}")
    biggest: tuple[Path, str, str, int] | None = None
    with CoqSession(timeout=600) as session:
        for path in examples(repo):
            times = []
            res = None
            for _ in range(max(1, args.repeats // 2)):
                t0 = time.perf_counter()
                res = replay_file(session, path)
                times.append(time.perf_counter() - t0)
            assert res is not None
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                proc = subprocess.run(["coqc", "-q", "-Q", "coq", "Verisched", str(path),
                                       "-o", str(Path(tmp) / (path.stem + ".vo"))],
                                      cwd=repo, capture_output=True)
                coqc = time.perf_counter() - t0
            n_steps = sum(len(rd.derivation.steps) for rd in res.derivations)
            status = ""
            if res.failure:
                status = f"  (replay FAILED at line {res.failure.line}: " \
                         f"{res.failure.message.splitlines()[0][:80]})"
            elif not res.ok:
                status = "  (replay FAILED)"
            coqc_s = _ms(coqc) if proc.returncode == 0 else "   failed"
            print(f"   {path.name:<22}{len(res.derivations):>12}{n_steps:>7}"
                  f"{_ms(statistics.median(times))}{coqc_s}{status}", flush=True)
            for rd in res.derivations:
                steps = rd.derivation.steps
                c = sum(s.coq_seconds for s in steps)
                b = sum(s.bridge_seconds for s in steps)
                print(f"     {rd.derivation.name:<30} coq {_ms(c)}  bridge {_ms(b)}")
                for s in steps:
                    text = s.after.program_text
                    if text and (biggest is None or len(text) > len(biggest[2])):
                        biggest = (path, rd.derivation.name, text, s.step)

    print(f"== 3. bridge overhead per step (no-op tactic, {args.steps} steps, medians)")
    print(f"   {'program':<40}{'step wall':>12}{'coq tactic':>12}{'bridge':>12}")
    with CoqSession(timeout=600) as session:
        d = Derivation.from_program(session, "vs_bench", PIPELINE, {"f": 1}, ["n"])
        d.run_tactic("reschedule.")
        rows = [("pipeline (2 stages)", *bench_steps(d, args.steps))]
        d.abort()
        if biggest:
            # the largest program met in the examples: printing and parsing it
            # is the worst case for the bridge
            path, name, text, step = biggest
            res = replay_file(session, path, only=name, keep_state=True,
                              stop_after=(name, step))
            d2 = res.derivations[0].derivation
            rows.append((f"{name} step {step} ({len(text)} chars)",
                         *bench_steps(d2, args.steps)))
            session.back_to(res.start_state)
    for label, total, coq, over in rows:
        print(f"   {label:<40}{_ms(statistics.median(total))}{_ms(statistics.median(coq))}"
              f"{_ms(statistics.median(over))}")
    print("   (bridge = step wall time - Coq's time for the tactic: printing the goal "
          "between markers + parsing it; goal < 20 ms)")

    blur = repo / "coq" / "Examples" / "Blur.v"
    if blur.exists():
        print("== 4. reference interpreter, 256x256 blur (float64, median of 3)")
        with CoqSession(timeout=600) as session:
            res = replay_file(session, blur, semantics=True)
        rng = np.random.default_rng(0)
        v = rng.random((256, 256))
        sizes = {"n": 256, "m": 256, "kn": 32, "km": 64}
        for rd in res.derivations:
            for label, prog in (("original", rd.semantics[0]), ("derived", rd.semantics[-1])):
                if isinstance(prog, str):
                    continue
                ts = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    evaluate(prog, {"v": v}, sizes)
                    ts.append(time.perf_counter() - t0)
                print(f"   {rd.derivation.name:<20}{label:<10}{_ms(statistics.median(ts))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
