"""Gemmini's rules for the lowering: an implementation of codegen/hooks.py's interface.

The program is a derived ATL term whose staged buffers are lets placed in
`GEMMINI_SPAD` / `GEMMINI_ACC` (`in_mem`, coq/Targets/Instr.v) and whose data
movement and arithmetic are calls of gemmini_ instructions (instrs.py).
Everything else -- generations, sums, guards, reshapes, DRAM lets -- is
lowered by the core lowering (codegen/core.py, paper Fig. 3 and 6), whose
destinations (a buffer plus an index function and windows) tell each
instruction where its tile goes.  `GemminiRules` holds what one kernel's
lowering knows of the accelerator (buffers on chip, the rows in use, load
ids and their last configuration, element types) and answers the core's
hooks Exo-style (thesis Sec. 3.2: memories, instructions, configuration):

- `let_in_memory`: on-chip lets get static rows (targets/gemmini/onchip.py).
- `lower_term`: calls become moves and products (moves.py, matmul.py, im2col.py:
  the on-chip im2col, one mvin per row piece), or
  hardware loops (loops.py, `gemmini_loop_ws`); a
  reduction or `bias <+> ...` into an accumulator tile is the product's
  (first iteration overwrites); a generation of moves into consecutive
  tiles is a block move; scalar arithmetic and stray memory markers are
  refused.
- `zero_fill`: zeros in an on-chip buffer are moves from DRAM address 0.
- `let_ctype`: DRAM lets (im2col, packing) are scalar copies of int8 data,
  or int32 for what a bias reads (`wide_tensors`).
- `scalar_term`: scalar arithmetic outside instructions is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verisched.codegen.errors import LowerError
from verisched.codegen.hooks import LetBody
from verisched.codegen.ir import Ctx, Dest, Emitter
from verisched.codegen.normal import show
from verisched.codegen.poly import Poly
from verisched.pybridge.instrs import InstrError, instantiate
from verisched.pybridge.terms import Expr, Gen, Instr, Let, Mem, SBin, Sum, TAdd
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.conv_loop import CONV_LOOPS, lower_conv_loop
from verisched.targets.gemmini.im2col import IM2COLS, block_im2col, emit_im2col
from verisched.targets.gemmini.loops import LOOPS, lower_loop
from verisched.targets.gemmini.matmul import lower_acc_sum, lower_acc_tadd
from verisched.targets.gemmini.moves import LD_MACRO, block_load, lower_instr
from verisched.targets.gemmini.onchip import ONCHIP, OnChip, onchip_let, zero_tile

if TYPE_CHECKING:
    from verisched.codegen.core import Lowering


class GemminiRules:
    """One Gemmini kernel's lowering state, and the core's hooks (module docstring)."""

    def __init__(self, core: Lowering, wide: set[str] | None = None) -> None:
        self.core = core
        self.onchip: dict[str, OnChip] = {}
        self.top = {m: 0 for m in ONCHIP}
        self.peak = {m: 0 for m in ONCHIP}
        self.ld_ids: dict[tuple[str, str], int] = {}
        self.ld_last: dict[int, tuple[str, ...]] = {}
        self.input_types: dict[str, str] = {}  # C name of a DRAM tensor -> element type
        self.out_type: str | None = None
        self.out_cname = ""
        # Accumulator tiles being reduced into: C name -> conditions "first iteration".
        self.first: dict[str, list[str]] = {}
        # Size-like parameters that configure the output path (scale, ReLU): not sizes.
        self.config_params: set[str] = set()
        # ATL names of DRAM tensors (inputs, lets) holding int32 data (the rest is int8).
        self.wide: set[str] = wide or set()
        # What a hardware loop's code needs of the sizes beyond the derivation's own
        # hypotheses (a tile that fits, the stride's 8-bit field): (text, poly >= 0),
        # checked at the kernel's entry with them (NAME_error = 2), never by abort().
        self.requirements: list[tuple[str, Poly]] = []
        # The output scales sm * 2^se the kernel configures: (C text of sm, of se) ->
        # their polynomials over the parameters, each checked finite at the entry.
        self.scales: dict[tuple[str, str], tuple[Poly, Poly]] = {}

    # -- the extension interface (codegen/hooks.py) -------------------------------
    def meaning(self, e: Instr) -> Expr:
        try:
            return instantiate(e)
        except InstrError as exc:
            raise LowerError(f"gemmini: {exc}") from exc

    def lower_term(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter
                   ) -> bool | None:
        if isinstance(e, Instr) and e.name in LOOPS:
            return lower_loop(self, e, dest, mode, ctx, out)
        if isinstance(e, Instr) and e.name in CONV_LOOPS:
            return lower_conv_loop(self, e, dest, mode, ctx, out)
        if isinstance(e, Instr) and e.name in IM2COLS:
            return emit_im2col(self, e, dest, mode, ctx, out)
        if isinstance(e, Instr):
            return lower_instr(self, e, dest, mode, ctx, out)
        if isinstance(e, Mem):
            raise LowerError(f"gemmini: a memory annotation outside a let's value: {show(e)}")
        onchip = dest.buf is not None and dest.buf.cname in self.onchip
        if isinstance(e, Sum) and onchip:
            return lower_acc_sum(self, e, dest, mode, ctx, out)
        if isinstance(e, TAdd) and onchip:
            return lower_acc_tadd(self, e, dest, mode, ctx, out)
        if isinstance(e, SBin) or (onchip and not dest.windows):
            raise LowerError("gemmini: scalar arithmetic outside gemmini_ instructions is not "
                             f"supported by the gemmini target: {show(e)}")
        if (mode == "=" and isinstance(e, Gen) and isinstance(e.body, Instr) and onchip
                and len(dest.windows) == 3
                and (block_im2col if e.body.name in IM2COLS else block_load)(
                    self, e, dest, ctx, out)):
            return True
        return None

    def scalar_term(self, e: Expr, ctx: Ctx, out: Emitter) -> str | None:
        if isinstance(e, (Instr, Mem)):
            raise LowerError(f"gemmini: instruction or memory in scalar position: {show(e)}")
        if isinstance(e, (SBin, Sum)):
            raise LowerError("gemmini: scalar arithmetic outside gemmini_ instructions is not "
                             f"supported by the gemmini target: {show(e)}")
        return None

    def let_in_memory(self, e: Let, ctx: Ctx, out: Emitter, body: LetBody) -> bool | None:
        assert isinstance(e.value, Mem)
        memory = e.value.memory
        if memory == "DRAM":
            return self.core.with_let(Let(e.var, e.value.body, e.body), ctx, out, body)
        if memory not in ONCHIP:
            raise LowerError(f"gemmini: let {e.var} is placed in {memory}, which the gemmini "
                             "target does not have (GEMMINI_SPAD, GEMMINI_ACC, DRAM)")
        return onchip_let(self, e, memory, e.value.body, ctx, out, body)

    def let_ctype(self, var: str) -> str | None:
        # A DRAM buffer (im2col, packing): scalar copies, of the type its readers need.
        return "int32_t" if var in self.wide else "int8_t"

    def zero_fill(self, dest: Dest, ctx: Ctx, out: Emitter) -> bool:
        """Zeros the semantics asks for in an on-chip buffer: whole tiles, by mvin from 0."""
        if dest.buf is None or dest.buf.cname not in self.onchip:
            return False
        if len(dest.windows) < 2:
            raise LowerError("gemmini: part of an on-chip tile would need zeros written "
                             "element by element; fill it with gemmini_ instructions")
        if len(dest.windows) == 2:
            zero_tile(self, dest, ctx, out)
            return True
        a, b = dest.windows[0]
        with self.core.loop("z", a, b, ctx, out, []) as (c2, pv):
            self.core.zero_fill(dest.peel(pv), c2, out)
        return True

    # -- configuration of loads ---------------------------------------------------
    def require_ld(self, ld_id: int, value: tuple[str, ...], out: Emitter) -> None:
        """The next move needs load id `ld_id` configured to `value` (config.py)."""
        out.line(cfg.marker(f"ld{ld_id}", value))

    def ld_id_for(self, source: str, memory: str) -> int:
        """One load id per (DRAM tensor, memory), so their strides need no re-config;
        beyond three, id 2 is shared and reconfigured when it must be."""
        key = (source, memory)
        if key not in self.ld_ids:
            self.ld_ids[key] = min(len(self.ld_ids), 2)
        return self.ld_ids[key]

    def zero_loader(self, out: Emitter) -> str:
        """The mvin to zero-fill with.  A move from DRAM address 0 writes zeros whatever
        the stride and scale, but its load id must be configured: reuse the id and value
        of an earlier load (no re-configuration), else configure id 0."""
        for ld, value in sorted(self.ld_last.items()):
            self.require_ld(ld, value, out)
            return LD_MACRO[ld]
        self.require_ld(0, ("0", "1.0f", "0"), out)
        return LD_MACRO[0]

    def set_input_type(self, cname: str, etype: str, where: str) -> None:
        """Record that DRAM tensor `cname` holds `etype` data (one type per tensor)."""
        old = self.input_types.get(cname)
        if old is not None and old != etype:
            raise LowerError(f"gemmini: {where} reads {cname} as {etype}, elsewhere it is read "
                             f"as {old}")
        self.input_types[cname] = etype
