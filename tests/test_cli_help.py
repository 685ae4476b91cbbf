"""The command line's self-description: `--version`, and `bench --help` listing every
benchmark with its peers and duration (read from each module's source, so a
benchmark whose peer is not installed is still listed)."""

from __future__ import annotations

import pytest

from verisched.cli import main
from verisched.commands.bench import available


def test_version_names_the_package_coq_and_python(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("verisched ") and "Python 3." in out
    assert "Coq " in out or "coqc not found" in out


def test_bench_help_lists_every_benchmark_with_peers_and_duration(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    out = capsys.readouterr().out
    names = available()
    assert {"blur", "sgemm", "conv", "gemmini", "bridge"} <= set(names)
    for name in names:
        assert f"\n  {name}: " in out, out
    assert out.count("peers: ") == len(names) and "not stated" not in out
    assert out.count("duration: ") == len(names)
