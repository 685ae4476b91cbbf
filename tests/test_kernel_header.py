"""The generated header can be included by someone else's C program: its declarations
survive the caller's macros (issue 13: a size named NI, as PolyBench defines it) and
state the kernel's preconditions."""

from __future__ import annotations

import subprocess
from pathlib import Path

from verisched.codegen import lower
from verisched.codegen.render import render_header, render_source
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.terms import IConst, IVar, PCmp
from verisched.targets.toolchain import compiler as cc


def test_header_survives_the_callers_macros(tmp_path: Path) -> None:
    NI, NJ = IVar("NI"), IVar("NJ")
    k = lower(parse_program("GEN [ i < NI ] SUM [ j < NJ ] A _[ i ] _[ j ]"),
              {"A": (NI, NJ)}, name="rowsum", sizes=["NI", "NJ"],
              assume=[PCmp("<=", IConst(1), NJ)])
    (tmp_path / "rowsum.h").write_text(render_header([k], "rowsum.c", ["rowsum requires 1 <= NJ"]))
    (tmp_path / "rowsum.c").write_text(render_source([k], "c"))
    (tmp_path / "caller.c").write_text(
        "#define NI 4000\n#define NJ 10\n#define A alpha\n#define out 0\n"
        '#include "rowsum.h"\n'
        "float a[NI * NJ], r[NI];\n"
        "int main(void) { rowsum(a, NI, NJ, r); return rowsum_error; }\n")
    compiler = cc()
    for src in ("caller.c", "rowsum.c"):
        proc = subprocess.run([*compiler, "-c", src, "-o", src + ".o"], cwd=tmp_path,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([*compiler, "caller.c.o", "rowsum.c.o", "-o", "caller"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run(["./caller"], cwd=tmp_path).returncode == 0
    assert "requires 1 <= NJ" in (tmp_path / "rowsum.h").read_text()
