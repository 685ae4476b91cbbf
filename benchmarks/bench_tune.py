"""`verisched bench tune`: the autotuner against hand-derived schedules and peers.

Problems, each starting from the naive program of the example that hand-schedules
it:
  matvec   y = A·x, A n x m (hand: examples/matvec_tiled.py, two levels of tiles,
           64 x 64 of 8 x 8; peer OpenBLAS through numpy);
  chain    (A·B)·C (hand: examples/chained_matmul.py, compute_at of A·B per output
           row; peer OpenBLAS);
  sgemm    C + A·B (hand: coq/Examples/Directives/Sgemm.v's chain, examples/sgemm_avx2.py:
           6 x 16 AVX2 or 6 x 64 AVX-512 register tile, both packs, select_instr; peer
           OpenBLAS);
  blur     the 3x3 blur with its boundary guards (examples/blur_fused.py; hand:
           coq/Examples/BlurVec.v's `blur_avx2` / `blur_avx512` for the target's ISA,
           Blur.v's fused schedule vectorized; peer Halide's tile(64, 64) + compute_at
           + vectorize(8), bench blur's tile+vec row, parallel(yo) on OpenMP targets);
  conv     the 3x3 convolution layer, NHWC, no padding (examples/conv3x3.py; hand:
           coq/Examples/Conv.v's `conv_avx2` / `conv_avx512`: the im2col panel per
           output row into a 6 x 2-vector register tile; peer PyTorch's conv2d, oneDNN).
For each, `verisched.tune.tune` searches for --budget seconds (every candidate
proved by Coq; proving on a pool of --jobs workers, timing in this process), then
the tuned kernel, the untuned program, the hand-derived schedule (same target)
and the peer (its threads held to --blas-threads) are timed round-robin in the
same run, with no worker running: the median of --repeat interleaved calls.
Speed ratios are time / tuned time (> 1: the tuned kernel is faster).
Benchmarks are measurements, never tests: no thresholds.
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

PEERS = ("OpenBLAS through numpy, Halide (blur), PyTorch conv2d / oneDNN (conv); the "
         "hand-derived schedules of examples/*.py and coq/Examples/")
DURATION = "about --budget seconds per problem plus a minute of Coq and timing"
# The widest vector ISA the CPU runs, as the target the tuner builds for: a CPU flag ->
# target name table, not a comparison of names.  Serial by default, against OpenBLAS
# held to one thread: on this shared 2-core machine a 2-thread kernel's barriers wait
# for cores other processes hold (measured: an OpenMP matvec 50x slower under load 5),
# so one-thread ratios are the ones that mean something; --target *-openmp and
# --blas-threads 2 for the parallel comparison.
TARGET_BY_FLAG = (("avx512f", "avx512"), ("avx2", "avx2"))
ISA_FLAG = {isa: flag for flag, isa in TARGET_BY_FLAG}
PROBLEMS = ("blur", "sgemm", "conv", "matvec", "chain")   # the order


# The hand-derived baseline: directives on the naive program, or a derivation of a
# .v file (path, name) whose original program is the same function.
Hand = Callable[[Schedule], Schedule] | tuple[Path, str]
# The peer: given the inputs, a call to time, or the reason it cannot run (not installed).
Peer = Callable[[dict[str, np.ndarray]], "Callable[[], object] | str"]


@dataclass
class Problem:
    name: str
    program: Program
    sizes: dict[str, int]
    hand: Hand
    peer: Peer
    flops: float
    peer_name: str = "OpenBLAS"
    # the peer's output in the program's layout, to check it once (None: no check)
    peer_out: Callable[[object], np.ndarray] | None = None
    target: str = ""   # the target this problem is tuned for ("": --target)


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
    isa = isa_of(target)

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

    return Problem("sgemm", prog, {"M": n, "N": n, "K": n}, hand, peer, 2.0 * n ** 3,
                   target=target)


def isa_of(target: str) -> str:
    """The vector ISA a target name is built on (`avx512-openmp` -> avx512): the
    registry's target object says, not a comparison of names; `native` (no ISA of its
    own) the CPU's best."""
    vec = getattr(get_target(target), "isa", None)
    if vec is None:
        from verisched.targets.auto import best_vector_isa

        return best_vector_isa()
    return "avx512" if vec.lanes == 16 else "avx2"


def blur(n: int, m: int, target: str, threads: int) -> Problem:
    ns, ms = dsl.sizes("n m")
    v = dsl.tensor("v", ns, ms)

    def blur_x(x: dsl.Ix, y: dsl.Ix) -> dsl.T:   # examples/blur_fused.py's, Blur.v's blur_xg
        row = (dsl.guard(x - 1 >= 0, v[y, x - 1]) + v[y, x]) + dsl.guard(x + 1 < ms, v[y, x + 1])
        return dsl.guard((y >= 0) & (y < ns), row)

    prog = dsl.program("blur", dsl.gen("y", ns, lambda y: dsl.gen("x", ms, lambda x:
                       (blur_x(x, y - 1) + blur_x(x, y)) + blur_x(x, y + 1))),
                       inputs=[v], sizes=["n", "m"], assume=[ns >= 2, ms >= 2])
    hand = (cm.REPO_ROOT / "coq" / "Examples" / "BlurVec.v", f"blur_{isa_of(target)}")
    parallel = get_target(target).parallel

    def peer(ins: dict[str, np.ndarray]) -> Callable[[], object] | str:
        import importlib.util

        if importlib.util.find_spec("halide") is None:
            return "Halide is not installed (pip install 'verisched[bench]')"
        os.environ.setdefault("HL_NUM_THREADS", str(threads))
        import bench_blur

        out = np.empty_like(ins["v"])
        run = bench_blur.halide_runner("tiled", parallel, ins["v"], out, vectorize=True)
        run.out = out   # type: ignore[attr-defined]
        return run

    return Problem("blur", prog, {"n": n, "m": m}, hand, peer, 8.0 * n * m,
                   peer_name="Halide", peer_out=lambda run: run.out)


def conv(sizes: list[int], target: str, threads: int) -> Problem:
    NB, H, W, CI, KO = dsl.sizes("NB H W CI KO")
    img = dsl.tensor("I", NB, H + 2, W + 2, CI)   # examples/conv3x3.py's, Conv.v's conv
    w = dsl.tensor("w", 3, 3, CI, KO)
    prog = dsl.program(
        "conv",
        dsl.gen("n", NB, lambda n: dsl.gen("y", H, lambda y: dsl.gen("x", W, lambda x:
            dsl.gen("k", KO, lambda k: dsl.sum("r", 3, lambda r: dsl.sum("s", 3, lambda s:
                dsl.sum("c", CI, lambda c: img[n, y + r, x + s, c] * w[r, s, c, k]))))))),
        inputs=[img, w], sizes=["NB", "H", "W", "CI", "KO"], assume=[CI >= 1])
    hand = (cm.REPO_ROOT / "coq" / "Examples" / "Conv.v", f"conv_{isa_of(target)}")
    nb, h, wd, ci, ko = sizes

    def peer(ins: dict[str, np.ndarray]) -> Callable[[], object] | str:
        import importlib.util

        if importlib.util.find_spec("torch") is None:
            return "PyTorch is not installed (pip install 'verisched[bench]')"
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        import torch

        # NCHW / OIHW shapes in channels_last memory: the NHWC layout ours reads, which
        # oneDNN takes without reordering the activations (bench conv times both layouts;
        # channels_last was the faster, 14-16% on 1 thread on the Ice Lake VM).
        last = torch.channels_last
        x = torch.from_numpy(ins["I"].transpose(0, 3, 1, 2)).contiguous(memory_format=last)
        wt = torch.from_numpy(ins["w"].transpose(3, 2, 0, 1)).contiguous(memory_format=last)
        torch.set_num_threads(threads)

        def run() -> object:
            with torch.no_grad():
                run.out = torch.nn.functional.conv2d(x, wt)   # type: ignore[attr-defined]
            return run.out   # type: ignore[attr-defined]

        return run

    return Problem("conv", prog, {"NB": nb, "H": h, "W": wd, "CI": ci, "KO": ko}, hand, peer,
                   2.0 * nb * h * wd * ci * ko * 9, peer_name="oneDNN (torch, channels_last)",
                   peer_out=lambda run: run.out.numpy().transpose(0, 2, 3, 1))


def sgemm_targets(args: argparse.Namespace) -> list[str]:
    """The targets SGEMM is tuned for: --target, and with --sgemm-isas each of those
    ISAs the CPU runs (the issue's "AVX2, and AVX-512 where the CPU has it"), serial
    or OpenMP as --target is."""
    if not args.sgemm_isas:
        return [args.target]
    flags = cpu_flags()
    parallel = get_target(args.target).parallel
    out = []
    for isa in args.sgemm_isas:
        if ISA_FLAG[isa] not in flags:
            print(f"note: sgemm on {isa} skipped: the CPU lacks {ISA_FLAG[isa]}")
            continue
        out.append(f"{isa}-openmp" if parallel else isa)
    return out or [args.target]


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


def hand_kernel(hand: Hand, program: Program, target: str):
    """The hand-derived baseline built for `target`: the directives applied to the
    naive program, or the named derivation of a .v file replayed (cached) and
    lowered."""
    if callable(hand):
        with Schedule.of(program) as s:
            return hand(s).compile(target)
    from verisched import pipeline

    path, name = hand
    return pipeline.compile_checked(pipeline.check(pipeline.load(path, name, timeout=1200)),
                                    target)


def run_problem(p: Problem, args: argparse.Namespace, work_dir: Path) -> dict:
    target = p.target or args.target
    print(f"== {p.name} {p.sizes}: tuning for {args.budget:g} s on {target}", flush=True)
    progress = cm.Progress()
    res = tune(p.program, target=target, sizes=p.sizes, budget=args.budget,
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
                              target))
    try:
        hand = hand_kernel(p.hand, p.program, target)
    except Exception as exc:   # noqa: BLE001  (a target without the hand ISA: say so, go on)
        notes.append(f"hand-derived schedule not built for {target}: "
                     f"{' '.join(str(exc).split())[:300]}")
    else:
        add("hand", hand)
    peer = p.peer(w.inputs)
    if isinstance(peer, str):
        notes.append(f"{p.peer_name}: not run: {peer}")
    else:
        peer()
        if p.peer_out is not None and w.reference is not None:
            np.testing.assert_allclose(p.peer_out(peer), w.reference, rtol=1e-3, atol=1e-3,
                                       err_msg=f"bench tune: {p.peer_name} gives a wrong result")
        variants.append(cm.Variant(("peer", "peer"), peer, threads=args.blas_threads, warm=1))
    other = cm.OtherLoad()
    with blas_threads(args.blas_threads):
        cm.time_round_robin(variants, args.repeat)
    notes.append(f"other processes used {other.cores():.1f} core(s) while timing")
    ms = {v.key[1]: v.median() for v in variants}
    best = res.best
    return {"problem": p.name, "sizes": p.sizes, "target": target, "peer": p.peer_name,
            "budget_s": args.budget, "counters": vars(res.counters), "stopped": res.stopped,
            "candidates": len(res.records), "coqc": res.coq.text if res.coq else "-",
            "winner_ops": [op[0] + str(tuple(op[1])) for op in best.ops] if best else [],
            "ms": ms, "samples_ms": {v.key[1]: list(v.times_ms) for v in variants},
            "commit": cm.source_revision(),
            "gflops": {k: p.flops / (v * 1e6) for k, v in ms.items()},
            "best_over_time": [(r.elapsed_s, r.median_s) for r in res.records
                               if r.status == "proved"], "notes": notes}


def report(rows: list[dict], started: datetime.datetime, args: argparse.Namespace) -> str:
    head = [f"# verisched tune against hand-derived schedules and peers "
            f"({started:%Y-%m-%d %H:%M} UTC)", "",
            f"- machine: {cm.cpu_model()} ({'with' if 'avx512f' in cpu_flags() else 'without'} "
            "AVX-512F); "
            f"target `{args.target}`; budget {args.budget:g} s per problem, "
            f"{args.jobs} proving worker(s), timing in the parent",
            f"- code: commit {cm.source_revision()}",
            f"- final timing: median of {args.repeat} interleaved calls (ms), no worker "
            f"running; the peer (OpenBLAS through numpy, Halide, oneDNN through torch) on "
            f"{args.blas_threads} thread(s)",
            *[f"- {line}" for line in cm.load_lines(os.getloadavg())],
            "- speed = other / tuned (> 1: the tuned kernel is faster)", ""]
    hdr = ["problem", "candidates (proved/refused/failed)", "tuned ms", "untuned ms", "hand ms",
           "peer", "peer ms", "vs untuned", "vs hand", "vs peer", "winner"]
    table = []
    for r in rows:
        ms, c = r["ms"], r["counters"]
        t = ms.get("tuned")

        def ratio(k: str, ms=ms, t=t) -> str:
            return cm.fmt(ms[k] / t) if t and ms.get(k) else "-"

        table.append([f"{r['problem']} on {r['target']} {r['sizes']}",
                      f"{r['candidates']} ({c.get('proved', 0)}/{c.get('refused', 0)}/"
                      f"{c.get('failed', 0)})", cm.fmt(t, 4), cm.fmt(ms.get("untuned"), 4),
                      cm.fmt(ms.get("hand"), 4), r.get("peer", "OpenBLAS"),
                      cm.fmt(ms.get("peer"), 4), ratio("untuned"), ratio("hand"), ratio("peer"),
                      " ".join(r["winner_ops"]) or "(untuned)"])
    notes = [f"- {r['problem']} on {r['target']}: winner {r['coqc']}; stopped by {r['stopped']}"
             for r in rows] + [f"- {r['problem']} on {r['target']}: {n}"
                               for r in rows for n in r["notes"]]
    return "\n".join(head + [cm.md_table(hdr, table), "", *notes, ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench tune",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=cm.positive_float, default=120.0,
                    help="tuning seconds per problem")
    ap.add_argument("--jobs", type=cm.positive_int, default=1, help="proving worker processes")
    ap.add_argument("--target", choices=cm.TARGETS, metavar="TARGET", default=None,
                    help="default: the CPU's widest vector ISA, one thread")
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    ap.add_argument("--matvec", type=cm.positive_int, nargs=2, default=[1000, 1000],
                    metavar=("N", "M"))
    ap.add_argument("--chain", type=cm.positive_int, default=200, help="n = m = p = q")
    ap.add_argument("--sgemm", type=cm.positive_int, default=256, help="M = N = K")
    ap.add_argument("--sgemm-isas", nargs="*", default=["avx2", "avx512"],
                    choices=["avx2", "avx512"],
                    help="tune SGEMM once per ISA the CPU has (none given: --target only)")
    ap.add_argument("--blur", type=cm.positive_int, nargs=2, default=[2000, 2000],
                    metavar=("N", "M"),
                    help="the image's rows and columns (bench blur's size)")
    ap.add_argument("--conv", type=cm.positive_int, nargs=5, default=[1, 80, 100, 128, 128],
                    metavar=("NB", "H", "W", "CI", "KO"),
                    help="batch, output rows and columns, input and output channels "
                         "(bench conv's layer, batch 1: the untuned program is timed too)")
    ap.add_argument("--repeat", type=cm.positive_int, default=15)
    ap.add_argument("--blas-threads", type=cm.positive_int, default=1,
                    help="the peer's threads (OpenBLAS, Halide, torch)")
    ap.add_argument("--seed", type=cm.seed_int, default=0)
    ap.add_argument("--out-dir", type=cm.out_dir_arg, default=str(cm.RESULTS_DIR))
    args = ap.parse_args(argv)
    args.target = args.target or default_target()
    started = datetime.datetime.now(datetime.timezone.utc)
    problems = {"matvec": lambda: [matvec(*args.matvec)], "chain": lambda: [chain(args.chain)],
                "sgemm": lambda: [sgemm(args.sgemm, t) for t in sgemm_targets(args)],
                "blur": lambda: [blur(*args.blur, args.target, args.blas_threads)],
                "conv": lambda: [conv(args.conv, args.target, args.blas_threads)]}
    rows = []
    with tempfile.TemporaryDirectory(prefix="vs-bench-tune-") as tmp:
        for name in args.problems:
            for k, prob in enumerate(problems[name]()):
                rows.append(run_problem(prob, args, Path(tmp) / f"{name}{k}"))
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
