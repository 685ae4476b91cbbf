"""Measured call costs for the extraction: the model's discounts replaced by this machine's.

LIAR's model (extract.py, rules.CALL_COST) gives each library call a fixed discount per
element (0.6 for gemm ... 0.8 for axpy) against loops costed per iteration.  Issue 14
asks to go beyond it with the measured cost of the kernels we emit.  Here, for each BLAS
idiom the `blas` target lowers, two kernels of ours are built from the idiom's own
specification and timed on this machine: the naive loop (the specification's body,
lowered for `c`) and the call (lowered to CBLAS).  The loop's LIAR cost at the timed
sizes gives the time of one model unit, so the call's measured cost in model units per
element is

    cost[idiom] = (t_call / t_loop) * liar_cost(loop) / elements(call)

and a call then wins the extraction exactly when it was measured faster than the loop it
replaces (axpy, two passes where the loop makes one, is not taken where it measured
slower).  The table is measured once per CPU (a few seconds, every kernel checked by Coq
like any other) and kept in verisched's cache directory as `idiom_costs.json`.  Idioms not
measured (transpose: no lowering) keep LIAR's discount.  Measured costs rank programs;
they never decide what is proved: the certificate is the same.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping

import numpy as np

from verisched import pipeline
from verisched.codegen.errors import CodegenError
from verisched.pipeline.cache import cache_dir
from verisched.pybridge import terms as A
from verisched.pybridge.errors import BridgeError
from verisched.pybridge.instrs import INDEX, registered
from verisched.targets.cpu import cpu_model
from verisched.targets.toolchain import atomic_write

from .kernel_file import infer_shapes
from .rules import CALL_COST

# Sizes the idioms are timed at: each run long enough (0.1-10 ms) that a call's fixed
# overhead is small, short enough that the table takes seconds.
TIMED_SIZES = {1: 1 << 18, 2: 768, 3: 192}   # by the number of index parameters
FILE = "idiom_costs.json"
COSTS = ("liar", "measured")
UNMEASURED = ("blas_transpose",)   # no CBLAS lowering


class CostError(RuntimeError):
    """The measured costs cannot be had here (the `blas` target or Coq is missing)."""


def liar_cost(e: A.Expr, sizes: Mapping[str, int]) -> float:
    """LIAR's cost of a loop program at concrete sizes, as extract.liar_cost counts it: a
    loop costs 1 plus its extent times (1 + its body), a variable 1, any other node 1 plus
    its children, an index nothing."""
    if isinstance(e, (A.Gen, A.Sum)):
        extent = A.eval_idx(e.hi, dict(sizes)) - A.eval_idx(e.lo, dict(sizes))
        return 1.0 + max(extent, 0) * (1.0 + liar_cost(e.body, sizes))
    if isinstance(e, A.Var):
        return 1.0
    return 1.0 + sum(liar_cost(c, sizes) for c in A.children(e)   # type: ignore[misc]
                     if not A.is_idx(c))


def _median_ms(fn: Callable[[], object], seconds: float = 0.3) -> float:
    fn()
    fn()
    times: list[float] = []
    end = time.perf_counter() + seconds
    while len(times) < 5 or (time.perf_counter() < end and len(times) < 200):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def measure(progress: Callable[[str], None] | None = None,
            names: tuple[str, ...] | None = None) -> dict[str, float]:
    """Time every lowerable BLAS idiom (or those in `names`) against its own loop; the
    measured costs, in LIAR's model units per element (see the module docstring)."""
    import verisched.targets.blas  # noqa: F401 - registers the specifications

    out: dict[str, float] = {}
    rng = np.random.default_rng(0)
    for spec in registered().values():
        if (spec.family != "blas" or spec.name in UNMEASURED
                or (names is not None and spec.name not in names)):
            continue
        index = [p.name for p in spec.params if p.kind == INDEX]
        n = TIMED_SIZES[len(index)]
        sizes = dict.fromkeys(index, n)
        # each operand's extents from the loops of the specification that index it
        shapes = infer_shapes(spec.body, {p.name: p.rank for p in spec.params
                                          if p.kind != INDEX})
        env = {p.name: tuple(shapes.get(p.name, ())) for p in spec.params
               if p.kind != INDEX}
        call = A.Instr(spec.name, tuple(A.IVar(p.name) if p.kind == INDEX else A.Var(p.name)
                                        for p in spec.params))
        loop_k = pipeline.compile_program(spec.body, env, "c", sizes=tuple(index))
        call_k = pipeline.compile_program(call, env, "blas", sizes=tuple(index))
        ins = {k: rng.standard_normal([A.eval_idx(d, sizes) for d in s]).astype(np.float32)
               for k, s in env.items()}
        t_loop = _median_ms(lambda k=loop_k, x=ins, s=sizes: k(x, **s))
        t_call = _median_ms(lambda k=call_k, x=ins, s=sizes: k(x, **s))
        elements = float(np.prod([sizes[i] for i in index]))
        out[spec.name] = (t_call / t_loop) * liar_cost(spec.body, sizes) / elements
        if progress:
            progress(f"idiom costs: {spec.name}: call {t_call:.3f} ms, loop {t_loop:.3f} ms "
                     f"at {n}: {out[spec.name]:.3g} per element (LIAR: "
                     f"{CALL_COST.get(spec.name, 1.0)})")
    return out


def call_costs(kind: str, progress: Callable[[str], None] | None = None
               ) -> dict[str, float]:
    """The per-element call costs for `kind`: "liar" (LIAR's constants) or "measured"
    (this CPU's, from the cache, measured on first use)."""
    if kind == "liar":
        return dict(CALL_COST)
    if kind != "measured":
        raise ValueError(f"costs must be 'liar' or 'measured', not {kind!r}")
    path = cache_dir().parent / FILE   # beside derivations/ and lowerings/
    try:
        saved = json.loads(path.read_text())
        if saved.get("cpu") == cpu_model() and isinstance(saved.get("costs"), dict):
            return {**CALL_COST, **saved["costs"]}
    except (OSError, ValueError):
        pass
    if progress:
        progress(f"measuring the BLAS idioms' costs on this CPU ({cpu_model()}), once; kept in "
                 f"{path}")
    try:
        costs = measure(progress)
    except (CodegenError, BridgeError, OSError) as exc:   # no OpenBLAS, no coqtop, ...
        reason = " ".join(str(exc).split())[:300]
        raise CostError(f"cannot measure the idiom costs on this machine ({reason}); "
                        "use the default costs (--costs liar)") from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"cpu": cpu_model(), "costs": costs}, indent=1))
    return {**CALL_COST, **costs}
