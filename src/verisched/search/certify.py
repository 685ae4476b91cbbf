"""The certificate: Coq re-derives the program the e-graph found.

egglog gives no explanation of why two terms share an e-class (its proof
mode is not exposed by the Python bindings), so the path is found again, here,
by a breadth-first search over the *same* rules (rules.py: each rule's Python
rewrite is the one its egglog rewrite performs) from the original program to
the extracted one, applying only idiom rewrites whose call occurs in the
extracted program.  Commutativity is searched modulo: programs are compared
with the operands of *, + and <+> in a canonical order, the idiom matcher
tries both orders, and the swaps a match or the final program needs become
`rw smul_comm'`/`sadd_comm`/`tadd_comm_t` steps.  Each rewrite on the path
becomes the Coq steps of its rule at its site (`at (pattern)`: the subterm,
with the variables bound around it as holes), and a live Coq session replays
them (schedule/state.py).  Coq decides: a refused step raises
`CertificateRefused` naming the step and its rule, and a replay that ends on a
program other than the extracted one (up to the names of bound variables) is
refused too.  Neither egglog nor this search is trusted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from verisched.pybridge import terms as A
from verisched.pybridge.coqterm import to_coq
from verisched.pybridge.errors import CoqTimeoutError
from verisched.pybridge.instrs import alpha_equal, spec_of
from verisched.schedule import DirectiveRefused, Schedule
from verisched.schedule.dsl import Program

from .glenside import ACC_OUT, LOOPS, RootRule, glenside_rules, root_rules
from .latent import LANE_RULES, LATENT_RULES
from .rules import COMM, LET_ROOT, RULES, Rule, let_root, let_root_steps, match_spec, temp_name
from .sites import positions as _positions
from .sites import replace_at as _replace_at
from .sites import site_pattern

Path = tuple[int, ...]


class CertificateError(RuntimeError):
    """No certificate: no path was found, or Coq refused a step."""


class CertificateRefused(CertificateError):
    """Coq refused a step of the certificate: a bug in a rule (its side condition or
    its Coq steps), never a property of the program."""


@dataclass(frozen=True)
class Step:
    """One rewrite of the path: `rule` (a structural rule or an idiom's name) at the
    node at `path`, whose enclosing binders are `bound`; `coq` its Coq sentences."""

    rule: str
    path: Path
    coq: tuple[str, ...]


def _node_at(e: A.Expr, path: Path) -> tuple[A.Expr, frozenset[str]]:
    bound: frozenset[str] = frozenset()
    for k in path:
        var = A.binder(e)
        kids = A.children(e)
        if var is not None and k == len(kids) - 1:
            bound = bound | {var}
        e = kids[k]  # type: ignore[assignment]
    return e, bound


def _swap_at(e: A.Expr, path: Path) -> tuple[A.Expr, list[str]]:
    """`e` with the operands at `path` swapped, and the Coq step that does it."""
    node, bound = _node_at(e, path)
    new = COMM.apply(node)
    assert new is not None, f"no commutative node at {path}"
    steps = COMM.coq_steps(lambda n, extra=frozenset(): site_pattern(n, bound | extra), node)
    return _replace_at(e, path, new), steps


def _key(e: A.Expr) -> str:
    return repr(e)


def canonical(e: A.Expr) -> A.Expr:
    """`e` with the operands of every *, + and <+> in a fixed order (the programs the
    path search identifies: commutativity is searched modulo)."""
    e = A.rebuild(e, lambda c: c if A.is_idx(c) else canonical(c))  # type: ignore[arg-type]
    if (isinstance(e, A.SBin) and e.op in ("+", "*") or isinstance(e, A.TAdd)) and \
            _key(e.right) < _key(e.left):  # type: ignore[union-attr]
        return COMM.apply(e)  # type: ignore[return-value]
    return e


def _orient(e: A.Expr, want: A.Expr, path: Path = ()) -> list[Path]:
    """The nodes of `e` (equal to `want` up to commutativity) whose operands must be
    swapped to make it `want`, deepest first."""
    if type(e) is not type(want):
        return []
    kids, wkids = A.children(e), A.children(want)
    if isinstance(e, (A.SBin, A.TAdd)) and canonical(e.left) != canonical(want.left):  # type: ignore[union-attr]
        out = _orient(e.left, want.right, path + (0,)) + _orient(e.right, want.left, path + (1,))  # type: ignore[union-attr]
        return out + [path]
    out: list[Path] = []
    for k, (c, w) in enumerate(zip(kids, wkids, strict=True)):
        if not A.is_idx(c):
            out += _orient(c, w, path + (k,))  # type: ignore[arg-type]
    return out


def _fix_orientation(e: A.Expr, found: A.Expr) -> tuple[A.Expr, Step | None]:
    coq: list[str] = []
    for p in sorted(_orient(e, found), key=len, reverse=True):
        e, steps = _swap_at(e, p)
        coq += steps
    return e, (Step("comm", (), tuple(coq)) if coq else None)


def _commutative(e: object) -> bool:
    return isinstance(e, A.SBin) and e.op in ("+", "*") or isinstance(e, A.TAdd)


def _comm_variants(node: A.Expr) -> list[tuple[A.Expr, list[Path]]]:
    """`node` with the operands of its commutative top (or, at a loop, of its body's)
    and of those operands swapped, in every combination (up to 7 variants, `node`
    itself not among them), each with the swaps' paths below `node` in the order they
    are made (_swap_at replays them): what a rule that matches one orientation needs
    where egglog matched another (the lane rule's `GEN [l < w] c * b[l] + d[l]`)."""
    kids = A.children(node)
    if _commutative(node):
        base: Path = ()
    elif A.binder(node) is not None and kids and _commutative(kids[-1]):
        base = (len(kids) - 1,)
    else:
        return []
    out: list[tuple[A.Expr, list[Path]]] = [(node, [])]
    for sub in (base, base + (0,), base + (1,)):
        for v, subs in list(out):
            if sub != base and not _commutative(_node_at(v, base)[0]):
                continue
            inner, _ = _node_at(v, sub)
            if _commutative(inner):
                out.append((_replace_at(v, sub, COMM.apply(inner)), subs + [sub]))  # type: ignore[arg-type]
    return out[1:]


def _calls(e: A.Expr) -> set[A.Instr]:
    # gemmini_acc_out is a scalar primitive of the algorithm (the output path), not an
    # idiom: the rules rewrite its argument
    return {x for x in A.walk(e) if isinstance(x, A.Instr)  # type: ignore[misc]
            and x.name != ACC_OUT}


def _neighbours(e: A.Expr, idioms: list[str], temp: str,
                rules: tuple[Rule, ...] = (*RULES, *LATENT_RULES),
                roots: tuple[RootRule, ...] = ()) -> Iterator[tuple[Step, A.Expr]]:
    hoisted = let_root(e, temp)
    if hoisted is not None:
        yield Step(LET_ROOT.name, (), tuple(let_root_steps(
            lambda n, extra=frozenset(): site_pattern(n, extra), e, temp))), hoisted
    for name, fn in roots:   # rules that apply to the whole program (glenside.py)
        got = fn(e)
        if got is not None:
            yield Step(name, (), tuple(got[1])), got[0]
    for path, node, bound in _positions(e):
        def pat(n: A.Expr, extra: frozenset[str] = frozenset(), b: frozenset[str] = bound
                ) -> str:
            return site_pattern(n, b | extra)
        variants: list[tuple[A.Expr, list[Path]]] | None = None
        for r in rules:
            new = r.apply(node)
            if new is not None:
                yield Step(r.name, path, tuple(r.coq_steps(pat, node))), _replace_at(e, path, new)
                continue
            # A rule matches one orientation of its operands (latent.py's `c * b[l] + d[l]`),
            # egglog any: try the node with its operands and its operands' operands swapped.
            if variants is None:
                variants = _comm_variants(node)
            for variant, subs in variants:
                new = r.apply(variant)
                if new is None:
                    continue
                cur, coq = e, []
                for sub in subs:
                    cur, steps = _swap_at(cur, path + sub)
                    coq += steps
                node_now, bound_now = _node_at(cur, path)
                coq += r.coq_steps(lambda n, extra=frozenset(), b=bound_now:
                                   site_pattern(n, b | extra), node_now)
                yield Step(r.name, path, tuple(coq)), _replace_at(cur, path, new)
                break
        for name in idioms:
            got = match_spec(spec_of(name), node)
            if got is None:
                continue
            call, swaps = got
            cur, coq = e, []
            for sub in swaps:   # deepest first: a swap moves no shallower node
                cur, steps = _swap_at(cur, path + sub)
                coq += steps
            node_now, bound_now = _node_at(cur, path)
            coq.append(f"use_instr {name} at ({site_pattern(node_now, bound_now)}).")
            yield Step(name, path, tuple(coq)), _replace_at(cur, path, call)


def find_path(original: A.Expr, found: A.Expr, *, limit: int = 20000,
              shapes: dict[str, tuple[A.Idx, ...]] | None = None,
              assume: tuple[A.Pred, ...] = (), gemmini: bool = False) -> list[Step]:
    """The rewrites from `original` to `found` (breadth-first, so a shortest path),
    or CertificateError when none is found within `limit` programs.  `shapes`, the
    inputs' extents, for the im2col rule, and `assume`, the size hypotheses; `gemmini`:
    the search was for that family, whose rules (glenside.py) the path may use even
    where the found program has no call."""
    target = canonical(found)

    def finish(e: A.Expr, steps: list[Step]) -> list[Step]:
        _, fix = _fix_orientation(e, found)
        return steps + ([fix] if fix else [])

    if alpha_equal(canonical(original), target):
        return finish(original, [])
    temp = temp_name(original)
    wanted = {canonical(c) for c in _calls(found)}  # type: ignore[misc]
    idioms = sorted({c.name for c in wanted})  # type: ignore[attr-defined]
    # the broadcast rule only where the found program has vector calls
    lanes = LANE_RULES if any(spec_of(n).lanes for n in idioms) else ()
    rules = (*RULES, *LATENT_RULES, *lanes)
    roots: tuple[RootRule, ...] = ()
    if gemmini or set(LOOPS) & set(idioms):   # the Gemmini family: Glenside's rules
        rules = (*rules, *glenside_rules(assume))
        roots = tuple(root_rules(shapes or {}, assume))
        idioms = [n for n in idioms if n not in LOOPS]   # found by its rule, not its body
    seen = {canonical(original)}
    queue: deque[tuple[A.Expr, list[Step]]] = deque([(original, [])])
    while queue:
        e, steps = queue.popleft()
        for step, new in _neighbours(e, idioms, temp, rules, roots):
            key = canonical(new)
            if key in seen or not {canonical(c) for c in _calls(new)} <= wanted:
                continue
            if alpha_equal(key, target):
                return finish(new, steps + [step])
            seen.add(key)
            if len(seen) > limit:
                raise CertificateError(
                    f"no rewrite path to the found program within {limit} programs")
            queue.append((new, steps + [step]))
    raise CertificateError("the found program is not reachable by the rules' rewrites "
                           "(an e-class joined by a rule used right to left?)")


def _late(what: str, timeout: float) -> str:
    """Why a replay stopped at a Coq command that ran past its time limit."""
    return (f"Coq did not finish {what} within {timeout:.0f} s (the limit of one replayed "
            "command), so the found program is not certified and no file was written; "
            "a program this large may need its steps replayed by hand (verisched check)")


def replay(program: Program, found: A.Expr, path: list[Step], *,
           progress: Callable[[str], None] | None = None, timeout: float = 120.0,
           before_end: Callable[[Schedule], Schedule] | None = None) -> Schedule:
    """Coq replays the certificate, compares its program with `found`, runs
    `before_end` (more proved steps: search/operands.py binds the calls' operands),
    proves the accesses in bounds (check_safe) and closes the derivation; returns the
    schedule at its end (`save` writes it)."""
    s = Schedule.of(program, timeout=timeout)
    try:
        for k, step in enumerate(path, 1):
            for sentence in step.coq:
                if progress:
                    progress(f"certificate step {k}/{len(path)} ({step.rule}): {sentence}")
                try:
                    s = s.apply(sentence)
                except DirectiveRefused as exc:
                    raise CertificateRefused(
                        f"Coq refused step {k} (rule {step.rule}): {sentence}\n{exc}") from exc
                except CoqTimeoutError:
                    raise CertificateRefused(_late(f"step {k} (rule {step.rule}): "
                                                   f"{sentence}", timeout)) from None
        got = s.program
        if got is None or not alpha_equal(got, found):
            raise CertificateRefused(
                "Coq's program after the certificate is not the found one:\n"
                f"  Coq:   {s.text}\n  found: {to_coq(found)}")
        # Ended here, not by Schedule's default ending: `normalize` (which the C
        # lowering wants) would eta-expand the calls' arguments, and the file is to
        # derive the program found, call for call.
        if before_end is not None:
            s = before_end(s)
        if progress:
            progress("check_safe: every access of the found program in bounds")
        for sentence in ("check_safe.", "done."):
            try:
                s = s.apply(sentence)
            except DirectiveRefused as exc:
                raise CertificateRefused(f"Coq refused {sentence} {exc}") from exc
            except CoqTimeoutError:
                raise CertificateRefused(_late(sentence, timeout)) from None
    except BaseException:
        s.close()
        raise
    return s
