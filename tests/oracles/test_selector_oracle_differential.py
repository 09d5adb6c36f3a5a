"""The model's selectors against the independent oracle (``selector_oracle``) on random memberships, every era.

Hypothesis draws programs of joins (names from a small pool, so names repeat; pairs of names whose ring points
collide in each ring-key era; ``c`` and ``c1``, whose ``name + i`` keys meet at ``c10``), leaves, rejoins under the
same name, forks (the program goes on with copies; the originals must not move), and sticky range requests
(adjacent, interleaved, overlapping, starting before or inside an existing range, inverted, empty, missing, bounds
below 0 as a client without the Java/C++ check may send), at one release on each side of every selector change
(``ERA_RELEASES``).  After every step the two must agree on refusals (and the consumer a conflict names), impacted
ranges, stats ranges, the owner of every probed slot and the slot of every key (``selector_differential``).
A disagreement is a bug in one of them: Pulsar's own test values (``tests/unit/pulsar_vectors.py``, run on both)
decide which.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from selector_differential import Program, Step, disagreements
from selector_oracle import ERA_RELEASES, era_of

#: Names whose ring point 0 collides, found by search, per ring key: ``name + "0"`` (2.x - 3.0.2), ``name + "\0" +
#: "0"`` (3.0.3 - 3.3.1), ``name + "\0" + "0\0" + "0"`` on the 31-bit ring (3.0.7+, 3.3.2+) and, three of them, in
#: 4.x's [1, 65535].  ``c`` and ``c1`` meet at ``c10`` (``name + i``, 11 points or more).
COLLIDING = {
    "plain": ("k55269", "k67149", "c", "c1"),
    "nul": ("k6342", "k90742"),
    "index": ("k80208", "k89325"),
    "pip379": ("k260", "k1161", "k1385"),
}
BOUNDS = (0, 1, 2, 99, 100, 101, 399, 400, 9999, 10000, 15000, 20000, 29999, 32767, 32768, 49999, 65534, 65535)


def names_for(version: str) -> tuple[str, ...]:
    """A small pool, so that names repeat, with the names that collide in this release's ring."""
    era = era_of(version)
    key = "pip379" if era.pip379 else era.ring_key
    return ("c", "c1", "a", *COLLIDING[key])


#: Bounds below 0: the broker validates none (only the Java and C++ clients refuse them), so a client speaking the
#: protocol itself may send them; the gap-bug selector then selects slot 0 between a negative point and a positive.
NEGATIVE = (-1, -2, -300)
bound = st.one_of(st.sampled_from(BOUNDS), st.integers(0, 65535), st.sampled_from(NEGATIVE))
hash_range = st.tuples(bound, bound).map(lambda r: (min(r), max(r)))


def near(existing: tuple[int, int], how: str, d: int) -> tuple[int, int]:
    """A range placed against ``existing``: the shapes the conflict checks must tell apart."""
    s, e = existing
    return {
        "before-into": (s - d, s),  # starts outside, ends on its start
        "covers": (s - d, e + d),  # starts outside, ends outside
        "inside": (s + d // 2, e),
        "over-end": (e, e + d),
        "adjacent-before": (s - d, s - 1),
        "adjacent-after": (e + 1, e + d),
        "same": (s, e),
    }[how]


@st.composite
def sticky_request(draw: st.DrawFn, taken: list[tuple[int, int]]) -> tuple[tuple[int, int], ...] | None:
    shape = draw(st.sampled_from(["near", "fresh", "near", "odd"]))
    if shape == "odd":  # no meta, empty, or pairs that may be inverted or overlap each other
        return draw(st.one_of(st.sampled_from([None, ()]), st.lists(st.tuples(bound, bound), min_size=1, max_size=2)))
    count = draw(st.integers(1, 3))
    out = []
    for _ in range(count):
        if shape == "near" and taken:
            how = draw(st.sampled_from(["adjacent-after", "before-into", "covers", "adjacent-before", "inside",
                                        "over-end", "same"]))  # fmt: skip
            r = near(draw(st.sampled_from(taken)), how, draw(st.integers(1, 300)))
            r = (min(max(r[0], 0), 65535), min(max(r[1], 0), 65535))
        else:
            r = draw(hash_range)
        out.append(r)
    taken.extend(r for r in out if r[0] <= r[1])
    return tuple(out)


@st.composite
def programs(draw: st.DrawFn, version: str, kind: str) -> Program:
    modern = version.startswith("4.")
    points = draw(st.sampled_from([1, 2, 3, 11, 20, 100] if modern else [1, 2, 3, 11, 20]))
    range_size = draw(st.sampled_from([65536, 65536, 8, 64])) if kind == "auto-split" else 65536
    names = st.sampled_from(names_for(version))
    taken: list[tuple[int, int]] = []
    steps = []
    for n in range(draw(st.integers(1, 14))):
        if n > 0 and draw(st.integers(0, 2)) == 0:
            steps.append(Step(draw(st.sampled_from(["leave", "rejoin", "fork"])), index=draw(st.integers(0, 9))))
        else:
            ranges = draw(sticky_request(taken)) if kind == "sticky" else None
            steps.append(Step("join", draw(names), ranges))
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


#: Programs per release and selector: bounded for CI (the whole test takes seconds); raise it for a longer hunt
#: (``KEYSHARED_ORACLE_EXAMPLES=300``).
EXAMPLES = int(os.environ.get("KEYSHARED_ORACLE_EXAMPLES", "6"))
KINDS = ("consistent-hashing", "auto-split", "sticky")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("version", ERA_RELEASES)
def test_model_selectors_agree_with_the_oracle(version: str, kind: str) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(programs(version, kind))
    def agree(program: Program) -> None:
        assert disagreements(program) == []

    agree()


def _join(*names: str) -> tuple[Step, ...]:
    return tuple(Step("join", n) for n in names)


def _sticky(*requests: tuple[str, tuple[tuple[int, int], ...] | None]) -> tuple[Step, ...]:
    return tuple(Step("join", n, r) for n, r in requests)


#: Rare membership states, run at every release besides the random programs: (label, kind, steps, points, size).
CURATED: tuple[tuple[str, str, tuple[Step, ...], int, int], ...] = (
    # 4.x: three consumers on one point (k260, k1161, k1385 at 40110); the selected leaves, the first queued takes
    # over, then it leaves too; the first rejoins at the back of the queue.
    (
        "three-on-a-point",
        "consistent-hashing",
        (
            *_join("k260", "k1161", "k1385", "c"),
            Step("leave", index=0),
            Step("leave", index=0),
            Step("rejoin", index=1),
        ),
        1,
        65536,
    ),
    # name + i / name + "\0" + i collisions in both join orders (the list is sorted by name), then leaves.
    (
        "list-collisions",
        "consistent-hashing",
        (*_join("k67149", "k55269", "c1", "c", "k90742", "k6342"), Step("leave", index=0), Step("leave", index=2)),
        11,
        65536,
    ),
    # 3.0.7+: the later of two colliding names replaces the earlier at the point; the replaced one, owning no point
    # any more, releases its index; same-name rejoin afterwards.
    (
        "put-replaces",
        "consistent-hashing",
        (*_join("k89325", "k80208", "k89325"), Step("leave", index=1), Step("rejoin", index=0), Step("leave", index=0)),
        1,
        65536,
    ),
    # Same names: indexes 0, 1, 2; the middle one leaves and a newcomer takes index 1; rejoins.
    (
        "same-names",
        "consistent-hashing",
        (*_join("c", "c", "c"), Step("leave", index=1), *_join("c"), Step("rejoin", index=0), Step("leave", index=3)),
        20,
        65536,
    ),
    # Auto-split down to one slot per range and back (range size 8: refused from the 9th consumer).
    (
        "auto-split-exhausted",
        "auto-split",
        (*_join(*"abcdefghij"), Step("leave", index=7), Step("leave", index=0), *_join("k", "l")),
        1,
        8,
    ),
    ("auto-split-top-leaves", "auto-split", _join("a", "b", "c", "d") + (Step("leave", index=0),) * 3, 1, 65536),
    # Sticky: interleaved and adjacent ranges accepted; overlaps refused, also one that starts before an existing
    # range (floor misses it, ceiling finds it) and one that covers it; gaps; a rejoin with the same ranges.
    (
        "sticky-shapes",
        "sticky",
        (
            *_sticky(
                ("c1", ((0, 99), (400, 65535))),
                ("c2", ((100, 399),)),
                ("c3", ((50, 150),)),
                ("c4", ((99, 100),)),
                ("c5", ((0, 0),)),
            ),
            Step("leave", index=1),
            *_sticky(("c6", ((90, 120),)), ("c7", ((101, 398), (100, 100))), ("c8", ((399, 399), (98, 99)))),
            Step("rejoin", index=0),
        ),
        1,
        65536,
    ),
    (
        "sticky-gaps",
        "sticky",
        _sticky(
            ("c1", ((0, 9999), (20000, 29999), (40000, 49999))),
            ("c2", ((10000, 10000),)),
            ("c3", ((15000, 19999),)),
            ("c4", ((5000, 5000), (6000, 6000))),
        ),
        1,
        65536,
    ),
    # A range covering two consumers' ranges: the gap-bug selector names the owner of the floor point of its end,
    # the fixed one the owner of the floor or ceiling entry of its start (the broker's error text names it).
    (
        "sticky-conflict-named",
        "sticky",
        _sticky(("c1", ((100, 200),)), ("c2", ((300, 400),)), ("c3", ((0, 1000),)), ("c4", ((150, 350),))),
        1,
        65536,
    ),
    # Bounds below 0 (no broker check; a client writing the protocol itself): slot 0 lies between c1's points.
    (
        "sticky-negative-bounds",
        "sticky",
        (*_sticky(("c1", ((-5, 10),)), ("c2", ((-300, -200), (20, 30)))), Step("leave", index=1)),
        1,
        65536,
    ),
    # A copy taken mid-way goes on changing; the original must answer as before (every ring era and selector).
    (
        "fork-ring",
        "consistent-hashing",
        (*_join("c", "k55269"), Step("fork"), *_join("a", "k67149"), Step("leave", index=0), *_join("c1")),
        3,
        65536,
    ),
    ("fork-split", "auto-split", (*_join("a", "b"), Step("fork"), *_join("c"), Step("leave", index=0)), 1, 65536),
    (
        "fork-sticky",
        "sticky",
        (*_sticky(("c1", ((0, 99),))), Step("fork"), *_sticky(("c2", ((100, 199),))), Step("leave", index=0)),
        1,
        65536,
    ),
    # A conflicting range and an inverted one: which refusal (3.x / 4.0.0 - 4.0.6 report the inversion).
    (
        "sticky-conflict-and-inverted",
        "sticky",
        _sticky(("c1", ((100, 200),)), ("c2", ((150, 160), (10, 5))), ("c3", ((10, 5), (150, 160))), ("c4", ())),
        1,
        65536,
    ),
)


@pytest.mark.parametrize(("label", "kind", "steps", "points", "size"), CURATED, ids=[c[0] for c in CURATED])
def test_curated_memberships_agree(label: str, kind: str, steps: tuple[Step, ...], points: int, size: int) -> None:
    found = []
    for version in ERA_RELEASES:
        for classic in (False, True) if version.startswith("4.") and kind != "sticky" else (False,):
            program = Program(kind, version, steps, points=points, classic=classic, range_size=size)
            found += [f"{version}{' classic' if classic else ''} {line}" for line in disagreements(program)]
    assert found == []
