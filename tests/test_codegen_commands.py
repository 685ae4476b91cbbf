"""End-to-end: a derivation in a .v file -> `verisched compile` / `verisched run`.

Needs coqtop and the built library (the bridge's own tests need the same).
"""

from __future__ import annotations

import shutil

import pytest

from verisched.cli import main

pytestmark = pytest.mark.skipif(shutil.which("coqtop") is None, reason="needs coqtop")

SOURCE = """
From Coq Require Import ZArith List.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL Rewrites.Normalize.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Rows.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (f : Z -> Z -> S).
  Hypothesis Hf : shaped [n; m] f.
  Hypothesis Hn : 1 <= n.

  Definition pipeline_rows :=
    tlet buf := GEN [ j < n ] f _[ j ] in
    GEN [ i < n ] (|[ 0 <=? i - 1 ]| buf _[ i - 1 ]) <+> buf _[ i ].

  Derive rows_fused SuchThat (pipeline_rows = rows_fused) As rows_fused_correct.
  Proof. reschedule. inline. rw get_gen. rw get_gen. normalize. check_safe. done. Qed.

  Derive rows_unchecked SuchThat (pipeline_rows = rows_unchecked) As rows_unchecked_correct.
  Proof. reschedule. inline. rw get_gen. rw get_gen. check_safe. normalize. done. Qed.

  Derive rows_raw SuchThat (pipeline_rows = rows_raw) As rows_raw_correct.
  Proof. reschedule. inline. rw get_gen. rw get_gen. done. Qed.
End Rows.
"""


@pytest.fixture(scope="module")
def vfile(tmp_path_factory):
    p = tmp_path_factory.mktemp("deriv") / "Rows.v"
    p.write_text(SOURCE)
    return p


def test_compile_writes_kernel_and_header(vfile, tmp_path, capsys):
    out = tmp_path / "rows.c"
    assert main(["compile", str(vfile), "--derivation", "rows_fused", "--target", "openmp",
                 "-o", str(out)]) == 0
    c, h = out.read_text(), out.with_suffix(".h").read_text()
    assert ("void rows_fused(const float *restrict /* f */, int /* n */, int /* m */, "
            "float *restrict /* out */)") in h
    assert '#include "rows.h"' in c and "#pragma omp parallel for" in c


@pytest.mark.parametrize("extra, says", [
    # the header (OUT with suffix .h) would overwrite the C file
    (["-o", "{tmp}/rows.h"], "-o {tmp}/rows.h: the C file cannot end in .h, where its "
                             "header goes (write {tmp}/rows.c)"),
    # a C keyword, or a name the generated C calls: the C would not compile
    (["--kernel-name", "int"], "kernel name 'int' is not a usable C identifier"),
    (["--kernel-name", "free"], "kernel name 'free' is not a usable C identifier"),
    # the proof is about the stated shape; another was lowered without a word
    (["--shape", "f=3,4"], "shape given for f, whose shape the section's hypothesis  "
                           "shaped [n; m] f  states"),
])
def test_compile_refuses_an_output_or_a_name_or_a_shape_that_would_mislead(
        vfile, tmp_path, capsys, extra: list[str], says: str) -> None:
    extra = [a.format(tmp=tmp_path) for a in extra]
    out = [] if "-o" in extra else ["-o", str(tmp_path / "k.c")]
    assert main(["compile", str(vfile), "--derivation", "rows_fused", "-q", *out,
                 *extra]) == 1
    err = capsys.readouterr().err
    assert says.format(tmp=tmp_path) in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []
    # the section's own shape, given again, is no clash
    assert main(["compile", str(vfile), "--derivation", "rows_fused", "-q", "--shape",
                 "f=n,m", "-o", str(tmp_path / "k.c")]) == 0


def test_compile_refuses_a_program_that_is_not_normal(vfile, tmp_path, capsys):
    out = tmp_path / "raw.c"
    # rows_raw has no check_safe either: refused for that first ...
    assert main(["compile", str(vfile), "--derivation", "rows_raw", "-o", str(out)]) == 1
    assert "not proved in bounds" in capsys.readouterr().err
    # ... and, built unsafe, the lowering refuses its form.
    assert main(["compile", str(vfile), "--derivation", "rows_raw", "-o", str(out),
                 "--unsafe"]) == 1
    err = capsys.readouterr().err
    assert "normal-form check" in err and "tadd_expand" in err and "offending subterm" in err
    assert not out.exists()


def test_compile_refuses_a_program_not_proved_safe(vfile, tmp_path, capsys):
    # check_safe ran, but normalize changed the program afterwards.
    out = tmp_path / "unchecked.c"
    assert main(["compile", str(vfile), "--derivation", "rows_unchecked", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "not proved in bounds" in err and "(normalize.) changed the program" in err
    assert not out.exists()
    assert main(["compile", str(vfile), "--derivation", "rows_unchecked", "-o", str(out),
                 "--allow-unproved-safety"]) == 0
    assert "WARNING" in capsys.readouterr().err and out.exists()


def test_run_checks_against_the_interpreter_and_the_hypotheses(vfile, capsys):
    assert main(["run", str(vfile), "--derivation", "rows_fused", "--size", "n=13",
                 "--size", "m=3", "--check"]) == 0
    out = capsys.readouterr().out
    assert "reference interpreter on the derived program: OK" in out
    assert "reference interpreter on the original program: OK" in out
    assert main(["run", str(vfile), "--derivation", "rows_fused", "--size", "n=0",
                 "--size", "m=3"]) == 1
    assert "violate the precondition Hn : 1 <= n" in capsys.readouterr().err
    assert main(["run", str(vfile), "--derivation", "rows_fused", "--size", "m=3"]) == 1
    assert "no value for size n" in capsys.readouterr().err


def test_run_takes_sizes_comma_separated_and_defaults_to_c(vfile, capsys):
    # `--size n=13,m=3` is `--size n=13 --size m=3`; an ISA-neutral program's default
    # target is portable C, chosen without a note.
    assert main(["run", str(vfile), "--derivation", "rows_fused", "--size", "n=13,m=3",
                 "--check"]) == 0
    cap = capsys.readouterr()
    assert "rows_fused [c] output shape (13, 3)" in cap.out
    assert "reference interpreter on the derived program: OK" in cap.out
    assert "--target" not in cap.err
    assert main(["run", str(vfile), "--derivation", "rows_fused", "--size", "n=13,m=x"]) == 1
    assert "--size m=x: not an integer" in capsys.readouterr().err


def test_outputs_and_inputs_are_checked_before_the_replay(vfile, tmp_path, capsys):
    # An output that could not be written, or an --input that names no tensor or is not
    # one .npy array, is refused by its argument before Coq replays anything.
    import numpy as np

    missing = tmp_path / "no" / "k.c"
    assert main(["compile", str(vfile), "--derivation", "rows_fused", "-o", str(missing)]) == 1
    err = capsys.readouterr().err
    assert f"-o {missing}: directory {missing.parent} does not exist" in err
    assert "step" not in err  # nothing was replayed
    run = ["run", str(vfile), "--derivation", "rows_fused", "--size", "n=5,m=3"]
    assert main([*run, "-o", str(tmp_path / "no" / "y.npy")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main([*run, "--input", f"g={_ones(tmp_path)}"]) == 1
    err = capsys.readouterr().err
    assert "--input g: not a tensor of derivation rows_fused (tensors: f)" in err
    assert "step" not in err
    junk = tmp_path / "junk.npy"
    junk.write_text("not an array")
    assert main([*run, "--input", f"f={junk}"]) == 1
    assert f"--input f={junk}: cannot read it as a .npy array (not a .npy file)" in \
        capsys.readouterr().err
    archive = tmp_path / "two.npz"
    np.savez(archive, a=np.ones(2), b=np.ones(2))
    assert main([*run, "--input", f"f={archive}"]) == 1
    assert "an .npz archive; give one .npy array" in capsys.readouterr().err
    objects = tmp_path / "objects.npy"
    np.save(objects, np.array([[1, "a"]], dtype=object), allow_pickle=True)
    assert main([*run, "--input", f"f={objects}"]) == 1
    assert (f"--input f={objects}: cannot read it as a .npy array (an array of Python "
            "objects, which is never unpickled)") in capsys.readouterr().err


def test_a_name_given_twice_or_both_as_size_and_fix_is_refused(vfile, capsys):
    # Which of two values would win is a guess, so neither does; before the replay.
    run = ["run", str(vfile), "--derivation", "rows_fused"]
    assert main([*run, "--size", "n=5,m=3", "--size", "n=6"]) == 1
    err = capsys.readouterr().err
    assert "--size n: given twice, as 5 and as 6" in err and "step" not in err
    assert main([*run, "--size", "n=5,m=3", "--fix", "m=3", "--fix", "m=4"]) == 1
    assert "--fix m: given twice, as 3 and as 4" in capsys.readouterr().err
    assert main([*run, "--size", "n=5", "--fix", "m=3,m=4"]) == 1  # comma-separated, as --size
    assert "--fix m: given twice, as 3 and as 4" in capsys.readouterr().err
    assert main([*run, "--size", "n=5,m=3", "--fix", "m=4"]) == 1
    err = capsys.readouterr().err
    assert "--size m=3 and --fix m=4 disagree (give the size once)" in err
    assert "step" not in err
    # The same value twice says one thing, and runs.
    assert main([*run, "--size", "n=5,m=3", "--size", "n=5", "--check"]) == 0
    assert "derived program: OK" in capsys.readouterr().out


def test_check_compares_nan_and_infinity_where_the_reference_has_them(vfile, tmp_path,
                                                                      capsys):
    # Inputs holding NaN or infinities: the kernel's output has them where the
    # reference does, which --check calls OK; the tolerance is scaled by finite values
    # only, so an infinity in the reference does not make every value "close".
    import numpy as np

    from verisched.pipeline import float_agrees

    f = np.arange(39, dtype=np.float32).reshape(13, 3)
    f[2, 1], f[5, 0], f[7, 2] = np.nan, np.inf, -np.inf
    np.save(tmp_path / "f.npy", f)
    assert main(["run", str(vfile), "--derivation", "rows_fused", "--input",
                 f"f={tmp_path}/f.npy", "--check"]) == 0
    out = capsys.readouterr().out
    assert "derived program: OK" in out and "original program: OK" in out
    want = np.array([1.0, np.inf, np.nan, -2.0])
    assert float_agrees(want.astype(np.float32), want)
    assert not float_agrees(np.array([1.0, np.inf, np.nan, 5.0], np.float32), want)
    assert not float_agrees(np.array([1.0, -np.inf, np.nan, -2.0], np.float32), want)
    assert not float_agrees(np.array([1.0, np.inf, 0.0, -2.0], np.float32), want)
    assert not float_agrees(np.array([np.nan, np.inf, np.nan, -2.0], np.float32), want)
    assert not float_agrees(np.array([1.0, np.inf], np.float32), want)


def test_written_files_get_the_umask_mode_and_numpy_names(vfile, tmp_path, capsys):
    # The atomic writes go through mkstemp, whose 0600 a file must not keep: the C file,
    # its header and a saved output are readable as a plain open() would leave them.
    import os
    import stat

    import numpy as np

    old = os.umask(0o022)
    try:
        c = tmp_path / "rows.c"
        assert main(["compile", str(vfile), "--derivation", "rows_fused", "-o", str(c)]) == 0
        assert main(["run", str(vfile), "--derivation", "rows_fused", "--size", "n=5,m=3",
                     "--input", f"f={_ones(tmp_path)}", "-o", str(tmp_path / "y")]) == 0
    finally:
        os.umask(old)
    assert "saved " + str(tmp_path / "y.npy") in capsys.readouterr().out
    for p in (c, c.with_suffix(".h"), tmp_path / "y.npy"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
    y = np.load(tmp_path / "y.npy")
    assert y.shape == (5, 3) and np.allclose(y[1:], 2.0) and np.allclose(y[0], 1.0)


def _ones(tmp_path):
    import numpy as np

    p = tmp_path / "ones.npy"
    np.save(p, np.ones((5, 3), np.float32))
    return p


def test_compile_without_target_builds_a_program_in_instruction_form_for_its_isa(
        tmp_path, capsys):
    # BlurVec.v's blur_avx2 calls AVX2 instructions, which target c cannot take: with no
    # --target the command builds it for avx2 and says so, where it used to refuse it.
    from verisched.pybridge.session import REPO_ROOT

    out = tmp_path / "blur.c"
    assert main(["compile", str(REPO_ROOT / "coq" / "Examples" / "BlurVec.v"),
                 "--derivation", "blur_avx2", "-o", str(out)]) == 0
    cap = capsys.readouterr()
    assert "kernel blur_avx2, target avx2," in cap.out
    assert "no --target given: blur_avx2 is in avx2's instruction form" in cap.err
    assert "_mm256_" in out.read_text()


def test_derived_kernel_is_clean_under_asan_and_matches_the_interpreter(vfile):
    import numpy as np

    from verisched import pipeline
    from verisched.pybridge.interp import evaluate
    from verisched.targets.native import build_sanitized, run_sanitized
    from verisched.targets.registry import get_target

    checked = pipeline.check(pipeline.load(vfile, "rows_fused"), name="rows")
    assert checked.program.sizes == ("n", "m")
    lw = pipeline.lower(checked, "c").kernel
    assert lw.assumptions  # Hn : 1 <= n
    dp = checked.derived
    exe = build_sanitized([lw], get_target("c"))
    rng = np.random.default_rng(2)
    for n, m in [(1, 1), (6, 3)]:
        f = rng.standard_normal((n, m)).astype(np.float32)
        got = run_sanitized(exe, lw, {"f": f}, {"n": n, "m": m}, (n, m))
        want = evaluate(dp.expr, {"f": f.astype(np.float64)}, {"n": n, "m": m}, np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_sizes_beyond_memory_and_nonpositive_counts_are_refused(vfile, capsys, monkeypatch):
    # Sizes whose inputs and outputs cannot fit in memory are refused by their figure
    # before numpy allocates (it would raise a traceback, or with Linux's overcommit
    # succeed and get the process killed mid-call).
    from verisched.pipeline import execute

    run = ["run", str(vfile), "--derivation", "rows_fused"]
    assert main([*run, "--size", "n=300000,m=300000"]) == 1
    err = capsys.readouterr().err
    assert "sizes {'n': 300000, 'm': 300000} need 670.6 GiB for the inputs and outputs" in err
    assert "Traceback" not in err
    monkeypatch.setattr(execute, "available_memory", lambda: 2**20)
    assert main([*run, "--size", "n=1000,m=1000"]) == 1  # 2 x 4 MB against 1 MiB
    assert "need 7.6 MiB for the inputs and outputs; this machine has 1.0 MiB available" \
        in capsys.readouterr().err
    # --check counts the reference interpreter's memory too (it evaluates every loop at
    # once): 10 MiB runs the kernel, but not the check; refused before any input is drawn.
    monkeypatch.setattr(execute, "available_memory", lambda: 10 * 2**20)
    assert main([*run, "--size", "n=1000,m=1000", "-q"]) == 0
    capsys.readouterr()
    assert main([*run, "--size", "n=1000,m=1000", "--check"]) == 1
    err = capsys.readouterr().err
    assert ("the check against the reference interpreter needs about 45.8 MiB at sizes "
            "{'n': 1000, 'm': 1000} (it evaluates every loop of the program at once), beside "
            "7.6 MiB for the kernel's inputs and outputs; this machine has 10.0 MiB available: "
            "check at smaller sizes") in err and "Traceback" not in err
    # The Python API's verify refuses by the same estimate, rather than be OOM-killed.
    from verisched import pipeline

    checked = pipeline.check(pipeline.load(vfile, "rows_fused"))
    kernel = pipeline.compile_checked(checked, "c")
    ins = pipeline.random_inputs(kernel, {"n": 1000, "m": 1000})
    out = kernel(ins)
    with pytest.raises(pipeline.MemoryLimitError, match="needs about 45.8 MiB"):
        pipeline.verify(checked, ins, {"n": 1000, "m": 1000}, out)
    monkeypatch.undo()
    # A count or a time limit of zero, negative, nan or inf is refused by argparse.
    for argv in ([*run, "--size", "n=3,m=3", "--threads", "0"],
                 ["replay", str(vfile), "--timeout", "-3"],
                 ["replay", str(vfile), "--timeout", "nan"],
                 ["search", str(vfile), "--program", "x", "--steps", "0"],
                 ["tune", str(vfile), "--program", "x", "-o", "t", "--jobs", "-1"]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert f"'{argv[-1]}': expected a" in err and "above 0" in err, err
    # An output directory that cannot be made is refused before any search runs.
    blocker = vfile.parent / "a_file"
    blocker.write_text("")
    for argv in (["search", str(vfile), "--program", "x", "--out", str(blocker / "d")],
                 ["tune", str(vfile), "--program", "x", "--trials", "1", "-o",
                  str(blocker / "d")]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        assert f"{blocker / 'd'}: cannot create it ({blocker} is not a directory)" in \
            capsys.readouterr().err


def test_run_takes_sizes_from_input_arrays_and_refuses_another_dtype(vfile, tmp_path,
                                                                      capsys):
    # `shaped [n; m] f` in the section: n and m come from the array's shape, as the
    # Python API's kernel(...) infers them; a given --size still wins (and the shape is
    # then checked against it).
    import numpy as np

    f = np.arange(39, dtype=np.float32).reshape(13, 3)
    np.save(tmp_path / "f.npy", f)
    run = ["run", str(vfile), "--derivation", "rows_fused", "--input", f"f={tmp_path}/f.npy"]
    assert main([*run, "--check"]) == 0
    cap = capsys.readouterr()
    assert "note: from the --input arrays' shapes: n=13, m=3" in cap.err
    assert "rows_fused [c] output shape (13, 3)" in cap.out and "program: OK" in cap.out
    assert main([*run, "--size", "m=4"]) == 1
    assert "input f has shape (13, 3), expected (13, 4)" in capsys.readouterr().err
    np.save(tmp_path / "f64.npy", f.astype(np.float64))
    assert main(["run", str(vfile), "--derivation", "rows_fused", "--input",
                 f"f={tmp_path}/f64.npy"]) == 1
    assert ("--input f: a float64 array, but kernel rows_fused takes float32 (convert the "
            "file, or build the kernel with --dtype float64)") in capsys.readouterr().err
    np.save(tmp_path / "f1.npy", f.ravel())
    assert main(["run", str(vfile), "--derivation", "rows_fused", "--input",
                 f"f={tmp_path}/f1.npy"]) == 1
    assert "--input f: a 1-d array, but the section says shaped [n; m] f" in \
        capsys.readouterr().err


def test_several_outputs_saved_as_one_npz_in_place_of_a_npy_name(tmp_path):
    # `-o y.npy` for a program of two outputs used to write y.npy.npz.
    import numpy as np

    from verisched.commands.run import _save

    a, b = np.arange(3.0), np.ones(2)
    assert _save(str(tmp_path / "y.npy"), (a, b)) == str(tmp_path / "y.npz")
    assert _save(str(tmp_path / "z"), (a, b)) == str(tmp_path / "z.npz")
    assert _save(str(tmp_path / "w.npy"), (a,)) == str(tmp_path / "w.npy")
    with np.load(tmp_path / "y.npz") as z:
        assert sorted(z) == ["out0", "out1"] and np.array_equal(z["out1"], b)
    assert not (tmp_path / "y.npy.npz").exists()
