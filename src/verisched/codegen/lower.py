"""Lowering of a normal-form ATL program to a C kernel: the entry point.

`lower` checks the program (normal form, kernel name, size parameters),
opens the kernel's scope (size parameters as C names with the facts the
code may rely on, inputs as buffers), lowers the program into the output
buffer with the core lowering (codegen/core.py; paper Sec. 5.2 Fig. 3,
Sec. 6 Fig. 6) and the target's rules, and packages the result as a
`LoweredKernel` for the templates (codegen/render.py) and the Python
wrapper (targets/base.py).  The scope's prologue is shared with the other
kernel entry point, targets/gemmini's `lower_gemmini` (`size_params`,
`open_scope`, `add_assumptions`).

The module layout of the lowering:

| module | concern |
| --- | --- |
| ir.py | its data: emitter, names, buffers, destinations, scopes, `LoweredKernel` |
| cexpr.py | index polynomials and predicates as C text |
| shapes.py | extents of terms |
| core.py | `Lowering`: dispatch on terms, loops, stores, zeros, sums, guards |
| generation.py, parallel.py | generations as loops; OpenMP placement |
| reshape.py, scalar.py, lets.py | reshapes, scalars and accesses, let buffers |
| hooks.py | `TargetHooks`, the interface a target's own rules implement |
| vector.py, isa.py | the C targets' rules: instructions, register lets |
| vloops.py, support.py | unrolling and mask splits; reductions clipped at packed padding |
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from verisched.codegen.cexpr import bytes_check, ctext, int_check, ix, pred, smax
from verisched.codegen.core import Lowering
from verisched.codegen.errors import LowerError, NotNormalError
from verisched.codegen.hooks import TargetHooks
from verisched.codegen.inplace import allow_inplace
from verisched.codegen.intrange import note_extents, prune
from verisched.codegen.ir import (
    C_INT_MAX,
    CTYPES,
    IO_CTYPES,
    KERNEL_SLOT,
    Buf,
    Ctx,
    Emitter,
    LoweredKernel,
    ScalarVar,
    StoreSlot,
    kernel_name_problem,
    whole,
)
from verisched.codegen.isa import VectorISA
from verisched.codegen.normal import (
    check_normal,
    eta_iter_inits,
    inline_zero_lets,
    rank_of,
    show_pred,
)
from verisched.codegen.poly import Poly
from verisched.codegen.prover import Facts
from verisched.codegen.scan import has_vector_code
from verisched.codegen.shapes import shape_of
from verisched.pybridge.outputs import distribute_outputs, fused_form, has_inner_tuple
from verisched.pybridge.terms import (
    Expr,
    IConst,
    Pred,
    Shape,
    Tuple,
    free_vars,
    idx_free_vars,
    walk,
)
from verisched.pybridge.terms import (
    pred_free_vars as pred_vars,
)

__all__ = ["lower", "LoweredKernel", "add_assumptions", "size_params", "open_scope",
           "CTYPES", "Lowering"]


def lower(expr: Expr, env: dict[str, Shape], *, name: str = "kernel", dtype: str = "float32",
          parallel: bool = False, sizes: list[str] | None = None,
          assume: tuple[Pred, ...] | list[Pred] = (),
          isa: VectorISA | None = None,
          hooks: Callable[[Lowering], TargetHooks] | None = None,
          store_at: Mapping[str, str] | None = None) -> LoweredKernel:
    """Lower a normal-form ATL program to the body of a C kernel.

    `env` maps each input tensor to its shape (index expressions over size
    parameters); `sizes` fixes the order of size parameters in the signature
    (default: sorted).  `parallel` marks the OpenMP-safe loops (openmp.py).
    `assume` are predicates over the sizes the program is only meant for (a
    derivation's hypotheses such as `2 <= n`): the code may rely on them, and
    the compiled kernel refuses sizes that violate them.  `isa` is the vector
    target library (targets/avx2.py, avx512.py) instruction calls and register
    memories are lowered with (codegen/vector.py); without it they are refused.
    `hooks` builds a target's own rules (codegen/hooks.py) instead of the vector
    rules, for a target that extends the C lowering.  `store_at` maps a let buffer
    to the loop whose body allocates it (Halide's store_at; codegen/lets.py): once per
    iteration of that loop instead of at every evaluation of the let.
    """
    why = kernel_name_problem(name)
    if why is not None:
        raise LowerError(f"lowering: kernel name {name!r} {why}")
    check_int_constants(expr, env, assume)
    ranks = {k: len(v) for k, v in env.items()}
    # A let of a zero-valued term is zero at every index: its uses are zeros, not a
    # buffer (normal.py, inline_zero_lets).
    expr = inline_zero_lets(expr)
    expr = eta_iter_inits(expr, dict(env))
    # Several outputs (a tuple at the top): each is lowered into its own output buffer,
    # one after the other, in one kernel; or, swept by one loop (`fuse_outputs`: a
    # tuple of initial values <+> a SUM of tuples), each output's initial value, then
    # the one loop adding into every output (pybridge/outputs.py).  Shapes and the
    # normal form are read one output at a time, from the componentwise form.
    fused = fused_form(expr)
    parts = distribute_outputs(expr)
    items = parts.items if isinstance(parts, Tuple) else (parts,)
    if has_inner_tuple(parts) or (has_inner_tuple(expr) and fused is None):
        raise NotNormalError("lowering: a tuple of outputs may only be the whole program, "
                             "or its outputs' initial values <+> one SUM of tuples "
                             "(fuse_outputs)")
    all_zero = []
    for x in items:
        out_rank = rank_of(x, ranks)
        # A program whose every leaf is zero is zeros of its generations' extents: a bare
        # zero is a scalar there, as the interpreter reads it (GEN [ i < 2 ] tzero).
        all_zero.append(out_rank is None)
        if out_rank is None:
            out_rank = rank_of(x, ranks, zero=0)
        assert out_rank is not None
        check_normal(x, ranks, out_rank)
    sizes = size_params(expr, env, sizes, "lowering")
    lw = Lowering(dtype, parallel, isa, hooks)
    lw.store_at = dict(store_at or {})
    lw.vector_program = has_vector_code(expr)
    ctx, size_list, assumptions = open_scope(lw, name, sizes, assume, "lowering", parallel)
    inputs = []
    for k, shp in env.items():
        c = lw.names.fresh(k)
        dims = tuple(ix(i, ctx) for i in shp)
        note_extents(dims, ctx)
        inputs.append((k, c, dims))
        ctx.tensors[k] = Buf(c, dims) if dims else ScalarVar(f"{c}[0]")
    outs: list[tuple[str, tuple[Poly, ...]]] = []
    for k, (x, zero) in enumerate(zip(items, all_zero, strict=True)):
        out_name = lw.names.fresh("out" if k == 0 else f"out{k}")
        dims = (shape_of(x, ctx, lw.target.meaning, zero=()) if zero else
                lw.shape(x, ctx)) or ()
        for d in dims:
            if d.vars() - ctx.facts.sizes:
                raise LowerError(f"lowering: output extent {ctext(d, ctx)} depends on a loop "
                                 "variable")
        note_extents(dims, ctx)
        outs.append((out_name, tuple(smax(d, Poly.const(0), ctx) for d in dims)))
    if IO_CTYPES[dtype] != CTYPES[dtype]:
        lw.narrow = {o: IO_CTYPES[dtype] for o, _ in outs}
    body = Emitter()
    body.level = 1
    # Loop-invariant heap buffers are allocated once, here, not per iteration (lets.py).
    root = StoreSlot(KERNEL_SLOT, frozenset(), 0)
    ctx.slots[KERNEL_SLOT] = root
    fills = []
    for x, (out_name, cdims) in zip(fused.inits if fused else items, outs, strict=True):
        fill = Emitter()
        fills.append((lw.lower(x, whole(Buf(out_name, cdims)), "=", ctx, fill), fill))
    sweep = Emitter()
    if fused is not None:
        lw.lower_sum_tuple(fused.loop, [whole(Buf(o, d)) for o, d in outs], ctx, sweep)
    for var, loop in lw.store_at.items():
        if var not in lw.placed:
            raise LowerError(f"store_at {var} {loop}: the lowered program has no buffer {var} "
                             f"inside a loop {loop} (no such let, or it was inlined as zero)")
    zeroes: list[str | None] = []  # printed before the entry check, which covers their ints
    for (covered, _), (out_name, cdims) in zip(fills, outs, strict=True):
        if covered:
            zeroes.append(None)
            continue
        total = Poly.const(1)
        for d in cdims:
            total = total * d
        count = ctext(total, ctx, wide=len(cdims) >= 2)
        zeroes.append(f"memset({out_name}, 0, (size_t)({count}) * sizeof({IO_CTYPES[dtype]}));")
    status_lines(body, lw)
    buffers = [(d, IO_CTYPES[dtype]) for _, _, d in inputs] + \
        [(d, IO_CTYPES[dtype]) for _, d in outs]
    int_exprs, int_bounds = entry_check(body, name, size_list, assumptions, ctx, buffers)
    lw.emit_hoisted(body)
    for line in root.allocs:
        body.line(line)
    for (_, fill), zero in zip(fills, zeroes, strict=True):
        if zero is not None:
            body.line(zero)
        body.extend(fill)
    body.extend(sweep)
    for line in root.frees:
        body.line(line)
    status_return(body, lw, name)
    out_name, cdims = outs[0]
    # In place only for a single output (several would each need the analysis).
    inplace = allow_inplace(body.lines, out_name,
                            [(k, c) for k, c, d in inputs if d == cdims], lw.names.fresh) \
        if len(outs) == 1 else ()
    return LoweredKernel(name=name, dtype=dtype, inputs=inputs, sizes=size_list,
                         out_dims=cdims, out_cname=out_name, inplace=inplace,
                         out_extents_c=[ctext(d, ctx) for d in cdims], body=body.lines,
                         more_outputs=[(c, d, [ctext(x, ctx) for x in d])
                                       for c, d in outs[1:]],
                         parallel_loops=lw.parallel_loops, assumptions=assumptions,
                         int_exprs=int_exprs, int_bounds=int_bounds,
                         uses_openmp=lw.parallel_loops > 0, isa=isa,
                         uses_vectors=has_vector_code(expr))


def check_int_constants(expr: Expr, env: Mapping[str, Shape], assume: Iterable[Pred]) -> None:
    """Refuse an index constant beyond C `int` (a split by 2^31): Coq proves such a
    schedule, but the C's loop bounds would wrap, and the kernel would leave its output
    unwritten and report no error."""
    roots = [expr, *(i for shp in env.values() for i in shp), *assume]
    for root in roots:
        for x in walk(root):
            if isinstance(x, IConst) and abs(x.value) > C_INT_MAX:
                raise LowerError(f"lowering: the index constant {x.value} is beyond C int "
                                 f"(|c| <= {C_INT_MAX}), over which the kernels' sizes and "
                                 "loops run")


def size_params(expr: Expr, env: dict[str, Shape], sizes: list[str] | None, who: str
                ) -> list[str]:
    """The kernel's size parameters in signature order: the free variables of the
    program and of its inputs' shapes that are not inputs (sorted, unless `sizes`
    gives an order, which must name exactly them)."""
    size_names: set[str] = set()
    for s in env.values():
        for i in s:
            size_names |= idx_free_vars(i)
    size_names |= free_vars(expr) - set(env)
    if sizes is None:
        return sorted(size_names)
    if set(sizes) != size_names:
        raise LowerError(f"{who}: size parameters {sorted(size_names)} differ from "
                         f"the given order {sizes}")
    return sizes


def open_scope(lw: Lowering, name: str, sizes: list[str], assume: Iterable[Pred], who: str,
               parallel: bool = False, not_sizes: set[str] | frozenset[str] = frozenset()
               ) -> tuple[Ctx, list[tuple[str, str]], list[tuple[str, Poly]]]:
    """The kernel's top-level scope: the kernel's name and error flag reserved, each
    size parameter named in C and known to be >= 1 (except `not_sizes`: integer
    parameters of any sign), and the assumptions added; it records the int expressions
    over the sizes that the lowering prints (`Ctx.int_exprs`), for `entry_check`, which
    both lowerings call.  Returns the scope, the (ATL, C) names of the parameters and
    the assumptions as the kernel checks them."""
    lw.names.used.add(name)
    lw.status = lw.names.fresh("status")
    ctx = Ctx(Facts(sizes=frozenset()), {}, {}, parallel_ok=parallel)
    size_list = []
    for s in sizes:
        c = lw.names.fresh(s)
        ctx.idx_names[s] = c
        size_list.append((s, c))
    ctx.facts.sizes = frozenset(c for a, c in size_list if a not in not_sizes)
    for a, c in size_list:
        if a not in not_sizes:
            ctx.facts.add(Poly.var(c) - 1)
    assumptions = add_assumptions(lw, ctx, assume, sizes, who)
    # From here on (the assumptions are checked in 64 bits, not printed in int): what
    # the lowering prints in int, for the caller's entry_check.
    ctx.int_exprs, ctx.int_bounds = set(), set()
    return ctx, size_list, assumptions


def entry_check(body: Emitter, name: str, size_list: list[tuple[str, str]],
                assumptions: list[tuple[str, Poly]], ctx: Ctx,
                buffers: Iterable[tuple[tuple[Poly, ...], str]] = ()
                ) -> tuple[tuple[tuple[str, Poly], ...], tuple[tuple[str, Poly], ...]]:
    """The kernel's own check of what its code relies on (every size >= 1, the
    derivation's assumptions), so that a C caller who breaks them gets the code 2
    and an untouched output instead of reads and writes out of bounds; the Python
    wrapper checks the same before the call and says which one failed.  Evaluated in
    64 bits, sizes first (a later term may divide by one); then that each expression
    over the sizes alone the C evaluates in `int` is one (`Ctx.int_exprs`), and that
    each bound of its int arithmetic with loop variables is at most INT_MAX
    (`Ctx.int_bounds`, codegen/intrange.py): both returned, as (C text, polynomial),
    for the wrapper's own check.  Last, that each of the caller's `buffers` (extents, C
    element type) fits in a ptrdiff_t, as the wrapper's arrays do (native.extents): at
    sizes where none could, an offset into it would pass what a pointer addresses."""
    conds = [f"{c} >= 1" for a, c in size_list if c in ctx.facts.sizes]
    conds += [f"({ctext(f, ctx, wide=True)}) >= 0" for _, f in assumptions]
    # after the sizes and assumptions (a term may divide by a size); sorted: stable C;
    # those the others imply left out (intrange.prune)
    exprs, bounds = prune(ctx.int_exprs or set(), ctx.int_bounds or set(), ctx.facts)
    ints = tuple((ctext(p, ctx), p) for p in exprs)
    tops = tuple((ctext(p, ctx), p) for p in bounds)
    conds += [int_check(p) for _, p in ints] + [int_check(p, upper=True) for _, p in tops]
    conds += [c for c in dict.fromkeys(bytes_check(d, ctx, t) for d, t in buffers) if c]
    if conds:
        with body.block(f"if (!({' && '.join(conds)}))"):
            body.line(f"{name}_error = 2;")
            body.line("return 2;")
    return ints, tops


def status_lines(body: Emitter, lw: Lowering) -> None:
    """The kernel's own status, first in its body: an array of one int, so that a
    parallel loop's body, outlined into a function (codegen/outline.py), writes the
    caller's through the pointer it is passed, and so that concurrent calls from a
    user's threads each have their own (the global NAME_error is thread-local too)."""
    body.line(f"int {lw.status}[1];")
    body.line(f"{lw.status}[0] = 0;")


def status_return(body: Emitter, lw: Lowering, name: str) -> None:
    """The kernel's last lines: its status, into the calling thread's NAME_error and
    returned."""
    body.line(f"{name}_error = {lw.status}[0];")
    body.line(f"return {lw.status}[0];")


def add_assumptions(lw: object, ctx: Ctx, assume: Iterable[Pred], sizes: Iterable[str],
                    who: str) -> list[tuple[str, Poly]]:
    """Add the hypotheses on sizes to the prover's facts (shared by every target's
    kernel prologue); returns them, shown and as polynomials, for the kernel's checks.
    (`lw`, the lowering, is not needed any more: kept so existing callers work.)"""
    size_set = set(sizes)
    assumptions: list[tuple[str, Poly]] = []
    for p in assume:
        if pred_vars(p) - size_set:
            raise LowerError(f"{who}: assumption {show_pred(p)} mentions a non-size variable")
        _, facts = pred(p, ctx)
        for f in facts:
            ctx.facts.add(f)
            assumptions.append((show_pred(p), f))
    return assumptions
