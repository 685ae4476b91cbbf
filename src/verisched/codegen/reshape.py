"""Reshape operators (Fig. 4-6): only the destination's index function changes.

Concat lowers both operands into one buffer at offsets, transpose swaps
indices, flatten combines them, split divides them, pad/trunc shift them;
each also narrows the destination's windows, so an operand never stores
outside the part of the buffer that is its own.  Each returns whether the
whole window was written (else the caller zero-fills), and writes the
semantics' zeros of pad regions itself.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from verisched.codegen import generation
from verisched.codegen.cexpr import inside, ix, smax, smin
from verisched.codegen.errors import LowerError
from verisched.codegen.ir import Ctx, Dest, Emitter
from verisched.codegen.normal import show
from verisched.codegen.poly import Poly, binop
from verisched.pybridge.terms import (
    Concat,
    Expr,
    Flatten,
    PadL,
    PadR,
    Split,
    Transpose,
    TruncL,
    TruncR,
)

if TYPE_CHECKING:
    from verisched.codegen.core import Lowering


def lower_reshape(lw: Lowering, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter
                  ) -> bool:
    """Store reshape `e` into `dest` by lowering its operand(s) into a remapped `dest`."""
    zero = Poly.const(0)
    (a, b), rest = dest.windows[0], dest.windows[1:]
    if isinstance(e, Concat):
        fused = generation.lower_concat_gens(lw, e, dest, mode, ctx, out)
        if fused is not None:
            return fused
        n1, n2 = ix(e.n1, ctx), ix(e.n2, ctx)
        w1 = (smax(a, zero, ctx), smin(b, n1, ctx))
        w2 = (smax(a - n1, zero, ctx), smin(b - n1, n2, ctx))
        c1 = lw.lower(e.left, dest.remap(lambda i: i, (w1, *rest)), mode, ctx, out)
        c2 = lw.lower(e.right, dest.remap(lambda i: [i[0] + n1, *i[1:]], (w2, *rest)),
                      mode, ctx, out)
        return (c1 and c2 and ctx.facts.ge0(n1) and ctx.facts.ge0(n2)
                and inside((a, b), n1 + n2, ctx))
    if isinstance(e, Transpose):
        n, m = ix(e.n, ctx), ix(e.m, ctx)
        (a1, b1), rest2 = rest[0], rest[1:]
        w0 = (smax(a, zero, ctx), smin(b, m, ctx))
        w1 = (smax(a1, zero, ctx), smin(b1, n, ctx))
        cov = lw.lower(e.body, dest.remap(lambda i: [i[1], i[0], *i[2:]], (w1, w0, *rest2)),
                       mode, ctx, out)
        return cov and inside((a, b), m, ctx) and inside(rest[0], n, ctx)
    if isinstance(e, Flatten):
        n, m = ix(e.n, ctx), ix(e.m, ctx)
        full = ctx.facts.le(a, zero) and ctx.facts.le(n * m, b)

        def conds(i: list[Poly]) -> list[Poly]:
            flat = i[0] * m + i[1]
            return [] if full else [flat - a, b - 1 - flat]

        d2 = dest.remap(lambda i: [i[0] * m + i[1], *i[2:]], ((zero, n), (zero, m), *rest),
                        conds)
        cov = lw.lower(e.body, d2, mode, ctx, out)
        return cov and ctx.facts.ge0(m - 1) and inside((a, b), n * m, ctx)
    if isinstance(e, Split):
        k, n = ix(e.k, ctx), ix(e.n, ctx)
        (a1, b1), rest2 = rest[0], rest[1:]
        rows = binop("cdiv", n, k)
        full = (ctx.facts.le(a, zero) and ctx.facts.le(rows, b) and ctx.facts.le(a1, zero)
                and ctx.facts.le(k, b1))
        kpos = ctx.facts.ge0(k - 1)

        def conds(i: list[Poly]) -> list[Poly]:
            q, r = binop("/", i[0], k), binop("%", i[0], k)
            cs = [] if kpos else [k - 1]
            return cs if full else cs + [q - a, b - 1 - q, r - a1, b1 - 1 - r]

        d2 = dest.remap(lambda i: [binop("/", i[0], k), binop("%", i[0], k), *i[1:]],
                        ((zero, n), *rest2), conds)
        cov = lw.lower(e.body, d2, mode, ctx, out)
        kc, nc = k.as_const(), n.as_const()
        exact = kc is not None and nc is not None and kc > 0 and nc >= 0 and nc % kc == 0
        return (cov and exact and inside((a, b), rows, ctx)
                and inside(rest[0], k, ctx))
    if isinstance(e, (PadR, PadL)):
        k, n = ix(e.k, ctx), ix(e.n, ctx)
        shift = k if isinstance(e, PadL) else zero
        w = (smax(a - shift, zero, ctx), smin(b - shift, n, ctx))
        cov = lw.lower(e.body, dest.remap(lambda i: [i[0] + shift, *i[1:]], (w, *rest)),
                       mode, ctx, out)
        if mode == "=":
            # The padding is zero (Fig. 5); write exactly that region.
            pads = [(zero, k)] if isinstance(e, PadL) else [(n, n + k)]
            for plo, phi in pads:
                pw = (smax(a, plo, ctx), smin(b, phi, ctx))
                lw.zero_fill(replace(dest, windows=(pw, *rest)), ctx, out)
        return (cov and ctx.facts.ge0(n) and ctx.facts.ge0(k)
                and inside((a, b), n + k, ctx))
    if isinstance(e, TruncR):
        k = ix(e.k, ctx)
        w = (smax(a, zero, ctx), smin(b, k, ctx))
        cov = lw.lower(e.body, dest.remap(lambda i: i, (w, *rest)), mode, ctx, out)
        return cov and inside((a, b), k, ctx)
    if isinstance(e, TruncL):
        k, n = ix(e.k, ctx), ix(e.n, ctx)
        off = n - k
        w = (smax(a, zero, ctx) + off, smin(b, k, ctx) + off)
        cov = lw.lower(e.body, dest.remap(lambda i: [i[0] - off, *i[1:]], (w, *rest)),
                       mode, ctx, out)
        return cov and inside((a, b), k, ctx)
    raise LowerError(f"lowering: unsupported term: {show(e)}")
