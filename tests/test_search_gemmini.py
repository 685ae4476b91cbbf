"""`verisched search --idioms gemmini` (issue 14): Glenside's result, certified and run.

examples/search/glenside_conv.v's naive quantized 2-D convolution is rewritten by the
search into im2col (a let-bound gathered matrix), the weights as a matrix, and our
Gemmini matmul specification `gemmini_loop_ws` (search/glenside.py); Coq replays the
certificate and coqc accepts `conv2d_found.v` (the search raises otherwise; checked
again here).  `conv2d_gemmini.v`, the same derivation with the hardware loop unrolled
into single instructions, is lowered for the gemmini target and run on the simulator
on random int8 inputs, sizes not multiples of 16 included, against the reference
interpreter on the original program and on the found one.  Every rule names lemmas
that exist in Coq, in the direction the rule uses them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import requires_coq
from test_search import _sides, _statement

from verisched import pipeline
from verisched.pybridge.instrs import alpha_equal
from verisched.pybridge.interp import evaluate
from verisched.pybridge.session import REPO_ROOT
from verisched.pybridge.terms import Instr, Let, Var, walk
from verisched.search import IDIOM_FAMILIES, KernelFileError, SearchResult, load_program, search
from verisched.search.api import check_file
from verisched.search.glenside import ALL_GLENSIDE_RULES, LOOP_WS, REQUIRES
from verisched.targets.gemmini import build
from verisched.targets.gemmini.instrs import split_scale

CONV = REPO_ROOT / "examples" / "search" / "glenside_conv.v"


def test_gemmini_is_an_idiom_family() -> None:
    assert "gemmini" in IDIOM_FAMILIES


@requires_coq
def test_glenside_rules_name_existing_lemmas_in_their_direction(coq: object) -> None:
    start = coq.state  # type: ignore[attr-defined]
    try:
        for m in REQUIRES:
            coq.run_ok(f"From Verisched Require Import {m}.")  # type: ignore[attr-defined]
        for rule in ALL_GLENSIDE_RULES:
            assert rule.lemmas, f"rule {rule.name} names no lemma"
            for use in rule.lemmas:
                lhs, rhs = _sides(_statement(coq, use.name))
                side = lhs if use.forward else rhs
                assert side.lstrip("(@").split()[0] == use.lhs_head, (rule.name, use, side)
    finally:
        coq.back_to(start)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> SearchResult:
    return search(CONV, "conv2d", idioms="gemmini", out=tmp_path_factory.mktemp("glen"))


@requires_coq
def test_conv_becomes_im2col_and_the_gemmini_matmul(found: SearchResult) -> None:
    assert found.idioms == {LOOP_WS: 1}
    top = found.found
    assert isinstance(top, Let) and isinstance(top.body, Let)
    call = next(x for x in walk(top) if isinstance(x, Instr) and x.name == LOOP_WS)
    # A is the im2col buffer, B the weight matrix: the two lets
    assert call.args[3:5] == (Var(top.var), Var(top.body.var))
    rules = [s.rule for s in found.certificate]
    assert rules.count("operand_let") == 2 and rules.count("merge_rows") == 2
    assert "flatten3" in rules and rules[-1] == "gemmini_matmul"
    assert found.cost < found.original_cost
    for path in (found.path, found.lowering):
        assert path is not None
        text = path.read_text()
        assert "Admitted" not in text and "Axiom" not in text
        check_file(path)   # coqc on a copy; raises CertificateRefused if it refuses


@requires_coq
@pytest.mark.parametrize("dims", [(2, 7, 6, 5, 20, 3, 3), (1, 6, 6, 16, 16, 3, 3),
                                  (3, 5, 9, 3, 7, 2, 4), (2, 9, 10, 6, 17, 3, 3)])
def test_found_conv_runs_on_the_simulator(found: SearchResult, dims: tuple[int, ...]) -> None:
    assert found.lowering is not None and found.path is not None
    dp = pipeline.load(found.lowering, "conv2d_scheduled")
    kernel = pipeline.lower(pipeline.check(dp), "gemmini").kernel
    derived = pipeline.load(found.path, "conv2d_scheduled")
    assert alpha_equal(derived.expr, found.found)
    nb, h, w, c, ko, kh, kw = dims
    rng = np.random.default_rng(sum(dims))
    ins = {"x": rng.integers(-128, 128, (nb, h, w, c), dtype=np.int8),
           "w": rng.integers(-128, 128, (kh, kw, c, ko), dtype=np.int8)}
    for scale, relu in ((1 / 613, 1), (1 / 97, 0)):
        sm, se = split_scale(scale)
        sizes = dict(NB=nb, H=h, W=w, C=c, KO=ko, KH=kh, KW=kw, sm=sm, se=se, act=relu)
        res = build.run(kernel, ins, sizes)
        assert res.out.shape == (nb, h - kh + 1, w - kw + 1, ko)
        wide = {a: v.astype(np.int64) for a, v in ins.items()}
        for prog in (dp.original, derived.expr, dp.expr):
            np.testing.assert_array_equal(res.out, evaluate(prog, wide, sizes, np.int64))
        m, k = nb * (h - kh + 1) * (w - kw + 1), kh * kw * c
        # one 16x16x16 product per tile triple: the matmul of the im2col matrix
        tiles = -(-m // 16) * -(-ko // 16) * -(-k // 16)
        assert res.counters["compute_preloaded"] + res.counters["compute_accumulated"] == tiles


@requires_coq
def test_weights_first_product_is_found_and_runs(tmp_path: Path) -> None:
    """`w * x`: the rules tell the operands by their indices; the certificate swaps the
    product back to the lemma's A * B (smul_comm')."""
    r = search(CONV, "conv2d_wx", idioms="gemmini", out=tmp_path)
    assert r.idioms == {LOOP_WS: 1} and r.lowering is not None
    assert any("smul_comm'" in c for s in r.certificate for c in s.coq)
    dp = pipeline.load(r.lowering, "conv2d_wx_scheduled")
    kernel = pipeline.lower(pipeline.check(dp), "gemmini").kernel
    rng = np.random.default_rng(5)
    nb, h, w, c, ko, kh, kw = 2, 6, 7, 3, 18, 2, 3
    ins = {"x": rng.integers(-128, 128, (nb, h, w, c), dtype=np.int8),
           "w": rng.integers(-128, 128, (kh, kw, c, ko), dtype=np.int8)}
    sm, se = split_scale(1 / 211)
    sizes = dict(NB=nb, H=h, W=w, C=c, KO=ko, KH=kh, KW=kw, sm=sm, se=se, act=0)
    res = build.run(kernel, ins, sizes)
    wide = {a: v.astype(np.int64) for a, v in ins.items()}
    np.testing.assert_array_equal(res.out, evaluate(dp.original, wide, sizes, np.int64))


def test_kernel_file_mistakes_are_messages(tmp_path: Path) -> None:
    head = "Variables (n : Z).\nVariable act : bool.\nVariable x : Z -> gint.\n"
    bad = tmp_path / "mixed.v"
    bad.write_text(head + "Variable y : Z -> S.\n"
                   "Definition p := GEN [ i < n ] x _[ i ] * y _[ i ].\n")
    with pytest.raises(KernelFileError, match="mix element types"):
        load_program(bad, "p")
    hyp = tmp_path / "hyp.v"
    hyp.write_text(head + "Hypothesis Hm : 0 < m.\nDefinition p := GEN [ i < n ] x _[ i ].\n")
    with pytest.raises(KernelFileError, match="not over sizes"):
        load_program(hyp, "p")
    ok = tmp_path / "ok.v"
    ok.write_text(head + "Variables (sm : Z).\nHypothesis Hn : 2 <= n.\n"
                  "Definition p := GEN [ i < n ] gemmini_acc_out sm sm act (x _[ i ]).\n")
    prog = load_program(ok, "p")
    assert prog.scalar == "gint" and prog.bools == ("act",) and prog.signed == ("sm",)
    assert len(prog.assume) == 1


@requires_coq
def test_nchw_layout_is_not_mapped_but_certified(tmp_path: Path) -> None:
    """Glenside's NCHW layout (the output channel not innermost) is a documented gap:
    no Gemmini call, and what the search found is still certified."""
    r = search(CONV, "conv2d_nchw", idioms="gemmini", out=tmp_path)
    assert LOOP_WS not in r.idioms and r.lowering is None
    assert r.path is not None and r.path.is_file()


@requires_coq
def test_matmul_layer_becomes_the_hardware_loop(tmp_path: Path) -> None:
    """A naive quantized matmul: one rewrite, the found program is the loop itself, which
    the gemmini target lowers to Gemmini's hardware loops."""
    r = search(CONV, "qmatmul", idioms="gemmini", out=tmp_path)
    assert isinstance(r.found, Instr) and r.found.name == LOOP_WS
    assert [s.rule for s in r.certificate] == ["gemmini_matmul"]
    assert r.path is not None
    dp = pipeline.load(r.path, "qmatmul_scheduled")
    kernel = pipeline.lower(pipeline.check(dp), "gemmini").kernel
    rng = np.random.default_rng(7)
    m, n, k = 37, 20, 50
    ins = {"A": rng.integers(-128, 128, (m, k), dtype=np.int8),
           "B": rng.integers(-128, 128, (k, n), dtype=np.int8)}
    sm, se = split_scale(1 / 301)
    sizes = dict(M=m, N=n, K=k, sm=sm, se=se, act=1)
    res = build.run(kernel, ins, sizes)
    assert res.counters["loop_ws"] >= 1
    wide = {a: v.astype(np.int64) for a, v in ins.items()}
    np.testing.assert_array_equal(res.out, evaluate(dp.original, wide, sizes, np.int64))


@requires_coq
def test_conv_with_bias_is_gemminiconv_found(tmp_path: Path) -> None:
    """GemminiConv.v's layer (its derivation written by hand there) found by the search:
    im2col, weights, the bias broadcast to a matrix, gemmini_loop_ws_bias; run on the
    simulator against the interpreter."""
    r = search(CONV, "conv2d_bias", idioms="gemmini", out=tmp_path)
    assert r.idioms == {"gemmini_loop_ws_bias": 1} and r.lowering is not None
    rules = [s.rule for s in r.certificate]
    assert "bias_let" in rules and rules.count("operand_let") == 2
    dp = pipeline.load(r.lowering, "conv2d_bias_scheduled")
    kernel = pipeline.lower(pipeline.check(dp), "gemmini").kernel
    for dims in [(2, 7, 6, 5, 20, 3, 3), (3, 5, 9, 3, 7, 2, 4)]:
        nb, h, w, c, ko, kh, kw = dims
        rng = np.random.default_rng(sum(dims))
        ins = {"x": rng.integers(-128, 128, (nb, h, w, c), dtype=np.int8),
               "w": rng.integers(-128, 128, (kh, kw, c, ko), dtype=np.int8),
               "bias": rng.integers(-2**16, 2**16, (ko,), dtype=np.int32)}
        sm, se = split_scale(1 / 613)
        sizes = dict(NB=nb, H=h, W=w, C=c, KO=ko, KH=kh, KW=kw, sm=sm, se=se, act=1)
        res = build.run(kernel, ins, sizes)
        wide = {a: v.astype(np.int64) for a, v in ins.items()}
        for prog in (dp.original, dp.expr):
            np.testing.assert_array_equal(res.out, evaluate(prog, wide, sizes, np.int64))
