"""Stages 3-5: a checked program -> lowered for a target -> C -> a callable kernel.

Each stage is a thin, typed call into the target (targets/base.py's
protocol), which the registry finds by name.  Before lowering, the program's
instructions and memories are compared with what the target provides, so a
program for another target is refused with the targets that would take it,
rather than deep inside the lowering.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verisched.codegen.errors import LowerError
from verisched.codegen.ir import LoweredKernel
from verisched.codegen.isa import VectorISA
from verisched.codegen.poly import Atom, Poly
from verisched.pipeline import cache as derive_cache
from verisched.pipeline.ast import from_ast
from verisched.pipeline.check import CheckedProgram, FixValue, check
from verisched.pipeline.derive import load
from verisched.pybridge.instrs import lookup
from verisched.pybridge.terms import Expr, Instr, Mem, Pred, Shape, walk
from verisched.targets.base import CSource, Kernel, Lowered, Target
from verisched.targets.registry import TARGETS, get_target


def _family(name: str) -> str:
    """The instruction family of a call (its specification's, else the name's prefix)."""
    spec = lookup(name)
    return spec.family if spec else name.split("_", 1)[0]


def needs(expr: Expr) -> tuple[set[str], set[str]]:
    """The instruction families and the memories (besides DRAM) `expr` uses."""
    families: set[str] = set()
    memories: set[str] = set()
    for x in walk(expr):
        if isinstance(x, Instr):
            families.add(_family(x.name))
        elif isinstance(x, Mem) and x.memory != "DRAM":
            memories.add(x.memory)
    return families, memories


def supports(target: Target, expr: Expr,
             need: tuple[set[str], set[str]] | None = None) -> str | None:
    """None if `target` provides every instruction family and memory `expr` uses, else
    what is missing.  `need`: `needs(expr)` already computed, for a caller asking of
    several targets (one walk of the program, not one per target)."""
    families, memories = need if need is not None else needs(expr)
    missing = sorted(families - set(target.families))
    mems = sorted(memories - set(target.memories))
    if not missing and not mems:
        return None
    what = []
    if missing:  # named, up to three: a scalar primitive (gemmini_acc_out) is not an
        # instruction, and "instructions of gemmini" misled where that was all there was
        names = sorted({x.name for x in walk(expr) if isinstance(x, Instr)
                        and _family(x.name) in missing})
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        what.append(f"{shown} (of {', '.join(missing)})")
    if mems:
        what.append(f"memories {', '.join(mems)}")
    return " and ".join(what)


def default_target(expr: Expr) -> Target | None:
    """The first registered target that provides every instruction family and memory
    `expr` uses, or None: `c` for plain ATL, else the serial target of the program's
    instruction form (`avx512` for a derivation in AVX-512's instructions, `gemmini` for
    Gemmini's), since the registry lists serial targets before their OpenMP forms.  The
    default of `verisched compile`, `run` and `report`: portable C wherever C can take
    the program, and never a target that would refuse it (decision #125)."""
    need = needs(expr)
    return next((t for t in TARGETS if supports(t, expr, need) is None), None)


def choose_target(expr: Expr, target: str | Target | None) -> Target:
    """The Python API's target: the one named, or for None `native` (this CPU's best
    ISA, targets/auto.py) where it can take the program, else the target of the
    program's instruction form (`gemmini` for a derivation in Gemmini's instructions),
    so that a default never refuses a program some target takes (decision #127)."""
    if target is not None:
        return get_target(target)
    native = get_target("native")
    missing = supports(native, expr)
    if missing is None:
        return native
    found = default_target(expr)
    if found is None:
        raise LowerError(f"no target provides {missing}; targets: "
                         f"{', '.join(t.name for t in TARGETS)}")
    return found


@dataclass(frozen=True)
class _CachedLowering:
    """A lowering as the cache keeps it: the target's lowered form and its summary."""

    name: str
    kernel: LoweredKernel
    summary: str


def lower(checked: CheckedProgram, target: str | Target, *, cache: bool = True) -> Lowered:
    """Lower for `target` (a name or a Target).

    The C family's lowering of a large program takes seconds (the bounds prover:
    SGEMM's, about 13 s), so for a target of the registry it is cached like a replay
    (pipeline/cache.py), keyed by the checked program, the target, the specifications
    of the instructions it calls and the package's code, which is everything it reads.
    A target from outside the registry is never cached (its code is not in the key)."""
    t = get_target(target)
    registered = any(t is x for x in TARGETS)
    resolve = getattr(t, "resolve", None)
    if resolve is not None:  # `native`: the member this CPU and program call for
        t = resolve(checked.program)
    missing = supports(t, checked.program.expr)
    if missing:
        need = needs(checked.program.expr)
        able = [x.name for x in TARGETS if supports(x, checked.program.expr, need) is None]
        raise LowerError(f"target {t.name}: {checked.name} uses {missing}, which target "
                         f"{t.name} does not provide (targets that do: "
                         f"{', '.join(able) or 'none'})")
    key = None
    if cache and derive_cache.enabled() and registered:
        exprs = (checked.program.expr,)
        try:
            key = derive_cache.value_key(checked.program, getattr(t, "cache_name", t.name),
                                         derive_cache.instruction_specs(exprs))
        except (TypeError, ValueError, RecursionError, OSError):
            key = None  # not encodable: lowered every time, never wrongly reused
        hit = key and derive_cache.fetch(key, checked.name, _CachedLowering,
                                         kind=derive_cache.LOWERINGS,
                                         classes=_LOWERING_CLASSES)
        if hit and isinstance(hit.kernel, LoweredKernel):
            return Lowered(t, checked.program, hit.kernel, hit.summary)
    lowered = t.lower(checked.program)
    if key is not None and isinstance(lowered.kernel, LoweredKernel):
        derive_cache.store(key, checked.name,
                           _CachedLowering(checked.name, lowered.kernel, lowered.summary),
                           (), kind=derive_cache.LOWERINGS)
    return lowered


_LOWERING_CLASSES = (LoweredKernel, Poly, Atom, VectorISA)


def render(lowered: Lowered | Sequence[Lowered]) -> CSource:
    """The C file (and header) for one or more kernels lowered for the same target."""
    items = [lowered] if isinstance(lowered, Lowered) else list(lowered)
    if not items:
        raise LowerError("render: no kernels")
    names = {x.target.name for x in items}
    if len(names) != 1:
        raise LowerError(f"render: kernels for several targets ({', '.join(sorted(names))}) "
                         "cannot share a C file")
    return items[0].target.render(items)


def build(source: CSource, *, fast_math: bool = False) -> dict[str, Kernel]:
    """Compile (cached by content) and load: kernel name -> callable kernel."""
    return source.target.build(source, fast_math=fast_math)


def compile_checked(checked: CheckedProgram, target: str | Target, *,
                    fast_math: bool = False, cache: bool = True) -> Kernel:
    """Lower (cached unless `cache=False`), render and build one checked program."""
    src = render(lower(checked, target, cache=cache))
    return build(src, fast_math=fast_math)[checked.name]


def compile_derivation(path: str | Path, derivation: str, target: str | Target | None = None,
                       *,
                       fix: Mapping[str, FixValue] | None = None,
                       shapes: Mapping[str, Shape] | None = None, unsafe: bool = False,
                       name: str | None = None, dtype: str | None = None,
                       fast_math: bool = False, timeout: float = 300.0,
                       cache: bool = True) -> Kernel:
    """The whole path for a derivation in a .v file: replay it in Coq (or take it from
    the cache of checked derivations unless `cache=False`), check it, and build its
    kernel for `target` (by default `native`, which picks this CPU's best ISA, or for a
    program in an accelerator's instructions that accelerator's target: choose_target).

    >>> k = compile_derivation("coq/Examples/Blur.v", "blur_tiled", "openmp",
    ...                        fix={"kn": 32, "km": 16})          # doctest: +SKIP
    >>> y = k({"v": img}, n=203, m=157)                           # doctest: +SKIP
    """
    checked = check(load(path, derivation, timeout=timeout, cache=cache), fix=fix,
                    shapes=shapes, unsafe=unsafe, name=name, dtype=dtype)
    return compile_checked(checked, choose_target(checked.program.expr, target),
                           fast_math=fast_math, cache=cache)


def compile_program(expr: Expr, env: Mapping[str, Shape], target: str | Target | None = None,
                    *,
                    name: str = "kernel", sizes: Sequence[str] | None = None,
                    assume: Sequence[Pred | str] = (), bools: Sequence[str] = (),
                    fix: Mapping[str, FixValue] | None = None,
                    dtype: str | None = None, unsafe: bool = False,
                    fast_math: bool = False, timeout: float = 120.0) -> Kernel:
    """The whole path for a program written in Python (pybridge/terms.py): Coq checks
    its bounds (`check_safe`), then it is built for `target`.  `unsafe=True` skips Coq
    and builds it marked UNSAFE.  The default target is choose_target's.

    >>> from verisched.pybridge.terms import IVar, Var, gen, get
    >>> k = compile_program(gen("i", "n", get(Var("f"), "i")), {"f": (IVar("n"),)})
    >>> k({"f": np.ones(5, np.float32)}, n=5)                      # doctest: +SKIP
    """
    t = choose_target(expr, target)
    derived = from_ast(expr, env, name=name, sizes=sizes, assume=assume, prove=not unsafe,
                       scalar=t.coq_scalar, bools=bools, timeout=timeout)
    checked = check(derived, fix=fix, unsafe=unsafe, dtype=dtype)
    return compile_checked(checked, t, fast_math=fast_math)
