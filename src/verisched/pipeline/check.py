"""Stage 2: a derived program -> the checked program a target lowers.

This is where the two guards of every path live:

- **Bounds safety.**  The C kernel reads arrays unchecked wherever the
  prover can, so Coq's `check_safe` must have proved every access of the
  final program in bounds.  Without it the program is refused, unless the
  caller asks for `unsafe=True`; the kernel then says UNSAFE in its C banner
  and carries `unsafe = True`.
- **Preconditions.**  The derivation proves `program = derived` under its
  section's hypotheses.  Every integer hypothesis over the kernel's sizes
  becomes a precondition: the lowering may rely on it and the kernel
  refuses sizes that break it (PreconditionError, never a wrong result).

`fix` means one thing everywhere: partial evaluation.  The derivation holds for
every value, so for these.  A fixed size variable must be an integer: every
hypothesis mentioning only fixed sizes is checked now, the others are
specialised, and the constants fold into the program (tile sizes become
literals, buffers constant-sized).  A fixed rank-0 input (a scalar such as
PolyBench's alpha) takes a number: it becomes a literal constant (`slit`,
docs/decisions.md #54) in the derived and the original program alike, and is no
longer a kernel argument.

The kernel's signature: the inputs the derived program reads and the size
variables it needs, both in the order of the .v file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from verisched.codegen.errors import CodegenError, PreconditionError, UnsafeProgramError
from verisched.codegen.ir import C_INT_MAX, kernel_name_problem
from verisched.codegen.program import KernelProgram
from verisched.pipeline.derive import DerivationError, DerivedProgram
from verisched.pybridge.coqterm import idx_str
from verisched.pybridge.hypotheses import Comparison, Condition
from verisched.pybridge.terms import (
    Expr,
    IConst,
    Instr,
    IVar,
    Lit,
    Shape,
    Zero,
    free_vars,
    idx_free_vars,
    is_idx,
    rebuild,
    specialize,
    subst,
)

# What `fix` maps a name to: an int for a size; a number (kept exact) for a scalar input.
FixValue = int | float | Fraction | str



@dataclass(frozen=True)
class CheckedProgram:
    """Stage 2's output: the program for the targets plus where it came from."""

    program: KernelProgram
    derived: DerivedProgram
    fixed: Mapping[str, int] = field(default_factory=dict)
    # The starting program with the fixed sizes substituted (for reference checks).
    original: Expr | None = None
    # Scalar inputs fixed to constants (exact), substituted in both programs.
    constants: Mapping[str, Fraction] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def unsafe(self) -> bool:
        return self.program.unsafe


def check(derived: DerivedProgram, *, fix: Mapping[str, FixValue] | None = None,
          shapes: Mapping[str, Shape] | None = None, unsafe: bool = False,
          name: str | None = None, dtype: str | None = None) -> CheckedProgram:
    """Check `derived` and give it a kernel signature (see the module docstring).

    `shapes` gives input extents the section's `shaped` hypotheses do not;
    `name` is the kernel's C name (default: the derivation's); `dtype` its
    element type (default: the target's)."""
    where = derived.source
    if derived.safety_gap is not None:
        if not unsafe:
            raise UnsafeProgramError(
                f"refusing to build {where}: its accesses are not proved in bounds "
                f"({derived.safety_gap}), so the C kernel could read or write out of bounds. "
                "End the derivation with check_safe before done, or pass unsafe=True "
                "(--unsafe) to build it anyway, marked UNSAFE")
        safety = derived.safety_gap
    else:
        safety = f"array accesses proved in bounds by check_safe ({where})"
    consts = _check_constants(derived, fix or {})
    fixed = _check_fix(derived, {k: v for k, v in (fix or {}).items() if k not in consts})
    expr = _fold(derived.expr, fixed, consts)
    inputs = _inputs(derived, expr, shapes or {}, fixed)
    sizes = _sizes(derived, expr, inputs)
    pre, assumed = _preconditions(derived, fixed, sizes)
    cname = name or derived.name.replace("'", "_")
    why = kernel_name_problem(cname)
    if why is not None:
        raise CodegenError(f"kernel name {cname!r} {why}")
    prog = KernelProgram(name=cname, expr=expr, inputs=inputs, sizes=sizes,  # type: ignore
                         preconditions=pre, dtype=dtype, safety=safety, unsafe=unsafe and
                         derived.safety_gap is not None, assumed=assumed)
    original = (_fold(derived.original, fixed, consts) if derived.original is not None
                else None)
    return CheckedProgram(prog, derived, fixed, original, consts)  # type: ignore[arg-type]


def _fold(e: Expr, fixed: Mapping[str, int], consts: Mapping[str, Fraction]) -> Expr:
    """`e` with fixed sizes and fixed scalar inputs replaced by their constants."""
    lits = {k: Zero() if q == 0 else Lit(q.numerator, q.denominator) for k, q in consts.items()}
    return subst(specialize(e, fixed), tensors=lits)  # type: ignore[return-value]


def _check_constants(derived: DerivedProgram, fix: Mapping[str, object]
                     ) -> dict[str, Fraction]:
    """The fixed names that are rank-0 inputs, with their exact values."""
    ranks = dict(derived.tensors)
    out: dict[str, Fraction] = {}
    for k, v in fix.items():
        if k not in ranks:
            continue
        if ranks[k] != 0:
            raise CodegenError(f"fix: {k} is an input of rank {ranks[k]}; only sizes and "
                               "scalar (rank-0) inputs can be fixed")
        try:
            if isinstance(v, bool):
                raise ValueError
            q = Fraction(repr(v)) if isinstance(v, float) else Fraction(v)  # type: ignore
        except (ValueError, TypeError, ZeroDivisionError):
            raise CodegenError(f"fix: {k} must be a number, got {v!r}") from None
        if q < 0:
            raise CodegenError(f"fix: {k}={v}: a constant cannot be negative (ATL's scalars "
                               "have no negation, docs/decisions.md #54); pass it at run time")
        out[k] = q
    return out


def value_params(expr: Expr) -> frozenset[str]:
    """The variables `expr` reads only as instructions' index arguments (Gemmini's
    `gemmini_acc_out sm se act`): values the instruction takes, never an extent, a
    bound or a guard, so any sign is theirs."""
    def strip(n: Any) -> Any:
        if isinstance(n, Instr):
            return Instr(n.name, tuple(IConst(0) if is_idx(a) else strip(a) for a in n.args))
        return n if is_idx(n) else rebuild(n, strip)
    return free_vars(expr) - free_vars(strip(expr))


def _check_fix(derived: DerivedProgram, fix: Mapping[str, FixValue]) -> dict[str, int]:
    unknown = [k for k in fix if k not in derived.sizes]
    if unknown:
        scalars = [t for t, r in derived.tensors if r == 0]
        raise CodegenError(f"fix: {', '.join(unknown)} is not a size variable or scalar input "
                           f"of {derived.name} (its sizes: {', '.join(derived.sizes) or 'none'}"
                           f"; scalar inputs: {', '.join(scalars) or 'none'})")
    out: dict[str, int] = {}
    values = value_params(derived.original if derived.original is not None else derived.expr)
    for k, v in fix.items():
        if isinstance(v, bool) and k in derived.bools:  # a Coq bool flag (act=true): 1 or 0
            v = int(v)
        if isinstance(v, bool):
            raise CodegenError(f"fix: {k}={str(v).lower()}: {k} is not a boolean flag of "
                               f"{derived.name} (an integer size)")
        if not isinstance(v, int):
            raise CodegenError(f"fix: {k} must be an integer (it is a size), got {v}")
        if abs(v) > C_INT_MAX:  # a kernel's sizes and loops are C int
            raise CodegenError(f"fix: {k}={v} is beyond C int (|{k}| <= {C_INT_MAX}), over "
                               "which the kernels' sizes and loops run")
        if v < 0 and k not in values:
            # A parameter only instructions read (Gemmini's scale exponent se) takes any
            # sign, as at a call.  ATL reads a negative extent as empty, the kernel's
            # arrays would not: a negative size was compiled in, then refused at the call
            # with a message that named no size.  Zero stays: an empty loop, or a time
            # loop of no steps.
            raise CodegenError(f"fix: {k}={v}: a size is an extent, at least 0 (a run-time "
                               "size, at least 1)")
        out[k] = int(v)
    for c in derived.hypotheses.conditions:
        fv = c.free_vars()
        if fv and fv <= set(out) and not c.holds(out):
            raise PreconditionError(f"fix {out}: violates hypothesis {c.name} : {c.text} of "
                                    f"{derived.source}; the derivation is proved only under it")
    return out


def _inputs(derived: DerivedProgram, expr: Expr, shapes: Mapping[str, Shape],
            fixed: Mapping[str, int]) -> tuple[tuple[str, Shape], ...]:
    ranks = dict(derived.tensors)
    stray = [t for t in shapes if t not in ranks]
    if stray:
        raise DerivationError(f"derivation {derived.name}: shape given for {', '.join(stray)}, "
                              f"which is not an input (inputs: {', '.join(ranks) or 'none'})")
    for t, shp in shapes.items():   # blamed on the shape, not on the derived program
        unknown = sorted(set().union(*(idx_free_vars(i) for i in shp)) - set(derived.sizes))
        if unknown:
            raise DerivationError(f"derivation {derived.name}: shape given for {t} mentions "
                                  f"{', '.join(unknown)}, which is not a size variable of its "
                                  f"section (sizes: {', '.join(derived.sizes) or 'none'})")
    # A shape the section states is the one the proof is about: another would lower a
    # program the derivation says nothing of (ATL reads outside an input as zero).
    clash = [t for t in shapes if t in derived.hypotheses.shapes
             and tuple(shapes[t]) != tuple(derived.hypotheses.shapes[t])]
    if clash:
        t = clash[0]
        given = "; ".join(idx_str(i) for i in derived.hypotheses.shapes[t])
        raise DerivationError(f"derivation {derived.name}: shape given for {t}, whose shape "
                              f"the section's hypothesis  shaped [{given}] {t}  states; a "
                              "shape is given only for an input without one")
    known = {**derived.hypotheses.shapes, **shapes}
    used = free_vars(expr)
    out = []
    for t, rank in derived.tensors:
        if t not in used:
            continue  # the derived program does not read it: not a kernel argument
        shp = known.get(t, () if rank == 0 else None)
        if shp is None:
            raise DerivationError(f"derivation {derived.name}: no shape for input {t} (rank "
                                  f"{rank}): add a hypothesis  shaped [..] {t}  or pass "
                                  f"--shape {t}=...")
        if len(shp) != rank:
            raise DerivationError(f"derivation {derived.name}: shape {len(shp)}-d given for "
                                  f"input {t} of rank {rank}")
        out.append((t, tuple(specialize(i, fixed) for i in shp)))
    return tuple(out)


def _sizes(derived: DerivedProgram, expr: Expr, inputs: tuple[tuple[str, Shape], ...]
           ) -> tuple[str, ...]:
    names = set(free_vars(expr)) - {t for t, _ in derived.tensors}
    for _, shp in inputs:
        for i in shp:
            names |= idx_free_vars(i)
    stray = names - set(derived.sizes)
    if stray:
        raise DerivationError(f"derivation {derived.name}: the derived program mentions "
                              f"{', '.join(sorted(stray))}, which is neither an input nor a "
                              "size variable of its section")
    return tuple(s for s in derived.sizes if s in names)


def _preconditions(derived: DerivedProgram, fixed: Mapping[str, int], sizes: tuple[str, ...]
                   ) -> tuple[tuple[Condition, ...], tuple[str, ...]]:
    pre: list[Condition] = []
    assumed: list[str] = []
    for c in derived.hypotheses.conditions:
        fv = c.free_vars()
        if fv and fv <= set(fixed):
            continue  # checked when fixed
        cs = c.specialize(fixed)
        extra = cs.free_vars() - set(sizes)
        if not extra:
            pre.append(cs)
        elif extra == cs.free_vars():
            assumed.append(f"{c.name} : {c.text} (only about sizes the kernel does not take)")
        else:
            assumed.append(f"{c.name} : {c.text} (mentions {', '.join(sorted(extra))}, which "
                           "the kernel does not take)")
    for b in derived.bools:
        if b in sizes:  # a Coq boolean passed as an int: 0 or 1
            pre.append(Condition("", f"{b} is a boolean (0 or 1)",
                                 (Comparison(IConst(0), "<=", IVar(b)),
                                  Comparison(IVar(b), "<=", IConst(1)))))
    for hname, text in derived.hypotheses.other:
        assumed.append(f"{hname} : {text}")
    return tuple(pre), tuple(assumed)
