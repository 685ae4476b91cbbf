"""The Python scheduling API (verisched.schedule): the DSL prints what the AST means,
argument errors come before Coq, states branch, refusals carry Coq's message, and a
compiled schedule agrees with the reference interpreter on sizes that are not
multiples of any factor."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from verisched.codegen.errors import KernelCallError, LowerError, PreconditionError
from verisched.pybridge.coqterm import loop_aliases, parse_program, pretty, with_loop_names
from verisched.pybridge.derivation import traced_program
from verisched.pybridge.errors import OutputPathError
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import Gen, walk
from verisched.schedule import (
    AnnotationRefused,
    DirectiveRefused,
    Schedule,
    ScheduleArgumentError,
    ScheduleError,
    dsl,
)
from verisched.schedule.annotations import parallel_loops, runs_loop, unroll_pragma
from verisched.schedule.dsl import DslError

n, m = dsl.sizes("n m")
A = dsl.tensor("A", n, m)
x = dsl.tensor("x", m)
f = dsl.tensor("f", n)


def matvec() -> dsl.Program:
    return dsl.program("matvec", dsl.gen("i", n, lambda i:
                                         dsl.sum("j", m, lambda j: A[i, j] * x[j])))


def stencil() -> dsl.Program:
    return dsl.program("stencil", dsl.let(
        "buf", dsl.gen("j", n, lambda j: f[j] + f[j]),
        lambda buf: dsl.gen("i", n, lambda i: dsl.guard(i >= 1, buf[i - 1]) + buf[i])))


def test_dsl_prints_coq_that_parses_back_to_the_same_program() -> None:
    for p in (matvec(), stencil()):
        assert parse_program(p.to_coq()) == p.expr
    p = matvec()
    assert p.inputs == (("A", (n.term, m.term)), ("x", (m.term,)))
    assert p.sizes == ("m", "n")


def test_dsl_refuses_what_it_cannot_build() -> None:
    with pytest.raises(DslError, match="not an identifier"):
        dsl.gen("2i", n, lambda i: f[i])
    with pytest.raises(DslError, match="guard predicate"):
        bool(n < m)
    # A positive number is a literal constant now (slit, test_literals.py); a negative
    # one, or something that is not a number, is refused.
    with pytest.raises(DslError, match="negative"):
        dsl.gen("i", n, lambda i: f[i] * -3)
    with pytest.raises(DslError, match="not a tensor expression or a number"):
        dsl.gen("i", n, lambda i: f[i] * "3")  # type: ignore[operator]
    with pytest.raises(DslError, match="does not list"):
        dsl.program("p", dsl.gen("i", n, lambda i: f[i]), inputs=[x])
    # An inner binder of the outer's name would capture its uses (A[i, i], silently).
    with pytest.raises(DslError, match="the gen binder i is bound again inside it \\(by a "
                                       "sum\\), which would capture the outer i's uses"):
        dsl.program("p", dsl.gen("i", n, lambda i: dsl.sum("i", m, lambda j: A[i, j])))
    with pytest.raises(DslError, match="x\\[...\\]: 2 indices, but x has 1 extent$"):
        dsl.gen("i", m, lambda i: x[i, i])
    siblings = dsl.let("b", dsl.gen("i", n, lambda i: f[i]), lambda b: dsl.gen("i", n,
                                                                             lambda i: b[i]))
    assert dsl.program("p", siblings).sizes == ("n",)


def test_a_size_may_be_named_h_and_the_section_names_are_reserved() -> None:
    # Coq's automatic instance names (H, H0) once made a size named H (an image height)
    # fail to declare; the section names its instances, and the DSL reserves them.
    (h,) = dsl.sizes("H")
    g = dsl.tensor("g", h)
    with Schedule.of(dsl.program("height", dsl.gen("i", h, lambda i: g[i]))) as s:
        assert "io" in s.split("i", 4, "io", "ii").text
    with pytest.raises(DslError, match="reserved"):
        dsl.program("p", dsl.gen("i", dsl.sizes("S")[0], lambda i: f[i]))


def test_names_coq_cannot_use_are_refused_by_the_dsl_not_by_coq() -> None:
    # A size named fun, a loop named for, a size Z (which hid the type Z from the later
    # declarations) or a program named as its own input used to reach Coq and come back
    # as its syntax errors; the DSL names them, as a ScheduleError.
    (n,) = dsl.sizes("n")
    f = dsl.tensor("f", n)
    cases = [
        (lambda: dsl.program("p", dsl.gen("for", n, lambda i: f[i])), "for is a word of Coq"),
        (lambda: dsl.program("p", dsl.gen("i", dsl.sizes("fun")[0], lambda i: f[i])),
         "fun is a word"),
        (lambda: dsl.program("p", dsl.gen("i", dsl.sizes("Z")[0], lambda i: f[i])),
         "Z is a word"),
        (lambda: dsl.program("flatten", dsl.gen("i", n, lambda i: f[i])), "flatten is a word"),
        (lambda: dsl.program("f", dsl.gen("i", n, lambda i: f[i])),
         "f is also the name of one of its tensors or sizes"),
    ]
    for build, why in cases:
        with pytest.raises(ScheduleError, match=f"program [a-z]+: {why}"):
            build()
    with Schedule.of(matvec()) as s, pytest.raises(ScheduleArgumentError,
                                                   match="'transpose' is a reserved word"):
        s.split("i", 4, "transpose", "ii")


@pytest.fixture(scope="module")
def mv() -> Schedule:
    s = Schedule.of(matvec())
    yield s
    s.close()


def test_argument_errors_name_the_directive_and_argument_before_coq(mv: Schedule) -> None:
    cases = [
        (lambda: mv.split("k", 4, "ko", "ki"), "split: argument loop: no loop named 'k'"),
        (lambda: mv.split("i", 0, "io", "ii"), "split: argument factor: .*positive, got 0"),
        (lambda: mv.split("i", 2**31, "io", "ii"), "split: argument factor: .*at most "
                                                   "2147483647 .*C int.*, got 2147483648"),
        (lambda: mv.split("i", -3, "io", "ii"), "positive, got -3"),
        (lambda: mv.split("i", 4, "A", "ii"), "argument outer: 'A' is an input or size"),
        (lambda: mv.split("i", 4, "io", "j"), "argument inner: 'j' already names a loop"),
        (lambda: mv.split("i", 4, "io", "io"), "argument inner: 'io' is also given"),
        (lambda: mv.split("i", 4, "io", "ii", tail="round"), "argument tail"),
        (lambda: mv.split("i", "q", "io", "ii"), "not sizes of the program"),
        (lambda: mv.split("i", "4", "io", "ii"), "split: argument factor: .*'4' is not an "),
        (lambda: mv.reorder("i"), "at least two loops"),
        (lambda: mv.name_buffer("x _[ _ ]", "A"), "argument buffer: 'A' is an input or size"),
        (lambda: mv.name_buffer(" ", "t"), "argument pattern: empty"),
        (lambda: mv.reorder("i", "j", "i", "j", "i", "j", "i"), "at most six loops, got 7"),
        (lambda: mv.inline("t"), "no buffer named 't' \\(let buffers: none\\)"),
        (lambda: mv.fuse("i", "i", "ij"), "argument inner: 'i' is also given"),
        (lambda: mv.replace("avx2 loadu"), "replace: argument instr: 'avx2 loadu' is not"),
        (lambda: mv.replace("avx2_loadu", every=True, at="_"), "replace: argument at: give"),
        (lambda: mv.stage_rows(3, "i", "buf"), "stage_rows: argument stage: 3 is not a function"),
        (lambda: mv.stage_rows(lambda r, c: 1, "i", "buf"), "argument stage: it returned 1"),
        (lambda: mv.stage_rows(lambda r, c: r, "i", "buf"), "argument stage: it returned Ix"),
        (lambda: mv.stage_rows("  ", "i", "buf"), "argument stage: empty"),
        (lambda: mv.stage_rows("(fun r c => A _[r] _[c])", "z", "buf"), "no loop named 'z'"),
        # not strings, not the right count: named here, not an AttributeError deep inside
        (lambda: mv.apply(None), "apply: argument tactic: None is not a string"),
        (lambda: mv.rw(5), "rw: argument lemma: 5 is not a string"),
        (lambda: mv.replace("avx2_loadu", at=5), "replace: argument at: 5 is not a string"),
        (lambda: mv.compile(None), "compile: argument target: None is not a string"),
        (lambda: mv.peel("i", "j", into=("a",)), r"peel: argument into: \('a',\): give 2"),
        (lambda: mv.peel("i", "j", into="ab"), "peel: argument into: 'ab': give 2 names"),
        (lambda: mv.peel("i", "j", into=("a", "b", "c")), "peel: argument into: .*give 2"),
        (lambda: Schedule.of("matvec"), "Schedule.of: argument program: 'matvec' is not a "
                                        "dsl.program"),
    ]
    before = mv.live.session.state
    for call, msg in cases:
        with pytest.raises(ScheduleArgumentError, match=msg):
            call()
    assert mv.live.session.state == before  # Coq was not asked


def test_a_refusal_carries_coqs_message_and_the_session_survives(mv: Schedule) -> None:
    with pytest.raises(DirectiveRefused) as exc:
        mv.rw("sum_split _ (m + 1)")
    assert exc.value.step == 1
    assert "rw" in exc.value.message and "unproved side condition" in exc.value.details
    # the state it was called on still works
    assert mv.rw("gen_sum_swap").program != mv.program


def test_states_branch(mv: Schedule) -> None:
    a = mv.rw("gen_sum_swap")
    b = mv.rename_loop("i", "row")
    assert a.steps[-1] == "rw gen_sum_swap." and b.steps[-1] == "rename_loop i into row."
    assert len(a.steps) == len(b.steps) == 2
    # going back to a after b: a's program is still a's
    assert a.rw("sum_gen_swap").text == mv.text


def test_apply_takes_tactics_not_commands(mv: Schedule, tmp_path: Path) -> None:
    # A command in the middle of the proof would end it (Admitted: an anomaly of Coq's),
    # abandon it (Abort: the session was left without a goal) or add an axiom; apply
    # refuses them before Coq, and the schedule goes on.
    before = mv.live.session.state
    for text in ("Admitted.", "Abort.", "Qed", "  Defined.", "Axiom c : False.",
                 "#[local] Hint Resolve I.", "Time Axiom c : False.",
                 "Timeout 5 Admitted."):
        with pytest.raises(ScheduleArgumentError, match="apply: argument tactic: .* is a "
                                                        "Coq command, not a tactic"):
            mv.apply(text)
    assert mv.live.session.state == before
    assert mv.apply("Time rw gen_sum_swap.").program == mv.rw("gen_sum_swap").program
    # An axiom a derivation uses anyway (here from its file) is named by the load.
    from verisched import pipeline

    text = mv.to_coq().replace("Proof.", "Proof.\n    assert (H := vs_cheat False).")
    text = text.replace("Derive ", "Axiom vs_cheat : forall P : Prop, P.\n  Derive ", 1)
    cheat = tmp_path / "Cheat.v"
    cheat.write_text(text)
    with pytest.raises(pipeline.DerivationError,
                       match="depends on disallowed axioms: .*vs_cheat \\(only functional"):
        pipeline.load(cheat, "matvec_scheduled")

def test_apply_refuses_a_step_that_ends_or_gives_up_the_goal(mv: Schedule) -> None:
    # admit/give_up would fail only at the final Qed; a tactic that closes or shelves
    # the goal used to be accepted, and the next step then failed at `normalize.`, a
    # step the user never wrote.  Each is refused at its own step, the schedule goes on.
    for text in ("admit.", "all: admit.", "rw gen_sum_swap; [give_up|]."):
        with pytest.raises(ScheduleArgumentError,
                           match=r"apply: argument tactic: '(admit|give_up)' leaves a goal "
                                 "unproved"):
            mv.apply(text)
    for text in ("shelve.", "exact eq_refl."):
        with pytest.raises(ScheduleArgumentError, match="leaves no program to schedule"):
            mv.apply(text)
    # several sentences (a bullet is one) are the argument's fault, not the bridge's
    for text in ("- rw gen_sum_swap.", "idtac. idtac.", 'idtac "'):
        with pytest.raises(ScheduleArgumentError, match="apply: argument tactic: "):
            mv.apply(text)
    assert mv.rw("gen_sum_swap").split("i", 4, "io", "ii").program is not None



def test_to_coq_is_a_standalone_file_coqc_accepts(mv: Schedule, tmp_path: Path) -> None:
    s = mv.rename_loop("i", "row")
    path = s.save(tmp_path / "mv.v")
    text = path.read_text()
    assert "rename_loop i into row." in text and text.rstrip().endswith("End matvec_schedule.")
    plain = tmp_path / "plain.txt"  # the mode a plain open() gives, not mkstemp's 0600
    plain.write_text("")
    assert path.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777
    for bad, why in ((tmp_path, "is a directory"), (tmp_path / "no" / "mv.v", "does not exist")):
        with pytest.raises(OutputPathError, match=why):
            s.save(bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mv.v", "plain.txt"]  # no temp file
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.run(["coqc", "-Q", str(repo / "coq"), "Verisched", str(path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_compiled_schedule_matches_the_interpreter() -> None:
    p = stencil()
    with Schedule.of(p) as s:
        k = s.inline("buf").compile("c")
    rng = np.random.default_rng(3)
    for size in (1, 7, 37):
        fv = rng.standard_normal(size).astype(np.float32)
        want = evaluate(p.expr, {"f": fv.astype(np.float64)}, {"n": size}, np.float64)
        np.testing.assert_allclose(k({"f": fv}, n=size), want, rtol=1e-5, atol=1e-5)


def test_a_schedule_compiles_in_double_precision() -> None:
    p = stencil()
    with Schedule.of(p) as s:
        s = s.inline("buf")
        k = s.compile("openmp", dtype="float64")
        kv = s.compile("avx2", dtype="float64")   # no instructions: scalar C in doubles
        with pytest.raises(LowerError, match="target avx2: element type int32 is not "
                                             "supported"):
            s.compile("avx2", dtype="int32")
    rng = np.random.default_rng(4)
    for size in (1, 7, 37):
        fv = rng.standard_normal(size)
        want = evaluate(p.expr, {"f": fv}, {"n": size}, np.float64)
        got = k({"f": fv}, n=size)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(kv({"f": fv}, n=size), want, rtol=1e-13, atol=1e-13)
    with pytest.raises(KernelCallError, match="has dtype float32, expected float64"):
        k({"f": fv.astype(np.float32)}, n=size)


def test_compile_requires_proved_bounds() -> None:
    # An access out of bounds: check_safe cannot prove it, so there is no kernel.
    p = dsl.program("oob", dsl.gen("i", n, lambda i: f[i + 1]))
    with Schedule.of(p) as s, pytest.raises(DirectiveRefused, match="check_safe"):
        s.compile("c")


def test_parallel_is_refused_on_a_reduction_and_honoured_or_refused_by_the_lowering(
        mv: Schedule) -> None:
    with pytest.raises(AnnotationRefused, match="parallel j: loop j is a reduction"):
        mv.parallel("j")
    with pytest.raises(AnnotationRefused, match="target c runs serially"):
        mv.parallel("i").compile("c")
    # i under the sum after the swap: the OpenMP rules do not run it in parallel.
    with pytest.raises(AnnotationRefused, match="does not run loop i in parallel"):
        mv.rw("gen_sum_swap").parallel("i").compile("openmp")
    k = mv.parallel("i").compile("openmp")
    assert parallel_loops("#pragma omp parallel for schedule(static)\n  for (int i_1 = 0;") \
        == {"i_1"}
    # i_1 is the lowering's fresh copy of i; a user's own row_1 is row_1, not a copy of
    # row (the suffix was stripped from every name, refusing parallel("row_1")).
    assert runs_loop("i_1", "i") and runs_loop("i", "i") and runs_loop("int__2", "int")
    assert runs_loop("row_1", "row_1") and not runs_loop("row_1", "ro")
    assert not runs_loop("ii", "i") and not runs_loop("i_x", "i")
    p = dsl.program("twice", dsl.gen("row_1", n, lambda i: f[i] + f[i]))
    with Schedule.of(p) as s:
        k1 = s.parallel("row_1").compile("openmp")
        fv = np.arange(7, dtype=np.float32)
        np.testing.assert_allclose(k1({"f": fv}, n=7), 2 * fv)
    # ... and a user's row_1 is never taken for a copy of the user's row: with row_1
    # outside and row inside, only row_1 runs in parallel.
    q = dsl.program("nest", dsl.gen("row_1", n, lambda i: dsl.gen("row", m, lambda j:
                                                                   A[i, j])))
    with Schedule.of(q) as s:
        with pytest.raises(AnnotationRefused, match="does not run loop row in parallel"):
            s.parallel("row").compile("openmp")
        assert s.parallel("row_1").compile("openmp") is not None
    assert runs_loop("row_1", "row", frozenset({"row", "row_1"})) is False
    assert runs_loop("row_1", "row", frozenset({"row"}))
    a = np.random.default_rng(0).standard_normal((13, 5)).astype(np.float32)
    v = np.random.default_rng(1).standard_normal(5).astype(np.float32)
    np.testing.assert_allclose(k({"A": a, "x": v}, n=13, m=5), a @ v, rtol=1e-5, atol=1e-5)


def test_a_bound_schedule_ends_with_the_with_block() -> None:
    """bound() restates the derivation in a Coq session of its own; the `with` block
    that opened the schedule closes it too (its coqtop ran until the interpreter
    exited), so the branch stops working as every state of the schedule does."""
    p = dsl.program("peel2", dsl.gen("i", n, lambda i: f[i] + f[i]))
    with Schedule.of(p) as s:
        b = s.bound(n >= 2)
        b.rw("gen_peel _ (n - 1) (n - 2)")          # works inside
        c = b.bound(n >= 3)                         # a branch of the branch
    for x in (b, c):
        with pytest.raises(ScheduleError, match="the `with` block ended"):
            x.rw("gen_peel _ (n - 1) (n - 2)")


def test_bound_becomes_a_hypothesis_and_a_precondition() -> None:
    p = dsl.program("peel", dsl.gen("i", n, lambda i: f[i] + f[i]))
    with Schedule.of(p) as s:
        with pytest.raises(DirectiveRefused, match="unproved|no site"):
            s.rw("gen_peel _ (n - 1) (n - 2)")
        with pytest.raises(ScheduleArgumentError, match="q is not a size"):
            s.bound(dsl.ix("q") >= 2)
        b = s.bound(n >= 2)
        peeled = b.rw("gen_peel _ (n - 1) (n - 2)")
        assert "Hypothesis Hsize0 : (2 <= n)." in peeled.to_coq()
        k = peeled.compile("c")
        b.close()
    fv = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(k({"f": fv}, n=5), 2 * fv)
    with pytest.raises(PreconditionError, match="2 <= n"):
        k({"f": fv[:1]}, n=1)


# ---- one refusal per directive: the message names the directive and the condition ----


def _refused(s: Schedule, call: str, *args: object) -> str:
    with pytest.raises(DirectiveRefused) as exc:
        getattr(s, call)(*args)
    assert exc.value.message.startswith(("Tactic failure: " + call, call)), exc.value.message
    return exc.value.message


def test_reorder_of_a_triangular_nest_is_refused() -> None:
    tri = dsl.program("tri", dsl.gen("i", n, lambda i: dsl.sum("j", i, lambda j: f[j])))
    with Schedule.of(tri) as s:
        msg = _refused(s, "reorder", "j", "i")
    assert "bounds of loop j depend on loop i (triangular nest)" in msg


def test_reorder_after_tile_names_the_whole_nest() -> None:
    """Halide's habit, `tile(...).reorder(...)` naming every loop: the tile's outer
    loops stay (a transpose between them), the depth moves out of `ji`, and the kernel
    is a matrix product at sizes no multiple of either factor; moving `io` inside `jo`
    across that transpose is refused with the reason."""
    k = dsl.sizes("k")[0]
    a, b = dsl.tensor("a", n, k), dsl.tensor("b", k, m)
    mm = dsl.program("mm", dsl.gen("i", n, lambda i: dsl.gen("j", m, lambda j: dsl.sum(
        "kk", k, lambda kk: a[i, kk] * b[kk, j]))), inputs=[a, b])
    with Schedule.of(mm) as s:
        t = s.tile("i", "j", 4, 8, "io", "jo", "ii", "ji")
        r = t.reorder("io", "jo", "ii", "kk", "ji")
        assert "SUM [ kk < k ] GEN [ ji < 8 ]" in r.text, r.text
        msg = _refused(t, "reorder", "jo", "io", "ii", "kk", "ji")
        assert "loop io is not inside loop jo" in msg and "transpose" in msg, msg
        kernel = r.compile("c")
    rng = np.random.default_rng(5)
    for sn, sm, sk in ((1, 1, 1), (5, 9, 3), (13, 17, 7)):
        av = rng.standard_normal((sn, sk)).astype(np.float32)
        bv = rng.standard_normal((sk, sm)).astype(np.float32)
        np.testing.assert_allclose(kernel({"a": av, "b": bv}, n=sn, m=sm, k=sk), av @ bv,
                                   rtol=1e-5, atol=1e-5)


def test_split_split_reorder_is_the_tile() -> None:
    """Halide's tile written by hand, `split(y).split(x).reorder(xi, yi, xo, yo)`: the
    tile's loop order and layout, and with its row blocks parallel, a 3-point row
    stencil against numpy at sizes no multiple of either factor."""
    h, w = dsl.sizes("h w")
    src = dsl.tensor("src", h, w + 2)
    bx = dsl.program("bx", dsl.gen("y", h, lambda y: dsl.gen("x", w, lambda x:
                     src[y, x] + src[y, x + 1] + src[y, x + 2])), inputs=[src])
    with Schedule.of(bx) as s:
        r = s.split("y", 4, "yo", "yi").split("x", 16, "xo", "xi").reorder("yo", "xo", "yi", "xi")
        order = [r.text.find(f"GEN [ {x} < ") for x in ("yo", "xo", "yi", "xi")]
        assert -1 not in order and order == sorted(order), r.text
        assert r.text.count("transpose") == 2, r.text   # the tile's layout, as `tile`'s
        kernel = r.parallel("yo").compile("openmp")
    rng = np.random.default_rng(7)
    for sh, sw in ((1, 1), (5, 17), (9, 33)):
        a = rng.standard_normal((sh, sw + 2)).astype(np.float32)
        np.testing.assert_allclose(kernel({"src": a}, h=sh, w=sw),
                                   a[:, :-2] + a[:, 1:-1] + a[:, 2:], rtol=1e-5, atol=1e-5)


def test_column_strips_of_an_interior() -> None:
    """`split j; reorder jo i ji` over loops from 1 (an interior, as `peel` leaves it):
    the split's reshape moves out over `GENR [ 1 <= i < n ]`, and with the strips
    parallel the kernel is the stencil at sizes no multiple of the factor."""
    v = dsl.tensor("v", n, m)
    g = dsl.program("g33", dsl.gen("i", n, lambda i: dsl.gen(
        "j", m, lambda j: v[i, j] + v[i - 1, j - 1], lo=1), lo=1), inputs=[v])
    with Schedule.of(g) as s:
        r = s.split("j", 8, "jo", "ji").reorder("jo", "i", "ji")
        assert r.text.find("GEN [ jo < ") < r.text.find("GENR [ 1 <= i < n ]"), r.text
        kernel = r.parallel("jo").compile("openmp")
    for a, b in ((2, 2), (5, 17), (9, 33)):
        x = np.random.default_rng(a * b).standard_normal((a, b)).astype(np.float32)
        np.testing.assert_allclose(kernel({"v": x}, n=a, m=b), x[1:, 1:] + x[:-1, :-1],
                                   rtol=1e-5, atol=1e-5)


def test_split_by_a_factor_not_provably_positive_is_refused(mv: Schedule) -> None:
    # 0 is caught in Python (above); a size is Coq's to judge: m may be 0.
    msg = _refused(mv, "split", "i", "m", "io", "ii")
    assert "factor" in msg and "not provably positive" in msg and "loop i" in msg


def test_fuse_of_a_generation_with_a_reduction_is_refused(mv: Schedule) -> None:
    msg = _refused(mv, "fuse", "i", "j", "ij")
    assert "loop i is a generation and loop j a reduction" in msg


def test_compute_at_where_the_region_is_not_available_is_refused() -> None:
    with Schedule.of(stencil()) as s:
        msg = _refused(s, "compute_at", "buf", "j")
    assert "region of buf is not available at loop j" in msg


def test_compute_at_a_split_tile_loop_computes_the_tiles_window() -> None:
    # Halide's split + compute_at at the tile loop: the producer over the tile's window
    # (one element wider on the left: buf[i - 1]), reads made window-relative
    p = stencil()
    with Schedule.of(p) as s:
        t = s.split("i", 4, "io", "ii").compute_at("buf", "io")
        assert "GEN [ j < 5 ]" in t.text and "buf _[ii + 1]" in t.text
        k = t.compile("c")
    rng = np.random.default_rng(5)
    for size in (1, 7, 37):
        fv = rng.standard_normal(size).astype(np.float32)
        want = evaluate(p.expr, {"f": fv.astype(np.float64)}, {"n": size}, np.float64)
        np.testing.assert_allclose(k({"f": fv}, n=size), want, rtol=1e-5, atol=1e-5)


def test_compute_at_where_the_region_cannot_be_inferred_names_both_forms() -> None:
    strided = dsl.program("strided", dsl.let(
        "buf", dsl.gen("j", n, lambda j: f[j] + f[j]),
        lambda buf: dsl.gen("i", n, lambda i: dsl.guard(i * 2 < n, buf[i * 2]))))
    with Schedule.of(strided) as s:
        msg = _refused(s, "compute_at", "buf", "i")
    assert "cannot infer the region of buf" in msg
    assert "loop index plus a constant" in msg and "i * k + ii plus a constant" in msg


def test_vectorize_of_a_body_that_is_not_lane_wise_is_refused() -> None:
    strided = dsl.program("strided", dsl.gen("i", n, lambda i: A[i, i * 2]))
    with Schedule.of(strided) as s:
        msg = _refused(s, "vectorize", "i", "avx2")
    assert "not lane-wise" in msg


def test_split_shift_is_refused_where_it_would_write_twice(mv: Schedule) -> None:
    with pytest.raises(DirectiveRefused, match="shift refused for loop i"):
        mv.split("i", 4, "io", "ii", tail="shift")


def test_stage_and_peel_from_python() -> None:
    with Schedule.of(matvec()) as s:
        with pytest.raises(ScheduleArgumentError, match="no input or let buffer named 'B' "
                                                        r"\(inputs: A, x; let buffers: none\)"):
            s.stage("B", "i", "Bp")
        st = s.split("j", 4, "jo", "ji").stage("x", "jo", "xp")
        assert "tlet xp" in st.text
        k = st.compile("c")
    a = np.random.default_rng(5).standard_normal((6, 11)).astype(np.float32)
    v = np.random.default_rng(6).standard_normal(11).astype(np.float32)
    np.testing.assert_allclose(k({"A": a, "x": v}, n=6, m=11), a.astype(np.float64) @ v,
                               rtol=1e-4, atol=1e-4)
    with Schedule.of(dsl.program("p", dsl.gen("i", n, lambda i: f[i] + f[i]))) as s:
        with pytest.raises(DirectiveRefused, match="peel: the extent of loop i is not provably"):
            s.peel("i")
        assert "concat" in s.bound(n >= 2).peel("i").text


def test_stage_of_a_let_buffer_is_stage_let() -> None:
    """An intermediate result is staged as an input is (decision #155): its row packed
    inside the consumer's loop, the kernel the interpreter's."""
    twice = dsl.program("twice", dsl.let(
        "P", dsl.gen("r", n, lambda r: dsl.gen("c", m, lambda c: A[r, c] + A[r, c])),
        lambda P: dsl.gen("i", n, lambda i: dsl.sum("j", m, lambda j: P[i, j] * x[j]))))
    with Schedule.of(twice) as s:
        st = s.stage("P", "i", "Pr")
        assert st.steps[-1] == "stage_let P at i as Pr."
        assert "tlet Pr" in st.text
        k = st.compile("c")
    rng = np.random.default_rng(8)
    a, v = rng.standard_normal((5, 9)), rng.standard_normal(9)
    got = k({"A": a.astype(np.float32), "x": v.astype(np.float32)}, n=5, m=9)
    np.testing.assert_allclose(got, 2 * a @ v, rtol=1e-4, atol=1e-4)


def test_peel_into_then_tile_partition_finds_the_interior_of_a_nest_named_i_j() -> None:
    """peel i j into pi pj leaves the border rows' column loops eta-reduced; re-expanded
    under i, their binder is named i as well, and a loop-name check that accepted any
    variable in scope made tile pi pj stop there ("loop pj is not directly inside loop
    pi").  The interior is found, and the tiled kernel computes the stencil on sizes
    that are not multiples of the tile."""
    p = dsl.program("bl2", dsl.gen("i", n, lambda i: dsl.gen("j", m, lambda j:
                    dsl.guard((i >= 1) & (j >= 1), A[i - 1, j - 1]) + A[i, j])))
    with Schedule.of(p) as s:
        t = s.bound(n >= 2).bound(m >= 2).peel("i", "j", into=("pi", "pj"))
        t = t.tile("pi", "pj", 4, 8, "io", "jo", "ii", "ji", partition=True)
        k = t.compile("c")
    for rows, cols in ((2, 2), (7, 13), (10, 18)):
        a = np.random.default_rng(rows).standard_normal((rows, cols)).astype(np.float32)
        want = a.astype(np.float64).copy()
        want[1:, 1:] += a[:-1, :-1]
        np.testing.assert_allclose(k({"A": a}, n=rows, m=cols), want, rtol=1e-5, atol=1e-5)


def test_annotations_follow_rename_loop_and_a_replaced_loop_is_named(mv: Schedule) -> None:
    """An annotation names a loop: rename_loop carries it to the new name (compile had
    refused parallel i, "the openmp lowering does not run loop i in parallel", on the
    loop it ran in parallel as row); a later split replaces the loop, and compile says
    so, where it had blamed the lowering ("emitted no C loop over i")."""
    t = mv.parallel("i").unroll("j", 4).rename_loop("i", "row")
    assert t.annotations == (("parallel", "row"), ("unroll", "j", 4))
    a = np.random.default_rng(2).standard_normal((9, 5)).astype(np.float32)
    v = np.random.default_rng(3).standard_normal(5).astype(np.float32)
    np.testing.assert_allclose(t.compile("openmp")({"A": a, "x": v}, n=9, m=5), a @ v,
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(AnnotationRefused, match=r"unroll i: the program has no loop i any "
                       r"more: a step after this annotation split.*\(ii, io, j\)"):
        mv.unroll("i", 4).split("i", 4, "io", "ii").compile("c")


def test_a_split_operand_of_a_tensor_sum_compiles_with_its_loops() -> None:
    """`GEN i f <+> GEN j g*g` with i split: the lowering stores the left operand (the
    split's loops) and accumulates the right one, where the normal form had asked for
    tadd_expand, whose accesses into the split it could not lower (NotNormalError)."""
    p = dsl.program("addp", dsl.gen("i", n, lambda i: f[i])
                    + dsl.gen("j", n, lambda j: f[j] * f[j]))
    fv = np.random.default_rng(4).standard_normal(13).astype(np.float32)
    with Schedule.of(p) as s:
        for tail in ("guard", "peel"):
            t = s.split("i", 4, "io", "ii", tail=tail)
            assert "normalize." not in t.finished_steps()
            k = t.compile("openmp")
            for size in (1, 4, 13):
                np.testing.assert_allclose(k({"f": fv[:size]}, n=size),
                                           fv[:size] + fv[:size] ** 2, rtol=1e-6)


def test_unroll_places_a_pragma_before_the_loop_and_keeps_the_result(mv: Schedule) -> None:
    c = "  for (int j = 0; j < m; ++j) {\n    for (int j_1 = 0; j_1 < 2; ++j_1) {"
    out = unroll_pragma(c, "j", 4)
    assert out.count("#pragma GCC unroll 4") == 2
    assert out.splitlines()[0] == "  #pragma GCC unroll 4"
    with pytest.raises(AnnotationRefused, match="no C loop over q"):
        unroll_pragma(c, "q", 4)
    with pytest.raises(ScheduleArgumentError, match="factor"):
        mv.unroll("j", 1)
    k = mv.unroll("j", 4).compile("c")
    a = np.random.default_rng(7).standard_normal((5, 9)).astype(np.float32)
    v = np.random.default_rng(8).standard_normal(9).astype(np.float32)
    np.testing.assert_allclose(k({"A": a, "x": v}, n=5, m=9), a.astype(np.float64) @ v,
                               rtol=1e-4, atol=1e-4)


def test_unroll_takes_a_collapsed_loop_out_of_the_collapse(mv: Schedule) -> None:
    # The openmp target collapses a tile loop pair; a pragma between collapsed loops is
    # a GCC error ("not enough perfectly nested loops"), found by the tuner.
    c = ("  #pragma omp parallel for schedule(static) collapse(2)\n"
         "  for (int io = 0; io < n; ++io) {\n"
         "    for (int ii = 0; ii < 64; ++ii) {\n"
         "      for (int j = 0; j < 2; ++j) {")
    out = unroll_pragma(c, "ii", 4).splitlines()
    assert out[0] == "  #pragma omp parallel for schedule(static)"
    assert out[2] == "    #pragma GCC unroll 4" and out[3].startswith("    for (int ii")
    c3 = c.replace("collapse(2)", "collapse(3)")
    assert "collapse(2)" in unroll_pragma(c3, "j", 4).splitlines()[0]
    after = c.replace("      for (int j", "      x = 1;\n      for (int j")
    assert "collapse(2)" in unroll_pragma(after, "j", 4).splitlines()[0]
    with pytest.raises(AnnotationRefused, match="runs io as the parallel loop"):
        unroll_pragma(c, "io", 4)
    n, = dsl.sizes("n")
    f = dsl.tensor("f", n)
    p = dsl.program("pipe", dsl.let("buf", dsl.gen("j", n, lambda j: f[j]), lambda buf:
                    dsl.gen("i", n, lambda i: dsl.guard(i - 1 >= 0, buf[i - 1]) + buf[i])))
    with Schedule.of(p) as s:
        t = s.compute_at("buf", "i").simpl_guard().split("i", 64, "io", "ii")
        k = t.unroll("ii", 4).compile("openmp")
    x = np.random.default_rng(9).standard_normal(131).astype(np.float32)
    want = x + np.concatenate([[0.0], x[:-1]])
    np.testing.assert_allclose(k({"f": x}), want, rtol=1e-6, atol=1e-6)


def test_microkernel_directives_check_arguments_and_carry_coqs_refusals(mv: Schedule) -> None:
    cases = [
        (lambda: mv.fission("k"), "fission: argument loop: no loop named 'k'"),
        (lambda: mv.register_tile("i", "i", 6, 16, "avx2", into=("a", "b", "c", "d", "e"),
                                  buffer="t"), "argument j: 'i' is also given"),
        (lambda: mv.register_tile("i", "j", 6, 0, "avx2", into=("a", "b", "c", "d", "e"),
                                  buffer="t"), "argument nr: 0 is not a positive int"),
        (lambda: mv.register_tile("i", "j", 6, 16, "sse", into=("a", "b", "c", "d", "e"),
                                  buffer="t"), "argument isa: 'sse'"),
        (lambda: mv.register_tile("i", "j", 6, 16, "avx2", into=("a", "b", "c", "d"),
                                  buffer="t"), "give 5 names"),
        (lambda: mv.register_tile("i", "j", 6, 16, "avx2", into=("a", "b", "c", "d", "lanes"),
                                  buffer="t"), "'lanes' is a reserved word"),
        (lambda: mv.register_tile("i", "j", 6, 16, "avx2", into=("a", "b", "c", "d", "e"),
                                  buffer="t", rows="peel"),
         "argument rows: 'peel' is not 'exact' or 'guard'"),
        (lambda: mv.select_instr("t"), "select_instr: argument buffer: no buffer named 't'"),
    ]
    before = mv.live.session.state
    for call, msg in cases:
        with pytest.raises(ScheduleArgumentError, match=msg):
            call()
    assert mv.live.session.state == before  # Coq was not asked
    # Coq's refusals: matvec's body has no <+>; its nest is a generation over a sum,
    # not a generation over a generation
    with pytest.raises(DirectiveRefused, match="fission: the body of loop i is not"):
        mv.fission("i")
    with pytest.raises(DirectiveRefused, match="register_tile: the program has no generation"):
        mv.register_tile("i", "j", 6, 16, "avx2", into=("im", "ir", "jm", "jv", "l"),
                         buffer="t")


def test_replace_is_exos_replace_checked_by_coq() -> None:
    n = dsl.sizes("n")[0]
    f = dsl.tensor("f", n * 8)
    prog = dsl.program("rows", dsl.gen("io", n, lambda io: dsl.gen(
        "l", 8, lambda l: f[8 * io + l])), inputs=[f])  # noqa: E741
    with Schedule.of(prog) as s:
        with pytest.raises(DirectiveRefused) as exc:
            s.replace("avx2_maskstore")
        assert "use_instr" in exc.value.message
        r = s.replace("avx2_loadu")
        assert "avx2_loadu" in r.text and r.steps[-1] == "use_instr avx2_loadu."
        assert "avx2_loadu" in s.replace("avx2_loadu", every=True).text


def test_select_instr_names_an_isa_other_than_the_tiles() -> None:
    """A tile built with AVX2's 8 lanes, selected in AVX-512: refused by its cause, before
    Coq (whose refusal spoke of lanes not stored as one masked vector)."""
    import runpy

    ex = runpy.run_path(str(Path(__file__).resolve().parents[1] / "examples" / "sgemm_avx2.py"))
    mcr, kc = dsl.sizes("mcr kc")
    with Schedule.of(ex["sgemm"]) as s:
        t = (s.split("i", mcr * 6, "io", "ii").fission("ii").split("k", kc, "ko", "kk")
              .reorder("ko", "ii", "j")
              .register_tile("ii", "j", 6, 16, "avx2", into=("im", "ir", "jm", "jv", "l"),
                             buffer="t"))
        with pytest.raises(ScheduleArgumentError, match="select_instr: argument isa: avx512 "
                           "has 16 lanes, but register_tile built t with 8: give both the "
                           "same isa"):
            t.select_instr("t", "avx512")


def test_a_loop_whose_body_does_not_use_its_index_keeps_its_name() -> None:
    """A row broadcast `GEN i GEN j x[j]`: Coq prints loop i as `GEN [ _ < n ]`, and the
    program read `_`, so `split i` said there was no loop named i (and Coq's directives
    skipped such loops).  The bridge puts the name back (Bridge/Print.v); the directives,
    the annotations, the trace and the C see loop i."""
    p = dsl.program("bcast", dsl.gen("i", n, lambda i: dsl.gen("j", m, lambda j: x[j] * x[j])))
    with Schedule.of(p) as s:
        assert "GEN [ _ < n ]" in " ".join(s.text.split())     # Coq's own printing
        assert s.program == p.expr
        t = s.split("i", 4, "io", "ii").parallel("io")
        k = t.compile("openmp")
        trace = t.live.derivation.trace()
    step = next(st for st in trace["steps"] if st["tactic"].startswith("split"))
    assert step["before"]["loop_names"] == ["i", "j"]
    assert step["after"]["loop_names"] == ["io", "ii", "j"]
    assert traced_program(step["before"]) == p.expr
    xv = np.random.default_rng(5).standard_normal(5).astype(np.float32)
    for size in (1, 7, 9):
        want = evaluate(p.expr, {"x": xv.astype(np.float64)}, {"n": size, "m": 5}, np.float64)
        np.testing.assert_allclose(k({"x": xv}, n=size, m=5), want, rtol=1e-6)


def test_loop_names_are_put_back_only_where_they_fit() -> None:
    """`with_loop_names` renames the `_` loops from every loop's held name, in pre-order;
    a count that differs leaves the term as it is, and a name free in the loop's body
    stays out (it would capture)."""
    e = parse_program("GEN [ _ < n ] SUM [ _ < m ] GEN [ j < m ] x _[ j ]")
    assert pretty(with_loop_names(e, ["i", "k", "j"])) == pretty(
        parse_program("GEN [ i < n ] SUM [ k < m ] GEN [ j < m ] x _[ j ]"))
    assert with_loop_names(e, ["i", "k"]) is e
    e2 = parse_program("GEN [ _ < n ] x _[ j ]")
    assert with_loop_names(e2, ["j"]) == e2
    e3 = parse_program("GEN [ i < n ] GEN [ i0 < m ] GEN [ n0 < m ] x _[ i ] _[ i0 ] _[ n0 ]")
    assert loop_aliases(e3, ["i", "i", "n"]) == {"i0": ("i", False), "n0": ("n", True)}
    assert loop_aliases(e3, ["i", "i0", "n0"]) == {}


def test_a_loop_coq_prints_under_another_name_is_found_or_refused_saying_why() -> None:
    """Coq prints a second loop named i as i0, while a directive matches the name the
    binder holds: `split i0` went to Coq and came back "no loop named i0".  Where the
    held name finds another loop first, the refusal now says so and what to do (where
    it finds this one, the directive uses it: `loop_aliases` marks it first)."""
    p = dsl.program("rows2", dsl.gen("i", n, lambda i: dsl.gen("j", m, lambda j: x[j])))
    with Schedule.of(p) as s:
        t = s.apply("rename_loop j into i.")   # held names i, i: printed _ and i0
        assert [g.var for g in walk(t.program) if isinstance(g, Gen)] == ["i", "i0"]
        with pytest.raises(ScheduleArgumentError, match=r"split: argument loop: loop 'i0' "
                           r"is a second loop named 'i'.*rename that one first"):
            t.split("i0", 4, "io", "ii")
        u = t.rename_loop("i", "r")            # the first i: the other prints as i again
        v = u.split("i", 4, "io", "ii")
        assert [g.var for g in walk(v.program) if isinstance(g, Gen)] == ["r", "io", "ii"]
        k = v.compile("c")
    xv = np.random.default_rng(7).standard_normal(6).astype(np.float32)
    np.testing.assert_allclose(k({"x": xv}, n=3, m=6), np.tile(xv, (3, 1)), rtol=1e-6)


def test_three_loops_two_printed_names_and_annotations_on_shadowed_loops() -> None:
    """Held names i, i, i0 print as i, i0, i1: the printed i0 is the second loop
    named i, though a third loop holds i0, and went to Coq as it was, which split the
    third; it is refused now, and i1 finds the third by its held name.  An annotation
    on a loop whose printing depends on another's is refused: a later rename moved it
    onto the other (the C's pragma on the wrong loop, or a parallel loop refused)."""
    A2 = dsl.tensor("A", n, m)
    p = dsl.program("three", dsl.gen("i", n, lambda i: dsl.gen(
        "j", m, lambda j: dsl.gen("q", m, lambda q: A2[i, j] * A2[i, q]))))
    with Schedule.of(p) as s:
        u = s.apply("rename_loop q into i0.").apply("rename_loop j into i.")
        assert [g.var for g in walk(u.program) if isinstance(g, Gen)] == ["i", "i0", "i1"]
        with pytest.raises(ScheduleArgumentError, match="'i0' is a second loop named 'i'"):
            u.split("i0", 4, "io", "ii")
        for ann in (lambda: u.parallel("i"), lambda: u.unroll("i0", 4)):
            with pytest.raises(ScheduleArgumentError, match="rename one of them first"):
                ann()
        v = u.split("i1", 4, "qo", "qi")       # held i0: the third loop
        assert [g.var for g in walk(v.program) if isinstance(g, Gen)] == \
            ["i", "i0", "qo", "qi"]
        w = u.rename_loop("i", "r").parallel("r").unroll("i", 2)
        assert w.annotations == (("parallel", "r"), ("unroll", "i", 2))
        k = w.compile("openmp")
    a = np.random.default_rng(8).standard_normal((5, 6)).astype(np.float32)
    np.testing.assert_allclose(k({"A": a}, n=5, m=6), a[:, :, None] * a[:, None, :],
                               rtol=1e-5)

