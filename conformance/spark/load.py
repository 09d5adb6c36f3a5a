"""Getting a trace into Spark: Parquet and JSON Lines read by Spark itself, events in memory via Arrow.

Every DataFrame the engine works on has the columns of :data:`conformance.trace.reader.FAST_SCHEMA` plus
``tid``, a trace id, so that many (small) traces can be checked in one Spark job (the differential tests do).
Events in memory are validated before Spark sees them.  A file Spark parses itself (:func:`path_frame`) is
not read by the Python reader: each part of it is validated in the worker that checks it, as the reader
validates a batch (:func:`conformance.spark.engine.check_frames`), so a malformed trace still fails with one line
(the trace, the events, the problem), though not the reader's own words for a row.  Spark keeps no order of the
file's rows: each part is checked in the order of ``i``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.reader import PARQUET_JSON_COLUMNS_KEY, TraceSource

__all__ = ["EVENT_COLUMNS", "events_frame", "events_table", "path_frame", "source_frame", "spark_schema"]

EVENT_COLUMNS: tuple[str, ...] = (
    "i", "t", "op", "topic", "subscription", "consumer", "producer", "key", "msg_id", "seq", "uid", "result",
    "redelivery_count", "drained", "t0", "name", "receiver_queue", "policy", "consumers", "unattributed",
    "deliver_after_ms", "fault", "expire_seconds", "error", "send_seq", "highest_seq",
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
        "t0": T.LongType(), "deliver_after_ms": T.LongType(), "expire_seconds": T.LongType(),
        "send_seq": T.LongType(), "highest_seq": T.LongType(),
        "receiver_queue": T.LongType(), "drained": T.BooleanType(), "policy": policy,
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
    """A DataFrame of a stored trace, read by Spark (Parquet — a file or a directory of chunks — directly;
    JSON Lines, plain or gzip, with a declared schema)."""
    return _frame(spark, str(source.path), source.format, _json_columns(source), tid)


def path_frame(spark: Any, uri: str, header: TraceHeader | None = None, tid: int = 0) -> tuple[Any, TraceHeader]:
    """A DataFrame of a trace only Spark can reach (``hdfs://``, ``s3a://``, ... with the user's connectors),
    and its header.

    Parquet (a file or a directory of chunks, told by a ``.parquet`` name or a directory) carries its header in
    its metadata, which Spark's Hadoop file system reads; JSON Lines (``.jsonl``, ``.json``, ``.gz``) has its
    header line skipped and ``header`` (default: unknown) stands for it.  Every file of a directory is read
    with the same schema of the event columns (:func:`_stored_schema`), so a column only later chunks have is
    read from them.
    """
    from conformance.trace.reader import PARQUET_HEADER_KEY

    lowered = uri.rstrip("/").lower()
    if lowered.endswith((".jsonl", ".json", ".jsonl.gz", ".json.gz", ".gz")):
        return _frame(spark, uri, "jsonl", frozenset(), tid), header or TraceHeader.unknown()
    metadata = _hadoop_parquet_metadata(spark, uri)
    head = header
    if head is None:
        head = TraceHeader.unknown()
        if PARQUET_HEADER_KEY.decode() in metadata:
            head = TraceHeader.from_dict(json.loads(metadata[PARQUET_HEADER_KEY.decode()]))
    json_columns = frozenset(json.loads(metadata.get(PARQUET_JSON_COLUMNS_KEY.decode(), "[]")))
    return _frame(spark, uri, "parquet", json_columns, tid), head


def _hadoop_parquet_metadata(spark: Any, uri: str) -> dict[str, str]:
    """The key-value metadata of the first Parquet file at ``uri``, read through Spark's JVM (any file system
    Spark reaches)."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(conf)
    status = fs.getFileStatus(path)
    if status.isDirectory():
        names = sorted(
            str(s.getPath().toString()) for s in fs.listStatus(path) if str(s.getPath().getName()).endswith(".parquet")
             and not str(s.getPath().getName()).startswith(("_", "."))
        )  # fmt: skip
        if not names:
            return {}
        path = jvm.org.apache.hadoop.fs.Path(names[0])
    input_file = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(path, conf)
    reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(input_file)
    try:
        meta = reader.getFooter().getFileMetaData().getKeyValueMetaData()
        return {str(k): str(meta.get(k)) for k in meta.keySet().toArray()}
    finally:
        reader.close()


def _frame(spark: Any, path: str, fmt: str, json_columns: frozenset[str], tid: int) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = spark_schema()
    if fmt == "parquet":
        # Spark takes a directory's schema from its first file, and reads a column only later files have (a
        # chunk directory's extension columns grow: a fault's 'consumers') as null: read the files with the
        # schema of every column the checker reads instead, as they are stored (a column a file lacks is null
        # in that file only, whichever file has it; columns the checker ignores are not read, so a kind that
        # widens from chunk to chunk in one of those does not matter)
        stored = _stored_schema(spark.read.parquet(path).schema)
        cols = []
        for field in schema.fields:
            text = _nested(field.dataType) and isinstance(stored[field.name].dataType, T.StringType)
            if field.name in json_columns or text:  # JSON text (as the format stores an object or a list)
                cols.append(F.from_json(F.col(field.name), field.dataType).alias(field.name))
            else:
                cols.append(F.col(field.name).cast(field.dataType).alias(field.name))
        df = spark.read.schema(stored).parquet(path).select(*cols)
    else:
        df = spark.read.schema(schema).option("mode", "PERMISSIVE").json(path).where(F.col("op").isNotNull())
    # No repartition here: the engine's first shuffle (by message) spreads the rows over the cores before any
    # per-row work, so a single Parquet row group or a gzip file costs only its read.
    return df.select(F.lit(tid).cast("long").alias("tid"), *EVENT_COLUMNS)


def _stored_schema(first: Any) -> Any:
    """The Spark schema to read every event column of a Parquet trace with, given ``first``, the schema Spark
    found in its first file: a column that file has keeps its type there (an integer column widened to 64 bits,
    so that a later file's int64 reads too); a column it lacks has the type the trace format stores it as (an
    object or a list as JSON text, ``docs/trace-format.md``; a core or scalar column its own)."""
    from pyspark.sql import types as T

    present = {f.name: f.dataType for f in first.fields}
    fields = []
    for field in spark_schema().fields:
        kind = present.get(field.name)
        if kind is None:
            kind = T.StringType() if _nested(field.dataType) else field.dataType
        elif isinstance(kind, (T.ByteType, T.ShortType, T.IntegerType)) and isinstance(field.dataType, T.LongType):
            kind = T.LongType()
        fields.append(T.StructField(field.name, kind))
    return T.StructType(fields)


def _nested(kind: Any) -> bool:
    from pyspark.sql import types as T

    return isinstance(kind, (T.StructType, T.ArrayType, T.MapType))


def _json_columns(source: TraceSource) -> frozenset[str]:
    import pyarrow.parquet as pq

    if source.format != "parquet":
        return frozenset()
    metadata = pq.ParquetFile(source.files[0]).schema_arrow.metadata or {}
    try:
        return frozenset(json.loads(metadata.get(PARQUET_JSON_COLUMNS_KEY, b"[]")))
    except (ValueError, TypeError):
        return frozenset()
