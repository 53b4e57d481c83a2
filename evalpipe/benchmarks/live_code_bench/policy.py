"""How LiveCodeBench's programs are run, as the report states it: the review's limits and the isolated
re-check's (``recheck``), worded once.  Kept apart from ``recheck`` so that the plugin's face can offer the
wording without loading the re-check's process machinery."""

from __future__ import annotations

__all__ = ["POLICY", "UNSANDBOXED_POLICY", "WALL_FACTOR", "policy_text"]

#: Wall-clock backstop per test, as a multiple of the per-test CPU limit (a program that sleeps or waits);
#: counted on the program's own time: wall time minus the time it waited for a CPU.
WALL_FACTOR = 5
POLICY = (
    "LiveCodeBench programs run in the run's sandbox ({sandbox}), one test process each. EvalScope's "
    "review runs them several at a time: per-test limit {limit:g} s of wall-clock time, global limit "
    "(limit + 1) × tests from the moment the test process is up. Every sample the review left as a timeout "
    "or without a result is re-checked alone with EvalScope's own test code: per-test limit {limit:g} s of "
    "the program's CPU time from its own start (a program that blocks is stopped after {backstop:g} s of "
    "wall time not spent waiting for a CPU); the re-check's class is the one reported."
)


#: The policy of a run made before evalpipe ran the review's programs itself (no sandbox recorded).
UNSANDBOXED_POLICY = (
    "LiveCodeBench programs are run by EvalScope's review (per-test limit {limit:g} s of wall-clock time; "
    "global limit from the spawn of the test interpreter, several reviews at once), on the host without a "
    "sandbox. Every sample the review left as a timeout or without a result is re-checked alone with "
    "EvalScope's own test code: per-test limit {limit:g} s of the program's CPU time from its own start (a "
    "program that blocks is stopped after {backstop:g} s of wall time not spent waiting for a CPU), clock "
    "started once the test process is up; the re-check's class is the one reported."
)


def policy_text(limit_s: float, sandbox: str | None) -> str:
    """The execution policy as the report states it; ``sandbox`` None: a run that recorded none."""
    text = POLICY if sandbox is not None else UNSANDBOXED_POLICY
    return text.format(limit=limit_s, backstop=limit_s * WALL_FACTOR, sandbox=sandbox)
