"""The oracle's own release table: which selector code each Pulsar release ships.

Read from the ``Release X.Y.Z`` commits of Pulsar's release branches (the ascentstream/pulsar mirror of
apache/pulsar's history), one fingerprint per release of the three selector classes; nothing here is taken from
``reference_model.versions``.  What changed, and where:

* consistent-hashing ring: a per-point *list* of consumers (``hash % list.size()`` picks one) in every 2.x, 3.0.0 -
  3.0.6, 3.1.x, 3.2.x, 3.3.0 - 3.3.1; one consumer per point, a later ``put`` replacing an earlier one, with the
  consumer-name index (``ConsumerNameIndexTracker``) in 3.0.7+ and 3.3.2+; first wins with a FIFO of colliding
  consumers, in the 16-bit key hash range, in 4.x;
* ring key: ``name + i`` until 3.0.2 / 3.1.2 / 3.2.0, ``name + "\\0" + i`` from 3.0.3 / 3.1.3 / 3.2.1 and in 3.3.0 -
  3.3.1, ``name\\0index\\0i`` with the name index;
* ring removal: every consumer *of the leaving consumer's name* (``removeIf(c -> c.consumerName().equals(...))``)
  until 2.9.2, the consumer itself from 2.9.3;
* stats keyed by consumer name (``Map<String, List<String>>``) in 2.8.0 and 2.8.1;
* sticky: start and end points only (a slot between two points of one consumer is selected) until 3.0.13 / 3.3.8
  / 4.0.6 / 4.1.0 and in every 2.x, 3.1, 3.2; ``floorEntry`` on range starts (the gap fix) from 3.0.14 / 3.3.9 /
  4.0.7 / 4.1.1; the 2.x broker checks each range for inversion and conflict in turn, 3.x checks every range for
  inversion first; the fixed selector also refuses a consumer's own overlapping ranges;
* 4.x: slots reduced into the selector's key hash range (PIP-379), snapshots and impacted ranges.

After 4.2.1 the three selectors, ``ConsumerHashAssignmentsSnapshot`` and ``HashRanges`` are unchanged in meaning up
to ``Release 4.2.4`` and the mirror's master (2026-08-20, which 5.0.0 branched from): the only edits are the logging
migration (#25535) and ``ConsumerNameIndexTracker`` moving from ``RoaringBitmap`` to ``LongBitmap`` with the same
lowest-free-slot allocation (#26117).  4.2.5 and 5.0.0 are newer than the mirror; their release notes list no
selector change, so they carry the 4.2.1 fingerprint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Newest release of each line (apache/pulsar-site release notes), for versions given without a patch.
NEWEST = {
    (2, 8): 4, (2, 9): 5, (2, 10): 6, (2, 11): 4, (3, 0): 17, (3, 1): 3, (3, 2): 4, (3, 3): 9,
    (4, 0): 14, (4, 1): 3, (4, 2): 5, (5, 0): 0,
}  # fmt: skip

#: A release on each side of every boundary above: the releases the differential test runs.
ERA_RELEASES: tuple[str, ...] = (
    "2.8.0", "2.8.1", "2.8.2", "2.9.1", "2.9.3", "2.10.6", "2.11.4",
    "3.0.0", "3.0.2", "3.0.3", "3.0.6", "3.0.7", "3.0.13", "3.0.14", "3.0.17",
    "3.1.2", "3.1.3", "3.2.0", "3.2.1", "3.2.4", "3.3.0", "3.3.1", "3.3.2", "3.3.8", "3.3.9",
    "4.0.0", "4.0.6", "4.0.7", "4.0.14", "4.1.0", "4.1.1", "4.1.3", "4.2.1",
    "4.2.4", "4.2.5", "5.0.0",
)  # fmt: skip

Release = tuple[int, int, int]


@dataclass(frozen=True)
class Era:
    """The selector code of one release."""

    release: Release
    ring: str  #: ``list``, ``put`` or ``first-wins``
    ring_key: str  #: ``plain``, ``nul`` or ``index``
    remove_by_name: bool
    stats_by_name: bool
    sticky_gap_fixed: bool
    sticky_checks: str  #: ``each-range`` (2.x), ``inversions-first`` (3.x, 4.x before the fix), ``sorted`` (fixed)
    pip379: bool


def parse_release(text: str) -> Release:
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    if m is None:
        raise ValueError(f"not a Pulsar version: {text!r}")
    line = (int(m.group(1)), int(m.group(2)))
    if line not in NEWEST:
        raise ValueError(f"the oracle knows no release line {line[0]}.{line[1]}")
    patch = NEWEST[line] if m.group(3) is None else int(m.group(3))
    return (line[0], line[1], patch)


def _from(release: Release, *firsts: Release) -> bool:
    """Whether ``release`` carries a change first shipped in ``firsts`` (one per line; later lines have it)."""
    for first in firsts:
        if release[:2] == first[:2]:
            return release >= first
    return release[:2] > max(first[:2] for first in firsts)


def era_of(version: str) -> Era:
    r = parse_release(version)
    pip379 = r >= (4, 0, 0)
    if pip379:
        ring = "first-wins"
    elif (r[:2] == (3, 0) and r >= (3, 0, 7)) or (r[:2] == (3, 3) and r >= (3, 3, 2)):
        ring = "put"
    else:
        ring = "list"
    if ring != "list":
        key = "index"
    elif r[:2] == (3, 3) or _from(r, (3, 0, 3), (3, 1, 3), (3, 2, 1)):
        key = "nul"
    else:
        key = "plain"
    gap_fixed = _from(r, (3, 0, 14), (3, 3, 9), (4, 0, 7), (4, 1, 1))
    if gap_fixed:
        checks = "sorted"
    elif r < (3, 0, 0):
        checks = "each-range"
    else:
        checks = "inversions-first"
    return Era(
        release=r,
        ring=ring,
        ring_key=key,
        remove_by_name=r < (2, 9, 3),
        stats_by_name=r < (2, 8, 2),
        sticky_gap_fixed=gap_fixed,
        sticky_checks=checks,
        pip379=pip379,
    )
