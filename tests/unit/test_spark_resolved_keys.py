"""The Spark engine's split of a trace whose acks carry no key, without a plan: each task resolves the keys of the
acks, nacks and dead letters from the trace itself (:class:`conformance.spark.router.Resolution`), so the driver
reads nothing of the trace.

Proven as the split by key is (``tests/unit/test_spark_router.py``), task by task without Spark: where the parts'
footprints do not overlap, the merged verdict is the streaming engine's (violations, explanations, counts, notes,
unjudged kinds) on simulated runs with keyless acks and every kind planted, raced and with equal timestamps; a
release of a message nothing names (a stray) is found by the first job and routed in the second; an ack written
under another key than its message's goes with its message; a batch entry of two keys still overlaps (the plan's
case).  ``tests/spark/test_spark_key_split.py`` runs it in Spark's workers, with the driver's plan forbidden.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from part_checks import same_verdicts, stored_in_chunks
from raced_traces import race
from trace_synth import PLANTABLE, SynthConfig, synthesize

from conformance.checks import check_trace
from conformance.checks.partition import needs_whole_trace
from conformance.spark.engine import _in_memory, _merged, check_routed_task, resolve_keys
from conformance.spark.route import WHOLE
from conformance.spark.router import overlap
from conformance.spark.split import hash_strings
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder


def resolved_in_parts(header: TraceHeader, given: Any, parts: int) -> tuple[Any, str | None, int, bool]:
    """Every task of a split by resolved keys as the engine's jobs run them (a second job with the strays the
    first found): ``(merged verdict, overlapping kind or None, strays, a part needs the whole trace)``."""

    def job(strays: Any) -> tuple[list[Any], list[Any]]:
        results, prints = [], []
        for part in range(parts):
            result, footprint = check_routed_task(header, None, given, part, parts, resolved=True, strays=strays)
            results.append((0, WHOLE, part, result))
            prints.append(footprint)
        return results, prints

    results, prints = job(None)
    strays = np.unique(np.concatenate([fp["strays"] for fp in prints]))
    if len(strays):
        results, prints = job(strays)
    blind = any(needs_whole_trace(result) for *_, result in results)
    return _merged(results, {0: header}, None)[0], overlap(prints), len(strays), blind


def keyless(seed: int, **config: Any) -> Any:
    cfg = {"messages": 40, "keys": 6, "keyed_acks": False, "mixed_batch_rate": 0.0, "deduplication": False}
    return synthesize(seed, SynthConfig(**{**cfg, **config}), plant={sorted(PLANTABLE)[seed % len(PLANTABLE)]})


def test_keyless_acks_resolved_by_the_tasks_give_the_streaming_verdict() -> None:
    found: set[Any] = set()
    held = 0
    for seed in range(24):
        run = keyless(seed, partitions=2 * (seed % 2), churn=0.08)
        events = list(run.events)
        assert all(e.key is None for e in events if e.op.value in ("ack", "nack"))
        if seed % 3 == 1:  # (races add acks by non-holders, some with a key)
            events = race(events, random.Random(seed))
        if seed % 3 == 2:
            events = [dataclasses.replace(e, t=0) for e in events]
        verdict, overlapping, _strays, blind = resolved_in_parts(run.header, _in_memory(events), 2 + seed % 3)
        assert overlapping is None, seed  # nothing in these traces defeats the resolved split
        if blind:  # a lost_write a part found: the engine checks the trace whole (tested elsewhere)
            continue
        want = check_trace(events, header=run.header)
        same_verdicts(verdict, want)
        found |= {v.kind for v in want.all_violations()}
        held += 1
    assert held >= 20 and len(found) >= len(PLANTABLE) // 2, (held, found)


def header() -> TraceHeader:
    return TraceHeader("x", SubscriptionSpec("s"), deduplication=False)


def keys_in_other_parts(parts: int = 2) -> tuple[str, str]:
    names = [f"k{n}" for n in range(64)]
    where = hash_strings(pa.array(names)) % np.uint64(parts)
    other = next(n for n in range(1, 64) if where[n] != where[0])
    return names[0], names[other]


def test_a_stray_ack_is_found_by_the_first_job_and_checked_by_the_second() -> None:
    """An ack of a message no receive or publish names is in no part's messages: the first job drops it and
    says so; the second routes it by its own key (none: the empty key's part), as the plan would."""
    a, b = keys_in_other_parts()
    t = TraceBuilder(header())
    t.open("c1")
    t.publish(a, "1:0")
    t.publish(b, "1:1")
    t.receive("c1", a, "1:0")
    t.receive("c1", b, "1:1")
    t.ack("c1", "1:0")
    t.ack("c1", "9:9")  # never published nor received
    t.ack("c1", "1:1")
    t.end(drained=True)
    verdict, overlapping, strays, _blind = resolved_in_parts(t.header, _in_memory(t.events), 2)
    assert strays == 1 and overlapping is None
    same_verdicts(verdict, check_trace(t.events, header=t.header))


def test_an_ack_under_another_key_goes_with_its_message() -> None:
    """Routed by the key it carries, this ack would be another part's (an overlap: the plan); resolved, it goes
    where its message's receive went, and the verdict is the whole trace's."""
    a, b = keys_in_other_parts()
    t = TraceBuilder(header())
    t.open("c1")
    t.open("c2")
    t.publish(a, "1:0")
    t.publish(a, "1:1")
    t.receive("c1", a, "1:0")
    t.ack("c1", "1:0", key=b)  # the recorder wrote the wrong key
    t.receive("c2", a, "1:1")
    t.ack("c2", "1:1")
    t.end(drained=True)
    verdict, overlapping, _strays, _blind = resolved_in_parts(t.header, _in_memory(t.events), 2)
    assert overlapping is None
    want = check_trace(t.events, header=t.header)
    assert want.valid
    same_verdicts(verdict, want)


def test_a_batch_entry_of_two_keys_still_overlaps() -> None:
    a, b = keys_in_other_parts()
    t = TraceBuilder(header())
    t.open("c1")
    t.publish(a, "1:0:-1:0")
    t.publish(b, "1:0:-1:1")
    t.receive("c1", a, "1:0:-1:0")
    t.receive("c1", b, "1:0:-1:1")
    t.ack("c1", "1:0:-1:0")
    t.ack("c1", "1:0:-1:1")
    t.end(drained=True)
    _verdict, overlapping, _strays, _blind = resolved_in_parts(t.header, _in_memory(t.events), 2)
    assert overlapping == "entries"


def test_a_tasks_resolution_holds_its_share_of_the_messages_only(tmp_path: Path) -> None:
    """Read from stored Parquet chunks (four columns, batch by batch): each part's messages are its own, together
    every message once."""
    run = keyless(7, messages=200, keys=20, batch_rate=0.0)
    path = stored_in_chunks(tmp_path / "chunks", run.header, list(run.events))
    messages = {e.msg_id for e in run.events if e.op.value in ("publish", "receive") and e.msg_id}
    owns = [resolve_keys(("path", str(path)), part, 4)[0].own for part in range(4)]
    assert sum(len(own) for own in owns) == len(messages)
    assert len(np.unique(np.concatenate(owns))) == len(messages)
    assert max(len(own) for own in owns) < len(messages)
