"""`verisched bench sgemm`'s "where we lose, and why": statements computed from a run's
numbers and from the generated code, so they stay true when the benchmark is rerun.
Apart from bench_sgemm.py, which measures, so that each stays one concern (and under the
800-line limit)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import _common as cm
import _peak as pk


def stalled_peer(results, T: int) -> list[str]:
    """The problems on which OpenBLAS on `T` threads took over 1.5x its 1-thread time.
    No BLAS is slower on more threads of an idle machine; seen on a 2-vCPU VM, where the
    host descheduled a vCPU and OpenBLAS's threads waited whole scheduler ticks at their
    barriers while ours ran at a third of its speed (docs/decisions.md #108): such a run
    is disturbed in every column, and the report says so."""
    if T <= 1:
        return []
    return [p.label for p, med in results if med[f"openblas-{T}t"] > 1.5 * med["openblas-1t"]]


# A problem large enough that OpenBLAS's T-thread call should beat its 1-thread call by
# well over cm.UNSCALED_SPEEDUP on any machine (512^3; the aspect rows are 2^27 too).
# Its 2-thread speedup in the committed runs: 1.53-2.27x on these, 1.24-1.44x in cache.
UNSCALED_MIN_MNK = 2 ** 27


def unscaled_peer(results, T: int) -> list[str]:
    """The problems (of at least UNSCALED_MIN_MNK multiply-adds) on which OpenBLAS on `T`
    threads was less than cm.UNSCALED_SPEEDUP times faster than on 1, and not stalled
    (stalled_peer names those).  Its workers then ran on one core, as when they were
    started from a thread bound to it (bench sgemm did so after an uncached replay
    until run_problem's reference moved into cm.unbound): against such a peer the
    T-thread speed ratio measures our threads against one core, not the libraries'
    parallel code, and the report must not let it pass as a win."""
    if T <= 1:
        return []
    stalled = set(stalled_peer(results, T))
    return [p.label for p, med in results
            if p.M * p.N * p.K >= UNSCALED_MIN_MNK and p.label not in stalled
            and med["openblas-1t"] < cm.UNSCALED_SPEEDUP * med[f"openblas-{T}t"]]


def stall_cause(results, stalled: list[str], tick_ms: float | None = None,
                T: int = 2) -> str:
    """What the stalled problems' counters and times say (the warning's tail).
    Steal there puts the stall on the host; none puts it inside this VM, between the
    thread pools or the guest's scheduler (#117).  Stalled T-thread times that sit on
    whole multiples of the scheduler tick (`tick_ms`; T threads) say the threads
    waited for a tick to run (#118)."""
    tail = ""
    recorded = [med["steal_cores"] for p, med in results
                if p.label in stalled and "steal_cores" in med]
    # A result from before steal was recorded says nothing either way.
    if recorded and max(recorded) >= cm.STEAL_NOTE_CORES:
        tail = f" (the host took {max(recorded):.2f} core(s) of steal while they were timed)"
    elif recorded:
        tail = (" (no steal time was recorded then: on a VM that reports steal, the host "
                "did not deschedule its vCPUs)")
    times = [x for p, med in results if p.label in stalled
             for x in med.get("samples", {}).get(f"openblas-{T}t", [])]
    if tick_ms and len(times) >= 5:
        hit = cm.on_ticks(times, tick_ms)
        if hit >= len(times) / 2:
            tail += (f"; {hit} of their {len(times)} timed {T}-thread OpenBLAS calls took "
                     f"a whole multiple of the kernel's {tick_ms:g} ms scheduler tick (within "
                     "0.05 ms): its threads ran only at a tick, as when a thread is woken on a "
                     "vCPU the host has not resumed yet or shares a core with another thread "
                     "(docs/decisions.md #116, #118)")
    return tail


def code_facts(kernel) -> dict[str, int]:
    """What the generated C contains (the source sits next to the cached .so)."""
    src = Path(str(kernel.path).removesuffix(".so") + "_0.c")
    text = src.read_text() if src.is_file() else ""
    keys = {"fmadd": "_fmadd_ps(", "maskload": ("_mm256_maskload_ps", "_maskz_loadu_ps"),
            "maskstore": ("_mm256_maskstore_ps", "_mask_storeu_ps"), "loadu": "_loadu_ps(",
            "broadcast": "_set1_ps(", "omp": "#pragma omp", "for": "for (",
            "prefetch": "_mm_prefetch("}
    return {k: sum(text.count(x) for x in ((v,) if isinstance(v, str) else v))
            for k, v in keys.items()}


def analysis(results, peak, ours: cm.Ours, T: int, profile: dict, tile: dict | None, *,
             nr: int, lanes: int, block_sizes: Callable[..., dict[str, int]]) -> list[str]:
    """Where we lose and why.  `nr` and `lanes` are the register tile's width and the
    vector's (bench_sgemm.choose_isa sets them per ISA); `block_sizes` is the run's
    block-size rule (bench_sgemm.block_sizes)."""
    out = ["## Where we lose, and why", ""]

    def gf(p, med, key):
        return p.flops / med[key] / 1e6

    if ours.missing:
        out.append("Nothing to compare: no derived kernel (see above).  OpenBLAS's own "
                   "efficiency is the bar: "
                   + ", ".join(f"{p.label}: {100 * gf(p, med, 'openblas-1t') / peak[1]:.0f}%"
                               for p, med in results if p.group == "square")
                   + " of the 1-thread peak.")
        return out
    noisy = [p.label for p, med in results if med["other_cores"] > 0.3]
    if noisy:
        out.append(f"Caution: other processes used CPU time while {', '.join(noisy)} were "
                   "timed (column `others`); those rows, above all their 2-thread columns, "
                   "measure the machine's load as much as the kernels.")
        out.append("")
    ts = [1] if T == 1 else [1, T]
    losses = [(p, med, t) for p, med in results for t in ts
              if med[f"openblas-{t}t"] / med[f"ours-{t}t"] < 0.95]
    if not losses:
        out.append("Nowhere by more than 5% in this run.")
    else:
        out.append("Ours is more than 5% slower on: "
                   + ", ".join(f"{p.group} {p.label} {t}t "
                               f"({med[f'openblas-{t}t'] / med[f'ours-{t}t']:.2f}x)"
                               for p, med, t in losses) + ".")
    out.append("")
    facts = code_facts(ours.kernels["1t"])
    acc = 6 * nr // lanes
    out.append(f"- The generated serial kernel has {facts['fmadd']} vector FMAs "
               f"({acc} per register tile: the 6x{nr} tile of {acc} accumulators of {lanes} "
               f"lanes, in its main, row-edge and column-edge versions), "
               f"{facts['broadcast']} broadcasts, "
               f"{facts['maskstore']} masked stores (right edge only).")
    cache = [(p, med) for p, med in results if p.group == "in-cache"]
    square = [(p, med) for p, med in results if p.group == "square"]
    if cache:
        pc, mc_ = cache[0]
        s1 = mc_["openblas-1t"] / mc_["ours-1t"]
        where = ("so the micro-kernel and its packing are on par; what is lost at larger sizes "
                 "is lost in the memory hierarchy" if s1 >= 0.9 else
                 "so part of the gap is in the micro-kernel or the per-call overheads "
                 "(packing all of B, copying C into the output, one malloc of the A block per "
                 "row block and depth block), not in the memory hierarchy")
        out.append(f"- In cache ({pc.label}, about 400 KiB with the packed copies) ours runs at "
                   f"{gf(pc, mc_, 'ours-1t'):.0f} GFLOP/s on 1 thread against OpenBLAS's "
                   f"{gf(pc, mc_, 'openblas-1t'):.0f} (speed {s1:.2f}), {where}.")
    if square:
        worst = min(square, key=lambda pm: pm[1]["openblas-1t"] / pm[1]["ours-1t"])
        pb, mb = worst
        mn = pb.M * pb.N
        out.append(f"- Largest 1-thread gap on square sizes: {pb.label} "
                   f"(speed {mb['openblas-1t'] / mb['ours-1t']:.2f}: ours "
                   f"{gf(pb, mb, 'ours-1t'):.0f}, OpenBLAS {gf(pb, mb, 'openblas-1t'):.0f} "
                   "GFLOP/s).  "
                   + ("Both update C in place and pack B (ours all of it up front, once, "
                      "unless the strip kernel ran); what remains is the "
                      "micro-kernel's code (gcc's register allocation and scheduling of the "
                      "derived loop, against OpenBLAS's hand-written assembly) and the C "
                      "tile's load-add-store after each depth block."
                      if "C" in ours.kernels["1t"].lowered.inplace else
                      "Besides the multiply, our kernel makes one pass OpenBLAS does "
                      f"not: it copies C into the output ({8 * mn / 2**20:.0f} MiB read and "
                      f"written at this size, against {pb.flops / 1e9:.1f} GFLOP)."))
    if T > 1 and square:
        parts = []
        for p, med in square:
            mcr = ours.fixed.get("mcr") or block_sizes(p.M, p.K, T, p.N)["mcr"]
            blocks = -(-p.M // (6 * mcr))
            parts.append(f"{p.label}: {med['ours-1t'] / med[f'ours-{T}t']:.2f}x"
                         f" ({blocks} row blocks of {6 * mcr})")
        ob = [med["openblas-1t"] / med[f"openblas-{T}t"] for _, med in square]
        out.append(f"- {T}-thread scaling of ours (1t time / {T}t time): " + ", ".join(parts)
                   + f"; OpenBLAS {min(ob):.2f}-{max(ob):.2f}x.  Our parallel loop is the "
                   "row-block generation; unless --fix mcr=... is given, the block count is a "
                   f"multiple of {T} and the blocks nearly equal (block_sizes), so the threads' "
                   "shares differ by at most the last block's shortfall.")
        if code_facts(ours.kernels[f"{T}t"])["omp"] == 0:
            out.append(f"- The {T}-thread kernel has no parallel loop at all: its times are "
                       "the serial kernel's.")
    for label, split in profile.items():
        pm = next(((p, med) for p, med in results if p.label == label), None)
        if pm is None:
            continue
        p, med = pm
        frac = split["samples_pct_in_fma_loops"] / 100
        # From the fastest run: time the process spent descheduled is in no sample.
        loop_gf = p.flops / med["best"]["ours-1t"] / 1e6 / max(frac, 1e-9)
        out.append(f"- perf (cpu-clock samples in our serial kernel) at {label}: "
                   f"{100 * frac:.0f}% in its {split['fma_loops']} innermost FMA loops (the "
                   f"register-tile micro-kernels), {100 - 100 * frac:.0f}% elsewhere: the "
                   "load-add-store of each C tile after its depth block"
                   + (" (its lines prefetched during the previous tile's depth loop)"
                      if facts["prefetch"] else "") + ", packing, edge tiles.  The FMA loops "
                   f"themselves run at about {loop_gf:.0f} GFLOP/s (fastest run) "
                   f"({100 * loop_gf / peak[1]:.0f}% of peak); removing everything else would "
                   f"give {med['ours-1t'] * frac:.2f} ms instead of {med['ours-1t']:.2f}."
                   + pk.tile_ceiling_sentence(loop_gf, tile, peak[1], 100 - 100 * frac))
    asp = [(p, med) for p, med in results if p.group == "aspect"]
    if asp:
        sp = ", ".join(f"{p.label}: {med['openblas-1t'] / med['ours-1t']:.2f}"
                       for p, med in asp)
        out.append(f"- Aspect sweep, 1-thread speed by M/N: {sp}.  Packing A costs M·K element "
                   f"copies against M·N·K/{lanes} vector FMAs, {lanes}/N copies per FMA, and "
                   f"packing B {lanes}/M; at N = 64 (or M = 64) that is one copy per "
                   f"{64 // lanes} FMAs, against one per {2048 // lanes} at the square 2048, "
                   "so packing (and the C tile's load-add-store per depth "
                   "block) weighs far more there; Sgemm.v's A-in-place derivations "
                   "(sgemm_avx2_direct, sgemm_avx512_direct) do not pack A, and a pack-once "
                   "kernel's pack of A is a pass over A from memory that overlaps no "
                   "arithmetic (decision #124).  MKL pulls ahead of Exo and OpenBLAS there "
                   "with kernels specialised for such shapes (Exo thesis Sec. 7.2, Fig. "
                   "7-2b).  At "
                   "M = 64 there is a single row block: with fewer row blocks than threads "
                   "the OpenMP kernel runs its column strips in parallel instead "
                   "(targets/openmp.py, rule 6).")
    return out
