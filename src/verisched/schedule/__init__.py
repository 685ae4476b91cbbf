"""Scheduling in Python: programs in an embedded DSL, and a `Schedule` whose methods
are the directives (split, fuse, reorder, tile, inline, sink, compute_at,
compute_root, and any library tactic through `apply`).

Every method runs the directive's Coq tactic through the bridge; only Coq
decides legality.  `.to_coq()` writes a standalone derivation, `.compile()`
sends it through the pipeline (verisched.pipeline) like `verisched compile`.
The layer sits above the pipeline and below the commands.
"""

from verisched.schedule import dsl
from verisched.schedule.dsl import Program, program
from verisched.schedule.errors import (
    AnnotationRefused,
    DirectiveRefused,
    ScheduleArgumentError,
    ScheduleError,
)
from verisched.schedule.state import Schedule

__all__ = ["AnnotationRefused", "DirectiveRefused", "Program", "Schedule", "ScheduleArgumentError",
           "ScheduleError", "dsl", "program"]
