"""Hypothesis strategies for generated programs, and the two profiles the suite registers.

``keyshared-fast`` (CI) and ``keyshared-thorough`` (nightly) are registered on import.  Both run without an
example database and without a deadline: the same keyshared seed gives the same examples (the case passes
``@seed``), and a model run is a full scenario, far slower than Hypothesis' 200 ms default.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from conformance.generated.program import (
    CONSUMERS,
    MAX_AMOUNT,
    MOVE_KINDS,
    GeneratorOptions,
    Move,
    program_from_moves,
)
from conformance.scenarios import Scenario

__all__ = ["PROFILES", "moves", "profile", "programs"]

_COMMON = {
    "deadline": None,
    "database": None,
    "print_blob": False,
    "report_multiple_bugs": False,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}
#: Our profile names (``--keyshared-hypothesis-profile``) -> Hypothesis settings.
PROFILES: dict[str, settings] = {
    "fast": settings(max_examples=25, stateful_step_count=20, **_COMMON),  # type: ignore[arg-type]
    "thorough": settings(max_examples=400, stateful_step_count=50, **_COMMON),  # type: ignore[arg-type]
}
for _name, _profile in PROFILES.items():
    settings.register_profile(f"keyshared-{_name}", _profile)


def profile(name: str) -> settings:
    """The registered ``keyshared-<name>`` profile (``fast`` or ``thorough``)."""
    return settings.get_profile(f"keyshared-{name}")


def moves(max_moves: int = 16) -> st.SearchStrategy[list[Move]]:
    """Lists of raw moves; every list is a valid program (see :func:`program_from_moves`)."""
    move = st.builds(
        Move,
        st.integers(0, len(MOVE_KINDS) - 1),
        st.integers(0, len(CONSUMERS) - 1),
        st.integers(1, MAX_AMOUNT),
    )
    return st.lists(move, max_size=max_moves)


def programs(*, options: GeneratorOptions | None = None, max_moves: int = 16) -> st.SearchStrategy[Scenario]:
    """Generated scenarios named ``generated``; they shrink towards fewer, simpler moves."""
    return moves(max_moves).map(lambda ms: program_from_moves(ms, name="generated", options=options))
