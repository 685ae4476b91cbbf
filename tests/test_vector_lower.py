"""The vector targets on hand-written programs in instruction form.

Each program is lowered for avx2, compiled once (all programs in one shared
object and one ASan+UBSan harness), run at sizes that are and are not
multiples of the vector width and of the register block, and compared with
the reference interpreter, which evaluates every instruction by its
specification.  GCC's `_mm256_loadu_ps` / `_mm256_storeu_ps` are plain
dereferences of an unaligned vector type, so AddressSanitizer checks them: an
unmasked load or store past a buffer is reported, not silently tolerated.
AVX-512 kernels are compiled (the C is valid) and refused at call time on a
CPU without avx512f.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from verisched.codegen import LowerError, lower
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import IVar, specialize
from verisched.targets.avx2 import AVX2
from verisched.targets.avx512 import AVX512
from verisched.targets.cpu import CpuSupportError, check_cpu, cpu_flags
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

N, M, K = IVar("n"), IVar("M"), IVar("K")

AXPY = """trunc_r n (flatten (cdiv n W) W (GEN [ jv < cdiv n W ]
  P_fmadd (P_broadcast a) (P_loadu x (W * jv)) (P_loadu y (W * jv))))"""

# The tail written with explicit masked instructions (the first n - 8 jv lanes).
MASKED = """trunc_r n (flatten (cdiv n W) W (GEN [ jv < cdiv n W ]
  P_maskstore (n - W * jv)
    (P_add (P_maskload x (W * jv) (n - W * jv))
           (P_mul (P_broadcast a) (P_maskload y (W * jv) (n - W * jv))))))"""

# C[M x N] = A[M x K] B[K x N]: k blocked by kc, B packed into 16-column strips
# (kc x 16 micro-panels), A into 6-row strips, a 6 x 16 register block of 12
# accumulators (Exo thesis Sec. 7.2's micro-kernel, at AVX2 width), edges by
# guards on the packing (zero padding) and masked stores.
SGEMM = """
SUM [ ko < cdiv K kc ]
  tlet Bp := GEN [ jo < cdiv N NR ] GEN [ kk < kc ] GEN [ jr < NR ]
       |[ (jo * NR + jr <? N) && (ko * kc + kk <? K) ]| B _[ ko * kc + kk ] _[ jo * NR + jr ] in
  tlet Ap := GEN [ io < cdiv M 6 ] GEN [ kk < kc ] GEN [ ir < 6 ]
       |[ (io * 6 + ir <? M) && (ko * kc + kk <? K) ]| A _[ io * 6 + ir ] _[ ko * kc + kk ] in
  trunc_r M (flatten (cdiv M 6) 6 (GEN [ io < cdiv M 6 ]
    transpose N 6 (trunc_r N (flatten (cdiv N NR) NR (GEN [ jo < cdiv N NR ]
      transpose 6 NR (
        tlet Cr := in_mem REG (SUM [ kk < kc ] GEN [ ir < 6 ] GEN [ jv < 2 ]
            P_mul (P_broadcast (Ap _[ io ] _[ kk ] _[ ir ]))
                  (P_loadu (Bp _[ jo ] _[ kk ]) (W * jv))) in
        GEN [ ir < 6 ] flatten 2 W (GEN [ jv < 2 ] P_storeu (Cr _[ ir ] _[ jv ]))))))))
"""

# A register buffer read back lane by lane (scalar code over a vector register),
# and a broadcast of a scalar computed by a SUM.
LANES = """trunc_r n (flatten (cdiv n W) W (GEN [ jv < cdiv n W ]
  tlet r := in_mem REG (GEN [ t < 2 ] P_mul (P_broadcast (SUM [ k < 3 ] x _[ k ]))
                                          (P_loadu y (W * jv))) in
  GEN [ l < W ] r _[ 0 ] _[ l ] + r _[ 1 ] _[ l ] * a))"""


# A dot product as `vectorize j` writes it (decision #151): the sum of each vector's
# lanes (reduce_add, a scalar), the full vectors then the masked last one.
DOT = """(SUM [ j < n / W ] P_reduce_add (P_mul (P_loadu x (W * j)) (P_loadu y (W * j)))) <+>
(SUMR [ n / W <= j < cdiv n W ]
   P_reduce_add (P_mul (P_maskload x (W * j) (n - W * j)) (P_maskload y (W * j) (n - W * j))))"""


def program(text: str, isa: str) -> object:
    W = 8 if isa == "avx2" else 16
    reg = "AVX2_REG" if isa == "avx2" else "AVX512_REG"
    text = (text.replace("P_", f"{isa}_").replace("NR", str(2 * W)).replace("REG", reg)
            .replace("W", str(W)))
    return parse_program(text)


VEC_ENV = {"x": (N,), "y": (N,), "a": ()}
DOT_ENV = {"x": (N,), "y": (N,)}
MM_ENV = {"A": (M, K), "B": (K, IVar("N"))}
VEC_SIZES = [1, 7, 8, 9, 16, 23, 40]
MM_SIZES = [(1, 1, 1), (6, 16, 4), (7, 17, 5), (13, 35, 9), (12, 32, 8), (5, 3, 2)]


def _vector_programs(isa: str) -> list[tuple[str, object, dict]]:
    mm = specialize(program(SGEMM, isa), {"kc": 4})
    return [("axpy", program(AXPY, isa), VEC_ENV), ("masked", program(MASKED, isa), VEC_ENV),
            ("lanes", program(LANES, isa), VEC_ENV), ("dot", program(DOT, isa), DOT_ENV),
            ("sgemm", mm, MM_ENV)]


def _inputs(rng: np.random.Generator, env: dict, sizes: dict) -> dict:
    out = {}
    for k, shp in env.items():
        dims = tuple(sizes[i.name] for i in shp)
        out[k] = rng.uniform(-2, 2, size=dims).astype(np.float32)
    return out


def _check(got: np.ndarray, want: np.ndarray, what: str) -> None:
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale, err_msg=what)


@pytest.mark.skipif(not {"avx2", "fma"} <= cpu_flags(), reason="this CPU has no AVX2+FMA")
def test_avx2_programs_match_the_interpreter_and_sanitizers() -> None:
    t = get_target("avx2")
    progs = _vector_programs("avx2")
    lowered = {name: lower(e, env, name=name, isa=t.isa, sizes=sorted(
        {i.name for s in env.values() for i in s})) for name, e, env in progs}
    kernels = build(list(lowered.values()), t)
    exe = build_sanitized(list(lowered.values()), t)
    rng = np.random.default_rng(7)
    for name, e, env in progs:
        size_sets = ([{"n": n} for n in VEC_SIZES] if env is not MM_ENV
                     else [{"M": m, "N": n, "K": k} for m, n, k in MM_SIZES])
        for sizes in size_sets:
            ins = _inputs(rng, env, sizes)
            want = evaluate(e, {k: v.astype(np.float64) for k, v in ins.items()},
                            {**sizes, "kc": 4})
            lw = lowered[name]
            got = kernels[name].call(ins, sizes)
            what = f"{name} at {sizes}:\n" + "\n".join(lw.body)
            _check(got, want, what)
            _check(run_sanitized(exe, lw, ins, sizes, got.shape), want, "sanitized " + what)
    mm = ins  # the last sgemm inputs: also against numpy's matmul
    np.testing.assert_allclose(kernels["sgemm"].call(mm, sizes),
                               mm["A"].astype(np.float64) @ mm["B"], rtol=1e-4, atol=1e-4)


def test_sgemm_micro_kernel_is_register_blocked() -> None:
    """The inner loop is what a human would write: 12 accumulators in vector
    variables, one FMA each per k, no guard, no lane loop; stores masked only on
    the ragged edge (an unmasked branch for interior tiles)."""
    e = specialize(program(SGEMM, "avx2"), {"kc": 256})
    body = lower(e, MM_ENV, name="mm", isa=AVX2).body
    start = next(k for k, s in enumerate(body) if "for (int kk" in s and "256" in s
                 and "Cr_11 = _mm256_setzero_ps();" in body[k - 2])
    assert body[start - 1].strip() == "#pragma GCC unroll 4"
    # The depth loop stops at K in the last block: the packs are zero past it
    # (codegen/support.py), so no work is spent on padding.
    assert "< vs_min(K - 256*ko, 256); ++kk" in body[start], body[start]
    inner = body[start + 1:start + 13]
    assert all(s.strip().startswith(f"Cr_{k} = _mm256_fmadd_ps(_mm256_set1_ps(Ap[")
               for k, s in enumerate(inner)), inner
    assert body[start + 13].strip() == "}"
    assert "__m256 Cr_0, Cr_1, Cr_2, Cr_3, Cr_4, Cr_5;" in [s.strip() for s in body]
    assert any("_mm256_maskstore_ps" in s for s in body)
    assert any("_mm256_storeu_ps" in s for s in body)
    # Loads of the packed panel are proved in bounds: never masked.
    assert not any("maskload_ps(&Bp" in s for s in body)
    # No prefetch before the tile's loop (no other line between the tile's declarations
    # and its zeroing): the next tile's destination is prefetched after the stores.
    decl = max(k for k in range(start) if body[k].strip().startswith("__m256 Cr_6"))
    assert not body[decl + 1:start - 13], body[decl + 1:start - 13]


@pytest.mark.parametrize("isa", [AVX2, AVX512], ids=lambda i: i.name)
def test_tile_prefetches_the_next_tiles_destination(isa) -> None:
    """After a register tile's stores, each address the tile was added into is
    prefetched for the next iteration of the enclosing loop (decision #118): the same
    index with the loop variable v as v + 1, under `v + 1 < hi`, in integer arithmetic,
    so an address past the last tile is never formed as a C pointer."""
    assert isa.prefetch and isa.tile_prefetch == "next"
    pre_ = "_mm512" if isa is AVX512 else "_mm256"
    e = specialize(program(SGEMM, isa.name), {"kc": 256})
    body = lower(e, MM_ENV, name="mm", isa=isa).body
    start = next(k for k, s in enumerate(body) if "for (int kk" in s and "256" in s
                 and f"Cr_11 = {pre_}_setzero_ps();" in body[k - 2])
    stores = [s.strip() for s in body[start + 14:start + 26]]
    head = f"{pre_}_storeu_ps("
    assert all(s.startswith(head + "&") for s in stores), stores
    stored = [s.removeprefix(head).split(",")[0] for s in stores]
    guard = body[start + 26].strip()
    m = re.fullmatch(r"if \((\w+) \+ 1 < (.+)\) \{", guard)
    assert m, guard
    var = m.group(1)
    # The guard names the tile's loop and that loop's bound.
    assert any(s.strip().startswith(f"for (int {var} = 0; {var} < {m.group(2)};")
               for s in body[:start]), m.group(2)
    pre = [s.strip() for s in body[start + 27:start + 39]]
    want = []
    for p in stored:
        base, index = re.fullmatch(r"&(\w+)\[(.*)\]", p).groups()
        index = re.sub(rf"\b{var}\b", f"({var} + 1)", index)
        want.append(f"_mm_prefetch((const char *)((uintptr_t){base} + sizeof(*{base}) * "
                    f"(uintptr_t)({index})), _MM_HINT_T0);")
    assert pre == want, (pre, want)
    assert body[start + 39].strip() == "}"


def test_tile_prefetch_mode_is_checked() -> None:
    """A misspelt prefetch mode is refused where the library is built, not ignored."""
    from dataclasses import replace

    with pytest.raises(ValueError, match="tile_prefetch 'nxet' is not one of next, before"):
        replace(AVX2, tile_prefetch="nxet")


def test_unproved_load_is_masked_not_plain() -> None:
    """Loads reaching past n are masked; the loop is split so that the iterations whose
    lanes are all in bounds (8 jv + 8 <= n) run unmasked, the tail masked."""
    body = lower(program(AXPY, "avx2"), VEC_ENV, name="k", isa=AVX2).body
    tail = next(k for k, s in enumerate(body) if "for (int jv_1" in s)
    main, rest = "\n".join(body[:tail]), "\n".join(body[tail:])
    assert "for (int jv = 0; jv < ((n) / 8); ++jv)" in main
    assert "mask" not in main and "_mm256_loadu_ps(&x[8*jv])" in main
    assert "for (int jv_1 = ((n) / 8); jv_1 < ((n + 7) / 8)" in rest
    assert "_mm256_maskload_ps(&x[8*jv_1], vs_mask8(n - 8*jv_1))" in rest
    assert "_mm256_loadu_ps(&x" not in rest


def test_avx512_compiles_and_is_refused_without_the_cpu_feature() -> None:
    t = get_target("avx512")
    progs = _vector_programs("avx512")
    lowered = [lower(e, env, name=name, isa=t.isa, sizes=sorted(
        {i.name for s in env.values() for i in s})) for name, e, env in progs]
    text = "\n".join("\n".join(lw.body) for lw in lowered)
    assert "__m512 Cr_0" in text and "_mm512_fmadd_ps" in text and "__mmask16" in text
    kernels = build(lowered, t)  # gcc accepts the C
    if "avx512f" in cpu_flags():
        pytest.skip("this CPU has AVX-512: nothing to refuse (the run is the avx2 test's)")
    x = np.ones(9, np.float32)
    with pytest.raises(CpuSupportError, match="does not support target avx512"):
        kernels["axpy"].call({"x": x, "y": x, "a": np.float32(1)}, {"n": 9})


def test_cpu_check() -> None:
    flags = cpu_flags()
    assert flags, "no CPU flags found"
    if {"avx2", "fma"} <= flags:
        check_cpu(AVX2.cpu_flags, AVX2.name, "k")
    if "avx512f" not in flags:
        with pytest.raises(CpuSupportError, match="missing CPU feature.*avx512f"):
            check_cpu(AVX512.cpu_flags, AVX512.name, "k")
    with pytest.raises(CpuSupportError, match="target imaginary.*missing CPU feature.*nope"):
        check_cpu(("nope",), "imaginary", "k")
    check_cpu((), "c", "k")  # scalar code runs anywhere


def test_instructions_of_another_target_are_refused() -> None:
    e = program(AXPY, "avx512")
    with pytest.raises(LowerError, match=r"instruction avx512_fmadd \(family avx512\) is not "
                                         "supported by the instruction library avx2; it needs "
                                         "the avx512 library"):
        lower(e, VEC_ENV, isa=AVX2)
    with pytest.raises(LowerError, match=r"instruction avx2_fmadd \(family avx2\) is not "
                                         "supported by scalar C"):
        lower(program(AXPY, "avx2"), VEC_ENV)
    with pytest.raises(LowerError, match="let Cr is placed in memory AVX512_REG, which target "
                                         "avx2 does not have"):
        lower(specialize(program(SGEMM, "avx512"), {"kc": 4}), MM_ENV, isa=AVX2)


def test_register_buffer_needs_constant_extents() -> None:
    e = parse_program("tlet r := in_mem AVX2_REG (GEN [ t < n ] avx2_loadu x 0) in "
                      "GEN [ t < n ] avx2_storeu (r _[ t ])")
    with pytest.raises(LowerError, match=r"let r in AVX2_REG: a register buffer needs constant "
                                         r"extents ending with the 8 lanes, got n x 8"):
        lower(e, VEC_ENV, isa=AVX2)
    e = parse_program("tlet r := in_mem AVX2_REG (GEN [ t < 3 ] GEN [ l < 4 ] x _[ l ]) in "
                      "GEN [ t < 3 ] GEN [ l < 4 ] r _[ t ] _[ l ]")
    with pytest.raises(LowerError, match="got 3 x 4"):
        lower(e, VEC_ENV, isa=AVX2)
    e = parse_program("GEN [ t < 3 ] in_mem AVX2_REG (avx2_loadu x 0)")
    with pytest.raises(LowerError, match="in_mem AVX2_REG must wrap the value of a let"):
        lower(e, VEC_ENV, isa=AVX2)


def test_programs_without_instructions_lower_as_before() -> None:
    e = parse_program("GEN [ i < n ] SUM [ k < 3 ] |[ i + k <? n ]| x _[ i + k ] * a")
    c = lower(e, VEC_ENV, name="k")
    for isa in (AVX2, AVX512):
        v = lower(e, VEC_ENV, name="k", isa=isa)
        assert v.body == c.body and not v.uses_vectors


# Programs exercising the rules' less travelled paths (each against the interpreter):
EDGE_PROGRAMS = {
    # Lanes stored along a column (stride != 1): lane-by-lane stores; max; masked loads.
    "transposed_max": "transpose (cdiv n 8) 8 (GEN [ jv < cdiv n 8 ] "
                      "avx2_max (avx2_loadu x (8 * jv)) (avx2_loadu y (8 * jv)))",
    # A register buffer filled by scalar code, read whole and at a lane offset.
    "reg_offsets": "tlet r := in_mem AVX2_REG (GEN [ t < 2 ] GEN [ l < 8 ] x _[ t + l ] * a) in "
                   "GEN [ t < 2 ] avx2_add (r _[ t ]) (avx2_loadu (r _[ 1 - t ]) 1)",
    # maskstore whose window reaches past n: the lanes >= n are stored as zeros.
    "maskstore_zeros": "GEN [ jv < 2 ] avx2_maskstore 3 (avx2_loadu x (8 * jv))",
    # Accumulating into memory: add (load-add-store) and mul (fused multiply-add).
    "sum_add": "SUM [ k < 3 ] avx2_add (avx2_loadu x k) (avx2_broadcast a)",
    "sum_mul": "SUM [ k < 3 ] avx2_mul (avx2_loadu x k) (avx2_loadu y (2 * k))",
    # A register accumulator with a guard inside the reduction, written out masked.
    "guarded_acc": "trunc_r n (flatten (cdiv n 8) 8 (GEN [ jv < cdiv n 8 ] "
                   "tlet c := in_mem AVX2_REG (SUM [ k < 4 ] |[ k <? 3 ]| "
                   "avx2_fmadd (avx2_broadcast (y _[ k ])) (avx2_loadu x (8 * jv)) "
                   "(avx2_broadcast a)) in avx2_storeu c))",
    # A register block written out lane by lane in the program (the storeu spec itself).
    "reg_lanes_out": "trunc_r n (flatten (cdiv n 8) 8 (GEN [ jv < cdiv n 8 ] "
                     "tlet c := in_mem AVX2_REG (GEN [ t < 2 ] avx2_loadu x (8 * jv + t)) in "
                     "GEN [ l < 8 ] c _[ 1 ] _[ l ] + c _[ 0 ] _[ l ]))",
    "reg_copy": "GEN [ jv < 2 ] tlet c := in_mem AVX2_REG (avx2_loadu x (8 * jv)) in "
                "GEN [ l < 8 ] c _[ l ]",
    # A vector operand read from a rank-1 memory slice (no instruction around it).
    "slice_operand": "GEN [ t < 2 ] avx2_mul (X _[ t ]) (avx2_loadu y (8 * t))",
}


@pytest.mark.skipif(not {"avx2", "fma"} <= cpu_flags(), reason="this CPU has no AVX2+FMA")
def test_vector_edge_paths_match_the_interpreter() -> None:
    t = get_target("avx2")
    env = {**VEC_ENV, "X": (IVar("n"), IVar("n"))}
    progs = {k: parse_program(v) for k, v in EDGE_PROGRAMS.items()}
    lowered = {k: lower(e, env, name=k, isa=t.isa, sizes=["n"]) for k, e in progs.items()}
    kernels = build(list(lowered.values()), t)
    exe = build_sanitized(list(lowered.values()), t)
    rng = np.random.default_rng(11)
    for n in (1, 5, 8, 13, 17):
        ins = _inputs(rng, env, {"n": n})
        for k, e in progs.items():
            want = evaluate(e, {a: v.astype(np.float64) for a, v in ins.items()}, {"n": n})
            got = kernels[k].call(ins, {"n": n})
            want = want[tuple(slice(0, s) for s in got.shape)]  # `want` may be wider
            what = f"{k} at n={n}:\n" + "\n".join(lowered[k].body)
            _check(got, np.pad(want, [(0, g - w) for g, w in zip(got.shape, want.shape,
                                                                  strict=True)]), what)
            _check(run_sanitized(exe, lowered[k], ins, {"n": n}, got.shape),
                   got.astype(np.float64), "sanitized " + what)
    body = "\n".join(lowered["sum_mul"].body)
    assert "_mm256_fmadd_ps(" in body and "_mm256_loadu_ps(&out[0])" in body
    assert "_mm256_storeu_ps(&out[(int64_t)jv*8], c);" in "\n".join(lowered["reg_copy"].body)
