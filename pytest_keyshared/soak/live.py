"""The soak's live check: the streaming checker, with its memory kept to what is outstanding.

``conformance.checks.StreamingChecker`` is THE rule set; the soak runs it live, unchanged, on every event.
What it keeps grows with the run only in three places, all about messages that are done with:

* per subscription, the compact remainder of every *settled* message (acknowledged, held by nobody, its
  publish receipt seen), kept so that a later receive of it is known as a redelivery after an ack;
* the set of messages whose publish receipt was seen;
* the identity checks' maps (uid -> first publish, (producer, seq) -> stored ids, evidence pending a publish).

And it grows with the number of *keys* seen, which a soak's keyless messages make as many as the messages
(each has a key of its own, ``producer-seq``): per subscription and key, the two lazy heaps of free and exempt
messages (kept, emptied, after the key's last message is received) and caches of the key's scope string and
hash slot.

:func:`prune` forgets the oldest of the former beyond ``keep`` entries (insertion order is event order); of the
latter, it drops the heap entries that are stale (no longer free, or exempt: what the checker's own lazy pops
would discard) and the heaps left empty, and empties the caches once they hold more than ``keep`` keys (they
are rebuilt on demand, equal).  None of that changes a judgement of what is kept.  The live
check then still judges ``key_overlap``, ``out_of_order``, ``misassigned`` and ``redelivered_after_ack`` for
every message still outstanding and for the last ``keep`` settled ones, with memory bounded by what is
outstanding plus ``keep``; the checks that need the whole history (duplicates, unexpected and undelivered
messages, redeliveries of long-settled messages) come from the full check of the trace chunks at the end.
Its verdict is therefore never used: the live check counts violations for the status line, and the run's
verdict comes from the chunks.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

from conformance.checks.ordering import exempt_now

__all__ = ["DEFAULT_KEEP", "PRUNE_EVERY", "LiveCount", "drop_per_key_leftovers", "prune"]

#: Settled messages (and identity entries) remembered per map.
DEFAULT_KEEP = 20_000
#: Events between two prunes.
PRUNE_EVERY = 10_000
#: Events checked at once (the status line's violation count lags by fewer than this).
SLICE_EVENTS = 256
#: Events checked at once in the soak's sink process: larger slices cost less per event (the checker's work per
#: slice is spread wider), and the sink checks what it holds before every status report (:meth:`catch_up`).
SINK_SLICE_EVENTS = 4096


def _trim(mapping: dict[Any, Any], keep: int) -> list[Any]:
    """Drop the oldest entries of ``mapping`` beyond ``keep``; returns the dropped keys."""
    excess = len(mapping) - keep
    if excess <= 0:
        return []
    dropped = list(itertools.islice(mapping, excess))
    for key in dropped:
        del mapping[key]
    return dropped


def prune(checker: Any, keep: int = DEFAULT_KEEP) -> int:
    """Forget the oldest settled messages and identity entries of ``checker`` beyond ``keep``; returns how many."""
    forgotten = 0
    published: set[str] = checker._published
    for sub in checker.subs.values():
        dropped = _trim(sub.settled, keep)
        forgotten += len(dropped)
        published.difference_update(dropped)
    # receipts of messages no subscription knows any more (published before any subscription existed)
    if len(published) > keep * 2:
        known = set()
        for sub in checker.subs.values():
            known.update(sub.recs)
            known.update(sub.settled)
        stale = published - known
        forgotten += len(stale)
        published.difference_update(stale)
    for mapping in (checker.uid_pub, checker.ids, checker.pending_unexpected, checker.pending_evidence):
        forgotten += len(_trim(mapping, keep))
    return forgotten + drop_per_key_leftovers(checker, keep)


def drop_per_key_leftovers(checker: Any, cache_bound: int) -> int:
    """Drop the stale entries of ``checker``'s per-key heaps and the heaps left empty; empty its per-key caches
    once they hold more than ``cache_bound`` keys.  Changes no judgement (tests/soak/test_live.py feeds traces
    to a checker that does this after every event and to one that never does: they find the same)."""
    forgotten = 0
    epoch: int = checker._epoch
    for sub in checker.subs.values():
        # a free mark may be the int 0 (made free by its publish, event 0)
        forgotten += _drop_stale(sub.free_heaps, sub.recs, still=lambda rec: rec.free is not None)
        # an exemption an armed ack suspended is off the heap until that ack is disarmed: it waits in its acker's
        # ``suspended`` list, and ``_revive_exemptions`` pushes it again (the lazy pop in ordering.overtaken reads so)
        forgotten += _drop_stale(sub.exempt_heaps, sub.recs, still=lambda rec: exempt_now(rec, epoch))
        timeline = sub.timeline
        if timeline is not None and len(timeline._slots) > cache_bound:
            # both at once: a membership change reads every cached owner's slot from the slot cache
            forgotten += len(timeline._slots) + len(timeline._owner)
            timeline._slots.clear()
            timeline._owner.clear()
    scopes: dict[str, dict[str, str]] = checker._scopes
    if sum(len(of_stream) for of_stream in scopes.values()) > cache_bound:
        forgotten += sum(len(of_stream) for of_stream in scopes.values())
        scopes.clear()
    return forgotten


def _drop_stale(heaps: dict[str, list[Any]], recs: dict[str, Any], still: Any) -> int:
    """Drop the entries of ``heaps`` (scope -> heap of (position, message key)) whose message's record (a
    :class:`~conformance.checks._state.Record`) no longer passes ``still``, or is gone (settled), and the heaps
    left empty; returns how many went."""
    dropped = 0
    for scope in list(heaps):
        heap = heaps[scope]
        kept = [item for item in heap if (rec := recs.get(item[1])) is not None and still(rec)]
        if kept and len(kept) == len(heap):
            continue
        dropped += len(heap) - len(kept)
        if kept:
            heapq.heapify(kept)
            heaps[scope] = kept
        else:
            del heaps[scope]
    return dropped


class LiveCount:
    """Feeds a ``StreamingChecker`` in slices of ``slice_events`` events, pruning it now and then; counts what it
    finds.  Call :meth:`close` after the last event (it checks the last slice).

    A checker that fails is dropped (its error noted): the verdict comes from the chunks anyway.
    """

    def __init__(
        self,
        header: Any,
        profile: Any,
        *,
        keep: int = DEFAULT_KEEP,
        every: int = PRUNE_EVERY,
        slice_events: int = SLICE_EVENTS,
    ) -> None:
        from conformance.checks import StreamingChecker

        self.checker: Any = StreamingChecker(header, profile=profile)
        self.keep = keep
        self.every = every
        self.slice_events = max(1, slice_events)
        self.violations = 0
        self.kinds: dict[str, int] = {}
        self.events = 0
        self.notes: list[str] = []
        self._slice: list[Any] = []
        self._pruned_at = 0

    def feed(self, event: Any) -> None:
        if self.checker is None:
            return
        self._slice.append(event)
        if len(self._slice) >= self.slice_events:
            self._check_slice()

    def feed_rows(self, rows: list[Any]) -> None:
        """:meth:`feed` for a batch of rows (:mod:`conformance.trace.rows`), in trace order."""
        if self.checker is None:
            return
        from conformance.trace.rows import row_event

        pending = self._slice
        pending.extend(map(row_event, rows))
        while len(pending) >= self.slice_events:
            self._slice = pending[self.slice_events :]
            self._check(pending[: self.slice_events])
            pending = self._slice
            if self.checker is None:
                return

    def catch_up(self) -> None:
        """Check the events not checked yet now (the sink does before each status report, so its count lags by
        at most that report's period, whatever the rate and the slice size)."""
        if self.checker is not None and self._slice:
            self._check_slice()

    def close(self) -> None:
        """Check the events not checked yet."""
        self.catch_up()

    def _check_slice(self) -> None:
        events, self._slice = self._slice, []
        self._check(events)

    def _check(self, events: list[Any]) -> None:
        checker = self.checker
        try:
            found = checker.feed_many(events)
        except Exception as exc:
            self.notes.append(
                f"live check stopped in the events {events[0].i}..{events[-1].i}: {type(exc).__name__}: {exc}"
            )
            self.checker = None
            return
        if found:
            self.violations += len(found)
            for violation in found:
                kind = str(getattr(violation.kind, "value", violation.kind))
                self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.events += len(events)
        if self.events - self._pruned_at >= self.every:
            self._pruned_at = self.events
            prune(checker, self.keep)
