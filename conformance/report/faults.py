"""What each ``fault`` event of a trace says it was (``broker_restart``, ``net_partition``, ...), by event index.

The checker's columnar batches carry no ``fault`` column (the checker needs only that a fault happened and whom
it touched), but a page that shows a soak's faults should name them.  Faults are few, so this reads them apart:
in Parquet (one file or a soak's directory of chunks) the ``i``, ``op`` and ``fault`` columns only; in JSON
Lines the lines that mention ``fault``.  It is called only when the pass met a fault, so a trace without one
costs nothing.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Collection

from conformance.trace.reader import TraceSource

__all__ = ["fault_names"]


def fault_names(source: TraceSource, wanted: Collection[int]) -> dict[int, str]:
    """``{i: fault}`` for the fault events at indices ``wanted`` (those without a ``fault`` field are left out)."""
    if not wanted:
        return {}
    want = set(wanted)
    if source.format == "parquet":
        return _from_parquet(source, want)
    return _from_jsonl(source, want)


def _from_parquet(source: TraceSource, want: set[int]) -> dict[int, str]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out: dict[int, str] = {}
    for path in source.files:
        pf = pq.ParquetFile(path)
        if "fault" not in pf.schema_arrow.names:
            continue
        table = pf.read(columns=["i", "op", "fault"])
        table = table.filter(pc.equal(table.column("op"), "fault"))
        for i, name in zip(table.column("i").to_pylist(), table.column("fault").to_pylist(), strict=True):
            if i in want and isinstance(name, str):
                out[i] = name
    return out


def _from_jsonl(source: TraceSource, want: set[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    opener = gzip.open(source.path, "rb") if source.compressed else open(source.path, "rb")  # noqa: SIM115
    with opener as fh:
        for line in fh:
            if b"fault" not in line:
                continue
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue  # the pass over the trace has validated it; a header line or the like
            if isinstance(obj, dict) and obj.get("op") == "fault" and obj.get("i") in want:
                name = obj.get("fault")
                if isinstance(name, str):
                    out[obj["i"]] = name
                if len(out) == len(want):
                    break
    return out
