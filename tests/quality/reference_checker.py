"""An independent reading of ``docs/checker.md``: small, slow and plain, for differential testing.

Written from the documentation, not from :mod:`conformance.checks`: every message keeps one record that is never
compacted, every question ("is an earlier message free?", "who holds this key?") is answered by scanning all
records, and a disarm is looked up in the list of events that disarm.  It judges every kind but
``misassigned`` (that one asks the reference selectors, shared by both engines, so a second reading would only
repeat them).  It uses only the trace format's own helpers (canonical message ids and topic names).

It returns violation identities, ``(kind, subscription, key, events)``, the same tuple
:meth:`conformance.violations.Violation.identity` gives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
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

    def free(self) -> bool:
        return not self.acked and not self.holders


def reference_check(header: TraceHeader, events: Sequence[Event]) -> Counter[Identity]:
    """Every violation (but ``misassigned``) of the trace, as a multiset of identities."""
    default_sub = header.subscription.name
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
    dup_receipts: dict[tuple[str, int], tuple[int, str, int]] = {}  # (p, seq) -> its first: (i, key, t)
    sends: dict[str, list[tuple[int, int | None, int]]] = {}  # producer -> (i, t0, seq) of sends that may be stored
    maybe_stored: set[tuple[str, int]] = set()
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
                        dup_receipts.setdefault(ps, (i, key, e.t))
                    else:
                        maybe_stored.add(ps)
                continue
            if ps is not None:
                stored.setdefault(ps, {}).setdefault(mkey, (i, key))
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
                m = Msg(key, (stream, key), (ledger, entry, batch))
                if mkey in acked_early.get(sub, set()):
                    acked_early[sub].discard(mkey)
                    m.acked = True
                else:
                    m.since = i
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
                        first = min(x.holders[other] for x in pending if other in x.holders)
                        found[("key_overlap", sub, m.key, (first, i))] += 1
                owed = [x for x in same_scope if x.pos < m.pos and not x.acked and inc not in x.holders and x is not m]
                if owed and not any(x.pos < m.pos and exempt_at(x, i) for x in same_scope):
                    earliest = min(owed, key=lambda x: x.pos)
                    witness = earliest.since if earliest.free() else min(earliest.holders.values())
                    assert witness is not None
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
    for ps, (i, key, t) in dup_receipts.items():
        # Pulsar answers -1:-1 at or below the highest id stored: a send of a higher id that may be stored and
        # may have been sent before the receipt was logged (logged before it, or t0 unknown or not later) excuses
        higher = any(seq > ps[1] and (s_i < i or t0 is None or t0 <= t) for s_i, t0, seq in sends.get(ps[0], ()))
        if ps not in stored and ps not in maybe_stored and not higher:
            found[("lost_write", None, key, (i,))] += 1
    return found


def engine_identities(violations: Sequence[Any]) -> Counter[Identity]:
    """The engine's violations (but ``misassigned``) as the same multiset."""
    return Counter(v.identity() for v in violations if v.kind.value != "misassigned")
