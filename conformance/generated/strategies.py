"""Hypothesis strategies for generated programs, and the two profiles the suite registers.

``keyshared-fast`` (CI) and ``keyshared-thorough`` (nightly) are registered on import.  Both run without an
example database and without a deadline: the same keyshared seed gives the same examples (the case passes
``@seed``), and a model run is a full scenario, far slower than Hypothesis' 200 ms default.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from conformance.generated.program import (
    MANY_CONSUMERS,
    MAX_AMOUNT,
    SHAPE_CHOICES,
    SHAPE_DIMENSIONS,
    GeneratorOptions,
    Move,
    program_from_moves,
)
from conformance.scenarios import Scenario

__all__ = ["PROFILES", "moves", "profile", "programs", "shapes"]

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


def moves(max_moves: int = 16, options: GeneratorOptions | None = None) -> st.SearchStrategy[list[Move]]:
    """Lists of raw moves; every list is a valid program (see :func:`program_from_moves`)."""
    opts = options or GeneratorOptions()
    move = st.builds(
        Move,
        st.integers(0, len(opts.move_kinds()) - 1),
        st.integers(0, len(MANY_CONSUMERS) - 1),
        st.integers(1, MAX_AMOUNT),
    )
    return st.lists(move, max_size=max_moves)


def shapes() -> st.SearchStrategy[tuple[int, ...]]:
    """A program's shape: one choice per workload dimension (``SHAPE_CHOICES``), shrinking to the defaults.

    Each dimension keeps its plain default (choice 0) about half the time and draws uniformly otherwise: with
    the dimensions drawn uniformly, the programs where the core contracts are sharpest (a persistent topic,
    ordered delivery) became one in four, and a budget of 25 examples stopped finding a broker without draining
    hashes; weighted, every combination is still reachable and such programs stay common."""
    return st.tuples(*(st.one_of(st.just(0), st.integers(0, len(SHAPE_CHOICES[d]) - 1)) for d in SHAPE_DIMENSIONS))


def programs(*, options: GeneratorOptions | None = None, max_moves: int = 16) -> st.SearchStrategy[Scenario]:
    """Generated scenarios named ``generated``; they shrink towards fewer, simpler moves and the plain shape."""
    opts = options or GeneratorOptions()
    shape = shapes() if opts.dimensions else st.just(())
    return st.tuples(moves(max_moves, opts), shape).map(
        lambda drawn: program_from_moves(drawn[0], name="generated", options=opts, shape=drawn[1])
    )
