"""Unit tests of the lowering on hand-written programs: the paper's pipeline
(Sec. 3-5), each reshape operator's storage rule (Fig. 6), zero regions,
shadowing, buffers, index simplification and the normal-form refusals."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_reference import compile_kernels, run_reference

from verisched.codegen import NotNormalError, lower
from verisched.codegen.errors import LowerError
from verisched.codegen.poly import Poly, evaluate, from_idx
from verisched.codegen.prover import Facts
from verisched.codegen.render import render_header
from verisched.pybridge.terms import (
    Concat,
    Flatten,
    Gen,
    Guard,
    IBin,
    IConst,
    IVar,
    Let,
    PadL,
    PadR,
    PCmp,
    SBin,
    Split,
    Sum,
    TAdd,
    Transpose,
    TruncL,
    TruncR,
    Var,
    Zero,
    gen,
    get,
    imul,
    isub,
    summ,
)
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

n, m = IVar("n"), IVar("m")


def pipeline_fused():
    """Sec. 3's fused two-stage pipeline: GEN[i<n] |[0 <= i-1]| f[i-1] <+> f[i]."""
    return gen("i", n, TAdd(Guard(PCmp("<=", IConst(0), isub("i", 1)), get(Var("f"), isub("i", 1))),
                            get(Var("f"), "i")))


def pipeline_two_stage():
    body = TAdd(Guard(PCmp("<=", IConst(0), isub("i", 1)), get(Var("buf"), isub("i", 1))),
                get(Var("buf"), "i"))
    return Let("buf", gen("j", n, get(Var("f"), "j")), gen("i", n, body))


def run_all(progs, env, sizes_list, dtype="float32", target="c"):
    """Compile the programs together and compare with the reference at each size."""
    ks = compile_kernels([(f"t{i}", e, env) for i, e in enumerate(progs)], target=target,
                         dtype=dtype)
    # Every kernel also runs under ASan+UBSan (a separate harness executable).
    exe = build_sanitized([k.lowered for k in ks.values()], get_target(target))
    rng = np.random.default_rng(1)
    npd = np.float32 if dtype == "float32" else np.int32
    for sizes in sizes_list:
        for i, e in enumerate(progs):
            k = ks[f"t{i}"]
            shapes, out = k.extents(sizes)
            inputs = {a: rng.integers(-4, 5, size=s).astype(npd) for a, s in shapes.items()}
            got = k.call(inputs, sizes)
            want = run_reference(e, {a: v.astype(np.float64) for a, v in inputs.items()},
                                 sizes, out, np.float64)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(e))
            san = run_sanitized(exe, k.lowered, inputs, sizes, out)
            np.testing.assert_allclose(san, want, rtol=1e-5, atol=1e-5, err_msg=str(e))
    return ks


def test_pipeline_schedules_agree_and_match_reference():
    ks = run_all([pipeline_fused(), pipeline_two_stage()], {"f": (n,)},
                 [{"n": 1}, {"n": 2}, {"n": 17}])
    f = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(ks["t0"]({"f": f}, n=5), [0, 1, 3, 5, 7])


def test_fused_pipeline_lowers_to_one_loop_without_bounds_checks():
    body = "\n".join(lower(pipeline_fused(), {"f": (n,)}, name="fused").body)
    assert body.count("for (") == 1
    # The guard proves i - 1 >= 0, so the access needs no extra check.
    assert "f[i - 1]" in body and "i - 1 >= 0" not in body and "n - i" not in body


def test_out_of_bounds_reads_are_zero():
    # f[i+1] reads past the end on the last iteration: ATL says zero.
    e = gen("i", n, get(Var("f"), IBin("+", IVar("i"), IConst(1))))
    run_all([e], {"f": (n,)}, [{"n": 1}, {"n": 6}])


def test_concat_writes_one_buffer_at_offsets():
    # Loop splitting by concat (Sec. 6.1): first row separately, rest unguarded.
    first = gen("i", 1, gen("j", m, get(Var("A"), "i", "j")))
    rest = gen("i", isub(n, 1), gen("j", m, SBin("*", get(Var("A"), IBin("+", IVar("i"),
                                                                           IConst(1)), "j"),
                                                  get(Var("A"), "i", "j"))))
    e = Concat(IConst(1), isub(n, 1), first, rest)
    lw = lower(e, {"A": (n, m)}, name="cc")
    assert sum("for (int i" in s for s in lw.body) == 2 and "memset" not in "\n".join(lw.body)
    run_all([e], {"A": (n, m)}, [{"n": 1, "m": 1}, {"n": 4, "m": 3}])


def test_transpose_flatten_split_reindex_the_store():
    A = Var("A")
    tr = Transpose(m, n, gen("j", m, gen("i", n, get(A, "i", "j"))))
    fl = Flatten(n, m, gen("i", n, gen("j", m, get(A, "i", "j"))))
    sp = Split(IConst(4), imul(n, m), fl)
    run_all([tr, fl, sp], {"A": (n, m)}, [{"n": 1, "m": 1}, {"n": 3, "m": 5}, {"n": 4, "m": 4}])
    body = "\n".join(lower(tr, {"A": (n, m)}).body)
    # Row-major, the flat index accumulated in 64 bits from the per-dimension indices.
    assert "out[(int64_t)i*m + j]" in body


def test_ragged_tiles_under_flatten_clip_their_loops_to_the_store_window():
    # Blur.v's partial tiles: trunc_r n (flatten (cdiv n 4) 4 (GEN io GEN ii |[io*4+ii < n]|
    # ...)).  Flatten's window is a condition on the pair (io, ii); once io is a loop
    # variable it bounds ii's loop, so the loop stops at the window and neither the
    # store nor the guard is tested per element (decision #119).
    A, io4 = Var("A"), imul("io", 4)
    flat = IBin("+", io4, IVar("ii"))
    rows = IBin("cdiv", n, IConst(4))
    body = Guard(PCmp("<", flat, n), gen("j", m, SBin("+", get(A, flat, "j"), get(A, flat, "j"))))
    e = TruncR(n, Flatten(rows, IConst(4), gen("io", rows, gen("ii", IConst(4), body))))
    text = "\n".join(lower(e, {"A": (n, m)}, name="rag").body)
    assert "for (int ii = 0; ii < vs_min(n - 4*io, 4); ++ii)" in text, text
    stores = [s for s in text.splitlines() if "out[" in s]
    assert stores and not any("if (" in s or "?" in s for s in stores), text
    # Ragged sizes (n % 4 != 0), exact multiples, fewer rows than a tile.
    run_all([e], {"A": (n, m)}, [{"n": 1, "m": 2}, {"n": 4, "m": 3}, {"n": 7, "m": 5},
                                 {"n": 10, "m": 1}])


def test_concat_of_adjacent_generations_is_one_parallel_loop():
    # concat q r (GEN [i < q] A) (GENR [q <= i < q + r] B), the full rows of tiles and
    # the partial one: one parallel loop, A below q and B from there on, not two
    # parallel regions (decision #119).  Both parts, and the rows past q + r, checked
    # against the reference at sizes where each part is empty or not.
    A, q = Var("A"), IBin("*", IBin("/", n, IConst(4)), IConst(4))
    r = isub(n, q)
    row = gen("j", m, SBin("*", get(A, "i", "j"), get(A, "i", "j")))
    tail = Gen("i", q, IBin("+", q, r), gen("j", m, SBin("+", get(A, "i", "j"), get(A, "i", "j"))))
    e = Concat(q, r, gen("i", q, row), tail)
    text = "\n".join(lower(e, {"A": (n, m)}, name="cat", parallel=True).body)
    # One loop in each of the kernel's two copies (A passed as the output, or not).
    assert text.count("#pragma omp parallel for") == 2 and "inplace_A" in text, text
    assert "memset" not in text, text
    assert "if (i < 4*((n) / 4)) {" in text, text
    run_all([e], {"A": (n, m)}, [{"n": 1, "m": 2}, {"n": 4, "m": 3}, {"n": 7, "m": 5},
                                 {"n": 13, "m": 1}], target="openmp")


def test_pad_regions_are_zero_and_trunc_never_writes_past_its_extent():
    A = Var("A")
    row = gen("j", m, get(A, IConst(0), "j"))
    progs = [PadR(IConst(3), m, row), PadL(IConst(2), m, row),
             TruncR(IConst(2), PadR(IConst(3), m, row)),
             TruncL(IConst(2), IBin("+", m, IConst(3)), PadR(IConst(3), m, row)),
             TruncR(m, gen("j", IBin("+", m, IConst(5)), get(A, IConst(0), "j")))]
    ks = run_all(progs, {"A": (n, m)}, [{"n": 1, "m": 1}, {"n": 2, "m": 7}])
    body = "\n".join(ks["t0"].lowered.body)
    assert "memset" not in body  # only the padding is zero-filled


def test_ragged_split_tail_is_zero():
    e = Split(IConst(4), n, gen("i", n, get(Var("f"), "i")))
    run_all([e], {"f": (n,)}, [{"n": 1}, {"n": 5}, {"n": 8}, {"n": 9}])


def test_guards_sums_and_empty_ranges():
    A = Var("A")
    g = gen("i", n, Guard(PCmp("<", IVar("i"), IConst(2)), gen("j", m, get(A, "i", "j"))))
    s = gen("i", n, Sum("k", IConst(3), IConst(1), gen("j", m, get(A, "i", "j"))))
    acc = gen("i", n, summ("k", m, SBin("*", get(A, "i", "k"), get(A, "i", "k"))))
    ts = summ("k", n, gen("j", m, get(A, "k", "j")))  # sum of rows: a tensor-valued sum
    run_all([g, s, acc, ts], {"A": (n, m)}, [{"n": 1, "m": 1}, {"n": 3, "m": 4}])


def test_shadowed_binders_do_not_capture_stores():
    # The inner i shadows the outer one; the store index must use the outer i.
    e = gen("i", n, gen("j", IConst(2), summ("i", IConst(3), get(Var("f"), "i"))))
    lw = lower(e, {"f": (n,)})
    assert "i_1" in "\n".join(lw.body)
    run_all([e], {"f": (n,)}, [{"n": 4}])


def test_let_buffers_stack_for_small_constant_heap_otherwise():
    f = Var("f")
    small = Let("t", gen("j", IConst(8), get(f, "j")), gen("i", n, get(Var("t"), "i")))
    big = Let("t", gen("j", n, get(f, "j")), gen("i", n, get(Var("t"), "i")))
    inner = gen("i", n, Let("t", gen("j", n, get(f, "j")),
                            summ("j", n, get(Var("t"), "j"))))
    scalar_let = gen("i", n, Let("c", get(f, "i"), SBin("*", Var("c"), Var("c"))))
    ks = run_all([small, big, inner, scalar_let], {"f": (n,)}, [{"n": 3}, {"n": 11}])
    assert "float t[8];" in "\n".join(ks["t0"].lowered.body)
    assert "float *t = (float *)vs_alloc(n, sizeof(float), 0);" in "\n".join(
        ks["t1"].lowered.body)
    assert "free(t)" in "\n".join(ks["t2"].lowered.body)


def test_int32_semantics_floor_division_and_div_by_zero():
    f = Var("f")
    e = gen("i", n, SBin("/", get(f, "i"), get(f, IBin("+", IVar("i"), IConst(1)))))
    ks = compile_kernels([("d", e, {"f": (n,)})], dtype="int32")
    x = np.array([7, -7, 0, 3, -2], dtype=np.int32)
    # Z.div: floor division, and x / 0 = 0 (the last element divides by f[5] = 0).
    np.testing.assert_array_equal(ks["d"]({"f": x}, n=5), [7 // -7, 0, 0 // 3, 3 // -2, 0])


def test_int8_kernels_compute_in_int32_and_wrap_on_the_store():
    # matvec with a let buffer and a division: partial sums and the buffer leave int8's
    # range; only the output wraps (targets/base.py ROUNDING["int8"]).
    A, x = Var("A"), Var("x")
    row = summ("j", m, SBin("*", get(A, "i", "j"), get(x, "j")))
    e = Let("r", gen("i", n, row),
            gen("i", n, SBin("/", get(Var("r"), "i"), get(x, IConst(0)))))
    ks = compile_kernels([("mv8", e, {"A": (n, m), "x": (m,)})], dtype="int8")
    k = ks["mv8"]
    assert "const int8_t *VERISCHED_RESTRICT /* A */" in render_header([k.lowered], "mv8.c")
    rng = np.random.default_rng(11)
    a = rng.integers(-128, 128, size=(7, 13)).astype(np.int8)
    v = rng.integers(-128, 128, size=13).astype(np.int8)
    v[0] = 3
    got = k({"A": a, "x": v}, n=7, m=13)
    assert got.dtype == np.int8
    exact = (a.astype(np.int64) @ v.astype(np.int64)) // 3
    assert np.abs(exact).max() > 127           # the test exercises the wrap
    np.testing.assert_array_equal(got, exact.astype(np.int8))
    body = "\n".join(k.lowered.body)
    # computes in int32: int8_t only in the entry check's byte count of the int8 input
    # and in the explicit conversion of the store into the output (-Wconversion)
    rest = body.replace("sizeof(int8_t)", "").replace("out[i_1] = (int8_t)(", "")
    assert "int32_t" in body and "int8_t" not in rest, body
    assert "out[i_1] = (int8_t)(vs_idiv(" in body
    assert "vs_cbytes(vs_cmul(n, m), sizeof(int8_t))" in body


def test_index_floor_division_and_modulo_follow_z():
    f = Var("f")
    e = gen("i", n, get(f, IBin("%", IBin("-", IVar("i"), IConst(3)), IConst(4))))
    d = gen("i", n, get(f, IBin("/", IBin("-", IVar("i"), IConst(3)), IConst(2))))
    run_all([e, d], {"f": (n,)}, [{"n": 9}])


def test_generated_indices_are_simplified():
    e = gen("i", IBin("+", n, IConst(0)),
            get(Var("f"), IBin("-", IBin("+", IBin("*", IVar("i"), IConst(1)), IConst(2)),
                               IConst(2))))
    body = "\n".join(lower(e, {"f": (n,)}).body)
    assert "out[i] = f[i];" in body and "+ 0" not in body and "*1" not in body


def test_polynomials_and_prover():
    p = from_idx(IBin("-", IBin("*", IBin("+", n, IConst(1)), IConst(2)), n))
    assert p == Poly.var("n") + 2 and evaluate(p, {"n": 5}) == 7
    f = Facts(sizes=frozenset({"n"}))
    f.add(Poly.var("n") - 1)
    f.bind("i")
    f.add(Poly.var("i"))
    f.add(Poly.var("n") - 1 - Poly.var("i"))
    assert f.ge0(Poly.var("n") - Poly.var("i") - 1)
    assert not f.ge0(Poly.var("i") - 1)
    assert f.ge0(Poly.var("n") * Poly.var("n") - 1)


@pytest.mark.parametrize("bad,why", [
    (Var("f"), "eta"),
    (gen("i", n, get(gen("j", n, get(Var("f"), "j")), "i")), "get_gen"),
    (gen("i", n, SBin("+", Var("f"), get(Var("f"), "i"))), "rank"),
])
def test_not_normal_terms_are_refused_with_the_subterm(bad, why):
    with pytest.raises(NotNormalError) as exc:
        lower(bad, {"f": (n,)})
    assert why in str(exc.value) and "offending subterm" in str(exc.value)


def test_a_tensor_sum_of_generations_is_stored_then_accumulated():
    """`GEN <+> GEN` is in normal form (decision #135): the left stored, the right
    accumulated, each in its own loop (a schedule that wants one loop normalizes)."""
    e = TAdd(gen("i", n, get(Var("f"), "i")), gen("j", n, SBin("*", get(Var("f"), "j"),
                                                                  get(Var("f"), "j"))))
    lw = lower(e, {"f": (n,)}, name="two")
    body = "\n".join(lw.body)
    assert "out[i] = f[i];" in body and "out[j] += (f[j] * f[j]);" in body, body
    x = np.array([1.5, -2.0, 3.0], np.float32)
    np.testing.assert_array_equal(build([lw], get_target("c"))["two"]({"f": x}, n=3), x + x * x)


def test_unsupported_inputs_give_clear_errors():
    with pytest.raises(LowerError, match="element type"):
        lower(pipeline_fused(), {"f": (n,)}, dtype="float16")
    with pytest.raises(LowerError, match="kernel name"):
        lower(pipeline_fused(), {"f": (n,)}, name="not a name")
    # A free index variable is a size parameter; a given order must list it.
    with pytest.raises(LowerError, match="size parameters"):
        lower(gen("i", n, get(Var("f"), "q")), {"f": (n,)}, sizes=["n"])


def test_all_zero_program_is_zeros_of_its_generations_extents():
    # Regression (differential tests): GEN [i < 1] (0 <+> 0) was refused as having no
    # rank; like the interpreter, a bare zero is a scalar there: one zero (fault 3 of
    # tests/test_lower_faults.py, which runs more such programs against the interpreter).
    ks = run_all([gen("i", 1, TAdd(Zero(), Zero()))], {"f": (n,)}, [{"n": 3}])
    assert ks["t0"].lowered.out_extents_c == ["1"]
    np.testing.assert_array_equal(ks["t0"]({"f": np.ones(3, np.float32)}, n=3), [0.0])


def test_parallel_loops_follow_the_rule():
    # Top-level generations are parallel; loops under a SUM and inner loops are not.
    e = Let("b", gen("j", n, get(Var("f"), "j")),
            gen("i", n, summ("k", n, SBin("*", get(Var("b"), "k"), get(Var("f"), "i")))))
    body = lower(e, {"f": (n,)}, parallel=True).body
    assert sum("#pragma omp parallel for" in s for s in body) == 2
    ts = summ("k", n, gen("j", n, get(Var("f"), "j")))
    assert not any("#pragma" in s for s in lower(ts, {"f": (n,)}, parallel=True).body)
    assert not any("#pragma" in s for s in lower(e, {"f": (n,)}, parallel=False).body)


def test_tensor_guard_else_branch_and_zero_leaves():
    A = Var("A")
    g = gen("i", n, Guard(PCmp("=", IVar("i"), IConst(1)), gen("j", m, get(A, "i", "j"))))
    z = Concat(IConst(1), isub(n, 1), Zero(), gen("i", isub(n, 1), gen("j", m, get(A, "i", "j"))))
    lo = Gen("i", IConst(-2), IBin("-", n, IConst(2)), gen("j", m, get(A, "i", "j")))
    run_all([g, z, lo], {"A": (n, m)}, [{"n": 1, "m": 2}, {"n": 4, "m": 3}])


def test_assumptions_simplify_code_and_are_enforced():
    # Peeling a first and last element needs n >= 2 (a derivation hypothesis).
    f = Var("f")
    e = Concat(IConst(1), isub(n, 1), gen("i", 1, get(f, "i")),
               Concat(isub(n, 2), IConst(1), Gen("i", IConst(1), isub(n, 1), get(f, "i")),
                      Gen("i", isub(n, 1), n, get(f, "i"))))
    plain = lower(e, {"f": (n,)}, name="plain")
    assumed = lower(e, {"f": (n,)}, name="assumed", assume=[PCmp("<=", IConst(2), n)])
    assert len(assumed.body) < len(plain.body)
    ks = compile_kernels([("a", e, {"f": (n,)})], dtype="float32")
    x = np.arange(1, 6, dtype=np.float32)
    np.testing.assert_array_equal(ks["a"]({"f": x}, n=5), x)
    from verisched.codegen import KernelCallError
    from verisched.targets.native import build
    from verisched.targets.registry import get_target

    k = build([assumed], get_target("c"))["assumed"]
    np.testing.assert_array_equal(k({"f": x}, n=5), x)
    with pytest.raises(KernelCallError, match="violate the assumption"):
        k({"f": x[:1]}, n=1)


def test_prover_uses_floor_division_facts():
    f = Facts(sizes=frozenset({"n"}))
    f.add(Poly.var("n") - 2)
    q = from_idx(IBin("/", isub(n, 2), IConst(64)))
    f.bind("yo")
    f.add(Poly.var("yo"))
    f.add(q - 1 - Poly.var("yo"))
    row = Poly.var("yo") * 64 + 65
    assert f.ge0(q) and f.ge0(Poly.var("n") - 1 - row)


def test_specialize_fixes_sizes_but_respects_shadowing():
    from verisched.pybridge.terms import specialize

    k = IVar("k")
    e = gen("i", IBin("/", n, k), summ("k", IConst(2), get(Var("f"), IBin("*", IVar("i"), k))))
    s = specialize(e, {"k": 4})
    assert s.hi == IBin("/", n, IConst(4))
    assert s.body.body.index == IBin("*", IVar("i"), k)  # the bound k is untouched
    lw = lower(specialize(Split(k, n, gen("j", n, get(Var("f"), "j"))), {"k": 4}), {"f": (n,)})
    assert [a for a, _ in lw.sizes] == ["n"] and "vs_fdiv" not in "\n".join(lw.body)


def test_let_buffer_sized_by_an_enclosing_loop_variable():
    # Prefix sums through a per-row buffer of extent i + 1 (heap, freed every row).
    f = Var("f")
    i1 = IBin("+", IVar("i"), IConst(1))
    e = gen("i", n, Let("t", gen("j", i1, get(f, "j")), summ("j", i1, get(Var("t"), "j"))))
    ks = run_all([e], {"f": (n,)}, [{"n": 1}, {"n": 9}], target="openmp")
    body = "\n".join(ks["t0"].lowered.body)
    # Its count is checked: an extent beyond int (or an overflow) is a failed allocation.
    assert "float *t = (float *)vs_alloc(vs_cext(vs_cadd(i, 1)), sizeof(float), 0);" in body
    assert "free(t)" in body
    x = np.arange(1, 6, dtype=np.float32)
    np.testing.assert_array_equal(ks["t0"]({"f": x}, n=5), np.cumsum(x))
