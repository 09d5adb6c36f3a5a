"""Where each event of a trace goes when the Spark engine checks it in parts and cannot route it by the keys its
events carry (:mod:`conformance.spark.router`; acks written without their message's key, or a routed split that
did not hold): a plan made in Python before the tasks check, by the driver for a stored trace.

The split is the one :mod:`conformance.checks.partition` proves exact (``docs/checker.md``, "Spark"):

*Scope pass*: an event about one message (publish, receive, ack, nack, with a ``msg_id``) goes to the part of
its message's key — the key its receives and stored publishes carry, else any key an event of the message
carries, else the empty key; a message is its ``(ledger, entry, batch index)``, the parts of a message id every
spelling of it shares, and the messages of one batch (batch index >= 0) go together: the broker dispatches the
entry whole by one sticky key, so an entry whose messages carry two keys (default batching) is mixed.  Acks
rarely carry a key: the plan gives them their message's.  Every other event
(open, close, crash, redeliver, fault, end, and ops added later) is copied into every part (:data:`ALL`); an
event about one message without a ``msg_id`` (a failed publish) goes to part 0 only.  ``uid``, ``producer``
and ``seq`` are blanked (:func:`scope_batch`): the identity checks are the identity pass's.

*Identity pass*: the publishes and the receives carrying a uid, by the ``(producer, seq)`` they are evidence
for: a uid's receives go where its publishes' ``(producer, seq)`` goes; a publish without a uid by its own
``(producer, seq)``; a uid nobody published to a part of its own.  Other events are in no part (:data:`NONE`).

A message whose receives and stored publishes carry two keys, or a uid published with two ``(producer, seq)``,
makes the split inexact (:attr:`Plan.mixed`): such a trace is checked whole, in one part.

Why a plan and not Spark windows: the driver reads the columns the plan needs with pyarrow (a few hundred
MB/s), computes the plan with vectorised code (message ids, uids and (producer, seq) grouped by a hash table),
and ships it with the tasks, which keep their own part's events (events in memory: each task plans them).  Nothing
crosses the JVM but a few result rows — no shuffle, no row conversion — which on a 2-core machine cost ten
times the checking itself.  A part is a hash of its key (:func:`hash_strings`, the same on every machine),
modulo the number of parts.  This module imports pyarrow and numpy only (no Spark): the tests run it directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALL", "NONE", "PLAN_COLUMNS", "PLAN_DICTIONARIES", "Plan", "hash_strings", "one_pass_batches", "part_batches",
    "plan_source", "plan_split", "scope_batch",
]  # fmt: skip

ALL = -1  #: a scope-pass event copied into every part
NONE = -2  #: an event the identity pass does not read

MESSAGE_OPS = ("publish", "receive", "ack", "nack", "dead_letter")
#: The columns the plan reads (a Parquet trace's other columns are not read for it).
PLAN_COLUMNS: tuple[str, ...] = ("op", "key", "msg_id", "result", "uid", "producer", "seq")
#: Those best read as dictionaries (few distinct values: :func:`_plan_batch` works on each distinct one once).
PLAN_DICTIONARIES: tuple[str, ...] = ("op", "key", "result", "producer")
_IDENTITY_FIELDS = ("uid", "producer", "seq")

_K = 0x100000001B3  # FNV-64 prime: the polynomial hash's base
_NO_PRODUCER = "\x00"  # stands for a null producer (no producer name is this string)
_MAX = 0xFFFFFFFFFFFFFFFF  # above every hash that is not itself _MAX: a minimum over no value
_EMPTY = 0  # hash_strings of the empty string (the key of a message no event gives one)
#: Fields only rare ops read (the checker fetches them by row); the identity pass reads none of them, and
#: without them its receives (no consumer is open there) skip fetching them one row at a time.
_RARE_FIELDS = (
    "topic", "subscription", "name", "policy", "drained", "consumers", "unattributed", "deliver_after_ms", "fault",
    "expire_seconds", "error", "send_seq", "highest_seq", "receiver_queue",
)  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """The part of every event of a trace, in trace order, for both passes."""

    parts: int
    scope: Any  #: numpy int32 per event: its scope part, or :data:`ALL`
    identity: Any  #: numpy int32 per event: its identity part, or :data:`NONE`
    mixed: bool  #: a message with two keys or a uid with two (producer, seq): check the trace whole
    #: every (producer, seq)'s publishes and its uids' receives are in one scope part: one pass judges every kind
    one_pass: bool = False

    @property
    def events(self) -> int:
        return len(self.scope)

    def copies(self, part: int) -> int:
        """How many of ``part``'s scope events are copies counted by part 0."""
        import numpy as np

        return 0 if part == 0 else int(np.count_nonzero(self.scope == ALL))


def hash_strings(values: Any) -> Any:
    """A 64-bit hash of every string of a pyarrow array (numpy uint64; null hashes as the empty string).

    A polynomial over the UTF-8 bytes, finished with splitmix64's mixer: the same value in every process and on
    every machine (Python's ``hash`` is salted per process).  Vectorised over the bytes; a repeated value is
    hashed once.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    n = len(values)
    if n == 0:
        return np.zeros(0, np.uint64)
    if not pa.types.is_dictionary(values.type):
        values = pc.dictionary_encode(values.cast(pa.string()))
    indices = pc.fill_null(values.indices, -1).to_numpy(zero_copy_only=False)
    uniques = pc.fill_null(values.dictionary.cast(pa.large_string()), "")
    hashed = np.append(_hash_unique(uniques), _hash_unique(pa.array([""], pa.large_string())))
    return hashed[indices]  # -1 (null) takes the last: the empty string's hash


def _hash_unique(strings: Any) -> Any:
    """The hash of each string of a pyarrow string or large string array without nulls."""
    import numpy as np
    import pyarrow as pa

    n = len(strings)
    _validity, offsets_buf, data_buf = strings.buffers()
    wide = pa.types.is_large_string(strings.type)
    offsets = np.frombuffer(offsets_buf, np.int64 if wide else np.int32)[strings.offset : strings.offset + n + 1]
    offsets = offsets.astype(np.int64)
    lengths = np.diff(offsets)
    h = np.zeros(n, np.uint64)
    total = int(offsets[-1] - offsets[0])
    if not total:
        return _mix(h ^ (lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)))
    data = np.frombuffer(data_buf, np.uint8)[int(offsets[0]) : int(offsets[-1])]
    starts = offsets[:-1] - offsets[0]
    longest = int(lengths.max())
    widths = np.flatnonzero(np.bincount(lengths)) if longest < 4096 else np.unique(lengths)  # no sort: a count
    powers = _powers(longest)
    if len(widths) > _FEW_LENGTHS:  # byte by byte: each byte's term, summed per string
        row = np.repeat(np.arange(n), lengths)
        terms = (data.astype(np.uint64) + np.uint64(1)) * powers[np.arange(total) - starts[row]]
        nonempty = lengths > 0
        h[nonempty] = np.add.reduceat(terms, starts[nonempty])
    else:  # the strings of each length as a matrix, one row each: the same sums, without the per-byte indices
        for width in (int(w) for w in widths if w):
            if len(widths) == 1:  # one length: the bytes are the matrix
                h = _byte_sums(data.reshape(n, width), powers)
                break
            these = np.flatnonzero(lengths == width)
            h[these] = _byte_sums(data[starts[these, None] + np.arange(width)], powers)
    return _mix(h ^ (lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)))


def _byte_sums(rows: Any, powers: Any) -> Any:
    """Each row's sum of (byte + 1) times the power of its column (numpy uint64, wrapping), column by column:
    a multiply-add over all rows per column, not a product matrix summed along its short rows (measured 10x
    faster on 22k eight-byte strings)."""
    import numpy as np

    columns = np.ascontiguousarray(rows.T)
    h = np.zeros(rows.shape[0], np.uint64)
    term = np.empty(rows.shape[0], np.uint64)
    for j in range(rows.shape[1]):
        np.add(columns[j], np.uint64(1), out=term, dtype=np.uint64)
        term *= powers[j]
        h += term
    return h


_POWERS: list[Any] = []
#: Up to this many distinct string lengths, :func:`_hash_unique` hashes each length's strings as a matrix
#: (a trace's uids and keys have a few lengths: measured 2.4x faster on 36-character uids, 1.15x on the
#: benchmark's short ``u<n>``); with more, byte by byte.
_FEW_LENGTHS = 16


def _powers(length: int) -> Any:
    import numpy as np

    if not _POWERS or len(_POWERS[0]) < length:
        size = max(length, 64)
        p = np.empty(size, np.uint64)
        value = 1
        for j in range(size):
            value = (value * _K) % (1 << 64)
            p[j] = value
        _POWERS[:] = [p]
    return _POWERS[0]


def _mix(h: Any) -> Any:
    """splitmix64's finaliser: every input bit reaches every output bit (so ``% parts`` spreads well)."""
    import numpy as np

    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def plan_split(
    batches: Iterable[Any], parts: int, *, one_pass: bool = True, threads: int = 1, by_producer: bool = False
) -> Plan:
    """The plan of a trace given as record batches in trace order (:data:`PLAN_COLUMNS`; others ignored,
    missing ones null).  ``one_pass=False``: never :attr:`Plan.one_pass` (the tests check both ways).

    ``by_producer``: the identity pass by producer, not by ``(producer, seq)`` (the bucketed layout's,
    :mod:`conformance.trace.buckets`): each part then holds every id of its producers, so the rules that compare
    a producer's ids (``lost_write``, ``stored_below_highest``) are decided within it, at the cost of parts as
    large as a producer's publishes; a uid is then mixed (:attr:`Plan.mixed`) only under two producers.

    ``threads``: how many threads plan the batches (each batch's share is pyarrow and numpy kernels, which
    release the GIL: a driver with two cores plans in about half the time); the batches are read one at a time.
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    source = iter(batches)
    lock = threading.Lock()
    done: list[tuple[int, dict[str, Any]]] = []
    position = [0]  # the next batch's number

    def work() -> None:
        while True:
            with lock:  # the batches come in trace order, numbered
                batch = next(source, None)
                if batch is None:
                    return
                number = position[0]
                position[0] += 1
            got = _plan_batch(batch, parts, by_producer)
            with lock:
                done.append((number, got))

    if threads > 1:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="keyshared-plan") as pool:
            for future in [pool.submit(work) for _ in range(threads)]:
                future.result()  # a failure in any thread is the plan's
    else:
        work()
    shares = [got for _number, got in sorted(done, key=lambda d: d[0])]  # in row order
    done.clear()
    return _planned(shares, parts, one_pass)


def _planned(shares: list[dict[str, Any]], parts: int, one_pass: bool) -> Plan:
    """The plan from every batch's share (:func:`_plan_batch`, in row order): the groupings across the trace.

    A batch brings its messages and its uids already grouped (by its own dictionary of ids): here the groups of
    every batch are grouped again by their hashed id (:func:`_representatives`), a million or so at 3M events,
    not one per event; each batch's events then take their group's part by index.
    """
    import numpy as np

    u64 = np.uint64
    small = np.int8 if parts < 127 else np.int32  # a plan a driver made travels to every task: keep it small
    mixed = False
    table: list[Any] = []  # the hash table's slots, reused by each grouping

    def joined(name: str, kind: str = "uint64") -> Any:
        chunks = [got[name] for got in shares if name in got]
        return np.concatenate(chunks) if chunks else np.zeros(0, kind)

    def firsts(name: str) -> list[int]:
        """Where each share's groups of a kind start among every share's."""
        sizes = [len(got[name]) if name in got else 0 for got in shares]
        return [int(x) for x in np.cumsum([0, *sizes[:-1]])] if shares else []

    # scope pass: each message's events to the part of its key (a message: its hashed (ledger, entry, batch index))
    scope = [got["scope"].astype(small) for got in shares]
    m_ids = joined("m_id")
    if len(m_ids):
        same = _representatives(m_ids, table)
        groups = len(same)
        keyed, loose = joined("m_keyed", "bool"), joined("m_has_any", "bool")
        any_keyed = _flagged(same[keyed], groups)
        kmin, _ = _min_max(same[keyed], joined("m_kmin")[keyed], any_keyed)
        _, kmax = _min_max(same[keyed], joined("m_kmax")[keyed], any_keyed)
        mixed = bool(np.any(any_keyed & (kmin != kmax)))
        any_loose = _flagged(same[loose], groups)  # an event's key, in a message none of whose events is keyed
        amin, _ = _min_max(same[loose], joined("m_amin")[loose], any_loose)
        chosen = np.where(any_keyed, kmin, np.where(any_loose, amin, _EMPTY))
        part = (chosen[same] % u64(parts)).astype(small)
        for got, here, first in zip(shares, scope, firsts("m_id"), strict=True):
            if "m_rows" in got:
                here[got["m_rows"]] = part[first : first + len(got["m_id"])][got["m_group"]]
    # identity pass: by (producer, seq); a uid's events where its publishes' (producer, seq) goes
    identity = [np.full(len(got["scope"]), NONE, small) for got in shares]
    for got, here in zip(shares, identity, strict=True):
        if "p_rows" in got:  # a publish without a uid: by its own
            own = ~got["p_uid"]
            here[got["p_rows"][own]] = (got["p_ps"][own] % u64(parts)).astype(small)
        if "o_rows" in got:  # a producer's creation (by_producer): with its producer's ids
            here[got["o_rows"]] = (got["o_ps"] % u64(parts)).astype(small)
    single = one_pass
    u_ids = joined("u_id")
    if len(u_ids):
        same = _representatives(u_ids, table)
        groups = len(same)
        published = joined("u_pub", "bool")
        any_published = _flagged(same[published], groups)
        pmin, _ = _min_max(same[published], joined("u_pmin")[published], any_published)
        _, pmax = _min_max(same[published], joined("u_pmax")[published], any_published)
        mixed = mixed or bool(np.any(any_published & (pmin != pmax)))
        alone = _mix(u_ids ^ u64(0xA5A5A5A5A5A5A5A5))  # a uid nobody published
        route = (np.where(any_published[same], pmin[same], alone) % u64(parts)).astype(small)
        one = np.zeros(groups, small)  # a uid's publishes and receives in one scope part: each group's, any one
        with_uids = [
            (got, here, marks, first)
            for got, here, marks, first in zip(shares, scope, identity, firsts("u_id"), strict=True)
            if "u_rows" in got
        ]
        for got, here, marks, first in with_uids:
            rows, group = got["u_rows"], got["u_group"]
            marks[rows] = route[first : first + len(got["u_id"])][group]
            if single:
                one[same[first + group]] = here[rows]
        single = single and all(
            np.array_equal(one[same[first + got["u_group"]]], here[got["u_rows"]]) for got, here, _m, first in with_uids
        )
    if single and not mixed:  # and each (producer, seq)'s publishes, with or without a uid
        p_ps = joined("p_ps")
        p_parts = [here[got["p_rows"]] for got, here in zip(shares, scope, strict=True) if "p_rows" in got]
        if len(p_ps):
            single = _one_part_per_group(np.concatenate(p_parts), _representatives(p_ps, table), len(p_ps))
    empty = np.zeros(0, small)
    return Plan(
        parts,
        np.concatenate(scope) if scope else empty,
        np.concatenate(identity) if identity else empty,
        mixed,
        single and not mixed,
    )


def _representatives(ids: Any, table: list[Any] | None = None) -> Any:
    """Each element's group: the index of one element of equal id, the same for all of them (numpy int64).

    A hash table in numpy, built for all elements at once: each element writes its index into the slot its id
    names (one write wins per slot), and reads back the winner; those whose id is the winner's have their group,
    the others (another id took the slot) try again in a table of other slots.  Every round settles at least
    every winner's id, and with twice as many slots as elements few are left after a round.  ``ids`` are hashes
    (well spread 64-bit values): a slot is the top bits of the id.  Measured 1.7x faster than pyarrow's
    ``dictionary_encode`` on a million ids.  ``table``: a list holding the slots of an earlier call, to reuse
    (a table is tens of MB: each new one costs its pages).
    """
    import numpy as np

    n = len(ids)
    index = np.int32 if n < 1 << 30 else np.int64
    bits = max(4, (n + n // 2).bit_length())  # 1.5 to 3 slots an id
    if table is None:
        table = []
    if not table or len(table[0]) < 1 << bits or table[0].dtype != index:
        table[:] = [np.empty(1 << bits, index)]  # reused: a round reads only the slots it wrote
    slots = table[0]
    slot = (ids >> np.uint64(64 - bits)).view(np.int64)
    slots[slot] = np.arange(n, dtype=index)
    group = slots[slot]  # the first round: most settle (with about three slots an id, few ids share one)
    pending = np.flatnonzero(ids[group] != ids).astype(index)
    factor = 1
    while len(pending):
        factor = (factor * 0x9E3779B97F4A7C15 | 1) & _MAX  # odd: other slots for the next round
        keys = ids[pending]
        slot = ((keys * np.uint64(factor)) >> np.uint64(64 - bits)).view(np.int64)
        slots[slot] = pending
        winner = slots[slot]
        settled = ids[winner] == keys
        group[pending[settled]] = winner[settled]
        pending = pending[~settled]
    return group


def _min_max(group: Any, values: Any, present: Any) -> tuple[Any, Any]:
    """The least and the greatest uint64 of each group (``present``: whether it has an element in ``group``;
    ``_MAX`` and 0 for none): where every group holds one value (each message one key), by one write and one
    read per element."""
    import numpy as np

    low = np.full(len(present), _MAX, np.uint64)
    low[group] = values  # any one of each group's values
    if np.array_equal(low[group], values):  # each group holds one value: the least and the greatest
        return low, np.where(present, low, np.uint64(0))
    np.minimum.at(low, group, values)
    high = np.zeros(len(present), np.uint64)
    np.maximum.at(high, group, values)
    return low, high


def _flagged(group: Any, groups: int) -> Any:
    """Whether each of ``groups`` groups has an element in ``group``."""
    import numpy as np

    out = np.zeros(groups, bool)
    out[group] = True
    return out


def _one_part_per_group(parts: Any, group: Any, groups: int) -> bool:
    """Whether the ``parts`` of each group (``group``: each element's group number) are one value.

    Used for the one-pass test: the evidence for a (producer, seq) is its publishes and the receives of its
    uids; when every uid's events share a scope part and every (producer, seq)'s publishes do, all of it does.
    """
    import numpy as np

    one = np.zeros(groups, parts.dtype)
    one[group] = parts  # any one of each group's parts: every other must be it
    return bool(np.array_equal(one[group], parts))


def _plan_batch(batch: Any, parts: int, by_producer: bool = False) -> dict[str, Any]:
    """One batch's share of the plan (numpy arrays): each event's scope part where the batch decides it; its
    messages and its uids grouped (each group's id, and what the group's events say), with each message event's
    group and each uid event's; its publishes' ``(producer, seq)``.  :func:`_planned` joins the shares.

    Every string column is worked on as a dictionary (:func:`_coded`: a Parquet trace's plan columns are read
    so, as they are stored): what a value decides (an op's kind, a key's hash, a message id's parts, a uid's
    hash) is computed once per distinct value, and each row takes its value's by index.  A message's id comes
    three times (publish, receive, ack), a uid twice, an op a million times.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.num_rows
    names = set(batch.schema.names)
    u64 = np.uint64
    op_idx, ops = _coded(batch, names, "op")
    is_op = _flags(pc.is_in(ops, value_set=pa.array(MESSAGE_OPS)))[op_idx]
    is_publish = _flags(pc.equal(ops, "publish"))[op_idx]
    is_receive = _flags(pc.equal(ops, "receive"))[op_idx]
    msg_idx, msg_ids = _coded(batch, names, "msg_id")
    key_idx, keys = _coded(batch, names, "key")
    message = is_op & (msg_idx >= 0)
    scope = np.full(n, ALL, np.int32)
    failed = is_op & ~message  # an event about one message without its msg_id (a failed publish): by its key
    key_hash, key_idx = _entry_hashes(key_idx, keys, _EMPTY)
    if failed.any():
        scope[failed] = (key_hash[key_idx[failed]] % u64(parts)).astype(np.int32)
    got: dict[str, Any] = {"scope": scope}
    if message.any():
        rows = np.flatnonzero(message)
        local, used = _used(msg_idx[rows], msg_ids)  # only the ids of message events are parsed (as before)
        ledger, entry, bidx = _message_ids(used)
        entry_of = np.where(bidx >= 0, -2, bidx)  # a batch is one entry, dispatched whole by one sticky key
        result_idx, results = _coded(batch, names, "result")
        ok = _flags(pc.equal(results, "ok"))[result_idx[rows]]
        stored = (ledger >= 0) & (entry >= 0)
        keyed = is_receive[rows] | (is_publish[rows] & ok & stored[local])
        m_key = key_idx[rows]
        key_of = key_hash[m_key]  # a null key counts as "" where keyed
        size = len(used)
        got["m_rows"], got["m_group"] = rows, local
        got["m_id"] = _mix(_mix(_mix(ledger.astype(u64)) + entry.astype(u64)) + entry_of.astype(u64))
        got["m_keyed"] = with_keyed = _flagged(local[keyed], size)
        got["m_kmin"], got["m_kmax"] = _min_max(local[keyed], key_of[keyed], with_keyed)
        # any event's key, read only for a message none of whose events is keyed (rare): those groups' here
        loose = (m_key >= 0) & ~with_keyed[local]
        got["m_has_any"] = with_any = _flagged(local[loose], size)
        got["m_amin"], _ = _min_max(local[loose], key_of[loose], with_any)
    # identity pass: publishes, and receives carrying a uid
    uid_idx, uids = _coded(batch, names, "uid")
    with_uid = uid_idx >= 0
    identity = is_publish | (is_receive & with_uid)
    if "seq" in names:  # cast whole, as the checker reads it (a column that is not integers fails the plan)
        seq_column = batch.column("seq")
        seq_column = seq_column if seq_column.type == pa.int64() else seq_column.cast(pa.int64())
    ps = np.zeros(n, u64)  # each publish's (producer, seq) (a receive's is never read)
    if is_publish.any():
        rows = np.flatnonzero(is_publish)
        producer_idx, producers = _coded(batch, names, "producer")
        producer_hash, producer_idx = _entry_hashes(producer_idx[rows], producers, _no_producer_hash())
        if "seq" in names:
            seq_valid = _flags(pc.is_valid(seq_column))[:-1][rows]
            seq = pc.fill_null(seq_column, 0).to_numpy(zero_copy_only=False)[rows].astype(u64)
        else:
            seq_valid, seq = np.zeros(len(rows), bool), np.zeros(len(rows), u64)
        seq_null = (~seq_valid).astype(u64)
        if by_producer:  # every id of a producer in one part (the seq still validated above)
            ps[rows] = _mix(producer_hash[producer_idx] ^ u64(0x51ED27))
        else:
            ps[rows] = _mix(producer_hash[producer_idx] ^ _mix(seq + u64(0x51ED27) + seq_null * u64(1 << 63)))
        got["p_rows"], got["p_ps"], got["p_uid"] = rows, ps[rows], with_uid[rows]
    if by_producer:  # a producer's creation (its answered last sequence id) goes with the producer's ids too
        is_opened = _flags(pc.equal(ops, "producer_open"))[op_idx]
        if is_opened.any():
            rows = np.flatnonzero(is_opened)
            producer_idx, producers = _coded(batch, names, "producer")
            producer_hash, producer_idx = _entry_hashes(producer_idx[rows], producers, _no_producer_hash())
            got["o_rows"], got["o_ps"] = rows, _mix(producer_hash[producer_idx] ^ u64(0x51ED27))
    take = identity & with_uid
    if take.any():
        rows = np.flatnonzero(take)
        local, used = _used(uid_idx[rows], uids)
        published = is_publish[rows]
        size = len(used)
        got["u_rows"], got["u_group"], got["u_id"] = rows, local, _hash_each(used)
        got["u_pub"] = with_publish = _flagged(local[published], size)
        got["u_pmin"], got["u_pmax"] = _min_max(local[published], ps[rows][published], with_publish)
    return got


def _coded(batch: Any, names: set[str], name: str) -> tuple[Any, Any]:
    """``(each row's index into the distinct values, -1 for null; the distinct values)`` of a column as
    strings: a dictionary column's own indices and dictionary (no hashing: a Parquet column read as stored),
    another column dictionary-encoded here.  A missing column is all null."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if name not in names:
        return np.full(batch.num_rows, -1, np.int32), pa.array([], pa.string())
    array = batch.column(name)
    if not pa.types.is_dictionary(array.type):
        array = pc.dictionary_encode(array if array.type == pa.string() else array.cast(pa.string()))
    values = array.dictionary
    values = values if values.type == pa.string() else values.cast(pa.string())
    indices = array.indices
    if indices.type not in (pa.int32(), pa.int64()):  # narrow or unsigned: -1 must fit, and a group number added
        indices = indices.cast(pa.int64())
    index = (pc.fill_null(indices, -1) if indices.null_count else indices).to_numpy(zero_copy_only=False)
    if values.null_count:  # a null value in the dictionary is a null
        index = np.where(_flags(pc.is_valid(values))[index], index, -1)
    return index, values


def _no_producer_hash() -> int:
    """The hash a null producer stands in for (:data:`_NO_PRODUCER`'s)."""
    import pyarrow as pa

    return int(_hash_each(pa.array([_NO_PRODUCER]))[0])


def _flags(mask: Any) -> Any:
    """A boolean array's values (null: False) with one False more, which an index of -1 (null) takes."""
    import numpy as np
    import pyarrow.compute as pc

    return np.append(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), False)


def _used(index: Any, values: Any) -> tuple[Any, Any]:
    """``(index into the values used, the values used)`` for ``index`` (no -1): the values ``index`` names,
    and no other (a Parquet dictionary holds the values of a whole row group read so far)."""
    import numpy as np
    import pyarrow as pa

    low = int(index.min())
    span = int(index.max()) - low + 1
    mark = np.zeros(span, bool)
    mark[index - low] = True
    if mark.all():
        return index - low, values.slice(low, span)
    keep = np.flatnonzero(mark)
    return (np.cumsum(mark) - 1)[index - low], values.take(pa.array(keep + low))


def _entry_hashes(index: Any, values: Any, null: int) -> tuple[Any, Any]:
    """``(hashes, index)``: the hash of each value ``index`` names (every value if they are fewer than the
    rows, else those within its span; ``null`` last), and ``index`` into them (-1: null, which takes the last)."""
    import numpy as np

    if len(values) <= len(index):  # a few keys or producers: hash them all, the rows keep their indices
        return np.append(_hash_each(values), np.uint64(null)), index
    valid = index >= 0
    if not valid.any():
        return np.full(1, null, np.uint64), index
    low = int(index[valid].min())
    hashes = _hash_each(values.slice(low, int(index.max()) - low + 1))
    return np.append(hashes, np.uint64(null)), np.where(valid, index - low, -1)


def _hash_each(strings: Any) -> Any:
    """:func:`hash_strings` of each string of a plain array (null: the empty string), without first finding
    the distinct ones (a dictionary's values are distinct already)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks()
    if not (pa.types.is_string(strings.type) or pa.types.is_large_string(strings.type)):
        strings = strings.cast(pa.large_string())
    return _hash_unique(pc.fill_null(strings, "") if strings.null_count else strings)


def _message_ids(ids: Any) -> tuple[Any, Any, Any]:
    """``(ledger, entry, batch index)`` of message ids (numpy int64; "l:e" and "l:e:p" have batch index -1); an
    id that is not integers fails the plan (a partition that is not is not read)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from conformance.trace.identity import id_number_table

    def part(split: Any, k: int) -> Any:
        return pc.cast(pc.list_element(split, k), pa.int64()).to_numpy(zero_copy_only=False)

    split = pc.split_pattern(ids, ":")
    if len(ids) and pc.min(pc.list_value_length(split)).as_py() >= 2:
        try:  # every part at once (one cast, not one a part), as the reader parses them
            table = id_number_table(split)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # a part is not an integer: which one matters
            table = None
        if table is not None:
            return table[:, 0], table[:, 1], table[:, 3]
    ledger, entry = part(split, 0), part(split, 1)
    if pc.min(pc.list_value_length(split)).as_py() >= 4:  # the canonical "l:e:p:b" (what recorders write)
        return ledger, entry, part(split, 3)
    # "l:e" and "l:e:p" padded with -1 parts: the fourth part is the batch index
    return ledger, entry, part(pc.split_pattern(pc.binary_join_element_wise(ids, pa.scalar(":-1:-1"), ""), ":"), 3)


def scope_batch(batch: Any) -> Any:
    """``batch`` with the identity fields blanked (the scope pass judges no identity check)."""
    import pyarrow as pa

    names = batch.schema.names
    arrays = [
        pa.nulls(batch.num_rows, batch.schema.field(name).type) if name in _IDENTITY_FIELDS else batch.column(name)
        for name in names
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def part_batches(plan: Plan, part: int, batches: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    """``(scope batch, identity batch)`` of ``part`` for each batch of the trace (read again, in trace order)."""
    import pyarrow as pa

    for batch, scope, identity in _sliced(plan, batches):
        names = batch.schema.names
        # (a batch the reader did not derive message columns for keeps its topic: the checker derives them)
        keep = [name for name in names if name not in _RARE_FIELDS or (name == "topic" and "mkey" not in names)]
        yield (
            scope_batch(batch.filter(pa.array((scope == part) | (scope == ALL)))),
            batch.filter(pa.array(identity == part)).select(keep),
        )


def one_pass_batches(plan: Plan, part: int, batches: Iterable[Any]) -> Iterator[Any]:
    """The events of ``part``'s scope pass, identity fields kept (a :attr:`Plan.one_pass` plan)."""
    import pyarrow as pa

    for batch, scope, _identity in _sliced(plan, batches):
        yield batch.filter(pa.array((scope == part) | (scope == ALL)))


def _sliced(plan: Plan, batches: Iterable[Any]) -> Iterator[tuple[Any, Any, Any]]:
    offset = 0
    for batch in batches:
        n = batch.num_rows
        if offset + n > plan.events:
            raise RuntimeError("the trace holds more events than when its split was planned (was it rewritten?)")
        yield batch, plan.scope[offset : offset + n], plan.identity[offset : offset + n]
        offset += n
    if offset != plan.events:
        raise RuntimeError("the trace holds fewer events than when its split was planned (was it rewritten?)")


def plan_source(
    read: Callable[[], Iterable[Any]], parts: int, *, one_pass: bool = True, threads: int = 1
) -> Plan | None:
    """:func:`plan_split` over ``read()``, or None when that fails (a malformed trace: the checker's own read
    words the problem; or a form the plan cannot read: the trace is checked whole)."""
    try:
        return plan_split(read(), parts, one_pass=one_pass, threads=threads)
    except Exception:  # any failure means "no plan": the whole trace in one part is always exact
        return None
