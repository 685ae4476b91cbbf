"""Rendering lowered kernels into C files with the jinja2 templates.

Several kernels can share one file (and one shared object): the tests batch
dozens of random programs per compilation to stay within a few minutes on
two cores.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import jinja2

from verisched.codegen.lower import LoweredKernel
from verisched.codegen.outline import Outlined, outline

_TEMPLATES = Path(__file__).resolve().parent / "templates"
_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=False,
)


def header_guard(name: str) -> str:
    """The include guard of the header for file `name`: its letters and digits as they
    are, and a hash of the exact name, so that headers for `Mm.c` and `mm.c`, or `a-b.c`
    and `a_b.c`, do not share one (the second would be skipped without a word)."""
    tag = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"VERISCHED_{''.join(ch if ch.isalnum() else '_' for ch in name)}_{tag}"


def signature(k: LoweredKernel) -> str:
    """The kernel ABI: inputs (const pointers), size parameters (int), output."""
    parts = [f"const {k.io_ctype} *restrict {c}" for _, c, _ in k.inputs]
    parts += [f"int {c}" for _, c in k.sizes]
    parts += [f"{k.io_ctype} *restrict {c}" for c, _, _ in k.outputs]
    return ", ".join(parts)


# A header is included from C and from C++ (a performance engineer's driver, a
# benchmark harness, a Halide or TVM project): C++ has no `restrict` (GCC, Clang and MSVC
# spell it `__restrict`, as GCC does in C89) and mangles a function's name unless told
# it is C's; each kernel's error flag is thread-local (`thread_local` in C++,
# `_Thread_local` in C11).  Every target's header wraps its declarations in these two
# (Gemmini's too).
HEADER_OPEN = """#ifndef VERISCHED_RESTRICT
#if defined(__cplusplus) || !defined(__STDC_VERSION__) || __STDC_VERSION__ < 199901L
#define VERISCHED_RESTRICT __restrict
#else
#define VERISCHED_RESTRICT restrict
#endif
#endif
#ifndef VERISCHED_THREAD_LOCAL
#if defined(__cplusplus) && __cplusplus >= 201103L
#define VERISCHED_THREAD_LOCAL thread_local
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define VERISCHED_THREAD_LOCAL _Thread_local
#else
#define VERISCHED_THREAD_LOCAL __thread
#endif
#endif
#ifdef __cplusplus
extern "C" {
#endif
"""
HEADER_CLOSE = """#ifdef __cplusplus
}
#endif
"""


def declared(params: Sequence[tuple[str, str, str]]) -> str:
    """Parameters (kind: "in", "size" or "out"; C type; name) as a header declares them:
    names in comments, so that a caller's macro of the same name (a size `NI`, an input
    `A`) cannot rewrite the declaration (the C file itself, compiled apart from the
    caller, keeps them), and `restrict` as VERISCHED_RESTRICT (HEADER_OPEN)."""
    shown = {"in": "const {t} *VERISCHED_RESTRICT /* {c} */", "size": "{t} /* {c} */",
             "out": "{t} *VERISCHED_RESTRICT /* {c} */"}
    return ", ".join(shown[kind].format(t=t, c=c) for kind, t, c in params)


def declaration(k: LoweredKernel) -> str:
    """The signature as the header declares it (`declared`)."""
    return declared([*(("in", k.io_ctype, c) for _, c, _ in k.inputs),
                     *(("size", "int", c) for _, c in k.sizes),
                     *(("out", k.io_ctype, c) for c, _, _ in k.outputs)])


def _check_names(kernels: list[LoweredKernel]) -> None:
    seen: set[str] = set()
    for k in kernels:
        if k.name in seen:
            raise ValueError(f"render: two kernels named {k.name!r} in one file")
        seen.add(k.name)


def render_source(kernels: list[LoweredKernel], target: str, notes: Sequence[str] = ()) -> str:
    """The C file for `kernels`; `notes` go in its opening comment (provenance,
    preconditions, and any kernel built without a bounds proof)."""
    _check_names(kernels)
    openmp = any(k.uses_openmp for k in kernels) or target.endswith("openmp")
    # Vector helpers (masks) of each instruction library used, once per file.
    helpers: list[str] = []
    for k in kernels:
        if k.isa is not None and k.isa.helpers not in helpers:
            helpers.append(k.isa.helpers)
    # An OpenMP kernel's parallel loop bodies are functions of their own, so that GCC
    # honours the `#pragma GCC unroll` inside them (codegen/outline.py).
    parts = {k.name: outline(k.name, signature(k), f"{k.name}_error", k.body)
             if k.uses_openmp else Outlined(k.body) for k in kernels}
    taken = {k.name for k in kernels}
    for o in parts.values():
        for fname in o.names:
            if fname in taken:
                raise ValueError(f"render: the helper {fname} of a parallel loop has the "
                                 "name of a kernel")
            taken.add(fname)
    # A file with intrinsics compiled without its ISA's flags failed with hundreds of
    # "inlining failed" errors: it says which flag instead (`-mavx512f` -> __AVX512F__).
    isa_checks = dict.fromkeys((f[2:], f"__{f[2:].upper().replace('-', '_')}__")
                               for k in kernels if k.isa is not None
                               for f in k.isa.cflags if f.startswith("-m"))
    # A project-wide `-DN=100` (PolyBench's habit) turned a parameter N into a number and
    # the file into cryptic syntax errors: it says which macro instead.
    params = dict.fromkeys(n for k in kernels for n in (
        *(c for _, c, _ in k.inputs), *(c for _, c in k.sizes), *(c for c, _, _ in k.outputs)))
    return _ENV.get_template("kernel.c.j2").render(
        kernels=kernels, target=target, openmp=openmp, signature=signature,
        vector_helpers=helpers, notes=list(notes), parts=parts, isa_checks=list(isa_checks),
        param_names=list(params))


def render_header(kernels: list[LoweredKernel], source_name: str,
                  notes: Sequence[str] = ()) -> str:
    guard = header_guard(source_name)
    return _ENV.get_template("kernel.h.j2").render(
        kernels=kernels, guard=guard, source_name=source_name, signature=declaration,
        open=HEADER_OPEN, close=HEADER_CLOSE,
        extents=lambda k: "; ".join(" x ".join(x) or "scalar" for _, _, x in k.outputs),
        notes=list(notes))


def render_harness(kernels: list[LoweredKernel]) -> str:
    return _ENV.get_template("harness.c.j2").render(kernels=kernels, signature=signature)


def c_helpers() -> str:
    """The helper block every generated C file starts with (index semantics, checked
    element counts), for targets that render their own templates."""
    return _ENV.get_template("helpers.c.j2").render()
