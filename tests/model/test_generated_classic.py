"""Generated programs on the classic dispatcher: every violation found is a known Apache Pulsar bug, explained.

The model is the oracle for generated programs, so a program the classic model fails must fail for a reason
Pulsar's classic dispatcher has too. Each seeded program (:func:`~conformance.generated.program_from_seed`)
runs on ``model:classic`` (4.0.14 with the classic dispatcher) and ``model:3.0`` (3.0.17) while a tracer
watches the dispatcher; each violation must then be matched, message by message, to what the tracer saw:

* ``23803``: a replay read in flight when the last consumer left was dispatched to the next consumer while
  the cursor rewind it deferred was pending (apache/pulsar#23803 / #10662, open in Pulsar): the rewind re-reads
  and sends those entries again (``redelivered_after_ack`` of one of them, the copy with the redelivery count
  of the one acknowledged: a duplicate, not a redelivery), or, with no new entry to complete the normal read,
  waits at the end of the topic (``undelivered``); the copies the replay read sends may also overtake an earlier
  message of their key that the new consumer's subscribe dropped from the replay queue to await the rewind
  (``out_of_order``; seed 758, once read as a checker false positive: the program passes with #10662's proposed
  fix applied, ``tests/model/test_proposed_fixes.py``);
* ``23307``: the later message of an ``out_of_order`` pair was sent to a recently joined consumer (below its
  join position) while another consumer still held a message of its key (apache/pulsar#23307, fixed only by
  PIP-379);
* ``10750`` (2.8 only): a consumer left while another of the same name stayed, and the consistent-hashing
  ring removed both (apache/pulsar#10750, fixed by #13991 in 2.9.3; the 2.8 line never got it; the gated case
  ``catalogue/same-name-consumers``): the survivor's keys move while it holds them (``out_of_order``) or
  belong to nobody and wait in the replay queue (``undelivered``);

Anything else fails the test with the seed, the target and the violations. A window of 120 seeds per target
runs in CI (a few seconds) and must find failures (a window the generator no longer fails in says so:
widen it). The long run: ``KEYSHARED_CLASSIC_PROGRAMS=10000 pytest tests/model/test_generated_classic.py``
(every seed from 0 on every classic line in :data:`LONG_RUN_TARGETS`, about 30 s of CPU per 1,000 programs
and line).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.generated.program import GeneratorOptions, program_from_seed
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target
from reference_model.keyshared.classic import ClassicDispatcher
from reference_model.keyshared.dispatcher import KeySharedDispatcher
from reference_model.storage.position import Position
from reference_model.versions import CONSISTENT_HASHING_REMOVE_BY_IDENTITY

#: target -> the seeds CI runs (windows that hold failures of each explained kind when written, 2026-11-29)
#: The generator's moves without the workload dimensions (batching, broker limits, STICKY, out-of-order delivery,
#: many consumers): the programs explained here.  With the dimensions the classic lines break in ways not yet
#: explained (docs/model.md, "Generated programs on the classic dispatcher").
PLAIN = GeneratorOptions(dimensions=False)
WINDOWS = {"model:classic": range(360, 480), "model:3.0": range(500, 620)}
LONG_RUN = int(os.environ.get("KEYSHARED_CLASSIC_PROGRAMS", "0"))
#: every classic release line the long run covers (newest patch; 3.0.0 for the releases before #23802)
LONG_RUN_TARGETS = (
    "model:2.8", "model:2.10", "model:3.0.0", "model:3.0", "model:3.3", "model:4.0:classic", "model:4.1:classic",
)  # fmt: skip


@dataclass
class Tracer:
    """What the classic dispatcher did during one run that a known bug explains."""

    #: positions a replay read dispatched while the rewind it deferred was pending (#23803)
    replayed_during_rewind: set[Position] = field(default_factory=set)
    #: (consumer name, position) sent to a recently joined consumer while another held the same slot (#23307)
    joiner_took_held_slot: set[tuple[str, Position]] = field(default_factory=set)
    #: a removal took the ring points of a same-name consumer that stayed (#10750, before 2.9.3)
    same_name_removed: bool = False

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        complete = ClassicDispatcher._complete_replay_read
        send = KeySharedDispatcher._send
        remove = KeySharedDispatcher.remove_consumer

        def traced_complete(dispatcher: ClassicDispatcher) -> None:
            if dispatcher.consumers and dispatcher.should_rewind:
                cursor = dispatcher.cursor
                self.replayed_during_rewind.update(p for p in dispatcher._in_flight_replay if not cursor.is_deleted(p))
            complete(dispatcher)

        def traced_send(dispatcher: KeySharedDispatcher, consumer: Any, entry: Any, slot: int) -> bool:
            joined = getattr(dispatcher, "recently_joined", None)
            if joined and consumer in joined:
                others = (c for c in dispatcher.consumers.values() if c is not consumer)
                if any(s == slot for other in others for _p, _b, s in other.pending):
                    self.joiner_took_held_slot.add((consumer.name, entry.position))
            return send(dispatcher, consumer, entry, slot)

        def traced_remove(dispatcher: KeySharedDispatcher, consumer: Any) -> None:
            by_identity = dispatcher.version.has(CONSISTENT_HASHING_REMOVE_BY_IDENTITY)
            namesakes = [c for c in dispatcher.consumers.values() if c is not consumer and c.name == consumer.name]
            if namesakes and not by_identity and consumer.consumer_id in dispatcher.consumers:
                self.same_name_removed = True
            remove(dispatcher, consumer)

        monkeypatch.setattr(KeySharedDispatcher, "remove_consumer", traced_remove)
        monkeypatch.setattr(ClassicDispatcher, "_complete_replay_read", traced_complete)
        monkeypatch.setattr(KeySharedDispatcher, "_send", traced_send)

    def explain(self, kind: str, facts: dict[str, Any], events: list[dict[str, Any]]) -> str | None:
        """The known bug that explains one violation (``events``: the run's trace), or ``None``."""
        if kind == "redelivered_after_ack" and _position(facts["msg"]) in self.replayed_during_rewind:
            (ack_i, *_), (again_i, *_) = facts["refs"]
            acked = [e for e in events[:ack_i] if e["op"] == "receive" and e["msg_id"] == facts["msg"]]
            if acked and acked[-1]["redelivery_count"] == events[again_i]["redelivery_count"]:
                return "23803"
        if kind == "undelivered" and self.replayed_during_rewind:
            return "23803"
        if kind == "wrong_redelivery_count" and _position(facts["msg"]) in self.replayed_during_rewind:
            # the replay read during the rewind sent a second copy before the nack's redelivery: it carries the
            # count the message had when it was read, so the consumer sees it come back without the nack counted
            return "23803"
        if kind in ("undelivered", "out_of_order") and self.same_name_removed:
            return "10750"
        if kind == "out_of_order":
            if _position(facts["msg"]) in self.replayed_during_rewind:
                # the later message came from the replay read dispatched during the pending rewind; the earlier
                # one, released to the replay queue by a removal, was dropped by the new consumer's subscribe
                # and waits for the rewind's re-read (or stalls at the end of the topic, ``undelivered``)
                return "23803"
            if (facts["consumer"], _position(facts["msg"])) in self.joiner_took_held_slot:
                return "23307"
        return None


def _position(msg_id: str) -> Position:
    ledger, entry = msg_id.split(":")[:2]
    return Position(int(ledger), int(entry))


def _runs(
    target: str, seeds: range, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[int, Any, Tracer]]:
    with open_target(target, artifacts_dir=tmp_path / "target") as opened:
        for seed in seeds:
            tracer = Tracer()
            with monkeypatch.context() as patch:
                tracer.install(patch)
                result = run_scenario(
                    opened,
                    program_from_seed(seed, options=PLAIN),
                    seed=seed,
                    out_dir=tmp_path / f"run-{seed}",
                    live_check=False,
                )
            yield seed, result, tracer


def _check(target: str, seeds: range, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    found: dict[str, int] = {}
    unexplained: list[str] = []
    for seed, result, tracer in _runs(target, seeds, tmp_path, monkeypatch):
        verdict = result.verdict
        assert verdict is not None, (target, seed)
        if verdict.valid:
            continue
        lines = result.trace_path.read_text(encoding="utf-8").splitlines()[1:]
        events = [json.loads(line) for line in lines]
        for violation in verdict.violations:
            kind = str(getattr(violation.kind, "value", violation.kind))
            why = tracer.explain(kind, dict(violation.facts), events)
            if why is None:
                unexplained.append(f"{target} seed {seed}: {violation.explanation.splitlines()[0]}")
            else:
                found[why] = found.get(why, 0) + 1
    assert not unexplained, "\n".join(unexplained)
    return found


@pytest.mark.parametrize("target", sorted(WINDOWS))
def test_every_violation_in_the_window_is_a_known_bug(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _check(target, WINDOWS[target], tmp_path, monkeypatch)
    # not a silent pass: the window holds programs that break the contracts through both known bugs
    assert {"23803", "23307"} <= set(found), f"{target}: no longer fails here ({found}); widen WINDOWS"


@pytest.mark.skipif(not LONG_RUN, reason="set KEYSHARED_CLASSIC_PROGRAMS=N for the long run")
@pytest.mark.parametrize("target", LONG_RUN_TARGETS)
def test_every_violation_of_the_long_run_is_a_known_bug(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _check(target, range(LONG_RUN), tmp_path, monkeypatch)
    print(f"{target}: {LONG_RUN} programs, explained violations by bug: {found}")


def test_the_tracer_matches_nothing_on_a_clean_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The explanations are read from the run, not assumed: a program that passes leaves the tracer empty of the
    two bugs' marks (seed 360 passes on the classic model)."""
    [(_seed, result, tracer)] = list(_runs("model:classic", range(360, 361), tmp_path, monkeypatch))
    assert result.verdict is not None and result.verdict.valid
    assert not tracer.replayed_during_rewind and not tracer.joiner_took_held_slot
