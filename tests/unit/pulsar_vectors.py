"""Apache Pulsar's own unit-test expectations, as data: the test method, the releases it was read at, the values.

Each vector is the literal expectation of one Pulsar test method in the releases listed (``read_at``), so a
test here can run the model's public API at each of those releases and demand the same answer.  Where an
expectation changed between releases, each version of it is its own vector with its own releases.  Nothing
here is computed by the model: a vector that the model fails is a model bug at that release (issue 12).

Sources: the test files in apache/pulsar at the release tags (``ConsistentHashingStickyKeyConsumerSelectorTest``,
``ReplicatedSubscriptionSnapshotCacheTest``), the research note ``pulsar-semantics.md`` §2.2 for the 4.0 and
3.0.3 vectors, issue 12 for the name-index era's wrap-around start, and ``MessageDuplicationTest`` at master (its
vectors say which change each expectation came with).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CH_KEY_HASH_RANGES",
    "DEDUP_FLAGS",
    "IS_DUPLICATE",
    "NEWEST_PATCHES",
    "RECENTLY_JOINED_SORT",
    "SNAPSHOT_CACHE",
    "STICKY_GAPS",
    "ConsistentHashingVector",
    "DedupFlagVector",
    "DedupStep",
    "IsDuplicateVector",
    "RecentlyJoinedSortVector",
    "SnapshotCacheVector",
    "StickyGapVector",
    "releases",
]


def releases(line: str, first: int, last: int) -> tuple[str, ...]:
    """``releases("3.0", 7, 14)`` -> ``("3.0.7", ..., "3.0.14")``."""
    return tuple(f"{line}.{patch}" for patch in range(first, last + 1))


@dataclass(frozen=True)
class ConsistentHashingVector:
    """``testGetConsumerKeyHashRanges``: 3 points, consumers consumer1..3 added in order, ranges by consumer."""

    test: str
    read_at: tuple[str, ...]
    points: int
    names: tuple[str, ...]
    expected: dict[str, list[tuple[int, int]]]


CH_TEST = "ConsistentHashingStickyKeyConsumerSelectorTest.testGetConsumerKeyHashRanges"

CH_KEY_HASH_RANGES: tuple[ConsistentHashingVector, ...] = (
    # Ring key name + i, one list of consumers per point; stats one range per point, no wrap-around range.
    ConsistentHashingVector(
        CH_TEST,
        ("2.10.0", "2.10.6", "2.11.0", "3.0.0", "3.0.2", "3.1.0", "3.2.0"),
        3,
        ("consumer1", "consumer2", "consumer3"),
        {
            "consumer1": [(0, 330121749), (330121750, 618146114), (1797637922, 1976098885)],
            "consumer2": [(938427576, 1094135919), (1138613629, 1342907082), (1342907083, 1797637921)],
            "consumer3": [(618146115, 772640562), (772640563, 938427575), (1094135920, 1138613628)],
        },
    ),
    # apache/pulsar#22053: ring key name + "\0" + i.
    ConsistentHashingVector(
        CH_TEST,
        ("3.0.3", "3.0.6", "3.2.1", "3.3.0", "3.3.1"),
        3,
        ("consumer1", "consumer2", "consumer3"),
        {
            "consumer1": [(119056335, 242013991), (722195657, 1656011842), (1707482098, 1914695766)],
            "consumer2": [(0, 90164503), (90164504, 119056334), (382436668, 722195656)],
            "consumer3": [(242013992, 242377547), (242377548, 382436667), (1656011843, 1707482097)],
        },
    ),
    # apache/pulsar#23327: ring key name + "\0" + nameIndex + "\0" + i; the wrap-around range
    # [lastPoint + 1, Integer.MAX_VALUE - 1] goes to the first point's consumer (consumer3 here, from 2016237254).
    ConsistentHashingVector(
        CH_TEST,
        releases("3.0", 7, 14) + releases("3.3", 2, 9),
        3,
        ("consumer1", "consumer2", "consumer3"),
        {
            "consumer1": [(95615213, 440020355), (440020356, 455987436), (1189794593, 1264144431)],
            "consumer2": [(939655188, 1189794592), (1314727625, 1977451233), (1977451234, 2016237253)],
            "consumer3": [
                (0, 95615212),
                (455987437, 939655187),
                (1264144432, 1314727624),
                (2016237254, 2147483646),
            ],
        },
    ),
    # The same expectation on 3.0.15 - 3.0.17, carried from 3.0.14 (not read at those tags, which could not be
    # fetched): their release notes (apache/pulsar-site pulsar-3.0.15.md, -3.0.16.md, -3.0.17.md) list no change to
    # ConsistentHashingStickyKeyConsumerSelector or its test, so consumer3's wrap-around range still starts at
    # lastPoint + 1 = 2016237254 (the 2016237255 of issue 12 was the model's old lastPoint + 2).
    ConsistentHashingVector(
        CH_TEST,
        releases("3.0", 15, 17),
        3,
        ("consumer1", "consumer2", "consumer3"),
        {
            "consumer1": [(95615213, 440020355), (440020356, 455987436), (1189794593, 1264144431)],
            "consumer2": [(939655188, 1189794592), (1314727625, 1977451233), (1977451234, 2016237253)],
            "consumer3": [
                (0, 95615212),
                (455987437, 939655187),
                (1264144432, 1314727624),
                (2016237254, 2147483646),
            ],
        },
    ),
    # PIP-379 (4.0): hash range [1, 65535], ranges merged per consumer.
    ConsistentHashingVector(
        CH_TEST,
        ("4.0.0", "4.0.7", "4.0.14", "4.1.0", "4.1.3", "4.2.0"),
        3,
        ("consumer1", "consumer2", "consumer3"),
        {
            "consumer1": [(14359, 18366), (29991, 39817), (52980, 60442)],
            "consumer2": [(1, 6668), (39818, 52979), (60443, 63679), (65184, 65535)],
            "consumer3": [(6669, 14358), (18367, 29990), (63680, 65183)],
        },
    ),
)


@dataclass(frozen=True)
class SnapshotCacheVector:
    """``testSnapshotCachePruning``: a cache of 3, snapshot-i at position (i, i) for i = 1..4, then lookups.

    ``lookups`` maps a mark-delete position to the snapshot id ``advancedMarkDeletePosition`` returns (``None``
    for null), asked in order (each lookup drops what it returns and everything older).
    """

    test: str
    read_at: tuple[str, ...]
    max_snapshots: int
    added: tuple[int, ...]
    lookups: tuple[tuple[tuple[int, int], str | None], ...]


SNAPSHOT_TEST = "ReplicatedSubscriptionSnapshotCacheTest.testSnapshotCachePruning"

SNAPSHOT_CACHE: tuple[SnapshotCacheVector, ...] = (
    # Newest N: snapshot-1 was pruned; (2:2) finds snapshot-2.
    SnapshotCacheVector(
        SNAPSHOT_TEST,
        ("3.0.17", "3.3.9", "4.0.0", "4.0.8", "4.1.0", "4.1.2"),
        3,
        (1, 2, 3, 4),
        (((1, 1), None), ((2, 2), "snapshot-2"), ((5, 5), "snapshot-4")),
    ),
    # apache/pulsar#25044: snapshots kept spread by distance; the first is never pruned, so (2:2) finds snapshot-1.
    SnapshotCacheVector(
        SNAPSHOT_TEST,
        ("4.0.9", "4.0.14", "4.1.3", "4.2.0"),
        3,
        (1, 2, 3, 4),
        (((2, 2), "snapshot-1"), ((5, 5), "snapshot-4")),
    ),
)


@dataclass(frozen=True)
class StickyGapVector:
    """``HashRangeExclusiveStickyKeyConsumerSelectorTest.testConsumerSelectWithMultipRanges`` (apache/pulsar#24730):
    one STICKY consumer with three ranges, alone; ``expected`` maps a slot to whether that consumer gets it."""

    test: str
    read_at: tuple[str, ...]
    ranges: tuple[tuple[int, int], ...]
    expected: dict[int, bool]


STICKY_GAPS: tuple[StickyGapVector, ...] = (
    # The test came with the fix; its slots and ranges are those of the PR description (15000 lies in a gap).
    StickyGapVector(
        "HashRangeExclusiveStickyKeyConsumerSelectorTest.testConsumerSelectWithMultipRanges",
        ("3.0.14", "3.0.17", "3.3.9", "4.0.7", "4.0.14", "4.1.1", "4.2.0"),
        ((0, 9999), (20000, 29999), (40000, 49999)),
        {0: True, 9999: True, 10000: False, 15000: False, 19999: False, 20000: True, 35000: False, 49999: True,
         50000: False, 65535: False},
    ),
)  # fmt: skip


# -- MessageDuplicationTest (deduplication) --------------------------------------------------------------------------
#
# Read at apache/pulsar master as stored in the lhotari/pulsar fork (commit 1acaf107c3fc, 2026): the release tags
# could not be fetched, so each vector names the change that brought its expectation and is run at the releases
# that change's gate (reference_model.versions) says carry it, newest patch of every line; the releases before it
# are pinned to the old behaviour in tests/unit/test_dedup_versions.py.

DEDUP_TEST = "MessageDuplicationTest"
DEDUP_SOURCE = "apache/pulsar master, lhotari/pulsar@1acaf107c3fc"
#: The newest patch of every release line the model reproduces.
NEWEST_PATCHES = ("2.10.6", "2.11.4", "3.0.17", "3.1.3", "3.2.4", "3.3.9", "4.0.14", "4.1.3", "4.2.5", "5.0.0")


@dataclass(frozen=True)
class DedupStep:
    """One call of ``testIsDuplicate``: ``isDuplicate(producer, seq, highest)`` -> ``decision``, then
    ``highestSequencedPushed[producer] == pushed``. ``persist`` first sets ``highestSequencedPersisted[producer]``
    (the test writes the map; the model gets there through a completed write), ``reset_pushed`` first sets
    ``highestSequencedPushed[producer]`` to the persisted id (the model: a failed write, ``pushed := persisted``)."""

    producer: str
    seq: int
    highest: int
    decision: str
    pushed: int
    persist: int | None = None
    reset_pushed: bool = False


@dataclass(frozen=True)
class IsDuplicateVector:
    test: str
    source: str
    releases: tuple[str, ...]
    steps: tuple[DedupStep, ...]


# The rule has been the same since the highest sequence id was added (2.x): no gate, every line.
IS_DUPLICATE = IsDuplicateVector(
    f"{DEDUP_TEST}.testIsDuplicate",
    DEDUP_SOURCE,
    NEWEST_PATCHES,
    (
        DedupStep("producer1", 0, -1, "NotDup", 0),
        DedupStep("producer2", 1, -1, "NotDup", 1),
        DedupStep("producer1", 1, -1, "NotDup", 1),
        DedupStep("producer1", 5, -1, "NotDup", 5),
        DedupStep(
            "producer1", 0, -1, "Unknown", 5
        ),  # "should expect unknown because highestSequencePersisted is empty"
        DedupStep("producer1", 0, -1, "Dup", 5, persist=0),
        DedupStep("producer1", 1, 5, "NotDup", 5, reset_pushed=True),
        DedupStep("producer1", 4, 8, "Unknown", 5),
    ),
)


@dataclass(frozen=True)
class DedupFlagVector:
    """A yes/no expectation of one test method, at the releases that carry the change it came with."""

    test: str
    source: str
    change: str
    releases: tuple[str, ...]
    expected: bool


DEDUP_FLAGS: tuple[DedupFlagVector, ...] = (
    # producer closed -> inactive; deduplication disabled by topic policy; purge -> no inactive producer left.
    DedupFlagVector(
        f"{DEDUP_TEST}.testMessageDeduplication",
        DEDUP_SOURCE,
        "apache/pulsar#21193",
        ("3.0.3", "3.0.17", "3.1.1", "3.1.3", "3.2.4", "3.3.9", "4.0.14", "4.1.3", "4.2.5"),
        True,
    ),
    # __change_events is never deduplicated, with the broker, the namespace and the topic policy all on.
    DedupFlagVector(
        f"{DEDUP_TEST}.testMessageDeduplicationShouldNotWorkForSystemTopic",
        DEDUP_SOURCE,
        "apache/pulsar#22582",
        ("3.0.5", "3.0.17", "3.2.3", "3.2.4", "3.3.0", "3.3.9", "4.0.14", "4.1.3", "4.2.5"),
        False,
    ),
)


@dataclass(frozen=True)
class RecentlyJoinedSortVector:
    """The classic dispatcher's recently joined map after joins (``PersistentStickyKeyDispatcherMultipleConsumers``
    ``ClassicTest``): a first consumer joins (never recorded), then each of ``joins`` at the cursor read position
    given; ``expected`` is the map in order, ``sorts`` how many times it was re-sorted (``None``: not asserted)."""

    test: str
    read_at: tuple[str, ...]
    joins: tuple[tuple[str, tuple[int, int]], ...]
    expected: tuple[tuple[str, tuple[int, int]], ...]
    sorts: int | None = None


RECENTLY_JOINED_SORT: tuple[RecentlyJoinedSortVector, ...] = (
    # apache/pulsar#23795 added the test (3.0.9 / 3.3.4 / 4.0.2). Read in two copies with the same literal values: a
    # branch-3.0 copy of PersistentStickyKeyDispatcherMultipleConsumersTest (PositionImpl API) and the 4.x copy of
    # PersistentStickyKeyDispatcherMultipleConsumersClassicTest that also carries #24634's test (4.0.7 and later).
    # It passes with either version of the sort check (the first one sorts at c5's join, the second at c3's and c5's).
    RecentlyJoinedSortVector(
        "PersistentStickyKeyDispatcherMultipleConsumersClassicTest.testSortRecentlyJoinedConsumersIfNeeded",
        ("3.0.9", "3.0.13", "3.0.14", "3.0.17", "3.3.4", "3.3.9", "4.0.2", "4.0.6", "4.0.7", "4.0.14", "4.1.0",
         "4.1.3"),
        (("c1", (4, 1)), ("c2", (5, 2)), ("c3", (5, 1)), ("c4", (5, 3)), ("c5", (4, 2)), ("c6", (6, 1))),
        (("c1", (4, 1)), ("c5", (4, 2)), ("c3", (5, 1)), ("c2", (5, 2)), ("c4", (5, 3)), ("c6", (6, 1))),
    ),
    # apache/pulsar#24634 added the test; read in the 4.x copy. Positions 1:1, 1:1, 1:2 are in order: no sort.
    RecentlyJoinedSortVector(
        "PersistentStickyKeyDispatcherMultipleConsumersClassicTest.testSkipSortRecentlyJoinedConsumersIfNotNeeded",
        ("3.0.14", "3.0.17", "3.3.9", "4.0.7", "4.0.14", "4.1.1", "4.1.3"),
        (("c1", (1, 1)), ("c2", (1, 1)), ("c3", (1, 2))),
        (("c1", (1, 1)), ("c2", (1, 1)), ("c3", (1, 2))),
        sorts=0,
    ),
)  # fmt: skip
