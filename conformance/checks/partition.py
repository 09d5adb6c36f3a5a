"""Checking a trace in parts: the streaming checker over each part of a partitioned trace, and the merge.

A partitioned engine (``conformance.spark``) splits a trace into parts and runs :func:`check_part` — the
:class:`~conformance.checks.streaming.StreamingChecker` itself, unchanged — over each, in trace order.  What
makes that exact is the split, which the engine owns and the tests prove (``docs/checker.md``, "Spark"):

* the *scope pass*: every event about one message goes to the part of the message's key (all messages of a
  key, in every topic partition, land together), and the events that act across keys (``open``, ``close``,
  ``crash``, ``redeliver``, ``fault``, ``end``) are copied into every part.  Each part then holds the whole
  state the rules read for its keys: holds, free and exempt messages, incarnations, membership.  The identity
  fields (``uid``, ``producer``, ``seq``) are blanked, so no part judges the identity checks;
* the *identity pass*: the publishes and the receives carrying a uid, split by (producer, seq) (a receive goes
  with its uid's publishes).  No part opens a consumer, so only the identity checks (:data:`IDENTITY_KINDS`) find
  anything there.

Two rules reach across those parts.  A duplicate receipt is a ``lost_write`` only if no higher sequence id of
its producer may have been stored by then, and the engines split the identity evidence by (producer, seq), so
a part may lack the send that excuses it.  A part therefore finds a superset of the lost writes (every excuse it
sees is one the whole trace has); a trace where a part found one is checked again whole
(:func:`needs_whole_trace`), and one where no part found any has none.  ``stored_below_highest`` compares a stored
id with the higher ids of its producer stored before it, which another part may hold, so a part finds a subset:
a trace with deduplication on whose identity pass saw a stored publish is checked again whole.  A split by key
(:mod:`conformance.spark.router`) avoids both: with deduplication on, each part also reads every other part's
publish receipts as :data:`RECEIPT_COPY`, which move its producers' highest ids and judge nothing, so the part
decides the rules comparing a producer's ids for its own receipts exactly (:attr:`PartResult.all_receipts`).

:func:`merge_parts` turns the parts' results into the verdict the streaming engine gives for the whole trace:
violations of the scope pass (a violation every part found — one decided on copied events only, such as a
refused ``open`` — counts once) and the identity kinds of the identity pass; notes and unjudged kinds in
order, without repeats; the key-mismatch counts summed; the events counted once (copies are not counted).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.checks.streaming import RECEIPT_COPY, StreamingChecker, key_mismatch_note
from conformance.profiles import Profile, resolve_profile
from conformance.trace.header import TraceHeader
from conformance.verdict import Verdict, build_verdict
from conformance.violations import Kind, Violation

__all__ = [
    "IDENTITY_KINDS", "RECEIPT_COPY", "PartChecker", "PartResult", "check_part", "merge_parts", "needs_whole_trace",
]  # fmt: skip

#: The kinds the identity pass decides (the scope pass never sees the fields they read).
IDENTITY_KINDS: frozenset[Kind] = frozenset(
    {
        Kind.DUPLICATE_PUBLISH,
        Kind.UNEXPECTED_MESSAGE,
        Kind.LOST_WRITE,
        Kind.STORED_BELOW_HIGHEST,
        Kind.LAST_SEQUENCE_ID_BEHIND,
    }
)


@dataclass(frozen=True)
class PartResult:
    """What one part of a trace revealed, in a form :func:`merge_parts` can combine."""

    found: tuple[Violation, ...]
    notes: tuple[str, ...]
    unjudged: tuple[Kind, ...]
    events: int  #: events of this part that are not copies
    key_mismatches: int
    #: the part judged ``stored_below_highest`` (deduplication on), which compares the ids of a producer that the
    #: identity pass splits apart: its trace is checked again whole
    judges_across_ids: bool = False
    #: the part read every publish receipt of the trace (the other parts' as :data:`RECEIPT_COPY`): what it found
    #: of the rules comparing a producer's ids is exact
    all_receipts: bool = False


def needs_whole_trace(result: PartResult) -> bool:
    """Whether a part's result may depend on events other parts hold: it found a ``lost_write``, which a higher
    sequence id of the producer, in another part, may excuse (see the module docstring), unless the part read
    every receipt of the trace.  The engine then checks the trace again in one part and uses that verdict."""
    return result.judges_across_ids or (
        not result.all_receipts and any(v.kind is Kind.LOST_WRITE for v in result.found)
    )


class PartChecker:
    """The streaming checker over one part, fed batch by batch (an engine checking several parts in one read of
    the trace feeds each its own); :meth:`result` ends it."""

    def __init__(self, header: TraceHeader | None, profile: str | Profile | None) -> None:
        self._checker = StreamingChecker(header, profile)

    def feed(self, batch: Any) -> None:
        """Check a record batch of this part (in trace order)."""
        if batch.num_rows:
            self._checker.feed_batch(batch)

    def result(self, copies: int = 0, *, all_receipts: bool = False) -> PartResult:
        """End the part; ``copies``: how many of its events are copies other parts hold too (not counted);
        ``all_receipts``: the part was given a copy of every other part's publish receipt (:data:`RECEIPT_COPY`)."""
        checker = self._checker
        mismatches = checker.key_mismatches
        checker.key_mismatches = 0  # summed over the parts by merge_parts, which words the note
        verdict = checker.finish()
        return PartResult(
            (*verdict.violations, *verdict.allowed),
            verdict.notes,
            verdict.unjudged,
            verdict.events - copies,
            mismatches,
            checker.judges_across_ids(all_receipts),
            all_receipts,
        )


def check_part(
    header: TraceHeader | None, profile: str | Profile | None, batches: Iterable[object], copies: int = 0
) -> PartResult:
    """Run the streaming checker over one part (record batches in trace order); ``copies``: how many of its
    events are copies of events other parts hold too (they are not counted)."""
    part = PartChecker(header, profile)
    for batch in batches:
        part.feed(batch)
    return part.result(copies)


def merge_parts(
    header: TraceHeader | None,
    profile: str | Profile | None,
    scope_parts: Sequence[PartResult],
    identity_parts: Sequence[PartResult],
    *,
    engine: str = "python",
) -> Verdict:
    """The verdict of the whole trace from the results of its parts (see the module docstring)."""
    found: list[Violation] = []
    kept: dict[Violation, int] = {}  # violation -> the part it was first kept from
    for n, part in enumerate(scope_parts):
        for violation in part.found:
            if violation.kind in IDENTITY_KINDS:
                continue
            first = kept.setdefault(violation, n)
            if first == n:
                found.append(violation)
    seen: set[Violation] = set()  # a violation judged on a copied event (a producer's creation) counts once
    for part in identity_parts:
        for violation in part.found:
            if violation.kind in IDENTITY_KINDS and violation not in seen:
                seen.add(violation)
                found.append(violation)
    notes: dict[str, None] = {}
    unjudged: dict[Kind, None] = {}
    for part in scope_parts:
        notes.update(dict.fromkeys(part.notes))
        unjudged.update(dict.fromkeys(part.unjudged))
    mismatches = sum(part.key_mismatches for part in scope_parts)
    if mismatches:
        notes[key_mismatch_note(mismatches)] = None
    head = header if header is not None else TraceHeader.unknown()
    return build_verdict(
        found,
        resolve_profile(profile, head),
        events=sum(part.events for part in scope_parts),
        notes=notes,
        unjudged=unjudged,
        engine=engine,
    )
