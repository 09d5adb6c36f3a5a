"""The ack-timeout cases judge the order of the redelivered messages among themselves (Pulsar's
``receiveAndCheck``): proven both ways on small traces, with equal timestamps, and against a model run."""

from __future__ import annotations

from pathlib import Path

from conformance.cases._support import redeliveries_out_of_order
from conformance.trace import SubscriptionSpec, TraceHeader, TraceWriter

TOPIC = "persistent://public/default/t"


def _trace(tmp_path: Path, ops: list[tuple[str, str, str, dict[str, str]]]) -> Path:
    """``(op, consumer, msg_id, extra)`` rows of key ``k``, every one at time 0 (equal timestamps)."""
    path = tmp_path / "trace.jsonl"
    header = TraceHeader(target="model", subscription=SubscriptionSpec(name="s"))
    with TraceWriter(path, header, clock=lambda: 0) as writer:
        for n in (1, 2, 3):
            writer.record("publish", topic=TOPIC, producer="p", key="k", msg_id=f"0:{n}:-1:-1", seq=n, uid=f"p:{n}",
                          result="ok")  # fmt: skip
        for op, consumer, msg_id, extra in ops:
            n = msg_id.split(":")[1]
            count = 1 if extra.get("again") else 0
            fields = {k: v for k, v in extra.items() if k != "again"}
            writer.record(op, topic=TOPIC, subscription="s", consumer=consumer, key="k", msg_id=msg_id, uid=f"p:{n}",
                          producer="p" if op == "receive" else None, seq=int(n) if op == "receive" else None,
                          redelivery_count=count if op == "receive" else None, **fields)  # fmt: skip
    return path


TIMEOUT = {"cause": "ack_timeout"}
AGAIN = {"again": "1"}


def _first_half(c: str = "c1") -> list[tuple[str, str, str, dict[str, str]]]:
    return [("receive", c, f"0:{n}:-1:-1", {}) for n in (1, 2, 3)] + [
        ("ack", c, "0:2:-1:-1", {}),
        ("nack", c, "0:1:-1:-1", TIMEOUT),
        ("nack", c, "0:3:-1:-1", TIMEOUT),
    ]


def test_redeliveries_in_order_pass(tmp_path: Path) -> None:
    ops = [*_first_half(), ("receive", "c1", "0:1:-1:-1", AGAIN), ("receive", "c1", "0:3:-1:-1", AGAIN)]
    assert redeliveries_out_of_order(_trace(tmp_path, ops)) == []


def test_a_later_redelivery_first_fails(tmp_path: Path) -> None:
    ops = [*_first_half(), ("receive", "c1", "0:3:-1:-1", AGAIN), ("receive", "c1", "0:1:-1:-1", AGAIN)]
    [problem] = redeliveries_out_of_order(_trace(tmp_path, ops))
    assert problem.startswith("out_of_order: key 'k': 0:1:-1:-1, released by the ack timeout at E7, came back at E10")


def test_a_message_released_after_the_other_came_back_is_not_judged(tmp_path: Path) -> None:
    ops = [
        *(("receive", "c1", f"0:{n}:-1:-1", {}) for n in (1, 3)),
        ("nack", "c1", "0:3:-1:-1", TIMEOUT),
        ("receive", "c1", "0:3:-1:-1", AGAIN),
        ("nack", "c1", "0:1:-1:-1", TIMEOUT),  # 0:1 released only once 0:3 was back: not owed together
        ("receive", "c1", "0:1:-1:-1", AGAIN),
    ]
    assert redeliveries_out_of_order(_trace(tmp_path, ops)) == []


def test_a_nack_that_is_not_the_ack_timeout_is_not_judged(tmp_path: Path) -> None:
    ops = [
        *(("receive", "c1", f"0:{n}:-1:-1", {}) for n in (1, 3)),
        ("nack", "c1", "0:1:-1:-1", {}),
        ("nack", "c1", "0:3:-1:-1", {}),
        ("receive", "c1", "0:3:-1:-1", AGAIN),
        ("receive", "c1", "0:1:-1:-1", AGAIN),
    ]
    assert redeliveries_out_of_order(_trace(tmp_path, ops)) == []
