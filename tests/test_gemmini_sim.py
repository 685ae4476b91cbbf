"""Tests of the Gemmini functional simulator (src/verisched/targets/gemmini).

The C programs in tests/gemmini_c check the simulator against reference
arithmetic written in C; the tiled-matmul driver is checked here against numpy
on random shapes that are mostly not multiples of the 16x16 tile.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verisched.targets.gemmini import (
    COUNTER_NAMES,
    GemminiSimError,
    compile_program,
    parse_counters,
    run_program,
)

C_DIR = Path(__file__).parent / "gemmini_c"

# Exo-style code casts pointers to uint32_t, exactly like Exo's output does.
EXTRA_FLAGS = {"exo_style": ["-Wno-pointer-to-int-cast"]}
EXTRA_SOURCES = {"counters": ["counters_helper.c"]}


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory):
    """Compile each test program once per module run, on first use."""
    out_dir = tmp_path_factory.mktemp("gemmini_bin")
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            sources = [C_DIR / f"{name}.c", *(C_DIR / s for s in EXTRA_SOURCES.get(name, []))]
            built[name] = compile_program(sources, out_dir / name, cflags=EXTRA_FLAGS.get(name, []))
        return built[name]

    return get


def run_ok(exe: Path, *args: str) -> str:
    result = run_program(exe, list(args))
    assert result.returncode == 0, f"{exe.name} {args}: {result.stdout}\n{result.stderr}"
    assert result.sim_error is None
    return result.stdout


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_scratchpad_moves(build, seed: str) -> None:
    assert "PASS mvin_mvout" in run_ok(build("mvin_mvout"), seed)


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_accumulator_moves(build, seed: str) -> None:
    assert "PASS acc_mvin_mvout" in run_ok(build("acc_mvin_mvout"), seed)


@pytest.mark.parametrize("dataflow", ["os", "ws"])
@pytest.mark.parametrize("seed", ["1", "2", "3", "4"])
def test_single_tile_matmul(build, dataflow: str, seed: str) -> None:
    assert f"PASS matmul_tile {dataflow}" in run_ok(build("matmul_tile"), seed, dataflow)


@pytest.mark.parametrize("seed", ["1", "2"])
def test_exo_style_code(build, seed: str) -> None:
    assert "PASS exo_style" in run_ok(build("exo_style"), seed)


@pytest.mark.parametrize("seed", ["1", "2"])
def test_exo_allocators(build, seed: str) -> None:
    assert "PASS alloc" in run_ok(build("alloc"), seed)


@pytest.mark.parametrize("seed", ["1", "2"])
def test_baremetal_style_code_with_testutils(build, seed: str) -> None:
    assert "PASS baremetal_style" in run_ok(build("baremetal_style"), seed)


# Exo procs whose generated C is compiled unmodified against the simulator.
EXO_PROCS = """
from __future__ import annotations
from pathlib import Path
import sys
import exo
from exo import proc
from exo.platforms.gemmini import *

@proc
def gemm_exo(MT: size, NT: size, KT: size, scale: f32, act: bool,
             A: i8[MT * 16, KT * 16] @ DRAM, B: i8[KT * 16, NT * 16] @ DRAM,
             C: i8[MT * 16, NT * 16] @ DRAM):
    assert MT <= 4
    assert NT <= 4
    assert KT <= 4
    a: i8[MT, KT, 16, 16] @ GEMM_SCRATCH
    b: i8[KT, NT, 16, 16] @ GEMM_SCRATCH
    res: i32[NT, 16, 16] @ GEMM_ACCUM
    for k in seq(0, KT):
        for j in seq(0, NT):
            ld_i8_id1(16, 16, B[16 * k:16 * k + 16, 16 * j:16 * j + 16], b[k, j, :, :])
    for i in seq(0, MT):
        for k in seq(0, KT):
            ld_i8(16, 16, A[16 * i:16 * i + 16, 16 * k:16 * k + 16], a[i, k, :, :])
        for j in seq(0, NT):
            zero_acc_i32(16, 16, res[j, :, :])
            for k in seq(0, KT):
                matmul_acc_i8(16, 16, 16, a[i, k, :, :], b[k, j, :, :], res[j, :, :])
            st_acc_i8(16, 16, scale, act, res[j, :, :],
                      C[16 * i:16 * i + 16, 16 * j:16 * j + 16])

@proc
def gemm_edge(scale: f32, act: bool, A: i8[7, 9] @ DRAM, B: i8[9, 5] @ DRAM,
              C: i8[7, 5] @ DRAM):
    a: i8[7, 16] @ GEMM_SCRATCH
    b: i8[9, 16] @ GEMM_SCRATCH
    res: i32[7, 16] @ GEMM_ACCUM
    ld_i8(7, 9, A, a)
    ld_i8_id1(9, 5, B, b)
    zero_acc_i32(7, 5, res)
    matmul_acc_i8(7, 5, 9, a, b, res)
    st_acc_i8(7, 5, scale, act, res, C)

exo.compile_procs([gemm_exo, gemm_edge], Path(sys.argv[1]), "gemm_exo.c", "gemm_exo.h")
"""


def test_exo_generated_code(tmp_path: Path) -> None:
    """Exo's real Gemmini output, generated now, runs correctly on the simulator."""
    pytest.importorskip("exo", reason="exo-lang is not installed (optional: pip install exo-lang)")
    script = tmp_path / "gen.py"
    script.write_text(EXO_PROCS)
    gen = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert gen.returncode == 0, gen.stderr
    exe = compile_program(
        [tmp_path / "gemm_exo.c", C_DIR / "exo_harness.c"],
        tmp_path / "exo_harness",
        # Exo's output casts between pointers and 32-bit integers and ignores ctxt.
        cflags=[
            f"-I{tmp_path}",
            f"-I{C_DIR}",
            "-Wno-pointer-to-int-cast",
            "-Wno-int-to-pointer-cast",
            "-Wno-unused-parameter",
        ],
    )
    assert "PASS exo_harness" in run_ok(exe, "7")


# ---- tiled matmul against numpy -------------------------------------------------


def numpy_reference(
    a: np.ndarray, b: np.ndarray, d: np.ndarray, scale: np.float32, relu: bool
) -> tuple[np.ndarray, np.ndarray]:
    """C = act(sat8(rne(float32(A @ B + D) * scale))) and the raw int32 accumulator."""
    full = a.astype(np.int64) @ b.astype(np.int64) + d.astype(np.int64)
    assert np.all(np.abs(full) < 2**31)
    full32 = full.astype(np.int32)
    scaled = full32.astype(np.float32) * scale  # single-precision product, as in the hardware
    c = np.clip(np.rint(scaled), -128, 127).astype(np.int8)  # rint: half to even
    if relu:
        c = np.maximum(c, 0).astype(np.int8)
    return c, full32


def run_tiled(
    exe: Path,
    tmp: Path,
    m: int,
    n: int,
    k: int,
    dataflow: str,
    relu: bool,
    scale: float,
    bias: bool,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
    b = rng.integers(-128, 128, size=(k, n), dtype=np.int8)
    d = rng.integers(-(2**20), 2**20, size=(m, n), dtype=np.int32)
    if not bias:
        d[:] = 0
    in_file, out_file = tmp / "in.bin", tmp / "out.bin"
    in_file.write_bytes(a.tobytes() + b.tobytes() + d.tobytes())
    scale32 = np.float32(scale)
    args = [
        str(m),
        str(n),
        str(k),
        dataflow,
        str(int(relu)),
        f"{float(scale32):.9g}",
        str(int(bias)),
        str(in_file),
        str(out_file),
    ]
    result = run_program(exe, args)
    assert result.returncode == 0, result.stderr
    raw = out_file.read_bytes()
    assert len(raw) == m * n * 5
    got_c = np.frombuffer(raw[: m * n], dtype=np.int8).reshape(m, n)
    got_full = np.frombuffer(raw[m * n :], dtype=np.int32).reshape(m, n)
    want_c, want_full = numpy_reference(a, b, d, scale32, relu)
    np.testing.assert_array_equal(got_full, want_full)
    np.testing.assert_array_equal(got_c, want_c)

    # Instruction counts follow from the tiling alone.
    tiles_i, tiles_j, tiles_k = -(-m // 16), -(-n // 16), -(-k // 16)
    counts = result.counters
    tiles = tiles_i * tiles_j * tiles_k
    assert counts["compute_preloaded"] + counts["compute_accumulated"] == tiles
    assert counts["preload"] == tiles
    assert counts["dram_to_spad_bytes"] == m * k + k * n
    assert counts["dram_to_acc_bytes"] == (4 * m * n if bias else 0)
    assert counts["acc_to_dram_bytes"] == m * n + 4 * m * n
    assert counts["macs_useful"] == m * n * k


@pytest.mark.parametrize(
    ("m", "n", "k"),
    [(1, 1, 1), (16, 16, 16), (17, 33, 47), (64, 64, 64), (5, 80, 3), (70, 9, 100)],
)
@pytest.mark.parametrize("dataflow", ["os", "ws"])
def test_tiled_matmul_fixed_shapes(
    build, tmp_path: Path, m: int, n: int, k: int, dataflow: str
) -> None:
    run_tiled(build("tiled_matmul"), tmp_path, m, n, k, dataflow, True, 1 / 512, True, m * n + k)


@settings(max_examples=30, deadline=None)
@given(
    m=st.integers(1, 72),
    n=st.integers(1, 72),
    k=st.integers(1, 72),
    dataflow=st.sampled_from(["os", "ws"]),
    relu=st.booleans(),
    scale=st.sampled_from([1.0, 0.5, 1 / 64, 1 / 300, 0.0123, 1 / 4096, -1 / 256]),
    bias=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_tiled_matmul_random(
    build,
    tmp_path_factory: pytest.TempPathFactory,
    m: int,
    n: int,
    k: int,
    dataflow: str,
    relu: bool,
    scale: float,
    bias: bool,
    seed: int,
) -> None:
    tmp = tmp_path_factory.mktemp("tiled")
    run_tiled(build("tiled_matmul"), tmp, m, n, k, dataflow, relu, scale, bias, seed)


# ---- misuse ---------------------------------------------------------------------

ERROR_CASES = {
    "mvin_no_config": ("gemmini_extended_mvin(", "load configuration 0 was never set"),
    "mvin2_unconfigured": ("gemmini_extended_mvin2(", "load configuration 1 was never set"),
    "mvout_no_config": ("gemmini_extended_mvout(", "store configuration was never set"),
    "spad_row_oob": ("local_addr=0x3ffc", "scratchpad rows 16380..16395"),
    "acc_row_oob": ("rows=9", "accumulator rows 1016..1024 but the accumulator has rows 0..1023"),
    "block_mvin_oob": ("cols=64", "scratchpad rows 16384..16399"),
    "mvin_rows_too_many": ("rows=17", "rows = 17 exceeds the limit 16"),
    "mvin_cols_too_many": ("cols=65", "cols = 65 exceeds the limit 64"),
    "acc_mvin_cols_too_many": ("cols=17", "int32 into accumulator) = 17 exceeds the limit 16"),
    "preload_no_config_ex": ("gemmini_extended_preload(", "never configured"),
    "compute_without_preload": ("compute_preloaded(", "no preload precedes this compute"),
    "accumulated_without_preloaded": ("compute_accumulated(", "nothing to reuse"),
    "double_preload": ("gemmini_extended_preload(", "was not consumed by a compute"),
    "bad_transpose_os": ("config_ex(dataflow=0", "cannot transpose B without transposing A"),
    "bad_transpose_ws": ("config_ex(dataflow=1", "cannot transpose both A and B"),
    "unsupported_act": ("config_st(", "activation 2 is not supported"),
    "preload_from_acc": ("BD=0x80000010", "from the accumulator is not supported"),
    "pointer_as_local": ("gemmini_extended_mvin(", "does not fit in the 32-bit local address"),
    "mvout_null": ("dram_addr=0x0", "DRAM destination address is NULL"),
    "garbage_mvin_dest": ("local_addr=0xffffffff", "GARBAGE_ADDR is not a valid mvin destination"),
    "operand_a_stride_oob": ("A=0x3fce", "operand A touches scratchpad rows 16334..16394"),
    "output_oob": ("compute_preloaded(", "output C named by the preload at"),
    "ld_bad_id": ("id=3", "id selects mvin (0), mvin2 (1) or mvin3 (2)"),
    "acc_heap_exhausted": ("gemm_acc_malloc(25 rows)", "out of accumulator space (1024 rows"),
    "bad_free": ("gemm_free(0x5)", "no block starts at row 5"),
    "os_shift_into_acc": ("compute_preloaded(", "accumulator with sys_shift = 3"),
    "os_sum_overflow": ("compute_accumulated(", "C[0][0] = 524288 does not fit"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_misuse_is_reported(build, case: str) -> None:
    call_fragment, cause = ERROR_CASES[case]
    result = run_program(build("errors"), [case])
    assert result.returncode != 0
    assert "UNREACHABLE" not in result.stdout
    message = result.sim_error
    assert message is not None, result.stderr
    assert call_fragment in message
    assert cause in message
    # Instruction errors name the call site (the allocators are plain functions).
    if not case.endswith(("_exhausted", "bad_free")):
        expected_line = result.stdout.split("expect line ")[1].split()[0]
        assert f"errors.c:{expected_line}:" in message


def test_every_error_case_is_tested() -> None:
    source = (C_DIR / "errors.c").read_text()
    cases = {line.split('"')[1] for line in source.splitlines() if 'CASE("' in line}
    assert cases == set(ERROR_CASES)


# ---- counters and the Python driver -------------------------------------------


def test_counters_from_c_and_python(build) -> None:
    result = run_program(build("counters"))
    assert result.returncode == 0, result.stderr
    expected = {
        "config_ex": 2, "config_ld": 3, "config_st": 2, "mvin": 2, "mvin2": 1, "mvin3": 1,
        "mvout": 3, "preload": 3, "compute_preloaded": 2, "compute_accumulated": 1, "flush": 1,
        "fence": 1, "dram_to_spad_bytes": 1280, "dram_to_acc_bytes": 80,
        "spad_to_dram_bytes": 256, "acc_to_dram_bytes": 336, "zero_fill_rows": 16,
        "macs_issued": 3 * 4096, "macs_useful": 4096 + 560 + 2304,
        "loop_ws": 0, "loop_ws_config": 0, "loop_unrolled": 0, "config_norm": 0,
        "loop_conv_ws": 0, "loop_conv_ws_config": 0,
    }  # fmt: skip
    assert result.counters == expected
    assert tuple(result.counters) == COUNTER_NAMES
    # The on-demand dump printed by the program agrees with the exit-time file.
    assert parse_counters(result.stdout) == expected


def test_aborted_program_leaves_no_counters(build) -> None:
    result = run_program(build("errors"), ["mvin_no_config"])
    assert result.returncode != 0
    assert result.counters == {}


def test_compile_error_names_the_step(tmp_path: Path) -> None:
    bad = tmp_path / "bad.c"
    bad.write_text('#include "gemmini.h"\nint main(void) { gemmini_mvin(); return 0; }\n')
    with pytest.raises(GemminiSimError, match=r"^compile: .*failed"):
        compile_program([bad], tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.c"]


def test_warnings_are_errors_by_default(tmp_path: Path) -> None:
    src = tmp_path / "warn.c"
    src.write_text('#include "include/gemmini.h"\nint main(void) { int unused; return 0; }\n')
    with pytest.raises(GemminiSimError, match="unused"):
        compile_program([src], tmp_path / "warn")
    compile_program([src], tmp_path / "warn", werror=False)
    assert run_program(tmp_path / "warn").returncode == 0


def test_missing_inputs_are_reported(tmp_path: Path) -> None:
    with pytest.raises(GemminiSimError, match="does not exist"):
        compile_program([tmp_path / "nope.c"], tmp_path / "nope")
    with pytest.raises(GemminiSimError, match=r"^run: .*does not exist"):
        run_program(tmp_path / "nope")


def test_parse_counters_rejects_malformed_lines() -> None:
    assert parse_counters("noise\ngemmini.mvin 3\n") == {"mvin": 3}
    with pytest.raises(GemminiSimError, match="malformed line 1"):
        parse_counters("gemmini.mvin three\n")
