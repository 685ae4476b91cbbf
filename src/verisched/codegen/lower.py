"""Lowering of normal-form ATL to C statements (paper Sec. 5.2 Fig. 3, Sec. 6 Fig. 6).

Syntax-directed, with left-hand index accumulation: the destination of the
term being lowered is a buffer plus a function from the term's own indices
to buffer indices (Fig. 3's `y[i] ⊖`).  GEN peels one index and emits a
for-loop, SUM switches the store to `+=`, a guard becomes `if`, a let a
buffer.  Reshape operators only rewrite the index function (Fig. 6):
concat lowers both operands into one buffer at offsets, transpose swaps
indices, flatten combines them, split divides them, pad/trunc shift them.

Two departures from the paper, both forced by our semantics (tensors are
total, zero outside their extent, Tensor/Core.v):
- Every destination also carries, per remaining dimension, a *window*
  `[lo, hi)` of indices that may be stored.  Loops are clipped to it, so
  trunc never writes past its extent and flatten/split never alias, which
  also makes every generation write disjoint storage (openmp.py relies on
  it).  Where a window cannot be expressed as loop bounds (under flatten or
  split) it becomes a condition on the store.
- Where the semantics says zero and no store happens (the else-branch of a
  tensor guard, pad regions, a generation shorter than its window, a sum
  accumulating into a tensor) the region is zero-filled explicitly; only the
  ragged tail of split falls back to zeroing the whole buffer once.  Each
  lowering reports whether it wrote its whole window, which decides that.

Out-of-bounds reads are zero in ATL; an access is emitted unchecked only
when the prover (prover.py) shows it in bounds from loop bounds and guards.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from verisched.codegen.errors import LowerError, NotNormalError
from verisched.codegen.inplace import allow_inplace
from verisched.codegen.normal import access_base, check_normal, rank_of, show, show_pred
from verisched.codegen.poly import Poly, binop, from_idx
from verisched.codegen.prover import Facts
from verisched.codegen.support import SupportAnalysis
from verisched.codegen.vector import RegBuf, VectorISA, VectorLowering
from verisched.pybridge.terms import (
    Concat,
    Expr,
    Flatten,
    Gen,
    Get,
    Guard,
    Idx,
    Instr,
    Let,
    Mem,
    PadL,
    PadR,
    PAnd,
    PBool,
    PCmp,
    Pred,
    SBin,
    Shape,
    Split,
    Sum,
    TAdd,
    Transpose,
    TruncL,
    TruncR,
    Var,
    Zero,
    free_vars,
    idx_free_vars,
)
from verisched.pybridge.terms import (
    pred_free_vars as pred_vars,
)

CTYPES = {"float32": "float", "int32": "int32_t"}
FALLBACK = "fallback"  # a loop's parallel mode: only if the enclosing parallel loop is not
FALLBACK_PRAGMA = "#pragma omp parallel for schedule(static) if(!omp_in_parallel())"
STACK_LIMIT_BYTES = 64 * 1024
# Unroll factor for a reduction accumulating into register vectors (codegen/vector.py).
REDUCTION_UNROLL = 4
C_RESERVED = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "typedef", "union", "unsigned", "void", "volatile", "while", "main", "free", "malloc",
    "calloc", "memset", "abort", "int32_t", "size_t",
}

# ---------------------------------------------------------------------------
# Emission helpers


class Emitter:
    """Indented C lines; sub-emitters let a lowering decide afterwards what goes first."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0

    def line(self, s: str) -> None:
        self.lines.append("  " * self.level + s)

    def extend(self, other: Emitter) -> None:
        for s in other.lines:
            self.lines.append("  " * self.level + s)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.line(header + " {" if header else "{")
        self.level += 1
        yield
        self.level -= 1
        self.line("}")


@dataclass
class Names:
    """Fresh C identifiers: ATL binders may shadow one another, C stores may not capture."""

    used: set[str] = field(default_factory=set)

    def fresh(self, base: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", base) or "v"
        if base[0].isdigit():
            base = "v" + base
        if base in C_RESERVED or keyword.iskeyword(base) or base.startswith("vs_"):
            base = base + "_"
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name


@dataclass(frozen=True)
class Buf:
    """A row-major buffer; `dims` are C-evaluable extents.  `support`: conditions
    `f >= 0` over `#0, #1, ...` (its indices) outside which it holds zeros
    (support.py), or () if unknown."""

    cname: str
    dims: tuple[Poly, ...]
    support: tuple[Poly, ...] = ()


@dataclass(frozen=True)
class ScalarVar:
    """A scalar in a C local (scalar let) or behind a pointer (scalar input)."""

    cexpr: str


Window = tuple[Poly, Poly]
IndexFn = Callable[[list[Poly]], tuple[list[Poly], list[Poly]]]


@dataclass(frozen=True)
class Dest:
    """Fig. 3's left-hand side: buffer, index accumulator, and one window per remaining
    dimension.  `fn` maps the term's indices to buffer indices plus store conditions
    (each `c >= 0`)."""

    buf: Buf | None
    lvalue: str
    fn: IndexFn
    windows: tuple[Window, ...]

    def remap(self, g: Callable[[list[Poly]], list[Poly]], windows: tuple[Window, ...],
              conds: Callable[[list[Poly]], list[Poly]] | None = None) -> Dest:
        outer = self.fn

        def fn(idx: list[Poly]) -> tuple[list[Poly], list[Poly]]:
            bi, cs = outer(g(idx))
            return bi, cs + (conds(idx) if conds else [])

        return replace(self, fn=fn, windows=windows)

    def peel(self, k: Poly) -> Dest:
        outer = self.fn
        return replace(self, fn=lambda idx: outer([k, *idx]), windows=self.windows[1:])


@dataclass
class Ctx:
    facts: Facts
    idx_names: dict[str, str]
    tensors: dict[str, Buf | ScalarVar | RegBuf]
    parallel_ok: bool = False
    in_parallel: bool = False
    in_sum: bool = False
    # Inside a parallel loop, no fallback loop yet on this path (openmp.py, rule 6).
    fallback_ok: bool = False
    # C names of unrolled loop variables and their value in this copy (vector.py).
    consts: dict[str, int] = field(default_factory=dict)

    def child(self, **kw: object) -> Ctx:
        c = replace(self, facts=self.facts.child(), idx_names=dict(self.idx_names),
                    tensors=dict(self.tensors), consts=dict(self.consts))
        for k, v in kw.items():
            setattr(c, k, v)
        return c


# ---------------------------------------------------------------------------
# Result


@dataclass
class LoweredKernel:
    """A lowered program: signature data for templates and the Python wrapper."""

    name: str
    dtype: str
    inputs: list[tuple[str, str, tuple[Poly, ...]]]  # (ATL name, C name, extents)
    sizes: list[tuple[str, str]]  # (ATL name, C name)
    out_dims: tuple[Poly, ...]
    out_cname: str
    out_extents_c: list[str]
    body: list[str]
    parallel_loops: int
    uses_openmp: bool
    # Facts `f >= 0` over the size parameters (C names) the code relies on; the
    # Python wrapper refuses sizes violating them.  (text, poly)
    assumptions: list[tuple[str, Poly]] = field(default_factory=list)
    # The vector target library the kernel was lowered for (None: scalar C); the
    # kernel needs its CPU features to run.
    isa: VectorISA | None = None
    uses_vectors: bool = False
    # Inputs (ATL names) the output may be passed as, computing in place (inplace.py).
    inplace: tuple[str, ...] = ()

    @property
    def ctype(self) -> str:
        return CTYPES[self.dtype]


# ---------------------------------------------------------------------------
# The lowering


class Lowerer(VectorLowering, SupportAnalysis):
    def __init__(self, dtype: str, parallel: bool, isa: VectorISA | None = None) -> None:
        if dtype not in CTYPES:
            raise LowerError(f"lowering: unsupported element type {dtype!r} (float32, int32)")
        self.dtype = dtype
        self.T = CTYPES[dtype]
        self.zero = "0.0f" if dtype == "float32" else "0"
        self.parallel = parallel
        self.names = Names()
        self.parallel_loops = 0
        self.fallback_loops = 0
        self.error_flag = ""
        # C names of the loops that come from generations (openmp.py, rules 1 and 5).
        self.gen_loops: set[str] = set()
        self.isa = isa
        # Set by lower(): the program uses instructions or register memories.
        self.vector_program = False
        if isa is not None and dtype != "float32":
            raise LowerError(f"lowering: target {isa.name} supports float32 only, not {dtype}")

    # -- index expressions --------------------------------------------------
    def ix(self, i: Idx, ctx: Ctx) -> Poly:
        missing = idx_free_vars(i) - set(ctx.idx_names)
        if missing:
            raise LowerError(f"lowering: index variable(s) {sorted(missing)} not in scope")
        p = from_idx(i, ctx.idx_names)
        if ctx.consts:
            for v in p.vars() & ctx.consts.keys():
                p = p.subst(v, Poly.const(ctx.consts[v]))
        return p

    def c(self, p: Poly, ctx: Ctx) -> str:
        """C text of an index polynomial, with C's `/` `%` where they agree with Z's."""
        parts: list[tuple[int, str]] = []
        for m, coeff in p.terms:
            if m == ():
                parts.append((coeff, ""))
                continue
            parts.append((coeff, "*".join(self._atom_c(a, ctx) for a in m)))
        if not parts:
            return "0"
        # Positive terms first, the constant last: `m*y + x - m - 1`, not `-m + m*y + x - 1`.
        parts.sort(key=lambda cb: (cb[1] == "", cb[0] < 0))
        out = ""
        for k, (coeff, body) in enumerate(parts):
            mag = abs(coeff)
            txt = str(mag) if not body else body if mag == 1 else f"{mag}*{body}"
            if k == 0:
                out = ("-" if coeff < 0 else "") + txt
            else:
                out += (" - " if coeff < 0 else " + ") + txt
        return out

    def _atom_c(self, a, ctx: Ctx) -> str:  # a: poly.Atom
        if a.op == "var":
            return a.name
        x, y = a.args
        xs, ys = self.c(x, ctx), self.c(y, ctx)
        if a.op in ("min", "max"):
            return f"vs_{a.op}({xs}, {ys})"
        cy = y.as_const()
        if cy is not None and cy > 0 and ctx.facts.ge0(x):
            return f"(({xs}) {a.op} {cy})"  # parenthesised: it may be a factor
        return f"vs_f{'div' if a.op == '/' else 'mod'}({xs}, {ys})"

    def smax(self, a: Poly, b: Poly, ctx: Ctx) -> Poly:
        if ctx.facts.le(b, a):
            return a
        if ctx.facts.le(a, b):
            return b
        return binop("max", a, b)

    def smin(self, a: Poly, b: Poly, ctx: Ctx) -> Poly:
        if ctx.facts.le(a, b):
            return a
        if ctx.facts.le(b, a):
            return b
        return binop("min", a, b)

    def inside(self, w: Window, extent: Poly, ctx: Ctx) -> bool:
        """Is window `w` provably within `[0, extent)`?"""
        return ctx.facts.ge0(w[0]) and ctx.facts.le(w[1], extent)

    # -- predicates ----------------------------------------------------------
    def pred(self, p: Pred, ctx: Ctx) -> tuple[str | None, list[Poly]]:
        """C condition (None when provably true, "0" when provably false) and its facts."""
        if isinstance(p, PBool):
            return (None, []) if p.value else ("0", [Poly.const(-1)])
        if isinstance(p, PAnd):
            a, fa = self.pred(p.left, ctx)
            b, fb = self.pred(p.right, ctx)
            if a == "0" or b == "0":
                return "0", [Poly.const(-1)]
            conds = [x for x in (a, b) if x is not None]
            return (" && ".join(conds) if conds else None), fa + fb
        assert isinstance(p, PCmp)
        L, R = self.ix(p.left, ctx), self.ix(p.right, ctx)
        if p.op == "<":
            facts = [R - L - 1]
        elif p.op == "<=":
            facts = [R - L]
        else:
            facts = [R - L, L - R]
        if all(ctx.facts.ge0(f) for f in facts):
            return None, facts
        if any(ctx.facts.ge0(-f - 1) for f in facts):
            return "0", [Poly.const(-1)]
        cond = self.ge_text(facts, ctx) if p.op != "=" else f"({self.c(L - R, ctx)}) == 0"
        return cond, facts

    def ge_text(self, facts: list[Poly], ctx: Ctx) -> str:
        """`f >= 0` for each f, printed as `lhs >= rhs` with the constant on the right."""
        out = []
        for f in facts:
            if ctx.facts.ge0(f):
                continue
            k = f.constant()
            out.append(f"{self.c(f - k, ctx)} >= {-k}")
        return " && ".join(out)

    # -- shapes --------------------------------------------------------------
    def shape(self, e: Expr, ctx: Ctx) -> tuple[Poly, ...] | None:
        """Extents of `e` in C names (terms.shape_of, over renamed variables)."""
        if isinstance(e, Var):
            t = ctx.tensors.get(e.name)
            return t.dims if isinstance(t, (Buf, RegBuf)) else ()
        if isinstance(e, Zero):
            return None
        if isinstance(e, Mem):
            return self.shape(e.body, ctx)
        if isinstance(e, Instr):
            from verisched.pybridge.instrs import instantiate

            return self.shape(instantiate(e), ctx)
        if isinstance(e, Gen):
            inner = self.shape(e.body, self._bind_dummy(e.var, ctx))
            if inner is None:
                return None
            return (self.ix(e.hi, ctx) - self.ix(e.lo, ctx), *inner)
        if isinstance(e, Sum):
            return self.shape(e.body, self._bind_dummy(e.var, ctx))
        if isinstance(e, Guard):
            return self.shape(e.body, ctx)
        if isinstance(e, Let):
            c2 = ctx.child()
            vs = self.shape(e.value, ctx)
            c2.tensors[e.var] = Buf("?", vs) if vs else ScalarVar("?")
            return self.shape(e.body, c2)
        if isinstance(e, Get):
            s = self.shape(e.tensor, ctx)
            return None if s is None else s[1:]
        if isinstance(e, TAdd):
            s = self.shape(e.left, ctx)
            r = self.shape(e.right, ctx)
            if s is None or r is None or len(s) != len(r):
                return s if s is not None else r
            # Extents may differ: the sum is the longer one, zero-padded (Core.v).
            return tuple(self.smax(a, b, ctx) for a, b in zip(s, r, strict=True))
        if isinstance(e, SBin):
            return ()
        if isinstance(e, Concat):
            s = self.shape(e.left, ctx) or self.shape(e.right, ctx)
            rest = s[1:] if s else None
            if rest is None:
                return None
            return (self.ix(e.n1, ctx) + self.ix(e.n2, ctx), *rest)
        s = self.shape(e.body, ctx)
        if s is None:
            return None
        if isinstance(e, Transpose):
            return (self.ix(e.m, ctx), self.ix(e.n, ctx), *s[2:])
        if isinstance(e, Flatten):
            return (self.ix(e.n, ctx) * self.ix(e.m, ctx), *s[2:])
        if isinstance(e, Split):
            k, n = self.ix(e.k, ctx), self.ix(e.n, ctx)
            return (binop("cdiv", n, k), k, *s[1:])
        if isinstance(e, (PadR, PadL)):
            return (self.ix(e.n, ctx) + self.ix(e.k, ctx), *s[1:])
        if isinstance(e, (TruncR, TruncL)):
            return (self.ix(e.k, ctx), *s[1:])
        raise LowerError(f"lowering: not an ATL term: {show(e)}")

    def _bind_dummy(self, var: str, ctx: Ctx) -> Ctx:
        c2 = ctx.child()
        c2.idx_names[var] = var
        return c2

    # -- loops ----------------------------------------------------------------
    @contextmanager
    def loop(self, atl_var: str, lo: Poly, hi: Poly, ctx: Ctx, out: Emitter,
             facts: list[Poly], parallel: bool | str = False) -> Iterator[tuple[Ctx, Poly]]:
        v = self.names.fresh(atl_var)
        child = ctx.child()
        child.idx_names[atl_var] = v
        child.facts.bind(v)
        pv = Poly.var(v)
        for f in [pv - lo, hi - 1 - pv, *facts]:
            child.facts.add(f.subst("@", pv))
        if parallel == FALLBACK:
            # Runs in parallel only when the enclosing parallel loop did not (rule 6).
            out.line(FALLBACK_PRAGMA)
            self.parallel_loops += 1
            self.fallback_loops += 1
            child.fallback_ok = False
        elif parallel:
            out.line("#pragma omp parallel for schedule(static)")
            self.parallel_loops += 1
            child.in_parallel = True
            child.fallback_ok = True
        with out.block(f"for (int {v} = {self.c(lo, ctx)}; {v} < {self.c(hi, ctx)}; ++{v})"):
            yield child, pv

    # -- stores ---------------------------------------------------------------
    def store(self, dest: Dest, mode: str, value: str, ctx: Ctx, out: Emitter) -> None:
        bi, conds = dest.fn([])
        if dest.buf is None:
            lhs = dest.lvalue
        elif isinstance(dest.buf, RegBuf):
            # One lane of a register vector (GCC's vector subscript).
            var = dest.buf.elem(bi[:-1], "store")
            if var is None:
                return
            lhs = f"{var}[{self.c(bi[-1], ctx)}]"
        else:
            lin = Poly.const(0)
            for i, d in zip(bi, dest.buf.dims, strict=False):
                lin = lin * d + i
            lhs = f"{dest.buf.cname}[{self.c(lin, ctx)}]"
        cond = self.ge_text(conds, ctx)
        stmt = f"{lhs} {mode} {value};"
        if cond:
            out.line(f"if ({cond}) {stmt}")
        else:
            out.line(stmt)

    def zero_fill(self, dest: Dest, ctx: Ctx, out: Emitter) -> None:
        """Write zeros over every index in `dest`'s windows (the semantics' zeros)."""
        for a, b in dest.windows:
            if ctx.facts.le(b, a):
                return
        self._zero_rec(dest, ctx, out)

    def _zero_rec(self, dest: Dest, ctx: Ctx, out: Emitter) -> None:
        if not dest.windows:
            self.store(dest, "=", self.zero, ctx, out)
            return
        a, b = dest.windows[0]
        if isinstance(dest.buf, RegBuf) and self.isa is not None:
            if len(dest.windows) == 1:
                lane = Poly.var("vs_lane")
                bi, conds = dest.fn([lane])
                if (bi[-1] == lane and not conds and ctx.facts.ge0(-a)
                        and ctx.facts.ge0(b - self.isa.lanes)):
                    var = dest.buf.elem(bi[:-1], "zero fill")
                    if var is not None:
                        out.line(f"{var} = {self.isa.setzero};")
                    return
            else:
                # Register dimensions: unrolled, so every register index is a constant.
                dim = len(dest.buf.dims) - len(dest.windows)
                bounds = (Poly.const(0), dest.buf.dims[dim])
                for c2, pv in self.iterate("z", a, b, ctx, out, [], False, True, bounds):
                    self._zero_rec(dest.peel(pv), c2, out)
                return
        with self.loop("z", a, b, ctx, out, []) as (c2, pv):
            self._zero_rec(dest.peel(pv), c2, out)

    # -- tensor-level lowering -------------------------------------------------
    def lower(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        """Emit code storing `e` into `dest`; True if every windowed index was written
        (by `=`), so the caller need not zero it."""
        if not dest.windows:
            return self.lower_store(e, dest, mode, ctx, out)
        if isinstance(e, Instr):
            return self.lower_instr(e, dest, mode, ctx, out)
        if isinstance(e, Mem):
            return self.lower(self.strip_mem(e), dest, mode, ctx, out)
        if isinstance(e, Gen):
            return self.lower_gen(e, dest, mode, ctx, out)
        if isinstance(e, Sum):
            sub = Emitter()
            lo, hi = self.ix(e.lo, ctx), self.ix(e.hi, ctx)
            hi, clip_facts = self.clipped_hi(e, hi, ctx)
            if mode == "=":
                self.zero_fill(dest, ctx, out)
            unroll = self.needs_unroll(e.var, e.body, None, ctx)
            if isinstance(dest.buf, RegBuf) and not unroll:
                # The micro-kernel's reduction: a few iterations per loop branch.
                sub.line(f"#pragma GCC unroll {REDUCTION_UNROLL}")
            for c2, _ in self.iterate(e.var, lo, hi, ctx, sub, clip_facts, False, unroll):
                c2.in_sum = True
                self.lower(e.body, dest, "+=", c2, sub)
            out.extend(sub)
            return True
        if isinstance(e, Guard):
            cond, facts = self.pred(e.pred, ctx)
            if cond is None:
                return self.lower(e.body, dest, mode, ctx, out)
            if cond == "0":
                if mode == "=":
                    self.zero_fill(dest, ctx, out)
                return True
            self._log_needs(facts, ctx)  # a loop may be split where the guard holds (vector.py)
            c2 = ctx.child()
            for f in facts:
                c2.facts.add(f)
            with out.block(f"if ({cond})"):
                cov = self.lower(e.body, dest, mode, c2, out)
            if mode == "=":
                with out.block("else"):
                    self.zero_fill(dest, ctx, out)
            return cov
        if isinstance(e, Let):
            return self.with_let(e, ctx, out, lambda c2, o: self.lower(e.body, dest, mode, c2, o))
        if isinstance(e, Zero):
            if mode == "=":
                self.zero_fill(dest, ctx, out)
            return True
        if isinstance(e, TAdd):
            return self.lower_tadd(e, dest, mode, ctx, out)
        if isinstance(e, (Var, Get, SBin)):
            raise NotNormalError(f"lowering: tensor-valued leaf: {show(e)}")
        return self.lower_reshape(e, dest, mode, ctx, out)

    def lower_tadd(self, e: TAdd, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        """Tensor `<+>` (Fig. 2's ⊕ at tensor rank): store the left operand, then
        accumulate the right one into the same destination (e.g. C's rows, then a
        sum of products into them).  If the left operand does not write its whole
        window, the window is zeroed first and both accumulate."""
        if mode == "+=":
            self.lower(e.left, dest, "+=", ctx, out)
            self.lower(e.right, dest, "+=", ctx, out)
            return True
        sub = Emitter()
        saved = (self.parallel_loops, set(self.gen_loops), self.fallback_loops)
        if self.lower(e.left, dest, "=", ctx, sub):
            out.extend(sub)
        else:
            self.parallel_loops, self.gen_loops, self.fallback_loops = saved
            self.zero_fill(dest, ctx, out)
            self.lower(e.left, dest, "+=", ctx, out)
        self.lower(e.right, dest, "+=", ctx, out)
        return True

    def strip_mem(self, e: Mem) -> Expr:
        """A memory marker away from a let's value: only DRAM (the default) means nothing
        to the lowering; a special memory must name a buffer (Exo thesis Sec. 3.2.1)."""
        if e.memory != "DRAM":
            raise LowerError(f"lowering: in_mem {e.memory} must wrap the value of a let (a "
                             f"buffer placed in that memory), found: {show(e)}")
        return e.body

    def lower_gen(self, e: Gen, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        vec = self.register_vector_copy(e, ctx)
        if vec is not None:
            return self.lower_instr(vec, dest, mode, ctx, out)
        lo, hi = self.ix(e.lo, ctx), self.ix(e.hi, ctx)
        extent = hi - lo
        a, b = dest.windows[0]
        start = self.smax(a, Poly.const(0), ctx)
        end = self.smin(b, extent, ctx)
        # A loop of at most one iteration is not worth a parallel region; the next
        # generation inside it may take the role (openmp.py, rule 2).
        tiny = ctx.facts.le(end - start, Poly.const(1))
        parallel: bool | str = (self.parallel and not ctx.in_parallel and not ctx.in_sum
                                and not tiny)
        facts = [Poly.var("@") - lo - a, lo + b - 1 - Poly.var("@")]
        unroll = self.needs_unroll(e.var, e.body, dest, ctx)
        parallel = parallel and not unroll
        if (self.parallel and ctx.in_parallel and ctx.in_sum and ctx.fallback_ok
                and not tiny and not unroll):
            parallel = FALLBACK
        ranges = [(lo + start, lo + end, [], parallel)]
        if not unroll:
            # Vector code: iterations whose lanes are all in bounds first, unmasked; the
            # ragged tail after them (codegen/vector.py, mask_split).
            split = self.mask_split(e, dest, mode, ctx, out, lo, lo + start, lo + end, facts)
            if split is not None:
                mid, extra = split
                ranges = [(lo + start, mid, extra, parallel), (mid, lo + end, [], False)]
        if parallel is True and len(ranges) == 2:
            cov = self.parallel_split(e, dest, mode, ctx, out, lo, ranges, facts)
            return self.gen_zero_edges(e, dest, mode, ctx, out, extent) and cov
        cov = True
        for rlo, rhi, extra, par in ranges:
            mark, inner = len(out.lines), self.fallback_loops
            for c2, pv in self.iterate(e.var, rlo, rhi, ctx, out, facts + extra, par, unroll,
                                       (lo, hi)):
                if not unroll:
                    self.gen_loops.add(c2.idx_names[e.var])
                if par is not True:
                    c2.fallback_ok = False  # the first generation on this path had its turn
                cov = self.lower(e.body, dest.peel(pv - lo), mode, c2, out) and cov
            if par is True:
                self.collapse_tiles(out, mark)
                self.only_if_several(out, mark, rhi - rlo, ctx, inner)
        return self.gen_zero_edges(e, dest, mode, ctx, out, extent) and cov

    def gen_zero_edges(self, e: Gen, dest: Dest, mode: str, ctx: Ctx, out: Emitter,
                       extent: Poly) -> bool:
        """Indices of the window outside the generation's extent are zero (Fig. 2)."""
        a, b = dest.windows[0]
        if mode == "=":
            if not ctx.facts.ge0(a):
                self.zero_fill(replace(dest, windows=((a, self.smin(b, Poly.const(0), ctx)),
                                                      *dest.windows[1:])), ctx, out)
            if not ctx.facts.le(b, extent):
                self.zero_fill(replace(dest, windows=((self.smax(a, extent, ctx), b),
                                                      *dest.windows[1:])), ctx, out)
        return True

    def parallel_split(self, e: Gen, dest: Dest, mode: str, ctx: Ctx, out: Emitter, lo: Poly,
                       ranges: list[tuple[Poly, Poly, list[Poly], bool]],
                       facts: list[Poly]) -> bool:
        """A parallel generation split into a mask-free main part and a ragged tail
        (vector.py, mask_split) stays one parallel loop, the two parts an `if` inside.

        Two loops would leave the tail serial: it is usually one iteration (the
        last, partial row block of a GEMM), so it would run on one thread after
        the parallel part, while the others wait; one loop gives it to the last
        thread like any other iteration (at M = 1024 in 96-row blocks, 10 full
        blocks and then a 64-row one that one thread ran while the other waited,
        about 6% of the 2-thread time)."""
        (first, mid, extra, _), (_, last, _, _) = ranges
        cov = True
        mark, inner = len(out.lines), self.fallback_loops
        with self.loop(e.var, first, last, ctx, out, facts, True) as (c2, pv):
            self.gen_loops.add(c2.idx_names[e.var])
            with out.block(f"if ({c2.idx_names[e.var]} < {self.c(mid, c2)})"):
                c3 = c2.child()
                for f in [mid - 1 - pv, *(x.subst("@", pv) for x in extra)]:
                    c3.facts.add(f)
                cov = self.lower(e.body, dest.peel(pv - lo), mode, c3, out) and cov
            with out.block("else"):
                c3 = c2.child()
                c3.facts.add(pv - mid)
                cov = self.lower(e.body, dest.peel(pv - lo), mode, c3, out) and cov
        self.only_if_several(out, mark, last - first, ctx, inner)
        return cov

    def only_if_several(self, out: Emitter, mark: int, trips: Poly, ctx: Ctx,
                        fallbacks_before: int) -> None:
        """A parallel loop with fallback loops inside runs its region only with at
        least two iterations; with one (a single row block of a wide GEMM), the
        fallbacks, say its column strips, take the threads instead (rule 6).

        Two copies of the loop, not an `if` clause: a region disabled by `if`
        still opens a (one-thread) team, so the fallbacks' regions would be
        nested, and libgomp starts fresh threads for every nested team (measured:
        a 2-thread 64x4096x512 SGEMM took 5x its best time at the median)."""
        if self.fallback_loops == fallbacks_before or "collapse(" in out.lines[mark]:
            return
        loop = out.lines[mark:]
        pad = loop[0][:len(loop[0]) - len(loop[0].lstrip())]
        # The parallel copy runs its fallbacks serially; the serial copy runs them as
        # (top-level) parallel loops.
        par = [x for x in loop if not x.rstrip().endswith(FALLBACK_PRAGMA)]
        ser = [x.replace(FALLBACK_PRAGMA, "#pragma omp parallel for schedule(static)")
               for x in loop[1:]]
        out.lines[mark:] = [f"{pad}if ({self.c(trips, ctx)} > 1) {{", *("  " + x for x in par),
                            f"{pad}}}", f"{pad}else {{", *("  " + x for x in ser), f"{pad}}}"]

    FOR_HEADER = re.compile(r"for \(int (\w+) = (.*); \1 < (.*); \+\+\1\) \{")

    def collapse_tiles(self, out: Emitter, mark: int) -> None:
        """Share a parallel loop's iterations with the generation loop it wraps.

        A parallel loop over rows of tiles has few iterations (31 for a 2000-row
        image in 64-row tiles, a single one for the partial last row of tiles), so a
        static split over the threads is uneven or leaves all but one thread idle.
        When its body is exactly one generation loop whose bounds do not mention
        the outer variable (a rectangular nest, as OpenMP requires) and whose own
        body contains loops (so every collapsed iteration is still a whole tile or
        row and the innermost loop stays intact for the vectoriser), the pragma
        gets `collapse(2)`.  Sound by openmp.py rule 5."""
        lines = out.lines
        pragma, header, body = lines[mark], lines[mark + 1], lines[mark + 2:-1]
        outer = self.FOR_HEADER.fullmatch(header.strip())
        if "#pragma omp parallel for" not in pragma or outer is None or len(body) < 3:
            return
        pad = header[:len(header) - len(header.lstrip())] + "  "
        inner = self.FOR_HEADER.fullmatch(body[0].strip())
        if (inner is None or not body[0].startswith(pad) or body[-1] != pad + "}"
                or inner.group(1) not in self.gen_loops
                or re.search(rf"\b{re.escape(outer.group(1))}\b", body[0])
                or any(not s.startswith(pad + " ") for s in body[1:-1])
                or not any(s.lstrip().startswith("for (") for s in body[1:-1])):
            return
        lines[mark] = pragma.rstrip() + " collapse(2)"

    def lower_reshape(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        zero = Poly.const(0)
        (a, b), rest = dest.windows[0], dest.windows[1:]
        if isinstance(e, Concat):
            n1, n2 = self.ix(e.n1, ctx), self.ix(e.n2, ctx)
            w1 = (self.smax(a, zero, ctx), self.smin(b, n1, ctx))
            w2 = (self.smax(a - n1, zero, ctx), self.smin(b - n1, n2, ctx))
            c1 = self.lower(e.left, dest.remap(lambda i: i, (w1, *rest)), mode, ctx, out)
            c2 = self.lower(e.right, dest.remap(lambda i: [i[0] + n1, *i[1:]], (w2, *rest)),
                            mode, ctx, out)
            return (c1 and c2 and ctx.facts.ge0(n1) and ctx.facts.ge0(n2)
                    and self.inside((a, b), n1 + n2, ctx))
        if isinstance(e, Transpose):
            n, m = self.ix(e.n, ctx), self.ix(e.m, ctx)
            (a1, b1), rest2 = rest[0], rest[1:]
            w0 = (self.smax(a, zero, ctx), self.smin(b, m, ctx))
            w1 = (self.smax(a1, zero, ctx), self.smin(b1, n, ctx))
            cov = self.lower(e.body, dest.remap(lambda i: [i[1], i[0], *i[2:]], (w1, w0, *rest2)),
                             mode, ctx, out)
            return cov and self.inside((a, b), m, ctx) and self.inside(rest[0], n, ctx)
        if isinstance(e, Flatten):
            n, m = self.ix(e.n, ctx), self.ix(e.m, ctx)
            full = ctx.facts.le(a, zero) and ctx.facts.le(n * m, b)

            def conds(i: list[Poly]) -> list[Poly]:
                flat = i[0] * m + i[1]
                return [] if full else [flat - a, b - 1 - flat]

            d2 = dest.remap(lambda i: [i[0] * m + i[1], *i[2:]], ((zero, n), (zero, m), *rest),
                            conds)
            cov = self.lower(e.body, d2, mode, ctx, out)
            return cov and ctx.facts.ge0(m - 1) and self.inside((a, b), n * m, ctx)
        if isinstance(e, Split):
            k, n = self.ix(e.k, ctx), self.ix(e.n, ctx)
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
            cov = self.lower(e.body, d2, mode, ctx, out)
            kc, nc = k.as_const(), n.as_const()
            exact = kc is not None and nc is not None and kc > 0 and nc >= 0 and nc % kc == 0
            return (cov and exact and self.inside((a, b), rows, ctx)
                    and self.inside(rest[0], k, ctx))
        if isinstance(e, (PadR, PadL)):
            k, n = self.ix(e.k, ctx), self.ix(e.n, ctx)
            shift = k if isinstance(e, PadL) else zero
            w = (self.smax(a - shift, zero, ctx), self.smin(b - shift, n, ctx))
            cov = self.lower(e.body, dest.remap(lambda i: [i[0] + shift, *i[1:]], (w, *rest)),
                             mode, ctx, out)
            if mode == "=":
                # The padding is zero (Fig. 5); write exactly that region.
                pads = [(zero, k)] if isinstance(e, PadL) else [(n, n + k)]
                for plo, phi in pads:
                    pw = (self.smax(a, plo, ctx), self.smin(b, phi, ctx))
                    self.zero_fill(replace(dest, windows=(pw, *rest)), ctx, out)
            return (cov and ctx.facts.ge0(n) and ctx.facts.ge0(k)
                    and self.inside((a, b), n + k, ctx))
        if isinstance(e, TruncR):
            k = self.ix(e.k, ctx)
            w = (self.smax(a, zero, ctx), self.smin(b, k, ctx))
            cov = self.lower(e.body, dest.remap(lambda i: i, (w, *rest)), mode, ctx, out)
            return cov and self.inside((a, b), k, ctx)
        if isinstance(e, TruncL):
            k, n = self.ix(e.k, ctx), self.ix(e.n, ctx)
            off = n - k
            w = (self.smax(a, zero, ctx) + off, self.smin(b, k, ctx) + off)
            cov = self.lower(e.body, dest.remap(lambda i: [i[0] - off, *i[1:]], (w, *rest)),
                             mode, ctx, out)
            return cov and self.inside((a, b), k, ctx)
        raise LowerError(f"lowering: unsupported term: {show(e)}")

    # -- lets -------------------------------------------------------------------
    def with_let(self, e: Let, ctx: Ctx, out: Emitter,
                 body: Callable[[Ctx, Emitter], bool]) -> bool:
        """Allocate `e.var`, fill it with `e.value`, run `body` in its scope, free it."""
        if isinstance(e.value, Mem):
            if e.value.memory != "DRAM":
                return self.reg_let(e, ctx, out, body)
            e = Let(e.var, e.value.body, e.body)
        dims = self.shape(e.value, ctx)
        if dims is None:
            raise NotNormalError(f"lowering: let {e.var} binds a bare zero: {show(e)}")
        name = self.names.fresh(e.var)
        if not dims:
            val = self.scalar(e.value, ctx, out)
            out.line(f"{self.T} {name} = {val};")
            c2 = ctx.child()
            c2.tensors[e.var] = ScalarVar(name)
            return body(c2, out)
        cdims = tuple(self.smax(d, Poly.const(0), ctx) for d in dims)
        buf = Buf(name, cdims, self.support_of(e.value, ctx) if self.vector_program else ())
        fill = Emitter()
        dest = Dest(buf, "", lambda i: (i, []), tuple((Poly.const(0), d) for d in cdims))
        covered = self.lower(e.value, dest, "=", ctx, fill)
        total = Poly.const(1)
        for d in cdims:
            total = total * d
        c2 = ctx.child()
        c2.tensors[e.var] = buf
        tc = total.as_const()
        with out.block(""):
            if tc is not None and tc * 4 <= STACK_LIMIT_BYTES:
                out.line(f"{self.T} {name}[{max(tc, 1)}];")
                if not covered:
                    out.line(f"memset({name}, 0, sizeof({name}));")
                out.extend(fill)
                res = body(c2, out)
            else:
                alloc = "calloc" if not covered else "malloc"
                count = f"(size_t)({self.c(total, ctx)})"
                args = f"{count} + 1, sizeof({self.T})" if alloc == "calloc" else \
                    f"({count} + 1) * sizeof({self.T})"
                out.line(f"{self.T} *{name} = ({self.T} *){alloc}({args});")
                with out.block(f"if ({name} == NULL)"):
                    out.line(f"{self.error_flag} = 1;")
                with out.block("else"):
                    out.extend(fill)
                    res = body(c2, out)
                    out.line(f"free({name});")
        return res

    # -- scalar level -------------------------------------------------------------
    def lower_store(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        if mode == "+=" and isinstance(e, Zero):
            return True
        if mode == "+=" and isinstance(e, Guard):
            cond, facts = self.pred(e.pred, ctx)
            if cond == "0":
                return True
            if cond is not None:
                c2 = ctx.child()
                for f in facts:
                    c2.facts.add(f)
                with out.block(f"if ({cond})"):
                    self.lower_store(e.body, dest, mode, c2, out)
                return True
        if isinstance(e, Let):
            return self.with_let(e, ctx, out,
                                 lambda c2, o: self.lower_store(e.body, dest, mode, c2, o))
        sub = Emitter()
        val = self.scalar(e, ctx, sub)
        out.extend(sub)
        self.store(dest, mode, val, ctx, out)
        return True

    def scalar(self, e: Expr, ctx: Ctx, out: Emitter) -> str:
        """C expression for scalar `e`; statements it needs (sums, lets) go to `out`."""
        if isinstance(e, Zero):
            return self.zero
        if isinstance(e, Var):
            t = ctx.tensors.get(e.name)
            if isinstance(t, ScalarVar):
                return t.cexpr
            raise NotNormalError(f"lowering: tensor-valued leaf: {show(e)}")
        if isinstance(e, Get):
            return self.access(e, ctx)
        if isinstance(e, (SBin, TAdd)):
            op = "+" if isinstance(e, TAdd) else e.op
            x = self.scalar(e.left, ctx, out)
            y = self.scalar(e.right, ctx, out)
            if op == "/":
                # Coq's division: Z.div for integers, and x / 0 = 0 for reals (Rinv 0 = 0).
                return f"vs_{'idiv' if self.dtype == 'int32' else 'sdiv'}({x}, {y})"
            if op == "max":  # smax (Rmax / Z.max)
                return f"vs_{'imax' if self.dtype == 'int32' else 'smax'}({x}, {y})"
            return f"({x} {op} {y})"
        if isinstance(e, Guard):
            cond, facts = self.pred(e.pred, ctx)
            if cond == "0":
                return self.zero
            if cond is not None:
                self._log_needs(facts, ctx)  # a loop may be split where it holds (vector.py)
            c2 = ctx.child()
            for f in facts:
                c2.facts.add(f)
            if cond is None:
                return self.scalar(e.body, c2, out)
            sub = Emitter()
            val = self.scalar(e.body, c2, sub)
            if not sub.lines:
                return f"(({cond}) ? {val} : {self.zero})"
            t = self.names.fresh("t")
            out.line(f"{self.T} {t} = {self.zero};")
            with out.block(f"if ({cond})"):
                out.extend(sub)
                out.line(f"{t} = {val};")
            return t
        if isinstance(e, Sum):
            acc = self.names.fresh("acc")
            out.line(f"{self.T} {acc} = {self.zero};")
            unroll = self.needs_unroll(e.var, e.body, None, ctx)
            hi, clip_facts = self.clipped_hi(e, self.ix(e.hi, ctx), ctx)
            for c2, _ in self.iterate(e.var, self.ix(e.lo, ctx), hi, ctx, out, clip_facts, False,
                                      unroll):
                c2.in_sum = True
                val = self.scalar(e.body, c2, out)
                out.line(f"{acc} += {val};")
            return acc
        if isinstance(e, Mem):
            return self.scalar(self.strip_mem(e), ctx, out)
        if isinstance(e, Let):
            t = self.names.fresh("t")
            out.line(f"{self.T} {t} = {self.zero};")

            def body(c2: Ctx, o: Emitter) -> bool:
                o.line(f"{t} = {self.scalar(e.body, c2, o)};")
                return True

            self.with_let(e, ctx, out, body)
            return t
        raise NotNormalError(f"lowering: tensor-valued term in scalar position: {show(e)}")

    def access(self, e: Get, ctx: Ctx) -> str:
        base, idxs = access_base(e)
        if not isinstance(base, Var):
            raise NotNormalError(f"lowering: access into a non-variable: {show(e)}")
        t = ctx.tensors.get(base.name)
        if isinstance(t, RegBuf) and len(t.dims) == len(idxs):
            return self.reg_access(e, t, idxs, ctx)
        if not isinstance(t, Buf) or len(t.dims) != len(idxs):
            raise NotNormalError(f"lowering: access of the wrong rank: {show(e)}")
        lin = Poly.const(0)
        checks: list[Poly] = []
        for i, d in zip(idxs, t.dims, strict=False):
            p = self.ix(i, ctx)
            checks += [p, d - 1 - p]
            lin = lin * d + p
        if any(ctx.facts.ge0(-f - 1) for f in checks):
            return self.zero  # provably out of bounds: zero (Fig. 2)
        ref = f"{t.cname}[{self.c(lin, ctx)}]"
        cond = self.ge_text(checks, ctx)
        # Out of bounds reads are zero (Fig. 2); C must not perform them.
        return f"(({cond}) ? {ref} : {self.zero})" if cond else ref


def lower(expr: Expr, env: dict[str, Shape], *, name: str = "kernel", dtype: str = "float32",
          parallel: bool = False, sizes: list[str] | None = None,
          assume: tuple[Pred, ...] | list[Pred] = (),
          isa: VectorISA | None = None) -> LoweredKernel:
    """Lower a normal-form ATL program to the body of a C kernel.

    `env` maps each input tensor to its shape (index expressions over size
    parameters); `sizes` fixes the order of size parameters in the signature
    (default: sorted).  `parallel` marks the OpenMP-safe loops (openmp.py).
    `assume` are predicates over the sizes the program is only meant for (a
    derivation's hypotheses such as `2 <= n`): the code may rely on them, and
    the compiled kernel refuses sizes that violate them.  `isa` is the vector
    target library (targets/avx2.py, avx512.py) instruction calls and register
    memories are lowered with (codegen/vector.py); without it they are refused.
    """
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name.startswith("vs_"):
        raise LowerError(f"lowering: kernel name {name!r} is not a usable C identifier")
    ranks = {k: len(v) for k, v in env.items()}
    out_rank = rank_of(expr, ranks)
    if out_rank is None:
        raise LowerError("lowering: cannot determine the output's rank: every stored leaf of "
                         f"the program is zero: {show(expr)}")
    check_normal(expr, ranks, out_rank)
    size_names: set[str] = set()
    for s in env.values():
        for i in s:
            size_names |= idx_free_vars(i)
    size_names |= free_vars(expr) - set(env)
    if sizes is None:
        sizes = sorted(size_names)
    elif set(sizes) != size_names:
        raise LowerError(f"lowering: size parameters {sorted(size_names)} differ from "
                         f"the given order {sizes}")
    lw = Lowerer(dtype, parallel, isa)
    lw.vector_program = _has_vector_code(expr)
    lw.names.used.add(name)
    lw.error_flag = f"{name}_error"
    facts = Facts(sizes=frozenset())
    ctx = Ctx(facts, {}, {}, parallel_ok=parallel)
    size_list = []
    for s in sizes:
        c = lw.names.fresh(s)
        ctx.idx_names[s] = c
        size_list.append((s, c))
    ctx.facts.sizes = frozenset(c for _, c in size_list)
    for _, c in size_list:
        ctx.facts.add(Poly.var(c) - 1)
    assumptions = add_assumptions(lw, ctx, assume, sizes, "lowering")
    inputs = []
    for k, shp in env.items():
        c = lw.names.fresh(k)
        dims = tuple(lw.ix(i, ctx) for i in shp)
        inputs.append((k, c, dims))
        ctx.tensors[k] = Buf(c, dims) if dims else ScalarVar(f"{c}[0]")
    out_name = lw.names.fresh("out")
    dims = lw.shape(expr, ctx) or ()
    for d in dims:
        if d.vars() - ctx.facts.sizes:
            raise LowerError(f"lowering: output extent {lw.c(d, ctx)} depends on a loop variable")
    cdims = tuple(lw.smax(d, Poly.const(0), ctx) for d in dims)
    buf = Buf(out_name, cdims)
    dest = Dest(buf, "", lambda i: (i, []), tuple((Poly.const(0), d) for d in cdims))
    body = Emitter()
    body.level = 1
    fill = Emitter()
    covered = lw.lower(expr, dest, "=", ctx, fill)
    body.line(f"{name}_error = 0;")
    if not covered:
        total = Poly.const(1)
        for d in cdims:
            total = total * d
        body.line(f"memset({out_name}, 0, (size_t)({lw.c(total, ctx)}) * sizeof({lw.T}));")
    body.extend(fill)
    inplace = allow_inplace(body.lines, out_name,
                            [(k, c) for k, c, d in inputs if d == cdims], lw.names.fresh)
    return LoweredKernel(name=name, dtype=dtype, inputs=inputs, sizes=size_list,
                         out_dims=cdims, out_cname=out_name, inplace=inplace,
                         out_extents_c=[lw.c(d, ctx) for d in cdims], body=body.lines,
                         parallel_loops=lw.parallel_loops, assumptions=assumptions,
                         uses_openmp=lw.parallel_loops > 0, isa=isa,
                         uses_vectors=_has_vector_code(expr))


def add_assumptions(lw: Lowerer, ctx: Ctx, assume: Iterable[Pred], sizes: Iterable[str],
                    who: str) -> list[tuple[str, Poly]]:
    """Add the hypotheses on sizes to the prover's facts (shared by every target's
    kernel prologue); returns them, shown and as polynomials, for the kernel's checks."""
    size_set = set(sizes)
    assumptions: list[tuple[str, Poly]] = []
    for p in assume:
        if pred_vars(p) - size_set:
            raise LowerError(f"{who}: assumption {show_pred(p)} mentions a non-size variable")
        _, facts = lw.pred(p, ctx)
        for f in facts:
            ctx.facts.add(f)
            assumptions.append((show_pred(p), f))
    return assumptions


def _has_vector_code(e: object) -> bool:
    if isinstance(e, Instr) or isinstance(e, Mem) and e.memory != "DRAM":
        return True
    fields_ = getattr(e, "__dataclass_fields__", None)
    if isinstance(e, tuple):
        return any(_has_vector_code(x) for x in e)
    return bool(fields_) and any(_has_vector_code(getattr(e, f)) for f in fields_)
