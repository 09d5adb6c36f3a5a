"""An independent reading of ``docs/checker.md``: small, slow and plain, for differential testing.

Written from the documentation, not from :mod:`conformance.checks`: every message keeps one record that is never
compacted, every question ("is an earlier message free?", "who holds this key?") is answered by scanning all
records, and a disarm is looked up in the list of events that disarm.  It judges every kind but
``misassigned`` (that one asks the reference selectors, shared by both engines, so a second reading would only
repeat them).  It uses only the trace format's own helpers (canonical message ids and topic names).

It returns violation identities, ``(kind, subscription, key, events)``, the same tuple
:meth:`conformance.violations.Violation.identity` gives.

A non-persistent topic (header ``topic_kind``, ``docs/checker.md`` "Non-persistent topics"): every receive of a
message after its first, by anyone, is ``delivered_twice``; a message nobody holds is never *owed* there (sent at
once or dropped), so ``out_of_order`` looks only at earlier messages another consumer holds; and a consumer that
joins takes its keys over at once, so a ``key_overlap`` or ``out_of_order`` whose earlier witness precedes a join
(an open between it and the receive) is not one there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.identity import canonical_message, normalize_topic, parse_position

Identity = tuple[str, "str | None", "str | None", tuple[int, ...]]


@dataclass(eq=False)
class Inc:
    """A consumer incarnation: a handle from its ok open to its close or crash."""

    id: int
    consumer: str
    sub: str
    disarms: list[int] = field(default_factory=list)  # its crash, redeliver requests, faults touching it
    # (scope, (ledger, entry)) -> its negative acks of messages of that batch entry (each asks for the entry again)
    batch_nacks: dict[tuple[tuple[str, str], tuple[int, int]], list[int]] = field(default_factory=dict)


@dataclass
class Msg:
    """A message known in one subscription."""

    key: str  # its sticky key: its first known event's, or for a batch message its entry's (below)
    scope: tuple[str, str]  # (stream, key)
    pos: tuple[int, int, int]
    acked: bool = False
    exempt: bool = False  # ever negatively acknowledged or released by a redeliver request (never cleared)
    holders: dict[Inc, int] = field(default_factory=dict)  # incarnation -> the receive that started its hold
    since: int | None = None  # while free: the event that made it free
    armed: tuple[int, Inc, int] | None = None  # (ack index, acker, the receive that began the acker's hold)
    published: int | None = None  # its first ok publish known to the subscription (None: none seen)
    # delayed delivery, until the first receive: (publish index, send t0, earliest allowed receive t); meanwhile
    # the message is not owed in its key's order
    delay: tuple[int, int, int] | None = None
    t0: int | None = None  # the send time of the publish that made it known (None: known from a receive)

    def free(self) -> bool:
        return not self.acked and not self.holders


def reference_check(header: TraceHeader, events: Sequence[Event]) -> Counter[Identity]:
    """Every violation (but ``misassigned``) of the trace, as a multiset of identities."""
    default_sub = header.subscription.name
    non_persistent = header.extra.get("topic_kind") == "non-persistent"
    received_first: dict[tuple[str, str], int] = {}  # (sub, message) -> its first receive (non-persistent only)
    found: Counter[Identity] = Counter()
    opens: dict[str, list[tuple[int, int, str | None]]] = {}  # sub -> ok opens: (i, t, topic base or None)
    msgs: dict[str, dict[str, Msg]] = {}  # sub -> message key -> record
    acked_early: dict[str, set[str]] = {}  # sub -> messages acked before they were known there
    live: dict[str, Inc] = {}
    last: dict[str, Inc] = {}
    every_inc: list[Inc] = []
    published: set[str] = set()
    uid_first: dict[str, tuple[str, int] | None] = {}  # uid -> (producer, seq) of its first publish event
    receives_with_uid: list[tuple[str, str, int, str]] = []  # (uid, message key, i, key)
    stored: dict[tuple[str, int], dict[str, tuple[int, str]]] = {}  # (p, seq) -> msg -> (first evidence i, key)
    # (p, seq) -> its first: (i, key, t, the least stored id that shows it due: seq + 1, or its batch's send id)
    dup_receipts: dict[tuple[str, int], tuple[int, str, int, int]] = {}
    sends: dict[str, list[tuple[int, int | None, int]]] = {}  # producer -> (i, t0, seq) of sends that may be stored
    maybe_stored: set[tuple[str, int]] = set()
    # stored_below_highest: stored publish receipts, (i, t, t0, (p, seq), stream, batch, message key, key); the index
    # of each uid's first publish
    stored_receipts: list[tuple[int, int, Any, tuple[str, int], str, int, str, str]] = []
    # a stored receipt's index -> the (sequence_id, highest_sequence_id) of the batch send it came in (send_seq)
    batch_sends: dict[int, tuple[int, int]] = {}
    uid_first_i: dict[str, int] = {}
    uid_results: dict[str, list[str]] = {}  # uid -> the result of each of its publishes
    producer_opens: list[tuple[int, Any, str, int, str]] = []  # (i, t0, producer, answered id, stream)
    end: tuple[int, bool] | None = None
    # (stream, ledger, entry) -> the key of the first event (a stored publish, a receive) of any message of a
    # batch entry: the broker dispatches the entry whole by one key, so each of its messages is judged under it
    entry_key: dict[tuple[str, int, int], str] = {}
    # dead letters: (sub, message key) -> (dead_letter i, the release before it, key); live receives per message;
    # the crashes and faults, the closes; the subscriptions that saw a redeliver; the policy's maximum
    dead: dict[tuple[str, str], tuple[int, int, str]] = {}
    receipts: Counter[tuple[str, str]] = Counter()
    losses: list[int] = []  # crashes and faults: an ack in flight may be lost
    closes: list[int] = []
    redelivered_subs: set[str] = set()
    policy = header.extra.get("dead_letter")
    maximum = policy.get("max_redeliver_count") if isinstance(policy, dict) else None
    if isinstance(maximum, bool) or not isinstance(maximum, int) or maximum < 0:
        maximum = None

    def sticky(stream: str, pos: tuple[int, int, int], key: str) -> str:
        return key if pos[2] < 0 else entry_key.setdefault((stream, pos[0], pos[1]), key)

    def sub_of_late(e: Event) -> str:
        inc = last.get(e.consumer or "")
        return inc.sub if inc is not None else (e.subscription or default_sub)

    def release(inc: Inc, m: Msg, i: int, op: str, exempt: bool) -> None:
        del m.holders[inc]
        if exempt:
            m.exempt = True  # even if acknowledged: only an armed, not disarmed ack ends an exemption
        if m.acked:
            return  # owed to nobody
        if not m.holders:
            m.since = i

    def release_all(inc: Inc, i: int, op: str, exempt: bool) -> None:
        for m in msgs.get(inc.sub, {}).values():
            if inc in m.holders:
                release(inc, m, i, op, exempt)

    def joined_after(sub: str, held: Msg, r: int) -> bool:
        """Non-persistent only: a consumer joined the subscription before ``r`` and after ``held`` may have been
        dispatched (its publish; any time without one), so it took the key over at once (nothing drains there)."""
        since = -1 if held.published is None else held.published
        return non_persistent and any(since < o < r for o, _t, _topic in opens.get(sub, ()))

    def disarmed(ack_i: int, acker: Inc, r: int) -> bool:
        return any(ack_i < d < r for d in acker.disarms)

    def exempt_at(x: Msg, r: int) -> bool:
        """Released by a nack or a redeliver request, and no armed ack of it that nothing disarmed before ``r``."""
        return x.exempt and (x.armed is None or disarmed(x.armed[0], x.armed[1], r))

    for e in events:
        op, i, key = e.op.value, e.i, e.key or ""
        if op == "open":
            if e.result is not None and e.result.value != "ok":
                continue
            sub = e.subscription or default_sub
            inc = Inc(i, e.consumer or "", sub)
            live[inc.consumer] = last[inc.consumer] = inc
            every_inc.append(inc)
            base = None if e.topic is None else normalize_topic(e.topic)[0]
            opens.setdefault(sub, []).append((i, e.t, base))
        elif op in ("close", "crash"):
            (losses if op == "crash" else closes).append(i)
            inc = live.pop(e.consumer or "", None)
            if inc is not None:
                release_all(inc, i, op, False)
                if op == "crash":
                    inc.disarms.append(i)
        elif op == "redeliver":
            inc = live.get(e.consumer or "")
            if inc is not None:
                redelivered_subs.add(inc.sub)
                release_all(inc, i, op, True)
                inc.disarms.append(i)
        elif op == "fault" and e.extra.get("fault") == "expire_messages":
            # the broker acknowledged every message sent more than expire_seconds before (t0; unknown t0 or a clock
            # that did not move since the send: it may have); their holds end, and nothing is armed
            seconds = e.extra.get("expire_seconds")
            for m in msgs.get(e.subscription or default_sub, {}).values():
                t0 = m.t0
                aged = (
                    t0 is None
                    or not isinstance(seconds, int)
                    or isinstance(seconds, bool)
                    or seconds < 0
                    or t0 >= e.t
                    or t0 < e.t - seconds * 1_000_000_000
                )
                if not m.acked and aged:
                    m.holders.clear()
                    m.acked, m.since, m.delay = True, None, None
        elif op == "fault":
            losses.append(i)
            named = e.extra.get("consumers")
            if named is None or e.extra.get("unattributed"):
                touched = list(every_inc)
            else:
                touched = [last[c] for c in named if c in last]
            for inc in touched:
                if live.get(inc.consumer) is inc:
                    release_all(inc, i, op, False)
                inc.disarms.append(i)
        elif op == "end":
            end = (i, bool(e.drained))
        elif op == "producer_open":
            if e.result is not None and e.result.value == "ok" and e.producer is not None and e.seq is not None:
                base, named = normalize_topic(e.topic or "")
                producer_opens.append((i, e.extra.get("t0"), e.producer, e.seq, f"{base}|{named}"))
        elif op == "dead_letter":
            assert e.topic is not None and e.msg_id is not None
            mkey, _stream, msg = canonical_message(e.topic, e.msg_id)
            sub = e.subscription or e.extra.get("subscription") or default_sub
            if (sub, mkey) in dead:  # routed again: the broker delivered it again
                dead_i, since, dkey = dead.pop((sub, mkey))
                closed = any(since <= x <= dead_i for x in closes)
                if not closed and not any(x >= since for x in losses):
                    found[("received_after_dead_letter", sub, dkey, (dead_i, i))] += 1
            m = msgs.get(sub, {}).get(mkey)
            since = m.since if m is not None and m.free() and m.since is not None else i
            if m is not None and not m.holders:
                m.acked, m.since = True, None  # the client acknowledged the original
            dead[(sub, mkey)] = (i, since, key if m is None else m.key)
            if maximum is not None and sub not in redelivered_subs and receipts[(sub, mkey)] < maximum + 1:
                found[("dead_lettered_early", sub, key if m is None else m.key, (i,))] += 1
        elif op == "publish":
            if e.uid is not None and e.uid not in uid_first:
                uid_first[e.uid] = (e.producer, e.seq) if e.producer is not None and e.seq is not None else None
                uid_first_i[e.uid] = i
            if e.uid is not None:
                uid_results.setdefault(e.uid, []).append(e.result.value if e.result is not None else "ok")
            ps = (e.producer, e.seq) if e.producer is not None and e.seq is not None else None
            assert e.topic is not None
            mkey, stream, msg = canonical_message(e.topic, e.msg_id) if e.msg_id is not None else (None, "", "")
            ledger, entry, batch = parse_position(msg) if mkey is not None else (-1, -1, -1)
            duplicate = e.result is not None and e.result.value == "ok" and (mkey is None or ledger < 0 or entry < 0)
            if ps is not None and not duplicate:
                sends.setdefault(ps[0], []).append((i, e.extra.get("t0"), ps[1]))
            if e.result is None or e.result.value != "ok" or mkey is None or ledger < 0 or entry < 0:
                if ps is not None:
                    if duplicate:
                        send_seq = e.extra.get("send_seq")
                        need = send_seq if isinstance(send_seq, int) else ps[1] + 1
                        dup_receipts.setdefault(ps, (i, key, e.t, need))
                    else:
                        maybe_stored.add(ps)
                continue
            if ps is not None:
                stored.setdefault(ps, {}).setdefault(mkey, (i, key))
                stored_receipts.append((i, e.t, e.extra.get("t0"), ps, stream, batch, mkey, key))
                send_seq, highest_seq = e.extra.get("send_seq"), e.extra.get("highest_seq")
                if isinstance(send_seq, int) and not isinstance(send_seq, bool):
                    batch_sends[i] = (send_seq, highest_seq if isinstance(highest_seq, int) else -1)
            if mkey in published:
                continue
            published.add(mkey)
            key = sticky(stream, (ledger, entry, batch), key)
            send_t = e.extra.get("t0", e.t)
            base = normalize_topic(e.topic)[0]
            for sub, sub_opens in opens.items():
                if not any(topic in (base, None) and t <= send_t for _, t, topic in sub_opens):
                    continue
                if mkey in msgs.setdefault(sub, {}):
                    continue
                m = Msg(key, (stream, key), (ledger, entry, batch), published=i, t0=send_t)
                if mkey in acked_early.get(sub, set()):
                    acked_early[sub].discard(mkey)
                    m.acked = True
                else:
                    m.since = i
                    after = e.extra.get("deliver_after_ms") if header.extra.get("delayed_delivery") else None
                    if isinstance(after, int) and not isinstance(after, bool) and after > 0:
                        conf = header.extra.get("broker_conf")
                        tick = conf.get("delayedDeliveryTickTimeMillis", 1000) if isinstance(conf, dict) else 1000
                        m.delay = (i, send_t, send_t + (after - tick) * 1_000_000)
                msgs[sub][mkey] = m
        elif op in ("receive", "ack", "nack"):
            assert e.topic is not None and e.msg_id is not None
            mkey, stream, msg = canonical_message(e.topic, e.msg_id)
            inc = live.get(e.consumer or "")
            sub = inc.sub if inc is not None else sub_of_late(e)
            records = msgs.setdefault(sub, {})
            m = records.get(mkey)
            if op == "receive":
                if inc is not None:
                    if (sub, mkey) in dead:
                        dead_i, since, dkey = dead.pop((sub, mkey))
                        closed = any(since <= x <= dead_i for x in closes)
                        if not closed and not any(x >= since for x in losses):
                            found[("received_after_dead_letter", sub, dkey, (dead_i, i))] += 1
                    receipts[(sub, mkey)] += 1
                if e.uid is not None:
                    receives_with_uid.append((e.uid, mkey, i, key))
                if non_persistent:
                    if (sub, mkey) in received_first:
                        found[("delivered_twice", sub, key, (received_first[(sub, mkey)], i))] += 1
                    else:
                        received_first[(sub, mkey)] = i
                if m is None:
                    pos = parse_position(msg)
                    sk = sticky(stream, pos, key)
                    m = records[mkey] = Msg(sk, (stream, sk), pos)
                    if mkey in acked_early.get(sub, set()):
                        acked_early[sub].discard(mkey)
                        m.acked = True
                    elif inc is None:
                        m.since = i  # a late receive: known, and needs delivery again
                if inc is None or inc in m.holders:
                    continue  # late, or absorbed: judged by nothing
                if m.delay is not None:
                    pub_i, sent, allowed = m.delay
                    m.delay = None
                    if sent < e.t < allowed:  # before its time, by a clock that moved since the send
                        found[("delivered_early", sub, m.key, (pub_i, i))] += 1
                if m.armed is not None:
                    ack_i, acker, hold_i = m.armed
                    m.armed = None
                    nacks = acker.batch_nacks.get((m.scope, m.pos[:2]), [])

                    def same_copy(
                        x: Msg, acker: Inc = acker, hold_i: int = hold_i, nacks: list[int] = nacks, i: int = i
                    ) -> bool:
                        # acknowledged by the acker holding it, not disarmed since, no nack of the entry between
                        # the receives that began the two acknowledged holds
                        if not x.acked or x.armed is None or x.armed[1] is not acker:
                            return False
                        lo, hi = sorted((x.armed[2], hold_i))
                        return not disarmed(x.armed[0], acker, i) and not any(lo < n < hi for n in nacks)

                    batch_owed = (
                        m.pos[2] >= 0
                        and any(  # a whole batch again: not every copy was acknowledged
                            x is not m and x.scope == m.scope and x.pos[:2] == m.pos[:2] and not same_copy(x)
                            for x in records.values()
                        )
                    )
                    if not disarmed(ack_i, acker, i) and not batch_owed:
                        found[("redelivered_after_ack", sub, m.key, (ack_i, i))] += 1
                        m.acked = False
                same_scope = [x for x in records.values() if x.scope == m.scope]
                pending = [x for x in same_scope if not x.acked]  # an acknowledged message holds no key
                if not m.acked and not any(inc in x.holders for x in pending):
                    others = {h for x in pending for h in x.holders}
                    for other in others:
                        first, held = min((x.holders[other], id(x), x) for x in pending if other in x.holders)[::2]
                        if not joined_after(sub, held, i):
                            found[("key_overlap", sub, m.key, (first, i))] += 1
                owed = [
                    x
                    for x in same_scope
                    if x.pos < m.pos
                    and not x.acked
                    and inc not in x.holders
                    and x is not m
                    and x.delay is None  # delayed: not owed in its key's order until received
                    and (x.holders or not non_persistent)  # non-persistent: nothing free is owed
                ]
                if owed and not any(x.pos < m.pos and exempt_at(x, i) for x in same_scope):
                    earliest = min(owed, key=lambda x: x.pos)
                    witness = earliest.since if earliest.free() else min(earliest.holders.values())
                    assert witness is not None
                    if earliest.free() or not joined_after(sub, earliest, i):
                        found[("out_of_order", sub, m.key, tuple(sorted((witness, i))))] += 1
                m.holders[inc] = i
                m.since = None
            elif op == "ack":
                if m is None:
                    acked_early.setdefault(sub, set()).add(mkey)
                    continue
                held_since = m.holders.get(inc) if inc is not None else None  # None: it arms nothing
                m.holders.clear()
                m.acked, m.since = True, None  # an exemption stays: exempt_at asks for an armed ack
                if held_since is not None:
                    assert inc is not None
                    m.armed = (i, inc, held_since)
            else:  # nack
                if inc is None or m is None:
                    continue
                if m.pos[2] >= 0:
                    inc.batch_nacks.setdefault((m.scope, m.pos[:2]), []).append(i)
                    for x in msgs.get(sub, {}).values():  # the client sends the whole entry back
                        if x is not m and x.scope == m.scope and x.pos[:2] == m.pos[:2] and inc in x.holders:
                            release(inc, x, i, op, True)
                if inc in m.holders:
                    release(inc, m, i, op, True)
                else:  # acknowledged or not: an ack that is not armed may never have taken effect
                    m.exempt = True

    if end is not None and end[1]:
        for sub, records in msgs.items():
            for m in records.values():
                if m.free():
                    assert m.since is not None
                    found[("undelivered", sub, m.key, (m.since,))] += 1
    # a uid received while every publish of it failed: unexpected_message at its first receive
    first_any: dict[str, tuple[int, str]] = {}
    for uid, _mkey, i, key in receives_with_uid:
        first_any.setdefault(uid, (i, key))
    for uid, (i, key) in first_any.items():
        if uid in uid_results and all(r == "fail" for r in uid_results[uid]):
            found[("unexpected_message", None, key, (i,))] += 1
    first_receive: dict[str, tuple[int, str]] = {}
    for uid, mkey, i, key in receives_with_uid:
        if uid not in uid_first:
            first_receive.setdefault(uid, (i, key))
        elif uid_first[uid] is not None:
            ps = uid_first[uid]
            assert ps is not None
            have = stored.setdefault(ps, {}).get(mkey)
            if have is None or i < have[0]:
                stored[ps][mkey] = (i, key)
    for i, key in first_receive.values():
        found[("unexpected_message", None, key, (i,))] += 1
    for ids in stored.values():
        evidence = sorted(ids.values())
        for i, key in evidence[1:]:
            found[("duplicate_publish", None, key, (evidence[0][0], i))] += 1
    clusters = header.extra.get("clusters")
    if header.deduplication and not (isinstance(clusters, list) and len(clusters) >= 2):
        # stored_below_highest: a stored receipt of an unbatched (p, s) logged after a receipt of a higher id of p on
        # the same stream, stored as the first message of its entry; unless an event before it showed (p, s) stored
        # under another message id.  Witness: the first receipt of the highest such id, and this one.
        # last_sequence_id_behind: a producer_open whose answer is below such an id logged before it.
        # When the engine learns that an event evidences (p, s) stored: a publish at its index; a receive once its
        # uid is published (a receive before the uid's first publish is learnt at that publish, before it is judged)
        evidence: list[tuple[float, tuple[str, int], str]] = [(r[0], r[3], r[6]) for r in stored_receipts]
        for uid, mkey, recv_i, _key in receives_with_uid:
            ps_u = uid_first.get(uid)
            if ps_u is not None:
                evidence.append((max(recv_i, uid_first_i[uid]) - 0.5, ps_u, mkey))

        def highest_before(i: int, stream: str, producer: str) -> tuple[int, int, tuple[int, int]] | None:
            """The highest id stored as an entry's first message in receipts logged before E``i``: (seq, its first
            receipt's index, its position)."""
            # what each entry's first message shows pushed: its seq, or a batch send's max(send id, highest id)
            before = [
                (
                    max(batch_sends[h_i]) if h_batch == 0 and h_i in batch_sends else h_ps[1],
                    h_i,
                    parse_position(h_m.rpartition("|")[2])[:2],
                )
                for h_i, _h_t, _h0, h_ps, h_stream, h_batch, h_m, _k in stored_receipts
                if h_i < i and h_stream == stream and h_ps[0] == producer and h_batch <= 0
            ]
            if not before:
                return None
            return min((r for r in before if r[0] == max(seq for seq, _, _ in before)), key=lambda r: r[1])

        for i, _t, _t0, ps, stream, batch, mkey, key in stored_receipts:
            # judged: an unbatched send by its seq, a batch sent with its ids by its send id (at its first message)
            if batch > 0 or (batch == 0 and i not in batch_sends):
                continue
            judged = ps[1] if batch < 0 else batch_sends[i][0]
            if any(e_ps == ps and e_mkey != mkey and e_i < i for e_i, e_ps, e_mkey in evidence):
                continue
            top = highest_before(i, stream, ps[0])
            if top is not None and top[0] > judged and top[2] < parse_position(mkey.rpartition("|")[2])[:2]:
                found[("stored_below_highest", None, key, (top[1], i))] += 1
        for i, _t0, producer, answer, stream in producer_opens:
            top = highest_before(i, stream, producer)
            if top is not None and top[0] > answer:
                found[("last_sequence_id_behind", None, None, (top[1], i))] += 1
    for ps, (i, key, t, need) in dup_receipts.items():
        # Pulsar answers -1:-1 to a send id at or below the highest id stored: a send of an id at least ``need`` (a
        # higher id; for a batch sent with its ids, its send id) that may be stored and may have been sent before
        # the receipt was logged (logged before it, or t0 unknown or not later) excuses
        higher = any(seq >= need and (s_i < i or t0 is None or t0 <= t) for s_i, t0, seq in sends.get(ps[0], ()))
        if ps not in stored and ps not in maybe_stored and not higher:
            found[("lost_write", None, key, (i,))] += 1
    # an expiry is the broker acknowledging (docs/checker.md, "Message expiry"): it touches no consumer
    if not any(e.op.value == "fault" and e.extra.get("fault") != "expire_messages" for e in events):
        keys = {(sub, mkey): m.key for sub, records in msgs.items() for mkey, m in records.items()}
        _wrong_redelivery_counts(header, events, default_sub, keys, found)
    found.update(compacted_reads(events))
    _refused_opens(header, events, default_sub, found)
    found.update(unacked_limit_excess(header, events, default_sub))
    found.update(lookahead_excess(header, events, default_sub))
    return found


#: Words of a refused subscribe's ``error`` that name a refusal (docs/checker.md, ``refused_open``).
_REFUSALS = ("ConsumerBusy", "different type", "ConsumerAssign", "Range conflict", "No more range")


def _refused_opens(header: TraceHeader, events: Sequence[Event], default_sub: str, found: Counter[Identity]) -> None:
    """``refused_open`` as ``docs/checker.md`` states it, by scanning the events until the first fault (an expiry
    is none): a refused open (``fail``) with a ``t0`` and an error naming a refusal, when no earlier consumer of
    its subscription may still be registered (an ``ok``/``info`` open whose ``closed``/``gone`` is not strictly
    before ``t0``), or all of them have its mode and flag and the header's selector takes it.  The selector is
    read here as the documentation states Pulsar's: consistent hashing takes every consumer, STICKY refuses a
    range overlapping another consumer's; an auto-split split is not re-derived (not judged)."""
    spec = header.selector
    kind = None if spec is None else spec.kind
    members: dict[str, list[list[Any]]] = {}  # sub -> [name, mode, flag, ranges, completed t or None]
    last: dict[str, list[Any]] = {}  # handle -> its last ok open's entry
    live: set[str] = set()
    for e in events:
        op, handle = e.op.value, e.consumer or ""
        if op == "fault" and e.extra.get("fault") != "expire_messages":
            return
        if op in ("close", "crash"):
            live.discard(handle)
        elif op in ("closed", "gone"):
            entry = last.get(handle)
            if entry is not None and handle not in live and entry[4] is None:
                entry[4] = e.t
        if op != "open":
            continue
        result = "ok" if e.result is None else e.result.value
        sub = e.subscription or default_sub
        policy = e.extra.get("policy") or {}
        ranges = policy.get("sticky_ranges") or None
        entry = [e.extra.get("name") or handle, policy.get("key_shared_mode"), policy.get(
            "allow_out_of_order_delivery"), ranges, None]  # fmt: skip
        if result != "fail":
            members.setdefault(sub, []).append(entry)
            if result == "ok":
                last[handle] = entry
                live.add(handle)
            continue
        error, t0 = e.extra.get("error"), e.extra.get("t0")
        if not isinstance(error, str) or t0 is None or not any(word in error for word in _REFUSALS):
            continue
        maybe = [m for m in members.get(sub, ()) if m[4] is None or m[4] >= t0]
        if maybe:
            mode, flag = entry[1], entry[2]
            if mode is None or flag is None or any(m[1] != mode or m[2] != flag for m in maybe):
                continue
            if kind not in ("sticky", "consistent-hashing") or (kind == "sticky") != (mode == "STICKY"):
                continue
            if kind == "sticky":
                taken = [r for m in maybe for r in (m[3] or ())]
                mine = list(ranges or ())
                if not mine or not _disjoint(taken) or not _disjoint(mine):
                    continue  # a STICKY consumer without ranges, or members that already conflict: not judged
                if not _disjoint(taken + mine):
                    continue
        found[("refused_open", sub, None, (e.i,))] += 1


def _disjoint(ranges: Sequence[Sequence[int]]) -> bool:
    """Whether the inclusive hash ranges are valid (0 <= start <= end <= 65535) and pairwise without overlap."""
    if any(not 0 <= a <= b <= 65535 for a, b in ranges):
        return False
    ordered = sorted((a, b) for a, b in ranges)
    return all(prev[1] < nxt[0] for prev, nxt in pairwise(ordered))


def compacted_reads(events: Sequence[Event]) -> Counter[Identity]:
    """``superseded_after_compaction``, read from docs/checker.md by scanning: for each receive of a compacted
    reader on cluster C, the last ``compaction`` on C before the reader opened; the ``ok`` publishes on C before it
    with the received key; if the received message is not the one among them at the highest message id (and no
    other cluster published that key before the compaction), one violation witnessed by that latest publish."""

    def cluster(e: Event) -> str | None:
        topic = e.topic or ""
        return topic.rsplit("@", 1)[1] if "@" in topic else None

    found: Counter[Identity] = Counter()
    for o in events:
        if o.op.value != "open" or o.extra.get("reader") is not True or o.extra.get("compacted") is not True:
            continue
        c = cluster(o)
        horizons = [f.i for f in events if f.i < o.i and f.op.value == "fault" and f.extra.get("fault") == "compaction"
                    and f.extra.get("cluster") == c]  # fmt: skip
        if c is None or not horizons:
            continue
        h = horizons[-1]
        reads = []
        for r in events:
            if r.i <= o.i:
                continue
            if r.op.value in ("close", "crash") and r.consumer == o.consumer:
                break
            if r.op.value == "receive" and r.consumer == o.consumer:
                reads.append(r)
        for r in reads:
            sent = [p for p in events if p.op.value == "publish" and p.i < h and p.key == r.key]
            if any(cluster(p) != c for p in sent):
                continue
            ok = [p for p in sent if p.result is not None and p.result.value == "ok" and p.msg_id and p.uid]
            if not ok or r.uid not in {p.uid for p in ok}:
                continue
            latest = max(ok, key=lambda p: parse_position(canonical_message(str(p.topic), str(p.msg_id))[2]))
            if latest.uid != r.uid:
                found[("superseded_after_compaction", o.consumer, r.key, (latest.i, h, r.i))] += 1
    return found


def _wrong_redelivery_counts(
    header: TraceHeader,
    events: Sequence[Event],
    default_sub: str,
    keys: dict[tuple[str, str], str],
    found: Counter[Identity],
) -> None:
    """``wrong_redelivery_count`` as ``docs/checker.md`` states it, by scanning the events (only for a trace
    without a fault): for a live receive r2 of a message (no batch index) whose previous live receive r1 in the
    subscription was by the same incarnation, both with a count, and no ack of it in the subscription before r2:
    the count fell; or the incarnation sent it back between them (its first nack of it or redeliver) and r2 carries
    no more (a nack or a redeliver raises it on every release: before 2.11 at the next send)."""
    live: dict[str, tuple[int, str]] = {}  # handle -> (open index, subscription)
    last: dict[str, tuple[int, str]] = {}
    previous: dict[tuple[str, str], tuple[int, int, int | None, str, str]] = {}  # (sub, msg) -> r1
    acked: set[tuple[str, str]] = set()
    requests: list[tuple[int, int, str, str | None]] = []  # (i, incarnation, op, message key or None)
    for e in events:
        op, handle = e.op.value, e.consumer or ""
        if op == "open" and (e.result is None or e.result.value == "ok"):
            live[handle] = last[handle] = (e.i, e.subscription or default_sub)
        elif op in ("close", "crash"):
            live.pop(handle, None)
        elif op == "redeliver" and handle in live:
            requests.append((e.i, live[handle][0], op, None))
        elif op in ("receive", "ack", "nack"):
            assert e.topic is not None and e.msg_id is not None
            mkey, _stream, msg = canonical_message(e.topic, e.msg_id)
            inc = live.get(handle)
            sub = inc[1] if inc is not None else last.get(handle, (0, e.subscription or default_sub))[1]
            if op == "ack":
                acked.add((sub, mkey))
            elif op == "nack" and inc is not None:
                requests.append((e.i, inc[0], op, mkey))
            elif op == "receive" and inc is not None and parse_position(msg)[2] < 0:
                r1 = previous.get((sub, mkey))
                previous[(sub, mkey)] = (e.i, inc[0], e.redelivery_count, handle, e.key or "")
                if r1 is None or r1[1] != inc[0] or (sub, mkey) in acked:
                    continue
                before, now = r1[2], e.redelivery_count
                if before is None or now is None:
                    continue
                sent = [r for r in requests if r1[0] < r[0] < e.i and r[1] == inc[0] and r[3] in (None, mkey)]
                request = sent[0] if sent else None
                raises = request is not None
                if now < before or (raises and now <= before):
                    witness = (r1[0], e.i) if request is None else (r1[0], request[0], e.i)
                    found[("wrong_redelivery_count", sub, keys[(sub, mkey)], witness)] += 1


def unacked_limit_excess(header: TraceHeader, events: Sequence[Event], default_sub: str) -> Counter[Identity]:
    """``received_beyond_unacked_limit`` as ``docs/checker.md`` states it, by scanning: the limit is a positive
    ``maxUnackedMessagesPerConsumer`` of the header's ``broker_conf`` (none on a non-persistent topic). At a live
    receive r of message m by handle h, m counts as held by h when h received it after h's latest open, close or
    crash, and after the latest release of it before r: an ack of it by anyone, h's nack of it, h's redeliver, any
    fault; a receive that an ack of it (in that window, since h's previous receive of it) preceded is no hold.
    If m is not held, the entries of the held messages, but m's, are counted (a message without a batch index
    is an entry of its own); at or over the limit, one violation witnessed by the first and the last of their
    receives (where their hold began) and r, unless h's previous such receive (since its latest open, close, crash
    or a fault) was over too."""
    conf = header.extra.get("broker_conf")
    if not isinstance(conf, dict) or header.extra.get("topic_kind") == "non-persistent":
        return Counter()
    limit = conf.get("maxUnackedMessagesPerConsumer")
    found: Counter[Identity] = Counter()
    if type(limit) is not int or limit <= 0:
        return found
    ops = [(e.i, e.op.value, e.consumer or "", e) for e in events]
    live: dict[str, str] = {}  # handle -> subscription
    over: dict[str, bool] = {}
    for i, op, handle, e in ops:
        if op == "open":
            over[handle] = False
            if e.result is None or e.result.value == "ok":
                live[handle] = e.subscription or default_sub
            else:
                live.pop(handle, None)
        elif op in ("close", "crash"):
            live.pop(handle, None)
            over[handle] = False
        elif op == "fault":
            over = {h: False for h in over}
        if op != "receive" or handle not in live:
            continue
        assert e.topic is not None and e.msg_id is not None
        mkey, stream, msg = canonical_message(e.topic, e.msg_id)
        pos = parse_position(msg)
        start = max((j for j, o, h, _ in ops if j < i and h == handle and o in ("open", "close", "crash")), default=-1)
        faults = [j for j, o, _h, _ in ops if j < i and o == "fault"]
        start = max([start, *faults])

        def hold_began(key: str, before: int, handle: str = handle, start: int = start) -> int | None:
            """Where h's hold of ``key`` that is still on at ``before`` began (None: h does not hold it).  A
            receive that an ack of the message (by anyone, in the window, since h's previous receive of it)
            preceded starts no hold: the broker may have sent it before that ack arrived."""
            began = None
            acked = False
            entry = key.rsplit(":", 1)[0] if not key.endswith(":-1") else None  # a batch message's entry
            for j, o, h, f in ops:
                if j <= start or j >= before:
                    continue
                if f.topic is None or f.msg_id is None:
                    if o == "redeliver" and h == handle:
                        began = None
                    continue
                other = canonical_message(f.topic, f.msg_id)[0]
                if other != key:
                    if o == "nack" and h == handle and entry is not None and other.rsplit(":", 1)[0] == entry:
                        began = None  # a nack of another message of its batch sends the whole entry back
                    continue
                if o == "ack":
                    began = None
                    acked = True
                elif o == "nack" and h == handle:
                    began = None
                elif o == "receive" and h == handle and began is None:
                    if acked:
                        acked = False
                    else:
                        began = j
            return began

        if hold_began(mkey, i) is not None:
            continue
        received = {
            canonical_message(f.topic, f.msg_id)
            for j, o, h, f in ops
            if start < j < i and o == "receive" and h == handle and f.topic is not None and f.msg_id is not None
        }
        held: list[int] = []
        entries: set[tuple[str, int, int, int]] = set()
        for other, other_stream, other_msg in received:
            other_pos = parse_position(other_msg)
            same_entry = pos[2] >= 0 and (other_stream, other_pos[:2]) == (stream, pos[:2]) and other_pos[2] >= 0
            began = hold_began(other, i)
            if began is not None and not same_entry:
                held.append(began)
                entries.add((other_stream, other_pos[0], other_pos[1], min(other_pos[2], 0)))
        if len(entries) < limit:
            over[handle] = False
            continue
        if not over.get(handle, False):
            over[handle] = True
            found[
                ("received_beyond_unacked_limit", live[handle], e.key or "", tuple(sorted({min(held), max(held), i})))
            ] += 1
    return found


def lookahead_excess(header: TraceHeader, events: Sequence[Event], default_sub: str) -> Counter[Identity]:
    """``received_beyond_lookahead`` as ``docs/checker.md`` states it ("The look-ahead limit"), by scanning.

    Judged when the header's ``broker_conf`` names a look-ahead threshold, the subscription is Key_Shared on a
    persistent topic of a 4.x (or later) broker not running the classic dispatcher, no delayed delivery, no
    clusters, and no open names another subscription. L: Pulsar's getEffectiveLookAheadLimit (defaults 2000, 20000,
    50000, 200000) for as many consumers as the trace opened (ok or unknown outcome). A: for every such open its
    ``receiver_queue`` (1000 when absent) + 2, again for every redeliver of a handle (its latest open's queue), and
    for every fault the queues of the handles open then. At each receive r of entry p (any handle): the ok receipts
    with a real id in p's stream, logged before r, after the latest fault before r and after the first open, below
    p, whose entry no receive before r named. The largest such count (the first receive with it) over L + A: one
    violation."""
    conf = header.extra.get("broker_conf")
    names = (
        "keySharedLookAheadMsgInReplayThresholdPerConsumer",
        "keySharedLookAheadMsgInReplayThresholdPerSubscription",
    )
    found: Counter[Identity] = Counter()
    if not isinstance(conf, dict) or not any(n in conf for n in names):
        return found
    version = header.pulsar_version or ""
    major = version.split(".")[0]
    if (
        header.extra.get("topic_kind") == "non-persistent"
        or header.extra.get("delayed_delivery")
        or header.extra.get("clusters")
        or header.subscription.type.lower() != "key_shared"
        or header.implementation == "classic"
        or (major.isdigit() and int(major) < 4)
    ):
        return found
    defaults = {names[0]: 2000, names[1]: 20000, "maxUnackedMessagesPerConsumer": 50000,
                "maxUnackedMessagesPerSubscription": 200000}  # fmt: skip
    values = {n: conf.get(n, d) for n, d in defaults.items()}
    if any(type(v) is not int or v < 0 for v in values.values()):
        return found
    queues: dict[str, int] = {}  # handle -> its latest open's receiver queue
    live: set[str] = set()
    opened = 0
    allowance = 0
    best: tuple[int, int, str] | None = None  # (count, i, key)
    first_open = next(
        (j for j, e in enumerate(events) if e.op.value == "open" and (e.result is None or e.result.value != "fail")),
        len(events),
    )
    for r_at, e in enumerate(events):
        op = e.op.value
        if op == "open" and (e.result is None or e.result.value != "fail"):
            if e.subscription not in (None, default_sub):
                return found
            q = e.extra.get("receiver_queue")
            q = q if type(q) is int and q >= 0 else 1000
            queues[e.consumer or ""] = q
            live.add(e.consumer or "")
            opened += 1
            allowance += q + 2
        elif op in ("close", "crash"):
            live.discard(e.consumer or "")
        elif op == "redeliver":
            allowance += queues.get(e.consumer or "", 1000) + 2
        elif op == "fault":
            allowance += sum(queues[h] + 2 for h in live)
        if op != "receive" or e.topic is None or e.msg_id is None:
            continue
        _mkey, stream, msg = canonical_message(e.topic, e.msg_id)
        p = parse_position(msg)[:2]
        last_fault = max((j for j in range(r_at) if events[j].op.value == "fault"), default=-1)
        shown = set()
        for f in events[:r_at]:
            if f.op.value == "receive" and f.topic is not None and f.msg_id is not None:
                _k, s, m = canonical_message(f.topic, f.msg_id)
                if s == stream:
                    shown.add(parse_position(m)[:2])
        unsent = set()
        for j in range(max(last_fault + 1, first_open + 1), r_at):
            f = events[j]
            if f.op.value != "publish" or f.result is None or f.result.value != "ok" or f.msg_id is None:
                continue
            if f.topic is None:
                continue
            _k, s, m = canonical_message(f.topic, f.msg_id)
            q2 = parse_position(m)[:2]
            if s == stream and q2[0] >= 0 and q2[1] >= 0 and q2 < p and q2 not in shown:
                unsent.add(q2)
        if unsent and (best is None or len(unsent) > best[0]):
            best = (len(unsent), e.i, e.key or "")
    if best is None:
        return found
    n = max(opened, 1)
    pc, ps = values[names[0]], values[names[1]]
    limit = pc * n if pc > 0 else ps
    if pc > 0 and 0 < ps < limit:
        limit = ps
    if limit <= 0:
        ms, mc = values["maxUnackedMessagesPerSubscription"], values["maxUnackedMessagesPerConsumer"] * n
        limit = min(ms if ms > 0 else 2**31 - 1, mc if mc > 0 else 2**31 - 1)
    if best[0] > limit + allowance:
        found[("received_beyond_lookahead", default_sub, best[2], (best[1],))] += 1
    return found


def engine_identities(violations: Sequence[Any]) -> Counter[Identity]:
    """The engine's violations (but ``misassigned``) as the same multiset."""
    return Counter(v.identity() for v in violations if v.kind.value != "misassigned")


#: ``docs/checker.md`` "Profiles and the verdict", read again: the kinds each header-derived contract permits
_PERMITTED_BY_CONTRACT: dict[str, frozenset[str]] = {
    "shared": frozenset({"key_overlap", "out_of_order", "misassigned", "accepted_conflicting_open", "refused_open"}),
    # allowOutOfOrderDelivery: no draining hashes, no recently-joined limit, no hash blocked for ordering, so a
    # key moves while held and order across consumers is not kept; routing, delivery and acks still hold
    "out-of-order": frozenset({"key_overlap", "out_of_order"}),
    "sticky": frozenset({"undelivered"}),
    "classic": frozenset({"key_overlap"}),
    "pip379": frozenset(),
}


def permitted_by_header(header: TraceHeader) -> frozenset[str]:
    """The kinds the contract the header records permits (no ``--profile``): Shared, then out-of-order delivery,
    then STICKY, then the classic dispatcher or a release before 4.0, else PIP-379; deduplication off adds
    ``duplicate_publish``."""
    sub = header.subscription
    version = header.pulsar_version
    if sub.type.lower() == "shared":
        contract = "shared"
    elif sub.allow_out_of_order_delivery:
        contract = "out-of-order"
    elif sub.key_shared_mode.upper() == "STICKY":
        contract = "sticky"
    elif header.implementation == "classic" or (version is not None and int(version.split(".")[0]) < 4):
        contract = "classic"
    else:
        contract = "pip379"
    permitted = _PERMITTED_BY_CONTRACT[contract]
    return permitted if header.deduplication else permitted | {"duplicate_publish"}


def forbidden(header: TraceHeader, found: Counter[Identity]) -> Counter[Identity]:
    """The identities of ``found`` the header's contract forbids: what makes the trace invalid."""
    allowed = permitted_by_header(header)
    return Counter({identity: n for identity, n in found.items() if identity[0] not in allowed})
