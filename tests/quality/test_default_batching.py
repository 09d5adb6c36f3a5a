"""Default (non-key-based) batching with several keys per batch: each message is judged under its entry's key.

Pulsar dispatches a batch entry whole by the key of its metadata, which the client copies from the batch's first
message (``docs/checker.md``, "Batches").  Before the checkers knew this, a correct broker's trace of mixed-key
batches read as ``key_overlap``, ``out_of_order``, ``misassigned`` and ``redelivered_after_ack``, and a batch
split between two consumers went unseen.  Proven both ways on hand-written traces (distinct and equal
timestamps; the reference checker agrees) and on the model's own run of a scenario whose shuffled keys make
every batch mix keys, and on a stored trace of the same workload from the real ``pulsar-client`` (default
batching) against pulsar-lite 0.2.0 (``data/pulsar-lite-default-batches.jsonl.gz``; recorded with
``keyshared run FILE --target pulsar-lite --seed 1``, FILE being :data:`SCENARIO`).
``tests/spark/test_spark_engine.py`` runs the hand-written traces through Spark.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest
from batch_traces import mixed_batch_traces
from reference_checker import engine_identities, reference_check

from conformance.checks import check_trace
from conformance.scenarios import load_scenario
from conformance.trace.builder import TraceBuilder
from conformance.trace.reader import read_trace
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target

SCENARIO = """
name = "mixed-key-batches"
description = "c1 holds what it gets, c2 acknowledges, then c1 leaves: default batches of shuffled keys"

[[steps]]
do = "open"
consumer = "c1"
behaviour = "hold"

[[steps]]
do = "open"
consumer = "c2"

[[steps]]
do = "publish"
count = 400
keys = 20
batching = "default"
order = "shuffle"

[[steps]]
do = "wait_quiet"

[[steps]]
do = "close"
consumer = "c1"

[[steps]]
do = "wait_quiet"
"""


@pytest.mark.parametrize(("name", "trace", "want"), mixed_batch_traces(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_batch_is_judged_under_its_first_messages_key(name: str, trace: TraceBuilder, want: Counter[str]) -> None:
    verdict = check_trace(trace.events, header=trace.header)
    assert Counter(v.kind.value for v in verdict.violations) == want, name
    assert engine_identities(verdict.violations) == reference_check(trace.header, trace.events)


def test_an_entry_first_seen_through_a_later_message_is_noted() -> None:
    """Recorders log a batch in order; when a trace does not, the entry's key may not be the one the broker
    routed by, and the verdict says so."""
    b = TraceBuilder()
    b.open("c1"), b.publish("B", "1:0:-1:1"), b.publish("A", "1:0:-1:0")
    b.receive("c1", "A", "1:0:-1:0"), b.receive("c1", "B", "1:0:-1:1"), b.ack("c1", "1:0:-1:0"), b.ack("c1", "1:0:-1:1")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and any("first seen through a later message of their batch" in n for n in verdict.notes)
    in_order = TraceBuilder()
    in_order.open("c1"), in_order.publish("A", "1:0:-1:0"), in_order.publish("B", "1:0:-1:1"), in_order.end()
    assert not any("later message" in n for n in check_trace(in_order.events, header=in_order.header).notes)


def test_the_models_mixed_key_batches_are_valid(tmp_path: Path) -> None:
    """The model dispatches a default batch by its first message's key, as Pulsar does: its trace is valid, and
    every one of its batches did mix keys (so the old per-message reading would have failed it)."""
    scenario_file = tmp_path / "mixed.toml"
    scenario_file.write_text(SCENARIO, encoding="utf-8")
    with open_target("model", artifacts_dir=tmp_path / "target") as opened:
        result = run_scenario(opened, load_scenario(str(scenario_file)), seed=2, out_dir=tmp_path, live_check=False)
    header, events = read_trace(result.trace_path)
    entries: dict[tuple[str, ...], set[str]] = {}
    for e in events:
        if e.op.value == "receive" and e.msg_id is not None:
            entries.setdefault(tuple(e.msg_id.split(":")[:2]), set()).add(e.key or "")
    assert len(entries) >= 2 and all(len(keys) > 1 for keys in entries.values())
    verdict = check_trace(events, header=header)
    assert verdict.valid and not verdict.violations, verdict.render()
    assert engine_identities(verdict.violations) == reference_check(header, events)


def test_pulsar_lites_mixed_key_batches_overlap_no_key() -> None:
    """pulsar-lite dispatches each batch entry whole to one consumer: judged by entry, no key is held by two
    consumers and none is reordered.  The same receives judged message by message (each its own entry) overlap:
    the trace is one the per-message reading failed.  (Its ``misassigned`` findings are pulsar-lite's own
    selector, ``conformance/expectations/pulsar-lite.toml``, batches or not.)"""
    header, events = read_trace(Path(__file__).parent / "data" / "pulsar-lite-default-batches.jsonl.gz")
    verdict = check_trace(events, header=header)
    assert {v.kind.value for v in verdict.violations} == {"misassigned"}
    assert engine_identities(verdict.violations) == reference_check(header, events) == Counter()
    unbatched = [e if e.msg_id is None else dataclasses.replace(e, msg_id=_own_entry(e.msg_id)) for e in events]
    per_message = check_trace(unbatched, header=header)
    assert {"key_overlap", "out_of_order"} <= {v.kind.value for v in per_message.violations}


def _own_entry(msg_id: str) -> str:
    """A batch message's id rewritten as an entry of its own, in the same log order (batches hold < 1000)."""
    ledger, entry, _partition, batch = (int(part) for part in msg_id.split(":"))
    return f"{ledger}:{entry * 1000 + max(batch, 0)}"
