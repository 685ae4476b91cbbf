"""OpenMP shaping of a parallel loop once its code is emitted (targets/openmp.py's rules).

Where the parallel pragma goes is decided while lowering a generation
(codegen/generation.py); three refinements need the loop's emitted code and
rewrite it in place: `collapse_tiles` (rule 5: share a short parallel loop's
iterations with the loop it wraps), `only_if_several` (rule 6: a
one-iteration parallel loop hands its threads to fallback loops inside) and
`if_enough_work` (rule 7: a loop of a few statements per iteration forks only
with many iterations; `serial_light_fallback`, the same for a fallback loop).  They
only rewrite pragmas and duplicate the loop; the statements inside stay as the
lowering emitted them.
"""

from __future__ import annotations

import ast
import re

from verisched.codegen.cexpr import ctext
from verisched.codegen.ir import Ctx, Emitter
from verisched.codegen.poly import Poly

FALLBACK = "fallback"  # a loop's parallel mode: only if the enclosing parallel loop is not
FALLBACK_PRAGMA = "#pragma omp parallel for schedule(static) if(!omp_in_parallel())"
# A fallback pragma, with the light-body condition serial_light_fallback may add.
FALLBACK_RE = re.compile(r"#pragma omp parallel for schedule\(static\) "
                         r"if\(!omp_in_parallel\(\)(?: && (.*))?\)")
FOR_HEADER = re.compile(r"for \(int (\w+) = (.*); \1 < (.*); \+\+\1\) \{")
PLAIN_PRAGMA = "#pragma omp parallel for schedule(static)"
# Rule 7: a parallel loop whose iterations are each a few straight-line statements
# (a border row or column of a stencil, an elementwise map) forks only from this many
# iterations on.  A fork and join with sleeping workers costs tens of microseconds;
# Blur.v's tiled blur at 2000 x 2000 had four such regions of 1998-2000 iterations
# (its borders), and its 2-thread time fell from 1.63 to 1.43 ms with them serial
# (decision #116).
PARALLEL_MIN_TRIPS = 1 << 15
LIGHT_BODY_LINES = 64


def only_if_several(out: Emitter, mark: int, trips: Poly, ctx: Ctx, fallbacks_before: int,
                    fallbacks_now: int) -> None:
    """A parallel loop (emitted from line `mark` on) with fallback loops inside runs its
    region only with at least two iterations and at least as many as there are threads;
    with fewer (a single row block of a wide GEMM, or 2 row blocks for 4 threads), the
    fallbacks, say its column strips, take the threads instead (rule 6).  Which copy
    runs is a matter of speed only: each computes the loop's result.

    Two copies of the loop, not an `if` clause: a region disabled by `if`
    still opens a (one-thread) team, so the fallbacks' regions would be
    nested, and libgomp starts fresh threads for every nested team (measured:
    a 2-thread 64x4096x512 SGEMM took 5x its best time at the median)."""
    if fallbacks_now == fallbacks_before or "collapse(" in out.lines[mark]:
        return
    loop = out.lines[mark:]
    pad = loop[0][:len(loop[0]) - len(loop[0].lstrip())]
    # The parallel copy runs its fallbacks serially; the serial copy runs them as
    # (top-level) parallel loops, under the light-body condition where one was added.
    par = [x for x in loop if not FALLBACK_RE.fullmatch(x.strip())]
    ser = [_as_top_level(x) for x in loop[1:]]
    n = ctext(trips, ctx)
    out.lines[mark:] = [f"{pad}if ({n} > 1 && {n} >= omp_get_max_threads()) {{",
                        *("  " + x for x in par), f"{pad}}}", f"{pad}else {{",
                        *("  " + x for x in ser), f"{pad}}}"]


def collapse_tiles(out: Emitter, mark: int, gen_loops: set[str]) -> None:
    """Share a parallel loop's iterations with the generation loop it wraps.

    A parallel loop over rows of tiles has few iterations (31 for a 2000-row
    image in 64-row tiles, a single one for the partial last row of tiles), so a
    static split over the threads is uneven or leaves all but one thread idle.
    When its body is exactly one generation loop (one of `gen_loops`) whose
    bounds do not mention the outer variable (a rectangular nest, as OpenMP
    requires) and whose own body contains loops (so every collapsed iteration
    is still a whole tile or row and the innermost loop stays intact for the
    vectoriser), the pragma gets `collapse(2)`.  Sound by openmp.py rule 5."""
    lines = out.lines
    pragma, header, body = lines[mark], lines[mark + 1], lines[mark + 2:-1]
    outer = FOR_HEADER.fullmatch(header.strip())
    if "#pragma omp parallel for" not in pragma or outer is None or len(body) < 3:
        return
    pad = header[:len(header) - len(header.lstrip())] + "  "
    inner = FOR_HEADER.fullmatch(body[0].strip())
    if (inner is None or not body[0].startswith(pad) or body[-1] != pad + "}"
            or inner.group(1) not in gen_loops
            or re.search(rf"\b{re.escape(outer.group(1))}\b", body[0])
            or any(not s.startswith(pad + " ") for s in body[1:-1])
            or not any(s.lstrip().startswith("for (") for s in body[1:-1])):
        return
    lines[mark] = pragma.rstrip() + " collapse(2)"


def if_enough_work(out: Emitter, mark: int, trips: Poly, ctx: Ctx) -> None:
    """Rule 7: a parallel loop (emitted from line `mark` on) whose body is light (no
    inner loop of more than one iteration, no block copy, at most LIGHT_BODY_LINES
    lines) forks only with at least PARALLEL_MIN_TRIPS iterations: an OpenMP `if`
    clause, or no pragma where the count is known to be smaller.  With fewer, the
    fork and join cost more than the iterations.  The clause changes who runs the
    iterations, never what they compute."""
    lines = out.lines
    if lines[mark].strip() != PLAIN_PRAGMA or not _light(lines[mark + 2:-1]):
        return
    if ctx.facts.ge0(trips - PARALLEL_MIN_TRIPS):
        return
    if ctx.facts.ge0(Poly.const(PARALLEL_MIN_TRIPS - 1) - trips):
        del lines[mark]
        return
    lines[mark] = lines[mark].rstrip() + f" if({ctext(trips, ctx)} >= {PARALLEL_MIN_TRIPS})"


def _as_top_level(line: str) -> str:
    """A fallback pragma as the serial copy's parallel loop runs it (rule 6)."""
    m = FALLBACK_RE.fullmatch(line.strip())
    if m is None:
        return line
    pad = line[:len(line) - len(line.lstrip())]
    return pad + PLAIN_PRAGMA + (f" if({m.group(1)})" if m.group(1) else "")


def serial_light_fallback(out: Emitter, mark: int, trips: Poly, extent: Poly,
                          ctx: Ctx) -> bool:
    """Rule 7 for a fallback loop (rule 6, emitted from line `mark` on): one whose body
    is light forks only from PARALLEL_MIN_TRIPS iterations on (its `if` clause gains
    the count), and not at all where its count is known to be smaller: the pragma goes,
    and True says so for the caller's counts.  Each step of the SUM around a fallback
    forks anew: a parallel dot product whose chunks were one (m <= 16384) forked at each
    of its 512 depth steps to share two vector statements, 0.3 ms a call for 4 us of
    work.  `extent`, the whole generation's, bounds `trips` where the loop is a part of
    it (the vectors a mask split keeps unmasked, whose count the facts cannot bound:
    there, an `if(false)` region still cost 0.35 us a step)."""
    lines = out.lines
    if lines[mark].strip() != FALLBACK_PRAGMA or not _light(lines[mark + 2:-1]):
        return False
    if ctx.facts.ge0(trips - PARALLEL_MIN_TRIPS):
        return False
    if any(ctx.facts.ge0(Poly.const(PARALLEL_MIN_TRIPS - 1) - t) for t in (trips, extent)):
        del lines[mark]
        return True
    lines[mark] = (lines[mark].rstrip()[:-1]
                   + f" && {ctext(trips, ctx)} >= {PARALLEL_MIN_TRIPS})")
    return False


def _light(body: list[str]) -> bool:
    """A loop body of a few statements: every loop in it runs at most one iteration
    (its bounds differ by a constant of at most 1), and nothing copies a block."""
    if len(body) > LIGHT_BODY_LINES:
        return False
    for s in body:
        t = s.strip()
        if "memset(" in t or "memcpy(" in t or t.startswith(("while (", "do {")):
            return False
        if t.startswith("for ("):
            m = FOR_HEADER.fullmatch(t)
            lo, hi = (_linear(m.group(2)), _linear(m.group(3))) if m else (None, None)
            extent = None if lo is None or hi is None else (hi - lo).as_const()
            if extent is None or extent > 1:
                return False
    return True


_LINEAR_OPS = {ast.Add: Poly.__add__, ast.Sub: Poly.__sub__, ast.Mult: Poly.__mul__}


def _linear(text: str) -> Poly | None:
    """A loop bound the lowering printed (integers, names, + - *), as a polynomial;
    None for anything else (a call, a division, a cast)."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None

    def go(n: ast.expr) -> Poly | None:
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return Poly.const(n.value)
        if isinstance(n, ast.Name):
            return Poly.var(n.id)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            x = go(n.operand)
            return None if x is None else -x
        op = _LINEAR_OPS.get(type(n.op)) if isinstance(n, ast.BinOp) else None
        if op is not None:
            a, b = go(n.left), go(n.right)  # type: ignore[union-attr]
            return None if a is None or b is None else op(a, b)
        return None

    return go(tree)
