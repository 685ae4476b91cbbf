"""`vectorize` through a border guard (a stencil's reads left of 0 or past n - 1,
Halide's constant-exterior boundary), end to end, without peeling the borders first;
a border of an outer loop (`|[ 0 <=? y - 1 ]|` around a row read in the vectorized x)
guards the whole vector (taken out of the lane loop; the lowering's `if`).

The guard becomes a masked load: `maskload_range` (lanes a <= l < b, coq/Targets/AVX.v)
for a lower bound, `maskload` for an upper one, the tail's mask merged with a border's.
Each derivation is proved by Coq, lowered to AVX2 or AVX-512 C and run against the
reference interpreter at sizes around the width (`run --check`). The lowering splits off
the vectors a border cuts, so the interior loop loads without masks (checked in the C),
and a masked lane is never read: the kernel is run with its input against unreadable
pages on either side (a read of a masked lane would fault)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from verisched import pipeline
from verisched.cli import main
from verisched.targets.cpu import cpu_flags

pytestmark = pytest.mark.skipif(shutil.which("coqtop") is None, reason="needs coqtop")

# The programs' inputs and sizes, shared by both files.
_HEAD = """
From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.
Section {name}.
  Context {{S : Type}} `{{ScalarLaws S}} {{Sm : ScalarMax S}}.
  Variables (n : Z) (c : S) (w : Z -> S) (A : Z -> Z -> S).
  Hypothesis Hw : shaped [n] w.
  Hypothesis HA : shaped [n; n] A.
  Hypothesis Hn : 0 <= n.
"""

SOURCE = _HEAD.format(name="Borders") + """
  Definition st3 := GEN [ i < n ]
    (|[ 0 <=? i - 1 ]| w _[ i - 1 ]) <+> w _[ i ] <+> (|[ i + 1 <? n ]| w _[ i + 1 ]).
  Derive st3_v SuchThat (st3 = st3_v) As st3_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  Definition st5 := GEN [ i < n ]
    c * (|[ 0 <? i - 1 ]| w _[ i - 2 ]) + w _[ i ] + (|[ i + 2 <=? n - 1 ]| w _[ i + 2 ]).
  Derive st5_v SuchThat (st5 = st5_v) As st5_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  Definition rows := GEN [ y < n ] GEN [ x < n ]
    (|[ 0 <=? x - 1 ]| A _[ y ] _[ x - 1 ]) <+> A _[ y ] _[ x ] <+>
    (|[ x + 1 <? n ]| A _[ y ] _[ x + 1 ]).
  Derive rows_v SuchThat (rows = rows_v) As rows_v_ok.
  Proof. reschedule. vectorize x with ISA. check_safe. done. Qed.
  Definition cross := GEN [ y < n ] GEN [ x < n ]
    (|[ 0 <=? y - 1 ]| A _[ y - 1 ] _[ x ]) <+> (|[ 0 <=? x - 1 ]| A _[ y ] _[ x - 1 ]) <+>
    A _[ y ] _[ x ] <+> (|[ x + 1 <? n ]| A _[ y ] _[ x + 1 ]) <+>
    (|[ y + 1 <? n ]| A _[ y + 1 ] _[ x ]).
  Derive cross_v SuchThat (cross = cross_v) As cross_v_ok.
  Proof. reschedule. vectorize x with ISA. check_safe. done. Qed.
  (* a conjunction of bounds, and both bounds around a sum (an audit's forms) *)
  Definition andg := GEN [ i < n ]
    (|[ (0 <=? i - 1) && (i + 1 <? n) ]| w _[ i - 1 ]) + w _[ i ].
  Derive andg_v SuchThat (andg = andg_v) As andg_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  Definition oversum := GEN [ i < n ]
    |[ 0 <=? i - 1 ]| (|[ i + 1 <? n ]| (w _[ i - 1 ] + c * w _[ i + 1 ])).
  Derive oversum_v SuchThat (oversum = oversum_v) As oversum_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  Definition corner := GEN [ y < n ] GEN [ x < n ]
    (|[ (0 <=? y - 1) && (x + 1 <? n) ]| A _[ y - 1 ] _[ x + 1 ]) <+> A _[ y ] _[ x ].
  Derive corner_v SuchThat (corner = corner_v) As corner_v_ok.
  Proof. reschedule. vectorize x with ISA. check_safe. done. Qed.
  (* constants under a border's bound: broadcasts under the range mask *)
  Definition consts := GEN [ i < n ]
    (|[ 0 <=? i - 1 ]| (w _[ i - 1 ] + c)) + (|[ i + 2 <? n ]| c).
  Derive consts_v SuchThat (consts = consts_v) As consts_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
End Borders.
"""

SPLIT_SOURCE = _HEAD.format(name="Split") + """
  (* a split by a multiple of the width, its inner loop vectorized: the split's
     guarded tail is the mask (the vectors' own tail guard holds by the loops) *)
  Definition sc := GEN [ i < n ] c * w _[ i ] + w _[ i ].
  Derive split_sc_v SuchThat (sc = split_sc_v) As split_sc_v_ok.
  Proof. reschedule. split i by 64 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  Definition st3 := GEN [ i < n ]
    (|[ 0 <=? i - 1 ]| w _[ i - 1 ]) <+> w _[ i ] <+> (|[ i + 1 <? n ]| w _[ i + 1 ]).
  Derive split_st3_v SuchThat (st3 = split_st3_v) As split_st3_v_ok.
  Proof. reschedule. split i by 32 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  Definition scale := GEN [ y < n ] GEN [ x < n ] A _[ y ] _[ x ] * c.
  Derive split_rows_v SuchThat (scale = split_rows_v) As split_rows_v_ok.
  Proof. reschedule. split x by 32 into xo xi. vectorize xi with ISA. check_safe. done. Qed.
  (* two upper bounds on the lane, neither provably the tighter: a split by a factor
     no multiple of the width, and a window; maskload_min (count min(a, b)) *)
  Derive split60_v SuchThat (sc = split60_v) As split60_v_ok.
  Proof. reschedule. split i by 60 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  Definition window := GEN [ i < n ] (|[ i <? 21 ]| w _[ i ]) + c * w _[ i ].
  Derive window_v SuchThat (window = window_v) As window_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  (* a constant under a window: in the tail, the masked store's bound above it is
     dropped (no memory is read under it), the window's is the broadcast's mask *)
  Definition cwin := GEN [ i < n ] (|[ i <? 21 ]| c) + w _[ i ].
  Derive cwin_v SuchThat (cwin = cwin_v) As cwin_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  (* split by 64, then a ReLU and the constant under a window: the full vectors'
     store is masked by the split's bound (vec_storeu_maskstore), which passes onto
     smax's operands and leaves the constant *)
  Definition relu := GEN [ i < n ] smax (c * w _[ i ]) szero.
  Derive split_relu_v SuchThat (relu = split_relu_v) As split_relu_v_ok.
  Proof. reschedule. split i by 64 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  Derive split_cwin_v SuchThat (cwin = split_cwin_v) As split_cwin_v_ok.
  Proof. reschedule. split i by 64 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  (* by 20, no multiple of the width: in the vectors' tail the split's bound and
     theirs both go onto smax's operands (guard2_smax: smax 0 0 = 0), the ReLU's 0
     and a constant operand alike; a window's and a border's bound around smax *)
  Derive split20_relu_v SuchThat (relu = split20_relu_v) As split20_relu_v_ok.
  Proof. reschedule. split i by 20 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  Definition cmax := GEN [ i < n ] smax (w _[ i ]) c.
  Derive split20_cmax_v SuchThat (cmax = split20_cmax_v) As split20_cmax_v_ok.
  Proof. reschedule. split i by 20 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  Definition wrelu := GEN [ i < n ] |[ i <? 21 ]| smax (w _[ i ]) szero.
  Derive wrelu_v SuchThat (wrelu = wrelu_v) As wrelu_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  Definition bmax := GEN [ i < n ] |[ 1 <=? i ]| smax (w _[ i - 1 ]) (w _[ i ]).
  Derive bmax_v SuchThat (bmax = bmax_v) As bmax_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  Derive split20_bmax_v SuchThat (bmax = split20_bmax_v) As split20_bmax_v_ok.
  Proof. reschedule. split i by 20 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  (* a border under a split by 60 (one lower bound, two upper: maskload_range_min) *)
  Derive split60_st3_v SuchThat (st3 = split60_st3_v) As split60_st3_v_ok.
  Proof. reschedule. split i by 60 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  (* points on the lane: a diagonal, as a load and as a constant, and i =? 3 *)
  Definition diag := GEN [ y < n ] GEN [ x < n ]
    (|[ x =? y ]| A _[ y ] _[ x ]) + c * A _[ y ] _[ x ].
  Derive diag_v SuchThat (diag = diag_v) As diag_v_ok.
  Proof. reschedule. vectorize x with ISA. check_safe. done. Qed.
  Definition eye := GEN [ y < n ] GEN [ x < n ] (|[ y =? x ]| c) + A _[ y ] _[ x ].
  Derive eye_v SuchThat (eye = eye_v) As eye_v_ok.
  Proof. reschedule. vectorize x with ISA. check_safe. done. Qed.
  Definition pt := GEN [ i < n ] (|[ i =? 3 ]| w _[ i ]) + w _[ i ].
  Derive pt_v SuchThat (pt = pt_v) As pt_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
  (* borders written with >=? and >? (read as <=? and <? on the lane) *)
  Definition geb := GEN [ i < n ]
    (|[ i - 1 >=? 0 ]| w _[ i - 1 ]) <+> w _[ i ] <+> (|[ n >? i + 1 ]| w _[ i + 1 ]).
  Derive geb_v SuchThat (geb = geb_v) As geb_v_ok.
  Proof. reschedule. vectorize i with ISA. check_safe. done. Qed.
End Split.
"""

# More upper bounds on a lane than two: a window under a split by a factor no multiple
# of the width, in the vectors' tail (the split's guard, the tail's, the window's):
# maskload_min3, maskload_range_min3, maskbroadcast_range_min (decision #143).
THREE_SOURCE = _HEAD.format(name="Three") + """
  Definition win := GEN [ i < n ] (|[ i <? 21 ]| w _[ i ]) + w _[ i ] * w _[ i ].
  Derive split60_win_v SuchThat (win = split60_win_v) As split60_win_v_ok.
  Proof. reschedule. split i by 60 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  Definition bwin := GEN [ i < n ] (|[ 2 <=? i ]| |[ i <? 21 ]| w _[ i - 2 ]) + w _[ i ].
  Derive split60_bwin_v SuchThat (bwin = split60_bwin_v) As split60_bwin_v_ok.
  Proof. reschedule. split i by 60 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  Definition owin := GEN [ i < n ] (|[ i <? 21 ]| sone) + w _[ i ].
  Derive split60_owin_v SuchThat (owin = split60_owin_v) As split60_owin_v_ok.
  Proof. reschedule. split i by 60 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  Definition wrelu := GEN [ i < n ] |[ i <? 21 ]| smax (w _[ i ]) szero.
  Derive split9_wrelu_v SuchThat (wrelu = split9_wrelu_v) As split9_wrelu_v_ok.
  Proof. reschedule. split i by 9 into io ii. vectorize ii with ISA. check_safe. done. Qed.
  Definition owin2 := GEN [ i < n ] (|[ 2 <=? i ]| |[ i <? 21 ]| sone) + w _[ i ].
  Derive split20_owin2_v SuchThat (owin2 = split20_owin2_v) As split20_owin2_v_ok.
  Proof. reschedule. split i by 20 into io ii. vectorize ii with ISA. check_safe. done. Qed.
End Three.
"""


def _three_ref(name: str, x: np.ndarray) -> np.ndarray:
    """THREE_SOURCE's programs in numpy (float32, as the kernels)."""
    i = np.arange(len(x))
    zero = np.float32(0)
    if name == "split60_win_v":
        return np.where(i < 21, x, zero) + x * x
    if name == "split60_bwin_v":
        r = x.copy()
        r[2:21] += x[:19][: max(0, min(len(x), 21) - 2)]
        return r
    if name == "split60_owin_v":
        return x + np.where(i < 21, np.float32(1), zero)
    if name == "split9_wrelu_v":
        return np.where(i < 21, np.where(x < zero, zero, x), zero)
    assert name == "split20_owin2_v"
    return x + np.where((2 <= i) & (i < 21), np.float32(1), zero)


FLAG = {"avx2": "avx2", "avx512": "avx512f"}
LANES = {"avx2": 8, "avx512": 16}


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    """One directory for the module's `.v` files, so that each is replayed once."""
    return tmp_path_factory.mktemp("borders")


def _source(isa: str, shared: Path, source: str = SOURCE, name: str = "Borders") -> str:
    """The file for `isa`, written and replayed in Coq once for the module (the
    cache of checked derivations keeps every derivation of that one replay, so the
    `run`s below load from it; they still compile and run each kernel)."""
    if FLAG[isa] not in cpu_flags():
        pytest.skip(f"this CPU has no {isa}")
    vfile = shared / f"{name}_{isa}.v"
    if not vfile.exists():
        vfile.write_text(source.replace("ISA", isa))
        try:
            pipeline.load_many(vfile)
        except pipeline.DerivationError:
            pass  # each test's own `run` replays it and says which derivation failed
    return str(vfile)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("isa", ["avx2", "avx512"])
@pytest.mark.parametrize("name", ["st3_v", "st5_v", "rows_v", "cross_v", "andg_v",
                                  "oversum_v", "corner_v", "consts_v"])
def test_borders_compute_as_the_interpreter(isa, name, parallel, shared, capsys) -> None:
    """Serial and OpenMP (its outermost loop parallel: the vector loop of the 1-D
    stencils, whose left border's vectors are then not split off)."""
    vfile = _source(isa, shared)
    w = LANES[isa]
    target = f"{isa}-openmp" if parallel else isa
    for n in (1, 2, 3, w - 1, w, w + 1, 2 * w + 3):
        assert main(["run", vfile, "--derivation", name, "--target", target,
                     "--size", f"n={n}", "--check"]) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert "reference interpreter on the original program: OK" in out, (n, out)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_split_then_vectorized_computes_as_the_interpreter(isa, parallel, shared,
                                                           capsys) -> None:
    """Halide's `split(x, xo, xi, 32).vectorize(xi)` without `peel`: the split's tail
    guard inside the vectors is their mask, at sizes below and past the width and past
    the split's factor with a partial tail (61: a full block of 32 and 29 over, or 60
    and 1), serial and with the blocks parallel;
    a factor no multiple of the width and a window bound (two upper bounds on the lane:
    `maskload_min`), a constant under a window (the tail's store bound dropped above it),
    a ReLU and that constant under a split by 64 (the full vectors' store masked by the
    split's bound), a ReLU and `smax` with a constant under a split by 20 and a window's
    and a border's bound around `smax` (the bounds onto its operands: `smax 0 0 = 0`),
    a border under such a split (`maskload_range_min`), points on the
    lane (`|[ x =? y ]|`, `|[ i =? 3 ]|`: one-lane ranges); and a stencil whose borders
    are written with `>=?` and `>?`."""
    vfile = _source(isa, shared, SPLIT_SOURCE, "Split")
    w = LANES[isa]
    target = f"{isa}-openmp" if parallel else isa
    # The OpenMP forms: three splits (the rest's parallel loops are the borders' tests').
    names = ["split_sc_v", "split_st3_v", "split60_st3_v"]
    if not parallel:
        # (each form once over both ISAs, where one lowering serves both; CI time)
        names += (["window_v", "pt_v", "cwin_v", "eye_v", "geb_v", "split_relu_v",
                   "split20_relu_v", "wrelu_v"]
                  if isa == "avx2" else
                  ["split_rows_v", "split60_v", "diag_v", "split_relu_v", "split_cwin_v",
                   "split20_cmax_v", "bmax_v", "split20_bmax_v"])
    for name in names:
        for n in (1, w + 1, 61):
            assert main(["run", vfile, "--derivation", name, "--target", target,
                         "--size", f"n={n}", "--check"]) == 0, capsys.readouterr().err
            out = capsys.readouterr().out
            assert "reference interpreter on the original program: OK" in out, (name, n, out)


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_interior_loads_without_masks(isa, shared, tmp_path) -> None:
    """The vectors a border cuts are split off: the main loop's three loads are
    plain ones, and the left border's masked load (range mask) is in the head."""
    vfile = _source(isa, shared)
    c = tmp_path / "st3.c"
    assert main(["compile", vfile, "--derivation", "st3_v", "--target", isa,
                 "-o", str(c)]) == 0
    text = c.read_text()
    p = "_mm256_" if isa == "avx2" else "_mm512_"
    assert f"vs_mask{LANES[isa]}r(" in text   # the left border's lanes a <= l < b
    interior = [ln for ln in text.splitlines()
                if ln.count(f"{p}loadu_ps(&w[") == 3 and "mask" not in ln]
    assert interior, text


HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "st3.h"
/* n floats between unreadable pages, against the one at its end (at = 1) or at its
   start (at = 0). */
static float *fenced(int n, int at) {
  long pg = sysconf(_SC_PAGESIZE);
  size_t bytes = (size_t)n * sizeof(float), pages = (bytes + pg - 1) / pg;
  char *base = mmap(NULL, (pages + 2) * pg, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) exit(3);
  if (mprotect(base, pg, PROT_NONE) || mprotect(base + (pages + 1) * pg, pg, PROT_NONE))
    exit(3);
  return at ? (float *)(base + (pages + 1) * pg) - n : (float *)(base + pg);
}
/* The input and the output each against an unreadable page: a lane read or written
   outside them faults. */
int main(int argc, char **argv) {
  int n = atoi(argv[1]), at = atoi(argv[2]);
  float *w = fenced(n, at), *out = fenced(n, at);
  for (int i = 0; i < n; ++i) w[i] = (float)((i * 7919) % 97) - 48.0f;
  if (st3_v(w, n, out)) return 4;
  for (int i = 0; i < n; ++i) printf("%.9g\n", out[i]);
  return 0;
}
"""


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_masked_lanes_are_not_read(isa, parallel, shared, tmp_path) -> None:
    """Against unreadable pages on either side of the input and of the output, the
    kernel runs (a masked lane left of 0 or past n - 1 that were read or written
    would fault) and computes the stencil with zero outside.  The OpenMP kernel once
    took the unmasked branch for the vectors before a head it did not split off, and
    overwrote the heap while `--check` said OK (the audit of decision #139)."""
    vfile = _source(isa, shared)
    target = f"{isa}-openmp" if parallel else isa
    assert main(["compile", vfile, "--derivation", "st3_v", "--target", target,
                 "-o", str(tmp_path / "st3.c")]) == 0
    (tmp_path / "main.c").write_text(HARNESS)
    flags = (["-mavx2", "-mfma"] if isa == "avx2" else ["-mavx512f"]) + \
        (["-fopenmp"] if parallel else [])
    exe = tmp_path / "st3"
    subprocess.run(["cc", "-std=c11", "-D_DEFAULT_SOURCE", "-O2", *flags, "-o", str(exe),
                    str(tmp_path / "main.c"), str(tmp_path / "st3.c"), "-lm"], check=True)
    w = LANES[isa]
    for n in (1, 2, w - 1, w, w + 1, 1024 + 3):
        x = np.array([((i * 7919) % 97) - 48.0 for i in range(n)], dtype=np.float32)
        ref = x.copy()
        ref[1:] += x[:-1]
        ref[:-1] += x[1:]
        for at in (0, 1):
            r = subprocess.run([str(exe), str(n), str(at)], capture_output=True, text=True)
            assert r.returncode == 0, (n, at, r.returncode, r.stderr)
            got = np.array(r.stdout.split(), dtype=np.float32)
            np.testing.assert_allclose(got, ref, rtol=1e-6, err_msg=f"n={n} at={at}")


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_the_papers_blur_with_its_borders(isa, tmp_path, capsys) -> None:
    """examples/blur_borders.v: Blur.v's blur vectorized as it is (the row borders
    guard whole vectors, the column borders are masked loads), against the interpreter
    at sizes below, at and past the width; in the serial C the rows below the top
    border are split off, so the interior rows test no guard."""
    if FLAG[isa] not in cpu_flags():
        pytest.skip(f"this CPU has no {isa}")
    from conftest import REPO

    vfile = str(REPO / "examples" / "blur_borders.v")
    name = f"blur_{isa}_masked"
    w = LANES[isa]
    for n, m in ((2, 2), (3, w - 1), (5, w + 1), (4, 2 * w + 3)):
        assert main(["run", vfile, "--derivation", name, "--target", isa, "--size",
                     f"n={n},m={m}", "--check", "-q"]) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert "reference interpreter on the original program: OK" in out, (n, m, out)
    c = tmp_path / "b.c"
    assert main(["compile", vfile, "--derivation", name, "--target", isa, "-o", str(c),
                 "-q"]) == 0
    text = c.read_text()
    assert "for (int y_1 = 1; y_1 < n - 1; ++y_1)" in text, text
    interior = text.split("for (int y_1 = 1; y_1 < n - 1; ++y_1)")[1].split("for (int y_2")[0]
    assert "if (y" not in interior


THREE = ["split60_win_v", "split60_bwin_v", "split60_owin_v", "split9_wrelu_v",
         "split20_owin2_v"]


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_three_upper_bounds_on_a_lane(isa, shared, tmp_path, capsys) -> None:
    """A window under a split by a factor no multiple of the width puts three upper
    bounds on a lane of the vectors' tail (one masked load of min(a, b, c) lanes, a
    lower bound beside them, a constant under two): each kernel against the reference
    interpreter around the window's end, the split's factor and its tail, and then
    against unreadable pages on either side of its input and output (a lane read or
    written past either end would fault), at every size from 1 to 69 and two past a
    page."""
    vfile = _source(isa, shared, THREE_SOURCE, "Three")
    for name in THREE:
        for n in (1, 9, 20, 21, 22, 61):
            assert main(["run", vfile, "--derivation", name, "--target", isa,
                         "--size", f"n={n}", "--check", "-q"]) == 0, capsys.readouterr().err
            out = capsys.readouterr().out
            assert "reference interpreter on the original program: OK" in out, (name, n, out)
    flags = ["-mavx2", "-mfma"] if isa == "avx2" else ["-mavx512f"]
    for name in THREE:
        c = tmp_path / f"{name}.c"
        assert main(["compile", vfile, "--derivation", name, "--target", isa,
                     "-o", str(c), "-q"]) == 0
        text = c.read_text()
        # one mask of the least of the bounds, each bound once: the row's end and
        # the split's guard are one (n - 60*io - 8*io0)
        for line in text.splitlines():
            for m in re.finditer(r"vs_min\(([^,()]+), vs_min\(([^,()]+),", line):
                assert m.group(1) != m.group(2), (name, line)
        harness = HARNESS.replace('"st3.h"', f'"{name}.h"').replace("st3_v(", f"{name}(")
        (tmp_path / "main.c").write_text(harness)
        exe = tmp_path / name
        subprocess.run(["cc", "-std=c11", "-D_DEFAULT_SOURCE", "-O2", *flags, "-o", str(exe),
                        str(tmp_path / "main.c"), str(c), "-lm"], check=True)
        for n in [*range(1, 70), 1024 + 3]:
            x = np.array([((i * 7919) % 97) - 48.0 for i in range(n)], dtype=np.float32)
            for at in (0, 1):
                r = subprocess.run([str(exe), str(n), str(at)], capture_output=True, text=True)
                assert r.returncode == 0, (name, n, at, r.returncode, r.stderr)
                got = np.array(r.stdout.split(), dtype=np.float32)
                np.testing.assert_allclose(got, _three_ref(name, x), rtol=1e-6,
                                           err_msg=f"{name} n={n} at={at}")
