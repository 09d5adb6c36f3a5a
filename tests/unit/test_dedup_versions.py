"""Deduplication rules that changed between Pulsar releases."""

from __future__ import annotations

import pytest

from reference_model.dedup import DedupConfig, MessageDeduplication


@pytest.mark.parametrize(
    ("version", "recorded"), [("2.10", True), ("3.0.2", True), ("3.0.3", False), ("3.1.0", True), ("3.1.1", False),
                              ("3.3", False), ("4.0", False)],
)  # fmt: skip
def test_disconnects_are_recorded_as_inactive_only_while_enabled_from_21193(version: str, recorded: bool) -> None:
    """apache/pulsar#21193 (3.0.3 / 3.1.1): ``producerRemoved`` records an inactive producer only while
    deduplication is on; before, short-lived producers filled the map with deduplication off (#21192)."""
    dedup = MessageDeduplication(DedupConfig(), version)
    dedup.set_enabled(False, now_ns=0)
    dedup.producer_disconnected("p1", now_ns=5)
    assert dedup.inactive_producers() == ({"p1": 5} if recorded else {})
    assert dedup.stats()["inactiveProducers"] == ({"p1": 5} if recorded else {})
    dedup.producer_connected("p1")
    assert dedup.inactive_producers() == {}


def test_enabled_deduplication_records_disconnects_on_every_release() -> None:
    for version in ("2.10", "3.0.2", "4.0"):
        dedup = MessageDeduplication(DedupConfig(), version)
        dedup.set_enabled(True, now_ns=0)
        dedup.producer_disconnected("p1", now_ns=5)
        assert dedup.inactive_producers() == {"p1": 5}
