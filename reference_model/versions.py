"""Pulsar versions and the behaviour changes between them.

The model is faithful *per version*: a rule that changed in Apache Pulsar is a :class:`Fix` with the
releases that first carried it, and model code asks ``version.has(FIX)`` instead of comparing numbers.

A version written without a patch number (``"4.0"``) means the newest release of that line: what a user
running "Pulsar 4.0" today has.  Give the patch (``"4.0.2"``, ``"3.0.6"``) to model an older release.

This module is the one place for version facts: :data:`RELEASES` (every release line and its newest patch),
and :data:`GATES` (every version-dependent behaviour of the model, with the PR that introduced it and the first
release of each line that shipped it).  ``docs/model.md`` lists the same gates; a test keeps the two equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import total_ordering

from reference_model.errors import UnknownVersion

__all__ = [
    "CLASSIC_RECENTLY_JOINED_SORTED",
    "CLASSIC_REMOVED",
    "CLASSIC_REPLAY_FILTER",
    "CLASSIC_REPLAY_PRECEDENCE_AFTER_READ",
    "CLASSIC_SKIP_JOINERS_WHILE_REWIND_PENDING",
    "CLASSIC_SORT_CHECKS_LAST_TWO",
    "CLASSIC_UNSELECTED_TO_REPLAY",
    "CONSISTENT_HASHING_NAME_INDEX",
    "CONSISTENT_HASHING_NUL_SEPARATOR",
    "CONSISTENT_HASHING_REMOVE_BY_IDENTITY",
    "DEDUP_CHUNKS_JUDGED_AT_LAST",
    "DEDUP_INACTIVE_PRODUCERS_ONLY_WHEN_ENABLED",
    "DEDUP_PURGE_KEEPS_UNEXPIRED_MARKS",
    "DEDUP_REPLICATED_BY_SOURCE_POSITION",
    "DEDUP_SNAPSHOT_AFTER_REPLAY",
    "DEDUP_SYSTEM_TOPICS_EXCLUDED",
    "DEFAULT_VERSION",
    "DRAINING_REASSIGNMENT_FIX",
    "GATES",
    "KNOWN_LINES",
    "LOOKAHEAD_ONLY_WITH_MORE_ENTRIES",
    "MIN_MODEL_VERSION",
    "MIN_SELECTOR_VERSION",
    "NON_PERSISTENT_FLOW_CONTROL",
    "NO_KEY_FALLBACK",
    "OUT_OF_ORDER_REPLAY_FILTERED",
    "PIP_379",
    "PIP_379_REPLAY_FILTER_FIX",
    "PLACED_FIXES",
    "PROPOSED_FIXES",
    "REDELIVERY_COUNT_ON_REQUEST_ONLY",
    "RELEASES",
    "REPLICATED_SNAPSHOT_CACHE_BY_DISTANCE",
    "REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT",
    "REWIND_BEFORE_REPLAY_READ",
    "SLOW_SOCKET_DOES_NOT_STALL_OTHERS",
    "STATS_RANGES_BY_CONSUMER",
    "STICKY_GAP_FIX",
    "Fix",
    "Placement",
    "ProposedFix",
    "PulsarVersion",
    "check_released",
    "has_classic_dispatcher",
    "newest_patch",
    "parse_version",
    "with_backports",
]

#: Every release line the model knows, with its newest released patch.  Read from Apache Pulsar's release notes
#: (apache/pulsar-site ``release-notes/versioned/pulsar-X.Y.Z.md``, newest snapshot read 2026-11-29; no 3.0.18,
#: 3.3.10, 4.0.15, 4.1.4, 4.2.6, 4.3.0 or 5.0.1 notes exist there): 3.0 ends at 3.0.17 (``Release 3.0.17``,
#: 2026-05-12), 3.3 at 3.3.9 (2025-09-24, end of life), 4.0 at 4.0.14 (notes dated 2026-10-05), 4.1 at 4.1.3 (notes
#: dated 2026-02-19), 4.2 at 4.2.5 (4.2.2 2026-06-08, 4.2.3 2026-07-06, 4.2.4 2026-08-03; 4.2.5's notes repeat
#: 4.2.4's date but list 4.0.14's fixes, among them #26677, opened 2026-09-21), 5.0 at 5.0.0 (2026-10-05, after the
#: milestones 5.0.0-M1 2026-06-23 and 5.0.0-M2 2026-09-17, whose changes ``pulsar-5.0.0.md`` includes; the next LTS
#: line, 4.3.0 renamed 5.0.0-M1).  A milestone is not a release the model reproduces.  A newer release is refused
#: until added here.
RELEASES: dict[tuple[int, int], int] = {
    (2, 6): 4, (2, 7): 5, (2, 8): 4, (2, 9): 5, (2, 10): 6, (2, 11): 4,
    (3, 0): 17, (3, 1): 3, (3, 2): 4, (3, 3): 9,
    (4, 0): 14, (4, 1): 3, (4, 2): 5,
    (5, 0): 0,
}  # fmt: skip
#: Release lines the model has rules for (major, minor).
KNOWN_LINES: tuple[tuple[int, int], ...] = tuple(RELEASES)

_VERSION_RE = re.compile(r"^(?:pulsar-|v)?(\d+)\.(\d+)(?:\.(\d+))?$")


@total_ordering
@dataclass(frozen=True, slots=True)
class PulsarVersion:
    """A Pulsar release, or with ``patch=None`` the newest release of a line."""

    major: int
    minor: int
    patch: int | None = None
    #: names of gates (:class:`Fix`) this release is run with although it does not carry them: a backport, what
    #: the release would do with that one fix (``conformance.generated.attribution``); empty for every real release
    backports: frozenset[str] = frozenset()

    @property
    def line(self) -> tuple[int, int]:
        return (self.major, self.minor)

    def _key(self) -> tuple[int, int, float]:
        return (self.major, self.minor, float("inf") if self.patch is None else float(self.patch))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, PulsarVersion):
            return NotImplemented
        return self._key() < other._key()

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        return self._key() >= (major, minor, float(patch))

    def has(self, fix: Fix) -> bool:
        """Whether this release carries ``fix``."""
        return fix.present_in(self)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}" + ("" if self.patch is None else f".{self.patch}")

    def __repr__(self) -> str:
        if self.backports:
            return f"with_backports(parse_version({str(self)!r}), {sorted(self.backports)!r})"
        return f"parse_version({str(self)!r})"


@dataclass(frozen=True, slots=True)
class Fix:
    """A behaviour change in Apache Pulsar and the first release of each line that carried it.

    A line not listed carries the change iff it is newer than every listed line (lines that reached their
    end of life before the change never got it).
    """

    name: str
    reference: str
    first_releases: tuple[str, ...]

    def present_in(self, version: PulsarVersion) -> bool:
        if self.name in version.backports:
            return True
        firsts = [parse_version(v) for v in self.first_releases]
        for first in firsts:
            if first.line == version.line:
                return version >= first
        return version.line > max(f.line for f in firsts)


def parse_version(text: str | PulsarVersion) -> PulsarVersion:
    """Parse ``"4.0"``, ``"3.0.7"``, ``"pulsar-3.3"`` or ``"v4.0.2"``; raise :class:`UnknownVersion` otherwise."""
    if isinstance(text, PulsarVersion):
        return text
    m = _VERSION_RE.match(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise UnknownVersion(
            f"Expected a Pulsar version like '4.0' or '3.0.7' but got {text!r}."
            f" Known release lines: {', '.join(f'{a}.{b}' for a, b in KNOWN_LINES)}."
        )
    major, minor = int(m.group(1)), int(m.group(2))
    patch = None if m.group(3) is None else int(m.group(3))
    if (major, minor) not in KNOWN_LINES:
        raise UnknownVersion(
            f"Pulsar version {text!r} is not a release line the model knows."
            f" Known release lines: {', '.join(f'{a}.{b}' for a, b in KNOWN_LINES)}."
        )
    return PulsarVersion(major, minor, patch)


def newest_patch(version: str | PulsarVersion) -> PulsarVersion:
    """The release ``version`` stands for: ``"4.0"`` -> ``4.0.14``; a version with a patch is itself."""
    v = parse_version(version)
    return v if v.patch is not None else PulsarVersion(v.major, v.minor, RELEASES[v.line], v.backports)


def check_released(version: str | PulsarVersion) -> PulsarVersion:
    """``version`` parsed, if the model reproduces that release (2.8.0 to the newest it knows); else one line.

    Raises :class:`UnknownVersion` for an unreleased patch (``3.0.99``) or a line older than 2.8.
    """
    v = parse_version(version)
    newest = RELEASES[v.line]
    if v.patch is not None and v.patch > newest:
        raise UnknownVersion(
            f"Pulsar {v} is not a release the model knows: the {v.major}.{v.minor} line ends at"
            f" {v.major}.{v.minor}.{newest} (add newer releases to reference_model.versions.RELEASES)."
        )
    if v < MIN_MODEL_VERSION:
        first, last = MIN_MODEL_VERSION, newest_patch(f"{max(RELEASES)[0]}.{max(RELEASES)[1]}")
        raise UnknownVersion(f"Pulsar {v} is older than the model reproduces: give a release from {first} to {last}.")
    return v


DEFAULT_VERSION = PulsarVersion(4, 0)


@dataclass(frozen=True, slots=True)
class ProposedFix:
    """A fix proposed for a bug that is open in Apache Pulsar: no release carries it, so no version gates it.

    A model broker applies one only when asked (``BrokerConfig.proposed_fixes``): a generated program that fails
    through an open bug is explained by the same program passing with that bug's proposed fix applied
    (:mod:`conformance.generated.attribution`), as a fixed bug is explained by the release that fixed it.
    """

    name: str
    reference: str


#: apache/pulsar#10662 (closed unmerged; the bug is open as #23803): ``readEntriesComplete`` drops the entries of a
#: *replay* read too, not only of a normal read, when every consumer left while it was in flight
#: (``shouldRewindBeforeReadingOrReplaying``), then rewinds; without it the replay read is dispatched and the
#: rewind reads the same entries again.
REWIND_BEFORE_REPLAY_READ = ProposedFix("rewind before dispatching a replay read", "apache/pulsar#10662")
#: every proposed fix the model can apply, by reference
PROPOSED_FIXES: dict[str, ProposedFix] = {f.reference: f for f in (REWIND_BEFORE_REPLAY_READ,)}

#: Consistent-hashing ring keys get a NUL separator: ``name + "\0" + i`` (was ``name + i``).
CONSISTENT_HASHING_NUL_SEPARATOR = Fix("ring key NUL separator", "apache/pulsar#22053", ("3.0.3", "3.1.3", "3.2.1"))
#: Ring keys carry the consumer-name index; one consumer per ring point (was a list, ``hash % size``).
CONSISTENT_HASHING_NAME_INDEX = Fix("ring key consumer-name index", "apache/pulsar#23327", ("3.0.7", "3.3.2"))
#: PIP-379: draining hashes dispatcher, 65535-slot hash range, no-key fallback ``producerName-sequenceId``.
PIP_379 = Fix("PIP-379 draining hashes", "apache/pulsar#23352", ("4.0.0",))
#: Key-less messages hash ``producerName-sequenceId`` instead of ``NONE_KEY`` (``Commands.resolveStickyKey``).
NO_KEY_FALLBACK = Fix("no-key fallback producerName-sequenceId", "apache/pulsar#23219", ("4.0.0",))
#: The non-persistent Key_Shared dispatcher sends only to a consumer with permits and drops the rest (before it,
#: it sent every message to its key's consumer whatever its permits). On branch-2.8 before Release 2.8.1, and in
#: 2.9.0 (read in ascentstream/pulsar: commits bd5f75f6f3 on branch-2.8 and 5835fd23e5).
NON_PERSISTENT_FLOW_CONTROL = Fix("non-persistent Key_Shared respects flow control", "apache/pulsar#11692", ("2.8.1",))
#: Oldest release whose sticky-key selectors the model reproduces: 2.8.0.  What changed since is gated: the
#: consistent-hashing ring removed every consumer sharing the leaving consumer's name before 2.9.3
#: (:data:`CONSISTENT_HASHING_REMOVE_BY_IDENTITY`), and stats were keyed by consumer name before 2.8.2 / 2.9.0
#: (:data:`STATS_RANGES_BY_CONSUMER`).  2.6 and 2.7 are not reproduced: their classic dispatcher differs in more
#: than the model gates (docs/model.md).
MIN_SELECTOR_VERSION = PulsarVersion(2, 8, 0)
#: Oldest release the model (``ModelBroker``, the ``model:VERSION`` target) reproduces.
MIN_MODEL_VERSION = MIN_SELECTOR_VERSION
#: Classic dispatcher re-sorts recently joined consumers by position after each join, when the last two are out of
#: order (``sortRecentlyJoinedConsumersIfNeeded``); before it an out-of-order map could stall the subscription for
#: good. As first shipped the check compared the wrong pair (see :data:`CLASSIC_SORT_CHECKS_LAST_TWO`).
#: The PR carries the release/3.0.9, release/3.3.4 and release/4.0.2 labels.
CLASSIC_RECENTLY_JOINED_SORTED = Fix(
    "recently joined consumers sorted", "apache/pulsar#23795", ("3.0.9", "3.3.4", "4.0.2")
)
#: PIP-379 replay filter blocks every later position of a hash blocked earlier in the same pass.
PIP_379_REPLAY_FILTER_FIX = Fix("replay filter blocks hash for the pass", "apache/pulsar#23874", ("4.0.3",))
#: STICKY selector no longer selects slots in the gaps between one consumer's ranges.
STICKY_GAP_FIX = Fix("sticky selector gaps", "apache/pulsar#24730", ("3.0.14", "3.3.9", "4.0.7", "4.1.1"))
#: Replicated-subscription snapshot cache keeps snapshots spread by distance (was: newest N).
#: Release notes (apache/pulsar-site ``pulsar-4.0.9.md`` and ``pulsar-4.1.3.md``, both 2026-02-19) list #25044: it
#: shipped in 4.0.9 and 4.1.3 as well as 4.2.0.  ``ReplicatedSubscriptionSnapshotCacheTest.testSnapshotCachePruning``
#: changed with it (``advancedMarkDeletePosition(2:2)`` gives snapshot-1, was snapshot-2).
REPLICATED_SNAPSHOT_CACHE_BY_DISTANCE = Fix(
    "snapshot cache by distance", "apache/pulsar#25044", ("4.0.9", "4.1.3", "4.2.0")
)
#: A hash that comes back to the consumer it drains at releases that consumer's references at once (the "ADD"
#: operation of ``registerDrainingHashes``). Without it the entry keeps its references until a dispatch clears it
#: lazily, a later move of the hash adds the same pending entries again, the reference count never returns to 0
#: and the hash stays blocked (apache/pulsar#23845).
#: Releases confirmed from the release notes in apache/pulsar-site (``release-notes/versioned/pulsar-4.0.7.md`` and
#: ``pulsar-4.1.1.md``, both dated 2025-09-27, list #24736; the first attempt, #24732 on branch-4.0, was superseded
#: by it). Sure for 4.0.7 and 4.1.1; 4.0.6 and 4.1.0 do not list it. The 3.x lines have no PIP-379 dispatcher.
DRAINING_REASSIGNMENT_FIX = Fix(
    "draining refcount released when a hash returns", "apache/pulsar#24736", ("4.0.7", "4.1.1")
)
#: While no replicated-subscription snapshot ever completed, a pending one is not retried before it times out
#: (was: a new SNAPSHOT_REQUEST every tick). Releases confirmed from the release notes in apache/pulsar-site:
#: ``pulsar-3.0.10.md`` (2025-02-27), ``pulsar-3.3.5.md`` (2025-02-27) and ``pulsar-4.0.2.md`` (2025-01-20) list
#: #23839 (the PR carries only the release/3.0.10 and release/3.3.5 labels; the 4.0 cherry-pick is in 4.0.2's notes).
#: Sure for all three; 4.1 branched from master after the merge.
REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT = Fix(
    "snapshot request retried only after timeout", "apache/pulsar#23839", ("3.0.10", "3.3.5", "4.0.2")
)

#: A disconnecting producer is marked inactive (for the purge) only while deduplication is enabled; before, every
#: disconnect was recorded, and short-lived producers filled the map while deduplication was off (apache/pulsar#21192).
#: The same check in ``producerRemoved`` makes the recovery's calls no-ops (the status is ``Recovering``): before,
#: a recovery marked every producer it recovered inactive at the recovery time (apache/pulsar#12493), so one that
#: never came back after a restart was purged; from #21193 it stays until it reconnects and leaves again. And a purge
#: while deduplication is off clears every mark (before: only the expired ones), as the disabled part of
#: ``MessageDuplicationTest.testInactiveProducerRemove`` expects. The PR carries the release/3.0.3 and release/3.1.1
#: labels; issue apache/pulsar#21763 (the map growing on 3.0.2) was answered with it.
DEDUP_INACTIVE_PRODUCERS_ONLY_WHEN_ENABLED = Fix(
    "inactive producers recorded only when deduplication is on", "apache/pulsar#21193", ("3.0.3", "3.1.1")
)

#: A purge of inactive producers removes the marks of the producers it forgets only, and snapshots after forgetting
#: any (before: it removed every mark, expired or not, so a producer not yet expired at the first purge after its
#: disconnect was never forgotten, and it took no snapshot). apache/pulsar#15206; release notes ``pulsar-2.7.5.md``,
#: ``pulsar-2.9.3.md`` and ``pulsar-2.10.1.md`` list it, the PR carries the release/2.8.4 label;
#: ``MessageDuplicationTest.testInactiveProducerRemove`` expects the 3 marks after the first purge since then.
DEDUP_PURGE_KEEPS_UNEXPIRED_MARKS = Fix(
    "purge keeps unexpired inactivity marks", "apache/pulsar#15206", ("2.7.5", "2.8.4", "2.9.3", "2.10.1")
)
#: Deduplication judges a chunked message once, at its last chunk (the earlier chunks are NOT_DUP and record
#: nothing); before, every chunk was judged as a message of its own under the message's sequence id, so the second
#: chunk came back as a duplicate and the message could never be completed (apache/pulsar#20948). Release notes
#: (apache/pulsar-site ``pulsar-2.11.3.md``, ``pulsar-3.0.2.md``, ``pulsar-3.1.1.md``) list it; the PR carries the
#: release/2.10.6 label.
DEDUP_CHUNKS_JUDGED_AT_LAST = Fix(
    "chunked messages judged at their last chunk", "apache/pulsar#20948", ("2.10.6", "2.11.3", "3.0.2", "3.1.1")
)
#: The snapshot monitor (``checkDeduplicationSnapshot`` every ``brokerDeduplicationSnapshotFrequencyInSeconds``)
#: runs whatever ``brokerDeduplicationEnabled`` says (before: only when it was true, so a topic with deduplication
#: on by namespace or topic policy never took time-based snapshots), and a recovery counts the entries it replayed
#: and snapshots when they reach ``brokerDeduplicationEntriesInterval`` (before: the counter restarted at 0 and no
#: snapshot was taken). apache/pulsar#22479; release notes ``pulsar-3.0.5.md`` and ``pulsar-3.2.3.md`` (2024-05-17)
#: list it, 3.3.0 branched after the merge; the release/2.10.7 and release/2.11.5 labels name releases past the
#: lines' last (2.10.6, 2.11.4).
DEDUP_SNAPSHOT_AFTER_REPLAY = Fix(
    "snapshot monitor always on, snapshot after replay", "apache/pulsar#22479", ("3.0.5", "3.2.3", "3.3.0")
)
#: System topics (``__change_events`` and the transaction topics) never deduplicate, whatever the broker, namespace
#: or topic policy says (``SystemTopic.isDeduplicationEnabled`` returns false); before, they followed the policies
#: like any topic. apache/pulsar#22582 (``testMessageDeduplicationShouldNotWorkForSystemTopic`` came with it);
#: release notes ``pulsar-3.0.5.md`` and ``pulsar-3.2.3.md`` list it, 3.3.0 branched after the merge.
DEDUP_SYSTEM_TOPICS_EXCLUDED = Fix(
    "system topics never deduplicated", "apache/pulsar#22582", ("3.0.5", "3.2.3", "3.3.0")
)
#: Messages a replicator writes are deduplicated by their position in the source cluster (ledger and entry id,
#: kept per replicator as ``<replicator>_LID`` / ``_EID``) when both brokers support it; before, by the original
#: producer's name and sequence id, so a message of a producer in another cluster that shares a name and ids with
#: a local producer was dropped as a duplicate (geo-replication lost it). apache/pulsar#23697; release notes
#: ``pulsar-3.0.11.md`` (2025-04-09), ``pulsar-3.3.5.md`` and ``pulsar-4.0.3.md`` (both 2025-02-27) list it; 4.1
#: branched after the merge.
DEDUP_REPLICATED_BY_SOURCE_POSITION = Fix(
    "replicated messages deduplicated by source position", "apache/pulsar#23697", ("3.0.11", "3.3.5", "4.0.3")
)
#: Classic dispatcher: a consumer joining while a cursor rewind waits for an in-flight read (every consumer left
#: while a read was in flight) is not recorded as recently joined; before, it recorded the read position from before
#: the rewind, and a later joiner a lower one, so the map went out of order (the cause of #23795's stall).
#: The PR carries the release/3.0.9, release/3.3.4 and release/4.0.2 labels (same releases as #23795).
CLASSIC_SKIP_JOINERS_WHILE_REWIND_PENDING = Fix(
    "no recently joined entry while a rewind is pending", "apache/pulsar#23802", ("3.0.9", "3.3.4", "4.0.2")
)
#: ``sortRecentlyJoinedConsumersIfNeeded`` compares the last two entries. As shipped with #23795 its loop lost the
#: previous entry on the second step: with two entries it never sorted, with three it compared the third with the
#: second the wrong way round (sorting an ordered map, not sorting a disordered one), from four on it was right.
#: Releases: the release notes of 4.0.7 and 4.1.1 (apache/pulsar-site ``pulsar-4.0.7.md``, ``pulsar-4.1.1.md``, both
#: 2025-09-27) list #24634; the PR carries the release/3.0.14, release/3.3.9 and release/4.0.7 labels, but the
#: 3.0.14 and 3.3.9 notes do not list it, so those two rest on the labels alone. 4.1.0 does not have it.
CLASSIC_SORT_CHECKS_LAST_TWO = Fix(
    "recently joined sort checks the last two", "apache/pulsar#24634", ("3.0.14", "3.3.9", "4.0.7", "4.1.1")
)
#: Classic dispatcher: the replay positions are filtered before they are read (``filterOutEntriesWillBeDiscarded``:
#: per consumer, what its permits and the recently-joined rule let it take now), and a normal read is issued only
#: if some consumer needs one (``hasConsumersNeededNormalRead``: a consumer not blocked, not recently joined, with
#: permits); before, every replay position was read and what could not be sent went back, and a normal read
#: followed whenever the replay queue gave nothing. Releases: ``pulsar-3.0.5.md`` (2024-05-17) lists #22245; it was
#: merged to master in March 2024, so 3.3.0 has it. The PR carries the release/2.10.7 and release/2.11.5 labels,
#: but neither release was made (2.10 ends at 2.10.6, 2.11 at 2.11.4), and no 3.1 or 3.2 label: those lines never
#: shipped it.
CLASSIC_REPLAY_FILTER = Fix(
    "replay filtered before reading, normal read only when needed", "apache/pulsar#22245", ("3.0.5", "3.3.0")
)
#: The consistent-hashing ring removes the leaving consumer itself from its points; before, it removed every
#: consumer with the leaving consumer's *name* (``removeIf(c -> c.consumerName().equals(...))``), so consumers
#: sharing a name lost their ring points when one of them left (apache/pulsar#10750). The PR carries the
#: release/2.9.3 label only: the 2.8 line never got it.
CONSISTENT_HASHING_REMOVE_BY_IDENTITY = Fix("ring removal by consumer, not by name", "apache/pulsar#13991", ("2.9.3",))
#: Topic stats give each consumer its own ``keyHashRanges``; before, the selectors returned ranges keyed by consumer
#: name, so consumers sharing a name each showed all of their ranges together. Labels: release/2.8.2; merged
#: 2021-09-27, before 2.9.0 branched.
STATS_RANGES_BY_CONSUMER = Fix("stats ranges keyed by consumer, not name", "apache/pulsar#12212", ("2.8.2", "2.9.0"))
#: Classic dispatcher: an entry whose hash has no consumer (a STICKY range nobody owns) goes to the replay queue;
#: before, a normal read released it and never read it again, so it stayed unacknowledged and undelivered until
#: the topic was reloaded ("stuck subscription" after STICKY consumers restarted). Labels: release/2.8.3,
#: release/2.9.3.
CLASSIC_UNSELECTED_TO_REPLAY = Fix("unselected entries go to replay", "apache/pulsar#14014", ("2.8.3", "2.9.3"))
#: The redelivery count is raised only by a redelivery request (``redeliverUnacknowledgedMessages``, both forms:
#: ``incrementAndGetRedeliveryCount``) and read at send (``getRedeliveryCount``).  Before (apache/pulsar#5881),
#: every send of a position the tracker holds raised it (``PulsarCommandSenderImpl``: ``contains`` then
#: ``incrementAndGet``), and positions entered the tracker at 0 (``addIfAbsent``) when a consumer left with them
#: pending and on a per-message redelivery (a nack, an ack timeout), not on "redeliver all": so a close or crash
#: raised the count at the next send, and a redeliver of a message never counted did not.  apache/pulsar#17060
#: (Aug 2022) is on branch-3.0 and later, not on branch-2.10 (ascentstream/pulsar): first in 2.11.0.
REDELIVERY_COUNT_ON_REQUEST_ONLY = Fix(
    "redelivery count raised only by redelivery requests", "apache/pulsar#17060", ("2.11.0",)
)
#: A read that completes after something older was queued for replay while it was in flight (a consumer closed)
#: is discarded (normal read: its entries to the replay queue) and reading starts again, so the older messages go
#: first (apache/pulsar#12885). Labels: release/2.8.3, release/2.9.1.
CLASSIC_REPLAY_PRECEDENCE_AFTER_READ = Fix(
    "replay precedence after an in-flight read", "apache/pulsar#12890", ("2.8.3", "2.9.1")
)
#: PIP-379 dispatcher: a look-ahead triggered while every entry of a round was filtered skips the next replay only
#: while the cursor has more entries (``cursor.hasMoreEntries()``), with ordered delivery; out-of-order delivery kept
#: engaging it unconditionally until :data:`OUT_OF_ORDER_REPLAY_FILTERED`. Before, the skipped replay at the end of
#: the topic left deliverable replay-queue messages behind a read that waits for new entries (issue #21554,
#: ``testLookAheadNotEngagedWhenCursorHasNoMoreEntries``). Releases: ``Release 4.0.13`` and ``Release 4.2.4``
#: (ascentstream/pulsar, 2026-07-26) contain the branch-4.0 and branch-4.2 cherry-picks; the 4.2.4 notes list it.
#: 4.1 ended (4.1.3) before the merge (2026-07-25); the 3.x lines have no PIP-379 dispatcher. 5.0: the 5.0.0-M2
#: notes (``pulsar-5.0.0-M2.md``, 2026-09-17) list it, so 5.0.0 has it.
LOOKAHEAD_ONLY_WITH_MORE_ENTRIES = Fix(
    "look-ahead only while the cursor has more entries", "apache/pulsar#26236", ("4.0.13", "4.2.4", "5.0.0")
)
#: PIP-379 dispatcher with ``allowOutOfOrderDelivery``: the replay queue records each position's sticky-key hash and
#: the replay filter skips positions whose consumer has no permits (or no consumer), blocking no hash for ordering;
#: positions without a hash still pass; look-ahead engages only while the cursor has more entries, as ordered
#: delivery since :data:`LOOKAHEAD_ONLY_WITH_MORE_ENTRIES`. Before, every replay position was read in order, so
#: positions of a consumer without permits spent the read budget, dispatch re-queued them, the look-ahead skipped
#: the next replay and, at the end of the topic, the other consumers' replayed messages starved
#: (``testOutOfOrderReplayFilterDoesNotSpendReadBudgetOnConsumerWithoutPermits``,
#: ``...IncludesPositionWithoutStickyKeyHash``). Release notes ``pulsar-4.0.14.md`` and ``pulsar-4.2.5.md`` list it
#: (merged 2026-08-17, after 4.0.13 and 4.2.4); so do the 5.0.0-M2 notes, so 5.0.0 has it.
OUT_OF_ORDER_REPLAY_FILTERED = Fix(
    "out-of-order replay filtered by permits", "apache/pulsar#26268", ("4.0.14", "4.2.5", "5.0.0")
)
#: A consumer whose connection is not writable (its client stopped reading its socket, so the broker's writes back
#: up) gets nothing more until it is writable again, and the dispatcher reads on as soon as any consumer's write of a
#: round completes. Before, the Key_Shared dispatchers (both; since apache/pulsar#4442, 2.4) kept writing to such a
#: consumer while it had permits and asked for the next read only once every consumer's write of the round had
#: completed (``remainingConsumersToFinishSending`` / ``keyNumbers``), so one stalled socket stopped dispatch to every
#: consumer until an unrelated event (a ``Flow``, the mark-delete position moving, a membership change) read again
#: (``KeySharedSlowConsumerTest.testSlowKeySharedSocketDoesNotBlockFastConsumer``). apache/pulsar#26630 (writability:
#: no dispatch to an unwritable channel, a wake-up when it becomes writable) and #26635 (no all-consumer completion
#: barrier), both merged 2026-09-17: the 5.0.0 notes (``pulsar-5.0.0.md``, 2026-10-05) list both; the 4.0.14 and 4.2.5
#: notes list neither, and no later 4.x release exists.
SLOW_SOCKET_DOES_NOT_STALL_OTHERS = Fix(
    "a stalled consumer socket stalls no other consumer", "apache/pulsar#26635", ("5.0.0",)
)
#: PIP-379's last step: the classic Shared and Key_Shared dispatchers are removed
#: (``subscriptionKeySharedUseClassicPersistentImplementation`` selects nothing any more), so a 5.0 broker runs
#: the PIP-379 dispatcher only. apache/pulsar#26687; the 5.0.0 notes (``pulsar-5.0.0.md``, 2026-10-05) list it.
#: The model refuses ``implementation="classic"`` (``model:5.0:classic``) on a release that has it.
CLASSIC_REMOVED = Fix("classic Key_Shared dispatcher removed", "apache/pulsar#26687", ("5.0.0",))

#: Every version gate of the model, in one table (``docs/model.md`` §1 lists the same, a test keeps them equal).
GATES: tuple[Fix, ...] = (
    CONSISTENT_HASHING_NUL_SEPARATOR,
    CONSISTENT_HASHING_NAME_INDEX,
    PIP_379,
    NO_KEY_FALLBACK,
    NON_PERSISTENT_FLOW_CONTROL,
    CLASSIC_RECENTLY_JOINED_SORTED,
    PIP_379_REPLAY_FILTER_FIX,
    STICKY_GAP_FIX,
    REPLICATED_SNAPSHOT_CACHE_BY_DISTANCE,
    DRAINING_REASSIGNMENT_FIX,
    REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT,
    DEDUP_INACTIVE_PRODUCERS_ONLY_WHEN_ENABLED,
    DEDUP_PURGE_KEEPS_UNEXPIRED_MARKS,
    DEDUP_CHUNKS_JUDGED_AT_LAST,
    DEDUP_SNAPSHOT_AFTER_REPLAY,
    DEDUP_SYSTEM_TOPICS_EXCLUDED,
    DEDUP_REPLICATED_BY_SOURCE_POSITION,
    CLASSIC_SKIP_JOINERS_WHILE_REWIND_PENDING,
    CLASSIC_SORT_CHECKS_LAST_TWO,
    CLASSIC_REPLAY_FILTER,
    CONSISTENT_HASHING_REMOVE_BY_IDENTITY,
    STATS_RANGES_BY_CONSUMER,
    CLASSIC_UNSELECTED_TO_REPLAY,
    CLASSIC_REPLAY_PRECEDENCE_AFTER_READ,
    REDELIVERY_COUNT_ON_REQUEST_ONLY,
    LOOKAHEAD_ONLY_WITH_MORE_ENTRIES,
    OUT_OF_ORDER_REPLAY_FILTERED,
    CLASSIC_REMOVED,
    SLOW_SOCKET_DOES_NOT_STALL_OTHERS,
)


def with_backports(version: str | PulsarVersion, names: Iterable[str]) -> PulsarVersion:
    """``version`` run with the gates ``names`` (:data:`GATES`, by :attr:`Fix.name`) as if backported; one line for
    an unknown name, and PIP-379 is refused (it is a dispatcher of its own, not a fix a release could take)."""
    v = parse_version(version)
    known = {g.name: g for g in GATES if g is not PIP_379}
    for name in names:
        if name not in known:
            raise UnknownVersion(f"Unknown gate {name!r} to backport. Known: {', '.join(sorted(known))}.")
    return PulsarVersion(v.major, v.minor, v.patch, v.backports | frozenset(names))


def has_classic_dispatcher(version: str | PulsarVersion) -> bool:
    """Whether a broker of ``version`` can run the classic Key_Shared dispatcher (every release before 5.0)."""
    return not parse_version(version).has(CLASSIC_REMOVED)


@dataclass(frozen=True, slots=True)
class Placement:
    """A Pulsar fix placed by release: the first release of each line that carries it, and whether the model does.

    ``gate`` is the :class:`Fix` the model asks for it, or ``None`` when the model does not model what it changed;
    then ``missing`` says what the model lacks (a placed fix is never silently "the same on every release").
    Releases come from the release notes (apache/pulsar-site) and the ``Release X.Y.Z`` commits of
    ascentstream/pulsar (a mirror of apache/pulsar whose history ends 2026-08-20).
    """

    reference: str
    title: str
    area: str
    releases: tuple[str, ...]
    gate: Fix | None = None
    missing: str = ""


#: Every fix since 4.0.10 / 4.2.1 that touches Key_Shared, deduplication, replicated subscriptions or the cursor,
#: placed by release (``docs/model.md`` §1 lists the same; a test keeps them equal). None reached 3.0 (3.0.17,
#: 2026-05-12, is the last 3.0 release and branch-3.0 has none of them), 3.3 (ended at 3.3.9) or 4.1 (ended at 4.1.3,
#: before every merge here). Every one is in 5.0.0: the notes of 5.0.0-M1 (2026-06-23: #25581, #25589, #25592,
#: #25998), 5.0.0-M2 (2026-09-17: #26002, #26106, #26119, #26236, #26268, #26289, #26422, #26471, #26474, #26505)
#: and 5.0.0 itself (2026-10-05: #26677, #26780) list them, and ``pulsar-5.0.0.md`` includes both milestones.
PLACED_FIXES: tuple[Placement, ...] = (
    Placement(
        "apache/pulsar#25581",
        "Decrement unacked counter when removeAllUpTo removes pending acks",
        "cursor",
        ("4.0.11", "4.2.2", "5.0.0"),
        missing=(
            "the consumer's unacked counter is not separate from its pending acks in the model (PendingAcks sums"
            " them), and its one path that moves the mark-delete position past pending entries (a replicated"
            " subscription's update from a remote cluster) lowers it on every release; no expiry, skip,"
            " clear-backlog or batch-index acknowledgement. The 4.2.2 PendingAcksMapTest methods (removeAllUpTo"
            " with its callback) are pinned against PendingAcks.remove_all_up_to"
        ),
    ),
    Placement(
        "apache/pulsar#25592",
        "Move pending acks cleanup to selected mark-delete callbacks",
        "cursor",
        ("4.0.11", "4.2.2", "5.0.0"),
        missing="message expiry, skip and clear-backlog are not modelled (the paths the cleanup moved to)",
    ),
    Placement(
        "apache/pulsar#25589",
        "Fix race in pending acks removal in redeliverUnacknowledgedMessages",
        "Key_Shared",
        ("4.0.11", "4.2.2", "5.0.0"),
        missing="a thread race: the model runs one event at a time, so the removal never interleaves",
    ),
    Placement(
        "apache/pulsar#25998",
        "Fix compacted read could be stuck forever or message loss due to cursor mark delete",
        "cursor",
        ("4.0.12", "4.2.3", "5.0.0"),
        missing="compaction and compacted reads are not modelled",
    ),
    Placement(
        "apache/pulsar#26002",
        "Fix geo-replication stuck after a failed publish to the remote cluster",
        "replicated subscriptions",
        ("4.0.12", "4.2.3", "5.0.0"),
        missing="a replicator's publish to the remote cluster never fails in the model",
    ),
    Placement(
        "apache/pulsar#26106",
        "Fix replication stall when a cursor rewind skips an in-flight read",
        "replicated subscriptions",
        ("4.0.13", "4.2.3", "5.0.0"),
        missing=(
            "the replicator's reads complete at once in the model (no read in flight to skip). The 4.2.3 notes list"
            " it; of the Release commits only 4.0.13's and 4.2.4's contain it"
        ),
    ),
    Placement(
        "apache/pulsar#26119",
        "Prevent completing replicated snapshot before marker publish",
        "replicated subscriptions",
        ("4.0.13", "4.2.4", "5.0.0"),
        missing=(
            "marker writes never fail and complete at once in the model, so a snapshot completes after its marker"
            " is written on every release (the fix: completion waits for the publish; a failed publish leaves it"
            " pending; a duplicate response writes no second marker)"
        ),
    ),
    Placement(
        "apache/pulsar#26236",
        "Fix Key_Shared delivery stall when look-ahead triggers at the end of the topic",
        "Key_Shared",
        ("4.0.13", "4.2.4", "5.0.0"),
        gate=LOOKAHEAD_ONLY_WITH_MORE_ENTRIES,
    ),
    Placement(
        "apache/pulsar#26268",
        "Prevent Key_Shared out-of-order replay starvation at the end of topic",
        "Key_Shared",
        ("4.0.14", "4.2.5", "5.0.0"),
        gate=OUT_OF_ORDER_REPLAY_FILTERED,
    ),
    Placement(
        "apache/pulsar#26677",
        "Bound classic Key_Shared dispatcher replay queue look-ahead",
        "Key_Shared",
        ("4.0.14", "4.2.5", "5.0.0"),
        missing=(
            "the classic dispatcher honours keySharedLookAheadMsgInReplayThresholdPerSubscription from it; the"
            " merged code was not read (the PR was open when the stored copy was taken, the mirror ends before"
            " the merge), so the model's classic dispatcher keeps reading past any replay-queue size on every"
            " release. 5.0.0's notes list it, but 5.0.0 also removes the classic dispatcher (#26687)"
        ),
    ),
    Placement(
        "apache/pulsar#26422",
        "Debit un-acked messages only when the consumer is actually removed",
        "Key_Shared",
        ("4.0.14", "4.2.5", "5.0.0"),
        missing=(
            "a consumer removed twice (consumerSet and consumerList out of step, #22270) debited the subscription's"
            " unacked count twice; the model removes a consumer once, so the count never goes negative on any"
            " release"
        ),
    ),
    Placement(
        "apache/pulsar#26471",
        "Prevent NPE when the last ACK races with sticky hash reassignment",
        "Key_Shared",
        ("4.0.14", "4.2.5", "5.0.0"),
        missing=(
            "a thread race in DrainingHashesTracker.reduceRefCount (an NPE, and a stale ack removing a replacement"
            " entry); the model's acknowledgement and reassignment never interleave"
        ),
    ),
    Placement(
        "apache/pulsar#26474",
        "Fix batch ACK index loss when recovering cursor from MetadataStore",
        "cursor",
        ("4.0.14", "4.2.5", "5.0.0"),
        missing="batch-index acknowledgement and the cursor's metadata-store recovery path are not modelled",
    ),
    Placement(
        "apache/pulsar#26505",
        "Prevent automatic TTL expiry from skipping reader messages",
        "cursor",
        ("4.0.14", "4.2.5", "5.0.0"),
        missing="message TTL and readers (non-durable cursors) are not modelled",
    ),
    Placement(
        "apache/pulsar#26780",
        "Preserve replicated subscription activity on activation",
        "replicated subscriptions",
        ("4.0.14", "4.2.5", "5.0.0"),
        missing=(
            "placed by the release notes only: the PR is in neither stored copy (issues corpus, mirror to"
            " 2026-08-20), so what it changed was not read; the model keeps no subscription activity timestamps"
            " (inactive-subscription expiry)"
        ),
    ),
    Placement(
        "apache/pulsar#26289",
        "Fix persistent throughput degradation caused by permit loss during frequent reconnects on Shared"
        " subscriptions",
        "Key_Shared",
        ("4.0.14", "4.2.5", "5.0.0"),
        missing=(
            "a permit race in the multiple-consumers dispatcher Key_Shared extends; the model's flow and removal"
            " never interleave, and it was not read further"
        ),
    ),
)
