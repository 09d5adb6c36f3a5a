"""Generate large synthetic traces for the checker benchmark (Parquet, optionally JSON Lines).

    python benchmarks/gen_trace.py --events 1000000 --out /tmp/trace-1m.parquet [--jsonl /tmp/trace-1m.jsonl]

The workload is a clean Key_Shared run — consumers of one subscription receive their keys (as the reference
auto-split selector assigns them) in order and acknowledge them a little later; consumers leave and join at
quiet moments; some messages are negatively acknowledged and redelivered — with a few violations of every
kind planted at known places (``--plant N`` of each; the counts are printed).  About three events per message.
Generation is linear and streams to disk in row groups, so 10M events need little memory.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

COLUMNS = ("i", "t", "op", "topic", "subscription", "consumer", "producer", "key", "msg_id", "seq", "uid",
           "result", "drained", "t0", "name")  # fmt: skip
PLANTED = ("key_overlap", "out_of_order", "undelivered", "redelivered_after_ack", "duplicate_publish",
           "unexpected_message", "misassigned")  # fmt: skip


class Gen:
    def __init__(self, events: int, keys: int, consumers: int, plant: int, seed: int) -> None:
        from reference_model.selectors import ConsumerRef, make_selector

        self.ref = ConsumerRef
        self.sel = make_selector("auto-split", "4.0")
        self.rnd = random.Random(seed)
        self.target = events
        self.keys = [f"key-{n}" for n in range(keys)]
        self.nconsumers = consumers
        self.cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        self.i = 0
        self.t = 1_000_000
        self.entry = 0
        self.seq = 0
        self.live: list[tuple[str, int]] = []
        self.gen = 0
        self.owner: dict[str, str] = {}
        self.planted = {k: 0 for k in PLANTED}
        self.plan = {k: plant for k in PLANTED}
        self.chunks: list[dict[str, list[Any]]] = []
        self.sink: Any = None  # called with each full chunk (streams 10M events to disk)

    def emit(self, op: str, **f: Any) -> None:
        cols = self.cols
        cols["i"].append(self.i)
        cols["t"].append(self.t)
        cols["op"].append(op)
        for name in COLUMNS[3:]:
            cols[name].append(f.get(name))
        self.i += 1
        self.t += 1000

    def rebuild_owners(self) -> None:
        self.owner = {k: self.sel.select_key(k.encode()).name for k in self.keys}

    def open(self) -> None:
        name = f"c{self.gen}"
        self.gen += 1
        cid = self.i
        self.emit("open", consumer=name, subscription="s", topic="orders", result="ok", name=name)
        self.live.append((name, cid))
        self.sel.add(self.ref(name, cid))  # the broker's selector changes incrementally, as the checker's
        self.rebuild_owners()

    def close(self) -> None:
        name, cid = self.live.pop(self.rnd.randrange(len(self.live)))
        self.emit("close", consumer=name)
        self.sel.remove(self.ref(name, cid))
        self.rebuild_owners()

    def msg(self) -> str:
        self.entry += 1
        return f"11:{self.entry}:-1:-1"

    def chance(self, kind: str, window_index: int) -> bool:
        return self.plan[kind] > 0 and self.rnd.random() < 0.02 and window_index > 2

    def run(self) -> dict[str, list[Any]]:
        for _ in range(self.nconsumers):
            self.open()
        rnd = self.rnd
        window = 0
        while self.i < self.target - 8:
            window += 1
            batch = []
            for _ in range(min(200, max(1, (self.target - self.i) // 3))):
                key = self.keys[rnd.randrange(len(self.keys))]
                m, seq = self.msg(), self.seq
                self.seq += 1
                self.emit("publish", topic="orders", producer="p0", key=key, msg_id=m, seq=seq, uid=f"u{seq}",
                          result="ok", t0=self.t - 10)  # fmt: skip
                batch.append((key, m, seq))
            if self.chance("duplicate_publish", window):
                key, m, seq = batch[0]
                dup = self.msg()
                self.emit("publish", topic="orders", producer="p0", key=key, msg_id=dup, seq=seq, uid=f"u{seq}",
                          result="ok", t0=self.t - 10)  # fmt: skip
                batch.append((key, dup, seq))
                self.plan["duplicate_publish"] -= 1
                self.planted["duplicate_publish"] += 1
            if self.chance("out_of_order", window):  # swap two messages of one key
                for a in range(len(batch) - 1):
                    b = next((b for b in range(a + 1, len(batch)) if batch[b][0] == batch[a][0]), None)
                    if b is not None:
                        batch[a], batch[b] = batch[b], batch[a]
                        self.plan["out_of_order"] -= 1
                        self.planted["out_of_order"] += 1
                        break
            lost = None
            if self.chance("undelivered", window):
                lost = batch[-1][1]
                self.plan["undelivered"] -= 1
                self.planted["undelivered"] += 1
            held: list[tuple[str, str, str]] = []
            for key, m, seq in batch:
                if m == lost:
                    continue
                consumer = self.owner[key]
                if self.chance("misassigned", window) and len(self.live) > 1 and not any(h[1] == key for h in held):
                    consumer = next(n for n, _ in self.live if n != consumer)
                    self.plan["misassigned"] -= 1
                    self.planted["misassigned"] += 1
                elif self.chance("key_overlap", window) and len(self.live) > 1 and any(h[1] == key for h in held):
                    consumer = next(n for n, _ in self.live if n != self.owner[key])
                    self.plan["key_overlap"] -= 1
                    self.planted["key_overlap"] += 1
                self.emit("receive", topic="orders", consumer=consumer, key=key, msg_id=m, uid=f"u{seq}")
                held.append((consumer, key, m))
                if len(held) > 8:  # ack the oldest, sometimes out of turn
                    j = 0 if rnd.random() < 0.8 else rnd.randrange(len(held))
                    c, k, mm = held.pop(j)
                    if rnd.random() < 0.01:  # nack and redeliver in place
                        self.emit("nack", topic="orders", consumer=c, key=k, msg_id=mm)
                        self.emit("receive", topic="orders", consumer=c, key=k, msg_id=mm)
                    self.emit("ack", topic="orders", consumer=c, key=k, msg_id=mm)
            for c, k, mm in held:
                self.emit("ack", topic="orders", consumer=c, key=k, msg_id=mm)
            if self.chance("redelivered_after_ack", window):
                key, m, seq = batch[0]
                if m != lost:
                    c = self.owner[key]
                    self.emit("receive", topic="orders", consumer=c, key=key, msg_id=m, uid=f"u{seq}")
                    self.emit("ack", topic="orders", consumer=c, key=key, msg_id=m)
                    self.plan["redelivered_after_ack"] -= 1
                    self.planted["redelivered_after_ack"] += 1
            if self.chance("unexpected_message", window):
                c = self.live[0][0]
                ghost = self.msg()
                self.emit("receive", topic="orders", consumer=c, key="ghost", msg_id=ghost, uid=f"ghost-{self.i}")
                self.emit("ack", topic="orders", consumer=c, key="ghost", msg_id=ghost)
                self.plan["unexpected_message"] -= 1
                self.planted["unexpected_message"] += 1
            if rnd.random() < 0.01:  # a quiet moment: membership changes
                if len(self.live) > 1 and rnd.random() < 0.5:
                    self.close()
                else:
                    self.open()
            if len(self.cols["i"]) >= 1_000_000:
                self.flush()
        self.emit("end", drained=True)
        self.flush()
        return self.planted

    def flush(self) -> None:
        if self.sink is None:
            self.chunks.append(self.cols)
        else:
            self.sink(self.cols)
        self.cols = {c: [] for c in COLUMNS}


def header(seed: int) -> dict[str, Any]:
    return {
        "trace_format": 1,
        "target": "benchmark",
        "pulsar_version": "4.0",
        "subscription": {"name": "s", "type": "Key_Shared", "key_shared_mode": "AUTO_SPLIT",
                         "allow_out_of_order_delivery": False},
        "deduplication": True,
        "selector": {"kind": "auto-split", "pulsar_version": "4.0", "points": 100},
        "seed": seed,
    }  # fmt: skip


def generate(events: int, out: Path, *, jsonl: Path | None = None, plant: int = 3, seed: int = 1,
             keys: int = 10_000, consumers: int = 8) -> dict[str, int]:  # fmt: skip
    """Write a trace of about ``events`` events to ``out`` (Parquet) and optionally ``jsonl``; the planted counts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from conformance.trace.reader import PARQUET_HEADER_KEY, PARQUET_JSON_COLUMNS_KEY

    types = {"i": pa.int64(), "t": pa.int64(), "seq": pa.int64(), "t0": pa.int64(), "drained": pa.bool_()}
    schema = pa.schema([(c, types.get(c, pa.string())) for c in COLUMNS]).with_metadata(
        {PARQUET_HEADER_KEY: json.dumps(header(seed)).encode(), PARQUET_JSON_COLUMNS_KEY: b"[]"}
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    text = open(jsonl, "w", encoding="utf-8") if jsonl is not None else None  # noqa: SIM115 - closed below
    try:
        with pq.ParquetWriter(out, schema) as writer:
            if text is not None:
                text.write(json.dumps(header(seed), separators=(",", ":")) + "\n")

            def sink(chunk: dict[str, list[Any]]) -> None:
                table = pa.table({c: pa.array(chunk[c], schema.field(c).type) for c in COLUMNS}, schema=schema)
                writer.write_table(table)
                if text is not None:
                    for row in zip(*(chunk[c] for c in COLUMNS), strict=True):
                        obj = {k: v for k, v in zip(COLUMNS, row, strict=True) if v is not None}
                        text.write(json.dumps(obj, separators=(",", ":")) + "\n")

            gen = Gen(events, keys, consumers, plant, seed)
            gen.sink = sink
            return gen.run()
    finally:
        if text is not None:
            text.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, required=True, help="Parquet output")
    parser.add_argument("--jsonl", type=Path, default=None, help="also write JSON Lines here")
    parser.add_argument("--plant", type=int, default=3, help="violations planted per kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--consumers", type=int, default=8)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    planted = generate(args.events, args.out, jsonl=args.jsonl, plant=args.plant, seed=args.seed, keys=args.keys,
                       consumers=args.consumers)  # fmt: skip
    print(f"wrote {args.out} ({args.events} events) in {time.perf_counter() - started:.1f}s; planted {planted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
