"""`verisched bench conv`: 3x3 convolution against PyTorch's CPU conv2d (oneDNN).

The layer of the Exo thesis's x86 CONV experiment (Sec. 7.2, Fig. 7-3, after
Halide's hand-scheduled one): batch 5, 128 -> 128 channels, 3x3 kernel,
stride 1, no padding ("valid": the 82x102 input gives the 80x100 output),
float32; no bias and no ReLU (Exo's version adds a ReLU, which costs one
pass over the output).  FLOPs = 2·N·Co·Ci·9·Ho·Wo = 11.8 GFLOP.

Contenders, timed round-robin in the same run, 1 and 2 threads:
  torch   torch.nn.functional.conv2d (oneDNN on x86) twice: on NCHW tensors
          (PyTorch's default layout; oneDNN reorders the input, weights and
          output to its blocked layout inside the timed call) and on
          channels_last (NHWC) tensors, the layout ours reads, which oneDNN
          takes without reordering the activations (measured on the Ice Lake
          VM: 14-16% faster on 1 thread).  Speed is against the faster of the
          two at each thread count: a user would pick it.  Threads set with
          torch.set_num_threads before each timed call (untimed).  conv2d has
          no `out=`, so the timed call allocates its 20 MB result, as every
          torch caller's does; ours writes into a preallocated array.
  ours    the kernel derived in coq/Examples/Conv.v, replayed, lowered with the
          AVX-512 library where the CPU has avx512f (the 3x3 taps as depth
          blocks, the input read in place: `conv_avx512_kc64`, 6x64 tiles, or
          `conv_avx512_kc`, 6x32 tiles, whichever is faster in an untimed trial
          before timing; with --no-plan, the 6x64 one where one tap's 64-channel
          weight panel fits L1 by the cache model of targets/blocking.py (a 48
          KiB L1: Intel Xeon), else 6x32 (a 32 KiB L1: AMD Zen 4);
          docs/decisions.md #108, #109), else AVX2 (`conv_avx2`, 6x16), serial
          and with OpenMP (2 threads); --isa picks one, --derivation another
          derivation of the file.  Its inputs are
          laid out as the derivation's shapes say (the benchmark matches
          numpy's NCHW arrays to them by extents, checking every candidate
          layout against the reference).
Times are medians of --repeat interleaved runs; speed = torch time / our
time (> 1: ours faster); % peak uses the FMA peak measured in the same run.
Writes conv.md, conv.json and conv.png into --out-dir atomically.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as cm  # noqa: E402
import _peak as pk  # noqa: E402
import _plots  # noqa: E402

from verisched.targets.auto import best_vector_isa  # noqa: E402
from verisched.targets.blocking import CacheSizes, cache_sizes, l1_depth  # noqa: E402
from verisched.targets.registry import get_target  # noqa: E402

BATCH, CI, CO, HO, WO, KH, KW = 5, 128, 128, 80, 100, 3, 3
DEFAULT_FIX: dict[str, int] = {}
# Conv.v's derivations by their register tile's width in output channels (6 pixels by
# that many channels: `conv_schedule 16 8`, `conv_schedule 32 16`, `conv_kc_schedule
# 32 2` and `conv_kc_schedule 64 4`), and whether the taps are depth blocks.
TILE_WIDTH = {"conv_avx2": 16, "conv_avx512": 32, "conv_avx512_kc": 32, "conv_avx512_kc64": 64}
DEPTH_BLOCKED = {"conv_avx512_kc", "conv_avx512_kc64"}


def tile_width(name: str, isa: str) -> int:
    """The register tile's width in channels of derivation `name` (2 vectors of the
    ISA for one not in TILE_WIDTH)."""
    return TILE_WIDTH.get(name, 2 * get_target(isa).isa.lanes)


# The candidates per ISA, widest tile first; the last is taken when none fits L1.
CANDIDATES = {"avx512": ("conv_avx512_kc64", "conv_avx512_kc"), "avx2": ("conv_avx2",)}


def default_derivation(isa: str, caches: CacheSizes | None = None) -> str:
    """The derivation of Conv.v timed by default: of the ISA's candidates, the first
    (widest tile) whose weight panel for one tap (CI channels deep, the tile's width
    wide) stays in L1 by the model of targets/blocking.py (`l1_depth`).  AVX-512: the
    6 x 64 tile where L1 holds CI = 128 steps of a 64-wide panel (48 KiB 12-way: Intel
    Xeon; measured 0.97-1.01x torch on 1 thread against 0.89-0.92x for 6 x 32 there,
    docs/decisions.md #108), else the 6 x 32 tile (32 KiB 8-way: AMD Zen 4, where it
    ran its loops at 98% of peak).  AVX2: the 6 x 16 tile."""
    names = CANDIDATES[isa]
    return next((n for n in names if l1_depth(TILE_WIDTH[n], caches=caches) >= CI), names[-1])
# Layer sizes by the names a derivation may give them (Conv.v: NB, H, W, CI, KO), lower case.
SIZE_NAMES = {"n": BATCH, "nb": BATCH, "b": BATCH, "ci": CI, "c": CI, "co": CO, "ko": CO,
              "k": CO, "h": HO, "ho": HO, "y": HO, "w": WO, "wo": WO, "x": WO}


# Shown by `verisched bench --help` (read without importing this module).
PEERS = "PyTorch conv2d / oneDNN (PyPI torch; optional)"
DURATION = "about 40 s on the 2-core development machine (34 s measured)"


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Valid 3x3 correlation in float64, NCHW, independent of torch: windows of the
    input contracted with the weights over (ci, ky, kx)."""
    win = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), (KH, KW), axis=(2, 3))
    out = np.tensordot(win, w.astype(np.float64), axes=([1, 4, 5], [1, 2, 3]))  # n,y,x,co
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


# The peer's two variants (median keys "torch-1t", "torch_nhwc-1t", ...): NCHW tensors,
# and channels_last ones (module docstring).
TORCH, TORCH_NHWC = "torch", "torch_nhwc"


def peer(med: dict[str, float], t: int) -> str:
    """The key of torch's faster layout at `t` threads ("torch-2t" or "torch_nhwc-2t"),
    against which ours is compared; NCHW alone in a result from before NHWC was timed."""
    keys = [k for k in (f"{TORCH}-{t}t", f"{TORCH_NHWC}-{t}t") if k in med]
    return min(keys, key=lambda k: med[k]) if keys else f"{TORCH}-{t}t"


def layouts(arr: np.ndarray, want: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Axis permutations of `arr` whose shape is `want`."""
    return [p for p in itertools.permutations(range(arr.ndim))
            if tuple(arr.shape[i] for i in p) == tuple(want)]


def bind_ours(kernel, x: np.ndarray, w: np.ndarray, want: np.ndarray):
    """Feed NCHW x and OIHW w to our kernel in its own layout; return (run, out,
    description) for the first layout whose result matches the reference."""
    lw = kernel.lowered
    sizes_needed = {a for a, _ in lw.sizes}
    known = SIZE_NAMES
    sizes = {}
    for a in sizes_needed:
        if a.lower() not in known:
            raise ValueError(f"unknown size parameter {a!r} (fix it with --fix)")
        sizes[a] = known[a.lower()]
    ins, out_shape = kernel.extents(sizes)
    if len(ins) != 2:
        raise ValueError(f"expected two inputs (image, weights), got {sorted(ins)}")
    names = sorted(ins, key=lambda a: -sum(d == 3 for d in ins[a]))
    wname, xname = names[0], names[1]
    cands = []
    for px in layouts(x, ins[xname]):
        for pw in layouts(w, ins[wname]):
            for po in layouts(want, out_shape):
                cands.append((px, pw, po))
    if not cands:
        raise ValueError(f"no layout of x {x.shape}, w {w.shape} fits the kernel's "
                         f"{xname} {ins[xname]}, {wname} {ins[wname]}, out {out_shape}")
    for px, pw, po in cands:
        xs = cm.aligned(x.transpose(px))
        ws = cm.aligned(w.transpose(pw))
        out = cm.aligned_empty(out_shape, np.float32)
        run = kernel.bind({xname: xs, wname: ws}, sizes, out)
        if np.allclose(out, want.transpose(po), rtol=1e-3, atol=1e-2):
            desc = (f"{xname} = x.transpose{px}, {wname} = w.transpose{pw}, "
                    f"out = NCHW.transpose{po}")
            return run, desc
    raise ValueError(f"no layout gives the reference result (tried {len(cands)})")


def load(args: argparse.Namespace, name: str) -> cm.Ours:
    """Derivation `name` of --ours-file, replayed and built serial and with OpenMP."""
    print(f"replaying and lowering {args.ours_file} :: {name} ...", flush=True)
    return cm.load_ours(Path(args.ours_file), name, {**DEFAULT_FIX, **cm.fix_args(args.fix)},
                        [("1t", args.target), (f"{args.threads}t", args.par_target)],
                        {c for k in SIZE_NAMES for c in (k, k.upper())},
                        fast_math=args.fast_math)


def bind_kernels(ours: cm.Ours, x: np.ndarray, w: np.ndarray, want: np.ndarray,
                 threads: int) -> tuple[dict, str]:
    """Every kernel of `ours` bound to the layer (the multi-threaded ones given the
    thread count), by label, and the layout they read it in; raises ValueError or
    CodegenError where one cannot run on it."""
    runs, layout = {}, ""
    for label, kernel in ours.kernels.items():
        if label != "1t":
            kernel.set_threads(threads)
        runs[label], layout = bind_ours(kernel, x, w, want)
    return runs, layout


def plan(args: argparse.Namespace, names: list[str], x: np.ndarray, w: np.ndarray,
         want: np.ndarray) -> tuple[cm.Ours, tuple[dict, str] | None]:
    """The derivation to time: the only one named, or of several candidates the one
    whose kernels (one 1-thread and one multi-threaded call) are faster in an untimed
    trial (`cm.fastest`), so the tile width is measured on this machine, not inferred
    from its L1 (`default_derivation`, the rule --no-plan keeps; #108, #109).  Sets
    `args.derivation` to the one kept, which the report names.  With a trial, the
    kept kernels come back bound (`bind_kernels`), else None: the caller binds them."""
    loaded = {n: load(args, n) for n in names}
    ready = {n: o for n, o in loaded.items() if not o.missing}
    if len(ready) < 2:
        return next(iter(ready.values()), loaded[names[0]]), None
    bound, unfit = {}, []
    for n, o in ready.items():
        try:
            bound[n] = bind_kernels(o, x, w, want, args.threads)
        except (ValueError, cm.CodegenError) as exc:
            unfit.append(f"{n} cannot be run on this layer: {exc}")
    if len(bound) < 2:
        n = next(iter(bound), next(iter(ready)))
        ready[n].notes.extend(unfit)
        return ready[n], bound.get(n)
    calls = {n: (lambda runs=runs: [r() for r in runs.values()])
             for n, (runs, _) in bound.items()}
    best = cm.fastest(calls, warm_ms=10.0)
    args.derivation = best
    others = ", ".join(n for n in bound if n != best)
    ready[best].notes.append(f"{best} was the faster in an untimed trial against {others} "
                             f"({cm.TRIAL_ROUNDS} rounds of at least {cm.TRIAL_MIN_CALLS} "
                             "timed pairs of a 1-thread and a multi-threaded call each, after "
                             "one untimed pair); --no-plan picks by the L1 rule")
    ready[best].notes.extend(unfit)
    return ready[best], bound[best]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench conv",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=cm.positive_int, default=10,
                    help="interleaved timed rounds (default 10)")
    ap.add_argument("--threads", type=cm.parallel_threads, default=2,
                    help="the multi-threaded count (at least 2; default 2)")
    ap.add_argument("--ours-file", type=cm.existing_file,
                    default=str(cm.REPO_ROOT / "coq" / "Examples" / "Conv.v"),
                    help="the .v file of our derivations (default coq/Examples/Conv.v)")
    ap.add_argument("--isa", choices=("auto", "avx2", "avx512"), default="auto",
                    help="auto: avx512 where the CPU has avx512f (PyTorch's oneDNN uses it "
                         "there too), else avx2; picks the derivation and the targets")
    ap.add_argument("--derivation", default=None,
                    help="default: for avx512 the faster of conv_avx512_kc64 and "
                         "conv_avx512_kc in an untimed trial (with --no-plan, the widest "
                         "whose weight panel fits L1), conv_avx2 for avx2")
    ap.add_argument("--no-plan", action="store_true",
                    help="pick the default derivation by the L1 rule instead of timing the "
                         "candidates first")
    ap.add_argument("--target", choices=cm.TARGETS, metavar="TARGET", default=None,
                    help="default: native (the derivation's ISA)")
    ap.add_argument("--par-target", choices=cm.TARGETS, metavar="TARGET", default=None,
                    help="default: native-openmp")
    ap.add_argument("--fix", action="append", default=[],
                    help="block size NAME=INT, repeatable or comma-separated")
    ap.add_argument("--fast-math", action="store_true")
    ap.add_argument("--no-ours", action="store_true")
    ap.add_argument("--no-profile", action="store_true",
                    help="skip the perf profile of our kernel (needs `perf`)")
    ap.add_argument("--quiet-wait", type=cm.nonnegative_float, default=10.0,
                    help="wait up to this many seconds for other processes to leave the "
                         "CPUs idle before timing")
    ap.add_argument("--out-dir", type=cm.out_dir_arg, default=str(cm.RESULTS_DIR))
    args = ap.parse_args(argv)
    isa = args.isa = args.isa if args.isa != "auto" else best_vector_isa()
    candidates = [args.derivation] if args.derivation else (
        [default_derivation(isa)] if args.no_plan else list(CANDIDATES[isa]))
    args.derivation = candidates[0]
    args.target = args.target or "native"  # builds conv_<isa> with <isa> (targets/auto.py)
    args.par_target = args.par_target or "native-openmp"
    # Before torch loads its OpenMP runtime: idle workers sleep instead of spinning, so
    # the interleaved variants do not slow each other (see bench_blur.py).
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    # Threads bound to cores, as bench_sgemm does (read by torch's OpenMP at import and
    # by ours with the first kernel).
    cm.bind_omp_threads()
    try:
        import torch
    except ImportError:
        print("bench conv: PyTorch is missing (pip install 'verisched[bench]')",
              file=sys.stderr)
        return 2
    started = datetime.datetime.now(datetime.timezone.utc)
    T = args.threads
    rng = np.random.default_rng(0)
    x = cm.aligned(rng.standard_normal((BATCH, CI, HO + KH - 1, WO + KW - 1)).astype(np.float32))
    w = cm.aligned((rng.standard_normal((CO, CI, KH, KW)) / np.sqrt(CI * KH * KW))
                   .astype(np.float32))
    want = reference(x, w)
    bound = None
    if args.no_ours:
        ours = cm.Ours("(not run)", missing="not run (--no-ours)")
    else:
        ours, bound = plan(args, candidates, x, w, want)
    print("measuring the FMA peak ...", flush=True)
    peak = {1: pk.fma_peak_gflops(1, isa=args.isa), T: pk.fma_peak_gflops(T, isa=args.isa)}
    flops = 2.0 * BATCH * CO * CI * KH * KW * HO * WO
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    nhwc = torch.channels_last
    tensors = {TORCH: (tx, tw),
               TORCH_NHWC: (tx.contiguous(memory_format=nhwc), tw.contiguous(memory_format=nhwc))}
    conv = torch.nn.functional.conv2d
    variants: list[cm.Variant] = []
    for t in dict.fromkeys((1, T)):
        def prepare(t=t) -> None:
            torch.set_num_threads(t)
        for who, (ax, aw) in tensors.items():
            prepare()
            got = conv(ax, aw).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3,
                                       err_msg=f"bench conv: {who} {t}t gives a wrong result")

            def run(ax=ax, aw=aw) -> None:
                with torch.no_grad():
                    conv(ax, aw)
            variants.append(cm.steady((who, f"{t}t"), run, prepare, threads=t))
    layout = None
    if not ours.missing:
        try:
            runs, layout = bound or bind_kernels(ours, x, w, want, T)
            variants += [cm.steady(("ours", label), run, threads=1 if label == "1t" else T)
                         for label, run in runs.items()]
        except (ValueError, cm.CodegenError) as exc:
            ours = cm.Ours(ours.origin, missing=f"{ours.origin}: cannot be run on this "
                           f"layer: {exc}")
            variants = [v for v in variants if v.key[0] != "ours"]
    if ours.missing:
        print(f"NO DERIVED KERNEL: {ours.missing}")
    load_before = os.getloadavg()
    cm.wait_for_quiet(args.quiet_wait)
    other = cm.OtherLoad()
    cm.time_round_robin(variants, args.repeat)
    others = other.cores()
    steal = other.steal()
    profile = None
    if not ours.missing and not args.no_profile:
        k1 = ours.kernels["1t"]
        run1 = next(v.run for v in variants if v.key == ("ours", "1t"))
        profile = pk.perf_split(run1, k1.name, seconds=3.0)
    tile = None
    if profile:
        # The ceiling of the timed kernel's own register-tile loop (its 6 rows and
        # its vectors, operands in L1), against which its FMA loops are judged.
        width = tile_width(ours.origin.rsplit(":", 1)[-1], args.isa)
        print("measuring the register tile's loop alone ...", flush=True)
        tile = {"rows": 6, "width": width, "gflops": pk.tile_probe_gflops(
            args.isa, 6, width // get_target(args.isa).isa.lanes)}
    med = {f"{v.key[0]}-{v.key[1]}": v.median() for v in variants}
    best = {f"{v.key[0]}-{v.key[1]}": min(v.times_ms) for v in variants}
    samples = {f"{v.key[0]}-{v.key[1]}": list(v.times_ms) for v in variants}
    report(med, best, flops, peak, ours, layout, args, started, load_before, torch, others,
           profile, samples, tile, steal)
    return 0


def report(med, best, flops, peak, ours, layout, args, started, load_before, torch, others,
           profile, samples: dict[str, list[float]] | None = None,
           tile: dict | None = None, steal: float = 0.0) -> None:
    T = args.threads
    headers = ["threads", "torch NCHW ms", "torch NHWC ms", "GF/s", "% peak"]
    if not ours.missing:
        headers += ["ours ms", "GF/s", "% peak", "speed", "90% interval"]
    intervals = speed_intervals(samples or {}, T, med)
    rows = []
    for t in dict.fromkeys((1, T)):
        b = med[peer(med, t)]
        gb = flops / b / 1e6
        row = [str(t), *(f"{med[k]:.1f}" if k in med else "-"
                         for k in (f"{TORCH}-{t}t", f"{TORCH_NHWC}-{t}t")),
               f"{gb:.1f}", f"{100 * gb / peak[t]:.0f}"]
        if not ours.missing:
            o = med[f"ours-{t}t"]
            go = flops / o / 1e6
            row += [f"{o:.1f}", f"{go:.1f}", f"{100 * go / peak[t]:.0f}", f"{b / o:.2f}",
                    cm.fmt_interval(intervals.get(t))]
        rows.append(row)
    head = [
        f"# 3x3 conv, N={BATCH}, {CI}->{CO} channels, {HO}x{WO} output, float32 "
        f"({started:%Y-%m-%d %H:%M} UTC)",
        "",
        f"- input {BATCH}x{CI}x{HO + 2}x{WO + 2} (NCHW), valid padding, stride 1, no bias, "
        f"no ReLU; {flops / 1e9:.1f} GFLOP per call",
        f"- code: commit {cm.source_revision()}",
        f"- machine: {cm.cpu_model()}; measured FMA peak ({pk.peak_label(args.isa)}) "
        f"{peak[1]:.1f} GFLOP/s on 1 thread"
        + (f", {peak[T]:.1f} on {T}" if T > 1 else ""),
        f"- torch {torch.__version__} conv2d (mkldnn/oneDNN available: "
        f"{torch.backends.mkldnn.is_available()}), torch.set_num_threads before each call",
        f"- median of {args.repeat} interleaved runs (ms), {cm.omp_env()} for torch's and "
        "our OpenMP (idle workers sleep, so interleaved variants do not slow each other; "
        "threads bound to cores); results checked against a float64 numpy convolution first",
        *[f"- {x}" for x in cm.load_lines(load_before)],
        f"- other processes used {others:.1f} core(s) on average while timing (after waiting "
        f"up to {args.quiet_wait:g} s for idle CPUs)",
        *[f"- warning: {x}" for x in [cm.steal_note(steal)] if x],
        *[f"- warning: {x}" for x in
          [cm.unscaled_note(f"torch ({lay})", med[f"{k}-1t"], med.get(f"{k}-{T}t", 0.0), T)
           for k, lay in ((TORCH, "NCHW"), (TORCH_NHWC, "NHWC")) if f"{k}-1t" in med] if x],
    ]
    name = ours.origin.rsplit(":", 1)[-1]  # the derivation timed
    if ours.missing:
        head += ["", f"**No derived convolution kernel in this run: {ours.missing}.** "
                 "Only the peer was measured; there is no `ours` column."]
    else:
        head += [f"- ours: {ours.origin}, block sizes {ours.fixed or 'none'}, targets "
                 f"`{args.target}` / `{args.par_target}`; layout: {layout}",
                 "- speed = torch time / our time (> 1: ours faster), torch's time being "
                 "that of its faster layout at the thread count (GF/s and % peak are that "
                 f"layout's); {cm.INTERVAL_NOTE}",
                 *[f"- note: {n}" for n in ours.notes]]
        if name in DEPTH_BLOCKED:
            width = TILE_WIDTH[name]
            head.insert(-1, f"- ours is a depth-blocked derivation (the 3x3 taps as depth "
                        f"blocks, a 6 x {width} register tile, a {CI * width * 4 // 1024} KiB "
                        "weight panel per tile and tap, the input read in place without an "
                        "im2col panel); by default the AVX-512 run takes the faster of the 6 x 64 "
                        "and 6 x 32 tiles in an untimed trial (with --no-plan, the widest tile "
                        f"whose panel fits this machine's L1, {cache_sizes().describe()}; "
                        "docs/decisions.md #108, #109)")
    md = "\n".join(head) + "\n\n" + cm.md_table(headers, rows) + "\n"
    md += "\nBest (minimum) times, ms: " + ", ".join(f"{k} {v:.1f}" for k, v in best.items())
    md += "\n\n" + "\n".join(analysis(med, flops, peak, ours, T, others, profile,
                                          tile_width(name, args.isa),
                                          depth_blocked=name in DEPTH_BLOCKED,
                                          tile=tile, intervals=intervals)) + "\n"
    print()
    print("\n".join(h.removeprefix("# ").removeprefix("- ") for h in head))
    print(cm.text_table(headers, rows))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {"started": started.isoformat(), "commit": cm.source_revision(),
            "peak_gflops": peak, "repeat": args.repeat, "flops": flops,
            "title": f"3x3 conv {BATCH}x{CI}->{CO}, {HO}x{WO}",
            "median_ms": med, "best_ms": best, "samples_ms": samples or {},
            "speed_interval_90": {f"{t}t": iv for t, iv in intervals.items()},
            "ours": ours.origin, "ours_missing": ours.missing, "layout": layout,
            "other_cores": others, "steal_cores": steal, "perf_split": profile, "tile_probe": tile}
    cm.atomic_write(out_dir / "conv.json", json.dumps(data, indent=2))
    fig = _plots.conv(json.loads(json.dumps(data)), flops)  # as a replot reads it
    for p in cm.write_outputs(out_dir, "conv", md, fig):
        print(f"wrote {p}")


def speed_intervals(samples: dict[str, list[float]], T: int,
                    med: dict[str, float] | None = None) -> dict[int, tuple[float, float]]:
    """The 90% interval of each thread count's speed (torch / ours), where both sides
    have samples from the same rounds; torch's faster layout by `med` (NCHW without)."""
    out = {}
    for t in dict.fromkeys((1, T)):
        key = peer(med, t) if med else f"{TORCH}-{t}t"
        iv = cm.ratio_interval(samples.get(key, []), samples.get(f"ours-{t}t", []))
        if iv:
            out[t] = iv
    return out


def analysis(med, flops, peak, ours, T, others, profile, width: int = 16,
             depth_blocked: bool = False, tile: dict | None = None,
             intervals: dict[int, tuple[float, float]] | None = None) -> list[str]:
    """Where we lose and why, from this run's numbers and profile."""
    out = ["## Where we lose, and why", ""]
    ts = list(dict.fromkeys((1, T)))
    if ours.missing:
        out.append("Nothing to compare: no derived kernel.  The bar: torch reaches "
                   + ", ".join(f"{100 * flops / med[peer(med, t)] / 1e6 / peak[t]:.0f}% "
                               f"of the {t}-thread peak" for t in ts) + ".")
        return out
    if others > 0.3:
        out += [f"Caution: other processes kept {others:.1f} core(s) busy while timing; the "
                f"{T}-thread figures time-share cores.", ""]
    for t in ts:
        s = med[peer(med, t)] / med[f"ours-{t}t"]
        iv = (intervals or {}).get(t)
        layout = "NHWC" if peer(med, t).startswith(TORCH_NHWC) else "NCHW"
        out.append(f"- {t} thread(s): ours is {s:.2f}x torch's speed (on {layout}, its "
                   "faster layout here; "
                   + ("a loss" if s < 0.95 else "no loss")
                   + (f"; 90% interval over the rounds {cm.fmt_interval(iv)}" if iv else "")
                   + ").")
    if T > 1:
        out.append(f"- {T}-thread scaling: ours {med['ours-1t'] / med[f'ours-{T}t']:.2f}x, "
                   f"torch {med[peer(med, 1)] / med[peer(med, T)]:.2f}x.  Our parallel loops are "
                   f"the {BATCH} x {HO} output rows (GEN n, GEN y): {BATCH * HO} equal rows, so "
                   "the split is even"
                   + ("; with other processes busy, the second thread had no free core."
                      if others > 0.3 else "."))
    if profile:
        frac = profile["samples_pct_in_fma_loops"] / 100
        loop_gf = flops / med["ours-1t"] / 1e6 / max(frac, 1e-9)
        depth = CI if depth_blocked else 9 * CI
        panel_kib = depth * width * 4 / 1024
        l1_kib = cache_sizes().l1.size // 1024
        out.append(f"- perf (cpu-clock samples in our serial kernel): {100 * frac:.0f}% in its "
                   f"{profile['fma_loops']} innermost FMA loops, the rest in packing the "
                   + ("weights, zeroing the output row and adding each tap's tiles into it"
                      if depth_blocked else "weights and the per-row im2col panel and "
                      "storing tiles")
                   + f".  The FMA loops run at about {loop_gf:.0f} GFLOP/s "
                   f"({100 * loop_gf / peak[1]:.0f}% of the measured peak)."
                   + pk.tile_ceiling_sentence(loop_gf, tile, peak[1], 100 - 100 * frac)
                   + f"  Each 6x{width} "
                   f"register tile reduces over {depth} products, so its {width}-channel "
                   f"weight panel is {panel_kib:.0f} KiB"
                   + (f": the taps (r, s) are depth blocks (Conv.v's conv_kc_schedule, BLIS's "
                      f"kc level), against this machine's {l1_kib} KiB L1, and the input is "
                      "read in place, without an im2col panel.  On the AMD Zen 4 development "
                      "machine (32 KiB L1, 512-bit FMAs split in two) the 6 x 32 tile's loops "
                      "ran at 98% of peak with the panels in L2 already (conv_avx512); on a "
                      "core with two 512-bit FMA pipes the 6 x 64 tile's 24 FMAs per 10 loads "
                      "(against 12 per 8) matter more (docs/decisions.md #108)."
                      if depth_blocked else
                      f", against this machine's {l1_kib} KiB L1: the weight loads per step "
                      "come from L2 (the depth-blocked kernels block the taps instead; "
                      "oneDNN blocks the input channels)."))
    return out


if __name__ == "__main__":
    sys.exit(main())
