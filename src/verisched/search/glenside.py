"""`--idioms gemmini`: a convolution becomes im2col and a Gemmini matmul (Glenside).

Glenside (the seed `glenside-access-patterns.txt`, Sec. 5.3, "Flexible Mapping:
Discovering im2col", Fig. 4 and 5) rewrites a 2-D convolution, by equality
saturation, into an im2col access pattern (the windows of the image flattened
into a matrix, `(N 1 H' W') x (C Kh Kw)`) followed by a matrix multiply that its
systolic array runs: an exploratory rewrite flattens every access pattern and
reshapes it back, two rewrites bubble the reshapes out, and the systolic-array
rewrite fires on the flat product.  Here the same search ends on our Gemmini
matmul specification, the hardware loop `gemmini_loop_ws sm se act A B M N K`
(coq/Targets/GemminiLoop.v), each step a lemma Coq checks (flatten3 and
merge_rows are Glenside's flatten-and-reshape, the reshape, `split`, ending
outside as Glenside's does; operand_let instantiates the windows in memory;
gemmini_matmul is its systolic-array rewrite):

- flatten3: `SUM s SUM r SUM c f` -> `SUM [j < KH * (KW * C)] f(j / (KW C),
  (j / C) mod KW, j mod C)` (`rw sum_flatten3`, Rewrites/Gen.v): one reduction
  index, the matrix's column;
- merge_rows (at the root): `GEN a GEN b g` -> `split m (n m) (GEN [t < n m]
  g(t / m, t mod m))` (`rw gen_split2`, Examples/GemminiConv.v): the output
  pixels become the matrix's rows (the last output loop, the channels, stays);
- operand_let (at the root), Glenside's im2col: in `GEN m GEN k acc_out(SUM j
  a * b)`, the read `a` of the image (indices in m and j only) is bound as the
  gathered matrix `col[m][j]`, guarded by its bounds (`get4_bound_guard`, which
  hands check_safe the bounds of the div/mod indices), and lifted out of the
  loops (`name_buffer`, `let_sum_lift0`, `ll_acc_out`, `ll_gen`,
  `let_gen_lift0`, `ll_split`); the weights `b` (indices in j and k) likewise
  as `wm[j][k]`, through a transpose (`transpose_gen`, `let_transpose_out`,
  `get_get_transpose`), as GemminiConv.v does;
- bias_let (at the root): a bias `v[k]` added before the sum becomes the matrix
  `dm[m][k]` (`name_buffer`, `ll_acc_out`, `let_gen_lift0`, `ll_split`);
- gemmini_matmul (the idiom, also egglog rewrites): `GEN [i < M] GEN [j < N]
  gemmini_acc_out sm se act (SUM [k < K] A[i][k] * B[k][j])` -> `gemmini_loop_ws
  sm se act A B M N K` (`rw qmatmul_nobias_is_loop_ws`, Examples/GemminiMatmul.v:
  the layer equals the loop instruction, proved from its per-tile derivation); with
  `D[i][j] <+>` before the sum, `gemmini_loop_ws_bias` (`rw qmatmul_fold`,
  `rw qmatmul_loop_ws`).

The first three substitute index expressions into a body, which egglog's
rewrites cannot do (the encoding's index terms are opaque), so they are
applied by Python to the programs of the root e-class before saturation
(`closure`), each result unioned with the root; the idiom and the structural
rules then saturate as for the other families.  The certificate's path search
(certify.py) uses the same Python rewrites and their Coq steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from egglog import String, rewrite, vars_

from verisched.pybridge import terms as A
from verisched.pybridge.coqterm import idx_to_coq
from verisched.schedule import Schedule
from verisched.schedule.dsl import Program

from .egraph import Ix, T, free_of, ix_free_of
from .rules import LemmaUse, Pattern, Rule
from .sites import positions, replace_at, site_pattern

ACC_OUT = "gemmini_acc_out"
LOOP_WS = "gemmini_loop_ws"
LOOP_WS_BIAS = "gemmini_loop_ws_bias"
LOOPS = (LOOP_WS, LOOP_WS_BIAS)
ZERO = A.IConst(0)
# the Coq modules whose lemmas the certificate uses (beyond ATL)
REQUIRES = ("Examples.GemminiMatmul", "Examples.GemminiConv")


def _names_in(e: A.Expr) -> set[str]:
    return set(A.free_vars(e)) | {b for x in A.walk(e) if (b := A.binder(x)) is not None}


def _ibin(op: str, a: A.Idx, b: A.Idx) -> A.Idx:
    return A.IBin(op, a, b)


# -- flatten3: SUM s SUM r SUM c f = SUM j f(j / (m l), (j / l) mod m, j mod l) -------------

Assume = tuple[A.Pred, ...]


def positive(i: A.Idx, assume: Assume) -> bool:
    """`0 < i` follows syntactically from the program's size hypotheses (a constant, a
    size stated positive, `X - Y + 1` with `Y <= X` stated, a product of such): the side
    condition of sum_flatten3 and gen_split2, checked before a rule fires so that the
    search offers Coq no rewrite it must refuse (Coq still decides)."""
    if isinstance(i, A.IConst):
        return i.value > 0
    if A.PCmp("<", ZERO, i) in assume:
        return True
    if isinstance(i, A.IBin) and i.op == "*":
        return positive(i.left, assume) and positive(i.right, assume)
    if (isinstance(i, A.IBin) and i.op == "+" and i.right == A.IConst(1)
            and isinstance(i.left, A.IBin) and i.left.op == "-"):
        return A.PCmp("<=", i.left.right, i.left.left) in assume
    return False


def _flatten3(e: A.Expr, assume: Assume) -> A.Expr | None:
    if not (isinstance(e, A.Sum) and isinstance(e.body, A.Sum)
            and isinstance(e.body.body, A.Sum)):
        return None
    s, r, c = e, e.body, e.body.body
    if any(x.lo != ZERO for x in (s, r, c)) or not (positive(r.hi, assume)
                                                     and positive(c.hi, assume)):
        return None
    if (A.idx_free_vars(r.hi) | A.idx_free_vars(c.hi)) & {s.var, r.var, c.var}:
        return None
    j = A.fresh_name("j", _names_in(e))
    jv, ml = A.IVar(j), _ibin("*", r.hi, c.hi)
    body = A.subst(c.body, None, {s.var: _ibin("/", jv, ml),
                                  r.var: _ibin("%", _ibin("/", jv, c.hi), r.hi),
                                  c.var: _ibin("%", jv, c.hi)})
    return A.Sum(j, ZERO, _ibin("*", s.hi, ml), body)  # type: ignore[arg-type]


def _flatten3_steps(pat: Pattern, e: A.Expr) -> list[str]:
    return [f"rw sum_flatten3 at ({pat(e)})."]


def flatten3_rule(assume: Assume) -> Rule:
    """flatten3 for a program with size hypotheses `assume`."""
    return Rule("flatten3", "three nested reductions from 0 are one, over a flattened index",
                (LemmaUse("sum_flatten3", True, "sumr"),), (),
                lambda e: _flatten3(e, assume), _flatten3_steps)


FLATTEN3 = flatten3_rule(())


# -- root rules: the program's shape `tlet ... in split ... (GEN m GEN k acc_out(..))` -------

RootRule = tuple[str, Callable[[A.Expr], tuple[A.Expr, list[str]] | None]]


def _peel(e: A.Expr) -> tuple[list[A.Let], list[A.Split], A.Expr]:
    """The lets and then the splits around the program's loops."""
    lets: list[A.Let] = []
    while isinstance(e, A.Let):
        lets.append(e)
        e = e.body
    splits: list[A.Split] = []
    while isinstance(e, A.Split):
        splits.append(e)
        e = e.body
    return lets, splits, e


def _wrap(lets: list[A.Let], splits: list[A.Split], core: A.Expr,
          extra: tuple[str, A.Expr] | None = None) -> A.Expr:
    """`core` under `splits`, then the new let `extra` (name, value), then `lets`: where
    Coq's lifts leave a buffer (out of the splits, inside the lets already there)."""
    out = core
    for sp in reversed(splits):
        out = A.Split(sp.k, sp.n, out)
    if extra is not None:
        out = A.Let(extra[0], extra[1], out)
    for lt in reversed(lets):
        out = A.Let(lt.var, lt.value, out)
    return out


def merge_rows(e: A.Expr, assume: Assume = ()) -> tuple[A.Expr, list[str]] | None:
    """The two outermost output loops as one (gen_split2), when a third loop follows
    (the last output loop, the matrix's columns, is never merged) and the inner extent
    is positive by the hypotheses."""
    lets, splits, core = _peel(e)
    if lets or not (isinstance(core, A.Gen) and isinstance(core.body, A.Gen)
                    and isinstance(core.body.body, A.Gen)):
        return None
    a, b = core, core.body
    if a.lo != ZERO or b.lo != ZERO or a.var in A.idx_free_vars(b.hi) or not positive(
            b.hi, assume):
        return None
    t = A.fresh_name("t", _names_in(e))
    tv = A.IVar(t)
    body = A.subst(b.body, None, {a.var: _ibin("/", tv, b.hi), b.var: _ibin("%", tv, b.hi)})
    nm = _ibin("*", a.hi, b.hi)
    merged = A.Split(b.hi, nm, A.Gen(t, ZERO, nm, body))  # type: ignore[arg-type]
    return _wrap([], splits, merged), [f"rw gen_split2 at ({site_pattern(core, frozenset())})."]


@dataclass(frozen=True)
class Layer:
    """`GEN [m < M] GEN [k < N] acc_out(sm, se, act, (bias <+>) SUM [j < K] a * b)`, loops
    from 0: the quantized layer (`bias` None: GemminiMatmul.v's qmatmul_nobias)."""

    g1: A.Gen
    g2: A.Gen
    call: A.Instr
    bias: A.Expr | None
    s: A.Sum
    prod: A.SBin

    def rebuilt(self, prod: A.SBin | None = None, bias: A.Expr | None = None) -> A.Expr:
        """The layer with another product or bias."""
        acc: A.Expr = A.Sum(self.s.var, ZERO, self.s.hi, prod or self.prod)
        b = bias or self.bias
        if b is not None:
            acc = A.TAdd(b, acc)
        return A.Gen(self.g1.var, ZERO, self.g1.hi, A.Gen(self.g2.var, ZERO, self.g2.hi,
                                                           A.Instr(ACC_OUT, self.call.args[:3]
                                                                   + (acc,))))


def _layer(core: A.Expr) -> Layer | None:
    if not (isinstance(core, A.Gen) and isinstance(core.body, A.Gen)):
        return None
    g1, g2 = core, core.body
    call = g2.body
    if not (isinstance(call, A.Instr) and call.name == ACC_OUT):
        return None
    acc, bias = call.args[3], None
    if isinstance(acc, A.TAdd):
        acc, bias = acc.right, acc.left
    if not (isinstance(acc, A.Sum) and isinstance(acc.body, A.SBin) and acc.body.op == "*"):
        return None
    if any(x.lo != ZERO for x in (g1, g2, acc)):
        return None
    return Layer(g1, g2, call, bias, acc, acc.body)


def _read(e: A.Expr) -> tuple[str, list[A.Idx]] | None:
    """`x _[i1] ... _[in]` for a variable x: (x, indices)."""
    ix: list[A.Idx] = []
    while isinstance(e, A.Get):
        ix.append(e.index)
        e = e.tensor
    return (e.name, ix[::-1]) if isinstance(e, A.Var) else None


def _bounds_guard(ix: list[A.Idx], dims: tuple[A.Idx, ...]) -> A.Pred:
    """`get4_bound_guard`'s guard: ((0 <=? i1) && (i1 <? n1)) && ... (left-nested)."""
    parts = [A.PAnd(A.PCmp("<=", ZERO, i), A.PCmp("<", i, n)) for i, n in zip(ix, dims,
                                                                            strict=True)]
    out: A.Pred = parts[0]
    for p in parts[1:]:
        out = A.PAnd(out, p)
    return out


def operand_let(shapes: dict[str, tuple[A.Idx, ...]]) -> RootRule:
    """Glenside's im2col: an operand read of a 4-D input bound as a matrix buffer."""

    def apply(e: A.Expr) -> tuple[A.Expr, list[str]] | None:
        lets, splits, core = _peel(e)
        ly = _layer(core)
        if ly is None:
            return None
        g1, g2, s, prod = ly.g1, ly.g2, ly.s, ly.prod
        names = _names_in(e)
        for first, op in ((True, prod.left), (False, prod.right)):
            rd = _read(op)
            if rd is None or rd[0] not in shapes or len(rd[1]) != 4 or rd[0] in {
                    lt.var for lt in lets}:
                continue
            used = set().union(*(A.idx_free_vars(i) for i in rd[1]))
            # the role is read off the indices, not the operand's side: the image's read
            # (in m, j) is the matrix A, the weights' (in j, k) the matrix B
            if (g1.var in used) == (g2.var in used):
                continue
            left = g1.var in used
            rows, cols = (g1, s) if left else (s, g2)   # the buffer's two loops
            buf = A.fresh_name("col" if left else "wm", names)
            value = A.Gen(rows.var, ZERO, rows.hi, A.Gen(cols.var, ZERO, cols.hi, A.Guard(
                _bounds_guard(rd[1], shapes[rd[0]]), op)))
            use = A.Get(A.Get(A.Var(buf), A.IVar(rows.var)), A.IVar(cols.var))
            new_prod = A.SBin("*", use, prod.right) if first else A.SBin("*", prod.left, use)
            new = _wrap(lets, splits, ly.rebuilt(prod=new_prod), (buf, value))
            holes = " ".join(["_[ _ ]"] * 4)
            steps = [f"rw get4_bound_guard at ({rd[0]} {holes}).",
                     f"name_buffer (|[ _ ]| {rd[0]} {holes}) as {buf}.", "rw let_sum_lift0."]
            steps += ["rw ll_tadd_r."] if ly.bias is not None else []   # out of the <+>
            steps += ["rw ll_acc_out."]
            steps += ["rw ll_gen.", "rw let_gen_lift0."] if left else [
                "rw let_gen_lift0.", "rw ll_gen."]
            steps += ["rw ll_split."] * len(splits)
            if not left:   # lifted as [k][j]: transposed back to the [j][k] matrix
                steps += [f"rw <- transpose_gen at (genr 0 {idx_to_coq(g2.hi)} _).",
                          "rw let_transpose_out.", "rw get_get_transpose."]
            return new, steps
        return None

    return ("operand_let", apply)


def bias_let(e: A.Expr) -> tuple[A.Expr, list[str]] | None:
    """The bias `v[k]` of the layer, broadcast to a let-bound `M x N` matrix `dm[m][k]`
    (the accumulator's starting value, as GemminiConv.v's `dm`)."""
    lets, splits, core = _peel(e)
    ly = _layer(core)
    if ly is None or ly.bias is None:
        return None
    rd = _read(ly.bias)
    if rd is None or rd[1] != [A.IVar(ly.g2.var)] or rd[0] in {lt.var for lt in lets}:
        return None
    buf = A.fresh_name("dm", _names_in(e))
    value = A.Gen(ly.g1.var, ZERO, ly.g1.hi, A.Gen(ly.g2.var, ZERO, ly.g2.hi, ly.bias))
    use = A.Get(A.Get(A.Var(buf), A.IVar(ly.g1.var)), A.IVar(ly.g2.var))
    steps = [f"name_buffer ({rd[0]} _[ _ ]) as {buf}.", "rw ll_acc_out.",
             "rw let_gen_lift0.", "rw let_gen_lift0."] + ["rw ll_split."] * len(splits)
    return _wrap(lets, splits, ly.rebuilt(bias=use), (buf, value)), steps


OPERAND_LET = Rule(
    "operand_let", "an operand of the layer's product read from a 4-D input becomes a "
    "let-bound matrix, guarded by its bounds (im2col)",
    (LemmaUse("get4_bound_guard", True, "get"), LemmaUse("let_sum_lift0", True, "sumr"),
     LemmaUse("ll_tadd_r", True, "tadd"),
     LemmaUse("ll_acc_out", True, "gemmini_acc_out"), LemmaUse("ll_gen", True, "genr"),
     LemmaUse("let_gen_lift0", True, "genr"), LemmaUse("ll_split", True, "split"),
     LemmaUse("transpose_gen", False, "genr"),
     LemmaUse("let_transpose_out", True, "atl_let"),
     LemmaUse("get_get_transpose", True, "get")),
    ("name_buffer (_) as t",), lambda e: None, lambda pat, e: [])
BIAS_LET = Rule(
    "bias_let", "the layer's bias, a vector over the output channel, becomes a let-bound "
    "matrix", (LemmaUse("ll_acc_out", True, "gemmini_acc_out"),
               LemmaUse("let_gen_lift0", True, "genr"), LemmaUse("ll_split", True, "split")),
    ("name_buffer (_) as t",), lambda e: None, lambda pat, e: [])
MERGE_ROWS = Rule("merge_rows", "two nested generations are one, viewed back by split",
                  (LemmaUse("gen_split2", True, "genr"),), (), lambda e: None,
                  lambda pat, e: [])


# -- the idiom: the quantized matmul layer is the hardware loop ------------------------------

def _matmul_parts(e: A.Expr) -> tuple[A.Instr, bool] | None:
    """The call `e` is (gemmini_loop_ws, or gemmini_loop_ws_bias with a bias matrix
    `D[i][j]`), and whether its product is written `B[k][j] * A[i][k]`."""
    ly = _layer(e)
    if ly is None:
        return None
    g1, g2, s, prod = ly.g1, ly.g2, ly.s, ly.prod
    i, j, k = A.IVar(g1.var), A.IVar(g2.var), A.IVar(s.var)
    bound = {g1.var, g2.var, s.var}
    d: A.Expr | None = None
    if ly.bias is not None:
        rd = ly.bias
        if not (isinstance(rd, A.Get) and isinstance(rd.tensor, A.Get)
                and (rd.tensor.index, rd.index) == (i, j)):
            return None
        d = rd.tensor.tensor
        if A.free_vars(d) & bound:
            return None
    for swapped, (ra, rb) in ((False, (prod.left, prod.right)),
                              (True, (prod.right, prod.left))):
        if not (isinstance(ra, A.Get) and isinstance(ra.tensor, A.Get)
                and isinstance(rb, A.Get) and isinstance(rb.tensor, A.Get)):
            continue
        if (ra.tensor.index, ra.index, rb.tensor.index, rb.index) != (i, k, k, j):
            continue
        a, b = ra.tensor.tensor, rb.tensor.tensor
        if len(bound) < 3 or (A.free_vars(a) | A.free_vars(b)) & bound or (
                A.idx_free_vars(g2.hi) | A.idx_free_vars(s.hi)) & bound:
            continue
        sizes = (g1.hi, g2.hi, s.hi)
        if d is None:
            return A.Instr(LOOP_WS, ly.call.args[:3] + (a, b) + sizes), swapped
        return A.Instr(LOOP_WS_BIAS, ly.call.args[:3] + (a, b, d) + sizes), swapped
    return None


def _matmul_call(e: A.Expr) -> A.Expr | None:
    got = _matmul_parts(e)
    return got[0] if got is not None else None


def _matmul_steps(pat: Pattern, e: A.Expr) -> list[str]:
    got, ly = _matmul_parts(e), _layer(e)
    assert got is not None and ly is not None
    steps, node = [], e
    if got[1]:   # the lemma's product is A[i][k] * B[k][j]: swap the operands first
        node = ly.rebuilt(prod=A.SBin("*", ly.prod.right, ly.prod.left))
        inner = frozenset({ly.g1.var, ly.g2.var, ly.s.var})
        steps.append(f"rw smul_comm' at ({pat(ly.prod, inner)}).")
    if ly.bias is None:
        return steps + [f"rw qmatmul_nobias_is_loop_ws at ({pat(node)})."]
    # the layer with a bias is GemminiMatmul.v's qmatmul (folded), equal to the loop
    return steps + [f"rw qmatmul_fold at ({pat(node)}).", "rw qmatmul_loop_ws."]


GEMMINI_MATMUL = Rule(
    "gemmini_matmul", "the quantized matmul layer is the gemmini_loop_ws instruction, or "
    "gemmini_loop_ws_bias with a bias matrix (its product in either order)",
    (LemmaUse("qmatmul_nobias_is_loop_ws", True, "genr"), LemmaUse("smul_comm'", True, "smul"),
     LemmaUse("qmatmul_fold", True, "genr"), LemmaUse("qmatmul_loop_ws", True, "qmatmul")),
    (), _matmul_call, _matmul_steps)


def glenside_rules(assume: Assume) -> tuple[Rule, ...]:
    """The rules applied at every site, for a program with size hypotheses `assume`."""
    return (flatten3_rule(assume), GEMMINI_MATMUL)


# for the test that checks every lemma against Coq
ALL_GLENSIDE_RULES: tuple[Rule, ...] = (FLATTEN3, MERGE_ROWS, OPERAND_LET, BIAS_LET,
                                         GEMMINI_MATMUL)


def root_rules(shapes: dict[str, tuple[A.Idx, ...]], assume: Assume = ()) -> list[RootRule]:
    """The rules applied to the whole program (the inputs' extents for the guards)."""
    return [("merge_rows", lambda e: merge_rows(e, assume)), operand_let(shapes),
            ("bias_let", bias_let)]


def _rewrites(e: A.Expr, roots: list[RootRule], assume: Assume) -> Iterator[A.Expr]:
    for _, fn in roots:
        got = fn(e)
        if got is not None:
            yield got[0]
    for path, node, _ in positions(e):
        new = _flatten3(node, assume)
        if new is not None:
            yield replace_at(e, path, new)


def closure(program: A.Expr, shapes: dict[str, tuple[A.Idx, ...]], assume: Assume = (),
            limit: int = 200) -> list[A.Expr]:
    """The programs the substituting rules reach from `program` (breadth-first, at
    most `limit`), to be unioned with the root e-class."""
    roots = root_rules(shapes, assume)
    seen = {repr(program)}
    out, frontier = [], [program]
    while frontier and len(out) < limit:
        nxt = []
        for e in frontier:
            for new in _rewrites(e, roots, assume):
                if repr(new) not in seen and len(out) < limit:
                    seen.add(repr(new))
                    out.append(new)
                    nxt.append(new)
        frontier = nxt
    return out


def egglog_idioms() -> list[object]:
    """gemmini_matmul as egglog rewrites: the layer without and with a bias matrix."""
    i, j, k = vars_("gi gj gk", String)
    m, n, kk, sm, se, act = vars_("gM gN gK gsm gse gact", Ix)
    a, b, d = vars_("gA gB gD", T)
    zero = Ix.const(0)
    body = T.sum(k, zero, kk, T.sbin("*", T.get(T.get(a, Ix.var(i)), Ix.var(k)),
                                    T.get(T.get(b, Ix.var(k)), Ix.var(j))))
    conds = [i != j, i != k, j != k, ix_free_of(n, i), ix_free_of(kk, i), ix_free_of(kk, j)]
    conds += [free_of(t, v) for t in (a, b) for v in (i, j, k)]
    out = []
    for acc, name, mats in ((body, LOOP_WS, [a, b]), (T.tadd(T.get(T.get(d, Ix.var(i)),
                                                                    Ix.var(j)), body),
                                                       LOOP_WS_BIAS, [a, b, d])):
        args = T.cons(T.ixarg(sm), T.cons(T.ixarg(se), T.cons(T.ixarg(act),
                                                              T.cons(acc, T.nil()))))
        lhs = T.gen(i, zero, m, T.gen(j, zero, n, T.call(ACC_OUT, args)))
        call = T.nil()
        for x in reversed([T.ixarg(sm), T.ixarg(se), T.ixarg(act), *mats, T.ixarg(m),
                           T.ixarg(n), T.ixarg(kk)]):
            call = T.cons(x, call)
        extra = [free_of(d, v) for v in (i, j, k)] if name == LOOP_WS_BIAS else []
        out.append(rewrite(lhs).to(T.call(name, call), *conds, *extra))
    return out


def _call_names(e: A.Expr | None) -> set[str]:
    return {x.name for x in A.walk(e) if isinstance(x, A.Instr)} if e is not None else set()


def unrolled_text(program: Program, steps: list[list[str]] | list[tuple[str, ...]]) -> str:
    """The text of `NAME_gemmini.v`: the certificate's steps, then `rw gemmini_loop_ws_unroll` (the
    hardware loop is its per-tile program of single instructions, GemminiLoop.v, by
    definition), check_safe and done.  Why a second file: the gemmini target lowers a
    `gemmini_loop_ws` only as the whole program (it stores the kernel's whole M x N
    output), and the found convolution views the matrix as its 4-D output through two
    splits; the per-tile program lowers under them (as GemminiConv.v's does)."""
    s = Schedule.of(program)
    try:
        for sentences in steps:
            for c in sentences:
                s = s.apply(c)
        # the loop is its unrolling (gemmini_loop_ws_unroll; the bias form by unfolding
        # its definition, a conversion Coq checks)
        calls = _call_names(s.program)
        if LOOP_WS in calls:
            s = s.apply("rw gemmini_loop_ws_unroll.")
        if LOOP_WS_BIAS in calls:
            s = s.apply("unfold gemmini_loop_ws_bias.")
        return s.to_coq()
    finally:
        s.close()
