"""The peer benchmarks' own machinery (benchmarks/_common.py, bench_sgemm.py and its
report, bench_conv.py, bench_blur.py), without the peers: problem definitions, the numpy
convolution reference, interleaved timing order, the warnings about a disturbed peer,
and the plain "no kernel" outcome (bench gemmini's verdicts: test_bench_gemmini.py; the
ceiling probes: test_bench_peak.py).  Benchmarks themselves are measurements, not
tests: nothing here looks at a time."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def cm():
    return _load("_common")


def test_aspect_sweep_keeps_the_workload(cm) -> None:
    """Exo's Fig. 7-2b: K = 512, M·N = 512², M/N = 2^x."""
    sg = _load("bench_sgemm")
    ps = sg.problems([256], [-6, -2, 0, 2, 6], 512)
    assert [(p.M, p.N, p.K) for p in ps if p.group == "square"] == [(256, 256, 256)]
    for p, x in zip([p for p in ps if p.group == "aspect"], [-6, -2, 0, 2, 6], strict=True):
        assert p.M * p.N == 512 * 512 and p.K == 512
        assert p.M / p.N == pytest.approx(2.0 ** x)


def test_sgemm_no_plan_rule_picks_a_kernel_per_problem(monkeypatch) -> None:
    """--no-plan's rule (bench_sgemm.rule_choice): A read in place where N spans at most
    DIRECT_MAX_STRIPS column strips of the tile's width, else the strip kernel where
    use_strip says so, else packing once; a variant that was not loaded is never picked."""
    sg = _load("bench_sgemm")
    monkeypatch.setattr(sg, "nr", 64)
    # Row blocks of 144 rows, whatever this machine's caches (use_strip counts them).
    monkeypatch.setattr(sg, "block_sizes", lambda M, K, threads, N=None: {"mcr": 24, "kc": 256})
    once, strip, direct = "once", "strip", "direct"
    both = {sg.STRIP: strip, sg.DIRECT: direct}
    tall = sg.Problem("aspect", "64", 4096, 64, 512)
    edge = sg.Problem("x", "x", 4096, 64 * sg.DIRECT_MAX_STRIPS, 512)
    wide = sg.Problem("aspect", "1/64", 64, 4096, 512)
    big = sg.Problem("square", "2048", 2048, 2048, 2048)
    assert sg.rule_choice(tall, 1, once, both) == direct
    assert sg.rule_choice(edge, 1, once, both) == direct
    assert sg.rule_choice(sg.Problem("x", "x", 4096, edge.N + 1, 512), 2, once, both) == once
    assert sg.rule_choice(wide, 2, once, both) == strip  # one row block per thread
    assert sg.rule_choice(big, 2, once, both) == once
    assert sg.rule_choice(tall, 1, once, {sg.STRIP: strip}) == strip  # small: under 1 GFLOP
    assert sg.rule_choice(tall, 1, once, {}) == once
    # The AVX2 tile is 16 wide: 8 strips are 128 columns.
    monkeypatch.setattr(sg, "nr", 16)
    assert sg.rule_choice(sg.Problem("x", "x", 2048, 128, 512), 1, once, both) == direct
    assert sg.rule_choice(sg.Problem("x", "x", 1024, 256, 512), 1, once, {sg.DIRECT: direct}) \
        == once


def test_conv_reference_matches_direct_loops() -> None:
    cv = _load("bench_conv")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    want = np.zeros((2, 4, 4, 5))
    for n in range(2):
        for o in range(4):
            for y in range(4):
                for xx in range(5):
                    want[n, o, y, xx] = np.sum(x[n, :, y:y + 3, xx:xx + 3].astype(np.float64)
                                               * w[o])
    np.testing.assert_allclose(cv.reference(x, w), want, rtol=1e-12, atol=1e-12)
    # Layout candidates are exactly the permutations that give the wanted shape.
    assert cv.layouts(np.zeros((2, 3, 6, 7)), (2, 6, 7, 3)) == [(0, 2, 3, 1)]


def test_round_robin_interleaves_and_prepares(cm) -> None:
    log: list[str] = []
    vs = [cm.Variant(("a", "1"), lambda: log.append("a"), lambda: log.append("pa")),
          cm.Variant(("b", "1"), lambda: log.append("b"))]
    cm.time_round_robin(vs, repeat=3, warmup=1)
    # warm-up of each, then a b a b a b, each a preceded by its (untimed) prepare
    assert log == ["pa", "a", "b"] + ["pa", "a", "b"] * 3
    assert [len(v.times_ms) for v in vs] == [3, 3]


def test_missing_derivation_is_reported_not_raised(cm, tmp_path: Path) -> None:
    ours = cm.load_ours(tmp_path / "Nope.v", None, {}, [("1t", "c")], {"n"})
    assert ours.missing and "does not exist" in ours.missing and not ours.kernels
    empty = tmp_path / "Empty.v"
    empty.write_text("Definition x := 1.\n")
    assert "no Derive" in cm.load_ours(empty, None, {}, [("1t", "c")], {"n"}).missing


def test_bench_help_without_peers(capsys) -> None:
    """The benchmark modules load through `verisched bench` with only the package
    installed (peers are imported when a run starts, not at import)."""
    from verisched.cli import main

    for name in ("sgemm", "conv"):
        with pytest.raises(SystemExit) as exc:
            main(["bench", name, "--help"])
        assert exc.value.code == 0
        assert "--repeat" in capsys.readouterr().out


def test_an_out_dir_that_cannot_be_made_is_refused_before_the_run(tmp_path, capsys) -> None:
    """`--out-dir` is created and checked when the arguments are read: a benchmark of
    minutes must not end in a traceback because its results have nowhere to go."""
    from verisched.cli import main

    blocker = tmp_path / "file"
    blocker.write_text("")
    for name in ("sgemm", "conv", "blur", "gemmini", "proofs", "tune"):
        with pytest.raises(SystemExit) as exc:
            main(["bench", name, "--out-dir", str(blocker / "results")])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert f"argument --out-dir: {blocker / 'results'}: cannot create it ({blocker} is " \
               "not a directory)" in err, (name, err)
    fresh = tmp_path / "a" / "b"  # a missing directory is fine: made when written
    with pytest.raises(SystemExit):
        main(["bench", "proofs", "--out-dir", str(fresh), "--builds", "x"])
    err = capsys.readouterr().err
    assert "argument --builds" in err and "argument --out-dir" not in err
    assert not fresh.exists()


@pytest.mark.parametrize("argv, says", [
    (["sgemm", "--square", "0"], "argument --square: '0': expected an integer above 0"),
    (["sgemm", "--square", "-5"], "argument --square: '-5': expected an integer above 0"),
    (["sgemm", "--aspect", "40"], "argument --aspect: '40': expected an integer from -18 to 18"),
    (["sgemm", "--repeat", "0"], "argument --repeat: '0'"),
    (["sgemm", "--threads", "1"], "the multi-threaded count is at least 2"),
    (["sgemm", "--warm-ms", "-1"], "argument --warm-ms: '-1': expected a number of 0 or more"),
    (["sgemm", "--spin", "nan"], "argument --spin: 'nan'"),
    (["conv", "--threads", "0"], "argument --threads: '0'"),
    (["conv", "--quiet-wait", "-2"], "argument --quiet-wait: '-2'"),
    (["blur", "--size", "0", "5"], "argument --size: '0'"),
    (["blur", "--tile", "4", "-1"], "argument --tile: '-1'"),
    (["polybench", "--kernels", "nope"], "argument --kernels: invalid choice: 'nope'"),
    (["gemmini", "--layers", "res9"], "argument --layers: invalid choice: 'res9'"),
    (["idioms", "--scale", "0"], "argument --scale: '0'"),
    (["bridge", "--steps", "0"], "argument --steps: '0'"),
    (["reduce", "--threads", "1"], "the multi-threaded count is at least 2"),
    (["reduce", "--dot", "0"], "argument --dot: '0'"),
    (["reduce", "--dot", "--gemv"], "nothing to measure"),
    (["reduce", "--final-sum", "tree"], "argument --final-sum: invalid choice"),
    (["tune", "--conv", "1", "80", "100", "128", "0"], "argument --conv: '0'"),
    (["conv", "--target", "nope"], "argument --target: invalid choice: 'nope'"),
    (["sgemm", "--par-target", "avx9"], "argument --par-target: invalid choice: 'avx9'"),
    (["blur", "--vec-target", "x"], "argument --vec-target: invalid choice: 'x'"),
    # a misspelt file of ours timed the peers alone and wrote their table over the results
    (["sgemm", "--ours-file", "Sgem.v"], "argument --ours-file: Sgem.v: does not exist"),
    (["conv", "--ours-file", "."], "argument --ours-file: .: is a directory"),
    # no problem at all: a StopIteration, a ZeroDivisionError or numpy's ValueError
    (["sgemm", "--square", "--aspect", "--no-in-cache"], "nothing to measure"),
    (["gemmini", "--layers"], "argument --layers: expected at least one argument"),
    (["polybench", "--kernels"], "argument --kernels: expected at least one argument"),
    (["tune", "--problems"], "argument --problems: expected at least one argument"),
    # numpy's "expected non-negative integer" named no flag
    (["gemmini", "--seed", "-1"], "argument --seed: '-1': expected an integer of 0 or more"),
])
def test_a_benchmarks_bad_argument_is_refused_when_the_arguments_are_read(
        argv: list[str], says: str, tmp_path: Path, capsys) -> None:
    """Each of these once ran into a traceback, a zero division or an empty median
    minutes in (or drew an array of a negative extent), or (a misspelt target) timed the
    peers alone and wrote their table over the results; now argparse names the argument
    before anything is loaded or timed, and nothing is written."""
    from verisched.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["bench", *argv, *(["--out-dir", str(tmp_path / "r")]
                                if argv[0] not in ("polybench", "idioms", "bridge") else [])])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("size, says", [
    (["1", "8"], "peel a first and last row and column: need N, M >= 2"),
    # Halide's vectorize(x, 8) read a row narrower than a vector before its start
    (["8", "5", "--isa", "avx2"],
     "Halide's schedules vectorize rows by 8: need M >= 8 (or --no-halide)"),
    # tile+vec at the AVX-512 kernels' width
    (["8", "12", "--isa", "avx512"],
     "Halide's schedules vectorize rows by 16: need M >= 16 (or --no-halide)"),
])
def test_blur_sizes_its_schedules_cannot_run_are_refused_first(
        size: list[str], says: str, tmp_path: Path, capsys) -> None:
    from verisched.cli import main

    assert main(["bench", "blur", "--size", *size, "--out-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err
    assert not (tmp_path / "r").exists()


def test_sgemm_sizes_beyond_this_machines_memory_are_refused_first(capsys) -> None:
    """The largest problem is sized before anything runs, not after the smaller ones
    were timed."""
    sg = _load("bench_sgemm")
    todo = sg.problems([256, 100000], [], 512, in_cache=False)
    why = sg.memory_refusal(todo)
    if sg.available_memory() is None:
        pytest.skip("/proc/meminfo does not say what memory is available")
    assert why is not None and why.startswith("square 100000 (100000x100000x100000) needs "
                                              "about 484.3 GiB"), why
    assert sg.memory_refusal(sg.problems([256], [-6, 6], 512)) is None


def test_fix_names_a_block_size_of_the_derivation(cm, monkeypatch) -> None:
    """`--fix` takes positive block sizes, and only the derivation's: a misspelt name
    used to be dropped without a word, the run timing the default blocks.  A misspelt
    `--derivation` stops too (a file without one still runs the peers alone)."""
    with pytest.raises(SystemExit, match="'mcr=0': a block size is a positive integer"):
        cm.fix_args(["mcr=0"])
    with pytest.raises(SystemExit, match="'mcr': expected NAME=INT"):
        cm.fix_args(["mcr"])
    assert cm.fix_args(["mcr=3", "kc=256"]) == {"mcr": 3, "kc": 256}
    with pytest.raises(SystemExit, match="--fix kc: given twice, as 256 and as 128"):
        cm.fix_args(["kc=256", "mcr=3", "kc=128"])
    assert cm.fix_args(["kc=256", "kc=256"]) == {"kc": 256}
    assert cm.fix_args(["mcr=3,kc=256"]) == {"mcr": 3, "kc": 256}  # as --size takes them
    with pytest.raises(SystemExit, match="--fix kc: given twice, as 256 and as 128"):
        cm.fix_args(["kc=256,kc=128"])

    class Loaded:
        sizes = ("M", "N", "K", "mcr", "kc")

    monkeypatch.setattr(cm, "derivations_in", lambda p: ["sgemm"])
    monkeypatch.setattr(cm.pipeline, "load", lambda *a, **k: Loaded())
    path = cm.REPO_ROOT / "coq" / "Examples" / "Sgemm.v"
    with pytest.raises(SystemExit, match=r"Sgemm.v has no derivation 'sgem' \(it has: sgemm\)"):
        cm.load_ours(path, "sgem", {}, [], {"M", "N", "K"})
    with pytest.raises(SystemExit, match=r"--fix zz: not a block size of "
                       r"coq/Examples/Sgemm.v:sgemm \(its block sizes: mcr, kc\)"):
        cm.load_ours(path, "sgemm", {"zz": 3}, [], {"M", "N", "K"})


def test_call_waits_for_other_pools_spinning_workers(cm, monkeypatch) -> None:
    """No call starts while another pool's workers may still spin, a 1-thread one
    included (ours runs on a bound core, decision #119); a variant of the same pool
    does not wait."""
    import time

    stamps: list[tuple[str, float]] = []
    slept: list[str] = []  # who was about to run when the round robin slept
    sleep = time.sleep
    monkeypatch.setattr(cm.time, "sleep", lambda s: (slept.append(stamps[-1][0]), sleep(s)))

    def variant(who: str, key: tuple[str, str], **kw) -> object:
        return cm.Variant(key, lambda: stamps.append((who, time.perf_counter())),
                          prepare=lambda: stamps.append((who + "?", 0.0)), **kw)

    a = variant("a", ("blas", "2t"), threads=2, spins_for=0.03)
    d = variant("d", ("blas", "1t"))
    c = variant("c", ("ours", "1t"))
    b = variant("b", ("ours", "2t"), threads=2)
    waited = cm.time_round_robin([a, d, c, b], repeat=2, warmup=0)
    assert waited > 0
    runs = [(w, t) for w, t in stamps if not w.endswith("?")]
    assert [w for w, _ in runs] == ["a", "d", "c", "b"] * 2
    for k, (who, t) in enumerate(runs):
        if who in "bc":
            assert t >= max(s for x, s in runs[:k] if x == "a") + 0.03
    # Only the 1-thread call of the other pool slept (b found the spin already over,
    # d is of a's own pool).
    assert slept == ["c?", "c?"]


def test_estimate_says_problem_k_of_n_and_the_time_left(capsys, monkeypatch) -> None:
    import _common as cm

    clock = iter([0.0, 10.0, 30.0])
    monkeypatch.setattr(cm.time, "perf_counter", lambda: next(clock))
    e = cm.Estimate(3)
    e.next("a")  # nothing done yet: no estimate
    e.next("b")  # 10 s for one problem, two left
    e.next("c")  # 30 s for two, one left
    err = capsys.readouterr().err.splitlines()
    assert err == ["[1/3] a", "[2/3] b (about 20 s left)", "[3/3] c (about 15 s left)"]


def test_omp_threads_bound_unless_the_caller_says_otherwise(cm, monkeypatch) -> None:
    """bench_sgemm, bench_conv and bench_blur bind OpenMP threads through one helper
    (setdefault: a caller's own OMP_PROC_BIND / OMP_PLACES win) and report them."""
    monkeypatch.delenv("OMP_PROC_BIND", raising=False)
    monkeypatch.setenv("OMP_PLACES", "threads")
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    cm.bind_omp_threads()
    assert os.environ["OMP_PROC_BIND"] == "close"
    assert os.environ["OMP_PLACES"] == "threads"
    assert cm.omp_env() == ("OMP_WAIT_POLICY=passive, GOMP_SPINCOUNT=unset: libgomp default, "
                            "OMP_PROC_BIND=close, OMP_PLACES=threads")
    monkeypatch.setenv("GOMP_SPINCOUNT", "30000")
    assert "GOMP_SPINCOUNT=30000" in cm.omp_env()
    for b in ("bench_sgemm", "bench_conv", "bench_blur"):
        text = (BENCH / f"{b}.py").read_text()
        assert "cm.bind_omp_threads()" in text and "cm.omp_env()" in text, b


def test_conv_default_derivation_by_l1() -> None:
    """`bench conv` times the 6 x 64 depth-blocked kernel where one tap's 64-channel
    weight panel (128 channels deep) fits L1 by targets/blocking.py's model, the 6 x 32
    one elsewhere, and every derivation it names is one Conv.v derives."""
    from verisched.targets.blocking import Cache, CacheSizes

    cv = _load("bench_conv")
    xeon = CacheSizes(Cache(48 * 1024, 12), Cache(2048 * 1024, 16), "test")
    zen4 = CacheSizes(Cache(32 * 1024, 8), Cache(1024 * 1024, 8), "test")
    assert cv.default_derivation("avx512", xeon) == "conv_avx512_kc64"
    assert cv.default_derivation("avx512", zen4) == "conv_avx512_kc"
    assert cv.default_derivation("avx2", xeon) == "conv_avx2"
    conv_v = (BENCH.parent / "coq" / "Examples" / "Conv.v").read_text()
    for name in cv.TILE_WIDTH:
        assert f"Derive {name} SuchThat" in conv_v, name
    assert cv.DEPTH_BLOCKED <= set(cv.TILE_WIDTH)
    assert {n for names in cv.CANDIDATES.values() for n in names} <= set(cv.TILE_WIDTH)


def test_sgemm_flags_a_stalled_peer() -> None:
    """A run where OpenBLAS is much slower on 2 threads than on 1 (threads descheduled)
    is named in the report's warning; an ordinary run is not."""
    from types import SimpleNamespace

    rp = _load("_sgemm_report")
    ok = (SimpleNamespace(label="square 512"), {"openblas-1t": 2.0, "openblas-2t": 1.1})
    bad = (SimpleNamespace(label="square 768"), {"openblas-1t": 6.0, "openblas-2t": 24.0})
    assert rp.stalled_peer([ok, bad], 2) == ["square 768"]
    assert rp.stalled_peer([ok], 2) == []
    assert rp.stalled_peer([bad], 1) == []


def test_sgemm_stall_warning_says_whether_the_host_took_cpu() -> None:
    """The stalled-peer warning's tail reads the steal counter of the stalled problems:
    steal puts the stall on the host, none puts it inside the VM."""
    from types import SimpleNamespace

    rp = _load("_sgemm_report")
    bad = SimpleNamespace(label="square 768")
    stolen = [(bad, {"openblas-1t": 6.0, "openblas-2t": 24.0, "steal_cores": 0.31})]
    quiet = [(bad, {"openblas-1t": 6.0, "openblas-2t": 24.0, "steal_cores": 0.0})]
    assert "host took 0.31 core(s)" in rp.stall_cause(stolen, ["square 768"])
    assert "did not deschedule" in rp.stall_cause(quiet, ["square 768"])
    # A result file from before steal was recorded makes no claim either way.
    assert rp.stall_cause([(bad, {"openblas-1t": 6.0, "openblas-2t": 24.0})],
                          ["square 768"]) == ""


def test_other_load_keeps_the_hosts_steal_apart(cm, monkeypatch) -> None:
    """Steal jiffies (/proc/stat's 8th column) are neither other processes' load nor
    idle: OtherLoad reports them as `steal`, in cores, and `cores` leaves them out."""
    hz = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal
    before = [100, 0, 50, 1000, 0, 0, 0, 10]
    state = {"vals": before}

    def fake_jiffies():
        vals = state["vals"]
        idle = vals[3] + vals[4]
        return sum(vals) - idle - vals[7], sum(vals), vals[7]

    monkeypatch.setattr(cm, "_cpu_jiffies", fake_jiffies)
    clock = {"t": 10.0}
    monkeypatch.setattr(cm.time, "perf_counter", lambda: clock["t"])
    monkeypatch.setattr(cm.os, "times", lambda: os.times_result((0.0, 0.0, 0.0, 0.0, 0.0)))
    load = cm.OtherLoad()
    # One second later: other processes ran half a core, the host stole a quarter.
    clock["t"] = 11.0
    state["vals"] = [before[0] + hz // 2, 0, 50, 1000 + hz, 0, 0, 0, 10 + hz // 4]
    assert load.cores() == pytest.approx((hz // 2) / hz)
    assert load.steal() == pytest.approx((hz // 4) / hz)
    assert cm.steal_note(load.steal()) and "0.25 core(s)" in cm.steal_note(load.steal())
    assert cm.steal_note(0.0) is None


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="reads Linux's /proc/stat")
def test_cpu_jiffies_splits_the_real_counters(cm) -> None:
    """busy + idle + steal make up the total, as /proc/stat's first line has them."""
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    busy, total, steal = cm._cpu_jiffies()
    assert 0 <= steal <= total and 0 <= busy <= total
    assert total >= sum(vals)  # read after the line above: counters only grow
    assert busy + steal <= total


def test_warm_up_lasts_warm_ms_before_each_timed_call(cm, monkeypatch) -> None:
    """`warm_ms` keeps the untimed calls going until that long has passed (at least
    `warm` of them), before every timed call: after a wait for another pool's workers
    the cores need milliseconds, not one short call, to run at full speed (#109).
    Timed on a clock of the test's own, which each call advances by 1 ms: on the real
    clock a loaded CI machine could preempt the process between the warm-up's start
    and its first call, and the calls then spanned less than warm_ms (seen once)."""

    class Clock:
        now = 1000.0

        def perf_counter(self) -> float:
            return self.now

        def sleep(self, seconds: float) -> None:
            self.now += seconds

    clock = Clock()
    monkeypatch.setattr(cm, "time", clock)
    stamps: list[tuple[int, float]] = []

    def run() -> None:
        # times_ms has r entries during the r-th batch (its timed call is the last).
        stamps.append((len(v.times_ms), clock.now))
        clock.sleep(0.001)

    v = cm.Variant(("ours", "1t"), run, warm=1, warm_ms=8.0)
    cm.time_round_robin([v], repeat=2, warmup=0)
    assert len(v.times_ms) == 2
    for r in range(2):
        batch = [t for k, t in stamps if k == r]
        # at least 8 untimed calls of 1 ms (float rounding may need a 9th), then the
        # timed one, 8 ms or more after the first
        assert len(batch) >= 9 and batch[-1] - batch[0] >= 0.008
    # Without warm_ms, exactly `warm` untimed calls precede each timed one.
    v = cm.Variant(("ours", "1t"), run, warm=2)
    stamps.clear()
    cm.time_round_robin([v], repeat=1, warmup=0)
    assert len(stamps) == 3


def test_fastest_picks_the_quicker_candidate_by_median(cm) -> None:
    """The planner's trial (`fastest`) keeps the candidate whose timed calls are
    shorter, after an untimed one of its own, and times calls for `timed_ms` a round."""
    import time

    calls = {"slow": 0, "quick": 0}

    def make(name: str, seconds: float):
        def run() -> None:
            calls[name] += 1
            time.sleep(seconds)
        return run

    cands = {"slow": make("slow", 0.004), "quick": make("quick", 0.001)}
    assert cm.fastest(cands, warm_ms=0.0, trials=3, timed_ms=0.0, min_calls=1) == "quick"
    assert calls == {"slow": 6, "quick": 6}  # per trial: one warm-up call, one timed
    calls.update(slow=0, quick=0)
    assert cm.fastest(cands, warm_ms=0.0, trials=2, timed_ms=6.0, min_calls=1) == "quick"
    assert calls["quick"] > calls["slow"] >= 2 * 2  # timed calls for 6 ms a round
    calls.update(slow=0, quick=0)
    # By default: TRIAL_ROUNDS rounds of at least TRIAL_MIN_CALLS timed calls, however
    # short timed_ms is (a long call is not timed just once a round).
    assert cm.fastest(cands, warm_ms=0.0, timed_ms=0.0) == "quick"
    assert calls == {n: cm.TRIAL_ROUNDS * (1 + cm.TRIAL_MIN_CALLS) for n in calls}


def test_conv_plan_keeps_the_faster_candidate(cm, monkeypatch) -> None:
    """Without --derivation, `bench conv` builds each candidate of the ISA and keeps the
    one whose kernels (1 thread, then the multi-threaded one, which gets the thread
    count) are faster in an untimed trial, and says so in a note; a single candidate,
    or a single one that builds, is taken without a trial."""
    import argparse
    import time

    cv = _load("bench_conv")

    class Kernel:
        def __init__(self, seconds: float) -> None:
            self.seconds, self.threads = seconds, None

        def set_threads(self, n: int) -> None:
            self.threads = n

    speed = {"conv_wide": 0.004, "conv_narrow": 0.001}
    built: dict[str, dict] = {}

    def fake_load(args, name):
        if name == "conv_broken":
            return cm.Ours(f"Conv.v:{name}", missing="does not build")
        built[name] = {"1t": Kernel(speed[name]), "2t": Kernel(speed[name])}
        return cm.Ours(f"Conv.v:{name}", kernels=built[name])

    monkeypatch.setattr(cv, "load", fake_load)
    monkeypatch.setattr(cv, "bind_ours",
                        lambda k, x, w, want: (lambda: time.sleep(k.seconds), "layout"))
    args = argparse.Namespace(threads=2, derivation="conv_wide")
    ours, _ = cv.plan(args, ["conv_wide", "conv_narrow"], None, None, None)
    assert ours.origin == "Conv.v:conv_narrow" and args.derivation == "conv_narrow"
    assert "untimed trial against conv_wide" in ours.notes[0]
    assert built["conv_wide"]["2t"].threads == 2 and built["conv_wide"]["1t"].threads is None
    args = argparse.Namespace(threads=2, derivation="conv_wide")
    ours, _ = cv.plan(args, ["conv_wide", "conv_broken"], None, None, None)
    assert ours.origin == "Conv.v:conv_wide" and not ours.notes


def test_aligned_copies_start_on_a_64_byte_line(cm) -> None:
    """Both sides of a benchmark read the same inputs from 64-byte-aligned arrays
    (#110): a copy with the same values, shape and dtype, C-contiguous, also of a
    transposed (non-contiguous) view, and writable without touching the original."""
    rng = np.random.default_rng(1)
    for shape in [(1,), (3, 5), (130, 17), (5, 128, 82, 102)]:
        a = rng.standard_normal(shape).astype(np.float32)
        for src in (a, a.T):
            b = cm.aligned(src)
            assert b.ctypes.data % 64 == 0
            assert b.flags.c_contiguous and b.dtype == src.dtype and b.shape == src.shape
            np.testing.assert_array_equal(b, src)
            b.flat[0] += 1.0
            assert src.flat[0] != b.flat[0]


def test_ratio_interval_resamples_rounds_as_pairs(cm) -> None:
    """The speed's interval resamples the interleaved rounds as pairs: drift that slows
    both sides alike in a round (the VM's 10-15%) does not widen it, noise that differs
    between the sides does, and the ratio of the medians lies inside it."""
    drift = [10.0, 11.5, 9.0, 13.0, 10.5, 12.0, 9.5, 14.0, 10.0, 11.0]
    assert cm.ratio_interval([1.5 * d for d in drift], drift) == pytest.approx((1.5, 1.5))
    rng = np.random.default_rng(1)
    ours = [d * (1 + 0.05 * e) for d, e in zip(drift, rng.standard_normal(10), strict=True)]
    torch = [1.1 * d * (1 + 0.05 * e) for d, e in zip(drift, rng.standard_normal(10), strict=True)]
    lo, hi = cm.ratio_interval(torch, ours)
    point = float(np.median(torch) / np.median(ours))
    assert lo < point < hi and hi - lo > 0.01
    assert cm.ratio_interval(torch, ours) == (lo, hi)  # seeded
    wider = cm.ratio_interval(torch, ours, level=0.99)
    assert wider[0] <= lo and wider[1] >= hi
    # Sides not timed in the same rounds, or too few rounds: no interval.
    assert cm.ratio_interval(torch, ours[:-1]) is None
    assert cm.ratio_interval([1.0, 2.0], [1.0, 2.0]) is None
    assert cm.fmt_interval(None) == "-" and cm.fmt_interval((0.987, 1.1)) == "0.99-1.10"


def test_conv_speed_intervals_per_thread_count() -> None:
    """bench conv gives each thread count's speed (torch / ours) its interval, and none
    where a side has no samples."""
    cv = _load("bench_conv")
    base = [30.0, 31.0, 29.5, 33.0, 30.5]
    samples = {"torch-1t": [2.2 * b for b in base], "ours-1t": [2 * b for b in base],
               "torch-2t": [1.0, 1.1, 1.2]}
    got = cv.speed_intervals(samples, 2)
    assert set(got) == {1} and got[1] == pytest.approx((1.1, 1.1))


def test_conv_compares_ours_with_torchs_faster_layout() -> None:
    """torch is timed on NCHW and on channels_last tensors; the speed (and its interval)
    is against whichever was faster at that thread count, and a result with NCHW alone
    (from before) still reads."""
    cv = _load("bench_conv")
    med = {"torch-1t": 88.0, "torch_nhwc-1t": 73.0, "torch-2t": 40.0, "torch_nhwc-2t": 44.0}
    assert cv.peer(med, 1) == "torch_nhwc-1t" and cv.peer(med, 2) == "torch-2t"
    assert cv.peer({"torch-1t": 88.0}, 1) == "torch-1t"
    base = [30.0, 31.0, 29.5, 33.0, 30.5]
    samples = {"torch-1t": [3.0 * b for b in base], "torch_nhwc-1t": [2.2 * b for b in base],
               "ours-1t": [2 * b for b in base]}
    got = cv.speed_intervals(samples, 2, {"torch-1t": 90.0, "torch_nhwc-1t": 66.0})
    assert got[1] == pytest.approx((1.1, 1.1))


def _started_thread_cores() -> set[int]:
    """The CPU affinity a thread started now, from this thread, begins with."""
    got: list[set[int]] = []
    t = threading.Thread(target=lambda: got.append(os.sched_getaffinity(0)))
    t.start()
    t.join()
    return got[0]


def test_unbound_lets_threads_started_in_it_use_every_core(cm) -> None:
    """A peer's worker started from a main thread our OpenMP runtime bound to one core
    inherits that core (the trap: Halide's parallel blur ran no faster than its serial
    one); started inside cm.unbound() it may use every core the process started with,
    and the main thread's binding is restored after."""
    cores = set(cm.START_CORES)
    if len(cores) < 2:
        pytest.skip("needs two cores")
    old = os.sched_getaffinity(0)
    one = {min(cores)}
    os.sched_setaffinity(0, one)
    try:
        assert _started_thread_cores() == one
        with cm.unbound():
            assert _started_thread_cores() == cores
        assert os.sched_getaffinity(0) == one
        with pytest.raises(RuntimeError), cm.unbound():
            raise RuntimeError("a peer's call failed")
        assert os.sched_getaffinity(0) == one
    finally:
        os.sched_setaffinity(0, old)


def test_sgemm_stall_warning_names_tick_quantized_times(cm, tmp_path) -> None:
    """Stalled 2-thread OpenBLAS times that sit on whole multiples of the scheduler
    tick (a disturbed run on the Intel Xeon: 16.00, 24.00, 32.00 ms with HZ=250) are
    named in the warning's tail; times off the ticks, or too few, are not."""
    import gzip
    from types import SimpleNamespace

    rp = _load("_sgemm_report")
    config = tmp_path / "config.gz"
    with gzip.open(config, "wt") as f:
        f.write("# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n")
    assert cm.kernel_tick_ms(config) == 4.0
    assert cm.kernel_tick_ms(tmp_path / "missing.gz") is None
    assert cm.on_ticks([16.0, 23.98, 31.99, 8.04, 5.55, 1.2, 3.97], 4.0) == 5
    bad = SimpleNamespace(label="square 512")
    on = [(bad, {"openblas-1t": 1.6, "openblas-2t": 24.0, "steal_cores": 0.0,
                 "samples": {"openblas-2t": [23.98, 24.0, 24.0, 23.99, 24.01, 27.3]}})]
    off = [(bad, {"openblas-1t": 1.6, "openblas-2t": 24.0, "steal_cores": 0.0,
                  "samples": {"openblas-2t": [21.3, 22.7, 25.1, 23.6, 26.5, 22.2]}})]
    tail = rp.stall_cause(on, ["square 512"], 4.0, 2)
    assert "5 of their 6 timed 2-thread OpenBLAS calls" in tail and "4 ms" in tail, tail
    assert "did not deschedule" in tail
    assert "tick" not in rp.stall_cause(off, ["square 512"], 4.0, 2)
    assert "tick" not in rp.stall_cause(on, ["square 512"], None, 2)
    few = [(bad, {"openblas-1t": 1.6, "openblas-2t": 24.0,
                  "samples": {"openblas-2t": [24.0, 24.0]}})]
    assert rp.stall_cause(few, ["square 512"], 4.0, 2) == ""


def test_a_benchmark_out_of_memory_ends_in_a_message(tmp_path: Path, monkeypatch,
                                                     capsys) -> None:
    """Sizes beyond the machine (`bench blur --size 300000 300000`: numpy refuses the
    image) end in a message naming the benchmark, not numpy's traceback."""
    from verisched.cli import main
    from verisched.commands import bench

    (tmp_path / "bench_huge.py").write_text(
        "def main(argv):\n    raise MemoryError('Unable to allocate 335 GiB')\n")
    monkeypatch.setattr(bench, "BENCH_DIR", tmp_path)
    assert main(["bench", "huge"]) == 1
    err = capsys.readouterr().err
    assert "verisched bench huge: out of memory at the sizes asked for" in err
    assert "Traceback" not in err


def test_sgemm_flags_a_peer_whose_threads_did_not_scale() -> None:
    """OpenBLAS on 2 threads hardly faster than on 1, on a problem of 512^3 or more, is
    named (its workers ran on one core: the 2-thread ratio would overstate ours); a
    small problem, a stalled one (stalled_peer's) and a 1-thread run are not."""
    from types import SimpleNamespace

    rp = _load("_sgemm_report")

    def res(label, n, t1, t2):
        return (SimpleNamespace(label=label, M=n, N=n, K=n),
                {"openblas-1t": t1, "openblas-2t": t2})

    scaled = res("square 1536", 1536, 70.0, 36.0)
    one_core = res("square 2048", 2048, 150.0, 156.0)
    barely = res("square 1024", 1024, 20.0, 17.0)
    small = res("in-cache", 64, 0.05, 0.045)
    stalled = res("square 768", 768, 6.0, 24.0)
    got = rp.unscaled_peer([scaled, one_core, barely, small, stalled], 2)
    assert got == ["square 2048", "square 1024"]
    assert rp.unscaled_peer([one_core], 1) == []


_WORKER_CORES = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import _common as cm
a = np.ones((512, 512))
a @ a                                   # OpenBLAS's workers start, unbound
os.sched_setaffinity(0, {min(cm.START_CORES)})   # as libgomp binds the main thread
if os.fork() == 0:                      # OpenBLAS stops its workers around a fork
    os._exit(0)
os.wait()
with cm.unbound():
    a @ a                               # ... and restarts them at its next call
main = os.getpid()
masks = []
for tid in os.listdir("/proc/self/task"):
    if int(tid) != main:
        masks.append(len(os.sched_getaffinity(int(tid))))
print(len(cm.START_CORES), min(masks) if masks else -1)
"""


def test_openblas_workers_restarted_under_unbound_get_every_core() -> None:
    """The premise of bench sgemm's reference product under cm.unbound: OpenBLAS workers
    that restart after a fork, from a main thread an OpenMP runtime has bound to one
    core, get every core the process started with, not the main thread's one (outside
    unbound they got one core and OpenBLAS's 2-thread calls ran at 1-thread speed).
    Run in a child process, which may bind its main thread and fork freely."""
    import subprocess

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 or more CPUs")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", _WORKER_CORES, str(BENCH)], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    cores, least = map(int, out.split())
    assert least == -1 or least == cores, out


def test_unscaled_note_names_a_peer_that_did_not_run_in_parallel(cm) -> None:
    """bench conv's warning: torch on 2 threads at 1.05x its 1-thread speed is named with
    its speedup; 1.5x, a 1-thread run and a missing T-thread time are not."""
    note = cm.unscaled_note("torch", 93.5, 89.0, 2)
    assert note and "torch on 2 threads was only 1.05x faster" in note
    assert "overstates ours" in note
    assert cm.unscaled_note("torch", 93.5, 60.0, 2) is None
    assert cm.unscaled_note("torch", 93.5, 93.5, 1) is None
    assert cm.unscaled_note("torch", 93.5, 0.0, 2) is None


def test_blur_isa_auto_takes_the_widest_vector_isa(monkeypatch) -> None:
    """bench blur's vectorized rows default to the CPU's widest ISA (issue 16's native
    default): its targets, and Halide's counterpart at the same vector width; an
    explicit --isa or --vec-target is kept."""
    import argparse

    bl = _load("bench_blur")

    def args(**kw):
        base = {"isa": "auto", "vec_target": None, "vec_par_target": None}
        return argparse.Namespace(**{**base, **kw})

    monkeypatch.setattr(bl, "best_vector_isa", lambda: "avx512")
    a = args()
    bl.choose_isa(a)
    assert (a.isa, a.vec_target, a.vec_par_target, a.vec_lanes) == \
        ("avx512", "avx512", "avx512-openmp", 16)
    assert a.isa_auto
    monkeypatch.setattr(bl, "best_vector_isa", lambda: "avx2")
    a = args()
    bl.choose_isa(a)
    assert (a.isa, a.vec_target, a.vec_par_target, a.vec_lanes) == \
        ("avx2", "avx2", "avx2-openmp", 8)
    a = args(isa="avx2", vec_par_target="openmp")
    bl.choose_isa(a)
    assert (a.vec_target, a.vec_par_target, a.isa_auto) == ("avx2", "openmp", False)
