"""Target tests: checked calls, compiler errors, caching, OpenMP agreement, the
header, and every hand-written kernel under ASan+UBSan."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
from codegen_reference import compile_kernel, run_reference
from test_lower_unit import pipeline_fused, pipeline_two_stage

from verisched.codegen import CompileError, KernelCallError, lower
from verisched.codegen.render import render_header
from verisched.pybridge.terms import (
    Gen,
    Guard,
    IBin,
    IConst,
    IVar,
    Let,
    PadR,
    PCmp,
    SBin,
    Split,
    TAdd,
    Var,
    gen,
    get,
)
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

n, m = IVar("n"), IVar("m")


@pytest.fixture()
def fused():
    return compile_kernel(pipeline_fused(), {"f": (n,)}, name="fused")


def test_bad_arrays_and_sizes_are_refused_before_c(fused):
    x = np.ones(4, dtype=np.float32)
    cases = [
        ({"f": x.astype(np.float64)}, {"n": 4}, "dtype"),
        ({"f": np.ones(5, dtype=np.float32)}, {"n": 4}, "shape"),
        ({"f": np.ones((4, 1), dtype=np.float32)}, {"n": 4}, "shape"),
        ({}, {"n": 4}, "inputs must be"),
        ({"f": [1.0, 2.0]}, {"n": 2}, "numpy array"),
        ({"f": x}, {}, "size parameters"),
        ({"f": x}, {"n": 4, "k": 2}, "unexpected"),
        ({"f": x}, {"n": 0}, "positive"),
        ({"f": x}, {"n": -3}, "positive"),
        ({"f": x}, {"n": 4.0}, "must be an int"),
        ({"f": x}, {"n": True}, "must be an int"),
    ]
    for inputs, sizes, msg in cases:
        with pytest.raises(KernelCallError, match=msg):
            fused.call(inputs, sizes)
    with pytest.raises(KernelCallError, match="out must be"):
        fused.call({"f": x}, {"n": 4}, out=np.empty(3, dtype=np.float32))


def test_non_contiguous_inputs_are_copied(fused):
    x = np.arange(8, dtype=np.float32)[::2]
    np.testing.assert_array_equal(fused({"f": x}, n=4), [0, 2, 6, 10])


@pytest.mark.parametrize("target", ["c", "openmp"])
def test_a_kernel_with_sizes_but_no_input_arrays_runs(target):
    """`GEN [i < n] 5/2`: the C function's first argument is the int n, not an array
    (the call once took its pointer type from the first argument and raised a
    TypeError); bind, used by the benchmarks, takes the same path."""
    from verisched import pipeline
    from verisched.pybridge.terms import Lit, gen

    k = pipeline.compile_program(gen("i", "n", Lit(5, 2)), {}, target, sizes=["n"],
                                 unsafe=True)
    np.testing.assert_array_equal(k({}, n=3), np.full(3, 2.5, np.float32))
    out = np.zeros(4, np.float32)
    k.bind({}, {"n": 4}, out)()
    np.testing.assert_array_equal(out, np.full(4, 2.5, np.float32))


@pytest.mark.parametrize("target", ["c", "openmp"])
def test_an_int32_overflow_wraps_as_the_banner_says(target):
    """Integer kernels wrap modulo 2^32 (numpy's int32 does the same) in their own
    unsigned arithmetic, so the file needs no -fwrapv: built without it under UBSan
    (which once reported "signed integer overflow" in the int32 Jacobi kernels at
    n = 1), and built with -ftrapv, which traps on any signed overflow left.  Coq's
    Z.div of INT32_MIN by -1 is 2^31, which wraps to INT32_MIN, where C's `/` raised
    SIGFPE and killed the caller."""
    from verisched.pybridge.coqterm import parse_program

    expr = parse_program("GEN [ i < n ] (f _[ i ] * f _[ i ] + f _[ i ]) / g _[ i ] "
                         "+ (SUM [ j < n ] f _[ j ])")
    t = get_target(target)
    lw = lower(expr, {"f": (n,), "g": (n,)}, name="sq", dtype="int32", parallel=t.parallel)
    f = np.array([70000, -3, 46341, 2**31 - 1, -(2**31)], np.int32)
    g = np.array([1, -1, 3, -1, -1], np.int32)
    with np.errstate(over="ignore"):
        num = f * f + f
        want = np.floor_divide(num, g) + f.sum(dtype=np.int32)
    assert num[4] == -(2**31) and g[4] == -1  # the division C's `/` traps on
    np.testing.assert_array_equal(build([lw], t)["sq"]({"f": f, "g": g}, n=5), want)
    exe = build_sanitized([lw], t)
    got = run_sanitized(exe, lw, {"f": f, "g": g}, {"n": 5}, (5,))
    np.testing.assert_array_equal(got, want)
    assert "-fwrapv" not in t.build_hint(Path("sq.c"), "int32")
    assert "-fwrapv" not in t.cflags()
    trapping = dataclasses.replace(t, extra_flags=(*t.extra_flags, "-ftrapv"))
    np.testing.assert_array_equal(build([lw], trapping)["sq"]({"f": f, "g": g}, n=5), want)


def test_malformed_env_and_input_names_are_refused_by_name():
    """compile_program's env of the wrong kind (None, a string extent) and a kernel call
    whose input names mix types: each named, where a TypeError or AttributeError came
    from inside (`'str' object has no attribute 'left'`, sorting str against int); an
    input read with more indices than its extents, where Coq refused the section."""
    from verisched import pipeline
    from verisched.pipeline import DerivationError
    from verisched.pybridge.coqterm import parse_program

    expr = parse_program("GEN [ i < n ] f _[ i ] + f _[ i ]")
    for env, says in ((None, "env must map each tensor's name to its extents, got NoneType"),
                      ({"f": ("n",)}, r"env\['f'\] = \('n',\): extents are a tuple of index"),
                      ({"f": n}, r"env\['f'\] = IVar\(name='n'\): extents are a tuple"),
                      # the rank: said by the tensor, where Coq refused the section
                      ({"f": ()}, r"tensor f is read with 1 indices, but env gives it 0 "
                                  r"extents \(a scalar\)")):
        with pytest.raises(DerivationError, match=says):
            pipeline.compile_program(expr, env, "c", name="t", unsafe=True)
    k = pipeline.compile_program(expr, {"f": (n,)}, "c", name="t", unsafe=True)
    x = np.ones(3, np.float32)
    with pytest.raises(KernelCallError, match=r"inputs must be \['f'\], got \['x', 1\]"):
        k({1: x, "x": x}, n=3)


def test_missing_compiler_is_reported(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("VERISCHED_CACHE", str(tmp_path))
    with pytest.raises(CompileError, match="not found"):
        compile_kernel(pipeline_fused(), {"f": (n,)})


def test_failing_compiler_shows_message_and_keeps_the_file(monkeypatch, tmp_path):
    cc = tmp_path / "badcc"
    cc.write_text("#!/bin/sh\necho 'error: simulated failure' >&2\nexit 1\n")
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    monkeypatch.setenv("VERISCHED_CACHE", str(tmp_path / "cache"))
    with pytest.raises(CompileError) as exc:
        compile_kernel(pipeline_fused(), {"f": (n,)}, name="kept")
    msg = str(exc.value)
    assert "simulated failure" in msg
    kept = Path(msg.split(" on ")[1].split(":\n")[0])
    assert kept.exists() and "int kept(" in kept.read_text()
    assert not list((tmp_path / "cache").glob("*.so"))  # nothing half-written


def test_compiled_kernels_are_cached_by_content(monkeypatch, tmp_path):
    monkeypatch.setenv("VERISCHED_CACHE", str(tmp_path))
    k1 = compile_kernel(pipeline_fused(), {"f": (n,)}, name="c1")
    stamp = os.stat(k1.path).st_mtime_ns
    k2 = compile_kernel(pipeline_fused(), {"f": (n,)}, name="c1")
    assert k2.path == k1.path and os.stat(k2.path).st_mtime_ns == stamp
    k3 = compile_kernel(pipeline_fused(), {"f": (n,)}, name="c1", fast_math=True)
    assert k3.path != k1.path
    assert not list(tmp_path.glob("*.tmp"))


def test_threads_building_one_kernel_at_once_each_get_it(monkeypatch, tmp_path):
    # Every thread of a process linked into one temporary file and read the others'
    # half-written output: 1-3 of 4 threads got "wrote no usable shared object".
    import threading
    from concurrent.futures import ThreadPoolExecutor

    lw = lower(pipeline_fused(), {"f": (n,)}, name="par")
    for round_ in range(3):
        monkeypatch.setenv("VERISCHED_CACHE", str(tmp_path / str(round_)))  # empty: built
        start = threading.Barrier(4)

        def one(_: int, start: threading.Barrier = start) -> float:
            start.wait()
            k = build([lw], get_target("c"))["par"]
            return float(k({"f": np.arange(4, dtype=np.float32)}).sum())

        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(one, range(4))) == [3.0 + 6.0] * 4  # f[i - 1] + f[i]
        assert not list((tmp_path / str(round_)).glob("*.tmp"))


def blur_two_stage():
    """A 3x3 box blur as two separable stages (the shape of the paper's Fig. 8)."""
    def tap(t, i, j):
        return get(Var(t), i, j)

    def s3(a, b, c):
        return SBin("+", SBin("+", a, b), c)

    i, j = IVar("i"), IVar("j")
    bx = gen("i", n, gen("j", m, s3(tap("img", i, IBin("-", j, IConst(1))), tap("img", i, j),
                                    tap("img", i, IBin("+", j, IConst(1))))))
    by = gen("i", n, gen("j", m, s3(tap("bx", IBin("-", i, IConst(1)), j), tap("bx", i, j),
                                    tap("bx", IBin("+", i, IConst(1)), j))))
    return Let("bx", bx, by)


def test_openmp_matches_c_and_reference():
    env = {"img": (n, m)}
    kc = compile_kernel(blur_two_stage(), env, name="blur_c")
    ko = compile_kernel(blur_two_stage(), env, name="blur_omp", target="openmp")
    assert ko.lowered.parallel_loops == 2
    # Row loops over single pixels keep their inner loop whole for the vectoriser.
    assert not any("collapse" in s for s in ko.lowered.body)
    rng = np.random.default_rng(3)
    for sizes in ({"n": 1, "m": 1}, {"n": 37, "m": 19}, {"n": 64, "m": 65}):
        img = rng.standard_normal((sizes["n"], sizes["m"])).astype(np.float32)
        want = run_reference(blur_two_stage(), {"img": img.astype(np.float64)}, sizes,
                             (sizes["n"], sizes["m"]), np.float64)
        np.testing.assert_allclose(kc({"img": img}, **sizes), want, rtol=1e-5, atol=1e-5)
        for threads in (1, 2):
            ko.set_threads(threads)
            np.testing.assert_allclose(ko({"img": img}, **sizes), want, rtol=1e-5, atol=1e-5)
    # libgomp allocates every thread's state up front: 2^31 - 1 ended the process in it.
    from verisched.targets.native import max_threads

    for bad in (0, -1, max_threads() + 1, 2**31 - 1, 2**40, True, 2.0):
        with pytest.raises(KernelCallError, match="threads must be an integer from 1 to"):
            ko.set_threads(bad)
    ko.set_threads(np.int64(2))
    with pytest.raises(KernelCallError, match="not an OpenMP kernel"):
        kc.set_threads(2)


def test_parallel_loop_over_few_tiles_collapses_with_the_next_generation():
    # Regression (bench blur): the partial last row of 64x64 tiles is a one-iteration
    # parallel loop, which left one thread idle; it now shares its iterations with
    # the column-of-tiles loop inside it (openmp.py, rule 5).
    from test_lower_unit import run_all

    f, a = Var("f"), IVar("a")
    tile = gen("c", IConst(3), gen("d", IConst(2), SBin("+", get(f, "a", "b"), get(f, "c", "d"))))
    tiles = gen("a", n, gen("b", m, tile))
    lw = lower(tiles, {"f": (n, m)}, parallel=True)
    pragmas = [s.strip() for s in lw.body if "#pragma" in s]
    assert pragmas == ["#pragma omp parallel for schedule(static) collapse(2)"]
    # Not rectangular (the inner bounds mention the outer variable): no collapse.
    shifted = gen("a", n, Gen("b", a, IBin("+", a, m), Let("t", tile, get(Var("t"), 1, 1))))
    assert not any("collapse" in s for s in lower(shifted, {"f": (n, m)}, parallel=True).body)
    # Both agree with the reference (and run clean under ASan+UBSan), including sizes
    # where the outer loop has one iteration.
    run_all([tiles, shifted], {"f": (n, m)},
            [{"n": 1, "m": 1}, {"n": 1, "m": 5}, {"n": 3, "m": 2}, {"n": 7, "m": 4}],
            target="openmp")


def test_parallel_loop_of_light_iterations_forks_only_when_long():
    # Regression (bench blur): the tiled blur's border rows and columns were four
    # parallel regions of about 2000 one-statement iterations each; their fork and join
    # cost more than the work (2-thread time 1.63 ms, 1.43 with them serial).  Such a
    # loop now forks only from PARALLEL_MIN_TRIPS iterations on (openmp.py, rule 7).
    from test_lower_unit import run_all

    from verisched.codegen.parallel import PARALLEL_MIN_TRIPS, _light, _linear

    f = Var("f")

    def pragmas(e, env):  # (an elementwise map is lowered twice: in place or not)
        return {s.strip() for s in lower(e, env, parallel=True).body if "#pragma" in s}

    light = gen("i", n, SBin("*", get(f, "i"), get(f, "i")))
    assert pragmas(light, {"f": (n,)}) == {
        f"#pragma omp parallel for schedule(static) if(n >= {PARALLEL_MIN_TRIPS})"}
    # A row of m elements per iteration is work enough: forked whatever n is.
    rows = gen("i", n, gen("j", m, SBin("+", get(f, "i", "j"), get(f, "i", "j"))))
    assert pragmas(rows, {"f": (n, m)}) == {"#pragma omp parallel for schedule(static)"}
    # Known to be short: no region at all.
    short = gen("i", IConst(100), SBin("*", get(f, "i"), get(f, "i")))
    assert pragmas(short, {"f": (IConst(100),)}) == set()
    # The body test reads the bounds the lowering prints.
    assert (_linear("m - 1") - _linear("m")).as_const() == -1
    assert _linear("(m + 61) / 64") is None and _linear("vs_min(a, b)") is None
    assert _light(["for (int x = m - 1; x < m; ++x) {", "out[x] = v[x];", "}"])
    assert not _light(["for (int x = 0; x < m; ++x) {", "out[x] = v[x];", "}"])
    assert not _light(["for (int x = 0; x < 2; ++x) {", "out[x] = v[x];", "}"])
    assert not _light(["memset(out, 0, (size_t)m * 4);"])
    assert _light(["double acc = v[i] * v[i];", "out[i] = acc;"])
    # Both sides of the threshold agree with the reference (and under ASan+UBSan).
    run_all([light], {"f": (n,)}, [{"n": 5}, {"n": PARALLEL_MIN_TRIPS + 3}], target="openmp")


def test_a_light_fallback_loop_forks_only_when_long():
    # Regression (bench reduce): under a SUM inside a parallel loop that runs fewer
    # iterations than threads, the first generation is a fallback (rule 6) that forks
    # at every step of the SUM; for two vector statements a step, a parallel dot
    # product took 0.3 ms a call for 4 us of work.  A light fallback now forks only
    # from PARALLEL_MIN_TRIPS iterations on, and not at all where its extent is known
    # to be smaller (openmp.py, rule 7).
    from test_lower_unit import run_all

    from verisched.codegen.parallel import PARALLEL_MIN_TRIPS
    from verisched.pybridge.terms import Sum

    f, p = Var("f"), IVar("p")

    def pragmas(e, env):
        return [s.strip() for s in lower(e, env, parallel=True).body if "#pragma" in s]

    def under_sum(extent, body):   # GEN c < n, SUM k < m, GEN l < extent: body
        return gen("c", n, Sum("k", IConst(0), m, gen("l", extent, body)))

    short = under_sum(IConst(2), get(f, "c", "k", "l"))
    assert pragmas(short, {"f": (n, m, IConst(2))}) == [
        "#pragma omp parallel for schedule(static)"]
    long = under_sum(p, get(f, "c", "k", "l"))
    assert pragmas(long, {"f": (n, m, p)}) == [
        "#pragma omp parallel for schedule(static)",      # the copy with threads for c
        f"#pragma omp parallel for schedule(static) if(p >= {PARALLEL_MIN_TRIPS})"]
    # A fallback with a row of work per iteration forks whatever its count.
    rows = under_sum(IConst(2), gen("q", p, get(f, "c", "k", "l", "q")))
    assert pragmas(rows, {"f": (n, m, IConst(2), p)}) == [
        "#pragma omp parallel for schedule(static)", "#pragma omp parallel for schedule(static)"]
    run_all([short], {"f": (n, m, IConst(2))},
            [{"n": 1, "m": 3}, {"n": 3, "m": 1}, {"n": 5, "m": 4}], target="openmp")
    run_all([long], {"f": (n, m, p)}, [{"n": 1, "m": 3, "p": 5}, {"n": 3, "m": 2, "p": 1}],
            target="openmp")


def test_header_declares_the_abi():
    lw = lower(pipeline_two_stage(), {"f": (n,)}, name="two")
    h = render_header([lw], "two.c")
    assert ("int two(const float *VERISCHED_RESTRICT /* f */, int /* n */, "
            "float *VERISCHED_RESTRICT /* out */);") in h
    assert "#ifndef VERISCHED_two_c_" in h and "output extents n" in h
    # the guard keeps the name's case and hashes it: Two.c's header is not two.c's
    assert render_header([lw], "Two.c").split("\n")[1] != h.split("\n")[1]


def test_c_file_and_header_are_written_both_or_neither(tmp_path, monkeypatch):
    """A full disk while writing the C file once left the new header beside the old C
    file; now neither is replaced, no temporary file stays, and the error names the
    file the user asked for."""
    import errno
    import os

    from verisched.pybridge import derivation
    from verisched.targets.base import CSource

    lw = lower(pipeline_two_stage(), {"f": (n,)}, name="two")
    src = CSource(target=None, lowered=(lw,), c="#include <stdint.h>\nint x;\n",
                  header=render_header([lw], "two.c"))
    out = tmp_path / "k.c"
    out.write_text("old c")
    (tmp_path / "k.h").write_text("old h")
    real = os.fdopen

    def full(fd, mode="r", *a, **kw):
        f = real(fd, mode, *a, **kw)
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path / ".k.c.")):
            f.close()
            raise OSError(errno.ENOSPC, "No space left on device")
        return f

    monkeypatch.setattr(derivation.os, "fdopen", full)
    with pytest.raises(OSError, match=r"No space left on device: '.*k\.c'"):
        src.write(out)
    assert out.read_text() == "old c" and (tmp_path / "k.h").read_text() == "old h"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.c", "k.h"]
    monkeypatch.undo()
    src.write(out)
    assert '#include "k.h"' in out.read_text() and "int two(" in (tmp_path / "k.h").read_text()


def sanitizer_programs():
    f = Var("f")
    return [
        pipeline_fused(), pipeline_two_stage(),
        Split(IConst(4), n, gen("i", n, get(f, "i"))),
        PadR(IConst(2), n, gen("i", n, Guard(PCmp("<", IVar("i"), IConst(3)), get(f, "i")))),
        gen("i", n, TAdd(get(f, IBin("+", IVar("i"), IConst(2))), get(f, IBin("-", IVar("i"),
                                                                              IConst(3))))),
        Let("t", gen("j", IBin("*", n, IConst(2)), get(f, IBin("/", IVar("j"), IConst(2)))),
            gen("i", n, get(Var("t"), IBin("*", IVar("i"), IConst(2))))),
    ]


@pytest.mark.parametrize("target", ["c", "openmp"])
def test_hand_written_kernels_are_clean_under_asan_ubsan(target):
    t = get_target(target)
    progs = sanitizer_programs()
    lowered = [lower(e, {"f": (n,)}, name=f"s{i}", parallel=t.parallel)
               for i, e in enumerate(progs)]
    exe = build_sanitized(lowered, t)
    ks = build(lowered, t)
    for size in (1, 2, 5, 9):
        x = np.arange(1, size + 1, dtype=np.float32)
        for e, lw in zip(progs, lowered, strict=True):
            _, shape = ks[lw.name].extents({"n": size})
            want = run_reference(e, {"f": x.astype(np.float64)}, {"n": size}, shape, np.float64)
            got = run_sanitized(exe, lw, {"f": x}, {"n": size}, shape)
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=str(e))


def test_set_threads_holds_for_calls_from_other_threads():
    # OpenMP's count is per calling OS thread: set from the main thread, a call from a
    # worker thread ran with the default team.  It is applied before each call now.
    import ctypes
    import threading

    lw = lower(pipeline_fused(), {"f": (n,)}, name="teams", parallel=True)
    k = build([lw], get_target("openmp"))["teams"]
    k.set_threads(3)
    gomp = ctypes.CDLL("libgomp.so.1")
    seen: list[int] = []

    def worker() -> None:
        k({"f": np.arange(5, dtype=np.float32)})
        seen.append(gomp.omp_get_max_threads())  # this thread's count after the call

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [3]
