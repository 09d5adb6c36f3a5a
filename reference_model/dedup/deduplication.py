"""Broker-side producer deduplication for one topic, as Apache Pulsar's ``MessageDeduplication`` does it.

Follows ``pulsar-broker/.../service/persistent/MessageDeduplication.java`` (master, 2025-26; the rules below
hold since 2.x except where noted) together with its callers ``PersistentTopic.publishMessage`` /
``addComplete`` / ``addFailed`` and ``Producer`` / ``ServerCnx.handleSend``.

Two maps per topic carry the whole decision:

* ``pushed[producer]``: the highest sequence id accepted for writing (updated *before* the write);
* ``persisted[producer]``: the highest sequence id durably written (updated when the write completes).

A send ``(sequence_id, highest_sequence_id)`` is a duplicate when ``sequence_id <= pushed``; it is a *sure*
duplicate (``DUP``) when also ``sequence_id <= persisted``, else ``UNKNOWN`` (an earlier copy is in flight).
A batch is judged by the ``sequence_id`` its ``CommandSend`` carries; the Java client sends the lowest and the
highest id of a batch, the C++/Python client only the first (see :mod:`reference_model.dedup.client_batching`).

The model is synchronous: a write either completes (:meth:`MessageDeduplication.on_persisted`) or fails
(:meth:`MessageDeduplication.on_write_failed`) when the broker says so, and a snapshot or a status change
takes effect at once. Time arrives as ``now_ns`` arguments; nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reference_model.dedup.config import DEDUP_CURSOR_NAME, DedupConfig
from reference_model.dedup.decision import DedupDecision, DedupSnapshot, DedupStatus, Position
from reference_model.errors import InvalidArgument
from reference_model.versions import (
    DEDUP_CHUNKS_JUDGED_AT_LAST,
    DEDUP_INACTIVE_PRODUCERS_ONLY_WHEN_ENABLED,
    DEDUP_PURGE_KEEPS_UNEXPIRED_MARKS,
    DEDUP_REPLICATED_BY_SOURCE_POSITION,
    DEDUP_SNAPSHOT_AFTER_REPLAY,
    DEFAULT_VERSION,
    PulsarVersion,
    parse_version,
)

__all__ = ["MessageDeduplication"]

_NS_PER_MS = 1_000_000


def check_int(name: str, value: object) -> int:
    """``value`` if it is an int (not a bool), else :class:`InvalidArgument` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"Expected an int for {name} but got {name}={value!r} (type={type(value).__name__}).")
    return value


def _check_position(name: str, value: object) -> Position:
    if (
        not isinstance(value, tuple)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise InvalidArgument(
            f"Expected a position (ledger_id, entry_id) for {name} but got {name}={value!r}; e.g. {name}=(0, 12)."
        )
    return (int(value[0]), int(value[1]))


def _format_position(position: Position | None) -> str | None:
    return None if position is None else f"{position[0]}:{position[1]}"


class MessageDeduplication:
    """The deduplication state of one persistent topic (Pulsar's ``MessageDeduplication``).

    Lifecycle, as the broker drives it:

    * a topic is created: ``MessageDeduplication(config)`` (status ``Initialized``), then
      :meth:`set_enabled` with the effective flag (:func:`~reference_model.dedup.effective_deduplication`);
    * a topic is loaded again after a broker restart: a fresh instance, then :meth:`recover` with the saved
      :meth:`snapshot` and the entries after it when deduplication is on, or ``set_enabled(False)`` when off;
    * per send: :meth:`is_duplicate`, then :meth:`on_persisted` or :meth:`on_write_failed`;
    * per producer: :meth:`producer_connected` (gives ``last_sequence_id``) and :meth:`producer_disconnected`;
    * timers: :meth:`purge_inactive` every ``config.purge_check_interval_ms`` and :meth:`take_timed_snapshot`
      every ``config.snapshot_frequency_ms``.
    """

    def __init__(
        self,
        config: DedupConfig = DedupConfig(),  # noqa: B008  (frozen, so shared safely)
        version: str | PulsarVersion = DEFAULT_VERSION,
    ) -> None:
        if not isinstance(config, DedupConfig):
            raise InvalidArgument(
                f"Expected a DedupConfig for config but got config={config!r} (type={type(config).__name__})."
            )
        self.config = config
        release = parse_version(version)
        #: before apache/pulsar#21193 (3.0.3 / 3.1.1) disconnects were recorded whatever the status, a recovery
        #: marked every producer it recovered inactive, and a purge while off dropped only the expired marks
        self._track_inactive_always = not release.has(DEDUP_INACTIVE_PRODUCERS_ONLY_WHEN_ENABLED)
        #: apache/pulsar#15206 (2.10.1): a purge keeps the marks that did not expire, and snapshots after forgetting
        self._purge_keeps_unexpired = release.has(DEDUP_PURGE_KEEPS_UNEXPIRED_MARKS)
        #: apache/pulsar#20948: only the last chunk of a chunked message is judged and recorded
        self._chunks_at_last = release.has(DEDUP_CHUNKS_JUDGED_AT_LAST)
        #: apache/pulsar#22479: a recovery counts what it replayed towards the next snapshot
        self._snapshot_after_replay = release.has(DEDUP_SNAPSHOT_AFTER_REPLAY)
        #: apache/pulsar#23697: replicated messages are judged by their source position (``isDuplicateReplV2``)
        self.replicated_by_source_position = release.has(DEDUP_REPLICATED_BY_SOURCE_POSITION)
        self._status = DedupStatus.INITIALIZED
        self._pushed: dict[str, int] = {}
        self._persisted: dict[str, int] = {}
        self._inactive_since_ns: dict[str, int] = {}
        self._snapshot_counter = 0
        self._last_snapshot_ns = 0
        # The pulsar.dedup cursor: None when it does not exist.
        self._cursor_position: Position | None = None
        self._cursor_properties: dict[str, int] = {}
        self._snapshots_taken = 0

    # ------------------------------------------------------------------ status

    @property
    def enabled(self) -> bool:
        """Whether deduplication is in effect (``status == "Enabled"``); otherwise every send is NOT_DUP."""
        return self._status is DedupStatus.ENABLED

    @property
    def status(self) -> str:
        """Pulsar's ``deduplicationStatus`` name: ``Initialized``, ``Disabled``, ``Enabled``, ..."""
        return self._status.value

    def set_enabled(self, enabled: bool, *, now_ns: int, cursor_position: Position | None = None) -> None:
        """Apply the effective flag, as ``checkStatus()`` does after a policy or setting change.

        Disabling deletes the ``pulsar.dedup`` cursor and clears both maps (a later enable starts afresh, so
        ids sent before are accepted again). Inactive-producer marks survive until the next purge, which clears
        them while disabled (``testMessageDeduplication``).

        Enabling opens the cursor. A new cursor starts at the end of the topic, so nothing is replayed and the
        maps start empty: pass ``cursor_position``, the topic's last position (``None`` for an empty topic),
        so that a later :meth:`recover` replays only what was written after the enable. To load a topic whose
        cursor already exists (a restart), use :meth:`recover` instead.
        """
        if not isinstance(enabled, bool):
            raise InvalidArgument(
                f"Expected a bool for enabled but got enabled={enabled!r} (type={type(enabled).__name__})."
            )
        check_int("now_ns", now_ns)
        if cursor_position is not None:
            cursor_position = _check_position("cursor_position", cursor_position)
        if enabled:
            if self._status is DedupStatus.ENABLED:
                return
            self._reset_state()
            self._cursor_position = cursor_position if cursor_position is not None else (-1, -1)
            self._cursor_properties = {}
            self._status = DedupStatus.ENABLED
        else:
            if self._status is DedupStatus.DISABLED:
                return
            self._pushed.clear()
            self._persisted.clear()
            self._snapshot_counter = 0
            self._cursor_position = None
            self._cursor_properties = {}
            self._status = DedupStatus.DISABLED

    def _reset_state(self) -> None:
        self._pushed.clear()
        self._persisted.clear()
        self._inactive_since_ns.clear()
        self._snapshot_counter = 0

    # ------------------------------------------------------------------ producers

    def producer_connected(self, name: str) -> int:
        """A producer connected: it is active again; returns ``last_sequence_id`` for ``ProducerSuccess``.

        The answer is the *pushed* id (``getLastPublishedSequenceId``), -1 for a producer the topic does not
        know or when deduplication is off (the maps are empty then). For a C++/Python producer that batches it
        is the first id of its last batch (:func:`~reference_model.dedup.client_batching.python_batch_send_ids`).
        """
        if self.enabled or self._track_inactive_always:
            self._inactive_since_ns.pop(name, None)
        return self._pushed.get(name, -1)

    def producer_disconnected(self, name: str, *, now_ns: int) -> None:
        """A producer disconnected: remember since when, so :meth:`purge_inactive` can forget it later.

        A no-op unless enabled (``producerRemoved`` checks ``isEnabled()``, apache/pulsar#21193 from 3.0.3 / 3.1.1;
        before, every disconnect was recorded): recovery therefore does not mark recovered producers inactive,
        and a producer that never reconnects after a restart is never purged.
        """
        check_int("now_ns", now_ns)
        if self.enabled or self._track_inactive_always:
            self._inactive_since_ns[name] = now_ns

    def purge_inactive(self, *, now_ns: int) -> None:
        """Forget producers disconnected for longer than the inactivity timeout (``purgeInactiveProducers``).

        Forgotten producers leave both maps (a reconnect gets -1 and old ids are accepted again); if any was
        forgotten, a snapshot is taken at the cursor's current position, so the restart state forgets them too.
        While not enabled, the purge clears every inactivity mark (from apache/pulsar#21193; before, it ran as when
        enabled, without the snapshot). Before apache/pulsar#15206 (2.10.1) a purge dropped *every* mark, expired
        or not, so a producer whose mark was not yet expired at the first purge was never forgotten, and no
        snapshot was taken.
        """
        check_int("now_ns", now_ns)
        if not self.enabled and not self._track_inactive_always:
            self._inactive_since_ns.clear()
            return
        oldest_active_ns = now_ns - self.config.producer_inactivity_timeout_ms * _NS_PER_MS
        purged = [name for name, since in self._inactive_since_ns.items() if since < oldest_active_ns]
        for name in purged:
            del self._inactive_since_ns[name]
            self._pushed.pop(name, None)
            self._persisted.pop(name, None)
        if not self._purge_keeps_unexpired:
            self._inactive_since_ns.clear()
            return
        if purged and self.enabled and self._cursor_position is not None:
            self._take_snapshot(self._cursor_position, now_ns=now_ns)

    def inactive_producers(self) -> dict[str, int]:
        """Producer name -> ``now_ns`` of its disconnect, for producers waiting to be purged."""
        return dict(self._inactive_since_ns)

    # ------------------------------------------------------------------ sends

    def is_duplicate(
        self,
        name: str,
        sequence_id: int,
        highest_sequence_id: int = -1,
        *,
        marker: bool = False,
        last_chunk: bool = True,
    ) -> DedupDecision:
        """Judge one ``CommandSend`` (``isDuplicate`` / ``isDuplicateNormal``).

        ``name`` is the producer name, or for a message arriving through geo-replication the *original*
        producer name from the message metadata (``isDuplicateReplV1``). ``highest_sequence_id`` is -1 when the
        send did not carry one; a value below ``sequence_id`` is treated as absent, as ``ServerCnx.handleSend``
        does. Markers and every chunk but the last are NOT_DUP and change nothing (apache/pulsar#20948; before it,
        each chunk was judged as a message of its own, so the second chunk of a message, carrying the same
        sequence id, was a duplicate).

        A NOT_DUP decision records ``max(sequence_id, highest_sequence_id)`` as pushed, so the caller must
        follow with :meth:`on_persisted` or :meth:`on_write_failed`.
        """
        check_int("sequence_id", sequence_id)
        check_int("highest_sequence_id", highest_sequence_id)
        if not self.enabled or marker or (not last_chunk and self._chunks_at_last):
            return DedupDecision.NOT_DUP
        pushed = self._pushed.get(name)
        if pushed is not None and sequence_id <= pushed:
            persisted = self._persisted.get(name)
            if persisted is not None and sequence_id <= persisted:
                return DedupDecision.DUP
            return DedupDecision.UNKNOWN
        self._pushed[name] = max(highest_sequence_id, sequence_id)
        return DedupDecision.NOT_DUP

    def on_persisted(
        self,
        name: str,
        sequence_id: int,
        highest_sequence_id: int,
        position: Position,
        *,
        marker: bool = False,
        last_chunk: bool = True,
        now_ns: int | None = None,
    ) -> None:
        """The write of a NOT_DUP send completed at ``position`` (``recordMessagePersisted``).

        Records ``max(sequence_id, highest_sequence_id)`` as persisted and counts the entry; every
        ``entries_interval`` entries a snapshot is taken at ``position``. ``now_ns`` (when given) stamps that
        snapshot, which postpones the next time-based one. Markers are not counted.
        """
        check_int("sequence_id", sequence_id)
        check_int("highest_sequence_id", highest_sequence_id)
        position = _check_position("position", position)
        if not self.enabled or marker:
            return
        if last_chunk or not self._chunks_at_last:
            self._persisted[name] = max(highest_sequence_id, sequence_id)
        self._count_entry(position, now_ns)

    def _count_entry(self, position: Position, now_ns: int | None) -> None:
        self._snapshot_counter += 1
        if self._snapshot_counter >= self.config.entries_interval:
            self._snapshot_counter = 0
            self._take_snapshot(position, now_ns=now_ns)

    # ------------------------------------------------------------------ replicated messages (apache/pulsar#23697)

    @staticmethod
    def _source_keys(replicator: str) -> tuple[str, str]:
        return f"{replicator}_LID", f"{replicator}_EID"

    def _source_position(self, table: dict[str, int], replicator: str) -> Position | None:
        lid, eid = (table.get(key) for key in self._source_keys(replicator))
        return None if lid is None or eid is None else (lid, eid)

    def is_duplicate_replicated(self, replicator: str, source_position: Position) -> DedupDecision:
        """Judge a message a replicator sends by its position in the source cluster (``isDuplicateReplV2``).

        From apache/pulsar#23697 (3.0.11, 3.3.5, 4.0.3; see :attr:`replicated_by_source_position`) a replicated
        message is a duplicate when its source position is at or below the last one pushed by the same
        replicator; the positions are kept in the same maps as producers' ids, under ``<replicator>_LID`` and
        ``<replicator>_EID``, so they show in the snapshot. Before, replicated messages were judged by the original
        producer name and sequence id (:meth:`is_duplicate` with the original name, ``isDuplicateReplV1``).
        A NOT_DUP decision records the position as pushed; follow with :meth:`on_persisted_replicated`.
        """
        if not isinstance(replicator, str) or not replicator:
            raise InvalidArgument(f"Expected a replicator producer name but got replicator={replicator!r}.")
        source_position = _check_position("source_position", source_position)
        if not self.enabled:
            return DedupDecision.NOT_DUP
        pushed = self._source_position(self._pushed, replicator)
        if pushed is not None and source_position <= pushed:
            persisted = self._source_position(self._persisted, replicator)
            if persisted is not None and source_position <= persisted:
                return DedupDecision.DUP
            return DedupDecision.UNKNOWN
        lid_key, eid_key = self._source_keys(replicator)
        self._pushed[lid_key], self._pushed[eid_key] = source_position
        return DedupDecision.NOT_DUP

    def on_persisted_replicated(
        self, replicator: str, source_position: Position, position: Position, *, now_ns: int | None = None
    ) -> None:
        """A replicated message judged NOT_DUP was written at ``position`` (``recordMessagePersistedRepl``)."""
        source_position = _check_position("source_position", source_position)
        position = _check_position("position", position)
        if not self.enabled:
            return
        lid_key, eid_key = self._source_keys(replicator)
        self._persisted[lid_key], self._persisted[eid_key] = source_position
        self._count_entry(position, now_ns)

    def on_write_failed(self) -> None:
        """A ledger write failed; once the in-flight writes drained, ``pushed := persisted``.

        ``PersistentTopic.addFailed`` fences the topic and, when the last pending write completes, calls
        ``resetHighestSequenceIdPushed`` and unfences (``testIsDuplicateWithFailure``): ids that were pushed but
        never persisted are accepted again, so the client's resend is written once.
        """
        if not self.enabled:
            return
        self._pushed = dict(self._persisted)

    # ------------------------------------------------------------------ snapshots and recovery

    def _take_snapshot(self, position: Position, *, now_ns: int | None) -> None:
        # Pulsar copies the first max_producers entries of a hash map into a TreeMap; the model keeps the
        # max_producers smallest names, so the choice is deterministic.
        names = sorted(self._persisted)[: self.config.max_producers]
        self._cursor_position = position
        self._cursor_properties = {name: self._persisted[name] for name in names}
        self._snapshots_taken += 1
        if now_ns is not None:
            self._last_snapshot_ns = now_ns

    def take_timed_snapshot(self, *, now_ns: int, last_position: Position | None) -> bool:
        """The time-based snapshot check (``takeSnapshot()``, run every ``snapshot_frequency_ms``).

        Snapshots at ``last_position`` (the topic's last confirmed entry) when enabled, the policy interval
        is positive, at least ``snapshot_interval_ms`` passed since the last snapshot, and the topic moved past
        the cursor. Returns whether a snapshot was taken.
        """
        check_int("now_ns", now_ns)
        if not self.enabled:
            return False
        interval_ns = self.config.snapshot_interval_ms * _NS_PER_MS
        if interval_ns <= 0 or now_ns - self._last_snapshot_ns < interval_ns:
            return False
        if last_position is None:
            return False
        last_position = _check_position("last_position", last_position)
        if self._cursor_position is not None and last_position <= self._cursor_position:
            return False
        self._take_snapshot(last_position, now_ns=now_ns)
        return True

    def snapshot(self) -> DedupSnapshot:
        """The ``pulsar.dedup`` cursor as it is durably stored: save it across a broker restart."""
        return DedupSnapshot(self._cursor_position, self._cursor_properties)

    def recover(
        self,
        snapshot: DedupSnapshot | None,
        entries: Iterable[tuple[Position, str, int, int]],
        *,
        now_ns: int = 0,
    ) -> None:
        """Load a topic with deduplication on: restore ``snapshot`` and replay the entries after it.

        ``entries`` are ``(position, producer_name, sequence_id, highest_sequence_id)`` from the stored
        message metadata, in log order, every entry after ``snapshot.position`` (``replayCursor``). Each one
        sets ``pushed[p] = persisted[p] = max(highest, sequence_id)`` — the *last* entry of a producer wins,
        not the largest. Pulsar replays markers too (they appear under ``pulsar.marker`` with id 0); pass them
        or not, nothing observable depends on it. The replayed entries count towards the next snapshot, and if at
        least ``entries_interval`` were replayed a snapshot is taken at the last one (apache/pulsar#22479, 3.0.5 /
        3.2.3 / 3.3.0; before, the count started again at 0 and no snapshot was taken). Afterwards the status is
        ``Enabled``.

        Before apache/pulsar#21193 (3.0.3 / 3.1.1) every producer recovered (from the snapshot or the entries) is
        marked inactive at ``now_ns``, so one that does not reconnect is purged after the inactivity timeout; from
        it the recovery marks nobody (``producerRemoved`` sees the status ``Recovering``).

        ``snapshot`` ``None`` (or one whose cursor does not exist) means a new cursor: maps start empty.
        """
        if snapshot is not None and not isinstance(snapshot, DedupSnapshot):
            raise InvalidArgument(
                f"Expected a DedupSnapshot or None for snapshot but got snapshot={snapshot!r}"
                f" (type={type(snapshot).__name__})."
            )
        check_int("now_ns", now_ns)
        self._status = DedupStatus.RECOVERING
        self._reset_state()
        mark_inactive = self._track_inactive_always
        if snapshot is not None and snapshot.exists:
            self._cursor_position = snapshot.position
            self._cursor_properties = dict(snapshot.sequence_ids)
            for name, seq in snapshot.sequence_ids.items():
                self._pushed[name] = seq
                self._persisted[name] = seq
                if mark_inactive:
                    self._inactive_since_ns[name] = now_ns
        else:
            self._cursor_position = (-1, -1)
            self._cursor_properties = {}
        replayed = 0
        last: Position | None = None
        for index, entry in enumerate(entries):
            if not isinstance(entry, tuple) or len(entry) != 4:
                raise InvalidArgument(
                    f"Expected entries of (position, producer_name, sequence_id, highest_sequence_id) but entry"
                    f" {index} is {entry!r}."
                )
            position, name, seq, highest = entry
            last = _check_position(f"entries[{index}].position", position)
            check_int(f"entries[{index}].sequence_id", seq)
            check_int(f"entries[{index}].highest_sequence_id", highest)
            value = max(highest, seq)
            self._pushed[name] = value
            self._persisted[name] = value
            if mark_inactive:
                self._inactive_since_ns[name] = now_ns
            replayed += 1
        if last is not None and self._snapshot_after_replay:
            self._snapshot_counter = replayed
            if replayed >= self.config.entries_interval:
                self._snapshot_counter = 0
                self._take_snapshot(last, now_ns=None)
        self._status = DedupStatus.ENABLED

    # ------------------------------------------------------------------ introspection

    def pushed(self) -> dict[str, int]:
        """``highestSequencedPushed``: producer -> highest id accepted for writing."""
        return dict(self._pushed)

    def persisted(self) -> dict[str, int]:
        """``highestSequencedPersisted``: producer -> highest id durably written."""
        return dict(self._persisted)

    def stats(self) -> dict[str, Any]:
        """JSON-safe state, with Pulsar's names where Pulsar shows them (topic stats, internal stats)."""
        return {
            "deduplicationStatus": self.status,
            "highestSequencedPushed": dict(sorted(self._pushed.items())),
            "highestSequencedPersisted": dict(sorted(self._persisted.items())),
            "inactiveProducers": dict(sorted(self._inactive_since_ns.items())),
            "snapshotCounter": self._snapshot_counter,
            "snapshotsTaken": self._snapshots_taken,
            "lastSnapshotTimestampNs": self._last_snapshot_ns,
            "cursor": None
            if self._cursor_position is None
            else {
                "name": DEDUP_CURSOR_NAME,
                "markDeletePosition": _format_position(self._cursor_position),
                "properties": dict(sorted(self._cursor_properties.items())),
            },
        }

    def __repr__(self) -> str:
        return (
            f"<MessageDeduplication status={self.status} pushed={dict(sorted(self._pushed.items()))}"
            f" persisted={dict(sorted(self._persisted.items()))}>"
        )
