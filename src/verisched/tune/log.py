"""The tuning log: one JSON object per line and per candidate, as TVM's tuning logs.

Why JSON lines: a line is appended (and flushed to disk) as soon as a candidate is
decided, so an interrupted run (Ctrl-C, a budget, a crash) keeps everything it
measured, and `--resume` reads it back.  A last line cut by a crash is skipped with
a warning, never an error.

Each record holds the point of the space (`params`, with Optuna's distributions
so the search can be re-fed without re-asking), the directives applied (as
Schedule calls), the Coq script (the finished tactic steps), the status
(`proved`: Coq checked it and it was timed; `refused`: a directive refused it;
`failed`: anything else, e.g. an output that does not match the reference),
the median time in seconds, where it was timed (the CPU and, for an OpenMP target, its
threads), and when.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATUSES = ("proved", "refused", "failed")
VERSION = 1


@dataclass
class Record:
    """One candidate's line."""

    number: int
    params: dict[str, Any]
    distributions: dict[str, str]       # Optuna's distribution_to_json, per param
    ops: list[list[Any]]                # Op.to_json of the directives applied
    steps: list[str]                    # the Coq script (finished steps), when proved
    annotations: list[list[Any]]        # parallel / unroll / store_at
    status: str
    median_s: float | None = None
    message: str = ""
    prove_s: float = 0.0
    worker: str = ""
    timestamp: float = field(default_factory=time.time)
    elapsed_s: float = 0.0              # since the start of the run that logged it
    program: str = ""
    target: str = ""
    sizes: dict[str, int] = field(default_factory=dict)
    # Where it was timed: the CPU (targets.cpu.cpu_model) and, for an OpenMP target,
    # the team's threads; `--resume` reuses a median only from the same (a log from
    # another machine, or another `--jobs`, measured something else).
    cpu: str = ""
    threads: int | None = None
    version: int = VERSION

    def to_line(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Record:
        known = set(Record.__dataclass_fields__)
        return Record(**{k: v for k, v in data.items() if k in known})


def append(path: Path, record: Record) -> None:
    """Append one line, flushed and synced: it survives an interrupt right after."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(record.to_line() + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_lines(path: Path) -> tuple[list[Record], list[str]]:
    """The records of a log, and a message for each line that is none (a crash
    mid-write, or a file that is no log).  A file that is not UTF-8 text is no log:
    ValueError naming it."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not a tuning log (not UTF-8 text: byte {exc.start} "
                         "cannot be decoded)") from None
    out: list[Record] = []
    skipped: list[str] = []
    for k, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            rec = Record.from_dict(data)
            if rec.status not in STATUSES:
                raise ValueError(f"unknown status {rec.status!r}")
        except (ValueError, TypeError) as exc:
            skipped.append(f"{path}:{k}: not a record ({exc})")
            continue
        out.append(rec)
    return out, skipped


def read(path: Path) -> list[Record]:
    """The records of a log; an unreadable line is skipped with a warning."""
    records, skipped = read_lines(path)
    for message in skipped:
        warnings.warn(message, stacklevel=2)
    return records


def key(params: dict[str, Any]) -> str:
    """A point's identity (the same parameters: the same candidate)."""
    return json.dumps(params, sort_keys=True)
