"""The C toolchain: `$CC` as make users write it, compilers that write nothing, and a
corrupt artifact in the kernel cache (evicted and rebuilt, never a permanent failure)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from codegen_reference import compile_kernel

from verisched.codegen.errors import CompileError
from verisched.pybridge.terms import IVar, Var, gen, get
from verisched.targets import toolchain

PROG = gen("i", "n", get(Var("f"), "i"))
ENV = {"f": (IVar("n"),)}


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VERISCHED_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_cc_with_flags(cache, monkeypatch) -> None:
    gcc = shutil.which("gcc") or shutil.which("cc")
    monkeypatch.setenv("CC", f"{gcc} -DVS_TEST_FLAG=1")
    assert toolchain.compiler()[1:] == ["-DVS_TEST_FLAG=1"]
    k = compile_kernel(PROG, ENV, name="with_flags")
    np.testing.assert_array_equal(k({"f": np.ones(3, np.float32)}, n=3), np.ones(3))


def test_cc_not_found_is_named(cache, monkeypatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler-xyz -O2")
    with pytest.raises(CompileError, match="'no-such-compiler-xyz' not found"):
        compile_kernel(PROG, ENV, name="nocc")


def test_a_compiler_that_writes_nothing_is_an_error(cache, monkeypatch) -> None:
    monkeypatch.setenv("CC", "/bin/true")
    with pytest.raises(CompileError, match="exited 0 but wrote no usable shared object"):
        compile_kernel(PROG, ENV, name="truecc")
    assert not list(cache.glob("*.so"))  # nothing half-made is left to be reused


def test_a_corrupt_cached_object_is_evicted_and_rebuilt(cache) -> None:
    k = compile_kernel(PROG, ENV, name="cached")
    path = k.path
    # A truncated object, as a killed build leaves.  A new file, not the loaded one
    # overwritten: this process has that one mapped.
    path.unlink()
    path.write_bytes(b"\x7fELF garbage")
    k2 = compile_kernel(PROG, ENV, name="cached")
    assert k2.path == path and toolchain.valid_artifact(path)
    np.testing.assert_array_equal(k2({"f": np.arange(4, dtype=np.float32)}, n=4), np.arange(4))
    path.unlink()
    path.write_bytes(b"")  # an empty file fails validation before loading
    k3 = compile_kernel(PROG, ENV, name="cached")
    assert os.path.getsize(k3.path) > 0
