"""A real-broker session waits for its clients after a restart and records returns the client log did not show.

No broker here: the session's consumer is a stand-in whose "client" writes the C++ client's log lines and
answers ``is_connected()`` as the test says, so the watch, the bounded wait and the notes run for real.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conformance.trace import SubscriptionSpec, TraceHeader, TraceWriter
from pytest_keyshared.driver.client_log import LogSource
from pytest_keyshared.driver.handles import ConsumerSpec, Delivery
from pytest_keyshared.driver.recorder import Recorder
from pytest_keyshared.driver.session import PulsarSession

TOPIC = "persistent://public/default/ks-rs-0-n1"
THREAD = "140508456281792"
LABEL = f"[{TOPIC}, ks-sub, 0]"


def line(text: str) -> str:
    return f"2026-11-22 05:26:56.502 INFO  [{THREAD}] HandlerBase:1 | {text}\n"


class StandIn:
    """A consumer handle whose client logs to ``log`` and is connected when ``connected`` says so."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.connected: bool | None = True
        self.write(f"{LABEL} Created consumer on broker [127.0.0.1:49986 -> 127.0.0.1:36637]")

    def write(self, text: str) -> None:
        with self.log.open("a", encoding="utf-8") as fh:
            fh.write(line(text))

    def lose_connection(self) -> None:
        self.connected = False
        self.write("[127.0.0.1:49986 -> 127.0.0.1:36637] Connection disconnected (refCnt: 4)")
        self.write(f"{LABEL} Schedule reconnection in 0.1 s")

    def is_connected(self) -> bool | None:
        return self.connected


def session_with_consumer(tmp_path: Path) -> tuple[PulsarSession, StandIn, TraceWriter]:
    target: Any = SimpleNamespace(
        service_url="pulsar://127.0.0.1:1", quirks=SimpleNamespace(operation_timeout_s=5, distinct_consumer_ids=True)
    )
    session = PulsarSession(target, TOPIC, tmp_path / "run", "n1")
    log = tmp_path / "client.log"
    log.touch()
    session._log_sources = [LogSource(log)]  # this test's "client" log, not the process's
    header = TraceHeader(target="pulsar-lite", subscription=SubscriptionSpec(name="ks-sub"))
    writer = TraceWriter(None, header)
    session.watch_faults(Recorder(writer, TOPIC, "ks-sub"))
    # the stand-in's client logs its creation while the session subscribes, as a real one does
    session._open_consumer = lambda name, spec, crashable: StandIn(log)  # type: ignore[method-assign]
    spec = ConsumerSpec(TOPIC, "ks-sub", "c1", "AUTO_SPLIT", False, (), 100, 100)
    consumer = session.open_consumer("c1", spec, crashable=False)
    assert isinstance(consumer, StandIn)
    return session, consumer, writer


def faults(writer: TraceWriter) -> list[dict[str, Any]]:
    assert writer.events is not None
    return [json.loads(e.to_json()) for e in writer.events if e.op.value == "fault"]


def test_the_wait_after_a_restart_is_bounded_and_names_who_is_not_back(tmp_path: Path) -> None:
    session, consumer, writer = session_with_consumer(tmp_path)
    consumer.lose_connection()
    session.poll_faults()
    ok, note = session.await_clients(200)
    assert not ok and note == "not on the broker again within 200 ms: consumer 'c1'"
    assert [f["fault"] for f in faults(writer)] == ["client_reconnect"]
    notes = session.stop_watching()
    assert notes == ["still reconnecting when the run ended: consumer 'c1'"]


def test_a_client_back_without_its_log_line_is_recorded_back_from_its_own_word(tmp_path: Path) -> None:
    session, consumer, writer = session_with_consumer(tmp_path)
    consumer.lose_connection()
    session.poll_faults()
    consumer.connected = True  # back, but the logger lost the "Created consumer" line
    assert session.await_clients(2000) == (True, "")
    (lost, back) = faults(writer)
    assert (lost["fault"], lost["consumers"], lost["connection"]) == (
        "client_reconnect",
        ["c1"],
        "127.0.0.1:49986 -> 127.0.0.1:36637",
    )
    assert (back["fault"], back["consumers"], back["inferred_from"]) == ("client_reconnected", ["c1"], "is_connected")
    assert session.stop_watching() == []


def test_a_client_that_cannot_tell_is_not_waited_for(tmp_path: Path) -> None:
    session, consumer, writer = session_with_consumer(tmp_path)
    consumer.lose_connection()
    consumer.connected = None
    assert session.await_clients(2000) == (True, "")
    assert [f["fault"] for f in faults(writer)] == ["client_reconnect"]  # nothing claimed about its return
    session.consumer_gone("c1")
    assert session.stop_watching() == []  # a consumer closed on purpose is not "still reconnecting"


def test_a_receive_of_a_lost_consumer_asks_its_client_first(tmp_path: Path) -> None:
    session, consumer, writer = session_with_consumer(tmp_path)
    consumer.lose_connection()
    assert session._watch is not None
    recorder = session._watch.recorder  # the session's: its before_receive is the watch's
    consumer.connected = True
    recorder.receive("c1", Delivery(key="k", msg_id="0:1:-1:-1", uid="p1:1", redelivery_count=0))
    assert writer.events is not None
    assert [e.op.value for e in writer.events] == ["fault", "fault", "receive"]
