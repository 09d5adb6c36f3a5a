"""The Spark engine's split plan as it was before issue 14's plan-cost work (main at eb176f2), kept frozen: the
reference the faster :func:`conformance.spark.split.plan_split` must equal, array for array, on every trace
(``tests/unit/test_spark_split_reference.py``).  Row by row and slow; not to be changed with the plan, and
not imported by the package.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from conformance.spark.split import ALL, MESSAGE_OPS, NONE, Plan

_K = 0x100000001B3
_NO_PRODUCER = "\x00"
_MAX = 0xFFFFFFFFFFFFFFFF
_EMPTY = 0
_FEW_LENGTHS = 16
_POWERS: list[Any] = []


def reference_plan(batches: Iterable[Any], parts: int, *, one_pass: bool = True) -> Plan:
    """The plan of ``batches`` (in trace order) as main at eb176f2 made it, in one thread."""
    pieces: dict[str, list[Any]] = {name: [] for name in _PIECES}
    offset = 0
    for batch in batches:
        _plan_batch(batch, offset, parts, pieces)
        offset += batch.num_rows
    return _planned(pieces, parts, one_pass)


def hash_strings(values: Any) -> Any:
    """A 64-bit hash of every string of a pyarrow array (numpy uint64; null hashes as the empty string).

    A polynomial over the UTF-8 bytes, finished with splitmix64's mixer: the same value in every process and on
    every machine (Python's ``hash`` is salted per process).  Vectorised over the bytes; a repeated value is
    hashed once.
    """

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

    n = len(strings)
    _validity, offsets_buf, data_buf = strings.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64)[strings.offset : strings.offset + n + 1]
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
                h = ((data.reshape(n, width).astype(np.uint64) + np.uint64(1)) * powers[:width]).sum(axis=1)
                break
            these = np.flatnonzero(lengths == width)
            rows = data[starts[these, None] + np.arange(width)].astype(np.uint64)
            h[these] = ((rows + np.uint64(1)) * powers[:width]).sum(axis=1)
    return _mix(h ^ (lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)))


_POWERS: list[Any] = []
#: Up to this many distinct string lengths, :func:`_hash_unique` hashes each length's strings as a matrix
#: (a trace's uids and keys have a few lengths: measured 2.4x faster on 36-character uids, 1.15x on the
#: benchmark's short ``u<n>``); with more, byte by byte.
_FEW_LENGTHS = 16


def _powers(length: int) -> Any:

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

    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def _planned(pieces: dict[str, list[Any]], parts: int, one_pass: bool) -> Plan:
    """The plan from every batch's pieces (:func:`_plan_batch`, in row order): the groupings across the trace
    (three hash tables)."""

    got = {}
    for name in _PIECES:  # one array each; each batch's pieces freed as soon as they are joined
        chunks = pieces.pop(name)
        got[name] = np.concatenate(chunks) if chunks else np.zeros(0, _PIECES[name])
        del chunks
    wanted = {"m_id": len(got["m_row"]), "u_id": len(got["u_row"]), "p_ps": one_pass and len(got["p_row"])}
    groups = {name: _groups(got[name]) for name, needed in wanted.items() if needed}
    scope = got["scope"]
    mixed = False
    # scope pass: each message's events to the part of its key (a message: its hashed (ledger, entry, batch index))
    if len(got["m_row"]):
        group, ids = groups["m_id"]
        keyed, has_keyed, has_any = got["m_keyed"], got["m_has_keyed"], got["m_has_any"]
        kmin = _least(group, len(ids), np.where(has_keyed, keyed, _MAX))
        kmax = _most(group, len(ids), np.where(has_keyed, keyed, np.uint64(0)))
        any_keyed = _any(group, len(ids), has_keyed)
        mixed = bool(np.any(any_keyed & (kmin != kmax)))
        amin = _least(group, len(ids), np.where(has_any, keyed, _MAX))  # any event's key, where it carries one
        chosen = np.where(any_keyed, kmin, np.where(_any(group, len(ids), has_any), amin, _EMPTY))
        scope[got["m_row"]] = (chosen[group] % np.uint64(parts)).astype(np.int32)
    # identity pass: by (producer, seq); a uid's events where its publishes' (producer, seq) goes
    identity = np.full(len(scope), NONE, np.int32)
    p_row, p_ps, own = got["p_row"], got["p_ps"], ~got["p_uid"]  # a publish without a uid: by its own
    identity[p_row[own]] = (p_ps[own] % np.uint64(parts)).astype(np.int32)
    single = one_pass
    if len(got["u_row"]):
        group, ids = groups["u_id"]
        u_ps, is_pub = got["u_ps"], got["u_pub"]
        pmin = _least(group, len(ids), np.where(is_pub, u_ps, _MAX))
        pmax = _most(group, len(ids), np.where(is_pub, u_ps, np.uint64(0)))
        published = _any(group, len(ids), is_pub)
        mixed = mixed or bool(np.any(published & (pmin != pmax)))
        alone = _mix(ids ^ np.uint64(0xA5A5A5A5A5A5A5A5))  # a uid nobody published
        route = np.where(published, pmin, alone)
        u_rows = got["u_row"]
        identity[u_rows] = (route[group] % np.uint64(parts)).astype(np.int32)
        single = single and _one_part_per_group(scope[u_rows], group, len(ids))  # a uid's publishes and receives
    if single and not mixed and len(p_row):  # and each (producer, seq)'s publishes, with or without a uid
        group, ids = groups["p_ps"]
        single = _one_part_per_group(scope[p_row], group, len(ids))
    small = np.int8 if parts < 127 else np.int32  # a plan a driver made travels to every task: keep it small
    return Plan(parts, scope.astype(small), identity.astype(small), mixed, single and not mixed)


def _one_part_per_group(parts: Any, group: Any, groups: int) -> bool:
    """Whether the ``parts`` of each group (``group``: each element's group number) are one value.

    Used for the one-pass test: the evidence for a (producer, seq) is its publishes and the receives of its
    uids; when every uid's events share a scope part and every (producer, seq)'s publishes do, all of it does.
    """

    wide = parts.astype(np.int64)
    low = np.full(groups, np.iinfo(np.int64).max, np.int64)
    high = np.full(groups, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(low, group, wide)
    np.maximum.at(high, group, wide)
    return bool(np.array_equal(low, high))


def _groups(ids: Any) -> tuple[Any, Any]:
    """``(group, uniques)``: each element's group number (equal ids, one group) and each group's id — a hash
    table (pyarrow's, in C++), not a sort: a trace's ids come in no order worth sorting."""

    encoded = pc.dictionary_encode(pa.array(ids))
    return encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary.to_numpy(zero_copy_only=False)


def _least(group: Any, groups: int, values: Any) -> Any:
    """The least uint64 of each group (``_MAX`` for none)."""

    out = np.full(groups, _MAX, np.uint64)
    np.minimum.at(out, group, values)
    return out


def _most(group: Any, groups: int, values: Any) -> Any:
    """The greatest uint64 of each group (0 for none)."""

    out = np.zeros(groups, np.uint64)
    np.maximum.at(out, group, values)
    return out


def _any(group: Any, groups: int, flags: Any) -> Any:
    """Whether any element of each group is flagged."""

    out = np.zeros(groups, bool)
    out[group[flags]] = True
    return out


def _plan_batch(batch: Any, offset: int, parts: int, pieces: dict[str, list[Any]]) -> None:
    """Add one batch's share of the plan to ``pieces`` (numpy arrays, :data:`_PIECES`)."""

    n = batch.num_rows
    names = set(batch.schema.names)

    def column(name: str, kind: Any = None) -> Any:
        kind = pa.string() if kind is None else kind
        if name not in names:
            return pa.nulls(n, kind)
        array = batch.column(name)
        return array if array.type == kind else array.cast(kind)

    def flags(mask: Any) -> Any:
        return pc.fill_null(mask, False).to_numpy(zero_copy_only=False)

    op, msg_id, key = column("op"), column("msg_id"), column("key")
    rows = np.arange(offset, offset + n, dtype=np.int64)
    is_op = flags(pc.is_in(op, value_set=pa.array(MESSAGE_OPS)))
    message = is_op & flags(pc.is_valid(msg_id))
    scope = np.full(n, ALL, np.int32)
    failed = is_op & ~message  # an event about one message without its msg_id (a failed publish): by its key
    if failed.any():
        scope[failed] = (hash_strings(pc.filter(key, pa.array(failed))) % np.uint64(parts)).astype(np.int32)
    pieces["scope"].append(scope)
    if message.any():
        where = pa.array(message)
        ids = pc.split_pattern(pc.filter(msg_id, where), ":")
        ledger, entry = (pc.cast(pc.list_element(ids, k), pa.int64()).to_numpy(zero_copy_only=False) for k in (0, 1))
        if pc.min(pc.list_value_length(ids)).as_py() >= 4:  # the canonical "l:e:p:b" (what recorders write)
            bidx = pc.cast(pc.list_element(ids, 3), pa.int64()).to_numpy(zero_copy_only=False)
        else:  # "l:e" and "l:e:p" padded with -1 parts: the fourth part is the batch index
            padded = pc.binary_join_element_wise(pc.filter(msg_id, where), pa.scalar(":-1:-1"), "")
            bidx = pc.cast(pc.list_element(pc.split_pattern(padded, ":"), 3), pa.int64()).to_numpy(zero_copy_only=False)
        m_op, m_key = pc.filter(op, where), pc.filter(key, where)
        publish_ok = flags(pc.and_(pc.equal(m_op, "publish"), pc.equal(pc.filter(column("result"), where), "ok")))
        keyed = flags(pc.equal(m_op, "receive")) | (publish_ok & (ledger >= 0) & (entry >= 0))
        u64 = np.uint64
        pieces["m_row"].append(rows[message])
        entry_of = np.where(bidx >= 0, -2, bidx)  # a batch is one entry, dispatched whole by one sticky key
        pieces["m_id"].append(_mix(_mix(_mix(ledger.astype(u64)) + entry.astype(u64)) + entry_of.astype(u64)))
        pieces["m_keyed"].append(hash_strings(m_key))  # a null key counts as "" where keyed
        pieces["m_has_keyed"].append(keyed)
        pieces["m_has_any"].append(flags(pc.is_valid(m_key)))
    # identity pass: publishes, and receives carrying a uid
    uid = column("uid")
    is_publish = flags(pc.equal(op, "publish"))
    with_uid = flags(pc.is_valid(uid))
    identity = is_publish | (flags(pc.equal(op, "receive")) & with_uid)
    if is_publish.any():
        where = pa.array(is_publish)
        producer = pc.fill_null(pc.filter(column("producer"), where), _NO_PRODUCER)
        seq = pc.filter(column("seq", pa.int64()), where)
        seq_np = pc.fill_null(seq, 0).to_numpy(zero_copy_only=False).astype(np.uint64)
        seq_null = (~flags(pc.is_valid(seq))).astype(np.uint64)
        pieces["p_row"].append(rows[is_publish])
        pieces["p_ps"].append(
            _mix(hash_strings(producer) ^ _mix(seq_np + np.uint64(0x51ED27) + seq_null * np.uint64(1 << 63)))
        )
        pieces["p_uid"].append(with_uid[is_publish])
    take = identity & with_uid
    if take.any():
        uids = pc.filter(uid, pa.array(take)).cast(pa.large_string())
        ps = np.zeros(n, np.uint64)  # the receives' is never read
        if is_publish.any():
            ps[is_publish] = pieces["p_ps"][-1]
        pieces["u_row"].append(rows[take])
        pieces["u_id"].append(_hash_unique(uids))
        pieces["u_ps"].append(ps[take])
        pieces["u_pub"].append(is_publish[take])


#: The arrays :func:`_plan_batch` gathers (name: numpy dtype).
_PIECES: dict[str, str] = {
    "scope": "int32", "m_row": "int64", "m_id": "uint64", "m_keyed": "uint64", "m_has_keyed": "bool",
    "m_has_any": "bool", "p_row": "int64", "p_ps": "uint64", "p_uid": "bool", "u_row": "int64", "u_id": "uint64",
    "u_ps": "uint64", "u_pub": "bool",
}  # fmt: skip
