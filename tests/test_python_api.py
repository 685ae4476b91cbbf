"""docs/python-api.md's examples run as written, in order, in one namespace, and print
what the page says they print."""

from __future__ import annotations

import re

from conftest import REPO, requires_coq


@requires_coq
def test_python_api_examples_run(capsys, tmp_path, monkeypatch) -> None:
    text = (REPO / "docs" / "python-api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)  # the schedule example saves matvec_tiled.v here
    ns: dict = {}
    for code in blocks:
        code = code.replace('"coq/', f'"{REPO}/coq/').replace('"examples/', f'"{REPO}/examples/')
        exec(compile(code, "python-api.md", "exec"), ns)  # noqa: S102
    out = capsys.readouterr().out
    # Every `# -> value` comment (what the line prints, before any "  (note)") is printed.
    shown = [m.group(1) for code in blocks
             for m in re.finditer(r"# -> (.+?)(?:  \(.*)?$", code, re.M)]
    assert len(shown) >= 8
    for value in shown:
        assert value in out, (value, out)
    assert "no loop named 'k'" in out and "refused" in out
    assert "expected float32" in out
    assert "tile i j by 32 8 into io jo ii ji." in (tmp_path / "matvec_tiled.v").read_text()
    assert "use_instr blas_gemvT" in (tmp_path / "atax_found.v").read_text()
