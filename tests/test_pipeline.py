"""verisched.pipeline: one typed path from a derivation or a Python program to a kernel.

The two guards hold on every path: a program whose bounds Coq's check_safe did not
prove is refused unless the caller says `unsafe=True` (and the kernel then says
UNSAFE), and the derivation's size hypotheses are preconditions, so sizes that break
them are refused rather than computed wrongly.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_coq

from verisched import pipeline
from verisched.cli import main
from verisched.codegen.errors import (
    CodegenError,
    LowerError,
    PreconditionError,
    UnsafeProgramError,
)
from verisched.pybridge.coqterm import parse_program, pretty
from verisched.pybridge.errors import OutputPathError
from verisched.pybridge.terms import (
    Gen,
    Get,
    Guard,
    IBin,
    IConst,
    IVar,
    PCmp,
    TAdd,
    Var,
    gen,
    get,
)
from verisched.report.latex import TexWriter

n = IVar("n")
# GEN [i < n] f[i+1]: reads f[n] at the last i, which Coq's check_safe cannot prove in bounds.
OVERRUN = gen("i", n, get(Var("f"), IBin("+", IVar("i"), IConst(1))))
# GEN [i < n] (|[i+1 < n]| f[i+1]) <+> f[i]: the same, guarded: safe.
SHIFTED = gen("i", n, TAdd(Guard(PCmp("<", IBin("+", IVar("i"), IConst(1)), n),
                                 get(Var("f"), IBin("+", IVar("i"), IConst(1)))),
                           get(Var("f"), "i")))
# Peels f[0]: needs 1 <= n, which only a hypothesis gives.
HEAD = Gen("i", IConst(0), IConst(1), Get(Var("f"), IVar("i")))
ENV = {"f": (n,)}

SOURCE = """
From Coq Require Import ZArith List.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Rows.
  Context {S : Type} `{ScalarLaws S}.
  Variables (k m n : Z) (g : Z -> S) (f : Z -> Z -> S).
  Hypothesis Hf : shaped [n; m] f.
  Hypothesis Hn : 2 <= n.
  Hypothesis Hk : 0 < k <= 8.

  Definition rows := GEN [ i < n ] GEN [ j < m ] f _[ i ] _[ j ].
  Derive rows_copy SuchThat (rows = rows_copy) As rows_copy_correct.
  Proof. reschedule. check_safe. done. Qed.
  Derive rows_unsafe SuchThat (rows = rows_unsafe) As rows_unsafe_correct.
  Proof. reschedule. done. Qed.
End Rows.
"""


@pytest.fixture(scope="module")
def vfile(tmp_path_factory):
    p = tmp_path_factory.mktemp("pipe") / "Rows.v"
    p.write_text(SOURCE)
    return p


# ---- the Python API path --------------------------------------------------------------


def test_program_without_a_safety_proof_is_refused() -> None:
    derived = pipeline.from_ast(SHIFTED, ENV, name="shifted", prove=False)
    with pytest.raises(UnsafeProgramError, match="not proved in bounds.*unsafe=True"):
        pipeline.check(derived)


@requires_coq
def test_coq_proves_a_python_program_safe_and_it_runs() -> None:
    k = pipeline.compile_program(SHIFTED, ENV, "c", name="shifted")
    assert not k.unsafe
    f = np.arange(1, 6, dtype=np.float32)
    np.testing.assert_array_equal(k({"f": f}, n=5), f + np.append(f[1:], 0))


@requires_coq
def test_coq_refuses_an_out_of_bounds_python_program() -> None:
    with pytest.raises(UnsafeProgramError, match="check_safe failed"):
        pipeline.compile_program(OVERRUN, ENV, "c", name="overrun")


@requires_coq
def test_unsafe_is_explicit_and_marked(tmp_path) -> None:
    k = pipeline.compile_program(OVERRUN, ENV, "c", name="overrun", unsafe=True)
    assert k.unsafe
    checked = pipeline.check(pipeline.from_ast(OVERRUN, ENV, name="overrun", prove=False),
                             unsafe=True)
    source = pipeline.render(pipeline.lower(checked, "c"))
    c_file, h_file = source.write(tmp_path / "o.c")
    assert "UNSAFE overrun" in c_file.read_text() and "UNSAFE overrun" in h_file.read_text()
    # OUT.h: the header would overwrite the C file, so neither is written
    with pytest.raises(OutputPathError, match="cannot end in .h, where its header goes"):
        source.write(tmp_path / "p.h")
    assert not (tmp_path / "p.h").exists()
    # Unchecked by Coq, but still never out of bounds in C: the read past the end is zero.
    f = np.arange(1, 4, dtype=np.float32)
    np.testing.assert_array_equal(k({"f": f}, n=3), [2, 3, 0])


@requires_coq
def test_a_violated_size_hypothesis_is_a_precondition_error() -> None:
    k = pipeline.compile_program(HEAD, ENV, "c", name="head", assume=["1 <= n"])
    np.testing.assert_array_equal(k({"f": np.array([7.0], np.float32)}, n=1), [7.0])
    with pytest.raises(PreconditionError, match=r"violate the precondition .*1 <= n"):
        k({"f": np.zeros(0, np.float32)}, n=0)
    # A hypothesis Coq cannot read is named by its place in `assume`, not reported as
    # an unproved program.
    with pytest.raises(pipeline.DerivationError,
                       match=r"program head: assume\[1\] 'n >>= 1': Coq rejected it: Syntax"):
        pipeline.compile_program(HEAD, ENV, "c", name="head", assume=["1 <= n", "n >>= 1"])


# ---- the derivation path ----------------------------------------------------------------


@requires_coq
def test_derivation_signature_preconditions_and_fix(vfile) -> None:
    derived = pipeline.load(vfile, "rows_copy")
    assert derived.sizes == ("k", "m", "n") and derived.safety_gap is None
    checked = pipeline.check(derived)
    p = checked.program
    # Only what the kernel reads, in the order of the .v file; g and k are not arguments.
    assert [t for t, _ in p.inputs] == ["f"] and p.sizes == ("m", "n")
    assert [c.name for c in p.preconditions] == ["Hn"]
    assert any("Hk" in a for a in p.assumed)  # about a size the kernel does not take
    k = pipeline.compile_checked(checked, "openmp")
    f = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(k({"f": f}, m=4, n=3), f)
    with pytest.raises(PreconditionError, match="Hn : 2 <= n"):
        k({"f": f[:1]}, m=4, n=1)
    # --fix: partial evaluation; hypotheses fully about fixed sizes are checked now.
    fixed = pipeline.check(derived, fix={"m": 4})
    assert fixed.program.sizes == ("n",)
    with pytest.raises(PreconditionError, match="Hn"):
        pipeline.check(derived, fix={"n": 1})
    with pytest.raises(PreconditionError, match="Hk"):
        pipeline.check(derived, fix={"k": 9})
    with pytest.raises(CodegenError, match="not a size variable.*its sizes: k, m, n"):
        pipeline.check(derived, fix={"q": 1})
    # a size beyond C int would be folded into loop bounds that wrap
    with pytest.raises(CodegenError, match=r"fix: m=4294967296 is beyond C int \(\|m\| <="):
        pipeline.check(derived, fix={"m": 2**32})
    # a negative size: an extent ATL reads as empty, numpy and the C would not (it was
    # compiled in, then refused at the call by a message that named no size)
    with pytest.raises(CodegenError, match=r"fix: m=-5: a size is an extent, at least 0"):
        pipeline.check(derived, fix={"m": -5})
    assert pipeline.check(derived, fix={"m": 0}).program.sizes == ("n",)


@requires_coq
def test_derivation_without_check_safe_needs_unsafe(vfile) -> None:
    derived = pipeline.load(vfile, "rows_unsafe")
    with pytest.raises(UnsafeProgramError, match="never runs check_safe"):
        pipeline.check(derived)
    assert pipeline.check(derived, unsafe=True).unsafe


@requires_coq
def test_greater_comparisons_are_read(tmp_path, capsys) -> None:
    """`a >=? b` and `a >? b` (Z.geb, Z.gtb) are kept folded in the semantics the
    bridge prints and read as `b <=? a` and `b <? a`, shown as written; a function it
    cannot read (Z.min, unfolded into a `match`) is named in the error, with what to
    write instead."""
    v = tmp_path / "Geb.v"
    v.write_text("""From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.
Section G.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (w : Z -> S).
  Hypothesis Hw : shaped [n] w.
  Definition p := GEN [ i < n ]
    (|[ i - 1 >=? 0 ]| w _[ i - 1 ]) <+> (|[ n >? i + 1 ]| w _[ i + 1 ]).
  Derive p_v SuchThat (p = p_v) As p_v_ok.
  Proof. reschedule. check_safe. done. Qed.
  Definition q := GEN [ i < n ] |[ Z.min i 3 <? 2 ]| w _[ i ].
  Derive q_v SuchThat (q = q_v) As q_v_ok.
  Proof. reschedule. check_safe. done. Qed.
End G.
""")
    derived = pipeline.load(v, "p_v", cache=False)
    assert derived.expr == parse_program("GEN [ i < n ] (|[ 0 <=? i - 1 ]| w _[ i - 1 ]) <+> "
                                         "(|[ i + 1 <? n ]| w _[ i + 1 ])")
    # shown as written, in the text and in the report's TeX (the same test underneath)
    shown = pretty(derived.expr)
    assert "|[ i - 1 >=? 0 ]|" in shown and "|[ n >? i + 1 ]|" in shown, shown
    assert parse_program(shown) == derived.expr
    guard = derived.expr.body.left
    assert TexWriter().pred(guard.pred) == r"i - 1 \ge 0", guard
    assert main(["run", str(v), "--derivation", "p_v", "--size", "n=6", "--check"]) == 0
    assert "reference interpreter on the original program: OK" in capsys.readouterr().out
    with pytest.raises(pipeline.DerivationError, match=r"such as Z\.min.*<\? <=\? =\? >\? >=\?"):
        pipeline.load(v, "q_v", cache=False)


@requires_coq
def test_unknown_derivation_lists_the_file(vfile) -> None:
    with pytest.raises(pipeline.DerivationError, match="available: rows_copy, rows_unsafe"):
        pipeline.load(vfile, "nope")


# ---- targets ------------------------------------------------------------------------------


def test_a_program_for_another_target_names_the_ones_that_take_it() -> None:
    from verisched.pybridge.terms import Instr

    prog = gen("j", IConst(1), Instr("avx512_loadu", (Var("f"), IConst(0))))
    checked = pipeline.check(pipeline.from_ast(prog, {"f": (IConst(16),)}, prove=False),
                             unsafe=True)
    with pytest.raises(LowerError, match="avx512.*which target avx2 does not provide.*"
                                          "targets that do: avx512, avx512-openmp"):
        pipeline.lower(checked, "avx2")
    # The calls are named: Gemmini's output path is a scalar primitive, not an
    # instruction, and "instructions of gemmini" was all that was said of it.
    out = Instr("gemmini_acc_out", (IConst(1), IConst(0), IConst(0), Get(Var("f"), IVar("j"))))
    checked = pipeline.check(pipeline.from_ast(gen("j", IConst(4), out),
                                               {"f": (IConst(4),)}, prove=False), unsafe=True)
    with pytest.raises(LowerError, match=r"uses gemmini_acc_out \(of gemmini\), which "
                                         "target c does not provide"):
        pipeline.lower(checked, "c")


def test_default_target_is_c_or_the_programs_instruction_form() -> None:
    from verisched.pybridge.terms import Instr

    def default(body):
        return pipeline.default_target(gen("j", IConst(16), body)).name

    assert default(get(Var("f"), IVar("j"))) == "c"
    assert default(Instr("avx512_loadu", (Var("f"), IConst(0)))) == "avx512"
    assert default(Instr("avx2_loadu", (Var("f"), IConst(0)))) == "avx2"
    assert pipeline.default_target(gen("j", IConst(1), Instr("cuda_ld", ()))) is None


def test_unknown_target_lists_the_registry() -> None:
    with pytest.raises(LowerError, match="unknown target 'cuda' .*c, openmp, avx2"):
        pipeline.get_target("cuda")
    with pytest.raises(LowerError, match="None is neither a target's name nor a Target"):
        pipeline.get_target(None)  # type: ignore[arg-type]


def test_api_arguments_of_the_wrong_kind_are_refused_by_name(vfile, tmp_path) -> None:
    """The audit's Python API probes (decision #136): each raised AttributeError or
    TypeError, outside the documented error classes, or wrote a file and failed on the
    other; each is now a CodegenError or BridgeError naming the argument."""
    from verisched.pipeline.derive import DerivationError

    with pytest.raises(DerivationError, match="the file must be a path, not None"):
        pipeline.load(None, "rows_copy")  # type: ignore[arg-type]
    for bad in ("x", -1, 0, float("nan"), True):
        with pytest.raises(DerivationError, match="timeout must be a positive number"):
            pipeline.load(vfile, "rows_copy", timeout=bad)  # type: ignore[arg-type]
    checked = pipeline.check(pipeline.from_ast(OVERRUN, ENV, name="overrun", prove=False),
                             unsafe=True)
    with pytest.raises(LowerError, match="neither a target's name nor a Target"):
        pipeline.lower(checked, None)  # type: ignore[arg-type]
    source = pipeline.render(pipeline.lower(checked, "c"))
    c_file, h_file = source.write(str(tmp_path / "s.c"))  # a str is a path too
    assert c_file.exists() and h_file.exists()
    (tmp_path / "d.h").mkdir()
    for out, says in ((tmp_path / "none" / "x.c", "does not exist"),
                      (tmp_path, "is a directory"),
                      (tmp_path / "d.c", "d.h is a directory")):
        with pytest.raises(OutputPathError, match=says):
            source.write(out)
    assert not (tmp_path / "d.c").exists()  # both or neither


@requires_coq
def test_a_size_may_be_called_h() -> None:
    # The bridge's section names its scalar instances, so Coq's automatic H is not taken.
    from verisched.pybridge.coqterm import parse_program
    H = IVar("H")
    k = pipeline.compile_program(parse_program("GEN [ y < H ] f _[ y ] + f _[ y ]"),
                                 {"f": (H,)}, "c", name="height")
    np.testing.assert_array_equal(k({"f": np.arange(3, dtype=np.float32)}, H=3), [0, 2, 4])


def test_a_tensor_without_extents_is_named_before_coq_runs() -> None:
    with pytest.raises(pipeline.DerivationError,
                       match="program head: tensor f is read but has no entry in env"):
        pipeline.from_ast(HEAD, {}, name="head")
