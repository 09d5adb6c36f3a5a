"""The Spark engine's Python parts that run without a session: the scope sweep's pass-through and the settings."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyarrow")


def _batch(rows: list[dict[str, Any]]) -> Any:
    import pyarrow as pa

    from conformance.spark.ordering import SWEEP_COLUMNS

    ref = pa.struct([("i", pa.int64()), ("op", pa.string()), ("consumer", pa.string()), ("msg", pa.string())])
    strings = {"sub", "stream", "key", "kind", "consumer", "msg", "m_op", "m_consumer", "vkind", "aux"}
    types = {name: pa.string() if name in strings else pa.int64() for name in SWEEP_COLUMNS}
    types["refs"] = pa.list_(ref)
    return pa.RecordBatch.from_pylist(
        [{name: row.get(name) for name in SWEEP_COLUMNS} for row in rows],
        schema=pa.schema([(name, types[name]) for name in SWEEP_COLUMNS]),
    )


def test_violations_decided_per_message_pass_through_the_sweep_as_they_are() -> None:
    """They ride through the sweep (one consumer of the message pass), so nothing may change them there."""
    from conformance.spark.ordering import sweep_batches

    refs = [{"i": 3, "op": "publish", "consumer": None, "msg": "1:0:-1:-1"}]
    decided = {"tid": 7, "sub": "s", "stream": "t|-1", "key": "k", "kind": "V", "i": 3, "vkind": "undelivered",
               "refs": refs, "aux": '{"msg": "1:0:-1:-1", "end": 9}'}  # fmt: skip
    out = [row for batch in sweep_batches(iter([_batch([decided])])) for row in batch.to_pylist()]
    assert out == [{"tid": 7, "kind": "undelivered", "sub": "s", "key": "k", "refs": refs, "aux": decided["aux"]}]


def test_a_decided_violation_between_scopes_leaves_the_sweep_of_its_scope_whole() -> None:
    """A ``V`` row may sit between two rows of a scope's periods; the sweep still judges the scope as one."""
    from conformance.spark.ordering import sweep_batches

    scope = {"tid": 0, "sub": "s", "stream": "t|-1", "key": "k"}
    hold = dict(scope, kind="H", i=1, end=5, inc=1, consumer="c1", ledger=1, entry=0, batch=-1, msg="1:0:-1:-1")
    decided = dict(scope, kind="V", i=2, vkind="undelivered", refs=[], aux="{}")
    other = dict(scope, kind="H", i=3, end=6, inc=2, consumer="c2", ledger=1, entry=1, batch=-1, msg="1:1:-1:-1")
    out = [row for batch in sweep_batches(iter([_batch([hold, decided, other])])) for row in batch.to_pylist()]
    assert sorted(row["kind"] for row in out) == ["key_overlap", "out_of_order", "undelivered"]


def test_the_session_caches_uncompressed_columns() -> None:
    """The engine caches each trace once and reads it a few times: compressing it cost more than it saved."""
    from conformance.spark.session import session_config

    assert session_config("local[2]")["spark.sql.inMemoryColumnarStorage.compressed"] == "false"
