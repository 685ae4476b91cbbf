"""`From Verisched Require Import ATL.` gives the whole library (docs/architecture.md).

Every Lemma, Theorem, Definition, Fixpoint, Ltac and Tactic Notation that
coq/Tensor, coq/Rewrites, coq/Reshape and coq/Targets define is parsed from
the sources, and one coqc run that imports only ATL checks that each is
reachable under its short name: `Locate` must name the constant (or Ltac) of
the file that defines it, not another one and not only a qualified name, and
every Tactic Notation must be in the tactic grammar (`Print Grammar tactic`).

The same run then imports Rewrites.Safety and Rewrites.Tactics a second time
(as derivations do, e.g. `Require Import ATL Rewrites.Safety`) and checks
that check_safe still knows the extents of reshaped terms and atl_side their
shapes: both used to be Ltac hooks redefined with `::=`, which Coq 8.16
undoes when the defining file is imported again (coq/coq#10556).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import requires_coq

REPO = Path(__file__).resolve().parents[1]
COQ = REPO / "coq"
LIBRARY_DIRS = ("Tensor", "Rewrites", "Reshape", "Targets")

# Not library: regression derivations that themselves import ATL.
EXCLUDED_FILES = {"Reshape/Usage.v"}
# Rewrites/Normalize.v's examples; the Ltac2 helpers of Targets/Instr.v, Rewrites/Tactics.v,
# Rewrites/Directives.v and Rewrites/Lift.v (no user-facing name: the tactics that use them,
# such as atl_unfold_instrs, atl_skel, dir_may_swap and atl_descend, are declared outside
# the modules and checked here).
EXCLUDED_MODULES = {"NormalizeExamples", "AtlInstrScan", "AtlSkel", "DirSwapScan", "AtlLift",
                    "AtlNamed"}

# Two files define the same short name; the later export wins (Reshape/Reshape.v
# orders Partition before Commute so that derivations keep Commute's
# ll_transpose).  The other one is reachable as File.name.
SHADOWED = {
    ("Rewrites/Guard.v", "guard_split"): "Guard.guard_split",
    ("Reshape/Partition.v", "ll_transpose"): "Partition.ll_transpose",
}

MARK = "@@VS-EXPORT"


@dataclass(frozen=True)
class Decl:
    kind: str      # "const", "ltac" or "notation"
    file: str      # e.g. "Rewrites/Guard.v"
    name: str      # short name; for a notation, its token pattern

    @property
    def qualified(self) -> str:
        return "Verisched." + self.file[:-2].replace("/", ".") + "." + self.name


def _strip_comments(text: str) -> str:
    out, depth, i = [], 0, 0
    while i < len(text):
        if text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*)", i) and depth:
            depth, i = depth - 1, i + 2
        else:
            if depth == 0:
                out.append(text[i])
            i += 1
    return "".join(out)


_DECL = re.compile(
    r"^\s*(?:#\[\s*(?P<attr>[\w, ]+)\]\s*)?(?P<loc>(?:Local|Global|Program)\s+)*"
    r"(?P<kind>Lemma|Theorem|Definition|Fixpoint|Ltac|Tactic\s+Notation)\b(?P<rest>.*)$")
_BLOCK = re.compile(
    r"^\s*(?P<kind>Section|Module)\s+(?!Type\b|Import\b|Export\b)(?P<name>\w+)\s*\.")
_END = re.compile(r"^\s*End\s+(?P<name>\w+)\s*\.")
_WITH = re.compile(r"^\s*with\s+(?P<name>[\w']+)\b[^:]*:=")
_NOTATION_ITEM = re.compile(r'"([^"]*)"|([\w]+)\s*\(\s*\w+\s*\)')


def _notation_pattern(rest: str) -> str:
    """`"rw" uconstr(L) "at" uconstr(pat) := ...` as `rw _ at _`."""
    head = rest.split(":=", 1)[0]
    head = re.sub(r"^\s*\(\s*at\s+level\s+\d+\s*\)", "", head)
    return " ".join(m.group(1) if m.group(1) is not None else "_"
                    for m in _NOTATION_ITEM.finditer(head))


def library_declarations() -> list[Decl]:
    decls: list[Decl] = []
    for d in LIBRARY_DIRS:
        for path in sorted((COQ / d).glob("*.v")):
            rel = f"{d}/{path.name}"
            if rel in EXCLUDED_FILES:
                continue
            blocks: list[tuple[str, str]] = []
            last_kind = ""
            for line in _strip_comments(path.read_text()).splitlines():
                if m := _BLOCK.match(line):
                    blocks.append((m.group("kind"), m.group("name")))
                    continue
                if (m := _END.match(line)) and blocks and blocks[-1][1] == m.group("name"):
                    blocks.pop()
                    continue
                in_section = any(k == "Section" for k, _ in blocks)
                if any(k == "Module" and n in EXCLUDED_MODULES for k, n in blocks):
                    continue
                assert not any(k == "Module" for k, _ in blocks), (
                    f"{rel}: a declaration inside a module; teach this test its qualified name")
                if (m := _WITH.match(line)) and last_kind == "Ltac" and not in_section:
                    decls.append(Decl("ltac", rel, m.group("name")))
                    continue
                m = _DECL.match(line)
                if not m:
                    continue
                kind, rest = m.group("kind"), m.group("rest")
                last_kind = kind
                attr = m.group("attr") or ""
                if "Local" in (m.group("loc") or "") or "local" in attr:
                    continue
                if kind.startswith("Tactic"):
                    decls.append(Decl("notation", rel, _notation_pattern(rest)))
                    continue
                name = re.match(r"\s*([\w']+)", rest).group(1)
                if kind == "Ltac":
                    if re.match(r"\s*[\w']+[^:]*::=", rest) or in_section:
                        continue  # a redefinition, or local to its section
                    decls.append(Decl("ltac", rel, name))
                else:
                    decls.append(Decl("const", rel, name))
    return decls


REIMPORT = r"""
From Verisched Require Import Rewrites.Safety Rewrites.Tactics.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.
Section Reimport.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (a b : Z -> S) (v : Z -> Z -> S).
  Hypothesis Hv : shaped [n; 4] v.
  Hypothesis Ha : shaped [n] a.
  Hypothesis Hb : shaped [n] b.
  Hypothesis Hn : 0 <= n.
  Definition reimport_p := GEN [ i < n * 4 ] (flatten n 4 v) _[ i ].
  Derive reimport_q SuchThat (reimport_p = reimport_q) As reimport_ok.
  Proof. reschedule. check_safe. done. Qed.
  Goal shaped [n + n] (concat n n a b). Proof. atl_side. Qed.
End Reimport.
"""


def _script(decls: list[Decl]) -> str:
    lines = ["From Coq Require Import ZArith List derive.Derive.",
             "From Verisched Require Import ATL.",
             "Print Grammar tactic.",
             "Goal True."]
    for k, d in enumerate(decls):
        if d.kind == "notation":
            continue
        lines.append(f'idtac "{MARK} {k}".')
        lines.append(f"Locate {'Ltac ' if d.kind == 'ltac' else ''}{d.name}.")
    lines.append(f'idtac "{MARK} end".')
    lines.append("Abort.")
    return "\n".join(lines) + "\n" + REIMPORT


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[list[Decl], subprocess.CompletedProcess]:
    decls = library_declarations()
    tmp = tmp_path_factory.mktemp("exports")
    src = tmp / "Exports.v"
    src.write_text(_script(decls))
    proc = subprocess.run(["coqc", "-Q", str(COQ), "Verisched", str(src)],
                          capture_output=True, text=True, cwd=tmp, timeout=300)
    return decls, proc


def test_the_parser_finds_the_library() -> None:
    decls = library_declarations()
    names = {(d.kind, d.name) for d in decls}
    # One of each kind, from the files the issue named, and none from examples.
    for expected in [("const", "gen_peel"), ("const", "gen_partition"), ("const", "gen_tile2"),
                     ("const", "get_bound_guard"), ("const", "ll_guard_dup"),
                     ("const", "avx2_loadu"), ("const", "gemmini_mvin"),
                     ("ltac", "atl_side"), ("ltac", "atl_idiff"), ("ltac", "gemmini_check_fit"),
                     ("notation", "rw _ at _"), ("notation", "check_safe"),
                     ("notation", "simpl_index")]:
        assert expected in names, expected
    assert ("const", "a_concat") not in names  # Reshape/Usage.v
    assert ("ltac", "elems") not in names      # Local Ltac
    assert len(decls) > 400


def _locate_blocks(out: str) -> dict[int, list[str]]:
    blocks: dict[int, list[str]] = {}
    cur: list[str] | None = None
    for line in out.splitlines():
        if line.startswith(MARK):
            tag = line[len(MARK):].strip()
            if tag == "end":
                break
            cur = blocks.setdefault(int(tag), [])
        elif cur is not None:
            cur.append(line)
    return blocks


def _reachable(d: Decl, lines: list[str]) -> str | None:
    """None if `Locate` shows `d`'s own object under its short name, else why not."""
    head = "Ltac " if d.kind == "ltac" else "Constant "
    for i, line in enumerate(lines):
        if line.strip() == head + d.qualified:
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            m = re.match(r"\(shorter name to refer to it in current context is (\S+)\)", nxt)
            if m is None:
                return None
            if SHADOWED.get((d.file, d.name)) == m.group(1):
                return None
            return f"only as {m.group(1)}"
    return "not loaded by ATL" if not lines or lines[0].startswith("No ") else \
        "the short name is another object: " + " | ".join(x.strip() for x in lines)


@requires_coq
def test_every_lemma_definition_and_ltac_is_reachable(run) -> None:
    decls, proc = run
    blocks = _locate_blocks(proc.stdout)
    assert blocks, proc.stdout[-2000:] + proc.stderr
    missing = [f"{d.file}: {d.kind} {d.name}: {why}"
               for k, d in enumerate(decls) if d.kind != "notation"
               for why in [_reachable(d, blocks.get(k, []))] if why]
    assert not missing, "not reachable from `Require Import ATL`:\n" + "\n".join(missing)


def _grammar_lines(out: str) -> list[str]:
    """`Print Grammar` output with wrapped rules joined (a rule too long for
    one line ends in `;` or `IDENT` and goes on on the next)."""
    joined: list[str] = []
    for line in out.splitlines():
        prev = joined[-1].rstrip() if joined else ""
        if prev.endswith((";", "IDENT")) and re.match(r"\s*(?:\||\[)\s*IDENT", prev):
            joined[-1] = prev + " " + line.strip()
        else:
            joined.append(line)
    return joined


def _grammar_patterns(out: str) -> set[str]:
    pats = set()
    for line in _grammar_lines(out):
        m = re.match(r"\s*(?:\||\[)\s*(IDENT\s+\".*)$", line)
        if not m:
            continue
        body = m.group(1).rstrip(" ]")
        items = [x.strip() for x in body.split(";") if x.strip()]
        toks = []
        for it in items:
            q = re.fullmatch(r'(?:IDENT\s+)?"([^"]*)"', it)
            toks.append(q.group(1) if q else "_")
        pats.add(" ".join(toks))
    return pats


@requires_coq
def test_every_tactic_notation_is_in_the_grammar(run) -> None:
    decls, proc = run
    grammar = _grammar_patterns(proc.stdout.split(MARK, 1)[0])
    missing = [f"{d.file}: Tactic Notation {d.name}"
               for d in decls if d.kind == "notation" and d.name not in grammar]
    assert not missing, "not in the tactic grammar after `Require Import ATL`:\n" + "\n".join(
        missing)


@requires_coq
def test_importing_safety_and_tactics_again_keeps_their_extensions(run) -> None:
    _, proc = run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    tail = proc.stdout.split(f"{MARK} end", 1)[1]
    assert "check_safe: all accesses proved in bounds" in tail
