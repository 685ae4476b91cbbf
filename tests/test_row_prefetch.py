"""The row-ahead prefetch of a depth-blocked register tile (codegen/prefetch.py,
decision #122).

A prefetch cannot change a result, so what is tested is where it is emitted:
- on a small depth-blocked program (rows `y`, depth blocks `r`, tiles `jv`, the
  shape of Conv.v's `conv_avx512_kc64`), after the tile's stores, guarded by the
  next row's existence, with the write-intent hint, and the kernel still matching
  the reference interpreter (and AddressSanitizer) at sizes that are not multiples
  of the vector width;
- not on SGEMM's tile, whose row loop does not index a contiguous slab;
- the slab conditions one by one, on index polynomials.
"""

from __future__ import annotations

import numpy as np
import pytest

from verisched.codegen import lower
from verisched.codegen.ir import Buf
from verisched.codegen.poly import Poly
from verisched.codegen.prefetch import MAX_LINES_PER_TILE, read_slabs, row_slab
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import IVar
from verisched.targets.avx2 import AVX2
from verisched.targets.avx512 import AVX512
from verisched.targets.cpu import cpu_flags
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

# out[y][j] = SUM r < D SUM c < C x[y + r][c] * w[r][c][j]: each row's tiles of W
# columns are added into it once per depth block r (a 1-D convolution over rows).
DEPTH = """GEN [ y < H ] SUM [ r < D ]
  trunc_r N (flatten (cdiv N W) W (GEN [ jv < cdiv N W ]
    tlet T := in_mem REG (SUM [ c < C ] GEN [ t < 1 ]
        P_mul (P_broadcast (x _[ y + r ] _[ c ])) (P_loadu (w _[ r ] _[ c ]) (W * jv))) in
    P_storeu (T _[ 0 ])))"""

# SGEMM's shape (tests/test_vector_lower.py): C's rows and columns both come from
# tile loops; the depth block ko is outermost, so no loop outside it indexes C.
SGEMM = """SUM [ ko < cdiv K 4 ]
  trunc_r M (flatten (cdiv M 6) 6 (GEN [ io < cdiv M 6 ]
    transpose N 6 (trunc_r N (flatten (cdiv N NR) NR (GEN [ jo < cdiv N NR ]
      transpose 6 NR (
        tlet Cr := in_mem REG (SUM [ kk < 4 ] GEN [ ir < 6 ] GEN [ jv < 2 ]
            P_mul (P_broadcast (A _[ io * 6 + ir ] _[ ko * 4 + kk ]))
                  (P_loadu (B _[ ko * 4 + kk ]) (NR * jo + W * jv))) in
        GEN [ ir < 6 ] flatten 2 W (GEN [ jv < 2 ] P_storeu (Cr _[ ir ] _[ jv ]))))))))"""

H, D, R, C, N, M, K = (IVar(s) for s in ("H", "D", "R", "C", "N", "M", "K"))
DEPTH_ENV = {"x": (R, C), "w": (D, C, N)}
MM_ENV = {"A": (M, K), "B": (K, N)}


def program(text: str, isa: str) -> object:
    W = 8 if isa == "avx2" else 16
    reg = "AVX2_REG" if isa == "avx2" else "AVX512_REG"
    return parse_program(text.replace("P_", f"{isa}_").replace("NR", str(2 * W))
                         .replace("REG", reg).replace("W", str(W)))


@pytest.mark.parametrize("isa", [AVX2, AVX512], ids=lambda i: i.name)
def test_depth_blocked_tile_prefetches_part_of_the_next_row(isa) -> None:
    """Right after the tile's stores and its next-tile prefetch (#118), while a next
    row exists: the tile's position among the row's D x N/W tiles, then its share of
    the lines of the next output row (write intent) and of the one input row the next
    row reads and this one did not (x[y + D], into L2).  w has no row: not prefetched."""
    W = isa.lanes
    body = [s.strip() for s in lower(program(DEPTH, isa.name), DEPTH_ENV, name="k",
                                     isa=isa).body]
    g = body.index("if (y + 1 < H) {")
    assert body[g - 1] == "}" and "_MM_HINT_T0" in body[g - 2], body[g - 4:g]
    tiles = f"(int64_t)(D) * (int64_t)(((N) / {W}))"

    def share(n: str, buf: str, slab: str, start: str, hint: str) -> list[str]:
        return [f"const int64_t pf_lines{n} = ({slab} * (int64_t)sizeof(*{buf}) + 63) / 64;",
                f"const int64_t pf_per{n} = (pf_lines{n} + {tiles} - 1) / ({tiles});",
                f"if (pf_per{n} <= {MAX_LINES_PER_TILE}) {{",
                f"const uintptr_t pf_base{n} = (uintptr_t){buf} + sizeof(*{buf}) * "
                f"(uintptr_t)({start});",
                f"for (int64_t pf_q{n} = pf_tile * pf_per{n}; pf_q{n} < pf_tile * pf_per{n} + "
                f"pf_per{n} && pf_q{n} < pf_lines{n}; ++pf_q{n}) {{",
                f"_mm_prefetch((const char *)(pf_base{n} + 64 * (uintptr_t)pf_q{n}), {hint});",
                "}", "}"]

    want = [f"const int64_t pf_tile = ((int64_t)r)*(((N) / {W})) + jv;",
            *share("", "out", "(int64_t)(N)", "(int64_t)(y + 1)*N", "_MM_HINT_ET0"),
            *share("_1", "x", "(int64_t)(C)", "(int64_t)(D + y)*C", "_MM_HINT_T1"),
            "}"]
    assert body[g + 1:g + 2 + len(want) - 1] == want, "\n".join(body[g:g + len(want) + 1])


@pytest.mark.skipif(not {"avx2", "fma"} <= cpu_flags(), reason="this CPU has no AVX2+FMA")
def test_depth_blocked_program_with_prefetch_matches_the_interpreter() -> None:
    """The prefetching kernel against the interpreter, plain and under ASan+UBSan, at
    row counts with and without a next row and widths off the vector width."""
    t = get_target("avx2")
    e = program(DEPTH, "avx2")
    lw = lower(e, DEPTH_ENV, name="depth", isa=t.isa, sizes=["C", "D", "H", "N", "R"])
    assert any("_MM_HINT_ET0" in s for s in lw.body)
    kernel = build([lw], t)["depth"]
    exe = build_sanitized([lw], t)
    rng = np.random.default_rng(11)
    for h, d, c, n in [(1, 1, 1, 1), (3, 2, 5, 9), (7, 3, 4, 17), (5, 3, 16, 64), (2, 4, 3, 130)]:
        sizes = {"H": h, "D": d, "C": c, "N": n, "R": h + d - 1}
        ins = {"x": rng.uniform(-2, 2, (sizes["R"], c)).astype(np.float32),
               "w": rng.uniform(-2, 2, (d, c, n)).astype(np.float32)}
        want = evaluate(e, {k: v.astype(np.float64) for k, v in ins.items()}, sizes)
        scale = max(1.0, float(np.max(np.abs(want))))
        for what, got in (("plain", kernel.call(ins, sizes)),
                          ("sanitized", run_sanitized(exe, lw, ins, sizes, want.shape))):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale,
                                       err_msg=f"{what} at {sizes}")


@pytest.mark.parametrize("isa", [AVX2, AVX512], ids=lambda i: i.name)
def test_sgemm_tile_has_no_row_prefetch(isa) -> None:
    """SGEMM's depth block is outside every loop indexing C: no row, no prefetch."""
    body = lower(program(SGEMM, isa.name), MM_ENV, name="mm", isa=isa).body
    assert any("storeu" in s for s in body)
    assert not any("pf_lines" in s or "_MM_HINT_ET0" in s for s in body)


def test_no_row_prefetch_when_the_isa_has_none() -> None:
    from dataclasses import replace

    body = lower(program(DEPTH, "avx2"), DEPTH_ENV, name="k",
                 isa=replace(AVX2, row_prefetch=None)).body
    assert not any("pf_lines" in s for s in body)


# -- the slab conditions on index polynomials ------------------------------------
def _v(name: str) -> Poly:
    return Poly.var(name)


ZERO, THREE = Poly.const(0), Poly.const(3)
OUT = Buf("out", (_v("NB"), _v("H"), _v("W"), _v("KO")))
LOOPS = tuple((v, ZERO, THREE) for v in ("n", "y", "r", "s", "jm", "xo"))
CONV = [_v("n"), _v("y"), _v("xo") * 6, _v("jm") * 64]


def test_slab_of_the_conv_is_its_output_row() -> None:
    assert row_slab([(OUT, CONV), (OUT, [*CONV[:3], CONV[3] + Poly.const(16)])],
                    LOOPS) == (1, 1)


@pytest.mark.parametrize("why, stores, loops", [
    ("no depth block: every loop indexes the destination",
     [(OUT, CONV)], tuple(lp for lp in LOOPS if lp[0] not in ("r", "s"))),
    ("the row loop's coefficient is not 1 (a strided slab)",
     [(OUT, [_v("n"), _v("y") * 2, CONV[2], CONV[3]])], LOOPS),
    ("the row loop indexes two dimensions",
     [(OUT, [_v("n"), _v("y"), _v("xo") * 6 + _v("y"), CONV[3]])], LOOPS),
    ("a later dimension depends on a loop outside the row",
     [(OUT, [_v("y"), _v("jm"), _v("xo"), _v("n")])],
     tuple((v, ZERO, THREE) for v in ("n", "jm", "y", "r", "xo"))),
    ("an earlier dimension depends on a loop inside the row",
     [(OUT, [_v("xo"), _v("y"), ZERO, CONV[3]])], LOOPS),
    ("the tile adds into two buffers",
     [(OUT, CONV), (Buf("acc", OUT.dims), CONV)], LOOPS),
    ("no stores", [], LOOPS),
])
def test_slab_conditions(why, stores, loops) -> None:
    assert row_slab(stores, loops) is None, why


INP = Buf("I", (_v("NB"), _v("H") + 2, _v("W") + 2, _v("CI")))


def test_read_slab_is_the_input_row_the_next_row_adds() -> None:
    """The conv reads I[n][y + r][6 xo + s][c] (c: the tile's own loop): rows y .. y + 2
    in this row, y + 1 .. y + 3 in the next, so the new slab is I[n][y + 3]."""
    read = [_v("n"), _v("y") + _v("r"), _v("xo") * 6 + _v("s"), _v("c")]
    got = read_slabs([(INP, read), (INP, [*read[:2], read[2] + 1, read[3]])], 1, LOOPS,
                     frozenset({"NB", "H", "W", "CI"}))
    assert got == [(INP, 1, (_v("n"), _v("y") + 3, ZERO, ZERO))]


@pytest.mark.parametrize("why, read", [
    ("a tap counting down", [_v("n"), _v("y") - _v("r"), _v("xo"), _v("c")]),
    ("the tile's own loop before the row's dimension", [_v("c"), _v("y"), _v("xo"), ZERO]),
    ("no row at all (the weights)", [_v("r"), _v("s"), _v("c"), _v("jm")]),
])
def test_read_slab_conditions(why, read) -> None:
    assert read_slabs([(INP, read)], 1, LOOPS, frozenset({"NB", "H", "W", "CI"})) == [], why
