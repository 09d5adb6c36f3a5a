"""The traces of ``received_beyond_lookahead``'s tests (``tests/unit/test_check_lookahead.py``, and the Spark engine's
``tests/spark/test_spark_lookahead.py``): ``dispatch/lookahead-window`` as a broker that reads past its look-ahead
limit (BEYOND) and one that stops at it (WITHIN) would record it."""

from __future__ import annotations

from typing import Any

TOPIC = "persistent://public/default/ks-lookahead"
PUBLISHED = 30  # 0:0 .. 0:29, k0 on even entries (c1's), k11 on odd ones (c2's)


def _header(**over: Any) -> dict[str, Any]:
    header: dict[str, Any] = {
        "trace_format": 1,
        "target": "model",
        "pulsar_version": "4.0",
        "subscription": {"name": "s", "type": "Key_Shared", "key_shared_mode": "STICKY"},
        "deduplication": False,
        "implementation": "pip379",
        "broker_conf": {"keySharedLookAheadMsgInReplayThresholdPerConsumer": 1},
    }
    header.update(over)
    return header


def _trace(order: list[tuple[str, int]], *, equal_t: bool = False, late_acks: bool = False) -> list[dict[str, Any]]:
    """Opens, the publishes, then ``order``'s receives (each acked by its receiver right after), and the end."""
    events: list[dict[str, Any]] = []

    def add(**e: Any) -> None:
        e["i"] = len(events)
        e["t"] = 0 if equal_t else len(events) * 1000
        events.append(e)

    for c in ("c1", "c2"):
        add(op="open", consumer=c, topic=TOPIC, subscription="s", result="ok", receiver_queue=1)
    for n in range(PUBLISHED):
        key = "k0" if n % 2 == 0 else "k11"
        add(op="publish", topic=TOPIC, producer="p1", seq=n, key=key, msg_id=f"0:{n}", result="ok", uid=f"u{n}")
    for consumer, n in order:
        key = "k0" if n % 2 == 0 else "k11"
        add(op="receive", consumer=consumer, topic=TOPIC, key=key, msg_id=f"0:{n}", uid=f"u{n}", redelivery_count=0)
        if not late_acks or consumer == "c2":
            add(op="ack", consumer=consumer, topic=TOPIC, key=key, msg_id=f"0:{n}")
    if late_acks:
        add(op="close", consumer="c1")
        for consumer, n in order:
            if consumer == "c1":
                add(op="ack", consumer="c1", topic=TOPIC, key="k0", msg_id=f"0:{n}")
    add(op="end", drained=True)
    return events


#: a broker that reads past the limit: c2 gets all of k11 while k0's messages wait below them
BEYOND = [("c2", n) for n in range(1, PUBLISHED, 2)] + [("c1", n) for n in range(0, PUBLISHED, 2)]
#: the model (Pulsar's algorithm): c2 gets 0:1 and 0:3, then the two keys alternate as c1 catches up
WITHIN = (
    [("c2", 1), ("c2", 3)]
    + [("c1", n) for n in (0, 2, 4, 6, 8)]
    + [("c2", n) for n in (5, 7, 9, 11, 13)]
    + [("c1", n) for n in (10, 12, 14, 16, 18)]
    + [("c2", n) for n in (15, 17, 19, 21, 23)]
    + [("c1", n) for n in (20, 22, 24, 26, 28)]
    + [("c2", n) for n in (25, 27, 29)]
)
