"""An output never destroys an input, and a refused command leaves old outputs alone.

Found by an audit of the command line (decision #136): `replay P.v --json P.v`,
`compile P.v -o P.v`, `report P.v -o P.v` and a search whose certificate has the input's
name all replaced the user's .v file with exit 0; `replay --json OUT` with a misspelled
derivation replaced OUT with a failure stub before Coq started; `compile -o k.c` with a
directory at k.h failed only after the replay; a kernel wrote into a read-only `out`
(a segfault on a read-only memory map).  Each is now refused before any work, by the
argument that causes it, and nothing on disk changes.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from verisched.cli import main
from verisched.codegen import lower
from verisched.codegen.errors import KernelCallError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.derivation import same_file
from verisched.pybridge.terms import IVar
from verisched.targets.native import build
from verisched.targets.registry import get_target


@pytest.fixture()
def source(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of Pipeline.v in a scratch directory, which is also the working one."""
    monkeypatch.chdir(tmp_path)
    return Path(shutil.copy(repo / "coq" / "Examples" / "Pipeline.v", tmp_path / "P.v"))


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> None:
    assert main(argv) != 0, argv
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for w in words:
        assert w in err, (argv, err)


def test_an_output_that_is_the_input_file_is_refused(source: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    text = source.read_text()
    np.save(tmp_path / "in.npy", np.arange(5, dtype=np.float32))
    cases = [
        (["replay", "P.v", "--json", "P.v"], "--json P.v"),
        (["replay", "P.v", "--json", str(source)], "--json"),             # another spelling
        (["compile", "P.v", "--derivation", "fused", "-o", "P.v"], "-o P.v"),
        (["report", "P.v", "--derivation", "fused", "-o", "./P.v"], "-o"),
        (["run", "P.v", "--derivation", "fused", "--size", "n=5", "--input", "f=in.npy",
          "-o", "in.npy"], "-o"),
    ]
    for argv, flag in cases:
        _refused(argv, capsys, flag, "is the input", "would destroy it")
        assert source.read_text() == text, argv
    assert np.load(tmp_path / "in.npy").tolist() == [0, 1, 2, 3, 4]
    # The header of -o P.c is P.h: a .v file called P.h is an input too.
    header = Path(shutil.copy(source, tmp_path / "Q.h"))
    _refused(["compile", str(header), "--derivation", "fused", "-o", "Q.c"], capsys,
             "(its header)", "is the input")
    assert header.read_text() == text


def test_a_search_whose_certificate_would_replace_its_input_is_refused(
        source: Path, tmp_path: Path) -> None:
    from verisched.search import SearchArgumentError, search

    named = Path(shutil.copy(source, tmp_path / "fused_found.v"))
    with pytest.raises(SearchArgumentError, match="would replace the input"):
        search(named, "fused")
    assert named.read_text() == source.read_text()


def test_a_mistake_found_before_coq_leaves_an_old_trace_alone(
        source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep = tmp_path / "keep.json"
    keep.write_text('{"old": "valuable"}')
    _refused(["replay", "P.v", "--derivation", "nope", "--json", str(keep)], capsys, "nope")
    _refused(["replay", "missing.v", "--json", str(keep)], capsys, "missing.v")
    assert keep.read_text() == '{"old": "valuable"}'


def test_compile_checks_the_header_path_before_the_replay(
        source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "k.h").mkdir()
    _refused(["compile", "P.v", "--derivation", "fused", "-o", "k.c"], capsys,
             "-o k.c (its header)", "is a directory")
    assert not (tmp_path / "k.c").exists()


def test_same_file_sees_through_spellings(tmp_path: Path) -> None:
    f = tmp_path / "a.v"
    f.write_text("x")
    (tmp_path / "link.v").symlink_to(f)
    assert same_file(f, tmp_path / "link.v")
    assert same_file(f, tmp_path / "sub" / ".." / "a.v")
    assert not same_file(f, tmp_path / "b.v")
    assert same_file(tmp_path / "new.v", tmp_path / "." / "new.v")  # neither exists yet


def test_a_kernel_refuses_a_read_only_out(tmp_path: Path) -> None:
    n = IVar("n")
    t = get_target("c")
    k = lower(parse_program("GEN [ i < n ] f _[i] + f _[i]"), {"f": (n,)}, name="dbl",
              sizes=["n"], dtype="float32", parallel=t.parallel)
    kern = build([k], t)["dbl"]
    f = np.arange(5, dtype=np.float32)
    np.save(tmp_path / "zeros.npy", np.zeros(5, dtype=np.float32))
    mapped = np.load(tmp_path / "zeros.npy", mmap_mode="r")
    frozen = np.zeros(5, dtype=np.float32)
    frozen.flags.writeable = False
    for out in (mapped, frozen, np.frombuffer(bytes(20), np.float32)):
        with pytest.raises(KernelCallError, match="out is read-only"):
            kern.call({"f": f}, {"n": 5}, out)
    assert not mapped.any() and not frozen.any()
    assert kern.call({"f": f}, {"n": 5}, np.empty(5, np.float32)).tolist() == [0, 2, 4, 6, 8]


def test_an_output_that_is_a_fifo_or_a_dangling_link_is_refused(tmp_path: Path) -> None:
    # The atomic write renames a new file over the path: as root, `report -o /dev/null`
    # replaced the device with a regular file, as it would a FIFO; a link to a missing
    # file was replaced by the file.  Refused, by the early check and by the writer,
    # and the path left as it was.
    import os
    import stat

    from verisched.pybridge.derivation import check_writable, write_text_atomic
    from verisched.pybridge.errors import OutputPathError

    fifo, link = tmp_path / "fifo", tmp_path / "link"
    os.mkfifo(fifo)
    link.symlink_to(tmp_path / "missing" / "x.c")
    for path, says in ((fifo, "not a regular file (a device, a FIFO or a socket)"),
                       (link, "a symbolic link to a missing file")):
        with pytest.raises(OutputPathError, match=re.escape(says)):
            check_writable(path)
        with pytest.raises(OutputPathError, match=re.escape(says)):
            write_text_atomic(path, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link"]
