"""Which refusal a STICKY consumer gets when one of its ranges conflicts and another is inverted, per release.

Found by the selector oracle's differential test (``tests/oracles/``).  Before the gap fix (apache/pulsar#24730)
``HashRangeExclusiveStickyKeyConsumerSelector.validateKeySharedMeta`` of every 3.x and 4.0.0 - 4.0.6 release
(apache/pulsar#20026, first released in 3.0.0) checks *every* range for ``start > end`` before
``findConflictingConsumer`` looks at any; 2.x (2.8.4, 2.10.6, 2.11.4 read) checks each range for inversion and
then conflict in turn; the fixed selector sorts the ranges, checks inversions and own overlaps, then conflicts.
Pulsar's unit tests hold no value for this case; the expectations are the release source's behaviour.
"""

from __future__ import annotations

import pytest

from reference_model.errors import ConsumerAssignError
from reference_model.selectors import ConsumerRef, make_selector

# [150, 160] conflicts with c1's [100, 200]; [10, 5] is inverted.
CONFLICT_THEN_INVERTED = [(150, 160), (10, 5)]


@pytest.mark.parametrize(
    ("version", "reported"),
    [
        ("2.8.4", "Range conflict"),
        ("2.10.6", "Range conflict"),
        ("2.11.4", "Range conflict"),
        ("3.0.0", "start > end"),
        ("3.0.13", "start > end"),
        ("3.2.4", "start > end"),
        ("3.3.8", "start > end"),
        ("4.0.0", "start > end"),
        ("4.0.6", "start > end"),
        ("4.1.0", "start > end"),
        ("3.0.14", "start > end"),
        ("4.0.7", "start > end"),
    ],
)
def test_inversion_or_conflict_first(version: str, reported: str) -> None:
    sel = make_selector("sticky", version)
    sel.add(ConsumerRef("c1", 1), [(100, 200)])
    with pytest.raises(ConsumerAssignError, match=reported):
        sel.add(ConsumerRef("c2", 2), CONFLICT_THEN_INVERTED)
    assert [c.name for c in sel.consumers()] == ["c1"]


@pytest.mark.parametrize("version", ["2.10.6", "3.0.13", "4.0.6"])
def test_an_inverted_range_before_a_conflict_is_reported_in_every_era(version: str) -> None:
    sel = make_selector("sticky", version)
    sel.add(ConsumerRef("c1", 1), [(100, 200)])
    with pytest.raises(ConsumerAssignError, match="start > end"):
        sel.add(ConsumerRef("c2", 2), [(10, 5), (150, 160)])
