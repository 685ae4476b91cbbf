"""The scheduling API's errors: one for arguments, found before Coq runs, one for a
directive Coq refused.

Uniform as in Exo's API (the Exo thesis, Sec. 4: every scheduling operator checks
its arguments and raises one scheduling error naming the argument), and typed so
a caller can tell a misspelt loop from a schedule that is illegal."""

from __future__ import annotations


class ScheduleError(Exception):
    """Base of the scheduling API's errors."""


class ScheduleArgumentError(ScheduleError, ValueError):
    """A directive's argument is wrong (unknown loop, a factor that is not positive, a
    name that is taken); found in Python, before Coq is asked."""

    def __init__(self, directive: str, argument: str, why: str) -> None:
        self.directive, self.argument, self.why = directive, argument, why
        super().__init__(f"{directive}: argument {argument}: {why}")


class DirectiveRefused(ScheduleError):
    """Coq refused a directive: the step, its tactic text and Coq's own message (which
    names the directive, the loop and the condition that failed)."""

    def __init__(self, step: int, tactic: str, message: str, details: str = "") -> None:
        self.step, self.tactic, self.message, self.details = step, tactic, message, details
        # Coq prints the details (the lane loop left, the bound it could not prove)
        # before the failure, whose message says "printed above": so here too.
        head = f"step {step} ({tactic}) refused by Coq:"
        super().__init__(f"{head}\n{details}\n{message}" if details else f"{head} {message}")


class AnnotationRefused(ScheduleError):
    """A lowering annotation (`parallel i`) that cannot be honoured: decided from the
    program's syntax or from the C the lowering emits, not by Coq (an annotation
    changes how a loop runs, not what the program computes)."""
