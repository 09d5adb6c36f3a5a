"""One pass over a trace that gathers what the report draws: holds, marks, witness lines, throughput.

A *hold* is what the checker calls an outstanding message: it runs from a ``receive`` until that consumer's
``ack`` or ``nack`` of the message (or anyone's ack), its ``redeliver``, ``close`` or ``crash``, or a ``fault``
(only the named ``consumers`` when the fault lists them), whichever comes first.  The picture follows the
checker's release rules so that an overlap drawn is an overlap judged.

Small traces are drawn in full.  Above :data:`FULL_EVENTS` events, only the keys that hold violations are
drawn (at most :data:`MAX_KEYS`), and on each only the time windows around its violations' witnesses; every
other event is counted in the throughput series and in :attr:`Collected.summarised`, which the page states.
The pass reads the trace's columnar batches (the checker's fast path) and looks at each row only when it is
drawn, so it costs less than the check itself.  In a summarised trace an ``ack`` or ``nack`` is matched to the
drawn keys by its ``key`` field (the driver records it on every ack); one without it shows as never released.
Pure: values in, values out; the caller opens the trace.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FULL_EVENTS",
    "MAX_KEYS",
    "MAX_MARKS",
    "WINDOW_PAD",
    "Collected",
    "Focus",
    "Row",
    "collect",
    "focus_of",
    "rows_of_events",
]

#: Traces with at most this many events are drawn in full.
FULL_EVENTS = 20_000
#: At most this many key lanes are drawn (the ones with the most violations first).
MAX_KEYS = 60
#: Events drawn on each side of a violation's witnesses in a summarised trace.
WINDOW_PAD = 300
#: Membership and fault marks kept (a long soak may have thousands of joins and leaves).
MAX_MARKS = 4_000
#: Throughput buckets at most (the width in events doubles when there would be more).
MAX_BUCKETS = 400

#: Ops drawn on every lane or across all lanes: the membership changes and faults.
GLOBAL_OPS = frozenset({"open", "close", "crash", "fault", "redeliver", "end"})
#: Ops that end a consumer's holds.
_RELEASE_ALL = frozenset({"redeliver", "close", "crash"})


@dataclass(frozen=True, slots=True)
class Row:
    """The fields of one event the report uses.  ``mkey`` identifies the message (topic and id)."""

    i: int
    t: int
    op: str
    consumer: str | None = None
    key: str | None = None
    mkey: str | None = None
    msg_id: str | None = None
    subscription: str | None = None
    name: str | None = None
    sticky_ranges: tuple[tuple[int, int], ...] | None = None
    result: str | None = None
    fault_consumers: tuple[str, ...] | None = None
    line: str | None = None  #: the event as a JSON line (kept for witnesses only)


@dataclass(frozen=True, slots=True)
class Focus:
    """What to draw: every key (``keys is None``) or some keys, each within windows of event indices."""

    keys: frozenset[str] | None
    windows: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    witnesses: frozenset[int] = frozenset()
    reason: str = ""

    def wants_key(self, key: str) -> bool:
        return self.keys is None or key in self.keys

    def in_window(self, key: str, lo: int, hi: int) -> bool:
        """Whether ``[lo, hi]`` meets one of ``key``'s windows (always, when drawing in full)."""
        if self.keys is None:
            return True
        return any(a <= hi and lo <= b for a, b in self.windows.get(key, ()))


def focus_of(violations: Sequence[Mapping[str, Any]], events: int) -> Focus:
    """Choose what to draw from the verdict's violations (dicts of ``Violation.to_dict()``) and the size."""
    witnesses = frozenset(i for v in violations for i in v.get("events", ()))
    if events <= FULL_EVENTS:
        return Focus(keys=None, witnesses=witnesses)
    per_key: dict[str, list[tuple[int, int]]] = {}
    for v in violations:
        key, evs = v.get("key"), v.get("events") or ()
        if key is None or not evs:
            continue
        per_key.setdefault(key, []).append((min(evs) - WINDOW_PAD, max(evs) + WINDOW_PAD))
    ranked = sorted(per_key, key=lambda k: (-len(per_key[k]), k))[:MAX_KEYS]
    windows = {k: _merge(per_key[k]) for k in ranked}
    if not per_key:
        reason = (
            f"the trace has {events} events (more than {FULL_EVENTS}) and no violation on a key: no key lane is"
            " drawn, only the membership changes and faults"
        )
        return Focus(keys=frozenset(), windows={}, witnesses=witnesses, reason=reason)
    reason = (
        f"the trace has {events} events (more than {FULL_EVENTS}): drawn in full are the {len(ranked)} key(s)"
        f" with the most violations (of {len(per_key)} with violations), each within {WINDOW_PAD} events of its"
        " violations' witnesses"
    )
    return Focus(keys=frozenset(ranked), windows=windows, witnesses=witnesses, reason=reason)


def _merge(windows: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(windows):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


@dataclass
class Collected:
    """What one pass found.  Holds per key: ``[start_i, end_i, consumer, end_op, msg_id, start_t, end_t]`` (end -1:
    never released); marks ``[i, op, consumer, t]``; global marks ``[i, op, consumer, label, t]``."""

    events: int = 0
    first: tuple[int, int] | None = None  #: (i, t) of the first event
    last: tuple[int, int] | None = None  #: (i, t) of the last event
    holds: dict[str, list[list[Any]]] = field(default_factory=dict)
    marks: dict[str, list[list[Any]]] = field(default_factory=dict)
    global_marks: list[list[Any]] = field(default_factory=list)
    membership: list[Row] = field(default_factory=list)  #: every open/close/crash/fault, in order
    witness_rows: dict[int, Row] = field(default_factory=dict)
    consumers: list[str] = field(default_factory=list)  #: handles in order of first appearance
    keys_seen: int = 0
    bucket: int = 1  #: throughput bucket width, in events
    series: dict[int, list[int]] = field(default_factory=dict)  #: bucket -> [t_first, t_last, pub, recv, ack]
    summarised: list[str] = field(default_factory=list)
    marks_dropped: int = 0


class _Pass:
    def __init__(self, focus: Focus) -> None:
        self.focus = focus
        self.out = Collected()
        self.held: dict[str, dict[str, list[Any]]] = {}  # consumer -> mkey -> hold
        self.holders: dict[str, dict[str, list[Any]]] = {}  # mkey -> consumer -> hold
        self.msg_key: dict[str, str] = {}  # mkey -> key of its receive (for an ack that names no key)
        self.keys: set[str] = set()
        self.seen_consumers: set[str] = set()

    def consumer(self, name: str | None) -> None:
        if name is not None and name not in self.seen_consumers:
            self.seen_consumers.add(name)
            self.out.consumers.append(name)

    def row(self, r: Row) -> None:
        op = r.op
        if r.i in self.focus.witnesses:
            self.out.witness_rows[r.i] = r
        if op in GLOBAL_OPS:
            self.consumer(r.consumer)
            if op in ("open", "close", "crash", "fault") and (op != "open" or r.result in (None, "ok")):
                self.out.membership.append(r)
            if op in _RELEASE_ALL and r.consumer is not None:
                self.release_consumer(r.consumer, r.i, r.t, op)
            elif op == "fault":
                targets = r.fault_consumers if r.fault_consumers is not None else list(self.held)
                for name in list(targets):
                    self.release_consumer(name, r.i, r.t, op)
            self.global_mark(r)
            return
        key = r.key if r.key is not None else self.msg_key.get(r.mkey or "", "")
        if op == "receive":
            self.consumer(r.consumer)
            if r.consumer is None or r.mkey is None:
                return
            self.msg_key[r.mkey] = key
            hold = [r.i, -1, r.consumer, "", r.msg_id, r.t, -1]
            self.out.holds.setdefault(key, []).append(hold)
            self.held.setdefault(r.consumer, {})[r.mkey] = hold
            self.holders.setdefault(r.mkey, {})[r.consumer] = hold
        elif op in ("ack", "nack"):
            self.consumer(r.consumer)
            if r.mkey is not None:
                self.release_message(r.mkey, r.consumer, r.i, r.t, op)
            self.out.marks.setdefault(key, []).append([r.i, op, r.consumer, r.t])
        elif op == "publish":
            self.out.marks.setdefault(key, []).append([r.i, op, None, r.t])

    def release_message(self, mkey: str, consumer: str | None, i: int, t: int, op: str) -> None:
        holders = self.holders.get(mkey)
        if not holders:
            return
        names = list(holders) if op == "ack" else [consumer]
        for name in names:
            if name is None:
                continue
            hold = holders.pop(name, None)
            if hold is not None:
                hold[1], hold[3], hold[6] = i, op, t
                self.held.get(name, {}).pop(mkey, None)
        if not holders:
            del self.holders[mkey]

    def release_consumer(self, consumer: str, i: int, t: int, op: str) -> None:
        mine = self.held.pop(consumer, None)
        if not mine:
            return
        for mkey, hold in mine.items():
            hold[1], hold[3], hold[6] = i, op, t
            holders = self.holders.get(mkey)
            if holders is not None:
                holders.pop(consumer, None)
                if not holders:
                    del self.holders[mkey]

    def global_mark(self, r: Row) -> None:
        if r.op == "end":
            return
        if len(self.out.global_marks) >= MAX_MARKS and r.i not in self.focus.witnesses:
            self.out.marks_dropped += 1
            return
        label = r.name if r.op == "open" and r.name and r.name != r.consumer else ""
        if r.op == "open" and r.result not in (None, "ok"):
            label = f"failed ({r.result})"
        if r.op == "fault" and r.fault_consumers:
            label = ", ".join(r.fault_consumers)  # the fault's name is added by the page data (faults.py)
        self.out.global_marks.append([r.i, r.op, r.consumer, label, r.t])


def collect(rows_or_batches: Iterable[Any], focus: Focus, *, columnar: bool) -> Collected:
    """Run the pass over pyarrow batches (``columnar``; ``TraceSource.batches()``) or :class:`Row` values."""
    state = _Pass(focus)
    out = state.out
    if columnar:
        for batch in rows_or_batches:
            _feed_batch(state, batch)
    else:
        for row in rows_or_batches:
            _count(out, row.i, row.t, row.op)
            if row.op in GLOBAL_OPS or focus.wants_key(row.key or "") or row.i in focus.witnesses:
                state.row(row)
            if row.key is not None:
                state.keys.add(row.key)
    out.keys_seen = len(state.keys)
    _trim(state)
    return out


def _count(out: Collected, i: int, t: int, op: str) -> None:
    """Throughput, one event at a time (the row path; batches count with numpy)."""
    out.events += 1
    if out.first is None:
        out.first = (i, t)
    out.last = (i, t)
    column = {"publish": 2, "receive": 3, "ack": 4}.get(op)
    b = i // out.bucket
    cell = out.series.get(b)
    if cell is None:
        cell = out.series[b] = [t, t, 0, 0, 0]
        if len(out.series) > MAX_BUCKETS:
            _coarsen(out)
            cell = out.series[i // out.bucket]
    cell[1] = t
    if column is not None:
        cell[column] += 1


def _coarsen(out: Collected) -> None:
    """Double the bucket width, merging pairs of buckets."""
    out.bucket *= 2
    merged: dict[int, list[int]] = {}
    for b, (t0, t1, p, r, a) in sorted(out.series.items()):
        cell = merged.get(b // 2)
        if cell is None:
            merged[b // 2] = [t0, t1, p, r, a]
        else:
            cell[0], cell[1] = min(cell[0], t0), max(cell[1], t1)
            cell[2] += p
            cell[3] += r
            cell[4] += a
    out.series = merged


def _feed_batch(state: _Pass, batch: Any) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    out, focus = state.out, state.focus
    n = batch.num_rows
    if n == 0:
        return
    i_col = batch.column("i").to_numpy(zero_copy_only=False)
    t_col = batch.column("t").to_numpy(zero_copy_only=False)
    ops = batch.column("op")
    out.events += n
    if out.first is None:
        out.first = (int(i_col[0]), int(t_col[0]))
    out.last = (int(i_col[-1]), int(t_col[-1]))
    while (int(i_col[-1]) // out.bucket) - min(out.series, default=int(i_col[0]) // out.bucket) >= MAX_BUCKETS:
        _coarsen(out)
    buckets = i_col // out.bucket
    base = int(buckets.min())
    span = int(buckets.max()) - base + 1
    rel = buckets - base
    firsts = np.full(span, np.iinfo(np.int64).max, dtype=np.int64)
    lasts = np.full(span, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(firsts, rel, t_col)
    np.maximum.at(lasts, rel, t_col)
    counts = [np.bincount(rel[pc.equal(ops, name).to_numpy(zero_copy_only=False)], minlength=span) for name in
              ("publish", "receive", "ack")]  # fmt: skip
    for k in range(span):
        if firsts[k] > lasts[k]:
            continue
        cell = out.series.get(base + k)
        if cell is None:
            cell = out.series[base + k] = [int(firsts[k]), int(lasts[k]), 0, 0, 0]
        else:
            cell[0], cell[1] = min(cell[0], int(firsts[k])), max(cell[1], int(lasts[k]))
        cell[2] += int(counts[0][k])
        cell[3] += int(counts[1][k])
        cell[4] += int(counts[2][k])
    keys = batch.column("key")
    state.keys.update(k for k in pc.unique(keys).to_pylist() if k is not None)
    wanted = pc.is_in(ops, value_set=pa.array(sorted(GLOBAL_OPS)))
    if focus.keys is None:
        wanted = pa.array(np.ones(n, dtype=bool))
    else:
        wanted = pc.or_(wanted, pc.is_in(keys, value_set=pa.array(sorted(focus.keys), pa.string())))
    if focus.witnesses:
        wanted = pc.or_(wanted, pc.is_in(batch.column("i"), value_set=pa.array(sorted(focus.witnesses), pa.int64())))
    picked = batch.filter(wanted)
    for row in _rows_of(picked, focus.witnesses):
        state.row(row)


def _rows_of(batch: Any, witnesses: frozenset[int]) -> Iterator[Row]:
    if batch.num_rows == 0:
        return
    names = batch.schema.names
    lists = {name: batch.column(name).to_pylist() for name in
             ("i", "t", "op", "consumer", "key", "mkey", "msg_id", "subscription", "name", "result")}  # fmt: skip
    policies = batch.column("policy") if "policy" in names else None
    # a fault's ``consumers``: read where the reader keeps the column (the exact path always has it)
    touched = batch.column("consumers") if "consumers" in names else None
    for k in range(batch.num_rows):
        i = lists["i"][k]
        op = lists["op"][k]
        ranges = None
        if op == "open" and policies is not None:
            policy = policies[k].as_py()
            if policy and policy.get("sticky_ranges"):
                ranges = tuple((int(a), int(b)) for a, b in policy["sticky_ranges"])
        fault_consumers = None
        if op == "fault" and touched is not None:
            listed = touched[k].as_py()
            if isinstance(listed, str):
                listed = json.loads(listed)
            fault_consumers = tuple(listed) if isinstance(listed, list) else None
        line = None
        if i in witnesses:
            line = json.dumps(
                {n: v for n, v in batch.slice(k, 1).to_pylist()[0].items() if v is not None and n in _TRACE_FIELDS},
                separators=(",", ":"),
                ensure_ascii=False,
            )
        yield Row(
            i=i,
            t=lists["t"][k],
            op=op,
            consumer=lists["consumer"][k],
            key=lists["key"][k],
            mkey=lists["mkey"][k],
            msg_id=lists["msg_id"][k],
            subscription=lists["subscription"][k],
            name=lists["name"][k],
            sticky_ranges=ranges,
            result=lists["result"][k],
            fault_consumers=fault_consumers,
            line=line,
        )


#: Fields shown in a witness's trace line (the trace format's own; the reader's derived columns are not).
_TRACE_FIELDS = frozenset(
    ("i", "t", "op", "topic", "subscription", "consumer", "producer", "key", "msg_id", "seq", "uid", "result",
     "redelivery_count", "drained", "t0", "name", "receiver_queue", "policy")
)  # fmt: skip


def _trim(state: _Pass) -> None:
    """Drop what lies outside the focus windows; say what was summarised."""
    out, focus = state.out, state.focus
    if focus.keys is None:
        return
    drawn_holds = 0
    for key in list(out.holds):
        kept = [h for h in out.holds[key] if focus.in_window(key, h[0], h[1] if h[1] >= 0 else 1 << 62)]
        out.holds[key] = kept
        drawn_holds += len(kept)
    for key in list(out.marks):
        out.marks[key] = [m for m in out.marks[key] if focus.in_window(key, m[0], m[0])]
    out.summarised.append(focus.reason)
    other = out.keys_seen - len(focus.keys)
    if other > 0:
        out.summarised.append(f"{other} other key(s) are summarised: their events count in the throughput chart only")
    if out.marks_dropped:
        out.summarised.append(
            f"{out.marks_dropped} membership and fault marks past the first {MAX_MARKS} are not drawn"
        )


def rows_of_events(events: Iterable[Any], witnesses: frozenset[int] = frozenset()) -> Iterator[Row]:
    """:class:`Row` values from :class:`~conformance.trace.events.Event` objects (the slow, exact path)."""
    for e in events:
        extra = e.extra
        policy = extra.get("policy")
        ranges = None
        if isinstance(policy, dict) and policy.get("sticky_ranges"):
            ranges = tuple((int(a), int(b)) for a, b in policy["sticky_ranges"])
        fault_consumers = extra.get("consumers") if e.op.value == "fault" else None
        yield Row(
            i=e.i,
            t=e.t,
            op=e.op.value,
            consumer=e.consumer,
            key=e.key,
            mkey=None if e.msg_id is None else f"{e.topic}|{e.msg_id}",
            msg_id=e.msg_id,
            subscription=e.subscription,
            name=extra.get("name"),
            sticky_ranges=ranges,
            result=None if e.result is None else e.result.value,
            fault_consumers=tuple(fault_consumers) if isinstance(fault_consumers, list) else None,
            line=e.to_json() if e.i in witnesses else None,
        )
