"""The bounds the entry check puts on a kernel's `int` arithmetic (codegen/intrange.py)
are bounds: on random loop nests (loop bounds with min, max, floor division and outer
variables, guards), every value an expression takes inside the nest is at most its
bound over the sizes, and a kernel whose guard adds two loop variables refuses, at
entry, sizes at which that sum leaves int."""

from __future__ import annotations

import random
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from test_kernel_header import _sanitized_caller

from verisched.codegen import lower
from verisched.codegen.errors import KernelCallError
from verisched.codegen.intrange import prune, upper
from verisched.codegen.ir import Ctx
from verisched.codegen.poly import Poly, binop, evaluate
from verisched.codegen.prover import Facts
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.terms import IVar
from verisched.targets.native import build
from verisched.targets.registry import get_target

SIZES = ("n", "m")


def _nest(rng: random.Random) -> tuple[Ctx, list[tuple[str, Poly, Poly]], list[Poly]]:
    """A scope inside 1-3 random loops (as core.Lowering.loop enters them) and maybe a
    guard; returns it, the loops and the guard facts."""
    ctx = Ctx(Facts(sizes=frozenset(SIZES)), {}, {})
    for s in SIZES:
        ctx.facts.add(Poly.var(s) - 1)
    loops: list[tuple[str, Poly, Poly]] = []
    for k in range(rng.randint(1, 3)):
        v = f"v{k}"
        s = Poly.var(rng.choice(SIZES))
        outer = Poly.var(loops[-1][0]) if loops else None
        lo = rng.choice([Poly.const(0), Poly.const(0), Poly.const(1)]
                        + ([outer] if outer is not None else []))
        his = [s, s + rng.randint(0, 3),
               binop("/", s + rng.randint(0, 5), Poly.const(rng.randint(2, 4))),
               binop("min", s, Poly.const(rng.randint(1, 4))), s.scale(2),
               binop("max", Poly.const(0), s - 2)]
        if outer is not None:
            his += [binop("min", s - outer.scale(rng.randint(1, 2)), Poly.const(rng.randint(1, 4))),
                    binop("max", Poly.const(0), s - outer), outer + 2]
        hi = rng.choice(his)
        ctx.facts.bind(v)
        pv = Poly.var(v)
        ctx.facts.add(pv - lo)
        ctx.facts.add(hi - 1 - pv)
        loops.append((v, lo, hi))
    ctx.loops = tuple(loops)
    guards = []
    if len(loops) >= 2 and rng.random() < 0.4:  # a guard `v0 + v1 < n`
        g = Poly.var(rng.choice(SIZES)) - Poly.var("v0") - Poly.var("v1") - 1
        ctx.facts.add(g)
        guards.append(g)
    return ctx, loops, guards


def _expr(rng: random.Random, loops: list[tuple[str, Poly, Poly]]) -> Poly:
    vs = [Poly.var(v) for v, _, _ in loops]
    ss = [Poly.var(s) for s in SIZES]
    p = Poly.const(rng.randint(-4, 4))
    for _ in range(rng.randint(1, 4)):
        v, s = rng.choice(vs), rng.choice(ss)
        mono = rng.choice([v, v, s, v * s, v * rng.choice(vs),
                           binop("/", v + s, Poly.const(rng.randint(2, 4))), binop("min", v, s)])
        p = p + mono.scale(rng.choice([-3, -2, -1, 1, 1, 2, 3]))
    return p


def _points(loops, guards, values):
    """Every assignment of the loop variables the nest runs, at sizes `values`."""
    def go(k, env):
        if k == len(loops):
            if all(evaluate(g, env) >= 0 for g in guards):
                yield dict(env)
            return
        v, lo, hi = loops[k]
        for x in range(evaluate(lo, env), evaluate(hi, env)):
            env[v] = x
            yield from go(k + 1, env)
        env.pop(v, None)
    yield from go(0, dict(values))


def test_upper_bounds_every_value_of_random_nests() -> None:
    rng = random.Random(20261130)
    found = 0
    for _ in range(400):
        ctx, loops, guards = _nest(rng)
        p = _expr(rng, loops)
        u = upper(p, ctx)
        if u is None:
            continue  # no bound found: nothing recorded (the kernel is not refused)
        assert u.vars() <= set(SIZES), (p, u)
        found += 1
        for n, m in product(range(1, 7), range(1, 6)):
            values = {"n": n, "m": m}
            bound = evaluate(u, values)
            for env in _points(loops, guards, values):
                assert evaluate(p, env) <= bound, (p.key(), u.key(), env)
    assert found > 300  # most random expressions get a bound


def test_upper_follows_a_clipped_loop_and_a_guard_to_the_tight_bound() -> None:
    # 64*jm + 16*jv + l inside jm < (N + 63) / 64, jv < 4, l < max(0, N - 64*jm - 16*jv):
    # at most N - 1, not the sum of the three loops' bounds (about 2N)
    ctx = Ctx(Facts(sizes=frozenset({"N"})), {}, {})
    ctx.facts.add(Poly.var("N") - 1)
    jm, jv, lane = Poly.var("jm"), Poly.var("jv"), Poly.var("l")
    N = Poly.var("N")
    loops = [("jm", Poly.const(0), binop("/", N + 63, Poly.const(64))),
             ("jv", Poly.const(0), Poly.const(4)),
             ("l", Poly.const(0), binop("max", Poly.const(0), N - jm.scale(64) - jv.scale(16)))]
    for v, lo, hi in loops:
        ctx.facts.bind(v)
        ctx.facts.add(Poly.var(v) - lo)
        ctx.facts.add(hi - 1 - Poly.var(v))
    ctx.loops = tuple(loops)
    assert upper(jm.scale(64) + jv.scale(16) + lane, ctx) == N - 1
    # a guard i + j < N bounds i + j by N - 1 where the loops alone give 2N - 2
    g = Ctx(Facts(sizes=frozenset({"N"})), {}, {})
    g.facts.add(N - 1)
    i, j = Poly.var("i"), Poly.var("j")
    for name in ("i", "j"):
        g.facts.bind(name)
        g.facts.add(Poly.var(name))
        g.facts.add(N - 1 - Poly.var(name))
    g.loops = (("i", Poly.const(0), N), ("j", Poly.const(0), N))
    assert upper(i + j, g) == N.scale(2) - 2
    g.facts.add(N - i - j - 1)
    assert upper(i + j, g) == N - 1


def test_prune_keeps_what_the_others_do_not_imply() -> None:
    facts = Facts(sizes=frozenset({"n", "m"}))
    for s in ("n", "m"):
        facts.add(Poly.var(s) - 1)
    n, m = Poly.var("n"), Poly.var("m")
    exprs, bounds = prune({n * m, n + 1, n - m - 5},
                          {n + 1, n - 1, m.scale(2) + n, m.scale(2) + n - 4, n - m}, facts)
    # n - m - 5 may be below INT_MIN (n = 1, m = INT_MAX) and n*m above 2m + n: both
    # kept; n + 1 is at least INT_MIN and at most 2m + n, as 2m + n - 4 is, which is
    # checked to be at most INT_MAX; n - 1 and n - m never exceed INT_MAX (n is an int)
    assert exprs == sorted([n * m, n - m - 5], key=Poly.key)
    assert bounds == [m.scale(2) + n]


def test_a_guard_adding_loop_variables_is_bounded_at_entry(tmp_path: Path) -> None:
    # `i + j - n == 0` evaluates i + j in int: up to 2n - 2, which leaves int at
    # n = 2^30 + 1 while n and the output's extent n*n (64-bit) are fine.  The kernel
    # refuses such sizes at entry (error 2, the output untouched); the Python wrapper
    # names the bound.
    n = IVar("n")
    k = lower(parse_program("GEN [ i < n ] GEN [ j < n ] (|[ i + j =? n ]| x _[ i ])"),
              {"x": (n,)}, name="anti", sizes=["n"])
    assert [t for t, _ in k.int_bounds] == ["2*n - 2"]
    assert "vs_cintmax(" in "\n".join(k.body)
    said = _sanitized_caller(tmp_path, k, (
        "int main(void) { float x[3] = {1, 2, 3}, r[9];\n"
        "  for (int q = 0; q < 9; ++q) r[q] = 7;\n"
        "  anti(x, 1073741825, r); printf(\"%d %g\\n\", anti_error, r[0]);\n"
        "  anti(x, 3, r); printf(\"%d\", anti_error);\n"
        "  for (int q = 0; q < 9; ++q) printf(\" %g\", r[q]);\n"
        "  printf(\"\\n\"); return 0; }\n"))
    # refused, untouched; then at n = 3 row i holds x[i] where j = 3 - i < 3
    assert said == \
        ["2", "7", "0", "0", "0", "0", "0", "0", "2", "0", "3", "0"]
    kernel = build([k], get_target("c"))["anti"]
    with pytest.raises(KernelCallError, match=r"reaches up to 2\*n - 2 = 2147483648"):
        kernel({"x": np.zeros(3, "float32")}, n=2**30 + 1)


def test_sizes_no_buffer_could_have_are_refused_at_entry(tmp_path: Path) -> None:
    # At m = n = INT_MAX every index fits its int and the flat offset its int64, but
    # the m x n buffers would be 2^64 bytes: no caller has them, and an offset into one
    # passes what a pointer addresses.  Refused at entry (error 2), output untouched;
    # at sizes that fit, the kernel computes.  The 3-d count overflows int64 itself.
    m, n = IVar("m"), IVar("n")
    k2 = lower(parse_program("GEN [ i < m ] GEN [ j < n ] (x _[ i ] _[ j ] + x _[ i ] _[ j ])"),
               {"x": (m, n)}, name="twice", sizes=["m", "n"])
    k3 = lower(parse_program("GEN [ i < m ] GEN [ j < n ] GEN [ l < m ] x _[ i ] _[ j ] _[ l ]"),
               {"x": (m, n, m)}, name="copy3", sizes=["m", "n"])
    assert "vs_cbytes(vs_cmul(m, n), sizeof(float))" in "\n".join(k2.body)
    said = _sanitized_caller(tmp_path, [k2, k3], (
        "int main(void) { float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, r[8];\n"
        "  for (int q = 0; q < 8; ++q) r[q] = 7;\n"
        "  twice(x, 2147483647, 2147483647, r); printf(\"%d %g\\n\", twice_error, r[0]);\n"
        "  twice(x, 2147483647, 1073741832, r); printf(\"%d %g\\n\", twice_error, r[0]);\n"
        "  copy3(x, 2147483647, 1073741824, r); printf(\"%d %g\\n\", copy3_error, r[0]);\n"
        "  twice(x, 2, 3, r); printf(\"%d %g %g\\n\", twice_error, r[0], r[5]);\n"
        "  copy3(x, 2, 2, r); printf(\"%d %g %g\\n\", copy3_error, r[0], r[7]);\n"
        "  return 0; }\n"))
    # (2^31 - 1) x (2^30 + 8) floats: just over 2^63 bytes.  Refused and untouched;
    # then computed.
    assert said == \
        ["2", "7", "2", "7", "2", "7", "0", "2", "12", "0", "1", "8"]
    kernel = build([k2], get_target("c"))["twice"]
    with pytest.raises(KernelCallError, match=r"output of shape \(2147483647, 1073741832\) is "
                                              r"too large .* its bytes a ptrdiff_t"):
        kernel({"x": np.zeros((2, 3), "float32")}, m=2**31 - 1, n=2**30 + 8)

