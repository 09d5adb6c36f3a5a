"""The drain and consumers cut off from a real pulsar-lite broker by the soak's loopback proxy.

Each client of a run sits behind a proxy of its own (:class:`~pytest_keyshared.soak.nemesis.ProxiedSession`),
and a partition of one consumer's proxy is recorded first as a ``fault`` naming it, as the soak's nemesis does.
With the only consumer cut off before anything is published, a correct broker keeps every message for it: the
drain must not take the silence for the end.  Cut off for good, the run is not drained, ``end`` names the
consumer in ``unreachable`` and ``undelivered`` is not judged; back during the drain, it receives what it was
owed and the run is drained.  With every consumer connected through the proxies, a message the broker loses
(pulsar-lite's one-per-key redelivery after a leave) is still ``undelivered`` in a drained run.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.checks import Kind, Validity
from conformance.scenarios import KeySet, Open, Publish, Scenario, Settings, WaitQuiet, load_scenario
from pytest_keyshared.driver.progress import Progress
from pytest_keyshared.driver.run import RunResult, _Run
from pytest_keyshared.driver.session import Session
from pytest_keyshared.soak.nemesis import ProxiedSession
from pytest_keyshared.targets import open_target
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget

pytestmark = pytest.mark.broker

SHORT = Settings(quiet_ms=300, drain_quiet_ms=800, drain_timeout_ms=3_000, step_timeout_ms=3_000)


@pytest.fixture(scope="module")
def lite_short(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PulsarLiteTarget]:
    """A broker whose clients give up on an operation after 2 s (closing a consumer that is cut off)."""
    out = tmp_path_factory.mktemp("pulsar-lite")
    with open_target("pulsar-lite", artifacts_dir=out, options={"operation_timeout_s": 2}) as target:
        assert isinstance(target, PulsarLiteTarget)
        yield target


class _ProxiedRun(_Run):
    """A Key_Shared run with every client behind a loopback proxy of its own (the soak's session)."""

    def _open_session(self) -> Session:
        return ProxiedSession(self.target, self.topic, self.out_dir, self.nonce)

    def partition(self, client: str, *, heal: bool = False) -> None:
        """As the nemesis does: the fault recorded first, naming the consumer; then the proxy acts."""
        assert isinstance(self.session, ProxiedSession)
        self.recorder.fault("net_partition_heal" if heal else "net_partition", client=client, consumers=[client])
        self.session.apply("partition", client, heal=heal)


def _run(target: Any, scenario: Scenario, out: Path, on_step: Callable[[_ProxiedRun, str], None]) -> RunResult:
    """Run ``scenario`` proxied; ``on_step(run, label)`` once at the start of each step and of the drain."""
    run = _ProxiedRun(target, scenario, seed=0, out_dir=out, profile=None, live_check=True, progress=None)
    seen: set[int] = set()

    def progress(p: Progress) -> None:
        if not p.final and p.step not in seen:  # the progress repeats a step's report while it waits
            seen.add(p.step)
            on_step(run, p.label)

    run.progress_cb = progress
    return run.execute()


def _end(result: RunResult) -> dict[str, Any]:
    end = json.loads(result.trace_path.read_text().splitlines()[-1])
    assert end["op"] == "end"
    return end  # type: ignore[no-any-return]


def _alone_cut_off() -> Scenario:
    """c1, the only consumer, is cut off (by the test, at the publish step) before anything is published."""
    steps = (Open(consumer="c1"), Publish(count=20, keys=KeySet(count=4)), WaitQuiet())
    return Scenario(name="cut-off", steps=steps, settings=SHORT)


def _cut_before_publish(run: _ProxiedRun, label: str) -> None:
    if label == "publish":
        run.partition("c1")


def test_a_consumer_cut_off_across_the_drain_leaves_the_run_not_drained(
    lite_short: PulsarLiteTarget, tmp_path: Path
) -> None:
    started = time.monotonic()
    result = _run(lite_short, _alone_cut_off(), tmp_path, _cut_before_publish)
    assert time.monotonic() - started < 20  # the drain's bound held: no hang on a consumer that never returns
    end = _end(result)
    assert end["drained"] is False and end["unreachable"] == ["c1"]
    assert end["acked"] == 0 and end["expected"] == 20 and not result.drained
    drain = result.steps[-1]
    assert drain.do == "drain" and not drain.ok and "consumer 'c1' not connected" in drain.note, drain.note
    assert any("could not reach consumer 'c1'" in note for note in result.notes), result.notes
    # what the broker kept for c1 is not judged, so a correct broker is not found to have lost it
    verdict = result.verdict
    assert verdict is not None and Kind.UNDELIVERED in verdict.unjudged
    assert verdict.validity is Validity.UNKNOWN and not verdict.violations, verdict.render()


def test_a_consumer_back_during_the_drain_gets_what_it_was_owed(lite_short: PulsarLiteTarget, tmp_path: Path) -> None:
    heal_after_s = 1.5  # longer than drain_quiet_ms: silence alone would end the drain before c1 is back
    timers: list[threading.Timer] = []

    def cut_then_heal(run: _ProxiedRun, label: str) -> None:
        _cut_before_publish(run, label)
        if label == "drain":
            timers.append(threading.Timer(heal_after_s, run.partition, ("c1",), {"heal": True}))
            timers[-1].start()

    scenario = Scenario(name="cut-off", steps=_alone_cut_off().steps, settings=Settings(**{
        **{f: getattr(SHORT, f) for f in ("quiet_ms", "drain_quiet_ms", "step_timeout_ms")},
        "drain_timeout_ms": 12_000,
    }))  # fmt: skip
    try:
        result = _run(lite_short, scenario, tmp_path, cut_then_heal)
    finally:
        for timer in timers:
            timer.cancel()
    assert len(timers) == 1
    end = _end(result)
    assert end["drained"] is True and "unreachable" not in end and result.drained
    assert end["acked"] == end["expected"] == 20
    drain = result.steps[-1]
    assert drain.do == "drain" and drain.ok and drain.duration_s > heal_after_s, drain
    assert result.verdict is not None and "undelivered" not in result.violation_kinds()


def test_connected_consumers_drain_on_silence_and_a_lost_message_is_undelivered(
    lite_short: PulsarLiteTarget, tmp_path: Path, kinds: Callable[[RunResult], set[str]]
) -> None:
    """leave-while-pending through the proxies, no fault: pulsar-lite redelivers one message per key after c1
    leaves and no more (pulsar-lite.md 4.4), so messages are missing while every consumer is connected."""
    scenario = load_scenario("leave-while-pending")
    scenario = Scenario(
        name=scenario.name,
        steps=scenario.steps,
        settings=Settings(drain_quiet_ms=800, drain_timeout_ms=12_000),
    )
    result = _run(lite_short, scenario, tmp_path, lambda run, label: None)
    end = _end(result)
    assert end["drained"] is True and "unreachable" not in end and result.drained
    assert end["acked"] < end["expected"]
    drain = result.steps[-1]
    assert drain.do == "drain" and drain.duration_s < 6, drain  # gave up on silence, not at the bound
    assert "undelivered" in kinds(result)
