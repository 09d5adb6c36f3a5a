"""``duplicate_publish``: with deduplication on, one (producer, sequence id) stored under two message ids.

Property (PIP-6 producer deduplication): a resend of a (producer, seq) the broker already stored is dropped
(its receipt is ``-1:-1``), so each (producer, seq) is stored once.  The stored ids of a (producer, seq) are
the real message ids of its ``ok`` publish receipts and the message ids of receives whose ``uid`` belongs to
a publish of that (producer, seq) (the uid's first publish event says which); a receive may name an id the
publisher never learnt (a timed-out send that was stored after all).

Rule: order the distinct stored ids of a (producer, seq) by the first event that evidences each; every id
after the first is one violation.  Witness: the first evidence of the first id and of this one.  The key is
the one on the later witness event.  Reported when the trace ends (evidence may arrive in any order).
Whether it invalidates the verdict follows the header: with ``deduplication: false`` it is permitted.

Memory: one entry per published (producer, seq) and per published uid — the one check (with
``unexpected_message``) whose state grows with the trace rather than with what is outstanding.
The Spark engine runs this same code (:mod:`conformance.checks.partition`).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any

from conformance.checks.epochs import split_identity
from conformance.violations import Kind, Violation, render_elle

__all__ = [
    "below_highest",
    "dup_threshold",
    "duplicates",
    "explain",
    "explain_behind",
    "explain_lost_write",
    "explain_stored_below",
    "lost_writes",
    "make_behind",
    "make_duplicate",
    "make_lost_write",
    "make_not_purged",
    "make_off_schedule",
    "make_stored_below",
    "send_ids",
    "top_receipt",
]


def duplicates(ids: Mapping[tuple[str, int], Any]) -> list[Violation]:
    """The ``duplicate_publish`` es: each (producer, seq) stored under more than one message id (``ids`` holds a
    dict ``{message key: (first evidence ref, key)}`` for those), one per id after the first-evidenced one."""
    found = []
    for (producer, seq), value in ids.items():
        if value.__class__ is dict:
            ordered = sorted(value.values(), key=lambda rk: rk[0][0])
            first_ref = ordered[0][0]
            for ref, key in ordered[1:]:
                found.append(make_duplicate(producer, seq, key, first_ref, ref))
    return found


def dup_threshold(seq: int, send_seq: Any) -> int:
    """The least sequence id of the producer whose storing shows a duplicate receipt of ``seq`` due: ``seq + 1``
    for a send judged by its own id, ``send_seq`` for a message of a batch sent with its ids (``send_seq`` on the
    publish: the raw protocol producer's ``CommandSend.sequence_id``).

    Property (``MessageDeduplication.isDuplicate``): the broker judges a send by its ``sequence_id`` against the
    highest id it pushed (``max(sequenceId, highestSequenceId)`` of each send taken), so a batch sent as ``4,
    highest 8`` after ``1, highest 5`` was stored is answered ``-1:-1`` whole, 6..8 included, and stores nothing:
    a duplicate receipt is a lost write only for a send id above every id the producer may have stored by then
    (``MessageDuplicationTest.testIsDuplicate``)."""
    if send_seq is None or send_seq.__class__ is not int:
        return seq + 1
    return int(send_seq)


def send_ids(extra: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(send_seq, highest_seq)`` of a publish sent in a batch with its ids (``highest_seq`` -1 when absent), or
    None: the ids the broker judged the send by (``stored_below_highest``) and pushed, ``max`` of the two."""
    send = extra.get("send_seq")
    if send is None or send.__class__ is not int:
        return None
    highest = extra.get("highest_seq")
    return send, highest if highest.__class__ is int else -1


def lost_writes(
    receipts: Mapping[tuple[str, int], tuple[Sequence[Any], str]],
    stored: Container[tuple[str, int]],
    maybe_stored: Container[tuple[str, int]],
    excused: Container[tuple[str, int]],
) -> list[Violation]:
    """The ``lost_write`` s: each (producer, seq) with a duplicate receipt (its first in ``receipts``) that no
    event shows ``stored``, no send with an unknown outcome may have stored, and no higher sequence id of its
    producer that may be stored ``excused``."""
    return [
        make_lost_write(ps[0], ps[1], key, ref)
        for ps, (ref, key) in receipts.items()
        if ps not in stored and ps not in maybe_stored and ps not in excused
    ]


def make_duplicate(
    producer: str,
    seq: int,
    key: str | None,
    first_ref: Sequence[Any],
    second_ref: Sequence[Any],
) -> Violation:
    facts = {
        **_named(producer),
        "seq": seq,
        "key": key,
        "first_msg": first_ref[3],
        "msg": second_ref[3],
        "refs": [list(first_ref), list(second_ref)],
    }
    consumers = tuple(c for c in (first_ref[2], second_ref[2]) if c is not None)
    return Violation(
        Kind.DUPLICATE_PUBLISH,
        key,
        consumers,
        (first_ref[0], second_ref[0]),
        explain(facts),
        None,
        facts,
    )


def explain(facts: Mapping[str, Any]) -> str:
    first, second = facts["refs"]
    who = f"{_who(facts)} sequence id {facts['seq']}"
    return render_elle(
        f"duplicate_publish: {who} stored as {facts['first_msg']} and {facts['msg']}",
        [first, second],
        [
            f"E{first[0]} shows {who} stored as {facts['first_msg']}.",
            "With deduplication on, a resend of a stored (producer, sequence id) must be dropped (receipt -1:-1).",
            f"However, E{second[0]} shows it stored again as {facts['msg']}.",
        ],
    )


def make_lost_write(producer: str, seq: int, key: str | None, receipt_ref: Sequence[Any]) -> Violation:
    """``lost_write``: the broker answered a send of (producer, seq) with the duplicate receipt (``-1:-1``),
    but nothing in the trace shows that (producer, seq) stored, nor a send of it whose outcome is unknown.

    Rule: a publish with result ``ok`` and a ``-1`` ledger or entry (the receipt for a deduplicated send) is a
    violation, once per (producer, seq), when no other event of the trace (before or after it) shows that
    (producer, seq) may be stored: an ``ok`` receipt with a real message id, a receive whose ``uid`` belongs to
    it, or a publish of it whose result is ``info`` or ``fail`` (the client cannot know it was not stored).
    Witness: the first such receipt.  Reported when the trace ends.  The broker said "already stored" for a
    write it never stored: the message is lost, and the producer was told it is safe.
    """
    facts = {**_named(producer), "seq": seq, "key": key, "msg": receipt_ref[3], "refs": [list(receipt_ref)]}
    return Violation(Kind.LOST_WRITE, key, (), (receipt_ref[0],), explain_lost_write(facts), None, facts)


def explain_lost_write(facts: Mapping[str, Any]) -> str:
    (receipt,) = facts["refs"]
    who = f"{_who(facts)} sequence id {facts['seq']}"
    return render_elle(
        f"lost_write: {who} was answered as a duplicate but never stored",
        [receipt],
        [
            f"E{receipt[0]} is the broker's receipt for a deduplicated send of {who} (-1:-1: already stored).",
            "No event of the trace shows it stored (no receipt with a message id, no receive of it), and no send"
            " of it has an unknown outcome.",
            "However, a duplicate receipt is only due for a stored (producer, sequence id): the write was lost.",
        ],
    )


#: A producer's highest id stored as an entry's first message so far: (seq, the index of its first receipt, that
#: receipt's message key, its position); :func:`top_receipt` is that receipt as a witness.  A receipt of a higher
#: id as an entry's first message replaces it; one of the same id leaves the first receipt (the engine keeps it in
#: its hot path, ``StreamingChecker._publish``, without a call or a witness built per receipt).
Top = tuple[int, int, str, tuple[int, int]]


def top_receipt(top: Top) -> tuple[int, str, None, str]:
    """The receipt that stored the highest id ``top``, as a violation's reference."""
    return (top[1], "publish", None, top[2].rpartition("|")[2])


def below_highest(top: Top | None, seq: int, position: tuple[int, int] | None = None) -> Top | None:
    """``stored_below_highest``'s decision for an unbatched send of ``seq`` stored at ``position`` (and
    ``last_sequence_id_behind``'s for an answered ``seq``, without a position): the producer's highest id stored so
    far as an entry's first message (``top``, from the receipts logged before), when it is above ``seq`` and (for a
    stored send) was written earlier in the topic.

    Property (``MessageDeduplication.isDuplicate``, unchanged since PIP-6): with deduplication on, the broker
    compares a send's sequence id with the highest id it accepted from the producer (``lastSequenceIdPushed``,
    raised before the write), not with a set of stored ids, and answers one at or below it as a duplicate
    (``-1:-1``, not stored) or, while that write is in flight, with an error.  The broker writes a topic's entries
    in the order it takes their sends, so an entry at a later position was judged after the higher id was pushed.
    Evidence of the pushed id is only an entry's first message (a batch is judged by the ids of its send, at least
    its first message's: ``highest_sequence_id`` is optional), and only an unbatched send is judged by its own id
    (the C++ client sends a batch under its first id, Java's key-based batches under their highest), except a batch
    whose publishes carry its send's ids (``send_seq``, ``highest_seq``: the raw protocol producer's), judged by
    ``send_seq`` and evidence of ``max(send_seq, highest_seq)`` pushed (:func:`send_ids`)."""
    if top is None or top[0] <= seq or (position is not None and top[3] >= position):
        return None
    return top


def make_stored_below(
    producer: str,
    seq: int,
    key: str | None,
    higher: int,
    higher_ref: Sequence[Any],
    ref: Sequence[Any],
    *,
    send_seq: int | None = None,
) -> Violation:
    """``stored_below_highest``: an unbatched send of (producer, seq) was stored (a receipt with a message id) after
    a receipt showing a higher id of that producer stored on the topic partition as an entry's first message.

    Rule: see :func:`below_highest`; judged at the receipt, only with deduplication on (the header), outside
    failover runs, and when no earlier event showed (producer, seq) stored under another message id (a resend
    stored again is ``duplicate_publish``'s).  Witness: the higher id's first receipt and this one.  Pulsar's own
    tests: ``ClientDeduplicationTest.testProducerDeduplicationNonBatchAsync`` and
    ``...WithDiscontinuousSequenceId`` (the gapped id is never received).
    """
    facts = {
        **_named(producer),
        "seq": seq,
        "higher": higher,
        "key": key,
        "higher_msg": higher_ref[3],
        "msg": ref[3],
        "refs": [list(higher_ref), list(ref)],
    }
    if send_seq is not None and send_seq != seq:
        facts["send_seq"] = send_seq  # the first message of a batch sent under this id
    return Violation(
        Kind.STORED_BELOW_HIGHEST, key, (), (higher_ref[0], ref[0]), explain_stored_below(facts), None, facts
    )


def explain_stored_below(facts: Mapping[str, Any]) -> str:
    higher, got = facts["refs"]
    who = f"{_who(facts)} sequence id {facts['seq']}"
    if "send_seq" in facts:
        who += f" (the first of a batch sent under id {facts['send_seq']})"
    return render_elle(
        f"stored_below_highest: {who} was stored after its id {facts['higher']} was",
        [higher, got],
        [
            f"E{higher[0]} shows {_who(facts)} sequence id {facts['higher']} stored as"
            f" {facts['higher_msg']}: the broker had taken it before the send of {facts['seq']} (one producer's"
            " receipts come back in the order of its sends).",
            "With deduplication on, the broker compares an id with the highest one it accepted from the producer:"
            " a lower one is a duplicate (-1:-1, not stored).",
            f"However, E{got[0]} shows {who} stored as {facts['msg']}.",
        ],
    )


def make_behind(producer: str, answer: int, higher: int, higher_ref: Sequence[Any], ref: Sequence[Any]) -> Violation:
    """``last_sequence_id_behind``: producer ``producer`` was created (``ref``, a ``producer_open``) after its id
    ``higher`` was stored on the topic partition as an entry's first message (``higher_ref``, logged before), and
    the broker answered a last sequence id ``answer`` below it (the earlier producer of that name had closed, so
    the broker had taken that send before it answered).

    Rule: :func:`below_highest` with the answer for the id (the same evidence: receipts of an entry's first
    message); only with deduplication on and outside failover runs.  Pulsar answers the producer's highest pushed
    id (``MessageDeduplication.getLastPublishedSequenceId``), which is at least every id stored, after a reconnect
    and after a restart alike (recovery replays the log after the snapshot:
    ``ClientDeduplicationTest.testProducerSequenceAfterReconnect`` / ``...AfterRestart``).  Witness: the higher
    id's receipt and the ``producer_open``.
    """
    facts = {
        **_named(producer),
        "answer": answer,
        "higher": higher,
        "higher_msg": higher_ref[3],
        "refs": [list(higher_ref), list(ref)],
    }
    return Violation(
        Kind.LAST_SEQUENCE_ID_BEHIND, None, (), (higher_ref[0], ref[0]), explain_behind(facts), None, facts
    )


def explain_behind(facts: Mapping[str, Any]) -> str:
    higher, opened = facts["refs"]
    who = _who(facts)
    return render_elle(
        f"last_sequence_id_behind: {who} was answered last sequence id {facts['answer']} after {facts['higher']}"
        " was stored",
        [higher, opened],
        [
            f"E{higher[0]} shows {who} sequence id {facts['higher']} stored as {facts['higher_msg']}, before the"
            f" producer was created again at E{opened[0]}.",
            "With deduplication on, the broker answers a connecting producer its highest accepted id; a client"
            " numbers its next messages from it.",
            f"However, E{opened[0]} shows the answer {facts['answer']}: ids {facts['answer'] + 1}..{facts['higher']}"
            " would be sent again and dropped as duplicates.",
        ],
    )


def _named(producer: str) -> dict[str, Any]:
    """A violation's producer facts from an identity (:mod:`conformance.checks.epochs`): its name, and its
    deduplication epoch when not the first."""
    name, epoch = split_identity(producer)
    return {"producer": name, "epoch": epoch} if epoch else {"producer": name}


def _who(facts: Mapping[str, Any]) -> str:
    epoch = facts.get("epoch")
    suffix = f" (in its deduplication epoch {epoch}: ids before it are forgotten)" if epoch else ""
    return f"producer {facts['producer']!r}{suffix}"


def make_not_purged(
    producer: str, answer: int, closed_ref: Sequence[Any], ref: Sequence[Any], bound_ms: int
) -> Violation:
    """``not_purged``: producer ``producer`` was created again (``ref``, its ``producer_open``) after it had been
    closed (``closed_ref``, its ``producer_close``) for longer than the deduplication inactivity timeout plus one
    purge period (``bound_ms``, from the header's ``broker_conf``), and was answered last sequence id ``answer``, not
    -1: the broker did not forget it (:mod:`conformance.checks.epochs`).  Witness: the close and the creation.

    Property (``MessageDeduplication.purgeInactiveProducers``, run every third of the timeout by
    ``BrokerService.startInactivityMonitor``): a producer disconnected for longer than the timeout leaves the
    sequence-id maps at the next purge run, so a producer of that name is answered -1 and its old ids are stored
    again (a resend of one answered ``-1:-1`` is then ``lost_write`` in the new epoch)."""
    name, _epoch = split_identity(producer)
    facts = {"producer": name, "answer": answer, "bound_ms": bound_ms, "refs": [list(closed_ref), list(ref)]}
    return Violation(Kind.NOT_PURGED, None, (), (closed_ref[0], ref[0]), explain_not_purged(facts), None, facts)


def explain_not_purged(facts: Mapping[str, Any]) -> str:
    closed, opened = facts["refs"]
    who = f"producer {facts['producer']!r}"
    return render_elle(
        f"not_purged: {who} was answered last sequence id {facts['answer']} after being closed past the"
        " deduplication purge timeout",
        [closed, opened],
        [
            f"E{closed[0]} shows {who} closed; it was created again at E{opened[0]}, more than"
            f" {facts['bound_ms']} ms later (the inactivity timeout plus one purge period), with no broker restart"
            " or deduplication switch between.",
            "With deduplication on, the broker forgets a producer disconnected for longer than the timeout at its"
            " next purge run: a producer of that name is answered -1, and its old ids are stored again.",
            f"However, E{opened[0]} shows the answer {facts['answer']}: the broker still remembered it.",
        ],
    )


def make_off_schedule(life: int, probes: Sequence[int], period_ns: int) -> Violation:
    """``purge_off_schedule``: the answers producers got when created again after a close (``probes``, their
    ``producer_open`` events, in broker life ``life``: 0 before the first restart) fit no purge run at a fixed rate
    of a third of the inactivity timeout started with the broker (:class:`conformance.checks.epochs.Schedule`).

    Property (``BrokerService.startInactivityMonitor``): ``scheduleAtFixedRate(checkMessageDeduplicationInfo, T/3,
    T/3)`` from the broker service's start, anew at each start; ``purgeInactiveProducers`` forgets a producer
    disconnected for longer than T.  Each creation says whether some run fell between its close plus T and itself
    (answered -1) or none did (answered its ids): together they leave no phase.  Witness: the probes."""
    period_ms = period_ns // 1_000_000
    facts = {"life": life, "period_ms": period_ms, "probes": list(probes)}
    refs = [[i, "producer_open", None, None] for i in probes]
    where = "before the first broker restart" if life == 0 else f"after broker restart {life}"
    text = render_elle(
        f"purge_off_schedule: the producers' answers {where} fit no purge every {period_ms} ms",
        refs[:6],
        [
            f"E{', E'.join(str(i) for i in probes[:6])}{' ...' if len(probes) > 6 else ''} are creations of producers"
            " closed past the deduplication inactivity timeout T at most by a purge period: answered -1, a purge run"
            " came after the close plus T; answered their ids, none did.",
            f"The broker runs the purge every T/3 ({period_ms} ms) from its start (anew after a restart, whose start"
            " lies between the restart's fault events).",
            "However, no phase of such a schedule fits every answer: the purge ran at another rate or phase.",
        ],
    )
    return Violation(Kind.PURGE_OFF_SCHEDULE, None, (), tuple(probes), text, None, facts)
