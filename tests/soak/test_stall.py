"""The stall judgement (``pytest_keyshared/soak/stall.py``) and the Ctrl-C steps (``interrupt.py``), fast: rows
made by hand, a listening socket for a broker that is up, a closed port for one that died."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.checks import check_trace
from conformance.trace import TraceHeader
from pytest_keyshared.driver.consumer_process import ConsumerProcessError
from pytest_keyshared.soak.interrupt import Interrupts
from pytest_keyshared.soak.stall import StallWatch, with_stall

S = 1_000_000_000  # ns


def row(i: int, t_s: float, op: str, **f: Any) -> tuple[Any, ...]:
    """A row (``conformance.trace.rows``): i, t, op, topic, subscription, consumer, producer, key, msg_id, seq, uid,
    result, redelivery_count, drained, extra."""
    return (
        i, int(t_s * S), op, "t", "ks-sub", f.get("consumer"), f.get("producer"), f.get("key"), f.get("msg_id"),
        None, f.get("uid"), f.get("result"), f.get("rc"), None, f.get("extra"),
    )  # fmt: skip


@pytest.fixture
def broker_up() -> Iterator[str]:
    """A port that accepts connections and answers nothing (as a frozen broker's)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"pulsar://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def broker_gone() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"pulsar://127.0.0.1:{port}"  # closed: connections refused


def frozen(watch: StallWatch, *, unanswered_at: float = 6.0, fault: dict[str, Any] | None = None) -> None:
    """Two messages published; one delivered at 2 s, the other never; a publish unconfirmed at ``unanswered_at``."""
    rows = [
        row(0, 0.5, "publish", producer="p1", key="a", msg_id="0:0", uid="p1:0", result="ok"),
        row(1, 0.6, "publish", producer="p1", key="b", msg_id="0:1", uid="p1:1", result="ok"),
        row(2, 2.0, "receive", consumer="c1", key="a", msg_id="0:0", uid="p1:0", rc=0),
    ]
    if fault is not None:
        rows.append(row(3, 3.0, "fault", extra=fault))
    rows.append(row(4, unanswered_at, "publish", producer="p1", key="c", uid="p1:2", result="info"))
    for r in rows:
        watch.observe(r)


def judge(
    watch: StallWatch, url: str, now_s: float = 9.0, failure: BaseException | None = None, client: str = ""
) -> Any:
    return watch.judge(
        failure, service_url=url, started_ns=0, now_ns=int(now_s * S), unacked=2, consumers=["c1", "c2"],
        subscription="ks-sub", call_timeout_s=10, failure_client=client,
    )  # fmt: skip


def test_silence_with_owed_messages_and_an_unanswered_call_is_a_stall(broker_up: str) -> None:
    watch = StallWatch()
    frozen(watch)
    stall = judge(watch, broker_up)
    assert stall is not None
    assert (stall.since_s, stall.until_s, stall.owed, stall.last_receive) == (2.0, 9.0, 1, (2, "c1", "0:0"))
    assert stall.oldest == (("p1:1", 1, "0:1", "b"),) and "publish p1:2 was not confirmed (E4)" in stall.unanswered
    assert "nothing delivered for 7.0s while it owed 1 messages" in stall.sentence()


@pytest.mark.parametrize(
    "case",
    ["port closed", "silence too short", "nothing owed", "the caller was faulted", "no unanswered call"],
)
def test_no_stall(case: str, broker_up: str, broker_gone: str) -> None:
    watch = StallWatch()
    url, now = broker_up, 9.0
    if case == "port closed":  # the broker died: a target failure, not a stall
        frozen(watch)
        url = broker_gone
    elif case == "silence too short":
        frozen(watch, unanswered_at=3.0)
        now = 4.0
    elif case == "nothing owed":
        frozen(watch)
        watch.observe(row(5, 2.5, "receive", consumer="c2", key="b", msg_id="0:1", uid="p1:1", rc=0))
    elif case == "the caller was faulted":  # the producers' connection stalled by the nemesis: no evidence
        frozen(watch, fault={"fault": "net_stall", "client": "producers", "seconds": 5})
    else:
        for r in [
            row(0, 0.5, "publish", producer="p1", key="b", msg_id="0:1", uid="p1:1", result="ok"),
            row(1, 2.0, "receive", consumer="c1", key="x", msg_id="0:9", uid="p9:9", rc=1),
        ]:
            watch.observe(r)
    assert judge(watch, url, now) is None


def test_a_delivery_before_its_publish_receipt_is_not_owed(broker_up: str) -> None:
    watch = StallWatch()
    for r in [
        row(0, 0.4, "receive", consumer="c1", key="a", msg_id="0:0", uid="p1:0", rc=0),
        row(1, 0.5, "publish", producer="p1", key="a", msg_id="0:0", uid="p1:0", result="ok"),
        row(2, 3.0, "publish", producer="p1", key="c", uid="p1:2", result="info"),
    ]:
        watch.observe(r)
    assert judge(watch, broker_up) is None


def test_a_timed_out_call_that_ended_the_load_is_evidence(broker_up: str) -> None:
    watch = StallWatch()
    for r in [
        row(0, 0.5, "publish", producer="p1", key="b", msg_id="0:1", uid="p1:1", result="ok"),
        row(1, 1.0, "receive", consumer="c1", key="x", msg_id="0:0", uid="p1:0", rc=0),
    ]:
        watch.observe(r)
    timeout = ConsumerProcessError("Pulsar error: TimeOut", "Timeout")
    stall = judge(watch, broker_up, failure=timeout)
    assert stall is not None and "a client call went unanswered (ConsumerProcessError: Timeout" in stall.unanswered
    unanswered_handshake = ConsumerProcessError("Pulsar error: ConnectError", "ConnectError")
    assert judge(StallWatch(), broker_up, failure=unanswered_handshake) is None  # nothing owed
    assert judge(watch, broker_up, failure=unanswered_handshake) is not None
    refused = ConsumerProcessError("Pulsar error: ConsumerBusy", "ConsumerBusy")
    assert judge(watch, broker_up, failure=refused) is None
    # the call was c2's, whose connection the nemesis had partitioned: explained, no stall
    watch.observe(row(5, 7.0, "fault", extra={"fault": "net_partition", "client": "c2", "consumers": ["c2"]}))
    assert judge(watch, broker_up, failure=timeout, client="c2") is None
    assert judge(watch, broker_up, failure=timeout, client="c1") is not None


def test_the_verdict_gets_one_stalled_violation(broker_up: str) -> None:
    watch = StallWatch()
    frozen(watch, fault={"fault": "net_stall", "client": "c2", "seconds": 1.5})
    stall = judge(watch, broker_up)
    assert stall is not None and stall.faulted("during") == "c2"
    header = TraceHeader.unknown()
    verdict = with_stall(check_trace([], header=header), stall, end_i=7)
    assert verdict.validity.value == "invalid" and verdict.counts["stalled"] == 1
    (v,) = [v for v in verdict.violations if v.kind.value == "stalled"]
    assert v.events == (2, 7) and v.consumers == ("c1", "c2")
    assert "E2 = receive 0:0 by c1" in v.explanation and "c2 (net_stall at 3.0s" in v.explanation
    json.dumps(verdict.to_json())  # the facts are JSON


def test_ctrl_c_steps() -> None:
    during_load = Interrupts()
    with pytest.raises(KeyboardInterrupt):
        during_load.handle()  # 1: out of the load
    during_load.load_running = False
    during_load.handle()  # 2: stop waiting for the clients (no raise: the teardown goes on)
    assert during_load.stop_waiting_for_clients and not during_load.stop_everything
    with pytest.raises(KeyboardInterrupt), during_load.breakable():
        during_load.handle()  # 3: breaks the check
    during_load.handle()  # later ones: ignored
    assert during_load.level == 3

    after_load = Interrupts()
    after_load.load_running = False
    after_load.handle()  # the load is over: the first one stops waiting for the clients
    assert after_load.level == 2
    after_load.handle()  # outside a breakable section: no raise
    with pytest.raises(KeyboardInterrupt), after_load.breakable():
        pass  # a section entered after the third one does not start
