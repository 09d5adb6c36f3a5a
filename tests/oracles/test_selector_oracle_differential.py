"""The model's selectors against the independent oracle (``selector_oracle``) on random memberships, every era.

Hypothesis draws programs of joins (names from a small pool, so names repeat; pairs of names whose ring points
collide in each ring-key era; ``c`` and ``c1``, whose ``name + i`` keys meet at ``c10``), leaves, rejoins under the
same name, and sticky range requests (adjacent, interleaved, overlapping, starting before or inside an existing
range, inverted, empty, missing), at one release on each side of every selector change (``ERA_RELEASES``).  After
every step the two must agree on refusals, impacted ranges, stats ranges, the owner of every probed slot and the
slot of every key (``selector_differential``).  A disagreement is a bug in one of them: Pulsar's own test values
(``tests/unit/pulsar_vectors.py``, run on both) decide which.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from selector_differential import Program, Step, disagreements
from selector_oracle import ERA_RELEASES

#: Ring-point collisions at point 0, found by search: name + "0", name + "\0" + "0", name + "\0" + "0\0" + "0".
COLLIDING_NAMES = ("k55269", "k67149", "k6342", "k90742", "k80208", "k89325")
NAMES = ("c", "c1", "c10", "consumer1", "consumer2", "a", "b", *COLLIDING_NAMES)
BOUNDS = (0, 1, 2, 99, 100, 101, 399, 400, 9999, 10000, 15000, 20000, 29999, 32767, 32768, 49999, 65534, 65535)

bound = st.one_of(st.sampled_from(BOUNDS), st.integers(0, 65535))
hash_range = st.tuples(bound, bound).map(lambda r: (min(r), max(r)))
sticky_ranges = st.one_of(
    st.lists(hash_range, min_size=1, max_size=3).map(tuple),
    st.lists(st.tuples(bound, bound), min_size=1, max_size=2).map(tuple),  # may be inverted or overlap
    st.sampled_from([None, ()]),
)


@st.composite
def programs(draw: st.DrawFn, version: str) -> Program:
    kind = draw(st.sampled_from(["consistent-hashing", "auto-split", "sticky"]))
    modern = version.startswith("4.")
    points = draw(st.sampled_from([1, 2, 3, 11, 20, 100] if modern else [1, 2, 3, 11, 20]))
    range_size = draw(st.sampled_from([65536, 65536, 8, 64])) if kind == "auto-split" else 65536
    join = st.builds(
        Step,
        op=st.just("join"),
        name=st.sampled_from(NAMES),
        ranges=sticky_ranges if kind == "sticky" else st.none(),
    )
    move = st.builds(Step, op=st.sampled_from(["leave", "rejoin"]), index=st.integers(0, 9))
    steps = draw(st.lists(st.one_of(join, join, move), min_size=1, max_size=14))
    return Program(
        kind=kind,
        version=version,
        steps=tuple(steps),
        points=points,
        classic=modern and draw(st.booleans()),
        range_size=range_size,
        slots=tuple(draw(st.lists(st.integers(0, 2**31 - 1), max_size=4))),
        keys=tuple(draw(st.lists(st.binary(max_size=12), min_size=1, max_size=4))),
    )


@pytest.mark.parametrize("version", ERA_RELEASES)
def test_model_selectors_agree_with_the_oracle(version: str) -> None:
    @settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(programs(version))
    def agree(program: Program) -> None:
        assert disagreements(program) == []

    agree()


#: Programs on which the two once disagreed, kept as fixed examples (each names the finding).
REGRESSIONS = (
    # 3.x / 4.0.0 - 4.0.6 check every sticky range for start > end before any conflict (apache/pulsar#20026).
    *(
        Program("sticky", v, (Step("join", "c1", ((100, 200),)), Step("join", "c2", ((150, 160), (10, 5)))))
        for v in ("2.10.6", "3.0.0", "3.0.13", "4.0.6", "4.0.7")
    ),
)


@pytest.mark.parametrize("program", REGRESSIONS, ids=lambda p: f"{p.kind}-{p.version}")
def test_earlier_disagreements_stay_fixed(program: Program) -> None:
    assert disagreements(program) == []
