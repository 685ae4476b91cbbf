"""Printing and parsing ATL terms, on their own and through Coq.

The property that matters: an AST printed for Coq, elaborated by Coq and
printed back by Coq parses to the same AST.  Random well-typed programs are
sent in batches (one Coq sentence prints a whole batch) to keep this fast.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from atl_strategies import SIZES, TENSORS, programs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verisched.pybridge.coqterm import parse_index, parse_program, pretty, to_coq
from verisched.pybridge.errors import TermParseError
from verisched.pybridge.session import CoqSession
from verisched.pybridge.terms import (
    Expr,
    Flatten,
    Gen,
    Guard,
    IBin,
    IConst,
    IVar,
    Let,
    PAnd,
    PBool,
    PCmp,
    SBin,
    Sum,
    TAdd,
    TruncR,
    Var,
    Zero,
    free_vars,
    get,
)


def canonical(e: Expr) -> Expr:
    """Coq prints an unused binder as `_`; name it so on our side too."""
    if isinstance(e, (Gen, Sum)):
        body = canonical(e.body)
        var = e.var if e.var in free_vars(e.body) else "_"
        return type(e)(var, e.lo, e.hi, body)
    if isinstance(e, Let):
        var = e.var if e.var in free_vars(e.body) else "_"
        return Let(var, canonical(e.value), canonical(e.body))
    if isinstance(e, (Var, Zero)):
        return e
    kwargs = {}
    for name in e.__dataclass_fields__:
        v = getattr(e, name)
        is_expr = hasattr(v, "__dataclass_fields__") and not isinstance(
            v, (IVar, IConst, IBin, PBool, PCmp, PAnd))
        kwargs[name] = canonical(v) if is_expr else v
    return type(e)(**kwargs)


# -- pure Python ----------------------------------------------------------------


@given(programs())
@settings(max_examples=300, deadline=None)
def test_parse_inverts_to_coq_and_pretty(prog: tuple[Expr, int]) -> None:
    e, _ = prog
    assert parse_program(to_coq(e)) == e
    assert parse_program(pretty(e)) == e
    assert parse_program(pretty(e, width=30)) == e


def test_levels_follow_the_notations() -> None:
    f, a = Var("f"), Var("a")
    # guard (45) binds tighter than + (50) and looser than * (40)
    assert parse_program("|[ true ]| a * a + a") == SBin(
        "+", Guard(PBool(True), SBin("*", a, a)), a)
    assert parse_program("a + a * a") == SBin("+", a, SBin("*", a, a))
    assert parse_program("f _[i] _[j] <+> f _[0]") == TAdd(get(f, "i", "j"), get(f, 0))
    assert parse_program("GEN [ i < n ] f _[i] <+> tzero") == Gen(
        "i", IConst(0), IVar("n"), TAdd(get(f, "i"), Zero()))
    assert parse_index("a - b - c") == IBin("-", IBin("-", IVar("a"), IVar("b")), IVar("c"))
    assert parse_index("a - (b - c)") == IBin("-", IVar("a"), IBin("-", IVar("b"), IVar("c")))
    assert parse_index("i * k + j mod 3") == IBin(
        "+", IBin("*", IVar("i"), IVar("k")), IBin("%", IVar("j"), IConst(3)))
    assert parse_index("cdiv (n + 1) 4 - -1") == IBin(
        "-", IBin("cdiv", IBin("+", IVar("n"), IConst(1)), IConst(4)), IConst(-1))
    assert parse_program("trunc_r n (flatten (cdiv n 4) 4 v)") == TruncR(
        IVar("n"), Flatten(IBin("cdiv", IVar("n"), IConst(4)), IConst(4), Var("v")))
    assert parse_program("Defs.trunc_r 3 v") == TruncR(IConst(3), Var("v"))


# -- through Coq -------------------------------------------------------------------

_TERM_RE = re.compile(r"<VS-TERM>(.*?)</VS-TERM>", re.S)


@pytest.fixture(scope="module")
def section(coq: CoqSession) -> Iterator[CoqSession]:
    start = coq.state
    coq.run_ok("Section VS_roundtrip.")
    coq.run_ok("Context {S : Type} `{ScalarLaws S}.")
    coq.run_ok(f"Variables ({' '.join(SIZES)} : Z).")
    for name, rank in TENSORS.items():
        coq.run_ok(f"Variable {name} : {' -> '.join(['Z'] * rank + ['S'])}.")
    coq.run_ok("Goal True.")
    yield coq
    coq.back_to(start)


def _coq_roundtrip(coq: CoqSession, batch: list[tuple[Expr, int]]) -> list[str]:
    calls = "; ".join(
        f"bridge_print_term ({to_coq(e)} : {' -> '.join(['Z'] * r + ['S'])})" for e, r in batch)
    r = coq.run(calls + ".", timeout=120)
    assert r.ok, r.error
    return [t.strip() for t in _TERM_RE.findall(r.output)]


@given(st.lists(programs(), min_size=25, max_size=25))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                               HealthCheck.data_too_large])
def test_roundtrip_through_coq(section: CoqSession, batch: list[tuple[Expr, int]]) -> None:
    printed = _coq_roundtrip(section, batch)
    assert len(printed) == len(batch)
    for (e, _), text in zip(batch, printed, strict=True):
        assert parse_program(text) == canonical(e), text


def test_roundtrip_example_programs(section: CoqSession) -> None:
    f = Var("u")
    prog = Let("buf", Gen("j", IConst(0), IVar("n"), get(f, "j")),
               Gen("i", IConst(0), IVar("n"),
                   TAdd(Guard(PCmp("<=", IConst(0), IBin("-", IVar("i"), IConst(1))),
                              get(Var("buf"), IBin("-", IVar("i"), IConst(1)))),
                        get(Var("buf"), "i"))))
    (text,) = _coq_roundtrip(section, [(prog, 1)])
    assert parse_program(text) == prog


def test_a_long_chain_prints_and_parses_back() -> None:
    # 3,000 additions (an 18 KB program): the printer passed Python's recursion limit
    # from 500 on, and asked for each subterm's text at every level (quadratic).
    src = "GEN [ i < n ] (" + " <+> ".join(["a _[ i ]"] * 3000) + ")"
    e = parse_program(src)
    text = pretty(e)
    assert text.count("<+>") == 2999
    assert parse_program(text) == e


def test_ctrl_c_is_one_line(monkeypatch, tmp_path, capsys) -> None:
    from verisched import pipeline
    from verisched.cli import main

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "load", interrupted)
    assert main(["demo", "--out", str(tmp_path / "d")]) == 130
    assert capsys.readouterr().err == "verisched demo: interrupted\n"
    assert not (tmp_path / "d").exists()  # the directory it made, removed again


def test_a_non_ascii_name_is_said_to_be_one() -> None:
    # Coq takes `α`; the reader does not, and said only "unexpected character".
    with pytest.raises(TermParseError, match=r"names in programs must be ASCII"):
        parse_program("GEN [ i < n ] \u03b1 _[ i ]")
