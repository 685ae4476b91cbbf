"""The `native` and `native-openmp` targets: the best instruction set this CPU has.

`native` is not a library of its own: for each program it picks one member of
the C family (targets/native.py) and lowers with it, stating the pick in the
lowering's summary, in the C file's banner and on the kernel (`kernel.picked`).

- An ISA-neutral program (no vector instruction): the best ISA of the CPU,
  avx512 if it has avx512f, else avx2 if it has avx2 and fma, else plain c;
  plain c also for an element type the vector libraries do not compute in
  (they have float32 and float64 lanes: avx512 / avx512pd, avx2 / avx2pd).
  The C is compiled with -march=native either way.
- A program already in one ISA's instruction form (a derivation that chose
  avx2's or avx512's instructions, e.g. Sgemm.v's sgemm_avx2): that ISA, since
  its instructions exist in no other library.  On an AVX-512 CPU an avx2
  program thus runs as avx2 (the CPU has avx2 too; the pick says that the
  CPU's best is avx512 and a derivation for it may be faster).  Where the CPU
  lacks that ISA, `native` refuses at lowering, naming the program's ISA and
  the one it would pick here; naming the ISA's own target still compiles it.
- A program mixing both ISAs' instructions: refused (no library has both).

`best_isa` is the one place that ranks the ISAs; the benchmarks' `--isa auto`
and the scheduling API's `isa="native"` use it too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from verisched.codegen.errors import LowerError
from verisched.codegen.program import KernelProgram
from verisched.pybridge.instrs import InstrSpec, lookup
from verisched.pybridge.terms import Instr, walk
from verisched.targets import avx2, avx512, c, openmp
from verisched.targets.base import CSource, Kernel, Lowered
from verisched.targets.cpu import cpu_flags
from verisched.targets.native import NativeTarget

# Best first: (ISA, serial target, OpenMP target).
RANKED: tuple[tuple[str, NativeTarget, NativeTarget], ...] = (
    ("avx512", avx512.TARGET, avx512.TARGET_OPENMP),
    ("avx2", avx2.TARGET, avx2.TARGET_OPENMP),
    ("c", c.TARGET, openmp.TARGET),
)
_VECTOR = {isa: (s, p) for isa, s, p in RANKED if s.isa is not None}
# Instruction family -> the ISA whose targets lower it (avx512pd -> avx512).
_FAMILY_ISA = {lib.family: isa for isa, (s, _) in _VECTOR.items() for lib in s.isas}


def _has(target: NativeTarget, flags: Iterable[str]) -> bool:
    have = set(flags)
    return target.isa is None or all(f in have for f in target.isa.cpu_flags)


def best_isa(flags: Iterable[str] | None = None) -> str:
    """The best ISA of a CPU with `flags` (default: this one's): "avx512", "avx2" or "c"."""
    have = set(cpu_flags() if flags is None else flags)
    return next(isa for isa, s, _ in RANKED if _has(s, have))


def best_vector_isa(flags: Iterable[str] | None = None, dtype: str = "float32") -> str:
    """The best vector library of the CPU for lanes of `dtype`, for a schedule's
    `vectorize`/`select_instr`: best_isa's (avx512pd / avx2pd for float64), or avx2's on
    a CPU with neither (the kernel then compiles, and is refused before each call, as
    an explicit avx2 would be)."""
    isa = best_isa(flags)
    member = _VECTOR[isa][0] if isa in _VECTOR else avx2.TARGET
    lib = member.isa_for(dtype)
    if lib is None or (dtype != "float32" and lib is member.isa):
        raise ValueError(f"no vector library computes in {dtype} (float32, float64)")
    return lib.family


def program_isas(program: KernelProgram) -> set[str]:
    """The vector ISAs whose instructions `program` calls."""
    fams = set()
    for x in walk(program.expr):
        if isinstance(x, Instr):
            spec = lookup(x.name)
            fams.add(spec.family if spec else x.name.split("_", 1)[0])
    return {_FAMILY_ISA[f] for f in fams if f in _FAMILY_ISA}


def _native_member(isa: str, parallel: bool) -> NativeTarget:
    """The C family's member for `isa`, serial or with OpenMP."""
    return next(p if parallel else s for i, s, p in RANKED if i == isa)


@dataclasses.dataclass(frozen=True)
class AutoTarget:
    """`native` / `native-openmp` (implements targets.base.Target)."""

    name: str
    summary: str
    parallel: bool = False
    runs_on: str = "native"
    coq_scalar: str = "S"
    dtypes: tuple[str, ...] = c.TARGET.dtypes
    # Set only by tests: the CPU flags to pick by (None: this CPU's).
    flags: frozenset[str] | None = None

    def _runnable(self) -> list[NativeTarget]:
        flags = set(cpu_flags() if self.flags is None else self.flags)
        return [s for s, _ in _VECTOR.values() if _has(s, flags)]

    @property
    def memories(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m for s in self._runnable() for m in s.memories))

    @property
    def families(self) -> tuple[str, ...]:
        """The vector libraries this CPU runs (what the autotuner may vectorize with)."""
        return tuple(f for s in self._runnable() for f in s.families)

    def instructions(self) -> tuple[InstrSpec, ...]:
        return tuple(i for s in self._runnable() for i in s.instructions())

    def check_runtime(self) -> None:
        pass  # whatever it picks, this CPU runs (picked by its flags)

    def _member(self, isa: str) -> NativeTarget:
        return _native_member(isa, self.parallel)

    def resolve(self, program: KernelProgram) -> NativeTarget:
        """The member of the C family this program is built with on this CPU, renamed
        `native[-openmp]` and carrying the pick and its reason (a LowerError where
        no member can both take the program and run here)."""
        flags = set(cpu_flags() if self.flags is None else self.flags)
        best = best_isa(flags)
        used = program_isas(program)
        if len(used) > 1:
            raise LowerError(f"target {self.name}: {program.name} calls instructions of "
                             f"{' and '.join(sorted(used))}; no library provides both")
        if used:
            isa = used.pop()
            member = self._member(isa)
            if not _has(member, flags):
                need = ", ".join(member.isa.cpu_flags)
                raise LowerError(
                    f"target {self.name}: {program.name} is in {isa}'s instruction form, but "
                    f"this CPU lacks {need}, and {self.name} picks {best} here; use a "
                    f"derivation for {best}, or target {member.name} to compile it only")
            why = f"the program calls {isa}'s instructions"
            if isa != best:
                why += f"; this CPU's best is {best}, for which a derivation may be faster"
        else:
            isa = best
            dtype = program.dtype or "float32"
            if isa != "c" and dtype not in self._member(isa).dtypes:
                why = (f"the CPU's best is {isa}, which computes in "
                       f"{', '.join(self._member(isa).dtypes)} only, not {dtype}")
                isa = "c"
            else:
                why = "ISA-neutral program; " + (
                    f"this CPU has {', '.join(self._member(isa).isa.cpu_flags)}"
                    if isa != "c" else "this CPU has neither avx512f nor avx2+fma")
        member = self._member(isa)
        return dataclasses.replace(member, name=self.name, picked=isa, picked_why=why,
                                   summary=f"{member.summary} (picked by {self.name})")

    def lower(self, program: KernelProgram) -> Lowered:
        return self.resolve(program).lower(program)

    def render(self, lowered: Sequence[Lowered]) -> CSource:
        # A Lowered holds the member it was lowered with (resolve), which renders it.
        return lowered[0].target.render(lowered)

    def build(self, source: CSource, *, fast_math: bool = False) -> dict[str, Kernel]:
        return source.target.build(source, fast_math=fast_math)


TARGET = AutoTarget(name="native", summary="the best of avx512, avx2, c this CPU runs "
                    "(or the ISA the program's instructions are in)")
TARGET_OPENMP = AutoTarget(name="native-openmp", summary="native with OpenMP", parallel=True)
