"""OpenMP shaping of a parallel loop once its code is emitted (targets/openmp.py's rules).

Where the parallel pragma goes is decided while lowering a generation
(codegen/generation.py); two refinements need the loop's emitted code and
rewrite it in place: `collapse_tiles` (rule 5: share a short parallel loop's
iterations with the loop it wraps) and `only_if_several` (rule 6: a
one-iteration parallel loop hands its threads to fallback loops inside).
Both only rewrite pragmas and duplicate the loop; the statements inside
stay as the lowering emitted them.
"""

from __future__ import annotations

import re

from verisched.codegen.cexpr import ctext
from verisched.codegen.ir import Ctx, Emitter
from verisched.codegen.poly import Poly

FALLBACK = "fallback"  # a loop's parallel mode: only if the enclosing parallel loop is not
FALLBACK_PRAGMA = "#pragma omp parallel for schedule(static) if(!omp_in_parallel())"
FOR_HEADER = re.compile(r"for \(int (\w+) = (.*); \1 < (.*); \+\+\1\) \{")


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
    # (top-level) parallel loops.
    par = [x for x in loop if not x.rstrip().endswith(FALLBACK_PRAGMA)]
    ser = [x.replace(FALLBACK_PRAGMA, "#pragma omp parallel for schedule(static)")
           for x in loop[1:]]
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
