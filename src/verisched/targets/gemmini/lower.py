"""Lowering of derived programs with gemmini_ instructions to C for Gemmini's gemmini.h.

`lower_gemmini` is the gemmini target's entry point (targets/gemmini/cli.py,
derived.py, the benchmarks): it opens the kernel's scope like the C
targets' `lower` (codegen/lower.py), lowers the program with the core
lowering (codegen/core.py) extended by Gemmini's rules (`GemminiRules`,
targets/gemmini/rules.py, through codegen/hooks.py's interface), places
the configuration instructions (config.py) and packages a `GemminiKernel`
for build.py's templates.  The rules live in:

| module | concern |
| --- | --- |
| rules.py | the hooks: dispatch, load ids, element types |
| onchip.py | on-chip lets with static rows; resolving tiles and what they hold |
| moves.py | mvin / mvout (and block moves) from calls |
| im2col.py | the on-chip im2col move: one mvin per row piece of the NHWC input |
| matmul.py | products; reductions whose first product overwrites |
| loops.py | hardware loops (`gemmini_loop_ws`) over blocks of output tiles |
| conv_loop.py | hardware conv loops (`gemmini_loop_conv_ws`) over tiles |
| arith.py | div/mod/min/max arithmetic of tile indices |

Bad input is refused with the subterm and the reason: float element types,
on-chip buffers with symbolic or too large extents or a last extent other
than DIM, tiles that are not whole consecutive rows, instructions whose
destination is in the wrong memory, and scalar arithmetic outside
instructions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verisched.codegen.cexpr import ctext, ix, pred, smax
from verisched.codegen.core import Lowering
from verisched.codegen.errors import LowerError
from verisched.codegen.intrange import note_extents
from verisched.codegen.ir import Buf, Emitter, kernel_name_problem, whole
from verisched.codegen.lower import (
    entry_check,
    open_scope,
    size_params,
    status_lines,
    status_return,
)
from verisched.codegen.normal import access_base, show_pred
from verisched.codegen.poly import Poly
from verisched.pybridge.instrs import check_call
from verisched.pybridge.terms import (
    Expr,
    Gen,
    Instr,
    IVar,
    Let,
    Pred,
    Shape,
    Var,
    free_vars,
    idx_free_vars,
    walk,
)
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.conv_loop import CONV_LOOPS, LOOP_CONV_WS_STRIDED
from verisched.targets.gemmini.instrs import (
    ACC_OUT,
    IM2COL_STRIDED,
    LOAD,
    ROLES,
    STORE,
    scale_problem,
)
from verisched.targets.gemmini.loops import BIAS_ARG, LOOPS
from verisched.targets.gemmini.moves import ELEM
from verisched.targets.gemmini.rules import GemminiRules

__all__ = ["GemminiKernel", "lower_gemmini", "config_names", "wide_tensors", "ELEM"]


@dataclass
class GemminiKernel:
    """A lowered Gemmini kernel: the C body plus what the signature and harness need."""

    name: str
    inputs: list[tuple[str, str, tuple[Poly, ...], str]]  # ATL name, C name, extents, C type
    sizes: list[tuple[str, str]]
    out_dims: tuple[Poly, ...]
    out_cname: str
    out_ctype: str
    out_extents_c: list[str]
    body: list[str]
    assumptions: list[tuple[str, Poly]] = field(default_factory=list)
    spad_rows: int = 0  # peak scratchpad rows in use
    acc_rows: int = 0  # peak accumulator rows in use
    configs: cfg.PlacementStats | None = None
    counts_c: dict[str, str] = field(default_factory=dict)  # C name -> element count (C text)
    config_params: list[str] = field(default_factory=list)  # int parameters that are not sizes
    assumptions_c: list[tuple[str, str]] = field(default_factory=list)  # (text, C condition)
    # Expressions over the sizes the C evaluates in `int` (lower.entry_check checks them).
    int_exprs: tuple[tuple[str, Poly], ...] = ()
    # Bounds of its int arithmetic with loop variables, at most INT_MAX (likewise).
    int_bounds: tuple[tuple[str, Poly], ...] = ()
    # What its hardware loops need of the sizes (GemminiRules.requirements), among
    # `assumptions` and stated in the C file's banner.
    requirements: tuple[tuple[str, Poly], ...] = ()
    # The output scales over the parameters, as (C text of sm, of se, their polynomials):
    # sm * 2^se must be a finite float32.
    scales: tuple[tuple[str, str, Poly, Poly], ...] = ()


# Position of the int32 bias among a hardware loop's arguments.
WIDE_ARG = {**BIAS_ARG, **dict.fromkeys(CONV_LOOPS, 5)}


def wide_tensors(e: Expr) -> set[str]:
    """Names of DRAM tensors holding int32 data: sources of gemmini_mvin_acc, and what the
    values of such lets read (a bias broadcast into a matrix reads an int32 bias)."""
    wide: set[str] = set()
    lets: dict[str, Expr] = {}

    for x in walk(e):  # type: ignore[arg-type]
        if isinstance(x, Instr) and x.name in ROLES and ROLES[x.name].kind == LOAD \
                and ROLES[x.name].memory == "GEMMINI_ACC":
            src = x.args[0]
            if isinstance(src, Gen):  # a row broadcast (moves.broadcast_source)
                src = src.body
            base, _ = access_base(src)  # type: ignore[arg-type]
            if isinstance(base, Var):
                wide.add(base.name)
        if isinstance(x, Instr) and x.name in WIDE_ARG:  # a hardware loop's int32 bias
            base, _ = access_base(x.args[WIDE_ARG[x.name]])  # type: ignore[arg-type]
            if isinstance(base, Var):
                wide.add(base.name)
        if isinstance(x, Let):
            lets[x.var] = x.value
    todo = list(wide)
    while todo:
        n = todo.pop()
        if n in lets:
            for v in free_vars(lets[n]):
                if v not in wide:
                    wide.add(v)
                    todo.append(v)
    return wide


def padding_names(e: object) -> set[str]:
    """The paddings given as variables among `config_names(e)`: not sizes (they may be
    0), but sizes all the same in what the prover may know of them (`pd >= 0`,
    `KH <= H + 2 pd`), unlike the output configuration."""
    return {a.name for x in walk(e) if isinstance(x, Instr)  # type: ignore[arg-type]
            and x.name in (LOOP_CONV_WS_STRIDED, IM2COL_STRIDED)
            for p, a in zip(check_call(x).params, x.args, strict=True)
            if p.name == "pd" and isinstance(a, IVar)}


def config_names(e: object) -> set[str]:
    """Integer kernel parameters that are not sizes (so not known to be >= 1): variables
    used as output configuration (scale, ReLU flag) of gemmini_mvout, gemmini_acc_out or a
    hardware loop, of any sign, and a conv loop's or a strided im2col move's padding given
    as a variable (which may be 0; conv_loop.py checks the loop's range, the move's reads
    are checked at run time, im2col.py)."""
    out: set[str] = set()
    for x in walk(e):  # type: ignore[arg-type]
        if not isinstance(x, Instr):
            continue
        role = ROLES.get(x.name)
        spec = check_call(x)
        names = {"sm", "se", "act"} if x.name in (ACC_OUT, *LOOPS, *CONV_LOOPS) else \
            {role.scale_m, role.scale_e, role.act} if role and role.kind == STORE else set()
        for p, a in zip(spec.params, x.args, strict=True):
            if p.name in names:
                out |= set(idx_free_vars(a))  # type: ignore[arg-type]
    return out | padding_names(e)


def lower_gemmini(expr: Expr, env: dict[str, Shape], *, name: str = "kernel",
                  dtype: str = "int8", sizes: list[str] | None = None,
                  assume: tuple[Pred, ...] | list[Pred] = (),
                  check_only: tuple[Pred, ...] | list[Pred] = ()) -> GemminiKernel:
    """Lower a derived program with gemmini_ instructions to the body of a C kernel.

    `env` maps each input tensor to its extents; `sizes` orders the size
    parameters (default: sorted); `assume` are the derivation's hypotheses over
    the sizes (checked by the harness before running, and by the kernel at entry);
    `check_only` are preconditions over the output configuration (`act` is 0 or 1),
    which the kernel checks at entry but the prover is not told.  `dtype` is the element
    type of the data: Gemmini computes on int8 inputs with int32 accumulators,
    so anything but int8/int32 is refused.
    """
    if dtype not in ELEM:
        raise LowerError(f"gemmini: element type {dtype} is not supported by Gemmini "
                         "(int8 inputs, int32 accumulators; no floating point)")
    why = kernel_name_problem(name)
    if why is not None:
        raise LowerError(f"gemmini: kernel name {name!r} {why}")
    sizes = size_params(expr, env, sizes, "gemmini")
    wide = wide_tensors(expr)
    lw = Lowering("int32", parallel=False, hooks=lambda core: GemminiRules(core, wide))
    rules = lw.target
    assert isinstance(rules, GemminiRules)
    # DRAM lets only copy int8 data (im2col, packing): arithmetic is refused by the rules.
    lw.ctype = "int8_t"
    configs = config_names(expr)
    ctx, size_list, assumptions = open_scope(lw, name, sizes, assume, "gemmini",
                                             not_sizes=configs)
    inputs = []
    for k, shp in env.items():
        c = lw.names.fresh(k)
        dims = tuple(ix(i, ctx) for i in shp)
        note_extents(dims, ctx)
        if not dims:
            raise LowerError(f"gemmini: scalar input {k} is not supported (inputs are int8 "
                             "or int32 matrices)")
        inputs.append((k, c, dims))
        ctx.tensors[k] = Buf(c, dims)
    out_name = lw.names.fresh("out")
    rules.out_cname = out_name
    dims = lw.shape(expr, ctx) or ()
    if not dims:
        raise LowerError("gemmini: the program's value is a scalar; Gemmini kernels store tiles")
    params = {c for _, c in size_list}  # sizes, and integer parameters such as a padding
    for d in dims:
        if d.vars() - params:
            raise LowerError(f"gemmini: output extent {ctext(d, ctx)} depends on a loop variable")
    note_extents(dims, ctx)
    cdims = tuple(smax(d, Poly.const(0), ctx) for d in dims)
    fill = Emitter()
    fill.level = 1
    covered = lw.lower(expr, whole(Buf(out_name, cdims)), "=", ctx, fill)
    out_type = rules.out_type or dtype
    body = Emitter()
    body.level = 1
    status_lines(body, lw)
    # As the C targets' kernels do: a C caller who breaks a size's bound, an assumption
    # (the scratchpad's capacity among them) or an int expression gets error 2, no access.
    config_facts = [(show_pred(p), f) for p in check_only for f in pred(p, ctx)[1]]
    assumptions = assumptions + rules.requirements  # the hardware loops' (conv_loop.py)
    requirements = tuple(rules.requirements)
    for k, c, _ in inputs:
        if k in rules.wide:
            rules.set_input_type(c, "int32", f"input {k}")
    typed_inputs = [(k, c, d, ELEM[rules.input_types.get(c, "int8")][0])
                    for k, c, d in inputs]
    buffers = [(d, t) for _, _, d, t in typed_inputs] + [(cdims, ELEM[out_type][0])]
    int_exprs, int_bounds = entry_check(body, name, size_list, assumptions + config_facts, ctx,
                                        buffers)
    for sm_p, se_p in rules.scales.values():  # fixed: refused now, not per call
        fixed = sm_p.as_const(), se_p.as_const()
        if fixed[0] is not None and fixed[1] is not None:
            why = scale_problem(fixed[0], fixed[1])
            if why is not None:
                raise LowerError(f"gemmini: the output scale {fixed[0]} * 2^{fixed[1]} "
                                 f"(fixed) {why}")
    if rules.scales:  # config_st takes a finite float only (the simulator aborts otherwise),
        # and the proof is about an exact significand (gemmini_scale_ok)
        finite = " && ".join(f"vs_scale_ok({sm}, {se})" for sm, se in rules.scales)
        with body.block(f"if (!({finite}))"):
            body.line(f"{name}_error = 2;")
            body.line("return 2;")
    lw.emit_hoisted(body)
    if not covered:
        total = Poly.const(1)
        for d in cdims:
            total = total * d
        body.line(f"memset({out_name}, 0, (size_t)({ctext(total, ctx, wide=True)}) * "
                  f"sizeof({ELEM[out_type][0]}));")
    placed, stats = cfg.place_configs(fill.lines)
    body.lines.extend(placed)
    body.line("gemmini_fence();")
    status_return(body, lw, name)
    counts = {}
    for _, c, d in [*inputs, ("", out_name, cdims)]:
        total = Poly.const(1)
        for x in d:
            total = total * x
        counts[c] = ctext(total, ctx, wide=len(d) >= 2)
    # The driver's own check, before it reads the input files: in 64 bits, as the kernel's.
    assumptions_c = [(text, f"({ctext(f, ctx, wide=True)}) >= 0") for text, f in assumptions]
    return GemminiKernel(
        name=name, inputs=typed_inputs, sizes=size_list, out_dims=cdims, out_cname=out_name,
        out_ctype=ELEM[out_type][0], out_extents_c=[ctext(d, ctx) for d in cdims],
        body=body.lines, assumptions=assumptions, spad_rows=rules.peak["GEMMINI_SPAD"],
        acc_rows=rules.peak["GEMMINI_ACC"], configs=stats, counts_c=counts,
        assumptions_c=assumptions_c, config_params=sorted(configs & set(sizes)),
        int_exprs=int_exprs, int_bounds=int_bounds, requirements=requirements,
        scales=tuple((sm, se, *polys) for (sm, se), polys in rules.scales.items()))
