"""Lowering annotations: what `parallel`, `unroll` and `store_at` ask of the C.

They leave the program unchanged, so Coq proves nothing for them; they are honoured
or refused here, against the lowering's output (the emitted C), for `Schedule.compile`
and the autotuner alike.  Kept apart from state.py, which drives Coq: this module only
reads the checked program and the C.
"""

from __future__ import annotations

import re
from dataclasses import replace

from verisched.codegen.errors import LowerError
from verisched.pipeline import (
    CheckedProgram,
    CSource,
    Kernel,
    Target,
    build,
    get_target,
    lower,
    render,
)
from verisched.pybridge.terms import Expr, Gen, Sum, walk

from .errors import AnnotationRefused


def loops_of(e: Expr | None) -> frozenset[str]:
    """The names of the generations and sums of `e`."""
    return frozenset(x.var for x in walk(e) if isinstance(x, (Gen, Sum))) if e else frozenset()


def check_parallel_target(annotations: tuple[tuple, ...], target: Target) -> None:
    """Refuse `parallel` annotations for a serial target, before any replay."""
    wanted = [a[1] for a in annotations if a[0] == "parallel"]
    if wanted and not target.parallel:
        raise AnnotationRefused(f"parallel {wanted[0]}: target {target.name} runs serially; "
                                "use an OpenMP target (openmp, avx2-openmp, ...)")


def build_annotated(checked: CheckedProgram, annotations: tuple[tuple, ...],
                    target: str | Target) -> Kernel:
    """The kernel of a checked schedule for `target`, its lowering annotations honoured
    (store_at placed, `parallel` checked against the emitted C, `unroll` pragmas) or
    refused with AnnotationRefused.  Shared by `Schedule.compile` and the autotuner,
    which builds a proved candidate from its standalone file (verisched.tune)."""
    source = annotated_source(checked, annotations, target)
    return build(source)[source.lowered[0].name]


def annotated_source(checked: CheckedProgram, annotations: tuple[tuple, ...],
                     target: str | Target) -> CSource:
    """The C of `build_annotated`'s kernel, before it is compiled."""
    t = get_target(target) if isinstance(target, str) else target
    check_parallel_target(annotations, t)
    atl = loops_of(checked.program.expr)
    for a in annotations:
        loop = a[2] if a[0] == "store_at" else a[1]
        if loop not in atl:
            raise AnnotationRefused(
                f"{' '.join(map(str, a[:2]))}: the program has no loop {loop} any more: a "
                "step after this annotation split, fused, tiled or otherwise replaced it; "
                f"annotate a loop of the final program ({', '.join(sorted(atl)) or 'none'})")
    wanted = [a[1] for a in annotations if a[0] == "parallel"]
    places = tuple((a[1], a[2]) for a in annotations if a[0] == "store_at")
    if places:
        checked = replace(checked, program=replace(checked.program, store_at=places))
    unrolls = [(a[1], a[2]) for a in annotations if a[0] == "unroll"]
    body = None
    try:
        lowered = lower(checked, t)
        body = getattr(lowered.kernel, "body", None)
        if body is not None:
            # The C family: the pragmas go into the kernel's body before rendering,
            # which moves parallel loop bodies into functions of their own, where GCC
            # honours them (codegen/outline.py).  Other targets get them in the file.
            text = "\n".join(body)
            for loop, factor in unrolls:
                text = unroll_pragma(text, loop, factor)
            lowered = replace(lowered, kernel=replace(lowered.kernel, body=text.split("\n")))
        source = render(lowered)
    except LowerError as e:
        if places and str(e).startswith("store_at "):
            raise AnnotationRefused(str(e)) from None
        raise
    if wanted:
        par = parallel_loops(source.c)
        for loop in wanted:
            if not any(runs_loop(c, loop, atl) for c in par):
                raise AnnotationRefused(
                    f"parallel {loop}: the {t.name} lowering does not run loop {loop} in "
                    "parallel: only the outermost generation of a nest that is not "
                    "under a SUM or another parallel loop is (targets/openmp.py); "
                    f"parallel loops of this program: {', '.join(sorted(par)) or 'none'}")
    if body is None:
        for loop, factor in unrolls:
            source = replace(source, c=unroll_pragma(source.c, loop, factor))
    return source


_PRAGMA_LOOP = re.compile(r"#pragma omp parallel for[^\n]*\n\s*for \((?:int|int64_t) (\w+)")


def parallel_loops(c: str) -> set[str]:
    """The C names of the loops the C runs in parallel: an ATL loop's name, or a fresh
    copy of it (runs_loop)."""
    return set(_PRAGMA_LOOP.findall(c))


def runs_loop(c_name: str, loop: str, atl_loops: frozenset[str] = frozenset()) -> bool:
    """Whether the C loop `c_name` is ATL loop `loop` or the lowering's fresh copy of it
    (ir.Names.fresh: `i_1`, `i_2`; a C keyword gets `_` first, `int_`, `int__1`).  A
    user's own `row_1` is itself, not a copy of `row` (stripping `_1` from every name
    refused `parallel("row_1")` on a loop the C ran in parallel), and a C name that is
    one of the program's own loops (`atl_loops`) is that loop, not a copy of another
    (else `parallel("row")` passed when only the user's `row_1` ran in parallel)."""
    if c_name != loop and c_name in atl_loops:
        return False
    return re.fullmatch(rf"{re.escape(loop)}_?(?:_\d+)?", c_name) is not None


def unroll_pragma(c: str, loop: str, factor: int) -> str:
    """`c` with `#pragma GCC unroll factor` before every C loop over `loop` (or its
    fresh copies `loop_1`, ...); AnnotationRefused if the lowering emitted none.

    A loop the parallel pragma collapses (`collapse(k)`) admits no pragma of its own
    between the collapsed loops (GCC: "not enough perfectly nested loops"), so such a
    loop is taken out of the collapse: the pragma's `collapse(k)` becomes the loops
    above it, which stay parallel, and the unrolled loop runs inside each thread's
    iterations.  The parallel loop itself cannot be unrolled: refused, naming it."""
    loop_re = re.compile(rf"^([ \t]*)(for \((?:int|int64_t) {re.escape(loop)}(?:_\d+)? = )")
    collapse_re = re.compile(r"^\s*#pragma omp parallel for.*?collapse\((\d+)\)")
    out: list[str] = []
    n = 0
    pragma, k, seen = -1, 0, 0     # the open parallel pragma (index in out), k, loops seen
    for line in c.split("\n"):
        text = line.strip()
        depth = 0                  # 1: the parallel loop; 2..k: a loop it collapses
        if text.startswith("#pragma omp parallel for"):
            m = collapse_re.match(line)
            pragma, k, seen = len(out), int(m.group(1)) if m else 1, 0
        elif text.startswith("for (") and pragma >= 0 and seen < k:
            seen += 1
            depth = seen
        elif text and not text.startswith("#pragma"):
            pragma, k, seen = -1, 0, 0      # not perfectly nested: the pragma's loops end
        lm = loop_re.match(line)
        if lm:
            if depth == 1:
                raise AnnotationRefused(
                    f"unroll {loop}: the lowering runs {loop} as the parallel loop "
                    "(an OpenMP loop cannot also be unrolled); unroll a loop inside it")
            if depth > 1:
                out[pragma] = re.sub(r"\s*collapse\(\d+\)",
                                     "" if depth == 2 else f" collapse({depth - 1})",
                                     out[pragma])
                pragma, k, seen = -1, 0, 0
            out.append(f"{lm.group(1)}#pragma GCC unroll {factor}")
            n += 1
        out.append(line)
    if n == 0:
        raise AnnotationRefused(f"unroll {loop}: the lowering emitted no C loop over {loop} "
                                "(it was vectorized, peeled to one iteration or fused away)")
    return "\n".join(out)
