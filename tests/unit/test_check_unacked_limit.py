"""``received_beyond_unacked_limit`` on the checker, both ways (``conformance/checks/unacked_limit.py``).

The traces of ``tests/support/unacked_traces.py`` (valid under the limit, after acks by anyone, late or disarmed,
nacks, a redeliver request, a fault and a batch's overshoot; INVALID past it), each also with every event at
t = 0.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from unacked_traces import UNACKED_CASES

from conformance.checks import check_trace
from conformance.checks.unacked_limit import limit_of
from conformance.trace.events import Event


def _flat(events: list[Event]) -> list[Event]:
    return [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in events]


@pytest.mark.parametrize("case", sorted(UNACKED_CASES))
@pytest.mark.parametrize("flat", [False, True], ids=["timed", "equal-timestamps"])
def test_the_limit_is_judged_both_ways(case: str, flat: bool) -> None:
    build, expected = UNACKED_CASES[case]
    b = build()
    events = _flat(b.events) if flat else b.events
    verdict = check_trace(events, header=b.header)
    kinds = sorted(v.kind.value for v in verdict.all_violations())
    assert kinds == expected, verdict.render()


def test_the_excess_is_explained_once() -> None:
    b = UNACKED_CASES["over"][0]()
    (violation,) = check_trace(b.events, header=b.header).all_violations()
    assert violation.consumers == ("c1",)
    assert "maxUnackedMessagesPerConsumer 2" in violation.explanation
    assert len(violation.events) == 3


def test_without_a_limit_nothing_is_judged() -> None:
    b = UNACKED_CASES["over"][0]()
    header = replace(b.header, extra={})
    assert check_trace(b.events, header=header).valid


@pytest.mark.parametrize(
    ("conf", "extra", "limit"),
    [
        ({"maxUnackedMessagesPerConsumer": 3, "maxUnackedMessagesPerSubscription": 2}, {}, 3),
        ({"maxUnackedMessagesPerConsumer": 0, "maxUnackedMessagesPerSubscription": 4}, {}, 0),
        ({"maxUnackedMessagesPerConsumer": True}, {}, 0),
        ({"maxUnackedMessagesPerConsumer": 3}, {"topic_kind": "non-persistent"}, 0),
        ({}, {}, 0),
    ],
)
def test_the_effective_limit(conf: dict[str, object], extra: dict[str, object], limit: int) -> None:
    assert limit_of({"broker_conf": conf, **extra}) == limit
