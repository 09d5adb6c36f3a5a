"""``received_beyond_permits`` (``conformance/cases/_permits.py``), both ways, on hand-written runs.

A paused consumer of a non-persistent topic may be sent at most its receiver queue of what is published while it
is paused; one more fails the case, exactly that many passes, and the rule says nothing on a persistent topic.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from conformance.cases._permits import pause_windows, received_beyond_permits
from conformance.scenarios import loads_scenario
from conformance.trace.builder import TraceBuilder
from pytest_keyshared.driver.run import StepOutcome

SCENARIO = """
name = "paused"
[settings]
topic = "{topic}"
[[steps]]
do = "open"
consumer = "c1"
receiver_queue = 3
paused = true
[[steps]]
do = "publish"
count = 6
keys = ["k"]
[[steps]]
do = "resume"
consumer = "c1"
"""


def _run(tmp_path: Path, delivered: int, topic: str = "non-persistent") -> tuple[object, SimpleNamespace]:
    b = TraceBuilder(topic=f"{topic}://public/default/t")
    b.open("c1")  # E0: step 1
    for n in range(1, 7):
        b.publish("k", f"0:{n}")  # E1..E6: step 2
    resume = len(b.events)
    for n in range(1, delivered + 1):
        b.receive("c1", "k", f"0:{n}")
        b.ack("c1", f"0:{n}")
    b.end()
    path = b.write(tmp_path / f"trace-{delivered}.jsonl")
    steps = [
        StepOutcome(1, "open", True, 0.0, first_event=0, end_event=1),
        StepOutcome(2, "publish", True, 0.0, first_event=1, end_event=7),
        StepOutcome(3, "resume", True, 0.0, first_event=resume, end_event=resume),
    ]
    return loads_scenario(SCENARIO.format(topic=topic), "toml"), SimpleNamespace(steps=steps, trace_path=path)


def test_the_pause_runs_from_the_paused_open_to_the_resume(tmp_path: Path) -> None:
    scenario, result = _run(tmp_path, 3)
    assert pause_windows(scenario, result) == [("c1", 1, 7, 3)]  # type: ignore[arg-type]


def test_as_many_as_the_queue_passes(tmp_path: Path) -> None:
    scenario, result = _run(tmp_path, 3)
    assert received_beyond_permits(scenario, result) == []  # type: ignore[arg-type]


def test_one_more_than_the_queue_fails(tmp_path: Path) -> None:
    scenario, result = _run(tmp_path, 4)
    (problem,) = received_beyond_permits(scenario, result)  # type: ignore[arg-type]
    assert problem.startswith("received_beyond_permits: consumer c1 was paused from E1 to E7 with a receiver queue")
    assert "received 4 of the messages published meanwhile" in problem and "0:4:-1:-1" in problem


def test_a_persistent_topic_keeps_what_it_does_not_send(tmp_path: Path) -> None:
    scenario, result = _run(tmp_path, 6, topic="persistent")
    assert received_beyond_permits(scenario, result) == []  # type: ignore[arg-type]
