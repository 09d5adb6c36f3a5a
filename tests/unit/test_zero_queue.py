"""Zero-queue consumers: ``receiver_queue = 0`` in the scenario language, and the driver's bounded receives for
pulsar-client (which refuses a receive timeout with queue 0) through :class:`ZeroQueueReceiver`."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from conformance.scenarios import InvalidScenario, Open, dumps_scenario, loads_scenario, parse_scenario
from pytest_keyshared.driver.zero_queue import ZeroQueueReceiver


def _scenario(*steps: dict[str, object], **settings: object) -> dict[str, object]:
    return {"name": "z", "settings": settings, "steps": [{"do": "open", "consumer": "c1", "receiver_queue": 0}, *steps]}


def test_receiver_queue_zero_parses_and_round_trips() -> None:
    s = parse_scenario(_scenario({"do": "publish", "count": 2}))
    first = s.steps[0]
    assert isinstance(first, Open) and first.receiver_queue == 0
    for fmt in ("toml", "json"):
        assert loads_scenario(dumps_scenario(s, fmt), fmt) == s


@pytest.mark.parametrize(
    ("steps", "settings", "message"),
    [
        (({"do": "publish", "count": 2, "batching": "default"},), {}, "batched"),
        (({"do": "publish", "count": 2, "sequence_ids": [1, 2], "highest_sequence_id": 2},), {}, "batched"),
        (({"do": "publish", "count": 2},), {"partitions": 2}, "partitioned"),
    ],
    ids=["batching", "raw-batch", "partitioned"],
)
def test_what_a_zero_queue_cannot_take_is_refused(
    steps: tuple[dict[str, object], ...], settings: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidScenario, match=message):
        parse_scenario(_scenario(*steps, **settings))


class _BlockingConsumer:
    """pulsar-client's zero-queue consumer as the receiver sees it: ``receive()`` blocks until a message is sent
    (each call is one request to the broker), ``close()`` ends a blocked call with an error."""

    def __init__(self) -> None:
        self.requests = 0
        self._messages: list[str] = []
        self._cond = threading.Condition()
        self._closed = False

    def send(self, msg: str) -> None:
        with self._cond:
            self._messages.append(msg)
            self._cond.notify_all()

    def receive(self) -> Any:
        with self._cond:
            self.requests += 1
            while not self._messages and not self._closed:
                self._cond.wait(1.0)
            if self._closed:
                raise RuntimeError("AlreadyClosed")
            return self._messages.pop(0)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


def test_a_timed_out_receive_leaves_one_request_standing_and_close_ends_it() -> None:
    consumer = _BlockingConsumer()
    receiver = ZeroQueueReceiver(consumer)
    assert receiver.receive(50) is None
    assert receiver.receive(50) is None  # the request still stands: not asked again
    assert consumer.requests == 1
    consumer.send("m1")
    assert receiver.receive(2000) == "m1"
    consumer.send("m2")  # arrives with nothing asked for: the next receive asks and gets it
    deadline = time.monotonic() + 2
    got = None
    while got is None and time.monotonic() < deadline:
        got = receiver.receive(100)
    assert got == "m2" and consumer.requests == 2
    assert receiver.receive(20) is None
    receiver.close()
    assert consumer._closed and receiver.error is None  # a receive ended by the close is no error


def _shape(**chosen: int) -> tuple[int, ...]:
    from conformance.generated.program import SHAPE_DIMENSIONS

    return tuple(chosen.get(d, 0) for d in SHAPE_DIMENSIONS)


def test_the_generator_draws_zero_queue_consumers_only_where_the_clients_take_them() -> None:
    from conformance.generated.program import SHAPE_CHOICES, program_from_moves

    moves = [(0, 0, 5), (4, 1, 5), (0, 2, 3)]  # publish, open c2 with amount 5 (a queue of 5, or 0), publish

    def queues(**chosen: int) -> list[int | None]:
        program = program_from_moves(moves, name="g", shape=_shape(**chosen))
        return [step.receiver_queue for step in program.steps if isinstance(step, Open)]

    on = SHAPE_CHOICES["zero_queue"].index(True)
    assert queues() == [None, 5]
    assert queues(zero_queue=on) == [0, 0]
    assert queues(zero_queue=on, batching=SHAPE_CHOICES["batching"].index("default")) == [None, 5]
    assert queues(zero_queue=on, topic=SHAPE_CHOICES["topic"].index("non-persistent")) == [None, 5]
    assert queues(zero_queue=on, partitions=SHAPE_CHOICES["partitions"].index(2)) == [None, 5]
