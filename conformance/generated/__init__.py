"""Generated workloads: programs in the scenario format, drawn by Hypothesis or from fixed seeds.

Against the deterministic model, Hypothesis draws programs, runs them, and on a violation shrinks the
program to a minimal one (saved as a scenario file with the run's artifacts).  Against a real broker,
shrinking cannot work (the broker is nondeterministic: a failure may not reproduce, and Hypothesis then
reports a flaky test), so a fixed set of programs, derived once from fixed seeds and stored in
``programs/``, is replayed instead.  See ``docs/conformance.md``.
"""

from conformance.generated.program import (
    MOVE_KINDS,
    GeneratorOptions,
    Move,
    program_from_moves,
    program_from_seed,
    stored_programs,
)

__all__ = [
    "MOVE_KINDS",
    "GeneratorOptions",
    "Move",
    "program_from_moves",
    "program_from_seed",
    "stored_programs",
]
