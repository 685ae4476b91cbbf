"""The `blas` target: C11 where the BLAS idioms of coq/Targets/Blas.v become CBLAS calls.

A program that `verisched search` found holds calls such as `blas_gemv m n A x`;
their meaning is the specification (targets/blas.py, checked against Coq), and
here each becomes the CBLAS routine that computes it on row-major buffers
(OpenBLAS: Debian's libopenblas-dev, installed by `make setup`).  The rest of
the program lowers as for `c`.

What is checked, and where: the call's meaning is Coq's (the derivation
replaced the subterm by the call by conversion); the accesses the call makes are
in bounds because `check_safe` proved those of its specification; this module
checks (untrusted, like all lowering) that each tensor argument is a buffer, or
a row of one, read with its own row stride, and that the destination is a
whole row-major block of the call's shape, and refuses the call otherwise.
CBLAS's `beta` implements the destination's mode: 0 to store, 1 to accumulate.
"""

from __future__ import annotations

from verisched.codegen.cexpr import ctext, flat_text, ix
from verisched.codegen.core import Lowering
from verisched.codegen.errors import LowerError
from verisched.codegen.hooks import LetBody
from verisched.codegen.ir import Buf, Ctx, Dest, Emitter
from verisched.codegen.normal import access_base, show
from verisched.codegen.poly import Poly
from verisched.pybridge.instrs import InstrError, instantiate, spec_of
from verisched.pybridge.terms import Expr, Idx, Instr, Let, Var
from verisched.targets import blas  # noqa: F401 - registers the specifications
from verisched.targets.native import NativeTarget

PREFIX = {"float32": "s", "float64": "d"}


class CblasRules:
    """The core's hooks (codegen/hooks.py) for the blas family."""

    def __init__(self, core: Lowering) -> None:
        self.core = core

    def meaning(self, e: Instr) -> Expr:
        try:
            return instantiate(e)
        except InstrError as exc:
            raise LowerError(f"blas: {exc}") from exc

    # -- arguments ---------------------------------------------------------------------

    def _ix(self, i: object, ctx: Ctx) -> str:
        return ctext(ix(i, ctx), ctx)  # type: ignore[arg-type]

    def _tensor(self, e: Expr, rank: int, ctx: Ctx) -> tuple[str, str]:
        """Pointer to the first element of tensor argument `e` (a buffer, or an access
        into one leaving `rank` dimensions), and its row stride."""
        base, idxs = access_base(e)
        t = ctx.tensors.get(base.name) if isinstance(base, Var) else None
        if not isinstance(t, Buf) or len(t.dims) - len(idxs) != rank:
            raise LowerError(f"blas: argument {show(e)} is not a rank-{rank} buffer or "
                             "an access into one")
        polys = [ix(i, ctx) for i in idxs] + [Poly.const(0)] * rank
        return f"{t.cname} + {flat_text(polys, t.dims, ctx)}", ctext(t.dims[-1], ctx)

    def _dest(self, dest: Dest, extents: list[Poly], ctx: Ctx) -> tuple[str, str]:
        """Pointer and row stride of `dest`, which must be a whole row-major block of
        `extents` (no window cut, no condition)."""
        buf = dest.buf
        k = len(extents)
        probe = [Poly.var(f"#blas{d}") for d in range(k)]
        if not isinstance(buf, Buf) or len(dest.windows) != k:
            raise LowerError("blas: a call stored into something else than a buffer block")
        idx, conds = dest.fn(probe)
        probe_vars = frozenset().union(*(q.vars() for q in probe))
        # the block starts at a fixed offset: idx = prefix + (offset_d + probe_d)
        offsets = [i - q for i, q in zip(idx[len(idx) - k:], probe, strict=True)]
        prefix = list(idx[:len(idx) - k])
        if conds or len(idx) < k or any(p.vars() & probe_vars for p in prefix + offsets):
            raise LowerError("blas: a call stored through an index map CBLAS cannot follow")
        for (lo, hi), n in zip(dest.windows, extents, strict=True):
            if lo != Poly.const(0) or hi != n:
                raise LowerError("blas: a call stored into part of its result (a window)")
        return (f"{buf.cname} + {flat_text(prefix + offsets, buf.dims, ctx)}",
                ctext(buf.dims[-1], ctx))

    # -- the hooks --------------------------------------------------------------------

    def lower_term(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter
                   ) -> bool | None:
        if not isinstance(e, Instr):
            return None
        spec = spec_of(e.name)
        if spec.family != "blas":
            raise LowerError(f"blas: instruction {e.name} is not a BLAS idiom")
        p = PREFIX.get(self.core.dtype)
        if p is None:
            raise LowerError(f"blas: element type {self.core.dtype} has no CBLAS routines")
        op = e.name.removeprefix("blas_")
        if op == "dot":
            return None   # a scalar: the core stores it through scalar_term
        a = e.args
        beta = "0" if mode == "=" else "1"
        scaled = op.endswith("_scaled")
        op = op.removesuffix("_scaled")
        if op in ("gemv", "gemvT"):
            m, n = ix(a[0], ctx), ix(a[1], ctx)  # type: ignore[arg-type]
            alpha = self.core.scalar(a[2], ctx, out) if scaled else "1"  # type: ignore[arg-type]
            mat, vec = (a[3], a[4]) if scaled else (a[2], a[3])
            A, lda = self._tensor(mat, 2, ctx)  # type: ignore[arg-type]
            x, _ = self._tensor(vec, 1, ctx)  # type: ignore[arg-type]
            y, _ = self._dest(dest, [m if op == "gemv" else n], ctx)
            trans = "CblasNoTrans" if op == "gemv" else "CblasTrans"
            out.line(f"cblas_{p}gemv(CblasRowMajor, {trans}, {ctext(m, ctx)}, {ctext(n, ctx)}, "
                     f"{alpha}, {A}, {lda}, {x}, 1, {beta}, {y}, 1);")
            return True
        if op == "gemm":
            m, n, k = (ix(a[0], ctx), ix(a[1], ctx), ix(a[2], ctx))  # type: ignore[arg-type]
            alpha = self.core.scalar(a[3], ctx, out) if scaled else "1"  # type: ignore[arg-type]
            ma, mb = (a[4], a[5]) if scaled else (a[3], a[4])
            A, lda = self._tensor(ma, 2, ctx)  # type: ignore[arg-type]
            B, ldb = self._tensor(mb, 2, ctx)  # type: ignore[arg-type]
            C, ldc = self._dest(dest, [m, n], ctx)
            out.line(f"cblas_{p}gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, "
                     f"{ctext(m, ctx)}, {ctext(n, ctx)}, {ctext(k, ctx)}, {alpha}, {A}, {lda}, "
                     f"{B}, {ldb}, {beta}, {C}, {ldc});")
            return True
        if op == "axpy":
            n = ix(a[0], ctx)  # type: ignore[arg-type]
            alpha = self.core.scalar(a[1], ctx, out)  # type: ignore[arg-type]
            x, _ = self._tensor(a[2], 1, ctx)  # type: ignore[arg-type]
            y, _ = self._tensor(a[3], 1, ctx)  # type: ignore[arg-type]
            d, _ = self._dest(dest, [n], ctx)
            nc = ctext(n, ctx)
            if mode == "=":
                out.line(f"cblas_{p}copy({nc}, {y}, 1, {d}, 1);")
            else:
                out.line(f"cblas_{p}axpy({nc}, 1, {y}, 1, {d}, 1);")
            out.line(f"cblas_{p}axpy({nc}, {alpha}, {x}, 1, {d}, 1);")
            return True
        if op == "fill":
            # CBLAS has no fill: a plain loop (LIAR's memset)
            n = ix(a[0], ctx)  # type: ignore[arg-type]
            value = self.core.scalar(a[1], ctx, out)  # type: ignore[arg-type]
            d, _ = self._dest(dest, [n], ctx)
            with out.block(f"for (int64_t vs_f = 0; vs_f < {ctext(n, ctx)}; ++vs_f)"):
                out.line(f"({d})[vs_f] {'=' if mode == '=' else '+='} {value};")
            return True
        raise LowerError(f"blas: {e.name} has no CBLAS lowering yet")

    def scalar_term(self, e: Expr, ctx: Ctx, out: Emitter) -> str | None:
        if not (isinstance(e, Instr) and e.name == "blas_dot"):
            return None
        p = PREFIX.get(self.core.dtype, "s")
        n: Idx = e.args[0]  # type: ignore[assignment]
        fills = [a for a in e.args[1:] if isinstance(a, Instr) and a.name == "blas_fill"]
        if not fills:
            x, _ = self._tensor(e.args[1], 1, ctx)  # type: ignore[arg-type]
            y, _ = self._tensor(e.args[2], 1, ctx)  # type: ignore[arg-type]
            return f"cblas_{p}dot({self._ix(n, ctx)}, {x}, 1, {y}, 1)"
        # A filled operand (vsum's vector of ones, LIAR's `double ones[N] = {1, ...};
        # ddot(N, xs, 1, ones, 1)`): the fill is written into a buffer of its own first.
        if len(fills) == 2:
            raise LowerError("blas: a dot of two filled vectors")
        fill = fills[0]
        other = e.args[2] if e.args[1] is fill else e.args[1]
        x, _ = self._tensor(other, 1, ctx)  # type: ignore[arg-type]
        count = self._ix(fill.args[0], ctx)
        value = self.core.scalar(fill.args[1], ctx, out)  # type: ignore[arg-type]
        T = self.core.ctype
        buf, res = self.core.names.fresh("ones"), self.core.names.fresh("dot")
        out.line(f"{T} {res} = 0;")
        out.line(f"{T} *{buf} = ({T} *)vs_alloc({count}, sizeof({T}), 0);")
        with out.block(f"if ({buf} == NULL)"):
            out.line(f"{self.core.error_flag} = 1;")
        with out.block("else"):
            with out.block(f"for (int64_t vs_f = 0; vs_f < {count}; ++vs_f)"):
                out.line(f"{buf}[vs_f] = {value};")
            out.line(f"{res} = cblas_{p}dot({self._ix(n, ctx)}, {x}, 1, {buf}, 1);")
            out.line(f"vs_free({buf});")
        return res

    def let_in_memory(self, e: Let, ctx: Ctx, out: Emitter, body: LetBody) -> bool | None:
        return None

    def let_ctype(self, var: str) -> str | None:
        return None

    def zero_fill(self, dest: Dest, ctx: Ctx, out: Emitter) -> bool:
        return False


TARGET = NativeTarget(
    name="blas", summary="C11 with the BLAS idioms as CBLAS calls (OpenBLAS)",
    dtypes=("float32", "float64"), hooks=CblasRules, own_families=("blas",),
    extra_flags=("-include", "cblas.h"), libs=("-lopenblas",))
