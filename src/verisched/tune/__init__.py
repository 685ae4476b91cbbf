"""Autotuning on the directive layer: search schedules by measurement, every
candidate proved by Coq (issue 17; docs/decisions.md #59, docs/python-api.md).

One concern per module: `space` (the parameterised directive templates), `search`
(Optuna's TPE sampler, ask and tell), `evaluate` (prove a candidate in a worker;
build, time and check it in the parent), `executors` (a process pool, or Ray),
`log` (the JSON-lines log: resume, interrupt), `output` (the winner's `.v` checked
by coqc, its Python script, the plot), `api` (`tune()`, the whole run).  The layer
sits above `schedule` and below `commands`.
"""

from verisched.tune.api import TuneResult, program_of, tune, untuned_point
from verisched.tune.space import Op, Space

__all__ = ["Op", "Space", "TuneResult", "program_of", "tune", "untuned_point"]
