"""What a SIMD target library tells the lowering: `VectorISA`.

Model: the Exo thesis's hardware libraries (Sec. 3.2).  An instruction is
known by its specification (pybridge/instrs.py, checked against Coq); the
target library only says which C each instruction name becomes (Sec. 3.2.2's
"@instr" template) and which register memory it has.  targets/avx2.py and
targets/avx512.py build one; the lowering (codegen/vector.py) reads it.  It
lives apart from the vector rules so the lowering's types (codegen/ir.py)
can name it without importing the rules.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from verisched.pybridge.instrs import spec_of

TILE_PREFETCH_MODES = ("next", "before", "none")


@dataclass(frozen=True)
class VectorISA:
    """A SIMD target library: instruction family, memory, and C templates.

    Templates use str.format fields: {p} a pointer, {m} a mask, {v} {a} {b} {c}
    vectors, {x} a scalar, {k} a lane count (mask of lanes l < k)."""

    name: str                 # "avx2"
    family: str               # instruction-name family in the registry
    memory: str               # register memory of coq/Targets/Instr.v
    lanes: int
    vtype: str
    mask_type: str
    setzero: str
    set1: str
    loadu: str
    maskload: str
    storeu: str
    maskstore: str
    add: str
    mul: str
    max: str
    fmadd: str
    reduce_add: str           # the sum of the lanes of {v}, a scalar
    mask_first: str           # mask of lanes l < {k}
    mask_range: str           # mask of lanes {lo} <= l < {hi}
    keep: str                 # {v} with lanes outside {m} zeroed
    blend: str                # lanes of {b} inside {m}, of {a} outside
    cflags: tuple[str, ...]
    cpu_flags: tuple[str, ...]  # /proc/cpuinfo flags the code needs
    helpers: str              # C helper functions (masks), emitted once per file
    dtype: str = "float32"    # the element type of its lanes (avx512pd: float64)
    # A hint that the line at {p} will be read soon (no effect on the result).
    prefetch: str = "_mm_prefetch((const char *)({p}), _MM_HINT_T0)"
    # When a register tile's destination is prefetched (codegen/vector.py): "next"
    # (after the tile's stores, the destination of the enclosing loop's next iteration,
    # decision #118), "before" (the tile's own destination, before the loop computing
    # it: BLIS's C-tile prefetch, #116) or "none".
    tile_prefetch: str = "next"
    # The hint with which a register tile prefetches part of the next row it will add
    # into (codegen/prefetch.py, decision #122): write intent (prefetchw where the CPU
    # has it; GCC emits prefetcht0 otherwise).  None: no row-ahead prefetch.
    row_prefetch: str | None = "_mm_prefetch((const char *)({p}), _MM_HINT_ET0)"
    # The hint for the part of the next row's inputs this row did not read: into L2.
    # None: only the destination is prefetched.
    row_prefetch_read: str | None = "_mm_prefetch((const char *)({p}), _MM_HINT_T1)"

    def __post_init__(self) -> None:
        # A misspelt mode would silently emit no prefetch at all.
        if self.tile_prefetch not in TILE_PREFETCH_MODES:
            raise ValueError(f"VectorISA {self.name}: tile_prefetch {self.tile_prefetch!r} is "
                             f"not one of {', '.join(TILE_PREFETCH_MODES)}")

    def supports(self, name: str) -> bool:
        """Does this library emit instruction `name`?"""
        spec = spec_of(name)
        return spec.family == self.family


def doubles(isa: VectorISA, **changes: object) -> VectorISA:
    """The float64 library of a float32 one (decision #154): every intrinsic template
    with its `_ps` intrinsics as their `_pd` forms (`_mm256_fmadd_ps` ->
    `_mm256_fmadd_pd`, `_mm256_castsi256_ps` -> `_mm256_castsi256_pd`), and `changes`
    for what differs otherwise (name, family, lanes, vector and mask types, the
    helpers and what calls them).  One rule instead of a second hand-written copy of
    each template, so the two libraries cannot drift apart."""
    text = {f.name: getattr(isa, f.name).replace("_ps(", "_pd(") for f in fields(isa)
            if f.type == "str" and f.name not in changes and "_ps(" in getattr(isa, f.name)}
    return replace(isa, dtype="float64", **text, **changes)  # type: ignore[arg-type]
