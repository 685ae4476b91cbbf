"""`verisched bench blur`: the 3x3 blur of the ATL paper (Sec. 8.1, Figs. 8-10)
against Halide (PyPI `halide`), 2000x2000 float32.

Schedules, matched pairwise:
  two-stage  (ours: Fig. 8, a buffer of blur_x over n+2 rows with partitioned
              edge columns, then blur_y)           vs Halide blur_x.compute_root()
  fused      (ours: total fusion, border rows and columns peeled so the
              interior is guard-free)              vs Halide blur_x inlined
  tiled      (ours: Fig. 9, 64x64 tiles, a (64+2)x64 blur_x buffer per tile,
              full tiles guard-free, partial tiles and borders fused)
                                                   vs Halide tile(64, 64) + compute_at
each serial (our `c` target / Halide without parallel and vectorize) and
parallel (our `openmp` target with all cores / Halide parallel(y) +
vectorize(x, 8), GuardWithIf tails as in the paper).

Vectorized rows (issue 5): the derivations of coq/Examples/BlurVec.v for
--isa (default auto: `blur_avx512` where the CPU has avx512f, else
`blur_avx2`; vector instructions placed by `use_instr`; the borders peeled),
and of examples/blur_borders.v (`blur_avx512_masked`: the one directive
`vectorize x`, the borders as masked loads, decision #139), lowered with that
ISA's target (1 thread) and its OpenMP target (all cores), against Halide's
tile(64, 64) + compute_at + vectorize schedule at the same vector width (8
floats for AVX2, 16 for AVX-512) without parallel (1 thread) and with
parallel(yo) (HL_NUM_THREADS threads).  When BlurVec.v is missing or does
not lower, the report says so and shows Halide alone in row tile+vec.

Our scalar programs: by default the derivations of coq/Examples/Blur.v,
replayed through the bridge (labelled "coq"; the file takes a minute or two
to replay), whose final programs are lowered with the derivations'
hypotheses (2 <= n, 2 <= m, 0 < kn, ...) as assumptions.  `--from-ast` uses
the HAND-BUILT ASTs below instead (labelled "ast"); they read the image
outside its extent (ATL's zero-outside semantics) at the border, so Coq's
check_safe refuses them and the benchmark says so: they stay only as a record
of how the first measurements were made.  Every
kernel is first checked against a numpy blur (zero outside the image) at
the benchmark size and at a small odd size.  Times are medians over
`--repeat` runs after warm-up, all variants timed round-robin
(benchmarks/_common.py); speed = Halide time / our time (> 1: ours
faster).  Parallel times need idle cores: the report gives the load
average and warns when it exceeds the CPU count.  Writes blur.md,
blur.json and a PNG bar chart (matplotlib) atomically.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from verisched import pipeline
from verisched.codegen import CodegenError
from verisched.pybridge.terms import (
    Concat,
    Expr,
    Flatten,
    Gen,
    Get,
    IBin,
    IConst,
    Idx,
    IVar,
    Let,
    PCmp,
    SBin,
    Transpose,
    Var,
    Zero,
)
from verisched.targets.auto import best_vector_isa
from verisched.targets.cpu import cpu_flags
from verisched.targets.toolchain import atomic_write

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as cm  # noqa: E402
import _plots  # noqa: E402

N, M = IVar("n"), IVar("m")
ONE = IConst(1)


# Shown by `verisched bench --help` (read without importing this module).
PEERS = "Halide (PyPI halide; optional)"
DURATION = ("about 35 s on the 2-core development machine (32 s measured; the default "
            "replays BlurVec.v and times 4 schedule pairs)")


def _i(x: Idx | int | str) -> Idx:
    return IConst(x) if isinstance(x, int) else IVar(x) if isinstance(x, str) else x


def add(a, b) -> Idx:
    return IBin("+", _i(a), _i(b))


def sub(a, b) -> Idx:
    return IBin("-", _i(a), _i(b))


def mul(a, b) -> Idx:
    return IBin("*", _i(a), _i(b))


def gen(v: str, lo, hi, body: Expr) -> Gen:
    return Gen(v, _i(lo), _i(hi), body)


def add3(a: Expr, b: Expr, c: Expr) -> Expr:
    return SBin("+", SBin("+", a, b), c)


def tap(t: str, y, x) -> Expr:
    return Get(Get(Var(t), _i(y)), _i(x))


def blurx(y, x) -> Expr:
    """blur_x v x y of Sec. 8.1: v[y; x-1] + v[y; x] + v[y; x+1] (zero outside)."""
    return add3(tap("v", y, sub(x, 1)), tap("v", y, x), tap("v", y, add(x, 1)))


def fused(y, x) -> Expr:
    """blur_y of blur_x, fully inlined."""
    return add3(blurx(sub(y, 1), x), blurx(y, x), blurx(add(y, 1), x))


def cols(f, y) -> Expr:
    """A row split into first column, guard-free interior, last column (Fig. 8)."""
    return Concat(ONE, sub(M, 1), gen("x", 0, 1, f(y, "x")),
                  Concat(sub(M, 2), ONE, gen("x", 1, sub(M, 1), f(y, "x")),
                         gen("x", sub(M, 1), M, f(y, "x"))))


def two_stage() -> Expr:
    """Fig. 8: buffer rows -1..n of blur_x (rows -1 and n are zero), then blur_y
    reading rows y, y+1, y+2 of the buffer without guards."""
    buf = Concat(ONE, add(N, 1), Zero(),
                 Concat(N, ONE, gen("y", 0, N, cols(blurx, "y")), Zero()))
    out = gen("y", 0, N, gen("x", 0, M, add3(tap("buf", "y", "x"), tap("buf", add("y", 1), "x"),
                                             tap("buf", add("y", 2), "x"))))
    return Let("buf", buf, out)


def fused_rows(mid: Expr) -> Expr:
    """First row, middle rows, last row."""
    return Concat(ONE, sub(N, 1), gen("y", 0, 1, gen("x", 0, M, fused("y", "x"))),
                  Concat(sub(N, 2), ONE, mid,
                         gen("y", sub(N, 1), N, gen("x", 0, M, fused("y", "x")))))


def fused_all() -> Expr:
    """Total fusion with the border peeled (Sec. 8.1)."""
    return fused_rows(gen("y", 1, sub(N, 1), cols(fused, "y")))


def tiled(kn: int = 64, km: int = 64) -> Expr:
    """Fig. 9: the (n-2) x (m-2) interior in kn x km tiles; full tiles compute a
    (kn+2) x km buffer of blur_x each and are guard-free; the last partial row and
    column of tiles are computed fused; the border is peeled as in `fused_all`."""
    n2, m2 = sub(N, 2), sub(M, 2)
    fn, fm = IBin("/", n2, IConst(kn)), IBin("/", m2, IConst(km))
    rn, rm = sub(n2, mul(fn, kn)), sub(m2, mul(fm, km))
    yo, xo = IVar("yo"), IVar("xo")
    tile = Let("bx",
               gen("yb", 0, kn + 2, gen("xi", 0, km,
                                        blurx(add(mul(yo, kn), "yb"),
                                              add(add(mul(xo, km), "xi"), 1)))),
               gen("yi", 0, kn, gen("xi", 0, km,
                                    add3(tap("bx", "yi", "xi"), tap("bx", add("yi", 1), "xi"),
                                         tap("bx", add("yi", 2), "xi")))))
    full_cols = Flatten(fm, IConst(km), gen("xo", 0, fm, Transpose(IConst(kn), IConst(km), tile)))
    part_cols = gen("x", 0, rm, gen("yi", 0, kn, fused(add(add(mul(yo, kn), "yi"), 1),
                                                       add(add(mul(fm, km), "x"), 1))))
    row_of_tiles = Transpose(m2, IConst(kn), Concat(mul(fm, km), rm, full_cols, part_cols))
    full_rows = Flatten(fn, IConst(kn), gen("yo", 0, fn, row_of_tiles))
    part_rows = gen("y", 0, rn, gen("x", 0, m2, fused(add(add(mul(fn, kn), "y"), 1),
                                                      add("x", 1))))
    interior = Concat(mul(fn, kn), rn, full_rows, part_rows)
    col0 = gen("x", 0, 1, gen("y", 1, sub(N, 1), fused("y", "x")))
    coln = gen("x", sub(M, 1), M, gen("y", 1, sub(N, 1), fused("y", "x")))
    middle = Transpose(M, n2, Concat(ONE, sub(M, 1), col0,
                                     Concat(m2, ONE, Transpose(n2, m2, interior), coln)))
    return fused_rows(middle)


SCHEDULES = {"two-stage": two_stage, "fused": fused_all, "tiled": tiled}
ENV = {"v": (N, M)}
# The schedules peel a first and last row and column (Blur.v: Hn : 2 <= n, Hm : 2 <= m).
ASSUME = (PCmp("<=", IConst(2), N), PCmp("<=", IConst(2), M))


def numpy_blur(img: np.ndarray) -> np.ndarray:
    p = np.pad(img.astype(np.float64), 1)
    bx = p[:, :-2] + p[:, 1:-1] + p[:, 2:]
    return bx[:-2] + bx[1:-1] + bx[2:]


# ---------------------------------------------------------------------------
# Halide


HALIDE_LANES = 8  # the vectorize factor of the paper's Halide schedules
# The vectorized rows' Halide counterpart (tile+vec) vectorizes by our kernels' lanes:
# 16 floats where ours is the AVX-512 derivation, so both sides use the same vector width.
ISA_LANES = {"avx2": 8, "avx512": 16}
# The vectorized rows' derivations: the borders peeled (BlurVec.v) and as masked loads.
DEFAULT_VEC_FILES = (str(cm.REPO_ROOT / "coq" / "Examples" / "BlurVec.v"),
                     str(cm.REPO_ROOT / "examples" / "blur_borders.v"))


def halide_blur(schedule: str, parallel: bool, vectorize: bool | None = None,
                lanes: int = HALIDE_LANES):
    """The paper's Halide schedules; the input is an ImageParam indexed [x, y].

    `vectorize` defaults to `parallel` (the paper's pairing); the vectorized rows
    use the tile schedule vectorized without parallel as Halide's 1-thread variant:
    the same loop nest a parallel(yo) loop runs on one thread, without the
    task-queue dispatch (the JIT runtime's thread count is fixed at its start).
    `lanes`: the vectorize factor (the paper's 8, or the ISA's for tile+vec)."""
    import halide as hl

    vectorize = parallel if vectorize is None else vectorize
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    clamped = hl.BoundaryConditions.constant_exterior(inp, 0.0)
    bx, by = hl.Func("blur_x"), hl.Func("blur_y")
    bx[x, y] = clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]
    by[x, y] = bx[x, y - 1] + bx[x, y] + bx[x, y + 1]
    if schedule == "two-stage":
        bx.compute_root()
        if parallel:
            bx.parallel(y)
            by.parallel(y)
        if vectorize:
            bx.vectorize(x, lanes)
            by.vectorize(x, lanes)
    elif schedule == "fused":
        if parallel:
            by.parallel(y)
        if vectorize:
            by.vectorize(x, lanes)
    else:
        xo, yo, xi, yi = hl.Var("xo"), hl.Var("yo"), hl.Var("xi"), hl.Var("yi")
        by.tile(x, y, xo, yo, xi, yi, 64, 64, hl.TailStrategy.GuardWithIf)
        bx.compute_at(by, xo)
        if parallel:
            by.parallel(yo)
        if vectorize:
            by.vectorize(xi, lanes)
            bx.vectorize(x, lanes)
    by.compile_jit(hl.get_jit_target_from_environment())
    return inp, by


def halide_runner(schedule: str, parallel: bool, img: np.ndarray, out: np.ndarray,
                  vectorize: bool | None = None, lanes: int = HALIDE_LANES):
    import halide as hl

    inp, by = halide_blur(schedule, parallel, vectorize, lanes)
    ib, ob = hl.Buffer(img), hl.Buffer(out)  # numpy [y][x] -> Halide (x, y)
    inp.set(ib)

    def run() -> None:
        by.realize(ob)

    return run


# ---------------------------------------------------------------------------


def sizes_for(kernel, n: int, m: int, tile: tuple[int, int]) -> dict[str, int]:
    """Image sizes, plus the tile sizes kn, km when a derived program keeps them symbolic
    (Blur.v's tiled derivation takes them as section variables)."""
    known = {"n": n, "m": m, "kn": tile[0], "km": tile[1]}
    return {a: known[a] for a, _ in kernel.lowered.sizes}


def load_programs(from_coq: bool, tile: tuple[int, int] = (64, 64)
                  ) -> tuple[dict[str, pipeline.CheckedProgram], str]:
    """The checked program of each schedule: Blur.v's derivations (one replay), or the
    hand-built programs above, whose bounds Coq's check_safe proves first."""
    if not from_coq:
        return {k: pipeline.check(pipeline.from_ast(f(), ENV, name=k.replace("-", "_"),
                                                    sizes=["n", "m"], assume=ASSUME))
                for k, f in SCHEDULES.items()}, "ast"
    root = Path(__file__).resolve().parents[1]
    names = {"two-stage": "blur_two_stage", "fused": "blur_fused", "tiled": "blur_tiled"}
    derived = pipeline.load_many(root / "coq" / "Examples" / "Blur.v", list(names.values()),
                                 timeout=1200)
    progs = {}
    for k, d in names.items():
        dp = derived[d]
        # The derivation holds for every tile size; fix ours (constant tiles fold into
        # the index arithmetic and give stack buffers).
        fixed = {s: v for s, v in (("kn", tile[0]), ("km", tile[1])) if s in dp.sizes}
        progs[k] = pipeline.check(dp, fix=fixed, name=k.replace("-", "_"))
    return progs, "coq"


COLS = ("ours-1t", "halide-1t", "ours-par", "halide-par")


def choose_isa(args: argparse.Namespace) -> None:
    """Fill --isa (auto: the widest vector ISA the CPU runs, as bench sgemm and conv do,
    issue 16's `native` default) and the vectorized rows' targets and Halide lanes
    from it.  An AVX2 default on an AVX-512 machine would show the user's second-best
    kernel; Halide's counterpart row gets the same vector width."""
    args.isa_auto = args.isa == "auto"
    args.isa_note = ""
    if args.isa_auto:   # avx2 on a CPU with neither: its rows then say why they cannot run
        args.isa = best_vector_isa()
        has = "has" if "avx512f" in cpu_flags() else "lacks"
        args.isa_note = f" (auto: the CPU {has} avx512f)"
    args.vec_target = args.vec_target or args.isa
    args.vec_par_target = args.vec_par_target or f"{args.isa}-openmp"
    args.vec_lanes = ISA_LANES[args.isa]


def load_vectorized(args: argparse.Namespace, fast: bool) -> list[cm.Ours]:
    """The derivations of each --vec-file lowered with the ISA's targets, serial and
    OpenMP; a single entry per file saying why when it has none."""
    fixed = {"kn": args.tile[0], "km": args.tile[1]}
    out = []
    found: set[str] = set()
    for f in args.vec_file or DEFAULT_VEC_FILES:
        path = Path(f)
        every = cm.derivations_in(path) if path.is_file() else []
        if args.vec_derivation:
            names: list[str | None] = [d for d in args.vec_derivation if d in every]
            found.update(n for n in names if n)
            if not names:
                continue
        else:
            # The derivations for --isa's instruction family (BlurVec.v derives blur_avx2
            # and blur_avx512; each ISA's target refuses the other's); all of them if none
            # is named so.
            names = [d for d in every if args.isa in d] or every or [None]
        for name in names:
            out.append(cm.load_ours(path, name, fixed,
                                    [("ours-1t", args.vec_target),
                                     ("ours-par", args.vec_par_target)],
                                    {"n", "m"}, fast_math=fast, timeout=1200, only_blocks=False))
    missing = [d for d in args.vec_derivation if d not in found]
    if missing:
        raise SystemExit(f"verisched bench blur: no --vec-file has derivation(s) "
                         f"{', '.join(missing)}")
    return out


def check_and_bind(k, img, small, want, args, what: str):
    """Check a kernel against the numpy blur at the benchmark size and at a small
    odd size, then bind it to the benchmark image."""
    n, m = img.shape
    for im, ref in ((small, numpy_blur(small)), (img, want)):
        got = k.call({"v": im}, sizes_for(k, *im.shape, args.tile))
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4, err_msg=f"ours {what}")
    out = np.empty((n, m), dtype=np.float32)
    return k.bind({"v": img}, sizes_for(k, n, m, args.tile), out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench blur", description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=cm.positive_int, nargs=2, default=(2000, 2000),
                    metavar=("N", "M"))
    ap.add_argument("--repeat", type=cm.positive_int, default=30)
    ap.add_argument("--threads", type=cm.positive_int, default=os.cpu_count() or 1)
    ap.add_argument("--no-fast-math", action="store_true",
                    help="compile our kernels without -ffast-math (the paper used it)")
    ap.add_argument("--no-halide", action="store_true")
    ap.add_argument("--tile", type=cm.positive_int, nargs=2, default=(64, 64), metavar=("KN", "KM"),
                    help="tile sizes for derivations that keep them symbolic")
    ap.add_argument("--from-ast", action="store_true",
                    help="use the hand-built programs instead of the derivations of "
                         "coq/Examples/Blur.v (refused: they are not proved in bounds)")
    ap.add_argument("--from-coq", action="store_true",
                    help="the default (kept so that old command lines still work)")
    ap.add_argument("--vec-file", action="append", default=[],
                    help="a file of vectorized derivations (rows vec:NAME); repeatable "
                         "(default: coq/Examples/BlurVec.v and examples/blur_borders.v)")
    ap.add_argument("--vec-derivation", action="append", default=[],
                    help="only these derivations of the --vec-files (default: all for --isa)")
    ap.add_argument("--isa", choices=("auto", *ISA_LANES), default="auto",
                    help="the vectorized rows' instruction set: BlurVec.v's derivations for it, "
                         "lowered with its targets, against Halide vectorized by its lanes "
                         "(default auto: AVX-512 where the CPU has avx512f, else AVX2)")
    ap.add_argument("--vec-target", choices=cm.TARGETS, metavar="TARGET", default=None,
                    help="default: the --isa target")
    ap.add_argument("--vec-par-target", choices=cm.TARGETS, metavar="TARGET", default=None,
                    help="default: the --isa OpenMP target")
    ap.add_argument("--no-vec", action="store_true", help="skip the vectorized rows")
    ap.add_argument("--quiet-wait", type=cm.nonnegative_float, default=10.0,
                    help="wait up to this many seconds for other processes to leave the "
                         "CPUs idle before timing")
    ap.add_argument("--out-dir", type=cm.out_dir_arg, default=str(cm.RESULTS_DIR))
    args = ap.parse_args(argv)
    # libgomp reads this when our first OpenMP kernel loads.  Spinning waits at the
    # barriers lose badly on a loaded 2-core machine (measured: 33 ms vs 6 ms for the
    # two-stage blur), so sleep unless the caller chose otherwise.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    # Our OpenMP threads bound to cores, as bench_sgemm does.
    cm.bind_omp_threads()
    # Halide's JIT runtime reads its thread count once, when its pool starts.
    os.environ.setdefault("HL_NUM_THREADS", str(args.threads))
    n, m = args.size
    if n < 2 or m < 2:
        print("bench blur: the schedules peel a first and last row and column: need N, M >= 2",
              file=sys.stderr)
        return 2
    choose_isa(args)
    lanes = max(HALIDE_LANES, args.vec_lanes if not args.no_vec else 0)
    if m < lanes and not args.no_halide:
        # Halide's vectorize(x, 8) shifts its last vector inwards, so a row narrower
        # than one vector is read before its start (a HalideError minutes in).
        print(f"bench blur: Halide's schedules vectorize rows by {lanes}: need "
              f"M >= {lanes} (or --no-halide)", file=sys.stderr)
        return 2
    try:
        progs, origin = load_programs(not args.from_ast, tuple(args.tile))
    except CodegenError as exc:
        print(f"bench blur: cannot use the Coq derivations: {exc}", file=sys.stderr)
        return 1
    rng = np.random.default_rng(0)
    img = rng.standard_normal((n, m)).astype(np.float32)
    want = numpy_blur(img)
    small = rng.standard_normal((67, 131)).astype(np.float32)
    fast = not args.no_fast_math
    variants: list[cm.Variant] = []
    T = args.threads
    for tname, col in (("c", "ours-1t"), ("openmp", "ours-par")):
        t = pipeline.get_target(tname)
        src = pipeline.render([pipeline.lower(c, t) for c in progs.values()])
        kernels = pipeline.build(src, fast_math=fast)
        for key, checked in progs.items():
            k = kernels[checked.name]
            if t.parallel:
                k.set_threads(args.threads)
            run = check_and_bind(k, img, small, want, args, f"{key} [{tname}]")
            variants.append(cm.steady((key, col), run, threads=T if t.parallel else 1))
    vec: list[cm.Ours] = []
    if not args.no_vec:
        print(f"replaying and lowering {', '.join(args.vec_file or DEFAULT_VEC_FILES)} ...",
              flush=True)
        vec = load_vectorized(args, fast)
        for ours in vec:
            if ours.missing:
                print(f"NO VECTORIZED KERNEL: {ours.missing}")
                continue
            row = "vec:" + ours.origin.rsplit(":", 1)[-1]
            for col, k in ours.kernels.items():
                if col == "ours-par":
                    k.set_threads(args.threads)
                run = check_and_bind(k, img, small, want, args, f"{row} [{col}]")
                variants.append(cm.steady((row, col), run,
                                          threads=T if col == "ours-par" else 1))
    halide_rows = list(progs) + (["tile+vec"] if not args.no_vec else [])
    args.halide_note = ""
    if not args.no_halide and importlib.util.find_spec("halide") is None:
        # An optional peer: run without it and say so (in the report too).
        args.halide_note = ("Halide is not installed (pip install 'verisched[bench]'): "
                            "the Halide columns are empty and no speed ratio is given")
        print(f"bench blur: {args.halide_note}", file=sys.stderr)
        args.no_halide = True
    if not args.no_halide:
        for key in halide_rows:
            sched = "tiled" if key == "tile+vec" else key
            for col, par, vecz in (("halide-1t", False, key == "tile+vec"),
                                   ("halide-par", True, True)):
                out = np.empty((n, m), dtype=np.float32)
                run = halide_runner(sched, par, img, out, vecz,
                                    args.vec_lanes if key == "tile+vec" else HALIDE_LANES)
                with cm.unbound():  # the first parallel pipeline starts Halide's pool
                    run()
                np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4,
                                           err_msg=f"halide {key} {col}")
                variants.append(cm.steady((key, col), run, threads=T if par else 1))
    # The memory floor: a blur reads the image and writes one of the same size, as a
    # copy does; timed in the same round-robin.
    copy_out = np.empty_like(img)
    variants.append(cm.steady(("copy", "numpy"), lambda: np.copyto(copy_out, img)))
    load_before = os.getloadavg()
    cm.wait_for_quiet(args.quiet_wait)
    other = cm.OtherLoad()
    cm.time_round_robin(variants, args.repeat, warmup=3)
    others = other.cores()
    steal = other.steal()
    results: dict[str, dict[str, float]] = {}
    samples: dict[str, dict[str, list[float]]] = {}
    for v in variants:
        results.setdefault(v.key[0], {})[v.key[1]] = v.median()
        samples.setdefault(v.key[0], {})[v.key[1]] = list(v.times_ms)
    copy_ms = results.pop("copy")["numpy"]
    samples.pop("copy")
    report(results, args, origin, fast, load_before, vec, copy_ms, others, samples, steal)
    return 0


def _speed(r: dict[str, float], ours: str, peer: str) -> float | None:
    return r[peer] / r[ours] if ours in r and peer in r else None


def report(results: dict[str, dict[str, float]], args: argparse.Namespace, origin: str,
           fast: bool, load_before: tuple[float, float, float], vec: list[cm.Ours],
           copy_ms: float, others: float,
           samples: dict[str, dict[str, list[float]]] | None = None,
           steal: float = 0.0) -> None:
    n, m = args.size
    T = args.threads
    # The vectorized rows have their own Halide counterpart (tile+vec); put it last.
    vec_rows = [k for k in results if k.startswith("vec:")]
    if "tile+vec" in results:
        for k in vec_rows:
            for col in ("halide-1t", "halide-par"):
                results[k][col] = results["tile+vec"][col]
                if samples and col in samples.get("tile+vec", {}):
                    samples.setdefault(k, {})[col] = samples["tile+vec"][col]
    head = [
        f"# 3x3 blur {n}x{m} float32 vs Halide "
        f"({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC)",
        "",
        f"- code: commit {cm.source_revision()}; {cm.cpu_model()}",
        f"- median of {args.repeat} interleaved runs (ms); scalar rows: ours from {origin} "
        f"(`c` / `openmp` targets){', -ffast-math' if fast else ''}",
        f"- parallel columns: {T} thread(s); {cm.omp_env()}, "
        f"HL_NUM_THREADS={os.environ.get('HL_NUM_THREADS')}",
        "- scalar rows (two-stage, fused, tiled): Halide 1t = the schedule without parallel "
        "and vectorize; Halide par = parallel + vectorize(8) (the ATL paper's pairing)",
        "- vectorized rows (vec:NAME, ours from BlurVec.v, borders peeled, and "
        "blur_borders.v's `_masked`, borders as masked loads, lowered with "
        f"`{args.vec_target}` / `{args.vec_par_target}`; --isa {args.isa}"
        f"{args.isa_note}"
        "): Halide tile(64,64) + compute_at + "
        f"vectorize({args.vec_lanes}), the same vector width, without parallel (1t) and with "
        "parallel(yo) (par); row tile+vec is that Halide schedule alone",
        "- speed = Halide time / our time in the same column pair (> 1: ours faster); "
        + cm.INTERVAL_NOTE,
        f"- memory floor: copying the image (numpy, 1 thread) takes {copy_ms:.3f} ms "
        f"({2 * 4 * n * m / copy_ms / 1e6:.1f} GB/s read + write); a blur moves the same bytes",
        *[f"- {x}" for x in cm.load_lines(load_before)],
        f"- other processes used {others:.1f} core(s) on average while timing",
        *[f"- warning: {x}" for x in [cm.steal_note(steal)] if x],
    ]
    if getattr(args, "halide_note", ""):
        head += ["", f"**{args.halide_note}.**"]
    for ours in vec:
        if ours.missing:
            head += ["", f"**No vectorized blur kernel in this run: {ours.missing}.** "
                     "The vectorized rows show Halide only."]
    headers = ["schedule", *COLS, "speed 1t", "90% interval", "speed par", "90% interval"]
    rows = []
    intervals: dict[str, dict[str, tuple[float, float] | None]] = {}
    for key, r in results.items():
        s = (samples or {}).get(key, {})
        iv = intervals[key] = {
            col: cm.ratio_interval(s.get(f"halide-{col}", []), s.get(f"ours-{col}", []))
            for col in ("1t", "par")}
        rows.append([key, *(cm.fmt(r.get(c), 3) for c in COLS),
                     cm.fmt(_speed(r, "ours-1t", "halide-1t")), cm.fmt_interval(iv["1t"]),
                     cm.fmt(_speed(r, "ours-par", "halide-par")), cm.fmt_interval(iv["par"])])
    md = "\n".join(head) + "\n\n" + cm.md_table(headers, rows) + "\n"
    notes = analysis(results, copy_ms, others, T)
    md += "\n" + "\n".join(notes) + "\n"
    print("\n".join(h.removeprefix("# ").removeprefix("- ") for h in head))
    print(cm.text_table(headers, rows))
    print("\n".join(notes))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {"size": [n, m], "repeat": args.repeat, "threads": T, "origin": origin,
            "commit": cm.source_revision(), "fast_math": fast,
            "load_average_before": load_before, "speed_convention": "halide_ms / ours_ms",
            "speed_interval_90": intervals,
            "median_ms": results, "samples_ms": samples or {}, "copy_ms": copy_ms,
            "other_cores": others, "steal_cores": steal,
            "halide_note": getattr(args, "halide_note", ""),
            "vectorized": [{"origin": o.origin, "missing": o.missing} for o in vec]}
    atomic_write(out_dir / "blur.json", json.dumps(data, indent=2))
    fig = _plots.blur(data)
    for p in cm.write_outputs(out_dir, "blur", md, fig):
        print(f"wrote {p}")


def analysis(results: dict[str, dict[str, float]], copy_ms: float, others: float,
             T: int) -> list[str]:
    """Where we lose and why, computed from this run's numbers."""
    out = ["## Where we lose, and why", ""]
    if others > 0.3:
        out += [f"Caution: other processes kept {others:.1f} core(s) busy while timing; the "
                f"{T}-thread columns then time-share cores and say little.", ""]
    losses = []
    for key, r in results.items():
        for ours, peer in (("ours-1t", "halide-1t"), ("ours-par", "halide-par")):
            sp = _speed(r, ours, peer)
            if sp is not None and sp < 0.95:
                losses.append((key, ours, sp))
    compared = any(_speed(r, o, p) is not None for r in results.values()
                   for o, p in (("ours-1t", "halide-1t"), ("ours-par", "halide-par")))
    if not compared:
        out.append("No comparison in this run: Halide was not run.")
    elif not losses:
        out.append("Nowhere by more than 5% in this run.")
    for key, r in results.items():
        if key.startswith("vec:") and "ours-1t" in r:
            line = (f"- {key}: {r['ours-1t']:.2f} ms on 1 thread, {r['ours-1t'] / copy_ms:.2f}x "
                    "the image copy: the vectorized blur is bound by memory traffic")
            if "fused" in results:
                line += (f"; our scalar fused kernel, which gcc vectorizes by itself at -O3 "
                         f"-march=native, takes {results['fused']['ours-1t']:.2f} ms")
            out.append(line + ".")
    for key, col, sp in losses:
        r = results[key]
        why = []
        if col == "ours-par":
            scale = r["ours-1t"] / r["ours-par"]
            why.append(f"our {T}-thread kernel is {scale:.2f}x our 1-thread one")
            if r["ours-1t"] < 2.5 * copy_ms:
                why.append(f"the 1-thread kernel already runs within {r['ours-1t'] / copy_ms:.1f}x "
                           f"of the memory copy ({copy_ms:.2f} ms), so a second core adds "
                           "bandwidth only if one core could not saturate memory; fork/join "
                           "and passive wake-ups cost tens of microseconds per parallel region")
            if key == "two-stage":
                why.append("the two-stage schedule has two parallel regions (the blur_x buffer, "
                           "then the output), each with its own barrier; Halide's "
                           "compute_root stages too, but vectorized")
        else:
            why.append(f"ours {r['ours-1t']:.2f} ms vs Halide {r['halide-1t']:.2f} ms; the "
                       f"copy floor is {copy_ms:.2f} ms")
        out.append(f"- {key}, {col}: speed {sp:.2f}: " + "; ".join(why) + ".")
    return out


if __name__ == "__main__":
    sys.exit(main())
