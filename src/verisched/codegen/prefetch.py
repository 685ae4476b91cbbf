"""The row-ahead prefetch of a depth-blocked register tile (decision #122).

A depth-blocked kernel adds each register tile into its destination once per
depth block: the conv (coq/Examples/Conv.v, `conv_avx512_kc64`) zeroes an output
row, then its nine taps each add their tiles into it, reading three input rows.
Of those, the next output row reads one input row that this one did not (row
`y + 3`), and writes an output row nobody has touched yet.  Without help both
come from memory at the next row's start, while the core waits.  So each tile,
after its stores, prefetches a few cache lines of each of those two slabs, spread
evenly over all the tiles of the current row: the memory traffic overlaps the
FMA loops instead of stalling them.  Prefetching them all at once instead (each
tile its own destination one row ahead) bought nothing: the prefetches came in
bursts during the first tap and the lines left L1 before they were used (#122).

A prefetch has no effect on the result and never faults; the addresses are
formed in integer arithmetic (`uintptr_t`), so an address past a buffer is never
a C pointer.  The destination is prefetched with write intent, the inputs into
L2 (`VectorISA.row_prefetch`, `row_prefetch_read`).

When it applies, with the enclosing loops `L0 .. Ln` (outermost first) of a tile
whose accumulated stores write buffer indices `bi`:
- some loop `Lu` does not appear in `bi` (a depth block: the tile is added into
  the same place on every iteration of it), and `V` is the innermost loop outside
  `Lu` that does appear: one iteration of `V` is a row;
- `V`'s variable appears in one dimension `d` of `bi`, with coefficient 1, that
  dimension holds no variable of a loop inside `V`, the dimensions before it none
  either, and the dimensions after it no variable of a loop outside `V`: so the
  next iteration of `V` writes into the contiguous slab `bi[:d], bi[d] + 1, *`.
A buffer the tile reads gets the same treatment, except that dimension `d` may
also hold loops inside `V` with positive coefficients (the taps `y + r`): the slab
the next row reads and this one does not is that index at `V + 1` with each such
loop at its last value.  SGEMM's C tile fails the first condition on its row loop
(the column panel of C is not contiguous), so its kernels are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from verisched.codegen.cexpr import ctext, flat_text
from verisched.codegen.ir import Buf, Ctx, Emitter
from verisched.codegen.poly import Poly

# At most this many lines per tile.  A loop nest with fewer tiles than that needs
# (the tail tiles of a row, one per strip) prefetches nothing: bursts of prefetches
# would stall the loads of the tile's next loop, for lines the row's main tiles
# prefetch anyway.
MAX_LINES_PER_TILE = 8

Access = tuple[Buf, list[Poly]]
Loops = tuple[tuple[str, Poly, Poly], ...]


def row_slab(stores: list[Access], loops: Loops, sizes: frozenset[str] = frozenset()
             ) -> tuple[int, int] | None:
    """(the index of the row loop `V` in `loops`, the dimension `d` it indexes), or
    None when the conditions in the module's docstring do not hold."""
    found = _row(stores, loops, sizes)
    return None if found is None else (found[0], found[1][0])


def _row(stores: list[Access], loops: Loops, sizes: frozenset[str]
         ) -> tuple[int, tuple[int, tuple[Poly, ...]]] | None:
    """(the row loop's index in `loops`, the next row's slab of the destination)."""
    if not stores or any(b.cname != stores[0][0].cname for b, _ in stores):
        return None
    used = frozenset().union(*(p.vars() for _, bi in stores for p in bi))
    names = [v for v, _, _ in loops]
    blocks = [k for k, v in enumerate(names) if v not in used]
    if not blocks:
        return None
    rows = [k for k in range(blocks[-1]) if names[k] in used]
    if not rows:
        return None
    vk = rows[-1]
    found = {_next_slab(bi, vk, loops, True, sizes) for _, bi in stores}
    slab = found.pop() if len(found) == 1 else None
    return None if slab is None else (vk, slab)


def _next_slab(bi: list[Poly], vk: int, loops: Loops, stored: bool, sizes: frozenset[str]
               ) -> tuple[int, tuple[Poly, ...]] | None:
    """(d, the index of the first element of the slab the next row needs and this
    one did not: `bi[:d]`, then the next row's `bi[d]`, then zeros), or None."""
    var = loops[vk][0]
    inner = {v: hi for v, _, hi in loops[vk + 1:]}
    outer = {v for v, _, _ in loops[:vk]}
    dims = [k for k, p in enumerate(bi) if var in p.vars()]
    if len(dims) != 1:
        return None
    d = dims[0]
    rest = bi[d] - Poly.var(var)
    # Before d: fixed over the row (loops outside it, sizes); after d: nothing fixed
    # by a loop outside the row, so that the row covers the slab.
    if any(not p.vars() <= outer | sizes for p in bi[:d]) or any(
            p.vars() & (outer | {var}) for p in bi[d + 1:]):
        return None
    last = Poly.const(0)
    for mono, coeff in rest.terms:
        if not mono:
            last = last + coeff
            continue
        name = mono[0].name if len(mono) == 1 and mono[0].op == "var" else None
        if stored or name not in inner or coeff < 0:
            return None  # a store's row is one slab; a read's taps must count up
        last = last + (inner[name] - 1) * coeff
    zeros = (Poly.const(0),) * (len(bi) - d - 1)
    return d, (*bi[:d], Poly.var(var) + 1 + last, *zeros)


def read_slabs(reads: list[Access], vk: int, loops: Loops, sizes: frozenset[str]
               ) -> list[tuple[Buf, int, tuple]]:
    """The slabs of the buffers a tile reads that the next row needs and this row did
    not, one per buffer and slab: (buffer, d, first index)."""
    out: list[tuple[Buf, int, tuple]] = []
    seen: set[tuple[str, tuple]] = set()
    for buf, bi in reads:
        found = _next_slab(bi, vk, loops, False, sizes)
        if found is None or (buf.cname, found[1]) in seen:
            continue
        seen.add((buf.cname, found[1]))
        out.append((buf, found[0], found[1]))
    return out


def rows_ahead(stores: list[Access], reads: list[Access], hints: tuple[str, str | None],
               ctx: Ctx, fresh: Callable[[str], str], out: Emitter) -> None:
    """Emit the row-ahead prefetch after a register tile's stores (module docstring).

    `hints` are the ISA's prefetch templates (`{p}` the address) for the destination
    and for the inputs (None: inputs not prefetched); `fresh` names C temporaries."""
    sizes = frozenset(ctx.facts.sizes)
    found = _row(stores, ctx.loops, sizes)
    if found is None:
        return
    vk, (d, start) = found
    slabs = [(stores[0][0], d, start, hints[0])]
    if hints[1] is not None:
        slabs += [(b, rd, start, hints[1])
                  for b, rd, start in read_slabs(reads, vk, ctx.loops, sizes)]
    var, _, vhi = ctx.loops[vk]
    inner = ctx.loops[vk + 1:]
    tiles = " * ".join(f"(int64_t)({ctext(hi - lo, ctx)})" for _, lo, hi in inner)
    pos = ""
    for v, lo, hi in inner:
        term = v if lo == Poly.const(0) else f"({v} - ({ctext(lo, ctx)}))"
        pos = f"(int64_t){term}" if not pos else f"({pos})*({ctext(hi - lo, ctx)}) + {term}"
    tile = fresh("pf_tile")
    with out.block(f"if ({var} + 1 < {ctext(vhi, ctx)})"):
        out.line(f"const int64_t {tile} = {pos};")
        for b, sd, start, hint in slabs:
            _spread(b, sd, list(start), hint, tiles, tile, ctx, fresh, out)


def _spread(buf: Buf, d: int, start: list[Poly], hint: str, tiles: str, tile: str,
            ctx: Ctx, fresh: Callable[[str], str], out: Emitter) -> None:
    """This tile's share of the lines of the slab `buf[start ..]` (all of dimensions
    after `d`): `cdiv(lines, tiles)` lines from `tile * share`, if at most
    MAX_LINES_PER_TILE."""
    slab = " * ".join(f"(int64_t)({ctext(x, ctx)})" for x in buf.dims[d + 1:]) or "1"
    lines, per, base, q = (fresh(n) for n in ("pf_lines", "pf_per", "pf_base", "pf_q"))
    out.line(f"const int64_t {lines} = ({slab} * (int64_t)sizeof(*{buf.cname}) + 63) / 64;")
    out.line(f"const int64_t {per} = ({lines} + {tiles} - 1) / ({tiles});")
    with out.block(f"if ({per} <= {MAX_LINES_PER_TILE})"):
        out.line(f"const uintptr_t {base} = (uintptr_t){buf.cname} + sizeof(*{buf.cname}) * "
                 f"(uintptr_t)({flat_text(start, buf.dims, ctx)});")
        with out.block(f"for (int64_t {q} = {tile} * {per}; {q} < {tile} * {per} + {per} && "
                       f"{q} < {lines}; ++{q})"):
            out.line(hint.format(p=f"{base} + 64 * (uintptr_t){q}") + ";")
