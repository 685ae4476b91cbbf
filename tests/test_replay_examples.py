"""Every example derivation, replayed: Coq accepts it, and every recorded
intermediate program means the same as the original.

The examples are discovered (any `Derive` in coq/Examples/*.v), not listed,
so derivations added later are covered.  Each state's program is taken with
user definitions unfolded (Coq prints it) and evaluated by the interpreter
on random inputs meeting the section's hypotheses, with sizes that are not
multiples of any tile size among them; the original and final programs are
also computed by Coq itself (scalars := Z) and compared.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verisched.pybridge.crosscheck import coq_evaluate
from verisched.pybridge.inputs import sample
from verisched.pybridge.interp import evaluate
from verisched.pybridge.outputs import distribute_outputs
from verisched.pybridge.replay import DERIVE_RE, ReplayedDerivation, replay_file
from verisched.pybridge.sentences import split_sentences
from verisched.pybridge.session import REPO_ROOT, CoqSession
from verisched.pybridge.terms import RESHAPES, Expr, Tuple

REPO = REPO_ROOT  # the source tree, or $VERISCHED_REPO
EXAMPLES = sorted(p for p in (REPO / "coq" / "Examples").rglob("*.v")
                  if any(DERIVE_RE.match(s.text) for s in split_sentences(p.read_text())))

_CACHE: dict[Path, list[ReplayedDerivation]] = {}


def replayed(coq: CoqSession, path: Path) -> list[ReplayedDerivation]:
    if path not in _CACHE:
        res = replay_file(coq, path, semantics=True)
        assert res.failure is None, f"{path.name}:{res.failure.line}: {res.failure.message}"
        _CACHE[path] = res.derivations
    return _CACHE[path]


def test_examples_are_discovered() -> None:
    assert any(p.name == "Pipeline.v" for p in EXAMPLES)


def _id(p: Path) -> str:
    return p.stem if p.parent.name == "Examples" else f"{p.parent.name}.{p.stem}"


@pytest.mark.parametrize("path", EXAMPLES, ids=_id)
def test_coq_accepts_every_derivation(coq: CoqSession, path: Path) -> None:
    for rd in replayed(coq, path):
        d = rd.derivation
        assert rd.error is None, rd.error.describe()
        assert rd.verdict is not None and rd.verdict.accepted, rd.verdict
        assert not rd.verdict.disallowed_axioms
        assert d.steps and d.steps[-1].after.finished


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal as total functions: compare on the union of the extents."""
    if a.ndim != b.ndim:
        return False
    shape = tuple(max(x, y) for x, y in zip(a.shape, b.shape, strict=True))
    pa = np.pad(a, [(0, s - x) for s, x in zip(shape, a.shape, strict=True)])
    pb = np.pad(b, [(0, s - x) for s, x in zip(shape, b.shape, strict=True)])
    return np.allclose(pa, pb, rtol=1e-9, atol=1e-9)


def _id(p: Path) -> str:
    return p.stem if p.parent.name == "Examples" else f"{p.parent.name}.{p.stem}"


@pytest.mark.parametrize("path", EXAMPLES, ids=_id)
def test_every_step_preserves_meaning(coq: CoqSession, path: Path) -> None:
    for rd in replayed(coq, path):
        sig = rd.signature
        programs = rd.semantics
        unparsed = [(k, p) for k, p in enumerate(programs) if isinstance(p, str)]
        assert not unparsed, f"{rd.derivation.name}: states the bridge cannot read: {unparsed}"
        original: Expr = programs[0]
        hyps = [h for _, h in sig.hypotheses]
        rng = np.random.default_rng(abs(hash(rd.derivation.name)) % 2**32)
        for trial in range(4):
            sizes, inputs = sample(sig.sizes, sig.tensors, hyps, rng, bools=sig.bools)
            want = evaluate(original, inputs, sizes)
            for k, prog in enumerate(programs[1:], start=1):
                # outputs swept by one loop (fuse_outputs): compared one by one
                prog = distribute_outputs(prog)
                if isinstance(want, tuple):  # several outputs: each one compared
                    same = isinstance(prog, Tuple) and len(prog.items) == len(want) and all(
                        _same(evaluate(p, inputs, sizes, rank=w.ndim), w)
                        for p, w in zip(prog.items, want, strict=True))
                else:
                    same = _same(evaluate(prog, inputs, sizes, rank=want.ndim), want)
                step = rd.derivation.steps[k - 1]
                assert same, (
                    f"{rd.derivation.name} step {k} ({step.tactic}) changes the result "
                    f"(sizes {sizes}, trial {trial})")


def _id(p: Path) -> str:
    return p.stem if p.parent.name == "Examples" else f"{p.parent.name}.{p.stem}"


@pytest.mark.parametrize("path", EXAMPLES, ids=_id)
def test_interpreter_agrees_with_coq_on_examples(coq: CoqSession, path: Path) -> None:
    for rd in replayed(coq, path):
        sig = rd.signature
        hyps = [h for _, h in sig.hypotheses]
        rng = np.random.default_rng(11)
        # Coq evaluates tensors as functions, recomputing on every access, so
        # reshaped (tiled) programs cost a lot there: keep the sizes small.
        sizes, inputs = sample(sig.sizes, sig.tensors, hyps, rng, max_size=3, bools=sig.bools)
        ints = {k: v.astype(np.int64) for k, v in inputs.items()}
        # The original always; the derived program too unless it uses reshape
        # operators, whose Fig. 5 definitions (sums over guards, evaluated
        # eagerly) make Coq's evaluation of tiled programs explode.  Those are
        # covered by the proof itself plus the interpreter's reshape checks
        # against Coq on random programs (test_interp.py).
        finals = [] if _has_reshape(rd.semantics[-1]) else [rd.semantics[-1]]
        # A program with several outputs: each output checked on its own.
        parts = [x for p in map(distribute_outputs, [rd.semantics[0], *finals])
                 for x in (p.items if isinstance(p, Tuple) else (p,))]
        for prog in parts:
            ours = evaluate(prog, ints, sizes, dtype=np.int64)
            box = tuple(d + 1 for d in ours.shape)
            theirs = coq_evaluate(coq, prog, ours.ndim, box, ints, sizes, timeout=120,
                                  bools=sig.bools)
            padded = np.pad(ours, [(0, 1)] * ours.ndim) if ours.ndim else ours
            np.testing.assert_array_equal(padded, theirs, err_msg=rd.derivation.name)


def _has_reshape(e: object) -> bool:
    if isinstance(e, RESHAPES):
        return True
    fields = getattr(e, "__dataclass_fields__", {})
    return any(_has_reshape(getattr(e, f)) for f in fields)
