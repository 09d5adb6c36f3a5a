"""The Spark engine's first way to split a trace: each task routes the events by the key they carry, and the
parts prove afterwards that the split held.

The split :mod:`conformance.checks.partition` proves exact puts every event about a message in the part of its
key, copies the events that act across keys into every part, and (to judge the identity kinds in the same pass)
keeps the evidence for each uid and each (producer, seq) in one part.  :mod:`conformance.spark.split` plans
that in the driver: a join of every ack with its message, over the whole trace, before any task starts.  Most
traces need no join: the recorders of this project write the message's key on every event about it (publish,
receive, ack, nack), so an event's part is its own key's.  Routing that way costs each task a hash per distinct
key of a batch; the driver reads nothing.

Whether the split held is then a fact about the parts, not an assumption about the trace.  Each part gives its
:class:`Footprint`: the batch entries (stream, ledger, entry) its message events name, the (producer, seq) of its
publishes and the uids its publishes and receives carry.  :func:`overlap` says whether any of them is in two
parts.  When none is:

* every message, and every batch entry, has all its events in one part, so a part holds the whole state of
  each message and each key it holds (what the scope pass needs; a key's events share its part by routing);
* every uid's events, and every (producer, seq)'s publishes, are in one part; a receive is evidence for its
  uid's (producer, seq), whose publish carries that uid, so all the evidence for each lies in one part, and
  each part judges the identity kinds too (one pass).

An id in two parts (an ack written without its message's key, an entry of default batching mixing keys, a
(producer, seq) resent under another key) makes the routed split unproven: the engine checks a stored trace again
with the keys of its acks resolved by each task (:class:`Resolution`, :func:`resolve`: an ack, nack or dead letter
goes where its message's receives and stored publishes go), proven by the same footprints, and only if that does
not hold either by the driver's plan (:mod:`~conformance.spark.split`), which handles every case.  Two ids that
hash alike only ever cost that second check, never a verdict.

A failed publish (no message id) goes to its own key's part; a publish the broker did not store names no
message (the scope pass reads nothing of it) and is evidence only for its uid and (producer, seq).

:func:`routable` looks at the start of a trace (the driver, before the job) for acks written without their
message's key, to resolve their keys at once rather than after a routed check that cannot prove itself.

This module imports pyarrow and numpy only (no Spark): the tests run it directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.checks.streaming import RECEIPT_COPY
from conformance.spark.split import ALL, MESSAGE_OPS, _coded, _hash_each, _mix, hash_strings

__all__ = [
    "FOOTPRINT_KINDS", "RESOLVE_COLUMNS", "Footprint", "KeyRouter", "Resolution", "as_receipt_copies", "key_parts",
    "needless_receipts", "overlap", "resolve", "routable",
]  # fmt: skip

#: What a part's footprint holds, each a set no other part may share.
FOOTPRINT_KINDS: tuple[str, ...] = ("entries", "uids", "sequences")

_RELEASING = ("receive", "ack", "nack", "dead_letter")  #: message events that always name a stored message
#: Events about a message that never carry a key of their own in some recorders: with keys resolved
#: (:class:`Resolution`), they go where their message's key goes, whatever key they carry.
RESOLVED_OPS: tuple[str, ...] = ("ack", "nack", "dead_letter")
#: The columns a task reads to resolve the keys of a trace (:func:`resolve`).
RESOLVE_COLUMNS: tuple[str, ...] = ("op", "key", "msg_id", "result")
NOBODY = -3  #: a resolved event no part keeps in this job (a stray: see :class:`Resolution`)


@dataclass(frozen=True)
class Resolution:
    """What one task knows, before it routes, of where the acks, nacks and dead letters of a trace go when they
    do not carry their message's key (as some recorders write them): the messages its part holds.

    Found by :func:`resolve` in a first read of four columns (:data:`RESOLVE_COLUMNS`), streamed batch by batch:
    ``own`` holds a 64-bit hash of the message id of every receive and stored publish whose key is in this part
    (the key a message is judged under, as the plan takes it: :mod:`conformance.spark.split`).  An ack, nack or
    dead letter then goes to this part exactly when its message id is in ``own``.  The memory is the part's share
    of the messages (eight bytes each), never the trace's; the driver reads nothing.

    A release whose message no receive or stored publish names (a *stray*: an ack of a message never received,
    or one spelling the id differently) is in no part's ``own``.  So that none is lost, each task also finds the
    strays among the messages whose id hashes to its part (``found`` by :func:`resolve`); when any task found
    one, the job runs again with every stray given (``strays``), each routed by the key it carries (none: the
    empty key's part), as the plan routes a message no keyed event names.  Whatever was resolved wrongly (ids
    that hash alike, a message under two keys) shows as an overlap of the parts' footprints, as for a split by
    key."""

    part: int
    parts: int
    own: Any  #: numpy uint64, sorted distinct: hashed ids of the messages keyed into this part
    strays: Any  #: numpy uint64, sorted distinct: every stray's hashed id (given on a second job), or empty

    def parts_of_released(self, ids: Any, key_hashes: Any) -> Any:
        """The part of each release (numpy int32): this part where its message is ours, a stray's by its own key
        (``key_hashes``), :data:`NOBODY` otherwise (another part's)."""
        import numpy as np

        hashed = _hash_each(ids)
        out = np.full(len(hashed), NOBODY, np.int32)
        out[_member(self.own, hashed)] = self.part
        stray = _member(self.strays, hashed)
        if stray.any():
            out[stray] = (key_hashes[stray] % np.uint64(self.parts)).astype(np.int32)
        return out


def _member(sorted_ids: Any, ids: Any) -> Any:
    """Whether each of ``ids`` is in the sorted numpy array ``sorted_ids``."""
    import numpy as np

    if not len(sorted_ids) or not len(ids):
        return np.zeros(len(ids), bool)
    at = np.searchsorted(sorted_ids, ids)
    at[at == len(sorted_ids)] = 0
    return sorted_ids[at] == ids


def resolve(batches: Any, parts: int, part: int, strays: Any = None) -> tuple[Resolution, Any]:
    """``(this part's Resolution, the strays found among the ids that hash to this part)`` from a trace's batches
    (:data:`RESOLVE_COLUMNS`; others ignored), read once, one batch at a time.  ``strays``: every stray, as the
    previous job found them (None: none known)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    u64 = np.uint64
    own: list[Any] = []
    keyed_here: list[Any] = []  # ids keyed anywhere that hash to this part
    released_here: list[Any] = []  # ids released that hash to this part
    router = KeyRouter(parts)
    for batch in batches:
        names = set(batch.schema.names)
        if not batch.num_rows or "msg_id" not in names:
            continue
        op_idx, ops = _coded(batch, names, "op")
        op_names = np.asarray(ops.to_pylist(), dtype=object)
        is_receive = np.append(op_names == "receive", False)[op_idx]
        is_publish = np.append(op_names == "publish", False)[op_idx]
        released = np.append(np.isin(op_names, RESOLVED_OPS), False)[op_idx]
        result_idx, results = _coded(batch, names, "result")
        ok = np.append(np.asarray(results.to_pylist(), dtype=object) == "ok", False)[result_idx]
        ids = batch.column("msg_id")
        if not pa.types.is_string(ids.type):
            ids = ids.cast(pa.string())
        valid = np.asarray(pc.is_valid(ids).to_numpy(zero_copy_only=False), bool)
        keyed = (is_receive | (is_publish & ok)) & valid
        wanted = (keyed | released) & valid
        if not wanted.any():
            continue
        hashed = _hash_each(ids)  # every row's (a null's is masked out below): no copy of the rows wanted
        keys = batch.column("key") if "key" in names else pa.nulls(batch.num_rows, pa.string())
        mine = keyed & ((router._key_hashes(keys) % u64(parts)).astype(np.int64) == part)
        own.append(hashed[mine])
        hashed_part = (hashed % u64(parts)).astype(np.int64) == part
        keyed_here.append(hashed[keyed & hashed_part])
        released_here.append(hashed[released & hashed_part])
    found = np.setdiff1d(_distinct(released_here), _distinct(keyed_here), assume_unique=True)
    given = np.zeros(0, u64) if strays is None else np.asarray(strays, u64)
    return Resolution(part, parts, _distinct(own), _distinct([given])), found


class KeyRouter:
    """The part of every event of a trace's batches, in one task: its key's (null: the empty key) for an event
    about one message, :data:`~conformance.spark.split.ALL` for any other op (copied into every part).

    A key column read dictionary-encoded carries its row group's dictionary in every batch: its keys are
    hashed once, while batches carry an equal dictionary."""

    def __init__(self, parts: int, resolution: Resolution | None = None, *, receipts: bool = False) -> None:
        self.parts = parts
        self.resolution = resolution
        #: copy every other part's publishes into each part as receipts (:data:`RECEIPT_COPY`): a trace with
        #: deduplication on, whose rules comparing a producer's ids then need no second check of the whole trace
        self.receipts = receipts and parts > 1
        self.receipts_kept = 0  #: how many other parts' publishes the part read (events no part counts twice)
        #: producers with a duplicate receipt of this part's so far: their copies are all kept from then on
        self._excusing: set[str] = set()
        self._dictionary: Any = None
        self._hashes: Any = None

    def parts_of(self, batch: Any) -> Any:
        """Each event's part (numpy int32)."""
        import numpy as np
        import pyarrow as pa

        n = batch.num_rows
        names = set(batch.schema.names)
        op_idx, ops = _coded(batch, names, "op")
        op_names = np.asarray(ops.to_pylist(), dtype=object)
        message = np.append(np.isin(op_names, MESSAGE_OPS), False)[op_idx]
        out = np.full(n, ALL, np.int32)
        if message.any():
            keys = batch.column("key") if "key" in names else pa.nulls(n, pa.string())
            key_hashes = self._key_hashes(keys)
            out[message] = (key_hashes[message] % np.uint64(self.parts)).astype(np.int32)
            if self.resolution is not None and "msg_id" in names:  # releases go where their message's key goes
                ids = batch.column("msg_id")
                released = np.append(np.isin(op_names, RESOLVED_OPS), False)[op_idx]
                released &= np.asarray(ids.is_valid().to_numpy(zero_copy_only=False), bool)
                if released.any():
                    rows = pa.array(np.flatnonzero(released))
                    ids = ids.take(rows)
                    out[released] = self.resolution.parts_of_released(ids, key_hashes[released])
        return out

    def kept(self, batch: Any, part: int, copies: list[int]) -> Any:
        """The numpy mask of ``batch``'s rows that ``part`` keeps: its own and the copies every part holds (their
        count appended to ``copies``), and with :attr:`receipts` the other parts' publishes (see :meth:`route`)."""
        return self.route(batch, part, copies)[0]

    def route(self, batch: Any, part: int, copies: list[int]) -> tuple[Any, Any]:
        """``(kept, receipts)``: the numpy mask of ``batch``'s rows ``part`` keeps (as :meth:`kept`) and, with
        :attr:`receipts`, the mask of those among them that are other parts' publishes, which the part reads as
        :data:`RECEIPT_COPY` once validated (:meth:`receipt_rows`; not counted in ``copies``); None without."""
        import numpy as np

        routed = self.parts_of(batch)
        shared = routed == ALL
        keep = (routed == part) | shared
        copied = int(shared.sum())
        foreign = None
        if self.receipts:
            op_idx, ops = _coded(batch, set(batch.schema.names), "op")
            publish = np.append(np.asarray(ops.to_pylist(), dtype=object) == "publish", False)[op_idx]
            foreign = publish & ~keep
            keep = keep | foreign
        copies.append(copied)
        return keep, foreign

    def receipt_rows(self, rows: Any, receipts: Any) -> Any:
        """The validated rows a part reads (its own, the copies, the other parts' publishes where the numpy mask
        ``receipts`` is set), with the publishes no rule can tell from a later one left out
        (:func:`needless_receipts`) and the rest made :data:`RECEIPT_COPY` (:func:`as_receipt_copies`), counted
        in :attr:`receipts_kept`."""
        import pyarrow as pa

        if receipts is None or not receipts.any():
            return rows
        needless = needless_receipts(rows, receipts, self._excusing)
        if needless.any():
            keep = ~needless
            rows, receipts = rows.filter(pa.array(keep)), receipts[keep]
        self.receipts_kept += int(receipts.sum())
        return as_receipt_copies(rows, receipts)

    def _key_hashes(self, keys: Any) -> Any:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if not pa.types.is_dictionary(keys.type):
            return hash_strings(keys)
        dictionary = keys.dictionary
        if self._dictionary is None or not self._dictionary.equals(dictionary):
            self._dictionary = dictionary
            self._hashes = np.append(_hash_each(dictionary), np.uint64(0))  # a null value: the empty key's hash
        indices = keys.indices
        index = (pc.fill_null(indices, -1) if indices.null_count else indices).to_numpy(zero_copy_only=False)
        return self._hashes[index]


def key_parts(batch: Any, parts: int) -> Any:
    """The part of every event of ``batch`` (numpy int32; see :class:`KeyRouter`)."""
    return KeyRouter(parts).parts_of(batch)


def needless_receipts(rows: Any, receipts: Any, excusing: set[str]) -> Any:
    """The numpy mask of the other parts' publishes (``receipts``) of validated ``rows`` that a part need not read:
    a copy moves only its producer's highest ids, which are maxima, so one is needless when a later copy in the
    same run — no row of the part's own reads those ids in between (its publishes and the producers' creations
    bound the runs) — of the same producer and topic partition raises them past it.  Only plain receipts
    are left out (stored and sent without ids), only for a later one that raises both ids (stored as an entry's
    first message: a later message of a batch raises only the highest sequence id), and none of a
    producer from the batch holding a duplicate receipt of the part's own on (``excusing``, updated here): each
    of its copies may excuse that receipt by its send time (``lost_write``), not by its id alone.  A producer's
    publishes, of every key, fall in N parts at random: a part reads about one copy per run, at most one per
    publish of its own, instead of every other part's publishes (so the cost of a part stays its share)."""
    import numpy as np
    import pyarrow.compute as pc

    n = rows.num_rows
    names = set(rows.schema.names)
    op_idx, ops = _coded(rows, names, "op")
    op_names = np.asarray(ops.to_pylist(), dtype=object)
    publish = np.append(op_names == "publish", False)[op_idx]
    opened = np.append(op_names == "producer_open", False)[op_idx]
    own = ~receipts
    result_idx, results = _coded(rows, names, "result")
    ok = np.append(np.asarray(results.to_pylist(), dtype=object) == "ok", False)[result_idx]
    stored = ok & (_integers(rows, "ledger", -1) >= 0) & (_integers(rows, "entry", -1) >= 0)
    producer_idx, producers = _coded(rows, names, "producer")
    duplicate = own & publish & ok & ~stored & (producer_idx >= 0)
    if duplicate.any():
        excusing.update(producers.take(np.unique(producer_idx[duplicate])).to_pylist())
    out = np.zeros(n, bool)
    if "seq" not in names:
        return out
    seq_column = rows.column("seq")
    bidx = _integers(rows, "bidx", -1)
    plain = receipts & stored & (producer_idx >= 0)
    plain &= np.asarray(pc.is_valid(seq_column).to_numpy(zero_copy_only=False), bool)
    if "send_seq" in names:
        plain &= ~np.asarray(pc.is_valid(rows.column("send_seq")).to_numpy(zero_copy_only=False), bool)
    if excusing:
        guarded = np.isin(np.asarray(producers.to_pylist(), dtype=object), list(excusing))
        plain &= ~np.append(guarded, False)[producer_idx]
    at = np.flatnonzero(plain)
    if len(at) < 2:
        return out
    run = np.cumsum(own & (publish | opened))[at]  # a row of the part's own that reads the ids ends a run
    stream_idx, streams = _coded(rows, names, "stream")
    labels = np.int64((len(producers) + 1) * (len(streams) + 1))
    group = run.astype(np.int64) * labels + (producer_idx[at] + 1).astype(np.int64) * (len(streams) + 1)
    group += stream_idx[at] + 1
    seqs = np.asarray(pc.fill_null(seq_column, 0).to_numpy(zero_copy_only=False), np.int64)[at]
    r = seqs - seqs.min()
    if int(r.max()) >= (1 << 62) // (int(group.max()) + 2):  # ids too far apart to pack beside the group: ranks
        r = np.unique(seqs, return_inverse=True)[1].reshape(-1).astype(np.int64)
    order = np.lexsort((-at, group))  # by group, the latest row first
    g, r = group[order], r[order] + 1  # ids from 1: 0 stands for none
    # a raiser moves both ids (an entry's first message, as stored_below_highest's evidence); a later message of a
    # batch moves only the highest sequence id, so it may be left out but leaves no earlier copy out
    raised = np.where(bidx[at][order] <= 0, r, 0)
    first = np.ones(len(g), bool)
    first[1:] = g[1:] != g[:-1]
    gid = np.cumsum(first) - 1  # the groups numbered 0, 1, ... in this order
    span = np.int64(int(r.max()) + 1)
    seen = np.maximum.accumulate(gid * span + raised)  # the highest raiser so far within the group (groups ascend)
    before = np.zeros(len(g), np.int64)
    before[1:] = seen[:-1] - gid[1:] * span
    before[first] = 0
    out[at[order[r < before]]] = True  # a later copy of its group raises the ids past it
    return out


def as_receipt_copies(batch: Any, receipts: Any) -> Any:
    """``batch`` with the op of the rows the numpy mask ``receipts`` sets made :data:`RECEIPT_COPY` (other parts'
    publishes: the checker moves their producer's ids and judges nothing of them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if receipts is None or not receipts.any():
        return batch
    at = batch.schema.get_field_index("op")
    ops = batch.column(at)
    if pa.types.is_dictionary(ops.type):  # the dictionary gains one value; the rows' indices point at it
        import numpy as np

        dictionary = pa.concat_arrays([ops.dictionary.cast(pa.string()), pa.array([RECEIPT_COPY], pa.string())])
        indices = ops.indices.to_numpy(zero_copy_only=False).astype(np.int32)
        indices[receipts] = len(dictionary) - 1
        ops = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), dictionary)
    else:
        ops = pc.if_else(pa.array(receipts), pa.scalar(RECEIPT_COPY, pa.string()), ops)
    return batch.set_column(at, batch.schema.field(at).with_type(ops.type), ops)


class Footprint:
    """What one part holds that no other part may: its batch entries, its uids and its (producer, seq).

    Fed the part's batches as the checker reads them (:func:`~conformance.trace.decode.row_columns`: the
    derived ``stream``, ``ledger`` and ``entry`` present).  :meth:`arrays` gives, per kind, what the driver
    compares (:func:`overlap`): entries as positions within their (stream, ledger) and sequence ids within their
    producer — each group's a bit set over the span of its values, which Pulsar numbers densely (a bit an id,
    where a 64-bit id each would be a 64th of the bytes to send and sort), or its values where they are sparse —
    and uids as 64-bit hashes, sorted."""

    def __init__(self) -> None:
        #: per batch, (group, positions): the group an int where one group holds the batch's, else an array
        self._entries: list[tuple[Any, Any]] = []
        self._sequences: list[tuple[Any, Any]] = []
        self._uids: list[Any] = []
        self._labels: dict[tuple[str | None, ...], Any] = {}  #: the hashes of a dictionary of few labels

    def add(self, batch: Any) -> None:
        import numpy as np
        import pyarrow.compute as pc

        n = batch.num_rows
        if not n:
            return
        u64 = np.uint64
        names = set(batch.schema.names)
        op_idx, ops = _coded(batch, names, "op")
        op_names = np.asarray(ops.to_pylist(), dtype=object)

        def op_is(*wanted: str) -> Any:
            return np.append(np.isin(op_names, wanted), False)[op_idx]

        publish = op_is("publish")
        ledger = _integers(batch, "ledger", -1)
        entry = _integers(batch, "entry", -1)
        result_idx, results = _coded(batch, names, "result")
        ok = np.append(np.asarray(results.to_pylist(), dtype=object) == "ok", False)[result_idx]
        stored = publish & ok & (ledger >= 0) & (entry >= 0)
        stream_idx, streams = _coded(batch, names, "stream")
        entries = (op_is(*_RELEASING) | stored) & (stream_idx >= 0)
        if entries.any():
            where, ledgers = stream_idx[entries], ledger[entries]
            stream_hash = self._label_hashes(streams)
            if where.min() == where.max() and ledgers.min() == ledgers.max():  # one stream and ledger: one group
                group: Any = int(_mix(stream_hash[where[:1]] ^ _mix(ledgers[:1].astype(u64) + u64(0x51ED27)))[0])
            else:
                group = _mix(stream_hash[where] ^ _mix(ledgers.astype(u64) + u64(0x51ED27)))
            self._entries.append((group, entry[entries]))
        uid_idx, uids = _coded(batch, names, "uid")
        carrying = (publish | op_is("receive")) & (uid_idx >= 0)
        if carrying.any():
            self._uids.append(np.append(_hash_each(uids), u64(0))[uid_idx[carrying]])
        producer_idx, producers = _coded(batch, names, "producer")
        seq_column = batch.column("seq") if "seq" in names else None
        if seq_column is not None and publish.any():
            seq_valid = np.asarray(pc.is_valid(seq_column).to_numpy(zero_copy_only=False), bool)
            sequenced = publish & (producer_idx >= 0) & seq_valid
            if sequenced.any():
                seq = np.asarray(pc.fill_null(seq_column, 0).to_numpy(zero_copy_only=False), np.int64)
                which = producer_idx[sequenced]
                hashes = self._label_hashes(producers)
                group = int(hashes[which[0]]) if which.min() == which.max() else hashes[which]
                self._sequences.append((group, seq[sequenced]))

    def _label_hashes(self, values: Any) -> Any:
        """The hashes of a dictionary's values (streams, producers: a few, the same batch after batch)."""
        import numpy as np

        if len(values) > 64:
            return np.append(_hash_each(values), np.uint64(0))
        labels = tuple(values.to_pylist())
        hashes = self._labels.get(labels)
        if hashes is None:
            hashes = self._labels[labels] = np.append(_hash_each(values), np.uint64(0))
        return hashes

    def arrays(self) -> dict[str, Any]:
        """Per kind: ``entries`` and ``sequences`` as :func:`_positions`, ``uids`` as sorted distinct hashes."""
        return {
            "entries": _positions(self._entries),
            "sequences": _positions(self._sequences),
            "uids": _distinct(self._uids),
        }


#: A group's positions: ``(lowest, bits)`` — numpy uint8 bits packed from ``lowest`` on — or ``(lowest, values)``,
#: numpy int64 sorted distinct values, where a bit set would be larger than 64 bits a value.
Positions = dict[int, tuple[int, Any]]


def _positions(chunks: list[tuple[Any, Any]]) -> Positions:
    """Each group's positions (:data:`Positions`) from ``(group, position)`` arrays (a group: one int for
    all the positions of its chunk, or one per position)."""
    import numpy as np

    if not chunks:
        return {}
    values = np.concatenate([v for _g, v in chunks])
    first = chunks[0][0]
    if all(isinstance(g, int) and g == first for g, _v in chunks):  # one stream and ledger, one producer
        spans = [(first, values)]
    else:
        groups = np.concatenate([np.full(len(v), g, np.uint64) if isinstance(g, int) else g for g, v in chunks])
        order = np.argsort(groups, stable=True)
        groups, values = groups[order], values[order]
        cuts = np.flatnonzero(groups[1:] != groups[:-1]) + 1
        spans = [
            (int(groups[start]), values[start:stop])
            for start, stop in zip([0, *cuts], [*cuts, len(groups)], strict=True)
        ]
    out: Positions = {}
    for group, these in spans:
        lowest, highest = int(these.min()), int(these.max())
        if highest - lowest < 64 * len(these):
            bits = np.zeros(highest - lowest + 1, bool)
            bits[these - lowest] = True
            out[group] = (lowest, np.packbits(bits))
        else:
            out[group] = (lowest, _distinct([these]))
    return out


def _distinct(chunks: list[Any]) -> Any:
    """The distinct values of numpy arrays of one type, sorted (a sort, then the first of each run: numpy's
    ``unique`` hashes, measured ten times slower on a million ids)."""
    import numpy as np

    if not chunks:
        return np.zeros(0, np.uint64)
    ids = np.concatenate(chunks)
    ids.sort()
    first = np.empty(len(ids), bool)
    first[:1] = True
    np.not_equal(ids[1:], ids[:-1], out=first[1:])
    return ids[first]


def _integers(batch: Any, name: str, null: int) -> Any:
    import numpy as np
    import pyarrow.compute as pc

    if name not in batch.schema.names:
        return np.full(batch.num_rows, null, np.int64)
    column = batch.column(name)
    if column.null_count:
        column = pc.fill_null(column, null)
    return np.asarray(column.to_numpy(zero_copy_only=False), np.int64)


def overlap(footprints: list[dict[str, Any]]) -> str | None:
    """The first kind of :data:`FOOTPRINT_KINDS` with an id in two of the parts' footprints
    (:meth:`Footprint.arrays`), or None: the routed split held."""
    import numpy as np

    for kind in FOOTPRINT_KINDS:
        if kind == "uids":
            arrays = [fp[kind] for fp in footprints if len(fp[kind])]
            if len(arrays) > 1 and _repeats(np.concatenate(arrays)):
                return kind
        elif _positions_overlap([fp[kind] for fp in footprints]):
            return kind
    return None


def _repeats(ids: Any) -> bool:
    ids = ids.copy()
    ids.sort()
    return bool((ids[1:] == ids[:-1]).any())


def _positions_overlap(parts: list[Positions]) -> bool:
    """Whether a position of a group is in two parts' :data:`Positions`."""
    import numpy as np

    by_group: dict[int, list[tuple[int, Any]]] = {}
    for positions in parts:
        for group, group_held in positions.items():
            by_group.setdefault(group, []).append(group_held)
    for held in by_group.values():
        if len(held) < 2:
            continue
        bit_sets = [(lowest, np.unpackbits(bits).view(bool)) for lowest, bits in held if bits.dtype == np.uint8]
        if len(bit_sets) == len(held):
            lowest = min(low for low, _b in bit_sets)
            span = max(low + len(bits) for low, bits in bit_sets) - lowest
            if span <= 2 * sum(len(bits) for _l, bits in bit_sets):  # the bits side by side: an AND each
                seen = np.zeros(span, bool)
                for low, bits in bit_sets:
                    window = seen[low - lowest : low - lowest + len(bits)]
                    if bool((window & bits).any()):
                        return True
                    window |= bits
                continue
        values = [
            np.flatnonzero(np.unpackbits(bits)) + lowest if bits.dtype == np.uint8 else bits for lowest, bits in held
        ]
        if _repeats(np.concatenate(values)):
            return True
    return False


def routable(sample: Any) -> bool:
    """Whether a trace whose first events are ``sample`` (a record batch or table with ``op``, ``key`` and
    ``msg_id``) looks routable by key: no message id there has events with two keys (a null key is the empty
    key), as when acks are written without their message's key.  A guess to skip a routed check that would not
    prove itself; :func:`overlap` decides."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = set(sample.schema.names)
    if sample.num_rows == 0 or "msg_id" not in names:
        return True
    table = pa.table(
        {
            "msg_id": sample.column("msg_id"),
            "key": pc.fill_null(sample.column("key").cast(pa.string()), "")
            if "key" in names
            else pa.array([""] * sample.num_rows),
        }
    ).filter(pc.is_valid(sample.column("msg_id")))
    if not table.num_rows:
        return True
    keys = table.group_by("msg_id").aggregate([("key", "count_distinct")])
    return bool(pc.max(keys.column("key_count_distinct")).as_py() <= 1)
