"""Gemmini's hardware loop instructions: `gemmini_loop_ws` calls lowered to gemmini.h.

The ATL instructions `gemmini_loop_ws sm se act A B M N K` and
`gemmini_loop_ws_bias sm se act A B D M N K` (coq/Targets/GemminiLoop.v) are
the whole per-tile schedule of a quantized matmul, by definition the program
of single instructions the hardware loop unrolls into.  One hardware call
holds at most half of the scratchpad (its A and B blocks) and half of the
accumulator (its C blocks): the hardware double-buffers two loops.  So the
call is lowered to a host loop over blocks of output tiles, each one
`gemmini_loop_ws` (six RoCC commands) computing a sub-block of the
specification; a reduction too deep for one call is split over calls that
accumulate (the first loads the bias, the last stores C), as Gemmini's own
`tiled_matmul` does.  The block shape is chosen at run time (the sizes are
kernel arguments): fewest calls, then fewest bytes moved (A is moved once
per column block, B once per row block).

The configuration the hardware loop reads (load strides = the row strides
of A, B, D; block stride DIM; store stride, activation and scale;
weight-stationary execute) is required through config.py's markers, so it
is hoisted and shared with the single-instruction code like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verisched.codegen.cexpr import ctext, ix
from verisched.codegen.errors import LowerError
from verisched.codegen.ir import Buf, Ctx, Dest, Emitter
from verisched.codegen.normal import show
from verisched.codegen.poly import Poly
from verisched.pybridge.instrs import InstrError, check_call
from verisched.pybridge.terms import Instr
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.moves import config_arg, scale_arg
from verisched.targets.gemmini.onchip import dram_source

if TYPE_CHECKING:
    from verisched.targets.gemmini.rules import GemminiRules

LOOP_WS = "gemmini_loop_ws"
LOOP_WS_BIAS = "gemmini_loop_ws_bias"
LOOPS = (LOOP_WS, LOOP_WS_BIAS)
# Position of the int32 bias among a loop's arguments (lower.wide_tensors).
BIAS_ARG = {LOOP_WS_BIAS: 5}
EX_WS = ("WEIGHT_STATIONARY", "NO_ACTIVATION", "0", "1", "0", "0")
# Tiles one hardware loop may hold: C in half the accumulator, A + B + one spare tile
# in half the scratchpad (gemmini_loop.h checks the same).
MAX_C_TILES = cfg.ACC_ROWS // 2 // cfg.DIM
MAX_AB_TILES = cfg.SPAD_ROWS // 2 // cfg.DIM - 1


def same(a: Poly, b: Poly, ctx: Ctx) -> bool:
    """Are the extents `a` and `b` provably equal?"""
    return ctx.facts.le(a, b) and ctx.facts.le(b, a)


def loop_call(e: Instr, mode: str) -> tuple[dict[str, object], str]:
    """The arguments of hardware-loop call `e` by parameter name, and how to name the call
    in a message; refuses a call Coq's specification does not type and a call that
    accumulates (a hardware loop stores the kernel's output).  Shared by `gemmini_loop_ws`
    here and `gemmini_loop_conv_ws` (conv_loop.py)."""
    try:
        spec = check_call(e)
    except InstrError as exc:
        raise LowerError(f"gemmini: {exc}") from exc
    where = f"{e.name} ({show(e)})"
    if mode != "=":
        raise LowerError(f"gemmini: {where} is accumulated into its destination; a hardware "
                         "loop stores the kernel's output")
    return {p.name: a for p, a in zip(spec.params, e.args, strict=True)}, where


def _matrix(g: GemminiRules, arg: object, rows: Poly, cols: Poly, ctx: Ctx, what: str
            ) -> Buf:
    """The DRAM matrix argument `arg`, which must be a whole input of extents rows x cols
    (the loop addresses it with its own row stride)."""
    buf, lead = dram_source(g, arg, ctx, what)  # type: ignore[arg-type]
    if lead or not (same(buf.dims[0], rows, ctx) and same(buf.dims[1], cols, ctx)):
        raise LowerError(f"gemmini: {what} must be a whole DRAM matrix of extents "
                         f"{ctext(rows, ctx)} x {ctext(cols, ctx)}: {show(arg)}")  # type: ignore[arg-type]
    return buf


def _whole_output(g: GemminiRules, dest: Dest, m: Poly, n: Poly, ctx: Ctx) -> bool:
    """Is `dest` all of the kernel's output, an m x n matrix laid out as it is indexed?"""
    if dest.buf is None or dest.buf.cname != g.out_cname or len(dest.windows) != 2:
        return False
    (a0, b0), (a1, b1) = dest.windows
    if not (a0.as_const() == 0 and a1.as_const() == 0 and same(b0, m, ctx)
            and same(b1, n, ctx)):
        return False
    i, j = Poly.var("vs_loop_i"), Poly.var("vs_loop_j")
    idx, conds = dest.fn([i, j])
    return not conds and len(idx) == 2 and (idx[0] - i).as_const() == 0 \
        and (idx[1] - j).as_const() == 0


def lower_loop(g: GemminiRules, e: Instr, dest: Dest, mode: str, ctx: Ctx, out: Emitter
               ) -> bool:
    """Store `gemmini_loop_ws[_bias] ...` into the kernel's output: hardware loops over
    blocks of output tiles (module docstring).  Returns whether all of the output is
    written (not when K may be 0: then the output is the zero the caller fills)."""
    args, where = loop_call(e, mode)
    m, n, k = (ix(args[x], ctx) for x in ("M", "N", "K"))
    if not _whole_output(g, dest, m, n, ctx):
        raise LowerError(f"gemmini: {where} must be the whole program: it stores the kernel's "
                         "whole output, M x N")
    bias = e.name == LOOP_WS_BIAS
    a = _matrix(g, args["A"], m, k, ctx, f"A of {where}")
    b = _matrix(g, args["B"], k, n, ctx, f"B of {where}")
    d = _matrix(g, args["D"], m, n, ctx, f"D of {where}") if bias else None
    for buf, etype in ((a, "int8"), (b, "int8"), *(((d, "int32"),) if d else ())):
        g.set_input_type(buf.cname, etype, where)
    g.out_type = "int8"
    scale, act = scale_arg(g, args, "sm", "se", ctx), config_arg(g, args, "act", ctx)
    M, N, K = (f"(size_t)({ctext(p, ctx)})" for p in (m, n, k))
    nm = {x: g.core.names.fresh(f"vs_lw_{x}") for x in
          ("I", "J", "KT", "bi", "bj", "bk", "best", "i0", "j0", "k0", "ni", "nj", "nk", "x",
           "y", "cost")}
    out.line(f"/* {e.name}: hardware loops over blocks of output tiles (loops.py) */")
    out.line(f"const size_t {nm['I']} = ({M} + {cfg.DIM - 1}) / {cfg.DIM}, "
             f"{nm['J']} = ({N} + {cfg.DIM - 1}) / {cfg.DIM}, "
             f"{nm['KT']} = ({K} + {cfg.DIM - 1}) / {cfg.DIM};")
    if bias and not ctx.facts.ge0(k - Poly.const(1)):
        # checked at the kernel's entry (NAME_error = 2), where it called abort()
        g.requirements.append((f"K >= 1 ({e.name}: the loop lowering does not store a "
                               "bias alone)", k - Poly.const(1)))
    # Block shape: fewest hardware calls, then fewest bytes moved into the scratchpad.
    out.line(f"size_t {nm['bi']} = 1, {nm['bj']} = 1, {nm['bk']} = 1;")
    out.line(f"unsigned long long {nm['best']} = ~0ull;")
    with out.block(f"for (int {nm['x']} = 1; {nm['x']} <= {MAX_C_TILES} && "
                   f"(size_t){nm['x']} <= {nm['I']}; {nm['x']}++)"):
        with out.block(f"for (int {nm['y']} = 1; {nm['x']} * {nm['y']} <= {MAX_C_TILES} && "
                       f"(size_t){nm['y']} <= {nm['J']}; {nm['y']}++)"):
            kb = f"{MAX_AB_TILES} / (size_t)({nm['x']} + {nm['y']})"
            out.line(f"size_t {nm['nk']} = {kb} < {nm['KT']} ? {kb} : {nm['KT']};")
            out.line(f"if ({nm['nk']} == 0) {nm['nk']} = 1;")
            calls = (f"(unsigned long long)(({nm['I']} + {nm['x']} - 1) / {nm['x']}) * "
                     f"(({nm['J']} + {nm['y']} - 1) / {nm['y']}) * "
                     f"(({nm['KT']} + {nm['nk']} - 1) / {nm['nk']})")
            moved = (f"(unsigned long long)(({nm['J']} + {nm['y']} - 1) / {nm['y']}) * "
                     f"{nm['I']} + (unsigned long long)(({nm['I']} + {nm['x']} - 1) / "
                     f"{nm['x']}) * {nm['J']}")
            out.line(f"unsigned long long {nm['cost']} = ({calls}) * 1000000000ull + {moved};")
            with out.block(f"if ({nm['cost']} < {nm['best']})"):
                out.line(f"{nm['best']} = {nm['cost']}; {nm['bi']} = (size_t){nm['x']}; "
                         f"{nm['bj']} = (size_t){nm['y']}; {nm['bk']} = {nm['nk']};")
    # The configuration the hardware loop reads (hoisted by config.py).
    out.line(cfg.marker("ex", EX_WS))
    ld_a, ld_b = (K, "1.0f", "0"), (N, "1.0f", "0")
    g.require_ld(0, ld_a, out)
    g.require_ld(1, ld_b, out)
    g.ld_last[0], g.ld_last[1] = ld_a, ld_b
    if bias:
        ld_d = (f"{N} * 4", "1.0f", "0")
        g.require_ld(2, ld_d, out)
        g.ld_last[2] = ld_d
    out.line(cfg.marker("st", (N, f"({act}) ? RELU : NO_ACTIVATION", scale)))
    i0, j0, k0, ni, nj, nk = (nm[x] for x in ("i0", "j0", "k0", "ni", "nj", "nk"))
    with out.block(f"for (int {i0} = 0; (size_t){i0} < {nm['I']}; {i0} += (int){nm['bi']})"):
        with out.block(f"for (int {j0} = 0; (size_t){j0} < {nm['J']}; "
                       f"{j0} += (int){nm['bj']})"):
            with out.block(f"for (int {k0} = 0; (size_t){k0} < {nm['KT']}; "
                           f"{k0} += (int){nm['bk']})"):
                for v, o, tot in ((ni, i0, "I"), (nj, j0, "J"), (nk, k0, "KT")):
                    bl = nm["b" + {"I": "i", "J": "j", "KT": "k"}[tot]]
                    out.line(f"const size_t {v} = {nm[tot]} - (size_t){o} < {bl} ? "
                             f"{nm[tot]} - (size_t){o} : {bl};")
                last_k = f"(size_t){k0} + {nk} == {nm['KT']}"
                pad = {x: f"((size_t){o} + {v} == {nm[t]} ? {nm[t]} * {cfg.DIM} - {s} : 0)"
                       for x, o, v, t, s in (("I", i0, ni, "I", M), ("J", j0, nj, "J", N),
                                             ("K", k0, nk, "KT", K))}
                row_a = f"(size_t){i0} * {cfg.DIM} * {K} + (size_t){k0} * {cfg.DIM}"
                row_b = f"(size_t){k0} * {cfg.DIM} * {N} + (size_t){j0} * {cfg.DIM}"
                row_c = f"(size_t){i0} * {cfg.DIM} * {N} + (size_t){j0} * {cfg.DIM}"
                d_ptr = (f"({k0} == 0 ? (const void *)&{d.cname}[{row_c}] : NULL)"
                         if d is not None else "NULL")
                c_ptr = f"({last_k} ? (void *)&{g.out_cname}[{row_c}] : NULL)"
                accumulate = f"{k0} > 0" if not bias else "1"
                out.line(f"gemmini_loop_ws({ni}, {nj}, {nk}, {pad['I']}, {pad['J']}, "
                         f"{pad['K']}, &{a.cname}[{row_a}], &{b.cname}[{row_b}], {d_ptr}, "
                         f"{c_ptr}, {K}, {N}, {N}, {N}, 0, 0, 0, 0, {accumulate}, "
                         f"({act}) ? RELU : NO_ACTIVATION, 0, 0, 0)")
    return ctx.facts.ge0(k - 1)
