"""The architecture, enforced: the layers of docs/architecture.md, no import cycles, no
oversized modules, and the target registry as the only list of targets.

Layers, lowest first: pybridge -> codegen -> targets -> pipeline -> schedule -> report
and search -> tune -> commands (-> cli).
A module may import its own layer and the ones below it, never one above.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from verisched import pipeline
from verisched.targets.base import Kernel, Target

SRC = Path(__file__).resolve().parents[1] / "src" / "verisched"
BENCH = SRC.parents[1] / "benchmarks"
LAYERS = {"pybridge": 0, "codegen": 1, "targets": 2, "pipeline": 3, "schedule": 4, "report": 5,
          "search": 5,
          "tune": 6, "commands": 7, "cli": 8}
MAX_LINES = 800


def _module(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def _type_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:` (annotations only: never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(x) for x in ast.walk(node)}
    return out


def _imports(path: Path, runtime_only: bool = False) -> list[tuple[str, int]]:
    """(imported verisched module, line) for every import in `path`, wherever it is
    (with `runtime_only`, not those under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text())
    here = _module(path)
    skip = _type_only(tree) if runtime_only else set()
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this package
                base = here.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [f"{mod}.{a.name}" for a in node.names]
            out += [(m if _is_module(m) else mod, node.lineno) for m in names]
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
    return [(m, line) for m, line in out if m.startswith("verisched")]


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (SRC / rel).with_suffix(".py").is_file() or (SRC / rel / "__init__.py").is_file()


SOURCES = sorted(SRC.rglob("*.py"))


def test_no_upward_import() -> None:
    bad = []
    for path in SOURCES:
        mine = _layer(_module(path))
        if mine is None:
            continue
        for mod, line in _imports(path):
            theirs = _layer(mod)
            if theirs is not None and theirs > mine:
                bad.append(f"{path.relative_to(SRC)}:{line} imports {mod}")
    assert not bad, "upward imports (docs/architecture.md, layers):\n" + "\n".join(bad)


def test_no_import_cycle() -> None:
    """No cycle among the imports that run (a type-only import for an annotation is
    fine; it is still held to the layers above)."""
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        graph[_module(path)] = {m for m, _ in _imports(path, runtime_only=True)}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if d == m or d not in graph:
                continue
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state and (cyc := visit(d)):
                return cyc
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (cycle := visit(m)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_no_python_file_over_the_limit() -> None:
    """The limit holds for every Python file of the repository, not only the package:
    the benchmarks, the tests and the examples are read and changed as often."""
    root = SRC.parents[1]
    files = SOURCES + [p for d in ("benchmarks", "tests", "examples")
                       for p in sorted((root / d).rglob("*.py"))]
    big = [f"{p.relative_to(root)}: {n} lines" for p in files
           if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not big, f"files over {MAX_LINES} lines:\n" + "\n".join(big)


_TARGET_NAME = "|".join(re.escape(t) for t in pipeline.target_names())
_QUOTED = rf"""["']({_TARGET_NAME})["']"""
_COMPARISON = re.compile(rf"(==|!=)\s*{_QUOTED}|{_QUOTED}\s*(==|!=)|\bin\s*\(\s*{_QUOTED}")


@pytest.mark.parametrize("where", ["commands", "codegen", "pipeline", "report", "tune",
                                   "benchmarks"])
def test_no_target_name_comparison(where: str) -> None:
    """Behaviour belongs to the target object; nothing outside targets/ branches on its
    name (the registry is the one list)."""
    root = BENCH if where == "benchmarks" else SRC / where
    hits = [f"{p.relative_to(root.parent)}:{k}: {line.strip()}"
            for p in sorted(root.rglob("*.py"))
            for k, line in enumerate(p.read_text().splitlines(), 1) if _COMPARISON.search(line)]
    assert not hits, "target names compared by hand:\n" + "\n".join(hits)


def test_every_target_implements_the_protocol() -> None:
    names = pipeline.target_names()
    assert len(set(names)) == len(names)
    assert not (SRC / "targets" / "gemmini" / "cli.py").exists()
    for t in pipeline.TARGETS:
        assert isinstance(t, Target), t
        assert t.dtypes and t.runs_on in ("native", "simulator")
        specs = t.instructions()
        assert {s.family for s in specs} <= set(t.families), t.name
        assert bool(specs) == bool(t.families), t.name


def test_kernels_implement_the_protocol() -> None:
    from codegen_reference import compile_kernel

    from verisched.pybridge.terms import IVar, Var, gen, get
    from verisched.targets.gemmini.target import GemminiRunner

    k = compile_kernel(gen("i", "n", get(Var("f"), "i")), {"f": (IVar("n"),)}, name="copy")
    assert isinstance(k, Kernel)
    stub = GemminiRunner(lowered=SimpleNamespace(name="stub"), exe=Path("/dev/null"))
    assert isinstance(stub, Kernel)


def test_no_merge_conflict_markers_in_the_repository() -> None:
    # A merge left markers in docs/architecture.md once; nothing else would catch it.
    root = SRC.parents[1]
    marker = re.compile(r"^(<{7} |>{7} |={7}$)", re.M)
    bad = []
    for sub in ("src", "tests", "benchmarks", "docs", "coq", "examples"):
        for path in (root / sub).rglob("*"):
            if path.suffix in {".py", ".md", ".v", ".j2", ".c", ".h", ".txt", ".toml"} \
                    and "vendor" not in path.parts and marker.search(
                        path.read_text(encoding="utf-8", errors="replace")):
                bad.append(str(path.relative_to(root)))
    for name in ("README.md", "Makefile", "_CoqProject", "pyproject.toml", "setup.py"):
        if (root / name).exists() and marker.search((root / name).read_text()):
            bad.append(name)
    assert not bad, f"merge conflict markers in {bad}"
