"""The gemmini_ instructions: their specifications (for the registry) and their roles.

Each instruction of coq/Targets/Gemmini.v is a definition whose body is its
ATL specification over Z (Exo thesis Sec. 2.3 and App. D: `ld_i8`,
`matmul_acc_i8`, `st_acc_i8` are procedures whose body is their semantics).
The registry (pybridge/instrs.py) imports this module on the first lookup of
a `gemmini_` name; the interpreter then evaluates a call by its
specification.  The templates below transcribe Gemmini.v one for one
(tests/test_gemmini_lower.py compares them with Coq's printed definitions):

- `gemmini_mvin v r c R C` = `GEN [i < 16] GEN [j < 16]
  |[ (r + i <? R) && (c + j <? C) ]| v _[ r + i ] _[ c + j ]` (to the scratchpad);
- `gemmini_mvin_acc v r c R C`: the same value, to the accumulator (int32);
- `gemmini_matmul a b` = `GEN [i < 16] GEN [j < 16] SUM [k < 16] a _[i] _[k] * b _[k] _[j]`;
- `gemmini_mvout sm se act c r cc R C` = `GEN [i < 16] GEN [j < 16]
  |[ (r + i <? R) && (cc + j <? C) ]| gemmini_acc_out sm se act (c _[ i ] _[ j ])`;
- `gemmini_mvin_im2col x NB H W C OH OW s r m c`: the on-chip im2col, an A tile of
  16 output pixels `m + i` (flattened over NB x OH x OW) at kernel offset (s, r), read
  from the NHWC input `x` (`_IM2COL_BODY` below; lowered by im2col.py);
- `gemmini_mvin_im2col_strided x NB H W C OH OW st pd s r m c`: the same for a
  convolution with stride st and zero padding pd, zero in the padding.

`gemmini_acc_out sm se act x` (scale by the float sm * 2^se, round half to
even, saturate to int8, ReLU if act) is a scalar primitive of the algorithm,
not an ATL term: Coq defines it with `if` and `Z.max`.  It is registered so
that programs using it parse, with the placeholder body `x` (which only gives
the value's shape); its value is `acc_out` below, float32 arithmetic exactly
as the accelerator does it (tests/test_coq_gemmini.py checks Gemmini.v's Z model
against it on random and edge inputs: a test, not a proof), registered as the
spec's `native` evaluation, which the reference interpreter uses.

The lowering does not read the specifications: it reads the instruction's
*role* (what moves where) and which parameters hold the source, the offsets,
the clipping extents and the output configuration (`ROLES`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.instrs import INDEX, SCALAR, TENSOR, InstrSpec, Param, register
from verisched.pybridge.interp import WidthOverflow
from verisched.pybridge.terms import (
    Expr,
    Gen,
    Get,
    Guard,
    IBin,
    IConst,
    Instr,
    IVar,
    PAnd,
    PCmp,
    SBin,
    Sum,
    Var,
)
from verisched.targets.gemmini.config import DIM

LOAD, COMPUTE, STORE = "load", "compute", "store"
ACC_OUT = "gemmini_acc_out"


@dataclass(frozen=True)
class Role:
    """What an instruction does, for the lowering.

    kind: load (DRAM -> `memory`, overwriting), compute (SPAD x SPAD -> ACC, overwriting
    or accumulating by the store mode), store (ACC -> DRAM through the output path).
    The other fields name the parameters: the source tensor, the tile's origin (row,
    col) in the DRAM matrix and the extents it is clipped at (rows_at, cols_at: the
    window is [row, min(row + 16, rows_at)) x [col, min(col + 16, cols_at))), the
    operands of a compute and the output configuration of a store."""

    kind: str
    memory: str
    src: str | None = None
    row: str | None = None
    col: str | None = None
    rows_at: str | None = None
    cols_at: str | None = None
    a: str | None = None
    b: str | None = None
    scale_m: str | None = None
    scale_e: str | None = None
    act: str | None = None


def _window(row: str, col: str, rows_at: str, cols_at: str, body: Expr) -> Expr:
    """`GEN [ i < 16 ] GEN [ j < 16 ] |[ (row + i <? rows_at) && (col + j <? cols_at) ]| body`."""
    ri, cj = IBin("+", IVar(row), IVar("i")), IBin("+", IVar(col), IVar("j"))
    guard = PAnd(PCmp("<", ri, IVar(rows_at)), PCmp("<", cj, IVar(cols_at)))
    return Gen("i", IConst(0), IConst(DIM), Gen("j", IConst(0), IConst(DIM), Guard(guard, body)))


def _tensor(name: str) -> Param:
    return Param(name, TENSOR, 2)


def _index(name: str) -> Param:
    return Param(name, INDEX)


def _conv_params(*sizes: str) -> tuple[Param, ...]:
    """A conv loop's arguments in GemminiLoopConv.v's order: the output configuration,
    the three tensors, then the sizes."""
    return (_index("sm"), _index("se"), _index("act"), _tensor("x"), _tensor("w"),
            _tensor("bias"), *(_index(v) for v in sizes))


def _move_spec(name: str, doc: str) -> InstrSpec:
    body = _window("r", "c", "R", "C", Get(Get(Var("v"), IBin("+", IVar("r"), IVar("i"))),
                                           IBin("+", IVar("c"), IVar("j"))))
    params = (_tensor("v"), _index("r"), _index("c"), _index("R"), _index("C"))
    return InstrSpec(name, params, body, "gemmini", None, doc)


MATMUL_BODY = Gen("i", IConst(0), IConst(DIM), Gen("j", IConst(0), IConst(DIM), Sum(
    "k", IConst(0), IConst(DIM),
    SBin("*", Get(Get(Var("a"), IVar("i")), IVar("k")),
         Get(Get(Var("b"), IVar("k")), IVar("j"))))))

ACC_OUT_SPEC = InstrSpec(
    ACC_OUT, (_index("sm"), _index("se"), _index("act"), Param("x", SCALAR)), Var("x"),
    "gemmini", None,
    "scalar primitive (not an instruction): the output path; the body only gives the "
    "shape, the value is acc_out (tested equal to Gemmini.v's Z model)",
    native=lambda sm, se, act, x: acc_out(x, sm, se, act))

MVOUT_SPEC = InstrSpec(
    "gemmini_mvout",
    (_index("sm"), _index("se"), _index("act"), _tensor("c"), _index("r"), _index("cc"),
     _index("R"), _index("C")),
    _window("r", "cc", "R", "C", Instr(ACC_OUT, (IVar("sm"), IVar("se"), IVar("act"),
                                                  Get(Get(Var("c"), IVar("i")), IVar("j"))))),
    "gemmini", None, "an accumulator tile through the output path to DRAM (config_st + mvout)")

# The hardware loop (coq/Targets/GemminiLoop.v): its specification is the per-tile
# schedule of single instructions it unrolls into, transcribed as Coq prints it.
_LOOP_TILE = """(tlet c := in_mem GEMMINI_ACC
           ({bias}SUM [ ko < cdiv K 16 ]
              tlet a := in_mem GEMMINI_SPAD (gemmini_mvin A (io * 16) (ko * 16) M K) in
              tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
              gemmini_matmul a b) in
         gemmini_mvout sm se act c (io * 16) (jo * 16) M N)"""
_LOOP_BODY = ("trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ] transpose N 16 "
              "(trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ] transpose 16 16 "
              + _LOOP_TILE + ")))))")


def _loop_spec(bias: bool) -> InstrSpec:
    body = parse_program(_LOOP_BODY.format(
        bias="gemmini_mvin_acc D (io * 16) (jo * 16) M N <+> " if bias else ""))
    tensors = ("A", "B", "D") if bias else ("A", "B")
    params = (_index("sm"), _index("se"), _index("act"), *(_tensor(x) for x in tensors),
              _index("M"), _index("N"), _index("K"))
    return InstrSpec("gemmini_loop_ws_bias" if bias else "gemmini_loop_ws", params, body,
                     "gemmini", None,
                     "the whole quantized matmul as Gemmini's hardware loop (gemmini_loop_ws "
                     "calls over blocks of output tiles, targets/gemmini/loops.py)"
                     + (", from an int32 bias" if bias else ""))

SPECS: list[tuple[InstrSpec, Role | None]] = [
    (_move_spec("gemmini_mvin", "a clipped 16x16 window of an int8 DRAM matrix to the "
                "scratchpad (config_ld + mvin)"),
     Role(LOAD, "GEMMINI_SPAD", src="v", row="r", col="c", rows_at="R", cols_at="C")),
    (_move_spec("gemmini_mvin_acc", "a clipped 16x16 window of an int32 DRAM matrix to the "
                "accumulator (config_ld shrunk=0 + mvin)"),
     Role(LOAD, "GEMMINI_ACC", src="v", row="r", col="c", rows_at="R", cols_at="C")),
    (InstrSpec("gemmini_matmul", (_tensor("a"), _tensor("b")), MATMUL_BODY, "gemmini", None,
               "16x16x16 product of two scratchpad tiles (preload + compute_preloaded, WS)"),
     Role(COMPUTE, "GEMMINI_ACC", a="a", b="b")),
    (MVOUT_SPEC,
     Role(STORE, "GEMMINI_ACC", src="c", row="r", col="cc", rows_at="R", cols_at="C",
          scale_m="sm", scale_e="se", act="act")),
    (ACC_OUT_SPEC, None),
]

# The on-chip im2col move (coq/Targets/Gemmini.v), transcribed as Coq prints it: row i
# is the input pixel output pixel m + i reads at kernel offset (s, r), column j channel
# c + j; the second half of the guard is the read's bounds (Gemmini.v says why).
IM2COL = "gemmini_mvin_im2col"
_IM2COL_BODY = """GEN [ i < 16 ] GEN [ j < 16 ]
  |[ ((m + i <? NB * OH * OW) && (c + j <? C)) &&
     (((0 <=? (m + i) / OW / OH) && ((m + i) / OW / OH <? NB)) &&
      ((0 <=? ((m + i) / OW) mod OH + s) && (((m + i) / OW) mod OH + s <? H)) &&
      ((0 <=? (m + i) mod OW + r) && ((m + i) mod OW + r <? W))) ]|
    x _[ (m + i) / OW / OH ] _[ ((m + i) / OW) mod OH + s ] _[ (m + i) mod OW + r ]
      _[ c + j ]"""
SPECS.append((
    InstrSpec(IM2COL, (Param("x", TENSOR, 4), *(_index(v) for v in (
        "NB", "H", "W", "C", "OH", "OW", "s", "r", "m", "c"))),
              parse_program(_IM2COL_BODY), "gemmini", None,
              "the on-chip im2col: 16 output pixels' input pixels at one kernel offset, "
              "16 channels, from an NHWC input to the scratchpad (one mvin per run of "
              "consecutive pixels, targets/gemmini/im2col.py)"),
    Role(LOAD, "GEMMINI_SPAD", src="x", row="m", col="c")))

# The same move for a convolution with stride st and zero padding pd (Gemmini.v): output
# pixel (n, oh, ow) reads (n, oh st + s - pd, ow st + r - pd), zero in the padding (the
# guard's height and width conjuncts); lowered by im2col.py (zero-fill mvins there).
IM2COL_STRIDED = "gemmini_mvin_im2col_strided"
_IH = "((m + i) / OW) mod OH * st + s - pd"
_IW = "(m + i) mod OW * st + r - pd"
_IM2COL_STRIDED_BODY = f"""GEN [ i < 16 ] GEN [ j < 16 ]
  |[ ((m + i <? NB * OH * OW) && (c + j <? C)) &&
     (((0 <=? (m + i) / OW / OH) && ((m + i) / OW / OH <? NB)) &&
      ((0 <=? {_IH}) && ({_IH} <? H)) && ((0 <=? {_IW}) && ({_IW} <? W))) ]|
    x _[ (m + i) / OW / OH ] _[ {_IH} ] _[ {_IW} ] _[ c + j ]"""
SPECS.append((
    InstrSpec(IM2COL_STRIDED, (Param("x", TENSOR, 4), *(_index(v) for v in (
        "NB", "H", "W", "C", "OH", "OW", "st", "pd", "s", "r", "m", "c"))),
              parse_program(_IM2COL_STRIDED_BODY), "gemmini", None,
              "the on-chip im2col of a convolution with stride st and zero padding pd: 16 "
              "output pixels' input pixels at one kernel offset, 16 channels, zero in the "
              "padding (per row piece one mvin of the pixels inside the image, DRAM stride "
              "st C, and zero-filling mvins for the padding, targets/gemmini/im2col.py)"),
    Role(LOAD, "GEMMINI_SPAD", src="x", row="m", col="c")))

ROLES: dict[str, Role] = {}
for _spec, _role in SPECS:
    register(_spec)
    if _role is not None:
        ROLES[_spec.name] = _role
# After the single instructions: the loops' bodies are parsed in terms of them.
LOOP_SPECS = (register(_loop_spec(False)), register(_loop_spec(True)))

# The convolution loop (coq/Targets/GemminiLoopConv.v), transcribed likewise: per image n
# and output row q, the per-tile program whose A blocks are windows of the image rows.
_CONV_BODY = """GEN [ n < NB ] GEN [ q < H - KH + 1 ]
  trunc_r (W - KW + 1) (flatten (cdiv (W - KW + 1) 16) 16 (GEN [ io < cdiv (W - KW + 1) 16 ]
    transpose KO 16 (trunc_r KO (flatten (cdiv KO 16) 16 (GEN [ jo < cdiv KO 16 ]
      transpose 16 16
        (tlet c := in_mem GEMMINI_ACC
           (gemmini_mvin_acc (GEN [ p < W - KW + 1 ] bias) (io * 16) (jo * 16) (W - KW + 1) KO
            <+> SUM [ s < KH ] SUM [ r < KW ] SUM [ co < cdiv C 16 ]
              tlet a := in_mem GEMMINI_SPAD
                (gemmini_mvin (x _[ n ] _[ q + s ]) (io * 16 + r) (co * 16) (W - KW + 1 + r) C) in
              tlet b := in_mem GEMMINI_SPAD
                (gemmini_mvin (w _[ s ] _[ r ]) (co * 16) (jo * 16) C KO) in
              gemmini_matmul a b) in
         gemmini_mvout sm se act c (io * 16) (jo * 16) (W - KW + 1) KO))))))"""
CONV_SPEC = register(InstrSpec(
    "gemmini_loop_conv_ws",
    _conv_params("NB", "H", "W", "C", "KO", "KH", "KW"),
    parse_program(_CONV_BODY), "gemmini", None,
    "the whole quantized 2-D convolution (stride 1, no padding) as Gemmini's hardware conv "
    "loop (gemmini_loop_conv_ws calls over tiles, targets/gemmini/conv_loop.py)"))

# The same loop with a stride st and a zero padding pd (GemminiLoopConv.v): the A block is
# an mvin of the image row's pixels st apart, zero outside the image.
_OW = "((W + 2 * pd - KW) / st + 1)"
_CONV_STRIDED_BODY = f"""GEN [ n < NB ] GEN [ q < (H + 2 * pd - KH) / st + 1 ]
  trunc_r {_OW} (flatten (cdiv {_OW} 16) 16 (GEN [ io < cdiv {_OW} 16 ]
    transpose KO 16 (trunc_r KO (flatten (cdiv KO 16) 16 (GEN [ jo < cdiv KO 16 ]
      transpose 16 16
        (tlet c := in_mem GEMMINI_ACC
           (gemmini_mvin_acc (GEN [ p < {_OW} ] bias) (io * 16) (jo * 16) {_OW} KO
            <+> SUM [ s < KH ] SUM [ r < KW ] SUM [ co < cdiv C 16 ]
              tlet a := in_mem GEMMINI_SPAD
                (gemmini_mvin
                   (GEN [ p < {_OW} ] GEN [ ch < C ]
                      |[ ((0 <=? q * st + s - pd) && (q * st + s - pd <? H)) &&
                         ((0 <=? p * st + r - pd) && (p * st + r - pd <? W)) ]|
                        x _[ n ] _[ q * st + s - pd ] _[ p * st + r - pd ] _[ ch ])
                   (io * 16) (co * 16) {_OW} C) in
              tlet b := in_mem GEMMINI_SPAD
                (gemmini_mvin (w _[ s ] _[ r ]) (co * 16) (jo * 16) C KO) in
              gemmini_matmul a b) in
         gemmini_mvout sm se act c (io * 16) (jo * 16) {_OW} KO))))))"""
CONV_STRIDED_SPEC = register(InstrSpec(
    "gemmini_loop_conv_ws_strided",
    _conv_params("NB", "H", "W", "C", "KO", "KH", "KW", "st", "pd"),
    parse_program(_CONV_STRIDED_BODY), "gemmini", None,
    "the whole quantized 2-D convolution with stride st and zero padding pd as Gemmini's "
    "hardware conv loop (gemmini_loop_conv_ws calls over tiles, targets/gemmini/conv_loop.py)"))


def scale_float(sm: np.ndarray | int, se: np.ndarray | int) -> np.ndarray:
    """The float32 scale sm * 2^se (exact when |sm| < 2^24 and it is in float range;
    an infinity beyond it, without numpy's overflow warning)."""
    with np.errstate(over="ignore"):
        return np.ldexp(np.asarray(sm, dtype=np.float64), np.asarray(se, dtype=np.int64)
                        ).astype(np.float32)


def scale_problem(sm: int, se: int) -> str | None:
    """Why the output scale sm * 2^se is not one a kernel may take (a predicate: "is
    not ...", "has ..."), or None: it must be
    a finite float32 (Gemmini's config_st takes nothing else) whose significand a float
    holds exactly, |sm| < 2^24 (Gemmini.v's gemmini_scale_ok: (float)sm would round a
    larger one, and the kernel would scale by another number than the proved one)."""
    if not np.isfinite(scale_float(sm, se)):
        return ("is not a finite float32 (|sm| * 2^se must stay below 2^128): Gemmini's "
                "config_st cannot take it")
    if abs(sm) >= 2**24:
        return (f"has a significand sm = {sm} not below 2^24 in magnitude: a float32 "
                "cannot hold it exactly, so the kernel would scale by another number than "
                "the proved one (Gemmini.v's gemmini_scale_ok); write the scale as "
                "sm * 2^se with |sm| < 2^24 (split_scale)")
    return None


def acc_out(x: np.ndarray, sm: np.ndarray | int, se: np.ndarray | int,
            act: np.ndarray | int | bool) -> np.ndarray:
    """`gemmini_acc_out sm se act x`: float32(x) * float32 scale in single precision,
    rounded half to even, saturated to int8, then ReLU where `act` (Gemmini.v).

    `x` is Gemmini's int32 accumulator; Gemmini.v's model is over Z (equal to the
    simulator for every int32 x). A value beyond int32 (a long K, a large bias) is
    refused (`WidthOverflow`): wrapping it here, as the hardware does, would make the
    reference agree with a kernel whose result is not the proved one."""
    x64 = np.asarray(x).astype(np.int64)
    if x64.size and (x64.min() < -2**31 or x64.max() >= 2**31):
        bad = int(x64.max()) if x64.max() >= 2**31 else int(x64.min())
        raise WidthOverflow(f"an accumulator value ({bad}) is beyond int32: Gemmini's "
                            "accumulator wraps where the proof (over Z) does not; use "
                            "a shorter reduction or smaller bias values")
    xf = x64.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow saturates, as in C
        y = xf * scale_float(sm, se)
        out = np.clip(np.rint(y.astype(np.float64)), -128, 127)
    out = np.where(np.asarray(act) != 0, np.maximum(out, 0), out)
    return out.astype(np.int64)


def split_scale(scale: float) -> tuple[int, int]:
    """A float32 scale as (sm, se) with scale == sm * 2^se exactly and |sm| < 2^24."""
    f = np.float32(scale)
    if not np.isfinite(f):
        raise ValueError(f"scale {scale} is not a finite float32")
    if f == 0:
        return 0, 0
    m, e = np.frexp(np.float64(f))  # f = m * 2^e, 0.5 <= |m| < 1, exact in float64
    sm, se = int(m * 2**24), int(e) - 24
    while sm % 2 == 0:
        sm, se = sm // 2, se + 1
    assert np.float32(np.ldexp(np.float64(sm), se)) == f
    return sm, se


