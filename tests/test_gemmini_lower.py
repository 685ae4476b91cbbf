"""The Gemmini lowering (src/verisched/targets/gemmini/lower.py) on the simulator.

Every kernel runs on random int8 inputs at sizes that are and are not
multiples of 16 and is compared exactly with the reference interpreter, which
evaluates the gemmini_ calls by their specifications (Gemmini.v, through the
registry) and the output path natively; the interpreter's own answer is
checked against numpy once more.  The derivations of
coq/Examples/GemminiMatmul.v are replayed through the bridge; hand-written
programs in the same form cover what they do not (zero-padded tiles,
configuration placement, bad input).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gemmini_checks import specs_agree_with_coq
from gemmini_reference import matmul_acc, min_computes, quantize

from verisched import pipeline
from verisched.codegen.errors import KernelCallError, LowerError, UnsafeProgramError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import IConst, IVar, PCmp
from verisched.targets.gemmini import build, compile_program, run_program
from verisched.targets.gemmini.config import place_configs
from verisched.targets.gemmini.instrs import acc_out, split_scale
from verisched.targets.gemmini.lower import lower_gemmini
from verisched.targets.toolchain import compiler as cc

REPO = Path(__file__).resolve().parents[1]
M, N, K = IVar("M"), IVar("N"), IVar("K")

# The shape of GemminiMatmul.v's derived programs, with a hole for the accumulator's value.
TILED = """trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ]
  transpose N 16 (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ]
    transpose 16 16 (tlet c := in_mem GEMMINI_ACC ({acc}) in
      gemmini_mvout sm se act c (io * 16) (jo * 16) M N))))))"""
PRODUCTS = """SUM [ ko < cdiv K 16 ]
  tlet a := in_mem GEMMINI_SPAD (gemmini_mvin A (io * 16) (ko * 16) M K) in
  tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
  gemmini_matmul a b"""
BIAS = "gemmini_mvin_acc D (io * 16) (jo * 16) M N <+> " + PRODUCTS
# Two K-tiles per let, filled by a concatenation: their partial parts cannot be
# followed to the products, so the lowering zero-fills them instead.
PAIRS = """SUM [ kp < cdiv K 32 ]
  tlet a := in_mem GEMMINI_SPAD (concat 1 1
      (GEN [ t < 1 ] gemmini_mvin A (io * 16) (kp * 32) M K)
      (GEN [ t < 1 ] gemmini_mvin A (io * 16) (kp * 32 + 16) M K)) in
  tlet b := in_mem GEMMINI_SPAD (concat 1 1
      (GEN [ t < 1 ] gemmini_mvin B (kp * 32) (jo * 16) K N)
      (GEN [ t < 1 ] gemmini_mvin B (kp * 32 + 16) (jo * 16) K N)) in
  gemmini_matmul (a _[ 0 ]) (b _[ 0 ]) <+> gemmini_matmul (a _[ 1 ]) (b _[ 1 ])"""
ORIGINAL = ("GEN [ i < M ] GEN [ j < N ] gemmini_acc_out sm se act "
            "({bias}SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ])")

SHAPES = [(16, 16, 16), (5, 7, 3), (33, 20, 50), (48, 64, 32), (17, 31, 47)]


def inputs(m: int, n: int, k: int, bias: bool, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {"A": rng.integers(-128, 128, (m, k), dtype=np.int8),
           "B": rng.integers(-128, 128, (k, n), dtype=np.int8)}
    if bias:
        out["D"] = rng.integers(-2**20, 2**20, (m, n), dtype=np.int32)
    return out


def check_kernel(kernel, programs, m: int, n: int, k: int, scale: float, relu: bool,
                 seed: int) -> dict[str, int]:
    """Run `kernel` on the simulator and compare with the interpreter on `programs`
    (and the interpreter with numpy).  Returns the simulator's counters."""
    bias = any(a == "D" for a, _, _, _ in kernel.inputs)
    ins = inputs(m, n, k, bias, seed)
    sm, se = split_scale(scale)
    sizes = {"M": m, "N": n, "K": k, "sm": sm, "se": se, "act": int(relu)}
    res = build.run(kernel, ins, sizes)
    want = quantize(matmul_acc(ins["A"], ins["B"]) + (ins["D"] if bias else 0), scale, relu)
    for prog in programs:
        ref = evaluate(prog, {a: v.astype(np.int64) for a, v in ins.items()}, sizes, np.int64)
        np.testing.assert_array_equal(ref, want)
        np.testing.assert_array_equal(res.out, ref)
    return res.counters


def env_for(bias: bool) -> dict:
    env = {"A": (M, K), "B": (K, N)}
    if bias:
        env["D"] = (M, N)
    return env


# ---- the specifications ------------------------------------------------------------


def test_output_path_matches_numpy_float32() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-2**31, 2**31, 5000, dtype=np.int64)
    for scale in (1 / 300, 0.1, 2.5, 1e-6, -1 / 7):
        sm, se = split_scale(scale)
        assert np.float32(np.ldexp(float(sm), se)) == np.float32(scale)
        for relu in (False, True):
            np.testing.assert_array_equal(acc_out(x, sm, se, relu), quantize(x, scale, relu))


def test_gemmini_specs_agree_with_coq(coq) -> None:
    """The registry's templates are Gemmini.v's definitions (printed by Coq, parsed back)."""
    specs_agree_with_coq(coq, "Targets.Gemmini",
                         "(v0 a0 b0 c0 : Z -> Z -> gint) (r0 c1 R0 C0 sm0 se0 : Z) (act0 : bool)",
                         ["gemmini_mvin v0 r0 c1 R0 C0", "gemmini_mvin_acc v0 r0 c1 R0 C0",
                          "gemmini_matmul a0 b0", "gemmini_mvout sm0 se0 act0 c0 r0 c1 R0 C0"])


# ---- the replayed derivations -------------------------------------------------------


@pytest.fixture(scope="module")
def derived(coq):
    """GemminiMatmul.v's derivations, replayed once and lowered (verisched.pipeline)."""
    names = ["qmatmul_gemmini", "qmatmul_nobias_gemmini", "qmatmul_gemmini_panel",
             "qmatmul_gemmini_staged"]
    dps = pipeline.load_many(REPO / "coq/Examples/GemminiMatmul.v", names)
    # The panel's rows depend on K: lowered per K (test_derived_panel), not here.
    return {n: (dp, _lowered(pipeline.check(dp))
                if "panel" not in n and "staged" not in n else None)
            for n, dp in dps.items()}


def _lowered(checked):
    return pipeline.lower(checked, "gemmini").kernel


@pytest.mark.parametrize("name", ["qmatmul_gemmini", "qmatmul_nobias_gemmini"])
@pytest.mark.parametrize("shape", SHAPES)
def test_derived_kernel_matches_interpreter(derived, name: str, shape) -> None:
    dp, kernel = derived[name]
    m, n, k = shape
    counters = check_kernel(kernel, [dp.expr, dp.original], m, n, k, 1 / 500 if
                            name == "qmatmul_gemmini" else 1 / 97, sum(shape) % 2 == 0,
                            seed=m * n + k)
    # One product per (row tile, column tile, reduction tile): the utilization bound.
    assert counters["compute_preloaded"] == min_computes(m, n, k)
    # Every configuration is set once, before the loops.
    assert counters["config_ex"] == 1 and counters["config_st"] == 1
    assert counters["config_ld"] == (3 if name == "qmatmul_gemmini" else 2)


@pytest.mark.parametrize("shape", [(20, 33, 40), (32, 48, 128), (5, 17, 70)])
def test_derived_panel_with_k_fixed(derived, shape) -> None:
    dp, _ = derived["qmatmul_gemmini_panel"]
    m, n, k = shape
    with pytest.raises(LowerError, match="let a in GEMMINI_SPAD has symbolic extents"):
        _lowered(pipeline.check(dp))
    fixed = pipeline.check(dp, fix={"K": k})
    kernel = _lowered(fixed)
    orig = fixed.original
    ins = inputs(m, n, k, True, seed=m + k)
    sm, se = split_scale(1 / 450)
    sizes = {"M": m, "N": n, "sm": sm, "se": se, "act": 0}
    res = build.run(kernel, ins, sizes)
    for prog in (fixed.program.expr, orig):
        ref = evaluate(prog, {a: v.astype(np.int64) for a, v in ins.items()}, sizes, np.int64)
        np.testing.assert_array_equal(res.out, ref)
    c = res.counters
    assert c["compute_preloaded"] == min_computes(m, n, k)
    # A is read once (its panel, in moves of up to 64 columns); B once per row block.
    assert c["dram_to_spad_bytes"] == m * k + k * n * -(-m // 16)


@pytest.mark.parametrize("shape", [(20, 33, 40), (48, 32, 64), (7, 100, 250)])
def test_derived_staged_with_k_and_n_fixed(derived, shape) -> None:
    dp, _ = derived["qmatmul_gemmini_staged"]
    m, n, k = shape
    fixed = pipeline.check(dp, fix={"K": k, "N": n})
    kernel = _lowered(fixed)
    orig = fixed.original
    ins = inputs(m, n, k, True, seed=m * k)
    sm, se = split_scale(1 / 300)
    sizes = {"M": m, "sm": sm, "se": se, "act": 1}
    res = build.run(kernel, ins, sizes)
    for prog in (fixed.program.expr, orig):
        ref = evaluate(prog, {a: v.astype(np.int64) for a, v in ins.items()}, sizes, np.int64)
        np.testing.assert_array_equal(res.out, ref)
    c = res.counters
    assert c["compute_preloaded"] == min_computes(m, n, k)
    assert c["dram_to_spad_bytes"] == m * k + k * n  # every block of A and B moved once


def test_derived_kernel_refuses_unproved_safety(derived) -> None:
    dp, _ = derived["qmatmul_nobias_gemmini"]
    gap = dataclasses.replace(dp, safety_gap="never ran check_safe")
    with pytest.raises(UnsafeProgramError, match="not proved in bounds"):
        pipeline.check(gap)


# ---- hand-written programs ------------------------------------------------------------


@pytest.mark.parametrize(("acc", "bias"), [(PRODUCTS, False), (BIAS, True), (PAIRS, False)])
def test_hand_written_programs(acc: str, bias: bool) -> None:
    prog = parse_program(TILED.format(acc=acc))
    orig = parse_program(ORIGINAL.format(bias="D _[ i ] _[ j ] <+> " if bias else ""))
    kernel = lower_gemmini(prog, env_for(bias), name="hand")
    for shape in [(20, 33, 40), (32, 16, 64), (3, 50, 17)]:
        check_kernel(kernel, [prog, orig], *shape, scale=1 / 211, relu=True, seed=sum(shape))


def test_zero_padding_when_partial_tiles_cannot_be_tracked() -> None:
    prog = parse_program(TILED.format(acc=PAIRS))
    text = "\n".join(lower_gemmini(prog, env_for(False), name="pairs").body)
    zero_fill = re.compile(r"gemmini_extended_mvin\d?\(0, ")
    assert zero_fill.search(text)  # zero-fill before a partial move
    tracked = "\n".join(lower_gemmini(parse_program(TILED.format(acc=PRODUCTS)), env_for(False),
                                      name="tracked").body)
    assert not zero_fill.search(tracked)  # the products get the valid extents instead


# ---- configuration placement ------------------------------------------------------------


def _configs(lines: list[str]) -> list[str]:
    return [s.strip() for s in lines if "config" in s]


def test_config_hoisted_out_of_loops_and_not_repeated() -> None:
    m = "/*@gemmini-config {} {}@*/"
    body = [
        "for (int i = 0; i < n; ++i) {",
        "  " + m.format("ld0", "k|1.0f|0"), "  mvin();",
        "  for (int j = 0; j < 4; ++j) {",
        "    " + m.format("ld1", "16*j|1.0f|0"), "    mvin2();",
        "    " + m.format("ld0", "k|1.0f|0"), "    mvin();",
        "  }",
        "}",
        m.format("ld0", "k|1.0f|0"), "mvin();",
        m.format("ld0", "m|1.0f|0"), "mvin();",
    ]
    out, stats = place_configs(body)
    assert out[0].strip() == "gemmini_extended3_config_ld(k, 1.0f, 0, 0);"  # hoisted to the top
    # ld1 depends on j: configured inside the j loop, every iteration.
    j_loop = out.index("  for (int j = 0; j < 4; ++j) {")
    assert out[j_loop + 1].strip() == "gemmini_extended3_config_ld(16*j, 1.0f, 0, 1);"
    assert _configs(out) == ["gemmini_extended3_config_ld(k, 1.0f, 0, 0);",
                             "gemmini_extended3_config_ld(16*j, 1.0f, 0, 1);",
                             "gemmini_extended3_config_ld(m, 1.0f, 0, 0);"]
    assert stats.requirements == 5 and stats.emitted == 3


def test_config_after_branches_and_scopes() -> None:
    m = "/*@gemmini-config {} {}@*/"
    body = [
        "if (c) {", "  " + m.format("st", "n|NO_ACTIVATION|1.0f"), "  mvout();", "}",
        m.format("st", "n|NO_ACTIVATION|1.0f"), "mvout();",  # unknown after a one-armed if
        "{", "  const int s = 3;", "  " + m.format("ld2", "s|1.0f|0"), "  mvin3();", "}",
        "{", "  const int s = 4;", "  " + m.format("ld2", "s|1.0f|0"), "  mvin3();", "}",
    ]
    out, stats = place_configs(body)
    assert len([s for s in out if "config_st" in s]) == 2
    assert len([s for s in out if "config_ld" in s]) == 2  # same text, another `s`
    assert stats.emitted == 4


def test_each_configuration_is_emitted_once_per_kernel() -> None:
    prog = parse_program(TILED.format(acc=BIAS))
    kernel = lower_gemmini(prog, env_for(True), name="cfg")
    configs = _configs(kernel.body)
    assert len(configs) == 5, configs  # ex, three loads (D, A, B), st
    # the int32 bias's row stride in bytes, in the field's 64 bits: `N * 4` in int wrapped
    # from N = 2^29 on, inside sizes the entry check accepts (UBSan: signed overflow)
    assert any("config_ld((uint64_t)(N) * 4, " in s for s in configs), configs
    loops = [k for k, s in enumerate(kernel.body) if s.strip().startswith("for (")]
    first_loop = min(loops)
    assert all(kernel.body.index(s) < first_loop for s in kernel.body if "config" in s)


# ---- bad input ----------------------------------------------------------------------------


def test_several_outputs_are_refused_also_inside_a_fused_sweep() -> None:
    """mvt_sweep (PolyBench's mvt, fuse_outputs) sums pairs: refused by its cause, where
    the pair below the top reached the shape computation (AttributeError)."""
    from verisched import pipeline
    checked = pipeline.check(pipeline.load("coq/Examples/PolyBench/Mvt.v", "mvt_sweep"))
    with pytest.raises(LowerError, match="several outputs is not supported"):
        pipeline.lower(checked, "gemmini")


def test_float_is_refused() -> None:
    with pytest.raises(LowerError, match="float32 is not supported by Gemmini"):
        lower_gemmini(parse_program(TILED.format(acc=PRODUCTS)), env_for(False), dtype="float32")


def test_buffer_larger_than_the_scratchpad_is_refused() -> None:
    # A whole 2048 x K panel of A staged at once: 128 * 16 rows per K tile.
    big = """SUM [ ko < cdiv K 16 ]
      tlet a := in_mem GEMMINI_SPAD (GEN [ t < 1100 ] gemmini_mvin A (t * 16) (ko * 16) M K) in
      tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
      gemmini_matmul (a _[ io ]) b"""
    with pytest.raises(LowerError, match=r"let a in GEMMINI_SPAD needs 17600 rows.*16384"):
        lower_gemmini(parse_program(TILED.format(acc=big)), env_for(False))


def test_symbolic_buffer_extent_is_refused() -> None:
    sym = """SUM [ ko < cdiv K 16 ]
      tlet a := in_mem GEMMINI_SPAD (GEN [ t < cdiv M 16 ] gemmini_mvin A (t * 16) (ko * 16) M K) in
      tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
      gemmini_matmul (a _[ io ]) b"""
    with pytest.raises(LowerError, match="let a in GEMMINI_SPAD has symbolic extents"):
        lower_gemmini(parse_program(TILED.format(acc=sym)), env_for(False))


def test_product_into_the_scratchpad_is_refused() -> None:
    wrong = TILED.format(acc=PRODUCTS).replace("in_mem GEMMINI_ACC", "in_mem GEMMINI_SPAD")
    with pytest.raises(LowerError, match=r"gemmini_matmul .* GEMMINI_ACC, but its destination "
                                         r"is in GEMMINI_SPAD|sum is stored into a scratchpad"):
        lower_gemmini(parse_program(wrong), env_for(False))


def test_operand_in_dram_is_refused() -> None:
    dram = PRODUCTS.replace("gemmini_matmul a b", "gemmini_matmul A b")
    with pytest.raises(LowerError, match="operand a of gemmini_matmul .* is not in the "
                                         "scratchpad or accumulator"):
        lower_gemmini(parse_program(TILED.format(acc=dram)), env_for(False))
    unstaged = PRODUCTS.replace("tlet a := in_mem GEMMINI_SPAD (", "tlet a := (")
    with pytest.raises(LowerError, match="gemmini_mvin .* must write an on-chip buffer"):
        lower_gemmini(parse_program(TILED.format(acc=unstaged)), env_for(False))


def test_row_of_other_width_is_refused() -> None:
    prog = parse_program("tlet a := in_mem GEMMINI_SPAD (GEN [ i < 16 ] GEN [ j < 8 ] "
                         "A _[ i ] _[ j ]) in A")
    with pytest.raises(LowerError, match="last extent 8; a scratchpad or accumulator row holds "
                                         "exactly 16"):
        lower_gemmini(prog, {"A": (IConst(16), IConst(16))})


def test_scalar_code_in_an_onchip_buffer_is_refused() -> None:
    scalar = "GEN [ i < 16 ] GEN [ j < 16 ] A _[ i ] _[ j ] * B _[ i ] _[ j ]"
    prog = parse_program(TILED.format(acc=scalar))
    with pytest.raises(LowerError, match="scalar arithmetic outside gemmini_ instructions"):
        lower_gemmini(prog, env_for(False))


def test_unwritten_accumulator_rows_are_refused() -> None:
    # The products cover only the first 8 rows of each block; mvout reads 16.
    half = PRODUCTS.replace("gemmini_mvin A (io * 16) (ko * 16) M K",
                            "gemmini_mvin A (io * 16) (ko * 16) (io * 16 + 8) K")
    with pytest.raises(LowerError, match="which is only known to be written"):
        lower_gemmini(parse_program(TILED.format(acc=half)), env_for(False))


def test_wrong_arguments_name_the_instruction() -> None:
    bad = TILED.format(acc=PRODUCTS).replace("gemmini_matmul a b", "gemmini_matmul a")
    with pytest.raises(Exception, match="gemmini_matmul"):
        lower_gemmini(parse_program(bad), env_for(False))


# ---- the convolution (GemminiConv.v: im2col in DRAM, then the matmul schedule) ----------


@pytest.fixture(scope="module")
def conv(coq):
    dp = pipeline.load(REPO / "coq/Examples/GemminiConv.v", "qconv_gemmini")
    return dp, _lowered(pipeline.check(dp))


@pytest.mark.parametrize("dims", [(2, 7, 6, 5, 20, 3, 3), (1, 6, 6, 16, 16, 3, 3),
                                  (3, 5, 9, 3, 7, 2, 4)])
def test_derived_conv_matches_interpreter(conv, dims) -> None:
    dp, kernel = conv
    nb, h, w, c, ko, kh, kw = dims
    rng = np.random.default_rng(sum(dims))
    ins = {"x": rng.integers(-128, 128, (nb, h, w, c), dtype=np.int8),
           "w": rng.integers(-128, 128, (kh, kw, c, ko), dtype=np.int8),
           "bias": rng.integers(-2**16, 2**16, (ko,), dtype=np.int32)}
    sm, se = split_scale(1 / 613)
    sizes = dict(NB=nb, H=h, W=w, C=c, KO=ko, KH=kh, KW=kw, sm=sm, se=se, act=1)
    res = build.run(kernel, ins, sizes)
    assert res.out.shape == (nb, h - kh + 1, w - kw + 1, ko)
    for prog in (dp.expr, dp.original):
        ref = evaluate(prog, {a: v.astype(np.int64) for a, v in ins.items()}, sizes, np.int64)
        np.testing.assert_array_equal(res.out, ref)
    m, k = nb * (h - kh + 1) * (w - kw + 1), kh * kw * c
    assert res.counters["compute_preloaded"] == min_computes(m, ko, k)


# ---- the command-line entry points (what `--target gemmini` dispatches to) ----------------


def test_cli_compile_and_run(derived, tmp_path: Path, monkeypatch, capsys) -> None:
    """`verisched compile/run --target gemmini` go the same pipeline as every target."""
    from verisched.cli import main

    dp, _ = derived["qmatmul_gemmini"]
    monkeypatch.setattr(pipeline, "load", lambda *a, **k: dp)  # the replay is the fixture's
    common = ["GemminiMatmul.v", "--derivation", "qmatmul_gemmini", "--target", "gemmini",
              "--kernel-name", "qmm"]
    assert main(["compile", *common, "-o", str(tmp_path / "qmm.c")]) == 0
    assert (tmp_path / "qmm.h").read_text().count("int qmm(") == 1
    src = (tmp_path / "qmm.c").read_text()
    assert "gemmini_extended_preload" in src and "#ifdef VERISCHED_GEMMINI_DRIVER" in src
    assert "proved in bounds by check_safe" in src
    # How to compile it against the simulator's header: the printed command works.
    said = capsys.readouterr().out
    # The scale and the ReLU flag take any sign at a call, unlike the sizes.
    assert ("sizes: M, N, K each at least 1 at a call (the entry check); sm, se, act any int"
            in said), said
    hint = re.search(r"^to build it: cc (-std=gnu11 -O2 -I\S+) -c (\S+) \(the functional "
                     r"simulator's include/gemmini.h; for the accelerator", said, re.M)
    assert hint and hint.group(2) == str(tmp_path / "qmm.c"), said
    proc = subprocess.run([*cc(), *hint.group(1).split(), "-c", hint.group(2), "-o",
                           str(tmp_path / "qmm.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    sizes = ["--size", "M=17", "--size", "N=40", "--size", "K=33", "--size", "sm=3",
             "--size", "se=-12", "--size", "act=0"]
    assert main(["run", *common, *sizes, "--seed", "1", "--check"]) == 0
    out = capsys.readouterr().out
    assert "derived program: OK" in out and "original program: OK" in out
    assert "counters: " in out and "preload" in out
    sizes[1] = "M=0"
    assert main(["run", *common, *sizes]) == 1
    assert "must be positive" in capsys.readouterr().err
    # The ReLU flag is a Coq bool: written as the section writes it, or 0/1.
    sizes[1], sizes[-1] = "M=17", "act=true"
    assert main(["run", *common, *sizes, "--check"]) == 0
    assert "original program: OK" in capsys.readouterr().out
    sizes[-1] = "act=yes"
    assert main(["run", *common, *sizes]) == 1
    assert "--size act=yes: act is a boolean (true, false, 1 or 0)" in capsys.readouterr().err
    assert main(["run", *common, *sizes[:-2]]) == 1
    assert "pass --size act=true|false" in capsys.readouterr().err
    # Its element type is int8; another is refused, not silently ignored.
    assert main(["compile", *common, "--dtype", "int32", "-o", str(tmp_path / "q.c")]) == 1
    assert "target gemmini: element type int32 is not supported (int8;" in \
        capsys.readouterr().err
    a = np.random.default_rng(0).integers(-9, 9, (17, 33)).astype(np.int32)
    np.save(tmp_path / "a.npy", a)
    sizes[-1] = "act=0"
    assert main(["run", *common, *sizes, "--input", f"A={tmp_path}/a.npy"]) == 1
    assert ("--input A: an int32 array, but kernel qmm takes int8 (convert the file; target "
            "gemmini's element types: int8)") in capsys.readouterr().err
    # --fix takes the ReLU flag as the section writes it and a negative exponent (a value
    # only the output path reads, never an extent); a size stays at least 0.
    fx = ["--size", "M=17", "--size", "N=40", "--size", "K=33", "--fix", "sm=3,se=-12,act=true"]
    assert main(["run", *common, *fx, "--seed", "1", "--check"]) == 0
    assert "original program: OK" in capsys.readouterr().out
    assert main(["compile", *common, "--fix", "M=-3", "-o", str(tmp_path / "q.c")]) == 1
    assert "fix: M=-3: a size is an extent, at least 0" in capsys.readouterr().err
    assert main(["compile", *common, "--fix", "M=true", "-o", str(tmp_path / "q.c")]) == 1
    assert "fix: M=true: M is not a boolean flag of qmatmul_gemmini" in \
        capsys.readouterr().err
    # A fixed scale that is not gemmini_scale_ok is refused when compiled, not per call.
    assert main(["compile", *common, "--fix", f"sm={2**24},se=-30", "-o",
                 str(tmp_path / "q.c")]) == 1
    assert (f"the output scale {2**24} * 2^-30 (fixed) has a significand sm = {2**24} not "
            "below 2^24") in capsys.readouterr().err
    # An accumulator beyond int32 (a bias near its top): Gemmini wraps, the proof is over
    # Z, so the kernel's int8 is not the proved one; the check says so, not OK.
    np.save(tmp_path / "a8.npy", np.full((17, 33), 10, np.int8))
    np.save(tmp_path / "b8.npy", np.full((33, 40), 10, np.int8))
    np.save(tmp_path / "d.npy", np.full((17, 40), 2**31 - 1000, np.int32))
    ins = [f"A={tmp_path}/a8.npy", f"B={tmp_path}/b8.npy", f"D={tmp_path}/d.npy"]
    assert main(["run", *common, *sizes, *[x for i in ins for x in ("--input", i)],
                 "--check"]) == 1
    out = capsys.readouterr().out
    assert ("original program: MISMATCH (an accumulator value (2147485948) is beyond int32: "
            "Gemmini's accumulator wraps where the proof (over Z) does not") in out, out


def test_kernel_call_infers_sizes_and_names_bad_inputs(derived) -> None:
    """A Gemmini kernel is called as a C one is: sizes that are inputs' extents are read
    from the arrays, and a misnamed, missing or mis-shaped input is named."""
    dp, _ = derived["qmatmul_gemmini"]
    # The Python API's default target takes the program's instruction form, as the
    # command line's does; `native` stays the default for plain ATL.
    assert pipeline.choose_target(dp.expr, None).name == "gemmini"
    plain = parse_program("GEN [ i < n ] f _[ i ]")
    assert pipeline.choose_target(plain, None).name == "native"
    assert pipeline.choose_target(dp.expr, "c").name == "c"  # named: lower() then refuses
    kernel = pipeline.compile_checked(pipeline.check(dp), pipeline.choose_target(dp.expr, None))
    rng = np.random.default_rng(3)
    a = rng.integers(-9, 9, (20, 40)).astype(np.int8)
    b = rng.integers(-9, 9, (40, 33)).astype(np.int8)
    d = rng.integers(-99, 99, (20, 33)).astype(np.int32)
    out = kernel({"A": a, "B": b, "D": d}, sm=1, se=0, act=1)
    assert np.array_equal(out, np.clip(d + a.astype(np.int32) @ b.astype(np.int32), 0, 127))
    # A Python bool for the ReLU flag is its int (it reached the simulator as "True",
    # which it read as 0: no ReLU).
    assert np.array_equal(kernel({"A": a, "B": b, "D": d}, sm=1, se=0, act=True), out)
    assert np.array_equal(kernel({"A": a, "B": b, "D": d}, sm=1, se=0, act=False),
                          np.clip(d + a.astype(np.int32) @ b.astype(np.int32), -128, 127))
    with pytest.raises(KernelCallError,
                       match=r"inputs must be \['A', 'B', 'D'\], got \['A', 'B'\]"):
        kernel({"A": a, "B": b}, sm=1, se=0, act=0)
    with pytest.raises(KernelCallError, match="inputs disagree on size N: B axis 1 has length "
                                              "33, D axis 1 has 30"):
        kernel({"A": a, "B": b, "D": d[:, :30]}, sm=1, se=0, act=0)
    with pytest.raises(KernelCallError, match="input D must be a numpy array, got list"):
        kernel({"A": a, "B": b, "D": d.tolist()}, sm=1, se=0, act=0)
    with pytest.raises(KernelCallError, match="input D is a 1-d array, expected 2-d"):
        kernel({"A": a, "B": b, "D": d.ravel()}, sm=1, se=0, act=0)
    with pytest.raises(KernelCallError, match="the inputs are a dict from name to numpy"):
        kernel(a, sm=1, se=0, act=0)
    with pytest.raises(KernelCallError, match="input D given as a keyword argument, where "
                                              "keywords are sizes"):
        kernel({"A": a, "B": b}, D=d, sm=1, se=0, act=0)
    with pytest.raises(KernelCallError, match=r"size parameters must be .*'act'"):
        kernel({"A": a, "B": b, "D": d}, sm=1, se=0)


def test_a_c_caller_breaking_the_sizes_gets_error_2(tmp_path: Path) -> None:
    """The kernel checks at entry what its code relies on, as the C targets' kernels do:
    a size below 1, an assumption (here K <= 64) or one about the output configuration
    (act is 0 or 1, which the prover is not told), an int expression over the sizes
    (`M + 15`; unchecked, M = INT_MAX, N = 1 would memset 2^31 - 1 bytes into a
    660-byte output).  A C caller who breaks one gets error 2, no instruction issued
    and the output untouched; the Python side refuses the same sizes, naming the
    expression."""
    kernel = lower_gemmini(parse_program(TILED.format(acc=PRODUCTS)), env_for(False),
                           name="capped", sizes=["M", "N", "K", "sm", "se", "act"],
                           assume=[PCmp("<=", K, IConst(64))],
                           check_only=[PCmp("<=", IConst(0), IVar("act")),
                                       PCmp("<=", IVar("act"), IConst(1))])
    # K + 15 is an int as well, but follows from K <= 64, which is checked first
    assert [t for t, _ in kernel.int_exprs] == ["M + 15", "N + 15"]
    calls = [("20, 33, 40, 1, 0, 0", "valid"), ("20, 33, 100, 1, 0, 0", "K above its cap"),
             ("0, 33, 40, 1, 0, 0", "M = 0"), ("INT_MAX, 1, 16, 1, 0, 0", "M + 15 overflows"),
             ("20, 33, 40, 1, 0, 2", "act not a boolean")]
    (tmp_path / "capped.c").write_text(build.render(kernel, harness=False))
    (tmp_path / "capped.h").write_text(build.header(kernel))  # declares capped_error too
    lines = ['#include <limits.h>', '#include <stdio.h>', '#include <string.h>',
             '#include "capped.h"',
             "int main(void) {",
             "  static int8_t a[20 * 100], b[100 * 33], c[20 * 33];"]
    for sizes, _ in calls:
        lines += ["  memset(c, 7, sizeof c);",
                  f"  capped(a, b, {sizes}, c);",
                  '  printf("%d %d\\n", capped_error, c[0]);']
    lines += ["  return 0;", "}"]
    (tmp_path / "caller.c").write_text("\n".join(lines) + "\n")
    exe = compile_program([tmp_path / "caller.c", tmp_path / "capped.c"], tmp_path / "caller",
                          cflags=["-fsanitize=address,undefined", "-g"])
    run = run_program(exe, [])
    assert run.returncode == 0, run.stderr
    got = [tuple(map(int, ln.split())) for ln in run.stdout.split("\n") if ln.strip()]
    # The valid call writes c (0, its first element computed from zero inputs); every
    # other call is refused before any write.
    assert got == [(0, 0), (2, 7), (2, 7), (2, 7), (2, 7)], got
    with pytest.raises(KernelCallError, match=r"the C's M \+ 15 is 2147483662, beyond the int"):
        build.shapes(kernel, {"M": 2**31 - 1, "N": 1, "K": 16, "sm": 1, "se": 0, "act": 0})


# ---- block moves ---------------------------------------------------------------------------

# A row panel of A (every K tile) staged once per row block and reused across the column
# blocks: its moves go 4 tiles (64 int8 columns) at a time.
PANEL = """trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ]
  tlet a := in_mem GEMMINI_SPAD (GEN [ ko < cdiv K 16 ] gemmini_mvin A (io * 16) (ko * 16) M K) in
  transpose N 16 (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ]
    transpose 16 16 (tlet c := in_mem GEMMINI_ACC (SUM [ ko < cdiv K 16 ]
        tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
        gemmini_matmul (a _[ ko ]) b) in
      gemmini_mvout sm se act c (io * 16) (jo * 16) M N))))))"""


@pytest.mark.parametrize("shape", [(20, 33, 100), (64, 48, 128), (3, 17, 16)])
def test_block_moves_of_a_staged_panel(shape) -> None:
    from verisched.pybridge.terms import specialize

    m, n, k = shape
    # The panel's extent depends on K: fixed, as `--fix K=..` does (on-chip extents are static).
    prog = specialize(parse_program(PANEL), {"K": k})
    kernel = lower_gemmini(prog, {"A": (M, IConst(k)), "B": (IConst(k), N)}, name="panel")
    orig = specialize(parse_program(ORIGINAL.format(bias="")), {"K": k})
    ins = inputs(m, n, k, False, seed=k)
    sm, se = split_scale(1 / 400)
    sizes = {"M": m, "N": n, "sm": sm, "se": se, "act": 1}
    res = build.run(kernel, ins, sizes)
    for prog_ in (prog, orig):
        ref = evaluate(prog_, {a: v.astype(np.int64) for a, v in ins.items()}, sizes, np.int64)
        np.testing.assert_array_equal(res.out, ref)
    tiles_m, tiles_k = -(-m // 16), -(-k // 16)
    assert res.counters["mvin"] == tiles_m * -(-tiles_k // 4)  # A: 4 tiles per move
    assert res.counters["dram_to_spad_bytes"] == m * k + k * n * tiles_m  # A read once


def test_a_kernel_without_input_arrays_builds_and_runs() -> None:
    """`GEN [i < n] 2` on the gemmini target: its driver reads no input file, and built
    with -Werror it once failed on the unused reader (`vs_read defined but not used`)."""
    from verisched import pipeline
    from verisched.pybridge.terms import Lit, gen

    k = pipeline.compile_program(gen("i", "n", Lit(2, 1)), {}, "gemmini", sizes=["n"],
                                 unsafe=True)
    assert k({}, n=3).tolist() == [2, 2, 2]
