"""Proof-build benchmark: the CPU time of a clean `make proofs`, per file and in all.

Builds the Coq library and its examples from clean, BUILDS times, in a scratch copy of
the tree (coq/, _CoqProject and CoqMakefile.local: the working tree's own .vo files are
left alone), with `make -f CoqMakefile -jJOBS TIMED=1`, and reports:
  1. each build's CPU time: user + system of make and every coqc it ran, from the
     kernel's accounting of waited-for children, against the 60 s goal (issue 16);
  2. per file, the least user + system time over the builds (coqc's TIMED=1 line);
  3. the fixed cost every file pays before its first sentence: a coqc that only loads
     Coq's integers, lists, Bool and Lia, under the same GC settings (median of runs);
  4. with --baseline REV, the same for that revision's Coq sources, the builds
     alternated with ours (ours, baseline, ours, ...) so that a slow spell of a shared
     machine falls on both, and the difference per file.
Writes proofs.md, proofs.json and proofs.png (the costliest files; _plots.proofs draws it
from the JSON) atomically.

Why a benchmark and not a test: CPU time on a shared VM moves by 5-15% from one build
to the next (decisions #107, #120); a measurement reports it, a test could only guess.

Run: verisched bench proofs [--builds N] [--jobs J] [--baseline REV] [--out-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from verisched.targets.toolchain import atomic_write

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as cm  # noqa: E402
import _plots as plots  # noqa: E402

# Shown by `verisched bench --help` (read without importing this module).
PEERS = "none: the proof build against its 60 s goal, or against another revision (--baseline)"
DURATION = ("about 35 s of wall time per build on the 2-core Intel Xeon VM (3 builds by "
            "default, twice that with --baseline)")

GOAL_S = 60.0
# coqc's line under TIMED=1 (coq_makefile's TIMING output): one per compiled file.
TIMED_RE = re.compile(r"^(?P<file>\S+\.vo) \(real: (?P<real>[\d.]+), user: (?P<user>[\d.]+), "
                      r"sys: (?P<sys>[\d.]+), mem: (?P<mem>\d+) ko\)")
# The libraries every file of the library loads first (Tensor/Scalar.v's imports, which
# the rest inherit): what a coqc costs before it reads a sentence of ours.
PROBE = "From Coq Require Import ZArith List Lia Bool.\n"
# Build products copied from no tree (a build starts from clean).
PRODUCTS = ("*.vo", "*.vok", "*.vos", "*.glob", ".*.aux", "*.aux", ".lia.cache", ".nia.cache")
TREE_FILES = ("_CoqProject", "CoqMakefile.local")
SETTINGS = ("OCAMLRUNPARAM", "GLIBC_TUNABLES")


class BenchError(Exception):
    """A build or tool failure, reported as one line (no traceback)."""


@dataclass
class Build:
    """One clean build: its CPU time and each file's (user, system) seconds."""

    tree: str
    user: float
    sys: float
    wall: float
    files: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def cpu(self) -> float:
        return self.user + self.sys


def parse_timed(text: str) -> dict[str, tuple[float, float]]:
    """Each compiled file's (user, system) seconds from make's TIMED=1 output."""
    out: dict[str, tuple[float, float]] = {}
    for line in text.splitlines():
        m = TIMED_RE.match(line.strip())
        if m:
            out[m["file"].removesuffix(".vo") + ".v"] = (float(m["user"]), float(m["sys"]))
    return out


def least_per_file(builds: list[Build]) -> dict[str, tuple[float, float]]:
    """Per file, the build where its user + system time was least: the run least
    disturbed by the machine, as the per-file tables since #107 take it."""
    best: dict[str, tuple[float, float]] = {}
    for b in builds:
        for f, (u, s) in b.files.items():
            if f not in best or u + s < sum(best[f]):
                best[f] = (u, s)
    return best


def makefile_defaults(path: Path) -> dict[str, str]:
    """The `VAR ?= value` settings of CoqMakefile.local (the GC settings every build of
    the proofs gets unless the environment sets them), for the probe and the report."""
    out: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            m = re.match(r"^\s*([A-Z_]+)\s*\?=\s*(.*?)\s*$", line)
            if m:
                out[m[1]] = m[2]
    return out


def _run(cmd: list[str], cwd: Path, what: str, **kw) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kw)
    except FileNotFoundError:
        raise BenchError(f"{what}: `{cmd[0]}` is not installed (run `make setup`)") from None
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise BenchError(f"{what} failed (exit {proc.returncode}): {tail}")
    return proc


def prepare_tree(dest: Path, source: Path, rev: str | None) -> None:
    """A buildable copy of SOURCE's Coq sources in DEST: the working tree as it is
    (uncommitted edits included), or revision REV's files (`git archive`)."""
    dest.mkdir(parents=True)
    if rev is None:
        if not (source / "coq").is_dir():
            raise BenchError(f"{source} has no coq/ folder to build")
        shutil.copytree(source / "coq", dest / "coq", ignore=shutil.ignore_patterns(*PRODUCTS))
        for name in TREE_FILES:
            if (source / name).exists():
                shutil.copy2(source / name, dest / name)
    else:
        if shutil.which("git") is None or shutil.which("tar") is None:
            raise BenchError("--baseline needs git and tar, and one is not installed")
        paths = [p for p in ("coq", *TREE_FILES)
                 if subprocess.run(["git", "cat-file", "-e", f"{rev}:{p}"], cwd=source,
                                   capture_output=True).returncode == 0]
        if "coq" not in paths:
            raise BenchError(f"--baseline {rev}: no such revision with a coq/ folder in {source}")
        tar = subprocess.run(["git", "archive", "--format=tar", rev, *paths], cwd=source,
                             capture_output=True)
        out = tar if tar.returncode else subprocess.run(["tar", "-x", "-C", str(dest)],
                                                        input=tar.stdout, capture_output=True)
        if out.returncode != 0:
            raise BenchError(f"--baseline {rev}: extracting its files failed: "
                             f"{out.stderr.decode().strip()}")
    if not (dest / "_CoqProject").exists():
        raise BenchError(f"{'revision ' + rev if rev else source} has no _CoqProject")
    _run(["coq_makefile", "-f", "_CoqProject", "-o", "CoqMakefile"], dest, "coq_makefile")


def _children_cpu() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime, r.ru_stime


def build_once(tree: Path, label: str, jobs: int) -> Build:
    """A clean build of TREE; CPU time from the rusage of the waited-for children
    (make and every coqc it ran), taken after the clean."""
    _run(["make", "-f", "CoqMakefile", "clean"], tree, f"make clean ({label})")
    u0, s0 = _children_cpu()
    t0 = time.perf_counter()
    proc = _run(["make", "-f", "CoqMakefile", f"-j{jobs}", "TIMED=1"], tree,
                f"the proof build ({label})")
    wall = time.perf_counter() - t0
    u1, s1 = _children_cpu()
    files = parse_timed(proc.stdout + "\n" + proc.stderr)
    if not files:
        raise BenchError(f"the proof build ({label}) printed no TIMED=1 line: "
                         "is this coq_makefile's Makefile?")
    return Build(label, u1 - u0, s1 - s0, wall, files)


def probe_fixed_cost(runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Median (user, system) seconds of a coqc that only loads PROBE's libraries."""
    users, syss = [], []
    with tempfile.TemporaryDirectory() as tmp:
        v = Path(tmp) / "Probe.v"
        v.write_text(PROBE)
        for _ in range(runs):
            u0, s0 = _children_cpu()
            _run(["coqc", "-q", str(v)], Path(tmp), "the fixed-cost probe", env=env)
            u1, s1 = _children_cpu()
            users.append(u1 - u0)
            syss.append(s1 - s0)
    return statistics.median(users), statistics.median(syss)


def coq_version() -> str:
    try:
        out = subprocess.run(["coqc", "--version"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return "coqc not found"
    m = re.search(r"version (\S+)", out)
    return m[1] if m else out.strip()


def _thp() -> str:
    try:
        return Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip()
    except OSError:
        return "unknown"


def summary_rows(builds: dict[str, list[Build]], baseline: str | None) -> list[list[str]]:
    rows = []
    for label, bs in builds.items():
        label = f"{label} ({baseline})" if label == "baseline" else label
        each = "; ".join(f"{b.user:.1f} + {b.sys:.1f} = {b.cpu:.1f}" for b in bs)
        cpus = [b.cpu for b in bs]
        rows.append([label, each, f"{min(cpus):.1f}", f"{statistics.median(cpus):.1f}",
                     f"{statistics.median(b.wall for b in bs):.1f}"])
    return rows


def file_rows(ours: dict[str, tuple[float, float]],
              base: dict[str, tuple[float, float]] | None) -> list[list[str]]:
    rows = []
    for f in sorted(ours, key=lambda f: -sum(ours[f])):
        u, s = ours[f]
        row = [f"`{f}`", f"{u:.2f}", f"{s:.2f}", f"{u + s:.2f}"]
        if base is not None:
            if f in base:
                b = sum(base[f])
                row += [f"{b:.2f}", f"{u + s - b:+.2f}"]
            else:
                row += ["-", "new"]
        rows.append(row)
    if base is not None:
        for f in sorted(set(base) - set(ours), key=lambda f: -sum(base[f])):
            rows.append([f"`{f}`", "-", "-", "-", f"{sum(base[f]):.2f}", "removed"])
    return rows


def report(builds: dict[str, list[Build]], per_file: dict[str, dict[str, tuple[float, float]]],
           probe: tuple[float, float], settings: dict[str, dict[str, str]], jobs: int,
           source: str, coq: str, baseline: str | None,
           load_before: tuple[float, float, float],
           other: cm.OtherLoad) -> str:
    ours = builds["ours"]
    n_files = len(per_file["ours"])
    fixed = sum(probe)
    lines = [f"# `make proofs` CPU time from clean "
             f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)", ""]
    lines += [f"- code: {source}; {cm.cpu_model()}, {os.cpu_count()} CPU(s); Coq {coq}",
              f"- {len(ours)} clean build(s) of each tree with `make -f CoqMakefile -j{jobs} "
              "TIMED=1` in a scratch copy"
              + (f", alternated with the baseline {baseline}" if baseline else ""),
              *(f"- GC and memory settings of "
                f"{'our tree' if label == 'ours' else 'the ' + label}'s builds: "
                + (", ".join(f"`{k}={v}`" for k, v in kv.items()) or "OCaml's and glibc's defaults")
                for label, kv in settings.items()),
              f"- transparent huge pages: {_thp()}",
              # Not cm.load_lines: its warning is for timed kernels, and here the builds
              # themselves keep JOBS cores busy (the load average after them says so).
              f"- load average (1 min) {load_before[0]:.2f} before the builds, on "
              f"{os.cpu_count()} CPU(s); other processes used {other.cores():.2f} core(s) on "
              "average while building (the machine's busy time less the builds' own CPU)"]
    note = cm.steal_note(other.steal())
    if note:
        lines.append(f"- {note}")
    least = min(b.cpu for b in ours)
    verdict = "met" if least <= GOAL_S else "not met"
    lines += [f"- goal: at most {GOAL_S:.0f} s of CPU (issue 16): {verdict} by the least "
              f"build ({least:.1f} s), median {statistics.median(b.cpu for b in ours):.1f} s", ""]
    lines += [cm.md_table(["tree", "builds: user + system = CPU (s)", "least CPU (s)",
                           "median CPU (s)", "median wall (s)"],
                          summary_rows(builds, baseline)), ""]
    lines += [f"A file's fixed cost (a coqc loading only `{PROBE.strip()}`, median of runs): "
              f"{probe[0]:.2f} s user + {probe[1]:.2f} s system = {fixed:.2f} s; times the "
              f"{n_files} files: {fixed * n_files:.1f} s of each build.", ""]
    lines += ["## Per file", "",
              "User and system seconds of each file's coqc, the least over the builds "
              "(by user + system); sorted by cost."
              + (" The baseline column: the same for its builds." if baseline else ""), ""]
    headers = ["file", "user", "system", "CPU"]
    if baseline:
        headers += [f"CPU at {baseline}", "difference"]
    lines.append(cm.md_table(headers, file_rows(per_file["ours"], per_file.get("baseline"))))
    for label, pf in per_file.items():
        lines.append("")
        lines.append(f"Sum of the per-file least times ({label}): "
                     f"{sum(u for u, _ in pf.values()):.1f} s user + "
                     f"{sum(s for _, s in pf.values()):.1f} s system.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench proofs", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--builds", type=cm.positive_int, default=3,
                    help="clean builds per tree (default 3)")
    ap.add_argument("--jobs", type=cm.positive_int, default=2,
                    help="make -j (default 2, as `make proofs`)")
    ap.add_argument("--baseline", metavar="REV",
                    help="also build this git revision's Coq sources, alternated with ours")
    ap.add_argument("--probe-runs", type=cm.positive_int, default=9,
                    help="runs of the fixed-cost probe (default 9)")
    ap.add_argument("--source", default=str(cm.REPO_ROOT),
                    help="the tree whose Coq sources to build (default: this repository)")
    ap.add_argument("--out-dir", type=cm.out_dir_arg, default=str(cm.RESULTS_DIR))
    args = ap.parse_args(argv)
    source = Path(args.source).resolve()
    try:
        return _bench(args, source)
    except BenchError as exc:
        print(f"verisched bench proofs: {exc}")
        return 1


def tree_settings(tree: Path) -> dict[str, str]:
    """The GC and memory settings a build of TREE runs with: the environment's where
    set, else its CoqMakefile.local's defaults (a baseline brings its own file)."""
    return {k: os.environ.get(k, v) for k, v in
            makefile_defaults(tree / "CoqMakefile.local").items() if k in SETTINGS}


def _bench(args: argparse.Namespace, source: Path) -> int:
    trees = {"ours": None} if not args.baseline else {"ours": None, "baseline": args.baseline}
    load_before = os.getloadavg()
    other = cm.OtherLoad(children=True)
    with tempfile.TemporaryDirectory(prefix="vs-proofs-") as tmp:
        dirs: dict[str, Path] = {}
        settings: dict[str, dict[str, str]] = {}
        for label, rev in trees.items():
            dirs[label] = Path(tmp) / label
            prepare_tree(dirs[label], source, rev)
            settings[label] = tree_settings(dirs[label])
        builds: dict[str, list[Build]] = {label: [] for label in trees}
        for i in range(args.builds):
            for label in trees:
                print(f"build {i + 1}/{args.builds} of {label} ...", flush=True)
                b = build_once(dirs[label], label, args.jobs)
                print(f"  {b.user:.1f} s user + {b.sys:.1f} s system = {b.cpu:.1f} s of CPU, "
                      f"{b.wall:.1f} s wall, {len(b.files)} files", flush=True)
                builds[label].append(b)
    # The probe runs under the tree's own settings, as its coqc processes did.
    probe = probe_fixed_cost(args.probe_runs, {**os.environ, **settings["ours"]})
    per_file = {label: least_per_file(bs) for label, bs in builds.items()}
    in_repo = source == cm.REPO_ROOT
    where = cm.source_revision() if in_repo else str(source)
    coq = coq_version()
    md = report(builds, per_file, probe, settings, args.jobs,
                f"commit {where}" if in_repo else where, coq, args.baseline, load_before, other)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {"commit": where, "cpu": cm.cpu_model(), "coq": coq, "jobs": args.jobs,
            "baseline": args.baseline, "settings": settings, "goal_s": GOAL_S,
            "probe": {"libraries": PROBE.strip(), "user": probe[0], "sys": probe[1]},
            "builds": {k: [asdict(b) | {"cpu": b.cpu} for b in v] for k, v in builds.items()},
            "least_per_file": per_file}
    atomic_write(out_dir / "proofs.json", json.dumps(data, indent=2))
    fig = plots.proofs(data)
    try:
        written = cm.write_outputs(out_dir, "proofs", md, fig)
    finally:
        if fig is not None:
            cm.close_figure(fig)
    print(md)
    for p in [out_dir / "proofs.json", *written]:
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
