"""Compile and run C programs against the Gemmini functional simulator.

Programs include `gemmini.h` either as `"gemmini.h"` or, like Gemmini's own
tests and Exo's output, as `"include/gemmini.h"`; both resolve because the
package directory and its `include/` are on the include path.  Counters are
handed back through a file named by GEMMINI_SIM_COUNTERS_OUT (written by the
simulator at exit, atomically), so the program's stdout stays its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from verisched.codegen.errors import CodegenError, CompileError
from verisched.targets import toolchain

PACKAGE_DIR = Path(__file__).resolve().parent

# The order the simulator prints them in (gemmini_sim_print_counters).
COUNTER_NAMES: tuple[str, ...] = (
    "config_ex",
    "config_ld",
    "config_st",
    "mvin",
    "mvin2",
    "mvin3",
    "mvout",
    "preload",
    "compute_preloaded",
    "compute_accumulated",
    "flush",
    "fence",
    "dram_to_spad_bytes",
    "dram_to_acc_bytes",
    "spad_to_dram_bytes",
    "acc_to_dram_bytes",
    "zero_fill_rows",
    "macs_issued",
    "macs_useful",
    "loop_ws",
    "loop_ws_config",
    "loop_unrolled",
    "config_norm",
    "loop_conv_ws",
    "loop_conv_ws_config",
)

DEFAULT_CFLAGS: tuple[str, ...] = ("-std=gnu11", "-O1", "-g", "-Wall", "-Wextra")


class GemminiSimError(CodegenError, RuntimeError):
    """A step of build-or-run failed; the message names the step and carries the tool output."""


@dataclass
class RunResult:
    """Outcome of one simulated run: the process's streams plus the simulator's counters."""

    returncode: int
    stdout: str
    stderr: str
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def sim_error(self) -> str | None:
        """The simulator's own error line, if it aborted the program."""
        for line in self.stderr.splitlines():
            if line.startswith("gemmini-sim error:"):
                return line
        return None


def include_dir() -> Path:
    """Directory holding gemmini.h / gemmini_params.h (for `#include "gemmini.h"`)."""
    return PACKAGE_DIR / "include"


def compile_program(
    sources: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    cflags: Sequence[str] = (),
    werror: bool = True,
    cc: str | None = None,
) -> Path:
    """Build `sources` into `output` against the simulator headers.

    Warnings are on, and errors by default: code meant for the accelerator
    should not lean on implicit conversions the simulator would silently absorb.
    The executable appears at `output` only if the build succeeded (it is linked
    under a temporary name and renamed).
    """
    try:
        compiler = [cc] if cc else toolchain.compiler()
    except CompileError as exc:
        raise GemminiSimError(str(exc)) from exc
    if shutil.which(compiler[0]) is None:
        raise GemminiSimError(f"compile: C compiler {compiler[0]!r} not found on PATH")
    srcs = [Path(s) for s in sources]
    if not srcs:
        raise GemminiSimError("compile: no source files given")
    for src in srcs:
        if not src.is_file():
            raise GemminiSimError(f"compile: source file {src} does not exist")
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    cmd = [
        *compiler,
        *DEFAULT_CFLAGS,
        *(["-Werror"] if werror else []),
        f"-I{PACKAGE_DIR}",
        f"-I{include_dir()}",
        *cflags,
        *[str(s) for s in srcs],
        "-o",
        str(tmp),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise GemminiSimError(
                f"compile: {' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr}"
            )
        if not toolchain.valid_artifact(tmp):
            raise GemminiSimError(f"compile: {' '.join(compiler)} exited 0 but wrote no "
                                  "executable (is CC a compiler?)")
        tmp.replace(out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return out


def parse_counters(text: str) -> dict[str, int]:
    """Read `gemmini.<name> <value>` lines (the simulator's counter dump) into a dict."""
    counters: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith("gemmini."):
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            raise GemminiSimError(f"parse counters: malformed line {lineno}: {line!r}")
        counters[parts[0].removeprefix("gemmini.")] = int(parts[1])
    return counters


def run_program(
    executable: str | os.PathLike[str],
    args: Sequence[str] = (),
    *,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = 120.0,
) -> RunResult:
    """Run a simulator-linked program and collect its output and counters.

    A non-zero exit is reported in the result, not raised: error-path tests need
    to inspect it.  Counters are empty if the program died before exiting
    normally (the simulator writes them from an atexit handler).
    """
    exe = Path(executable)
    if not exe.is_file():
        raise GemminiSimError(f"run: executable {exe} does not exist")
    with tempfile.TemporaryDirectory(prefix="gemmini-sim-") as tmpdir:
        counters_path = Path(tmpdir) / "counters.txt"
        run_env = dict(os.environ if env is None else env)
        run_env["GEMMINI_SIM_COUNTERS_OUT"] = str(counters_path)
        try:
            proc = subprocess.run(
                [str(exe), *args],
                input=stdin,
                capture_output=True,
                text=True,
                env=run_env,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise GemminiSimError(f"run: {exe} did not finish within {timeout} s") from exc
        counters = parse_counters(counters_path.read_text()) if counters_path.exists() else {}
    return RunResult(proc.returncode, proc.stdout, proc.stderr, counters)
