"""The rewrite rules of the search, each justified by a Coq lemma or directive.

A rule exists three times, kept together here so they cannot drift apart:
- as egglog rewrites (`egglog_rules`), which grow the e-graph;
- as a Python rewrite at the root of an AST (`Rule.apply`), which the
  certificate (certify.py) uses to find, from the original program, the
  sequence of rewrites that reaches the extracted one;
- as the Coq steps that perform that rewrite at one site (`Rule.coq_steps`),
  which Coq replays: egglog and the Python search are never trusted.

`Rule.lemmas` names the Coq lemmas each step rests on, with the direction the
rule uses them in (tests/test_search.py checks that each exists and that its
statement has the rule's left-hand side on the side the rule rewrites from).
A rule without a lemma or directive is not allowed.

Idiom rules (one per BLAS specification of coq/Targets/Blas.v) turn a subterm
that is the specification's body into the call; `use_instr` is their
justification (checked by conversion).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from egglog import String, rewrite, vars_

from verisched.pybridge import terms as A
from verisched.pybridge.instrs import INDEX, InstrSpec

from .egraph import Ix, T, free_of, is_root, ix_free_of

Pattern = Callable[..., str]


@dataclass(frozen=True)
class LemmaUse:
    """A Coq lemma a rule rests on: `forward` when the rule rewrites its left-hand side
    into its right-hand side; `lhs_head` is the head constant (after binders) of the
    side the rule rewrites from, which the test checks in the lemma's statement."""

    name: str
    forward: bool
    lhs_head: str


@dataclass(frozen=True)
class Rule:
    name: str
    doc: str
    lemmas: tuple[LemmaUse, ...]
    # the directives its Coq steps use, each as a sentence that parses (the test runs
    # `Fail PROBE.` on `True`: a parse error, an unknown directive, is not caught by Fail)
    directives: tuple[str, ...]
    apply: Callable[[A.Expr], A.Expr | None]
    # (site pattern of a node below the site, given the binders between, the node)
    # -> Coq sentences
    coq_steps: Callable[[Pattern, A.Expr], list[str]]


# -- gen_split: GEN i (a + b) = GEN i a <+> GEN i b -----------------------------------

def _gen_split(e: A.Expr) -> A.Expr | None:
    if isinstance(e, A.Gen) and (isinstance(e.body, A.TAdd)
                                 or isinstance(e.body, A.SBin) and e.body.op == "+"):
        left, right = e.body.left, e.body.right
        return A.TAdd(A.Gen(e.var, e.lo, e.hi, left), A.Gen(e.var, e.lo, e.hi, right))
    return None


def _gen_split_steps(pat: Pattern, e: A.Expr) -> list[str]:
    assert isinstance(e, A.Gen)
    steps = []
    body = e.body
    if isinstance(body, A.SBin):
        # the scalar + is the tensor <+> at rank 0 (sadd_tadd), then split_tadd
        steps.append(f"rw sadd_tadd at ({pat(body, frozenset({e.var}))}).")
        body = A.TAdd(body.left, body.right)
    steps.append(f"split_tadd at ({pat(A.Gen(e.var, e.lo, e.hi, body))}).")
    return steps


# -- swap_sum: GEN i SUM k f = SUM k GEN i f --------------------------------------------

def _swap_sum(e: A.Expr) -> A.Expr | None:
    if isinstance(e, A.Gen) and isinstance(e.body, A.Sum):
        s = e.body
        bound = A.idx_free_vars(s.lo) | A.idx_free_vars(s.hi)
        if e.var in bound or s.var == e.var:
            return None
        return A.Sum(s.var, s.lo, s.hi, A.Gen(e.var, e.lo, e.hi, s.body))
    return None


def _swap_sum_steps(pat: Pattern, e: A.Expr) -> list[str]:
    return [f"swap_sum at ({pat(e)})."]


# -- let_root: a reduction that only an inner loop's variable indexes becomes a buffer --------
#
#   GEN [j < n] SUM [i < m] X * (SUM [k < p] g)       (the inner SUM free of j)
#   = tlet t := GEN [i < m] SUM [k < p] g in GEN [j < n] SUM [i < m] X * t _[i]
#
# LIAR's let introduction; in Coq `name_buffer (the inner SUM) as t` then `compute_root
# t` (Tactics.v, Producers.v).  Only at the program's root, where compute_root puts the
# let (is_root in egglog, path () in the path search).

def temp_name(program: A.Expr) -> str:
    """The name of the buffer let_root introduces: fresh for the program."""
    names = set(A.free_vars(program))
    names |= {b for x in A.walk(program) if (b := A.binder(x)) is not None}
    return A.fresh_name("tmp", names)


def let_root(e: A.Expr, name: str) -> A.Expr | None:
    if not (isinstance(e, A.Gen) and isinstance(e.body, A.Sum)):
        return None
    s = e.body
    if not (isinstance(s.body, A.SBin) and s.body.op == "*" and isinstance(s.body.right, A.Sum)):
        return None
    inner = s.body.right
    if e.var in A.free_vars(inner) or e.var == s.var or e.var in (
            A.idx_free_vars(s.lo) | A.idx_free_vars(s.hi)):
        return None
    value = A.Gen(s.var, s.lo, s.hi, inner)
    body = A.Gen(e.var, e.lo, e.hi, A.Sum(s.var, s.lo, s.hi, A.SBin(
        "*", s.body.left, A.Get(A.Var(name), A.IVar(s.var)))))
    return A.Let(name, value, body)


def let_root_steps(pat: Pattern, e: A.Expr, name: str) -> list[str]:
    inner = e.body.body.right  # type: ignore[union-attr]
    bound = frozenset({e.var, e.body.var})  # type: ignore[union-attr]
    return [f"name_buffer ({pat(inner, bound)}) as {name}.", f"compute_root {name}."]


LET_ROOT = Rule("let_root", "a reduction indexed by an inner loop only becomes a buffer "
                "computed first (let introduction)", (),
                ("name_buffer (_) as t", "compute_root t"),
                lambda e: None, lambda pat, e: [])


# -- commutativity: a * b = b * a, a + b = b + a (scalars), a <+> b = b <+> a ------------

COMM_LEMMA = {"*": "smul_comm'", "+": "sadd_comm"}


def _swap(e: A.Expr) -> A.Expr | None:
    if isinstance(e, A.SBin) and e.op in COMM_LEMMA:
        return A.SBin(e.op, e.right, e.left)
    if isinstance(e, A.TAdd):
        return A.TAdd(e.right, e.left)
    return None


def _swap_steps(pat: Pattern, e: A.Expr) -> list[str]:
    lemma = COMM_LEMMA[e.op] if isinstance(e, A.SBin) else "tadd_comm_t"
    return [f"rw {lemma} at ({pat(e)})."]


# -- assoc: a + (b + c) = (a + b) + c (scalars), both ways --------------------------------
#
# With comm, a sum of k terms has an e-class for every subset of its terms and an e-node
# for every split of each: the classic explosion of associativity-commutativity, which
# the budgets (api.py) stop (tests/test_search_budget.py).

def _plus(e: A.Expr) -> bool:
    return isinstance(e, A.SBin) and e.op == "+"


def _assoc_rule(left: bool, outer: bool, inner: bool) -> Rule:
    """One orientation of associativity, modulo commutativity (the path search compares
    programs up to comm, so the operands a rule needs may be written the other way):
    `outer` swaps the node's operands first, `inner` those of the nested sum, each
    with a `rw sadd_comm` step; then `rw sadd_assoc` (left: `a + (b + c)` -> `(a + b) +
    c`) or `rw <- sadd_assoc` (right: `(a + b) + c` -> `a + (b + c)`)."""

    def parts(e: A.Expr) -> tuple[A.Expr, A.Expr, A.Expr, A.Expr] | None:
        """(the node after the outer swap, the nested sum after its swap, the two
        outer operands after both swaps as (outer operand, nested sum))."""
        if not _plus(e):
            return None
        e0 = A.SBin("+", e.right, e.left) if outer else e  # type: ignore[union-attr]
        nested = e0.right if left else e0.left  # type: ignore[union-attr]
        other = e0.left if left else e0.right  # type: ignore[union-attr]
        if not _plus(nested):
            return None
        n1 = A.SBin("+", nested.right, nested.left) if inner else nested  # type: ignore[union-attr]
        return e0, nested, n1, other

    def apply(e: A.Expr) -> A.Expr | None:
        got = parts(e)
        if got is None:
            return None
        _, _, n1, other = got
        assert isinstance(n1, A.SBin)
        if left:
            return A.SBin("+", A.SBin("+", other, n1.left), n1.right)
        return A.SBin("+", n1.left, A.SBin("+", n1.right, other))

    def steps(pat: Pattern, e: A.Expr) -> list[str]:
        got = parts(e)
        assert got is not None
        e0, nested, n1, other = got
        out = [f"rw sadd_comm at ({pat(e)})."] if outer else []
        if inner:
            out.append(f"rw sadd_comm at ({pat(nested)}).")
        node = A.SBin("+", other, n1) if left else A.SBin("+", n1, other)
        out.append(f"rw {'' if left else '<- '}sadd_assoc at ({pat(node)}).")
        return out

    name = f"assoc_{'l' if left else 'r'}{'_o' if outer else ''}{'_i' if inner else ''}"
    uses = (LemmaUse("sadd_assoc", left, "sadd"),) + (
        (LemmaUse("sadd_comm", True, "sadd"),) if outer or inner else ())
    return Rule(name, "a scalar sum regroups (up to the order of its operands)", uses, (),
                apply, steps)


ASSOC_RULES: tuple[Rule, ...] = tuple(
    _assoc_rule(left, outer, inner)
    for left in (True, False) for outer in (False, True) for inner in (False, True))


RULES: tuple[Rule, ...] = (
    Rule("gen_split",
         "a generation of a sum is the sum of two generations",
         (LemmaUse("sadd_tadd", True, "sadd"), LemmaUse("tadd_gen", False, "genr")),
         ("split_tadd at (_)",), _gen_split, _gen_split_steps),
    Rule("swap_sum",
         "a generation of a reduction is a reduction of generations (extents independent)",
         (LemmaUse("gen_sum_swap", True, "genr"),),
         ("swap_sum at (_)",), _swap_sum, _swap_sum_steps),
    *ASSOC_RULES,
)

# Commutativity is searched modulo, not step by step (certify.py: the path search compares
# programs up to it and the idiom matcher tries both orders; the swaps it needs become
# these steps), so it is not in RULES' breadth-first neighbourhood.
COMM = Rule("comm", "the two operands of a scalar * or +, or of a tensor <+>, swap",
            (LemmaUse("smul_comm'", True, "smul"), LemmaUse("sadd_comm", True, "sadd"),
             LemmaUse("tadd_comm_t", True, "tadd")),
            (), _swap, _swap_steps)

# Every rule, for the test that checks their lemmas and directives against Coq.
ALL_RULES: tuple[Rule, ...] = (*RULES, LET_ROOT, COMM)


def egglog_rules(temp: str) -> list[object]:
    """The structural rules as egglog rewrites (the idioms: `idiom_rules`); `temp` the
    name let_root gives its buffer."""
    v, k, op, i2 = vars_("v k op i2", String)
    lo, hi, lo2, hi2, lo3, hi3 = vars_("lo hi lo2 hi2 lo3 hi3", Ix)
    a, b, f, g = vars_("a b f g", T)
    root_lhs = T.gen(v, lo, hi, T.sum(i2, lo2, hi2, T.sbin("*", a, T.sum(k, lo3, hi3, g))))
    return [
        # LET_ROOT
        rewrite(root_lhs).to(
            T.let(temp, T.gen(i2, lo2, hi2, T.sum(k, lo3, hi3, g)),
                  T.gen(v, lo, hi, T.sum(i2, lo2, hi2, T.sbin(
                      "*", a, T.get(T.var(temp), Ix.var(i2)))))),
            is_root(root_lhs), v != i2, free_of(T.sum(k, lo3, hi3, g), v),
            ix_free_of(lo2, v), ix_free_of(hi2, v)),
        rewrite(T.gen(v, lo, hi, T.sbin("+", a, b))).to(
            T.tadd(T.gen(v, lo, hi, a), T.gen(v, lo, hi, b))),
        rewrite(T.gen(v, lo, hi, T.tadd(a, b))).to(
            T.tadd(T.gen(v, lo, hi, a), T.gen(v, lo, hi, b))),
        rewrite(T.gen(v, lo, hi, T.sum(k, lo2, hi2, f))).to(
            T.sum(k, lo2, hi2, T.gen(v, lo, hi, f)),
            v != k, ix_free_of(lo2, v), ix_free_of(hi2, v)),
        # ASSOC (both ways)
        rewrite(T.sbin("+", a, T.sbin("+", b, f))).to(T.sbin("+", T.sbin("+", a, b), f)),
        rewrite(T.sbin("+", T.sbin("+", a, b), f)).to(T.sbin("+", a, T.sbin("+", b, f))),
        # COMM
        rewrite(T.sbin("*", a, b)).to(T.sbin("*", b, a)),
        rewrite(T.sbin("+", a, b)).to(T.sbin("+", b, a)),
        rewrite(T.tadd(a, b)).to(T.tadd(b, a)),
    ]


# -- idioms --------------------------------------------------------------------------------

def idiom_rule(spec: InstrSpec) -> object:
    """`spec.body` (binders as pattern variables, parameters as pattern variables) ->
    the call, when no argument mentions a binder of the body (free_of)."""
    binders: dict[str, object] = {}
    params: dict[str, object] = {}
    idx_params = {p.name for p in spec.params if p.kind == INDEX}
    conds: list[object] = []

    def ix(i: A.Idx) -> object:
        if isinstance(i, A.IVar):
            if i.name in binders:
                return Ix.var(binders[i.name])  # type: ignore[arg-type]
            if i.name in idx_params:
                if i.name not in params:
                    (params[i.name],) = vars_(f"p_{i.name}", Ix)
                return params[i.name]
        if isinstance(i, A.IConst):
            return Ix.const(i.value)
        if isinstance(i, A.IBin):
            return Ix.bin(i.op, ix(i.left), ix(i.right))  # type: ignore[arg-type]
        raise ValueError(f"idiom {spec.name}: unsupported index {i!r}")

    def pat(e: A.Expr) -> object:
        if isinstance(e, A.Var):
            if e.name not in params:
                (params[e.name],) = vars_(f"p_{e.name}", T)
            return params[e.name]
        if isinstance(e, (A.Gen, A.Sum)):
            (bv,) = vars_(f"b_{e.var}", String)
            binders[e.var] = bv
            ctor = T.gen if isinstance(e, A.Gen) else T.sum
            return ctor(bv, ix(e.lo), ix(e.hi), pat(e.body))  # type: ignore[arg-type]
        if isinstance(e, A.Get):
            return T.get(pat(e.tensor), ix(e.index))  # type: ignore[arg-type]
        if isinstance(e, A.SBin):
            return T.sbin(e.op, pat(e.left), pat(e.right))  # type: ignore[arg-type]
        if isinstance(e, A.TAdd):
            return T.tadd(pat(e.left), pat(e.right))  # type: ignore[arg-type]
        raise ValueError(f"idiom {spec.name}: unsupported construct {type(e).__name__}")

    lhs = pat(spec.body)
    names = list(binders.values())
    for x in range(len(names)):
        for y in range(x + 1, len(names)):
            conds.append(names[x] != names[y])  # type: ignore[operator]
    for p in spec.params:
        for b in names:
            if p.kind == INDEX:
                conds.append(ix_free_of(params[p.name], b))  # type: ignore[arg-type]
            else:
                conds.append(free_of(params[p.name], b))  # type: ignore[arg-type]
    args = T.nil()
    for p in reversed(spec.params):
        x = params[p.name]
        args = T.cons(T.ixarg(x) if p.kind == INDEX else x, args)  # type: ignore[arg-type]
    return rewrite(lhs).to(T.call(spec.name, args), *conds)  # type: ignore[arg-type]


def match_spec(spec: InstrSpec, e: A.Expr) -> tuple[A.Instr, list[tuple[int, ...]]] | None:
    """The call `e` is, if `e` is `spec`'s body for some arguments that mention none of
    the body's binders (the Python side of `idiom_rule`), up to the order of the
    operands of `*`, `+` and `<+>`: with the paths (below `e`) of the nodes whose
    operands must be swapped first, deepest first."""
    pnames = {p.name for p in spec.params}
    State = tuple[dict[str, object], dict[str, str], list[tuple[int, ...]]]

    def m_ix(p: A.Idx, t: A.Idx, st: State) -> bool:
        env, ren, _ = st
        if isinstance(p, A.IVar) and p.name in ren:
            return isinstance(t, A.IVar) and t.name == ren[p.name]
        if isinstance(p, A.IVar) and p.name in pnames:
            if A.idx_free_vars(t) & set(ren.values()):
                return False
            return env.setdefault(p.name, t) == t
        if isinstance(p, A.IBin):
            return (isinstance(t, A.IBin) and t.op == p.op and m_ix(p.left, t.left, st)
                    and m_ix(p.right, t.right, st))
        return p == t

    def m(p: A.Expr, t: A.Expr, path: tuple[int, ...], st: State) -> State | None:
        env, ren, swaps = st
        if isinstance(p, A.Var) and p.name in pnames:
            if A.free_vars(t) & set(ren.values()):
                return None
            return st if env.setdefault(p.name, t) == t else None
        if isinstance(p, (A.Gen, A.Sum)):
            if type(t) is not type(p) or t.var in ren.values():  # type: ignore[union-attr]
                return None
            if not (m_ix(p.lo, t.lo, st) and m_ix(p.hi, t.hi, st)):  # type: ignore[union-attr]
                return None
            ren[p.var] = t.var  # type: ignore[union-attr]
            return m(p.body, t.body, path + (2,), st)  # type: ignore[union-attr]
        if isinstance(p, A.Get):
            if not isinstance(t, A.Get):
                return None
            st2 = m(p.tensor, t.tensor, path + (0,), st)
            return st2 if st2 is not None and m_ix(p.index, t.index, st2) else None
        if isinstance(p, (A.SBin, A.TAdd)):
            if type(t) is not type(p) or getattr(p, "op", None) != getattr(t, "op", None):
                return None
            for swapped in (False, True):
                a, b = (t.right, t.left) if swapped else (t.left, t.right)  # type: ignore[union-attr]
                ka, kb = (1, 0) if swapped else (0, 1)
                trial: State = (dict(env), dict(ren), list(swaps))
                r1 = m(p.left, a, path + (ka,), trial)  # type: ignore[union-attr]
                r2 = m(p.right, b, path + (kb,), r1) if r1 is not None else None  # type: ignore[union-attr]
                if r2 is not None:
                    if swapped:
                        r2[2].append(path)
                    return r2
            return None
        return st if p == t else None

    got = m(spec.body, e, (), ({}, {}, []))
    if got is None:
        return None
    env, _, swaps = got
    call = A.Instr(spec.name, tuple(env[p.name] for p in spec.params))  # type: ignore[misc]
    return call, sorted(swaps, key=len, reverse=True)


# LIAR's cost model (its Listing 7): a library call costs a discounted amount per
# element it touches; loops cost per iteration (search/extract.py).
CALL_COST = {
    "blas_dot": 0.8, "blas_axpy": 0.8, "blas_fill": 0.8,
    "blas_gemv": 0.7, "blas_gemvT": 0.7, "blas_gemv_scaled": 0.7, "blas_gemvT_scaled": 0.7,
    "blas_gemm": 0.6, "blas_gemm_scaled": 0.6, "blas_transpose": 0.9,
    # Gemmini's matmul (glenside.py), per multiply-add as a gemm
    "gemmini_loop_ws": 0.6, "gemmini_loop_ws_bias": 0.6,
}
