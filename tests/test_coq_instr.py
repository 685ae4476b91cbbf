"""Coq's instruction definitions (coq/Targets/AVX.v) compute what the Intel
intrinsics compute, and the instruction tactics explain their refusals.

The definitions are the specifications every vectorized derivation rests on
(use_instr replaces a subterm by a call only if the subterm IS the body), so
a wrong body would make a proved program compute something else than the C
the lowering emits.  Here Coq evaluates each instruction over Z, on seeded
random vectors, lane by lane (including lanes outside the vector, which the
ATL semantics makes zero), and the result is compared with a numpy model of
the intrinsic written from Intel's description: `_mm256_maskload_ps` reads
lane i only if its mask bit is set (lanes 0 .. n-1 here), `_mm256_fmadd_ps`
is a * b + c, and so on.  The pinned transcript of the tactics is
tests/coq/Instr.v (run by test_coq_tactics.py); the last test here checks
the parts of a refusal a user acts on, independently of its layout.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
RNG_SEED = 20261122
CASES_PER_INSTRUCTION = 3
VLEN = 40  # elements of the source array the loads read from

Vec = np.ndarray


def _lanes(width: int) -> list[int]:
    """Lanes -1 .. width: the vector's own and one on each side (zero in ATL)."""
    return list(range(-1, width + 1))


def _outside_zero(vals: Vec, width: int) -> list[int]:
    """The model's vector, extended by ATL's zero at lanes outside [0, width)."""
    return [0] + [int(x) for x in vals[:width]] + [0]


def _coq_list(xs: Vec | list[int]) -> str:
    return "[" + "; ".join(f"({int(x)})" for x in xs) + "]"


def _coq_vec(xs: Vec) -> str:
    """A Coq tensor Z -> Z holding xs (zero outside, like any generation)."""
    return f"(tv {_coq_list(xs)})"


# Intel's semantics, lane by lane (w = 8 for __m256, 16 for __m512).
MODELS: dict[str, Callable[..., Vec]] = {
    "loadu": lambda w, v, o: v[o:o + w],
    "maskload": lambda w, v, o, n: np.where(np.arange(w) < n, v[o:o + w], 0),
    "broadcast": lambda w, x: np.full(w, x),
    "mul": lambda w, a, b: a * b,
    "add": lambda w, a, b: a + b,
    "fmadd": lambda w, a, b, c: a * b + c,
    "max": lambda w, a, b: np.maximum(a, b),
    "storeu": lambda w, a: a,
    "maskstore": lambda w, n, a: np.where(np.arange(w) < n, a, 0),
}


def _case(name: str, w: int, rng: np.random.Generator) -> tuple[str, list[int]]:
    """A random call of instruction `name` (Coq text) and the model's lanes."""
    def vec() -> Vec:
        return rng.integers(-50, 51, size=w)

    if name in ("loadu", "maskload"):
        v = rng.integers(-50, 51, size=VLEN)
        o = int(rng.integers(0, VLEN - w + 1))
        if name == "loadu":
            return f"{_coq_vec(v)} ({o})", _outside_zero(MODELS[name](w, v, o), w)
        n = int(rng.integers(-1, w + 3))
        return f"{_coq_vec(v)} ({o}) ({n})", _outside_zero(MODELS[name](w, v, o, n), w)
    if name == "broadcast":
        x = int(rng.integers(-50, 51))
        return f"({x})", _outside_zero(MODELS[name](w, x), w)
    if name == "maskstore":
        n, a = int(rng.integers(-1, w + 3)), vec()
        return f"({n}) {_coq_vec(a)}", _outside_zero(MODELS[name](w, n, a), w)
    arity = {"storeu": 1, "mul": 2, "add": 2, "max": 2, "fmadd": 3}[name]
    args = [vec() for _ in range(arity)]
    return " ".join(_coq_vec(a) for a in args), _outside_zero(MODELS[name](w, *args), w)


@pytest.fixture(scope="module")
def zcoq(coq):
    """The module's Coq session, with `tv`: a Coq tensor from a list of Z."""
    coq.run_ok("From Coq Require Import List ZArith.")
    coq.run_ok("Import ListNotations.")
    coq.run_ok("Open Scope Z_scope.")
    coq.run_ok("Definition tv (xs : list Z) : Z -> Z := "
               "genr 0 (Z.of_nat (length xs)) (fun i => List.nth (Z.to_nat i) xs 0).")
    return coq


def _eval_lanes(coq, call: str, width: int) -> list[int]:
    r = coq.run_ok(f"Eval vm_compute in (List.map ({call}) {_coq_list(_lanes(width))}).")
    # Coq prints e.g. "= 0 :: [2; 3] : list Z" (a leading 0 is not in the brackets).
    m = re.search(r"=(.*):\s*list Z", r.output, re.S)
    assert m, r.output
    return [int(t) for t in re.findall(r"-?\d+", m.group(1))]


@pytest.mark.parametrize("prefix,width", [("avx2", 8), ("avx512", 16)])
def test_instructions_compute_the_intrinsics(zcoq, prefix: str, width: int) -> None:
    rng = np.random.default_rng(RNG_SEED + width)
    for name in MODELS:
        for _ in range(CASES_PER_INSTRUCTION):
            args, expected = _case(name, width, rng)
            call = f"{prefix}_{name} {args}"
            assert _eval_lanes(zcoq, call, width) == expected, call


def test_a_wrong_model_is_caught(zcoq) -> None:
    """The comparison has teeth: an off-by-one offset disagrees with Coq."""
    v = np.arange(1, VLEN + 1)
    got = _eval_lanes(zcoq, f"avx2_loadu {_coq_vec(v)} (3)", 8)
    assert got == _outside_zero(v[3:11], 8)
    assert got != _outside_zero(v[4:12], 8)


REFUSAL = """
From Coq Require Import ZArith derive.Derive.
From Verisched Require Import ATL.
Open Scope Z_scope. Open Scope atl_scope.
Section T.
  Context {S : Type} `{ScalarLaws S}.
  Variables (f : Z -> S) (x : S).
  Definition p := GEN [ j < 4 ]
    (GEN [ l < 8 ] f _[ 2 * l + 8 * j ]) <+> (GEN [ l < 8 ] x * f _[ l ]).
  Derive q SuchThat (p = q) As q_ok.
  Proof. reschedule. Fail use_instr avx2_loadu. Fail use_instr avx2_mul. done. Qed.
End T.
"""


def test_a_refusal_names_instruction_candidate_and_difference(tmp_path: Path) -> None:
    src = tmp_path / "Refusal.v"
    src.write_text(REFUSAL)
    proc = subprocess.run(["coqc", "-Q", str(REPO / "coq"), "Verisched", str(src)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    # loadu: which instruction, its specification, the subterm, the index (stride 2
    # has no lane form o + l, so matching modulo arithmetic fails too).
    assert "use_instr @avx2_loadu : no subterm of the program is its specification" in out
    assert "GEN [ l < 8 ] v _[o + l]" in out
    assert "candidate: (GEN [ l < 8 ] f _[2 * l + 8 * j])" in out
    assert "an index or predicate differs" in out and "found (2 * l + 8 * j)" in out
    # mul: the lane-free scalar x where the instruction reads a vector.
    assert "use_instr @avx2_mul" in out
    assert "candidate: (GEN [ l < 8 ] x * f _[l])" in out
    assert re.search(r"expected \?a\d* _\[l\] found x", out), out
