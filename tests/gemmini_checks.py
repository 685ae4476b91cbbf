"""Checks shared by the Gemmini tests: the registry's instruction specifications are
Coq's definitions, the int64 convolution the conv kernels are compared with, and a
kernel's driver built with AddressSanitizer and UBSan."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.instrs import alpha_equal, instantiate, spec_of
from verisched.pybridge.terms import Instr, IVar, Var
from verisched.targets.gemmini import build
from verisched.targets.gemmini.sim import compile_program


def specs_agree_with_coq(coq, library: str, variables: str, calls: list[str]) -> None:
    """For each call `name arg ...` (arguments among `variables`, a Coq `Variables`
    binder list), the instruction's definition in `library` (a `Targets.` module),
    unfolded and printed by Coq, is the registry's template instantiated with the same
    arguments, up to the names of bound variables.  The Coq session is restored."""
    start = coq.state
    try:
        coq.run_ok(f"From Verisched Require Import {library}.")
        coq.run_ok("Section VS_gemmini_specs.")
        coq.run_ok(f"Variables {variables}.")
        coq.run_ok("Goal True.")
        for text in calls:
            name, *args = text.split()
            r = coq.run(f"let t := eval unfold {name} in ({text}) in bridge_print_term t.",
                        timeout=60)
            assert r.ok, r.error
            printed = re.search(r"<VS-TERM>(.*?)</VS-TERM>", r.output, re.S).group(1)
            spec = spec_of(name)
            call = Instr(name, tuple(IVar(a) if p.kind == "index" else Var(a)
                                     for p, a in zip(spec.params, args, strict=True)))
            assert alpha_equal(parse_program(printed), instantiate(call)), (name, printed)
    finally:
        coq.back_to(start)


def out_dims(h: int, wd: int, kh: int, kw: int, st: int = 1, pd: int = 0) -> tuple[int, int]:
    """The output's height and width of a convolution with stride st and padding pd."""
    return (h + 2 * pd - kh) // st + 1, (wd + 2 * pd - kw) // st + 1


def conv_acc(x: np.ndarray, w: np.ndarray, bias: np.ndarray, st: int = 1,
             pd: int = 0) -> np.ndarray:
    """bias + the convolution with stride st and zero padding pd, NHWC (weights
    KH x KW x C x KO), in int64."""
    nb, h, wd, c = x.shape
    kh, kw, _, ko = w.shape
    oh, ow = out_dims(h, wd, kh, kw, st, pd)
    xp = np.zeros((nb, h + 2 * pd, wd + 2 * pd, c), dtype=np.int64)
    xp[:, pd:pd + h, pd:pd + wd, :] = x
    acc = np.broadcast_to(bias.astype(np.int64), (nb, oh, ow, ko)).copy()
    for s in range(kh):
        for r in range(kw):
            win = xp[:, s:s + st * (oh - 1) + 1:st, r:r + st * (ow - 1) + 1:st, :]
            acc += np.einsum("nqpc,ck->nqpk", win, w[s, r].astype(np.int64))
    return acc


def sanitized_exe(kernel, tmp_path: Path) -> Path:
    """The kernel's file-driven driver built with AddressSanitizer and UBSan, aborting at
    the first report (the driver allocates each input with its exact size and the
    simulator reads DRAM through the kernel's pointers, so a read outside an input is
    caught); pass it to `build.run(..., exe=...)`."""
    src = tmp_path / "k.c"
    src.write_text(build.render(kernel))
    return compile_program([src], tmp_path / "k.exe", cflags=[
        "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
        "-DVERISCHED_GEMMINI_DRIVER"])
