"""Getting a trace into Spark: Parquet and JSON Lines read by Spark itself, events in memory via Arrow.

Every DataFrame the engine works on has the columns of :data:`conformance.trace.reader.FAST_SCHEMA` plus
``tid``, a trace id, so that many (small) traces can be checked in one Spark job (the differential tests do).
The trace is validated by the Python reader before Spark sees it (one vectorised pass), so a malformed trace
fails with the same one-line error on both engines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from conformance.trace.events import Event
from conformance.trace.reader import TraceSource

__all__ = ["EVENT_COLUMNS", "events_frame", "events_table", "source_frame", "spark_schema"]

EVENT_COLUMNS: tuple[str, ...] = (
    "i", "t", "op", "topic", "subscription", "consumer", "producer", "key", "msg_id", "seq", "uid", "result",
    "redelivery_count", "drained", "t0", "name", "receiver_queue", "policy", "consumers", "unattributed",
)  # fmt: skip


def spark_schema() -> Any:
    """The Spark twin of ``FAST_SCHEMA`` (without ``tid``)."""
    from pyspark.sql import types as T

    policy = T.StructType(
        [
            T.StructField("key_shared_mode", T.StringType()),
            T.StructField("allow_out_of_order_delivery", T.BooleanType()),
            T.StructField("sticky_ranges", T.ArrayType(T.ArrayType(T.LongType()))),
        ]
    )
    types = {
        "i": T.LongType(), "t": T.LongType(), "seq": T.LongType(), "redelivery_count": T.LongType(),
        "t0": T.LongType(), "receiver_queue": T.LongType(), "drained": T.BooleanType(), "policy": policy,
        "consumers": T.ArrayType(T.StringType()), "unattributed": T.ArrayType(T.StringType()),
    }  # fmt: skip
    return T.StructType([T.StructField(name, types.get(name, T.StringType())) for name in EVENT_COLUMNS])


def events_table(traces: Iterable[tuple[int, Sequence[Event]]]) -> Any:
    """A pyarrow Table (``tid`` + event columns) from ``(trace id, events)`` pairs."""
    import pyarrow as pa

    from conformance.trace.reader import fast_schema

    rows: dict[str, list[Any]] = {name: [] for name in ("tid", *EVENT_COLUMNS)}
    for tid, events in traces:
        for event in events:
            d = event.to_dict()
            rows["tid"].append(tid)
            for name in EVENT_COLUMNS:
                rows[name].append(d.get(name))
    fields = [pa.field("tid", pa.int64()), *fast_schema()]
    policy = rows["policy"]
    for n, value in enumerate(policy):
        if isinstance(value, dict):
            policy[n] = {
                "key_shared_mode": value.get("key_shared_mode"),
                "allow_out_of_order_delivery": value.get("allow_out_of_order_delivery"),
                "sticky_ranges": value.get("sticky_ranges"),
            }
    return pa.table({f.name: pa.array(rows[f.name], f.type) for f in fields}, schema=pa.schema(fields))


def events_frame(spark: Any, traces: Iterable[tuple[int, Sequence[Event]]]) -> Any:
    """A DataFrame of events in memory (one or many traces, told apart by ``tid``)."""
    return spark.createDataFrame(events_table(traces))


def source_frame(spark: Any, source: TraceSource, tid: int = 0) -> Any:
    """A DataFrame of a stored trace, read by Spark (Parquet directly; JSON Lines with a declared schema)."""
    from pyspark.sql import functions as F

    schema = spark_schema()
    path = str(source.path)
    if source.format == "parquet":
        raw = spark.read.parquet(path)
        present = set(raw.columns)
        json_columns = _json_columns(source)
        cols = []
        for field in schema.fields:
            if field.name not in present:
                cols.append(F.lit(None).cast(field.dataType).alias(field.name))
            elif field.name in json_columns:
                cols.append(F.from_json(F.col(field.name), field.dataType).alias(field.name))
            else:
                cols.append(F.col(field.name).cast(field.dataType).alias(field.name))
        df = raw.select(*cols)
    else:
        df = spark.read.schema(schema).option("mode", "PERMISSIVE").json(path).where(F.col("op").isNotNull())
    # No repartition here: the engine's first shuffle (by message) spreads the rows over the cores before any
    # per-row work, so a single Parquet row group or a gzip file costs only its read.
    return df.select(F.lit(tid).cast("long").alias("tid"), *EVENT_COLUMNS)


def _json_columns(source: TraceSource) -> frozenset[str]:
    import json

    import pyarrow.parquet as pq

    from conformance.trace.reader import PARQUET_JSON_COLUMNS_KEY

    metadata = pq.ParquetFile(source.path).schema_arrow.metadata or {}
    try:
        return frozenset(json.loads(metadata.get(PARQUET_JSON_COLUMNS_KEY, b"[]")))
    except (ValueError, TypeError):
        return frozenset()
