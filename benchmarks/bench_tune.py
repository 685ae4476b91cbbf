"""`verisched bench tune`: the autotuner against hand-derived schedules and OpenBLAS.

Problems, each starting from the naive program of the example that hand-schedules
it (examples/matvec_tiled.py, examples/chained_matmul.py):
  matvec   y = A·x, A n x m (hand: two levels of tiles, 64 x 64 of 8 x 8);
  chain    (A·B)·C (hand: compute_at of A·B per output row);
  sgemm    C + A·B (hand: coq/Examples/Directives/Sgemm.v's chain, examples/sgemm_avx2.py:
           6 x 16 AVX2 or 6 x 64 AVX-512 register tile, both packs, select_instr).
For each, `verisched.tune.tune` searches for --budget seconds (every candidate
proved by Coq; proving on a pool of --jobs workers, timing in this process), then
the tuned kernel, the untuned program, the hand-derived schedule (same target)
and numpy's OpenBLAS (`A @ x`, `(A @ B) @ C`, its default threads) are timed
round-robin in the same run, with no worker running: the median of --repeat
interleaved calls.  Speed ratios are time / tuned time (> 1: the tuned kernel is
faster).  Benchmarks are measurements, never tests: no thresholds.
Writes tune.md, tune.json and tune.png into --out-dir atomically.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verisched.schedule import Schedule, dsl
from verisched.schedule.dsl import Program
from verisched.targets.cpu import cpu_flags
from verisched.targets.registry import get_target
from verisched.targets.toolchain import atomic_write
from verisched.tune import tune
from verisched.tune.evaluate import build_file, candidate_path, kernel_sizes, workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as cm  # noqa: E402
import _plots  # noqa: E402

PEERS = "OpenBLAS through numpy; the hand-derived schedules of examples/*.py"
DURATION = "about --budget seconds per problem plus a minute of Coq and timing"
# The widest vector ISA the CPU runs, as the target the tuner builds for: a CPU flag ->
# target name table, not a comparison of names.  Serial by default, against OpenBLAS
# held to one thread: on this shared 2-core machine a 2-thread kernel's barriers wait
# for cores other processes hold (measured: an OpenMP matvec 50x slower under load 5),
# so one-thread ratios are the ones that mean something; --target *-openmp and
# --blas-threads 2 for the parallel comparison.
TARGET_BY_FLAG = (("avx512f", "avx512"), ("avx2", "avx2"))


@dataclass
class Problem:
    name: str
    program: Program
    sizes: dict[str, int]
    hand: Callable[[Schedule], Schedule]
    peer: Callable[[dict[str, np.ndarray]], Callable[[], object]]
    flops: float


def matvec(n: int, m: int) -> Problem:
    ns, ms = dsl.sizes("n m")
    A, x = dsl.tensor("A", ns, ms), dsl.tensor("x", ms)
    prog = dsl.program("matvec", dsl.gen("i", ns, lambda i:
                                         dsl.sum("j", ms, lambda j: A[i, j] * x[j])))

    def hand(s: Schedule) -> Schedule:   # examples/matvec_tiled.py
        return (s.tile("i", "j", 64, 64, "io", "jo", "ii", "ji")
                .tile("ii", "ji", 8, 8, "iio", "jjo", "iii", "jji"))

    def peer(ins: dict[str, np.ndarray]) -> Callable[[], object]:
        a, v = ins["A"], ins["x"]
        return lambda: a @ v

    return Problem("matvec", prog, {"n": n, "m": m}, hand, peer, 2.0 * n * m)


def chain(n: int) -> Problem:
    ns, ms, ps, qs = dsl.sizes("n m p q")
    A, B, C = dsl.tensor("A", ns, ms), dsl.tensor("B", ms, ps), dsl.tensor("C", ps, qs)
    prog = dsl.program("chain", dsl.let(
        "AB", dsl.gen("r", ns, lambda r: dsl.gen("c", ps, lambda c: dsl.sum(
            "t", ms, lambda t: A[r, t] * B[t, c]))),
        lambda AB: dsl.gen("i", ns, lambda i: dsl.gen("j", qs, lambda j: dsl.sum(
            "k", ps, lambda k: AB[i, k] * C[k, j])))),
        inputs=[A, B, C], sizes=["n", "m", "p", "q"])

    def hand(s: Schedule) -> Schedule:   # examples/chained_matmul.py
        return s.compute_at("AB", "i").simpl_guard()

    def peer(ins: dict[str, np.ndarray]) -> Callable[[], object]:
        a, b, c = ins["A"], ins["B"], ins["C"]
        return lambda: (a @ b) @ c

    return Problem("chain", prog, {"n": n, "m": n, "p": n, "q": n}, hand, peer,
                   4.0 * n ** 3)


def sgemm(n: int, target: str) -> Problem:
    ms, ns, ks = dsl.sizes("M N K")
    A, B, C = dsl.tensor("A", ms, ks), dsl.tensor("B", ks, ns), dsl.tensor("C", ms, ns)
    prog = dsl.program("sgemm", dsl.gen("i", ms, lambda i: dsl.gen("j", ns, lambda j: C[i, j]
                       + dsl.sum("k", ks, lambda k: A[i, k] * B[k, j]))),
                       inputs=[A, B, C], sizes=["M", "N", "K"])
    isa = "avx512" if target.startswith("avx512") else "avx2"

    # Sgemm.v's register tile: 2 vectors of 8 lanes (avx2), 4 of 16 (avx512)
    width = {8: 16, 16: 64}[get_target(isa).isa.lanes]

    def hand(s: Schedule) -> Schedule:   # examples/sgemm_avx2.py, mcr = 16, kc = 256
        return (s.split("i", dsl.ix(16) * 6, "io", "ii").fission("ii").split("k", 256, "ko", "kk")
                .reorder("ko", "ii", "j")
                .register_tile("ii", "j", 6, width, isa,
                               into=("im", "ir", "jm", "jv", "l"), buffer="t")
                .stage("B", "io", "Bp").compute_root("Bp").stage("A", "ko", "Ap")
                .select_instr("t", isa))

    def peer(ins: dict[str, np.ndarray]) -> Callable[[], object]:
        a, b, c = ins["A"], ins["B"], ins["C"]
        return lambda: c + a @ b

    return Problem("sgemm", prog, {"M": n, "N": n, "K": n}, hand, peer, 2.0 * n ** 3)


def blas_threads(n: int):
    """OpenBLAS held to `n` threads (threadpoolctl), or no limit when it is missing."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib

        print("note: threadpoolctl missing: OpenBLAS runs with its default threads")
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


def default_target() -> str:
    flags = cpu_flags()
    return next((t for f, t in TARGET_BY_FLAG if f in flags), "c")


def run_problem(p: Problem, args: argparse.Namespace, work_dir: Path) -> dict:
    print(f"== {p.name} {p.sizes}: tuning for {args.budget:g} s on {args.target}", flush=True)
    progress = cm.Progress()
    res = tune(p.program, target=args.target, sizes=p.sizes, budget=args.budget,
               jobs=args.jobs, out_dir=work_dir / p.name, seed=args.seed,
               progress=progress)
    progress.close()
    w = workload(p.program, p.sizes, seed=1)
    variants: list[cm.Variant] = []
    notes = list(res.notes)

    def add(label: str, kernel) -> None:
        out = np.empty(kernel.extents(kernel_sizes(kernel, w.sizes))[1], np.float32)
        run = kernel.bind(w.inputs, kernel_sizes(kernel, w.sizes), out)
        if w.reference is not None:
            np.testing.assert_allclose(out, w.reference, rtol=1e-3, atol=1e-3,
                                       err_msg=f"bench tune: {label} gives a wrong result")
        variants.append(cm.Variant(("verisched", label), run, warm=1))

    for label, rec in (("tuned", res.best),
                       ("untuned", next((r for r in res.records
                                         if r.status == "proved" and not r.ops), None))):
        if rec is None:
            notes.append(f"{label}: no proved candidate")
            continue
        from verisched.schedule.coqfile import standalone

        text = standalone(p.program, rec.steps, closed=True)
        path = candidate_path(res.out_dir / "candidates", text)
        add(label, build_file(path, p.program, tuple(map(tuple, rec.annotations)),
                              args.target))
    with Schedule.of(p.program) as s:
        add("hand", p.hand(s).compile(args.target))
    variants.append(cm.Variant(("openblas", "numpy"), p.peer(w.inputs),
                               threads=args.blas_threads, warm=1))
    other = cm.OtherLoad()
    with blas_threads(args.blas_threads):
        cm.time_round_robin(variants, args.repeat)
    notes.append(f"other processes used {other.cores():.1f} core(s) while timing")
    ms = {v.key[1]: v.median() for v in variants}
    best = res.best
    return {"problem": p.name, "sizes": p.sizes, "target": args.target,
            "budget_s": args.budget, "counters": vars(res.counters), "stopped": res.stopped,
            "candidates": len(res.records), "coqc": res.coq.text if res.coq else "-",
            "winner_ops": [op[0] + str(tuple(op[1])) for op in best.ops] if best else [],
            "ms": ms, "samples_ms": {v.key[1]: list(v.times_ms) for v in variants},
            "commit": cm.source_revision(),
            "gflops": {k: p.flops / (v * 1e6) for k, v in ms.items()},
            "best_over_time": [(r.elapsed_s, r.median_s) for r in res.records
                               if r.status == "proved"], "notes": notes}


def report(rows: list[dict], started: datetime.datetime, args: argparse.Namespace) -> str:
    head = [f"# verisched tune against hand-derived schedules and OpenBLAS "
            f"({started:%Y-%m-%d %H:%M} UTC)", "",
            f"- machine: {cm.cpu_model()} ({'with' if 'avx512f' in cpu_flags() else 'without'} "
            "AVX-512F); "
            f"target `{args.target}`; budget {args.budget:g} s per problem, "
            f"{args.jobs} proving worker(s), timing in the parent",
            f"- code: commit {cm.source_revision()}",
            f"- final timing: median of {args.repeat} interleaved calls (ms), no worker "
            f"running; OpenBLAS through numpy on {args.blas_threads} thread(s)",
            *[f"- {line}" for line in cm.load_lines(os.getloadavg())],
            "- speed = other / tuned (> 1: the tuned kernel is faster)", ""]
    hdr = ["problem", "candidates (proved/refused/failed)", "tuned ms", "untuned ms", "hand ms",
           "OpenBLAS ms", "vs untuned", "vs hand", "vs OpenBLAS", "winner"]
    table = []
    for r in rows:
        ms, c = r["ms"], r["counters"]
        t = ms.get("tuned")

        def ratio(k: str, ms=ms, t=t) -> str:
            return cm.fmt(ms[k] / t) if t and ms.get(k) else "-"

        table.append([f"{r['problem']} {r['sizes']}",
                      f"{r['candidates']} ({c.get('proved', 0)}/{c.get('refused', 0)}/"
                      f"{c.get('failed', 0)})", cm.fmt(t, 4), cm.fmt(ms.get("untuned"), 4),
                      cm.fmt(ms.get("hand"), 4), cm.fmt(ms.get("numpy"), 4),
                      ratio("untuned"), ratio("hand"), ratio("numpy"),
                      " ".join(r["winner_ops"]) or "(untuned)"])
    notes = [f"- {r['problem']}: winner {r['coqc']}; stopped by {r['stopped']}"
             for r in rows] + [f"- {r['problem']}: {n}" for r in rows for n in r["notes"]]
    return "\n".join(head + [cm.md_table(hdr, table), "", *notes, ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench tune",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=120.0, help="tuning seconds per problem")
    ap.add_argument("--jobs", type=int, default=1, help="proving worker processes")
    ap.add_argument("--target", default=None, help="default: the CPU's widest ISA, OpenMP")
    ap.add_argument("--problems", nargs="*", default=["matvec", "chain"],
                    choices=["matvec", "chain", "sgemm"])
    ap.add_argument("--matvec", type=int, nargs=2, default=[1000, 1000], metavar=("N", "M"))
    ap.add_argument("--chain", type=int, default=200, help="n = m = p = q")
    ap.add_argument("--sgemm", type=int, default=256, help="M = N = K")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--blas-threads", type=int, default=1, help="OpenBLAS's threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", default=str(cm.RESULTS_DIR))
    args = ap.parse_args(argv)
    args.target = args.target or default_target()
    started = datetime.datetime.now(datetime.timezone.utc)
    problems = {"matvec": lambda: matvec(*args.matvec), "chain": lambda: chain(args.chain),
                "sgemm": lambda: sgemm(args.sgemm, args.target)}
    rows = []
    with tempfile.TemporaryDirectory(prefix="vs-bench-tune-") as tmp:
        for name in args.problems:
            rows.append(run_problem(problems[name](), args, Path(tmp)))
    md = report(rows, started, args)
    print(md)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "tune.json", json.dumps(rows, indent=1, default=str))
    fig = _plots.tune(json.loads(json.dumps(rows, default=str)))  # as a replot reads it
    for path in cm.write_outputs(out, "tune", md, fig):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
