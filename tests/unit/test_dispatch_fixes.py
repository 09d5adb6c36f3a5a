"""Fix constants live in ``reference_model.versions``; the modules that used to define them re-export them."""

from __future__ import annotations

import pytest

from reference_model import versions
from reference_model.keyshared import pip379
from reference_model.replication import config as replication_config
from reference_model.versions import DRAINING_REASSIGNMENT_FIX, REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT, parse_version


def test_the_moved_fixes_are_importable_from_where_they_were() -> None:
    assert pip379.DRAINING_REASSIGNMENT_FIX is DRAINING_REASSIGNMENT_FIX
    assert replication_config.REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT is REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT
    assert {"DRAINING_REASSIGNMENT_FIX", "REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT"} <= set(versions.__all__)


@pytest.mark.parametrize(
    ("version", "expected"),
    [("4.0.6", False), ("4.0.7", True), ("4.0", True), ("4.1.0", False), ("4.1.1", True), ("4.2", True)],
)
def test_draining_reassignment_fix_releases(version: str, expected: bool) -> None:
    """apache/pulsar#24736: listed in the 4.0.7 and 4.1.1 release notes (2025-09-27)."""
    assert parse_version(version).has(DRAINING_REASSIGNMENT_FIX) is expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("3.0.9", False),
        ("3.0.10", True),
        ("3.3.4", False),
        ("3.3.5", True),
        ("4.0.1", False),
        ("4.0.2", True),
        ("4.1", True),
        ("3.2", False),  # end of life before the fix
    ],
)
def test_replicated_snapshot_retry_after_timeout_releases(version: str, expected: bool) -> None:
    """apache/pulsar#23839: listed in the 3.0.10, 3.3.5 and 4.0.2 release notes."""
    assert parse_version(version).has(REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT) is expected
