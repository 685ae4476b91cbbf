"""The lowering's own data: emitted lines, C names, buffers, destinations, scopes.

Shared by every module of the lowering (core, vector rules, support
analysis) and by the targets that extend it (targets/gemmini), so none of
them has to import another to name these types.  Fig. 3 of the ATL paper
lowers a term *into* a left-hand side; `Dest` is that left-hand side (a
buffer, an index accumulator, and the window of indices that may be
stored), `Ctx` the scope it is lowered in (index names, tensors, facts).
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from verisched.codegen.errors import LowerError
from verisched.codegen.isa import VectorISA
from verisched.codegen.poly import Poly
from verisched.codegen.prover import Facts

# The C type a kernel computes in (temporaries, accumulators, let buffers), per element
# type; int8 kernels compute in int32 and only their inputs and outputs are int8
# (IO_CTYPES; the policy is targets/base.py ROUNDING["int8"]).
# Sizes, loop variables and per-dimension indices are C `int` (decisions #40); an index
# constant beyond it would wrap in the loop bounds (an empty loop, the output unwritten).
C_INT_MAX = 2**31 - 1

CTYPES = {"float32": "float", "float64": "double", "int32": "int32_t", "int8": "int32_t"}
# The C type of a kernel's input and output arrays.
IO_CTYPES = {**CTYPES, "int8": "int8_t"}
# Bytes per element (stack buffers are limited in bytes, codegen/lets.py).
ELEM_BYTES = {"float32": 4, "float64": 8, "int32": 4, "int8": 4}
# The helpers (templates/helpers.c.j2) for Coq's division and max, per element type.
DIV_MAX = {"float32": ("vs_sdiv", "vs_smax"), "float64": ("vs_ddiv", "vs_dmax"),
           "int32": ("vs_idiv", "vs_imax"), "int8": ("vs_idiv", "vs_imax")}
# Integer kernels add and multiply through helpers that wrap modulo 2^32 in unsigned
# arithmetic (templates/helpers.c.j2): C leaves a signed overflow undefined, and the
# emitted file must be right under the user's own flags, not only with -fwrapv.
WRAP_OPS = {d: {"+": "vs_iadd", "*": "vs_imul"} for d in ("int32", "int8")}
# Names the generated C itself uses (beside the headers' names in c_names.txt).
_C_USED = {"main", "free", "malloc", "calloc", "memset", "abort", "int32_t", "size_t"}


def _header_names() -> frozenset[str]:
    """c_names.txt: C's keywords and every name the included headers declare."""
    text = (Path(__file__).parent / "c_names.txt").read_text()
    return frozenset(w for line in text.splitlines()
                     if line and not line.startswith("#") for w in line.split())


C_RESERVED = _C_USED | _header_names()


def c_name_clash(name: str) -> bool:
    """Would `name`, defined by a kernel, clash with C or with what the kernel includes?
    A keyword, a header's macro, function or type (c_names.txt: `NULL` or `INT_MAX` as
    an input's name, `exit` as the kernel's); an identifier C reserves (`_` then a
    capital or `_`); the helpers' `vs_` and the intrinsics' `_mm` prefixes."""
    return name in C_RESERVED or _reserved_prefix(name)


def _reserved_prefix(name: str) -> bool:
    """Does `name` start as C reserves (`_` then a capital or `_`), or as the helpers
    (`vs_`) and the intrinsics (`_mm`) are named?"""
    return re.match(r"_[A-Z_]", name) is not None or name.startswith(("vs_", "_mm"))



class Emitter:
    """Indented C lines; sub-emitters let a lowering decide afterwards what goes first."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0

    def line(self, s: str) -> None:
        self.lines.append("  " * self.level + s)

    def extend(self, other: Emitter) -> None:
        for s in other.lines:
            self.lines.append("  " * self.level + s)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.line(header + " {" if header else "{")
        self.level += 1
        yield
        self.level -= 1
        self.line("}")


def kernel_name_problem(name: str) -> str | None:
    """Why `name` cannot name a kernel's C function, or None.  Unlike a binder's name,
    which the lowering renames, the kernel's name is the user's: it is refused."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return "is not a C identifier (letters, digits and _, not starting with a digit)"
    if _reserved_prefix(name):
        return ("starts with a prefix reserved for C or for the generated code (_ then a "
                "capital letter or _, vs_, _mm)")
    if name in C_RESERVED:
        return ("is a C keyword or a name the kernel's C already uses (a macro, function "
                "or type of the headers it includes, such as exit, NULL or INT_MAX, or "
                "main, free)")
    return None


@dataclass
class Names:
    """Fresh C identifiers: ATL binders may shadow one another, C stores may not capture."""

    used: set[str] = field(default_factory=set)

    def fresh(self, base: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", base) or "v"
        if base[0].isdigit():
            base = "v" + base
        if c_name_clash(base) or keyword.iskeyword(base):
            # a prefix clash cannot be mended by a suffix: `_Bool` becomes `v_Bool`
            base = "v" + base if base.startswith(("_", "vs_")) else base + "_"
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name


@dataclass(frozen=True)
class Buf:
    """A row-major buffer; `dims` are C-evaluable extents.  `support`: conditions
    `f >= 0` over `#0, #1, ...` (its indices) outside which it holds zeros
    (support.py), or () if unknown."""

    cname: str
    dims: tuple[Poly, ...]
    support: tuple[Poly, ...] = ()


@dataclass(frozen=True)
class ScalarVar:
    """A scalar in a C local (scalar let) or behind a pointer (scalar input)."""

    cexpr: str


@dataclass(frozen=True)
class RegBuf:
    """A let-bound buffer in a register memory (codegen/vector.py): one vector
    variable per element of the leading dimensions (`elems`, row-major); `dims`
    ends with the lanes."""

    cname: str
    dims: tuple[Poly, ...]
    elems: tuple[str, ...]
    memory: str

    def elem(self, lead: list[Poly], what: str) -> str | None:
        """The variable for constant leading indices; None when out of range (zero)."""
        flat = 0
        for p, d in zip(lead, self.dims[:-1], strict=True):
            k, n = p.as_const(), d.as_const()
            if k is None:
                raise LowerError(f"lowering: {what}: register buffer {self.cname} indexed by "
                                 f"a non-constant ({p.key()}); only loops with a constant "
                                 "extent can be unrolled over a register buffer")
            assert n is not None
            if not 0 <= k < n:
                return None
            flat = flat * n + k
        return self.elems[flat]


Window = tuple[Poly, Poly]
IndexFn = Callable[[list[Poly]], tuple[list[Poly], list[Poly]]]


@dataclass(frozen=True)
class Dest:
    """Fig. 3's left-hand side: buffer, index accumulator, and one window per remaining
    dimension.  `fn` maps the term's indices to buffer indices plus store conditions
    (each `c >= 0`)."""

    buf: Buf | RegBuf | None
    lvalue: str
    fn: IndexFn
    windows: tuple[Window, ...]

    def remap(self, g: Callable[[list[Poly]], list[Poly]], windows: tuple[Window, ...],
              conds: Callable[[list[Poly]], list[Poly]] | None = None) -> Dest:
        outer = self.fn

        def fn(idx: list[Poly]) -> tuple[list[Poly], list[Poly]]:
            bi, cs = outer(g(idx))
            return bi, cs + (conds(idx) if conds else [])

        return replace(self, fn=fn, windows=windows)

    def peel(self, k: Poly) -> Dest:
        outer = self.fn
        return replace(self, fn=lambda idx: outer([k, *idx]), windows=self.windows[1:])


def whole(buf: Buf | RegBuf) -> Dest:
    """The destination writing all of `buf`, indexed as it is laid out."""
    return Dest(buf, "", lambda i: (i, []), tuple((Poly.const(0), d) for d in buf.dims))


# The slot of the kernel's own scope (codegen/lets.py hoists loop-invariant buffers into
# it); not an ATL name, so no store_at or loop can collide with it.
KERNEL_SLOT = "<kernel>"


@dataclass
class StoreSlot:
    """Where a `store_at p i` puts p's allocation: the top of the body of a C loop over
    `i` (Halide's store-at, Halide-semantics seed Sec. 8.4: the allocation moves to just
    inside a loop that still encloses every access).  Lines are collected while the
    body is lowered and placed when it is done (core.Lowering.loop)."""

    loop: str              # the ATL loop name
    bound: frozenset[str]  # C index names bound at the top of the body (extents may use)
    par_depth: int         # parallel loops enclosing the slot, the loop itself included
    allocs: list[str] = field(default_factory=list)
    frees: list[str] = field(default_factory=list)


@dataclass
class Ctx:
    """The scope a term is lowered in: what is known (facts), the C names of index
    variables and tensors, and where the term sits (parallel loop, sum)."""

    facts: Facts
    idx_names: dict[str, str]
    tensors: dict[str, Buf | ScalarVar | RegBuf]
    parallel_ok: bool = False
    in_parallel: bool = False
    in_sum: bool = False
    # Inside a parallel loop, no fallback loop yet on this path (openmp.py, rule 6).
    fallback_ok: bool = False
    # C names of unrolled loop variables and their value in this copy (vector.py).
    consts: dict[str, int] = field(default_factory=dict)
    # How many loops on this path may run in parallel (parallel or fallback loops).
    par_depth: int = 0
    # ATL loop name -> the storage slot of the innermost enclosing C loop over it
    # that a `store_at` names (codegen/lets.py).
    slots: dict[str, StoreSlot] = field(default_factory=dict)
    # The innermost enclosing C loop: its C variable and its upper bound as C text.  A
    # register tile prefetches the destination of that loop's next iteration (vector.py).
    loop: tuple[str, str] | None = None
    # Every enclosing C loop, outermost first: its C variable and bounds [lo, hi) (a
    # register tile's row-ahead prefetch spreads over the loops inside a row, prefetch.py).
    loops: tuple[tuple[str, Poly, Poly], ...] = ()
    # The index expressions over the sizes alone that the C evaluates in `int` (loop
    # bounds such as `(n + 31) / 32`, a fused extent `m*n`), shared by the whole kernel
    # (child scopes hold the same set): its entry check refuses sizes at which one
    # leaves `int` (lower.entry_check), where the loop would wrap.  None: not recorded.
    int_exprs: set[Poly] | None = None
    # Bounds over the sizes of `int` arithmetic with loop variables (`i*n + j` is at
    # most m*n - 1 inside loops i < m, j < n), shared likewise: the entry check refuses
    # sizes at which one exceeds INT_MAX (codegen/intrange.py).  None: not recorded.
    int_bounds: set[Poly] | None = None

    def scope(self) -> set[str]:
        """The names an index expression may use here: loop variables and sizes."""
        return set(self.idx_names.values()) | set(self.facts.sizes)

    def child(self, **kw: object) -> Ctx:
        c = replace(self, facts=self.facts.child(), idx_names=dict(self.idx_names),
                    tensors=dict(self.tensors), consts=dict(self.consts),
                    slots=dict(self.slots))
        for k, v in kw.items():
            setattr(c, k, v)
        return c


@dataclass
class LoweredKernel:
    """A lowered program: signature data for templates and the Python wrapper."""

    name: str
    dtype: str
    inputs: list[tuple[str, str, tuple[Poly, ...]]]  # (ATL name, C name, extents)
    sizes: list[tuple[str, str]]  # (ATL name, C name)
    out_dims: tuple[Poly, ...]
    out_cname: str
    out_extents_c: list[str]
    body: list[str]
    parallel_loops: int
    uses_openmp: bool
    # Facts `f >= 0` over the size parameters (C names) the code relies on; the
    # Python wrapper refuses sizes violating them.  (text, poly)
    assumptions: list[tuple[str, Poly]] = field(default_factory=list)
    # The expressions over the sizes (C names) that the C evaluates in `int`, as (C
    # text, poly): the kernel refuses sizes at which one leaves `int`, and so does the
    # wrapper, naming it (lower.entry_check).
    int_exprs: tuple[tuple[str, Poly], ...] = ()
    # Bounds over the sizes (C names) of its int arithmetic with loop variables, as (C
    # text, poly): each must be at most INT_MAX, checked alike (lower.entry_check).
    int_bounds: tuple[tuple[str, Poly], ...] = ()
    # The vector target library the kernel was lowered for (None: scalar C); the
    # kernel needs its CPU features to run.
    isa: VectorISA | None = None
    uses_vectors: bool = False
    # Inputs (ATL names) the output may be passed as, computing in place (inplace.py).
    inplace: tuple[str, ...] = ()
    # The second and later outputs of a program with several (a tuple): (C name,
    # extents, extents as C text), after the first in the signature.
    more_outputs: list[tuple[str, tuple[Poly, ...], list[str]]] = field(default_factory=list)

    @property
    def outputs(self) -> list[tuple[str, tuple[Poly, ...], list[str]]]:
        """Every output, in signature order."""
        return [(self.out_cname, self.out_dims, self.out_extents_c), *self.more_outputs]

    @property
    def ctype(self) -> str:
        return CTYPES[self.dtype]

    @property
    def io_ctype(self) -> str:
        """The C type of the input and output arrays (int8_t for an int8 kernel, which
        computes in int32)."""
        return IO_CTYPES[self.dtype]
