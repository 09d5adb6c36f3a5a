"""What makes a trace well formed, checked in one place.

Two validators share these rules: :class:`EventValidator` checks one decoded JSON object at a time and says
exactly what is wrong with it (the slow path, and the one that words every error); ``check_batch`` checks a
whole pyarrow batch with vector operations (the fast path).  The fast path only ever *detects*; when it finds
a problem the reader runs the slow path over the same input to name the line and the problem, so a message
never depends on which path found it.  A test holds the fast path to be no more lenient than the slow one.

Rules (``docs/trace-format.md``):

* every event has ``i`` (strictly increasing) and ``t`` (non-decreasing) as integers and a known ``op``;
* fields have their types: strings, integers (not booleans, within int64), ``result`` one of ok/fail/info,
  ``drained`` a boolean, ``msg_id`` two to four integers joined by ``:``;
* each op carries what it needs (:data:`REQUIRED`); ``receive``/``ack``/``nack`` name a real message id
  (not the ``-1:-1`` receipt of a deduplicated send); a ``publish`` with result ``ok`` has a ``msg_id``;
* a consumer handle has one incarnation at a time: an ``ok`` ``open`` of a consumer that is open (not closed
  or crashed since) is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.trace.events import CORE_FIELDS, Event, Op, Result
from conformance.trace.identity import MSG_ID_RE
from reference_model.errors import InvalidArgument, did_you_mean

__all__ = [
    "DERIVED_COLUMNS",
    "OP_VALUES",
    "REQUIRED",
    "EventValidator",
    "TraceFormatError",
    "check_batch",
]

OP_VALUES: tuple[str, ...] = tuple(op.value for op in Op)
RESULT_VALUES: tuple[str, ...] = tuple(r.value for r in Result)

#: Fields each op must carry (beyond ``i``, ``t``, ``op``).
REQUIRED: Mapping[str, tuple[str, ...]] = {
    "open": ("consumer",),
    "close": ("consumer",),
    "crash": ("consumer",),
    "redeliver": ("consumer",),
    "publish": ("topic", "result"),
    "receive": ("consumer", "topic", "msg_id"),
    "ack": ("consumer", "topic", "msg_id"),
    "nack": ("consumer", "topic", "msg_id"),
    "fault": (),
    "end": (),
    "failover": ("topic",),
    "snapshot": (),
    "gone": ("consumer",),
    "closed": ("consumer",),
    "producer_open": ("topic", "producer", "seq"),
    "producer_close": ("topic", "producer"),
    "dead_letter": ("topic", "msg_id"),
}

_STR_FIELDS = ("topic", "subscription", "consumer", "producer", "key", "uid", "name")
_INT_FIELDS = ("seq", "redelivery_count", "t0", "receiver_queue")
_INT64 = (-(2**63), 2**63 - 1)
_MEMBERSHIP_OPS = frozenset({"open", "close", "crash"})


class TraceFormatError(InvalidArgument):
    """A trace that cannot be checked: names the file, the line (or Parquet row) and the problem."""

    def __init__(self, source: str, where: str | None, problem: str) -> None:
        self.source = source
        self.where = where
        self.problem = problem
        location = source if where is None else f"{source}:{where}"
        super().__init__(f"{location}: {problem}")


def _type_name(value: Any) -> str:
    return type(value).__name__


class EventValidator:
    """Checks decoded events one by one, in file order, and turns them into :class:`Event` objects.

    ``source`` names the file in messages; ``where(n)`` words position n (a line or a row).
    """

    def __init__(self, source: str, *, unit: str = "line") -> None:
        self.source = source
        self.unit = unit
        self.last_i: int | None = None
        self.last_t: int | None = None
        #: consumer -> position where its current incarnation was opened
        self.open_at: dict[str, str] = {}

    def fail(self, pos: int, problem: str) -> TraceFormatError:
        return TraceFormatError(self.source, f"{pos}" if self.unit == "line" else f"row {pos}", problem)

    def event(self, obj: Any, pos: int) -> Event:
        """Validate one decoded JSON value (position ``pos``) and return it as an :class:`Event`."""
        if not isinstance(obj, dict):
            raise self.fail(pos, f"expected a JSON object (one event) but got {_type_name(obj)}")
        problem = self._problem(obj)
        if problem is not None:
            raise self.fail(pos, problem)
        i, t, op = obj["i"], obj["t"], obj["op"]
        if self.last_i is not None and i <= self.last_i:
            raise self.fail(pos, f"event i={i} follows i={self.last_i}: 'i' must increase from line to line")
        if self.last_t is not None and t < self.last_t:
            raise self.fail(
                pos, f"event i={i} has t={t}, earlier than t={self.last_t} before it: 't' must not decrease"
            )
        if op in _MEMBERSHIP_OPS:
            self._membership(obj, pos)
        self.last_i, self.last_t = i, t
        return _to_event(obj)

    def typed_event(self, event: Event) -> None:
        """Validate an :class:`Event` built in Python (a ``TraceWriter``'s), in trace order.

        Typed events are right by construction nearly always, so a quick structural pass decides; only when it
        has a doubt does the event go through :meth:`event` (``to_dict`` and every rule), which words the
        problem — so the message never depends on which path found it.
        """
        i, t = event.i, event.t
        if (
            not _typed_ok(event)
            or (self.last_i is not None and i <= self.last_i)
            or (self.last_t is not None and t < self.last_t)
        ):
            self.event(event.to_dict(), i)
            return
        op = event.op.value
        if op in _MEMBERSHIP_OPS:
            result = None if event.result is None else event.result.value
            self._membership({"op": op, "consumer": event.consumer, "result": result or "ok", "i": i}, i)
        self.last_i, self.last_t = i, t

    def _membership(self, obj: Mapping[str, Any], pos: int) -> None:
        consumer = obj["consumer"]
        where = f"{'line' if self.unit == 'line' else 'row'} {pos}"
        if obj["op"] == "open":
            if (obj.get("result") or "ok") != "ok":  # no result, or null, is an ok open on every path
                return
            if consumer in self.open_at:
                raise self.fail(
                    pos,
                    f"consumer {consumer!r} opened again (i={obj['i']}) while still open since"
                    f" {self.open_at[consumer]}: record its 'close' or 'crash' first, or use another consumer name",
                )
            self.open_at[consumer] = where
        else:
            self.open_at.pop(consumer, None)

    def _problem(self, obj: Mapping[str, Any]) -> str | None:
        for name in ("i", "t"):
            value = obj.get(name)
            if value is None:
                return f"event has no {name!r}: every event needs 'i' (its index) and 't' (monotonic ns)"
            if isinstance(value, bool) or not isinstance(value, int):
                return f"expected an integer for {name!r} but got {value!r} (type={_type_name(value)})"
            if not _INT64[0] <= value <= _INT64[1]:
                return f"{name}={value} does not fit in 64 bits"
        op = obj.get("op")
        if not isinstance(op, str) or op not in OP_VALUES:
            hint = did_you_mean(op, OP_VALUES) if isinstance(op, str) else ""
            return f"unknown op {op!r} (event i={obj['i']}).{hint} Known ops: {', '.join(OP_VALUES)}"
        for name in _STR_FIELDS:
            value = obj.get(name)
            if value is not None and not isinstance(value, str):
                return (
                    f"expected a string for {name!r} but got {value!r} (type={_type_name(value)}) in {op} i={obj['i']}"
                )
        for name in _INT_FIELDS:
            value = obj.get(name)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int):
                    return (
                        f"expected an integer for {name!r} but got {value!r} (type={_type_name(value)})"
                        f" in {op} i={obj['i']}"
                    )
                if not _INT64[0] <= value <= _INT64[1]:
                    return f"{name}={value} does not fit in 64 bits (event i={obj['i']})"
        result = obj.get("result")
        if result is not None and result not in RESULT_VALUES:
            return f"expected result 'ok', 'fail' or 'info' but got {result!r} in {op} i={obj['i']}"
        drained = obj.get("drained")
        if drained is not None and not isinstance(drained, bool):
            return f"expected true or false for 'drained' but got {drained!r} in {op} i={obj['i']}"
        msg_id = obj.get("msg_id")
        if msg_id is not None:
            if not isinstance(msg_id, str) or MSG_ID_RE.match(msg_id) is None:
                return (
                    f"expected msg_id 'ledger:entry:partition:batch_index' (integers) but got {msg_id!r}"
                    f" in {op} i={obj['i']}"
                )
            if any(not _INT64[0] <= int(p) <= _INT64[1] for p in msg_id.split(":")):
                return f"msg_id {msg_id!r} has a part that does not fit in 64 bits (event i={obj['i']})"
        policy = obj.get("policy")
        if policy is not None:
            problem = _policy_problem(policy)
            if problem is not None:
                return f"{problem} in {op} i={obj['i']}"
        for name in REQUIRED[op]:
            if obj.get(name) is None:
                return f"{op} event i={obj['i']} has no {name!r}; a {op} needs {', '.join(map(repr, REQUIRED[op]))}"
        if op == "publish" and result == "ok" and msg_id is None:
            return f"publish i={obj['i']} with result 'ok' has no 'msg_id' (use '-1:-1' for a deduplicated send)"
        if op in ("receive", "ack", "nack", "dead_letter") and msg_id is not None:
            ledger, entry = (int(p) for p in msg_id.split(":")[:2])
            if ledger < 0 or entry < 0:
                return f"{op} i={obj['i']} names msg_id {msg_id!r}, which is not a stored message's id"
        return None


_VALID_IDS: dict[str, bool] = {}


def _valid_msg_id(msg_id: Any, op: str) -> bool:
    """A well-formed id (cached: an id recurs in its publish, receive and ack); a stored one for receive/ack/nack."""
    ok = _VALID_IDS.get(msg_id)
    if ok is None:
        if msg_id.__class__ is not str or MSG_ID_RE.match(msg_id) is None:
            return False
        parts = [int(p) for p in msg_id.split(":")]
        if any(not _INT64[0] <= p <= _INT64[1] for p in parts):
            return False
        if len(_VALID_IDS) > 8192:
            _VALID_IDS.clear()
        ok = _VALID_IDS[msg_id] = parts[0] >= 0 and parts[1] >= 0
    return ok or op not in ("receive", "ack", "nack", "dead_letter")


def _typed_ok(event: Event) -> bool:
    """True when a typed event certainly passes :meth:`EventValidator.event` (apart from order and membership)."""
    lo, hi = _INT64
    i, t, op = event.i, event.t, event.op
    if i.__class__ is not int or t.__class__ is not int or not (lo <= i <= hi and lo <= t <= hi):
        return False
    if op.__class__ is not Op:
        return False
    for label in (event.topic, event.subscription, event.consumer, event.producer, event.key, event.uid):
        if label is not None and label.__class__ is not str:
            return False
    for number in (event.seq, event.redelivery_count):
        if number is not None and (number.__class__ is not int or not lo <= number <= hi):
            return False
    result = event.result
    if result is not None and result.__class__ is not Result:
        return False
    if event.drained is not None and event.drained.__class__ is not bool:
        return False
    extra = event.extra
    if extra:
        for name in _INT_FIELDS:
            value = extra.get(name)
            if value is not None and (value.__class__ is not int or not lo <= value <= hi):
                return False
        for name in _STR_FIELDS:
            text = extra.get(name)
            if text is not None and text.__class__ is not str:
                return False
        if extra.get("policy") is not None and _policy_problem(extra["policy"]) is not None:
            return False
    name = op.value
    for field_name in REQUIRED[name]:
        if getattr(event, field_name) is None:
            return False
    msg_id = event.msg_id
    if msg_id is None:
        return not (name == "publish" and result is Result.OK)
    return _valid_msg_id(msg_id, name)


def _policy_problem(policy: Any) -> str | None:
    if not isinstance(policy, dict):
        return f"expected an object for 'policy' but got {policy!r} (type={_type_name(policy)})"
    mode = policy.get("key_shared_mode")
    if mode is not None and not isinstance(mode, str):
        return f"expected a string for policy.key_shared_mode but got {mode!r}"
    ooo = policy.get("allow_out_of_order_delivery")
    if ooo is not None and not isinstance(ooo, bool):
        return f"expected true or false for policy.allow_out_of_order_delivery but got {ooo!r}"
    ranges = policy.get("sticky_ranges")
    if ranges is not None:
        ok = isinstance(ranges, list) and all(
            isinstance(r, list)
            and len(r) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) and _INT64[0] <= x <= _INT64[1] for x in r)
            for r in ranges
        )
        if not ok:
            return f"expected policy.sticky_ranges as [[start, end], ...] integers but got {ranges!r}"
    return None


def _to_event(obj: Mapping[str, Any]) -> Event:
    core = {name: obj.get(name) for name in CORE_FIELDS if name not in ("i", "t", "op")}
    if core["result"] is not None:
        core["result"] = Result(core["result"])
    extra = {k: v for k, v in obj.items() if k not in CORE_FIELDS and v is not None}
    return Event(i=obj["i"], t=obj["t"], op=Op(obj["op"]), extra=extra, **core)


class BatchState:
    """What the vectorised check carries from one batch to the next."""

    def __init__(self) -> None:
        self.last_i: int | None = None
        self.last_t: int | None = None
        self.open: set[str] = set()


#: Columns :func:`check_batch` adds: the message key, stream and position (``conformance.trace.identity``).
DERIVED_COLUMNS: tuple[str, ...] = ("mkey", "stream", "ledger", "entry", "bidx")


def check_batch(batch: Any, state: BatchState) -> tuple[str | None, Any]:
    """Vectorised check of one pyarrow RecordBatch: ``(first problem or None, batch + derived columns)``.

    Only detects: the caller re-reads the input with :class:`EventValidator` to word the error.  The derived
    columns (:data:`DERIVED_COLUMNS`) are computed here because parsing the message ids is also how they are
    validated.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from conformance.trace.identity import derive_message_columns_with_position

    n = batch.num_rows
    col = batch.column
    names = set(batch.schema.names)

    def null_or(name: str) -> Any:
        return col(name) if name in names else pa.nulls(n, pa.string())

    i, t, op = null_or("i"), null_or("t"), null_or("op")
    if n and (i.null_count or t.null_count):
        return "missing i or t", batch
    codes = pc.index_in(op, value_set=pa.array(OP_VALUES))
    if codes.null_count:
        return "unknown op", batch
    if n > 1:
        if not pc.all(pc.greater(i.slice(1), i.slice(0, n - 1))).as_py():
            return "i not increasing", batch
        if not pc.all(pc.greater_equal(t.slice(1), t.slice(0, n - 1))).as_py():
            return "t decreasing", batch
    if n:
        first_i, first_t = i[0].as_py(), t[0].as_py()
        if state.last_i is not None and (first_i <= state.last_i or first_t < state.last_t):
            return "i/t across batches", batch
        state.last_i, state.last_t = i[n - 1].as_py(), t[n - 1].as_py()
    result = null_or("result")
    if result.null_count < n and pc.index_in(result, value_set=pa.array(RESULT_VALUES)).null_count > result.null_count:
        return "bad result", batch
    for name, code_list in _required_codes().items():
        column = null_or(name)
        if column.null_count == 0:
            continue
        if pc.any(pc.and_(pc.is_in(codes, value_set=code_list), pc.is_null(column))).as_py():
            return f"missing {name}", batch
    msg_id = null_or("msg_id")
    ids = pc.dictionary_encode(msg_id)  # the ids are checked, and derived, once per distinct id
    try:
        mkey, stream, _canon, (ledger, entry, bidx) = derive_message_columns_with_position(null_or("topic"), ids)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return "bad msg_id", batch
    if msg_id.null_count < n:
        distinct = ids.dictionary
        if pc.any(pc.or_(pc.match_substring(distinct, "+"), pc.match_substring(distinct, " "))).as_py():
            return "bad msg_id", batch
        real = pc.and_kleene(pc.greater_equal(ledger, 0), pc.greater_equal(entry, 0))
        needs_real = pc.is_in(codes, value_set=_codes(("receive", "ack", "nack", "dead_letter")))
        if pc.any(pc.and_kleene(needs_real, pc.invert(real))).as_py():
            return "receive of a non-stored id", batch
    publish_ok = pc.and_kleene(pc.equal(codes, OP_VALUES.index("publish")), pc.equal(result, "ok"))
    if pc.any(pc.and_kleene(publish_ok, pc.is_null(msg_id))).as_py():
        return "publish ok without msg_id", batch
    if "policy" in names and col("policy").null_count < n:
        for policy in col("policy").drop_null().to_pylist():
            if _policy_problem({k: v for k, v in policy.items() if v is not None}) is not None:
                return "bad policy", batch
    membership = pc.is_in(codes, value_set=_codes(sorted(_MEMBERSHIP_OPS)))
    if pc.any(membership).as_py():
        rows = batch.filter(membership)
        ops = rows.column("op").to_pylist()
        consumers = rows.column("consumer").to_pylist()
        results = rows.column("result").to_pylist() if "result" in names else [None] * len(ops)
        for o, c, r in zip(ops, consumers, results, strict=True):
            if o == "open":
                if (r or "ok") != "ok":
                    continue
                if c in state.open:
                    return "reopened consumer", batch
                state.open.add(c)
            else:
                state.open.discard(c)
    derived = [mkey, stream, ledger, entry, bidx]
    return None, pa.RecordBatch.from_arrays([*batch.columns, *derived], names=[*batch.schema.names, *DERIVED_COLUMNS])


def _codes(ops: Any) -> Any:
    import pyarrow as pa

    return pa.array([OP_VALUES.index(o) for o in ops], pa.int32())


def _required_codes() -> dict[str, Any]:
    return {name: _codes(ops) for name, ops in _required_by_field().items()}


def _required_by_field() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for op, fields in REQUIRED.items():
        for name in fields:
            out.setdefault(name, []).append(op)
    return out
