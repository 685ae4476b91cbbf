"""Equality saturation for BLAS idioms, certified by Coq (verisched.search, issue 14).

- every rule names Coq lemmas that exist, used in the direction the rule rewrites
  (the head of the side it rewrites from), and directives that exist;
- every BLAS template is Coq's own definition (coq/Targets/Blas.v);
- every kernel of examples/search/liar_blas.v is found with idioms, its certificate
  is replayed by Coq (a refused step fails the test), and the found program
  evaluates equal to the original with the reference interpreter on random inputs
  (sizes that are no multiple of anything);
- a search past its node budget stops cleanly with its best program, certified;
- user mistakes get a message, not a traceback;
- the stencils get LIAR's latent idioms (a gemv over the window, the weights filled;
  stencil2d a gemv per row over a gather view), vsum a dot with a vector of ones,
  and `--idioms avx2` finds our AVX2 instructions in lane-wise kernels, certified,
  compiled for the avx2 target and equal to the interpreter (test_search_avx2.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import requires_coq

import verisched.targets.blas  # noqa: F401 - registers the specs
from verisched.pybridge.instr_coq import parse_coq_print
from verisched.pybridge.instrs import registered, same_spec
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import IBin, IConst, IVar, PCmp, eval_idx
from verisched.search import KernelFileError, load_program, saturate, search
from verisched.search.latent import LANE_RULES, LATENT_RULES
from verisched.search.rules import ALL_RULES, RULES

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "examples" / "search" / "liar_blas.v"
SIZES = {"n": 7, "m": 5, "ni": 6, "nj": 5, "nk": 7, "nl": 3, "nr": 3, "nq": 4, "np": 5}


def _statement(coq: object, name: str) -> str:
    coq.run("Unset Printing Notations.")  # type: ignore[attr-defined]
    try:
        r = coq.run(f"Check {name}.")  # type: ignore[attr-defined]
    finally:
        coq.run("Set Printing Notations.")  # type: ignore[attr-defined]
    assert r.ok, f"lemma {name} does not exist: {r.output}"
    return " ".join(r.output.split()).split(" where ")[0]


def _groups(text: str) -> list[str]:
    """The top-level space-separated parts of `text` (parenthesised groups whole)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == " " and depth == 0:
            if cur:
                out.append(cur)
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    return out + ([cur] if cur else [])


def _sides(stmt: str) -> tuple[str, str]:
    """The two sides of `name : forall ..., eq (l) (r)` (printed without notations)."""
    body = stmt.split(":", 1)[1].strip()
    while body.startswith("forall"):
        depth = 0
        for k, ch in enumerate(body):
            depth += (ch == "(") - (ch == ")")
            if ch == "," and depth == 0:
                body = body[k + 1:].strip()
                break
    parts = _groups(body)
    assert parts and parts[0] in ("eq", "@eq"), f"not an equation: {stmt}"
    return parts[-2], parts[-1]


@requires_coq
def test_rules_name_existing_lemmas_in_their_direction(coq: object) -> None:
    for rule in (*ALL_RULES, *LATENT_RULES, *LANE_RULES):
        assert rule.lemmas or rule.directives, f"rule {rule.name} names no lemma or directive"
        for use in rule.lemmas:
            stmt = _statement(coq, use.name)
            lhs, rhs = _sides(stmt)
            side = lhs if use.forward else rhs
            way = "left to right" if use.forward else "right to left"
            assert side.lstrip("(@").split()[0] == use.lhs_head, (
                f"rule {rule.name}: {use.name} used {way} should rewrite from a "
                f"{use.lhs_head} term: {stmt}")
        for probe in rule.directives:
            assert _directive_exists(coq, probe), (
                f"directive {probe} of rule {rule.name} is unknown")
    assert not _directive_exists(coq, "no_such_directive at (_)")


def _directive_exists(coq: object, name: str) -> bool:
    """A tactic notation that parses (Fail catches its failure on `True`, not a
    parse error)."""
    assert coq.run("Goal True.").ok  # type: ignore[attr-defined]
    try:
        return bool(coq.run(f"Fail {name}.").ok)  # type: ignore[attr-defined]
    finally:
        coq.run("Abort.")  # type: ignore[attr-defined]


@requires_coq
def test_blas_templates_are_coqs_definitions(coq: object) -> None:
    specs = [s for s in registered().values() if s.family == "blas"]
    assert len(specs) >= 10
    for spec in specs:
        printed = coq.run(f"Print {spec.name}.")  # type: ignore[attr-defined]
        assert printed.ok, printed.output
        params, body = parse_coq_print(printed.output)
        assert same_spec(spec, params, body) is None, same_spec(spec, params, body)
        assert coq.run(f"Check (_ : AtlInstr (@{spec.name})).").ok  # type: ignore[attr-defined]


def _inputs(program: object, rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = {}
    for name, shape in program.inputs:  # type: ignore[attr-defined]
        dims = tuple(eval_idx(d, SIZES) for d in shape)
        out[name] = rng.standard_normal(dims) if dims else np.float64(rng.standard_normal())
    return out


# LIAR's Table II kernels covered, with the calls the search must find (at least).
EXPECTED = {
    "gemv": {"blas_gemv_scaled": 1},
    "slim_2mm": {"blas_gemm": 2},
    "gemm": {"blas_gemm_scaled": 1},
    "two_mm": {"blas_gemm": 1, "blas_gemm_scaled": 1},
    "atax": {"blas_gemv": 1, "blas_gemvT": 1},
    "mvt": {"blas_gemv": 1, "blas_gemvT": 1},
    "gesummv": {"blas_gemv_scaled": 2},
    "gemver": {"blas_axpy": 1, "blas_gemv_scaled": 1, "blas_gemvT_scaled": 1},
    "doitgen": {"blas_gemm": 1},
    "one_mm": {"blas_gemm": 1},
    "axpy": {"blas_axpy": 1},
    "memset": {"blas_fill": 1},
    # LIAR's latent idioms (search/latent.py): a gemv over the window, weights filled
    "jacobi1d": {"blas_gemv": 1, "blas_fill": 1},
    "blur1d": {"blas_gemv": 1, "blas_fill": 1},
    # vsum: a dot with a vector of ones; stencil2d: per row of outputs, a gemv over the
    # gather view of the cross's five reads with a vector of ones (LIAR's rows)
    "vsum": {"blas_dot": 1, "blas_fill": 1},
    "stencil2d": {"blas_gemv": 1, "blas_fill": 1},
}
# stencil2d's e-graph grows to about 5800 e-nodes in the default 10 steps (15 s); its
# gemv is found at step 2
SEARCH_OPTIONS = {"stencil2d": {"steps": 3}}


# Operands in another order than the specifications': found up to commutativity.
VARIANTS = REPO / "examples" / "search" / "variants.v"
EXPECTED_ORDER = {
    "gemv_swapped": {"blas_gemv": 1},
    "gemvT_scaled_right": {"blas_gemvT_scaled": 1},
    "atax_nolet": {"blas_gemv": 1, "blas_gemvT": 1},
}
CASES = [(KERNELS, k, v) for k, v in sorted(EXPECTED.items())] + [
    (VARIANTS, k, v) for k, v in sorted(EXPECTED_ORDER.items())]


@requires_coq
@pytest.mark.parametrize(("path", "name", "calls"), CASES, ids=[c[1] for c in CASES])
def test_kernel_found_certified_and_equal(path: Path, name: str, calls: dict[str, int],
                                          tmp_path: Path) -> None:
    r = search(path, name, out=tmp_path, **SEARCH_OPTIONS.get(name, {}))  # type: ignore[arg-type]
    assert r.idioms == calls
    assert r.cost < r.original_cost
    assert r.path is not None and r.path.is_file()
    text = r.path.read_text()
    assert "Qed." in text and "use_instr" in text
    program = load_program(path, name)
    rng = np.random.default_rng(14)
    ins = _inputs(program, rng)
    want = evaluate(program.expr, ins, SIZES)
    got = evaluate(r.found, ins, SIZES)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@requires_coq
def test_node_budget_stops_cleanly_with_best_so_far(tmp_path: Path) -> None:
    r = search(KERNELS, "gemver", nodes=20, out=tmp_path)
    assert r.stopped is not None and "node budget" in r.stopped and "undone" in r.stopped
    assert r.steps == 0   # the step that went over is undone
    assert r.path is not None and "Qed." in r.path.read_text()
    full = saturate(load_program(KERNELS, "gemver"))
    assert full.stopped is None and full.cost <= r.cost


def test_user_mistakes_are_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(KernelFileError, match="defines no program nope"):
        load_program(KERNELS, "nope")
    from verisched.cli import main
    assert main(["search", str(KERNELS), "--program", "nope"]) == 1
    assert "defines no program nope" in capsys.readouterr().err
    bad = tmp_path / "bad.v"
    bad.write_text("Variables (n : Z).\nDefinition p := GEN [ i < n ] q _[ i ].\n")
    with pytest.raises(KernelFileError, match="mentions q"):
        load_program(bad, "p")
    flat = tmp_path / "flat.v"
    flat.write_text("Variables (n : Z).\nVariables (v : Z -> S).\n"
                    "Definition f := flatten n n (GEN [ i < n ] GEN [ j < n ] v _[ i ]).\n")
    assert main(["search", str(flat), "--program", "f", "-q"]) == 1
    assert "does not handle Flatten" in capsys.readouterr().err


def test_declarations_are_read_as_coq_scopes_them(tmp_path: Path) -> None:
    """Several binder groups on one line, `Hypotheses` with several, `>=`, and sections:
    a program sees what Coq's section gives it (the replay's reader, pybridge)."""
    f = tmp_path / "groups.v"
    f.write_text(
        "Section One.\n"
        "  Variables (n m : Z) (A : Z -> Z -> S) (x : Z -> S) (a : S).\n"
        "  Hypotheses (HA : shaped [n; m + 1] A) (Hn : n >= 2) (Hm : m <> 0)\n"
        "             (Hc : 0 < m <= 64 /\\ m <> 3).\n"
        "  Hypothesis Hx : forall i, x _[ i ] = x _[ i ].\n"
        "  Definition mv := GEN [ i < n ] a * (SUM [ j < m ] A _[ i ] _[ j ] * x _[ j ]).\n"
        "  Definition early := GEN [ i < n ] y _[ i ].\n"
        "  Variable y : Z -> S.\n"
        "End One.\n"
        "Section Two.\n"
        "  Variables (n : Z).\n"
        "  Definition late := GEN [ i < n ] x _[ i ].\n"
        "End Two.\n")
    prog = load_program(f, "mv")
    assert dict(prog.inputs) == {"A": (IVar("n"), IBin("+", IVar("m"), IConst(1))),
                                 "a": (), "x": (IVar("m"),)}
    # `<>` bounds nothing; chains and conjunctions are read (pybridge.hypotheses)
    assert prog.assume == (PCmp("<=", IConst(2), IVar("n")), PCmp("<", IConst(0), IVar("m")),
                           PCmp("<=", IVar("m"), IConst(64)))
    # what is not restated is said: the `<>`s, and a hypothesis about an input's values
    assert prog.left_out == (("Hx", "forall i, x _[ i ] = x _[ i ]"), ("Hm", "m <> 0"),
                             ("Hc", "0 < m <= 64 /\\ m <> 3"))
    with pytest.raises(KernelFileError, match="mentions y, which the file does not declare "
                       r"\(before it, in its section\)"):
        load_program(f, "early")
    with pytest.raises(KernelFileError, match="mentions x"):
        load_program(f, "late")  # One's x is not in scope in Two


@requires_coq
def test_a_refused_certificate_is_not_left_as_the_found_file(tmp_path: Path) -> None:
    """NAME_found.v on disk is always a file coqc accepted: a refused text goes to
    NAME_found_refused.v (named in the error, Coq's locations in it), an older
    NAME_found.v stays as it was, and the next accepted run removes the refused one."""
    from verisched.search import CertificateRefused
    from verisched.search.api import write_checked

    found = tmp_path / "p_found.v"
    found.write_text("(* an earlier run's *)\n")
    with pytest.raises(CertificateRefused, match=r"(?s)p_found_refused\.v.*line 1.*"
                       r"p_found\.v was not written"):
        write_checked(found, "Lemma l : False. Proof. exact I. Qed.\n")
    assert found.read_text() == "(* an earlier run's *)\n"
    refused = tmp_path / "p_found_refused.v"
    assert "exact I" in refused.read_text()
    assert write_checked(found, "Lemma l : True. Proof. exact I. Qed.\n") == found
    assert "True" in found.read_text() and not refused.exists()


@requires_coq
def test_a_program_that_is_one_input_is_certified(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`Definition p := a.`: nothing to find, and the certificate's `same_program`
    compares a section variable (which Coq's `red` cannot unfold)."""
    f = tmp_path / "scalar.v"
    f.write_text("Variable a : S.\nHypothesis Ht : True.\nDefinition p := a.\n")
    r = search(f, "p", out=tmp_path)
    assert r.path == tmp_path / "p_found.v" and "same_program" in r.path.read_text()
    # the hypothesis the found derivation does not restate is named, by the CLI too
    assert r.left_out == (("Ht", "True"),)
    from verisched.cli import main
    assert main(["search", str(f), "--program", "p", "--out", str(tmp_path), "-q"]) == 0
    assert "note: hypothesis Ht : True is not restated" in capsys.readouterr().out


@requires_coq
def test_a_step_coq_refuses_is_reported_with_its_rule(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    """A rule whose Coq steps are wrong (here: gen_split without the sadd_tadd step, so
    split_tadd meets a scalar +, not <+>) is a bug the search reports, never hides."""
    from dataclasses import replace

    from verisched.search import CertificateRefused, certify

    broken = tuple(replace(r, coq_steps=lambda pat, e: [f"split_tadd at ({pat(e)})."])
                   if r.name == "gen_split" else r for r in RULES)
    monkeypatch.setattr(certify, "RULES", broken)
    with pytest.raises(CertificateRefused, match=r"step 1 \(rule gen_split\)"):
        search(KERNELS, "gesummv", out=tmp_path)
    assert not (tmp_path / "gesummv_found.v").exists()


@requires_coq
def test_a_replayed_command_past_its_time_limit_is_a_refusal(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """check_safe past the replay's limit (a strided conv's, in an audit) ended `search`
    in a CoqTimeoutError traceback; it is now a one-paragraph refusal, no file written."""
    from verisched.cli import main
    from verisched.pybridge.errors import CoqTimeoutError
    from verisched.schedule import Schedule

    real = Schedule.apply

    def slow(self, sentence, *a, **k):
        if sentence == "check_safe.":
            raise CoqTimeoutError("timeout after 120 s", sentence, 120.0, True)
        return real(self, sentence, *a, **k)

    monkeypatch.setattr(Schedule, "apply", slow)
    assert main(["search", str(KERNELS), "--program", "gesummv", "--out", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "Coq did not finish check_safe. within 120 s" in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "gesummv_found.v").exists()


@requires_coq
def test_cli_prints_what_it_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from verisched.cli import main
    assert main(["search", str(KERNELS), "--program", "atax", "--out", str(tmp_path),
                 "--steps", "5", "--timeout", "30"]) == 0
    captured = capsys.readouterr()
    for text in ("blas_gemv m n A x", "blas_gemvT m n A tmp", "saturation steps: 3 (saturated)",
                 "e-nodes", "time:", "accepted by Coq"):
        assert text in captured.out, captured.out
    assert "atax: step 1:" in captured.err  # progress on stderr


def _openblas() -> bool:
    import ctypes.util
    return ctypes.util.find_library("openblas") is not None


@requires_coq
@pytest.mark.skipif(not _openblas(), reason="OpenBLAS not installed (make setup)")
@pytest.mark.parametrize("name", ["mvt", "two_mm", "gemver", "memset", "vsum", "stencil2d",
                                  "jacobi1d", "blur1d"])
def test_found_program_runs_with_cblas(name: str, tmp_path: Path) -> None:
    """The `blas` target lowers the calls to CBLAS; the kernel agrees with the reference
    interpreter on the original program (sizes no multiple of anything)."""
    from verisched import pipeline

    r = search(KERNELS, name, out=tmp_path)
    kernel = pipeline.compile_derivation(r.path, f"{name}_scheduled", "blas")
    program = load_program(KERNELS, name)
    rng = np.random.default_rng(3)
    ins = {k: np.asarray(v, dtype=np.float32) for k, v in _inputs(program, rng).items()}
    got = kernel(ins, **{k: SIZES[k] for k in program.sizes})
    want = evaluate(program.expr, {k: np.float64(v) for k, v in ins.items()}, SIZES)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    c_file = tmp_path / "k.c"
    from verisched.cli import main
    assert main(["compile", str(r.path), "--derivation", f"{name}_scheduled", "--target",
                 "blas", "-o", str(c_file), "-q"]) == 0
    assert "cblas_s" in c_file.read_text() or "vs_f" in c_file.read_text()


@requires_coq
@pytest.mark.skipif(not _openblas(), reason="OpenBLAS not installed (make setup)")
def test_blas_target_refuses_what_cblas_cannot_do() -> None:
    """A call whose matrix is not a buffer (here another call's result) has no CBLAS
    form: the lowering refuses it with a message, never emits a wrong call."""
    from verisched import pipeline
    from verisched.codegen.errors import CodegenError
    from verisched.pybridge.terms import Instr, IVar, Var

    m, n = IVar("m"), IVar("n")
    expr = Instr("blas_gemv", (m, n, Instr("blas_transpose", (n, m, Var("A"))), Var("x")))
    env = {"A": (n, m), "x": (n,)}
    with pytest.raises(CodegenError, match="is not a rank-2 buffer"):
        pipeline.compile_program(expr, env, "blas", sizes=("m", "n"))
