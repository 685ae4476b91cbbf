"""The README's Python examples run as written (one namespace, in order)."""

from __future__ import annotations

import re

from conftest import REPO, requires_coq


@requires_coq
def test_readme_python_examples_run(capsys, tmp_path, monkeypatch) -> None:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)  # the examples write fused.c and fused.h here
    ns: dict = {}
    for code in blocks:
        exec(compile(code.replace('"coq/', f'"{REPO}/coq/'), "README.md", "exec"), ns)  # noqa: S102
    out = capsys.readouterr().out
    assert "('n',) []" in out  # Pipeline.v's fused: one size, no size hypothesis
    assert "[1. 3. 5. 7. 9.]" in out and "[1. 2. 3.]" in out
    assert "void fused(" in (tmp_path / "fused.h").read_text()
    assert "tile i j by 32 8 into io jo ii ji." in out and "[11. 11. 11.]" in out
    assert "tile i j by 32 8 into io jo ii ji." in (tmp_path / "matvec.v").read_text()
