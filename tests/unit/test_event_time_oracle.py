"""``wrong_event_time``: the event time a consumer reads on a message against the one it was published with.

The driver records ``event_time`` on a ``receive`` when the message carries one (``Message.event_timestamp()``),
and on a ``publish`` when the send set one; the case-level judgement (``conformance.cases._support.
event_time_problems``) compares them by ``uid``.  Proven both ways: a broker (or a model producer) that delivers
a message with an event time it was not sent with is flagged; a correct run passes, also with equal timestamps,
with the receive logged before its publish, and with acks that may never have arrived.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cases._support import event_time_problems
from conformance.trace.builder import TraceBuilder
from conformance.trace.header import SubscriptionSpec, TraceHeader
from pytest_keyshared.driver.handles import delivery_from_message


def _trace(
    tmp_path: Path,
    received: list[int | None],
    *,
    sent: int | None = None,
    equal_times: bool = False,
    receive_first: bool = False,
    name: str = "t.jsonl",
) -> Path:
    """p publishes ``p:0``, ``p:1``, ... (with event time ``sent`` when given); c1 receives each with the event
    time in ``received`` (None: not recorded), acks it, then crashes (the acks may never have arrived)."""
    b = TraceBuilder(
        TraceHeader(target="hand-written", subscription=SubscriptionSpec("s")), step=0 if equal_times else 10
    )
    b.add("open", consumer="c1", topic=b.topic)
    for index, got in enumerate(received):
        publish = {"event_time": sent} if sent is not None else {}
        receive = {"event_time": got} if got is not None else {}
        msg_id = f"1:0:-1:{index}"
        events = [
            ("publish", {"producer": "p", "key": "k", "msg_id": msg_id, "seq": index, "result": "ok", **publish}),
            ("receive", {"consumer": "c1", "key": "k", "msg_id": msg_id, "redelivery_count": 0, **receive}),
        ]
        for op, fields in reversed(events) if receive_first else events:
            b.add(op, topic=b.topic, uid=f"p:{index}", **fields)
        b.add("ack", consumer="c1", topic=b.topic, key="k", msg_id=msg_id, uid=f"p:{index}")
    b.add("crash", consumer="c1")
    b.add("end", drained=False)
    return b.write(tmp_path / name)


@pytest.mark.parametrize("equal_times", [False, True])
@pytest.mark.parametrize("receive_first", [False, True])
def test_a_correct_run_passes(tmp_path: Path, equal_times: bool, receive_first: bool) -> None:
    trace = _trace(tmp_path, [None, None, None], equal_times=equal_times, receive_first=receive_first)
    assert event_time_problems(trace) == []
    sent = _trace(tmp_path, [1700, 1700], sent=1700, equal_times=equal_times, receive_first=receive_first, name="s")
    assert event_time_problems(sent) == []


@pytest.mark.parametrize("equal_times", [False, True])
@pytest.mark.parametrize("receive_first", [False, True])
def test_an_event_time_never_sent_is_flagged(tmp_path: Path, equal_times: bool, receive_first: bool) -> None:
    # the model's send_batch_with_ids giving every message of the batch event time 1 (automatic mutant :286)
    problems = event_time_problems(_trace(tmp_path, [1, None, 1], equal_times=equal_times, receive_first=receive_first))
    assert len(problems) == 2 and problems[0].startswith("wrong_event_time: E")
    assert "uid p:0" in problems[0] and "with event time 1" in problems[0] and "no event time" in problems[0]


def test_an_event_time_changed_on_the_way_is_flagged(tmp_path: Path) -> None:
    problems = event_time_problems(_trace(tmp_path, [1700, 1699], sent=1700))
    assert len(problems) == 1 and "event time 1699" in problems[0] and "published with event time 1700" in problems[0]


def test_a_receive_of_an_unpublished_uid_is_left_to_unexpected_message(tmp_path: Path) -> None:
    b = TraceBuilder(TraceHeader(target="hand-written", subscription=SubscriptionSpec("s")), step=10)
    b.add("open", consumer="c1", topic=b.topic)
    b.add("receive", consumer="c1", topic=b.topic, key="k", msg_id="1:0:-1:-1", uid="ghost", event_time=5)
    b.add("end", drained=True)
    assert event_time_problems(b.write(tmp_path / "t.jsonl")) == []


def test_parquet_keeps_the_field(tmp_path: Path) -> None:
    assert len(event_time_problems(_trace(tmp_path, [3, 3], name="t.parquet"))) == 2


class _Id:
    def ledger_id(self) -> int:
        return 1

    def entry_id(self) -> int:
        return 2

    def partition(self) -> int:
        return -1

    def batch_index(self) -> int:
        return 0


class _Message:
    """The methods the driver reads of a received message (pulsar-client's and the model's have them all)."""

    def __init__(self, event_time: int) -> None:
        self._event_time = event_time

    def properties(self) -> dict[str, str]:
        return {"ks-uid": "p:0"}

    def message_id(self) -> _Id:
        return _Id()

    def producer_name(self) -> str:
        return "p"

    def ordering_key(self) -> str:
        return ""

    def partition_key(self) -> str:
        return "k"

    def redelivery_count(self) -> int:
        return 0

    def event_timestamp(self) -> int:
        return self._event_time


def test_the_driver_reads_the_event_time_off_the_message() -> None:
    assert delivery_from_message(_Message(0)).event_time == 0
    assert delivery_from_message(_Message(1234)).event_time == 1234
