"""The README's Python examples run as written (one namespace, in order)."""

from __future__ import annotations

import json
import re
import tempfile

from conftest import REPO, requires_coq


@requires_coq
def test_readme_python_examples_run(capsys, tmp_path, monkeypatch) -> None:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)  # a file written into the working directory shows here
    (tmp_path / "tmp").mkdir()  # where the examples write (tempfile's directory)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    for code in blocks:  # each on its own (a reader copies one block), in a fresh namespace
        exec(compile(code.replace('"coq/', f'"{REPO}/coq/'), "README.md", "exec"), {})  # noqa: S102
    out = capsys.readouterr().out
    assert "('n',) []" in out  # Pipeline.v's fused: one size, no size hypothesis
    assert "[1. 3. 5. 7. 9.]" in out and "[1. 2. 3.]" in out
    assert "fused.h True" in out
    assert "tile i j by 32 8 into io jo ii ji." in out and "[11. 11. 11.]" in out
    assert out.count("True") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]  # nothing beside


def test_readme_proof_build_table_is_the_committed_run() -> None:
    """The README's per-file table and build range are those of the committed
    `bench proofs` run (benchmarks/results/xeon/proofs.json), not figures copied
    from an older one: each row's least user + system time, for our tree and the
    baseline, the rest of the files summed, and the builds' range of CPU time."""
    text = (REPO / "README.md").read_text()
    data = json.loads((REPO / "benchmarks/results/xeon/proofs.json").read_text())
    ours, base = data["least_per_file"]["ours"], data["least_per_file"]["baseline"]
    head = f"| file | CPU (s) | at {data['baseline']} (s) |"
    assert head in text
    rows = text.split(head, 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    named = [r for r in rows if r.startswith("| `")]
    assert len(named) >= 10
    shown = set()
    for row in named:
        name, cpu, at = (c.strip() for c in row.strip("|").split("|"))
        f = "coq/" + name.strip("`")
        assert (cpu, at) == (f"{sum(ours[f]):.2f}", f"{sum(base[f]):.2f}"), row
        shown.add(f)
    rest = [f for f in ours if f not in shown]
    rest_row = (f"| the other {len(rest)} files | {sum(sum(ours[f]) for f in rest):.2f} | "
                f"{sum(sum(v) for f, v in base.items() if f not in shown):.2f} |")
    assert rest_row in rows
    total = (f"| all files | {sum(map(sum, ours.values())):.2f} | "
             f"{sum(map(sum, base.values())):.2f} |")
    assert total in rows
    cpus = [b["cpu"] for b in data["builds"]["ours"]]
    commit = data["commit"].split()[0]
    assert f"{min(cpus):.1f}-{max(cpus):.1f} s" in text and f"at {commit}" in text
