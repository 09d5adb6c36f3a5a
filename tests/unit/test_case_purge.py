"""The case-level purge rule (``not_purged``, :mod:`conformance.cases._purge`), proven both ways: which creations
must find a producer forgotten, a correct broker's trace judged clean, and each planted fault found."""

from __future__ import annotations

from importlib import resources
from types import SimpleNamespace
from typing import Any

from conformance.cases._purge import _judge, purged_creations
from conformance.scenarios import load_scenario, parse_scenario

DEDUP = resources.files("conformance.cases") / "scenarios" / "dedup"


def _scenario(sleep_ms: int, *between: dict[str, object]) -> Any:
    return parse_scenario(
        {
            "name": "s",
            "settings": {"deduplication": True},
            "broker": {"brokerDeduplicationProducerInactivityTimeoutMinutes": 1},
            "steps": [
                {"do": "open", "consumer": "c1"},
                {"do": "publish", "count": 1, "sequence": "explicit", "sequence_ids": [1]},
                {"do": "close_producer", "producer": "p1"},
                *between,
                {"do": "sleep", "ms": sleep_ms},
                {"do": "open_producer", "producer": "p1"},
            ],
        }
    )


def test_a_creation_is_judged_only_past_the_timeout_plus_one_purge_period() -> None:
    assert purged_creations(_scenario(80_000)) == {5: "p1"}  # 60 s + 20 s
    assert purged_creations(_scenario(79_999)) == {}
    assert purged_creations(_scenario(90_000, {"do": "restart_broker"})) == {}
    assert purged_creations(parse_scenario({"name": "s", "steps": [{"do": "open", "consumer": "c1"}]})) == {}
    for name, index in (("purged-producer-restarts", 5), ("purged-producer-after-broker-restart", 6)):
        assert purged_creations(load_scenario(str(DEDUP / f"{name}.toml"))) == {index: "p1"}


def _ev(i: int, op: str, **fields: Any) -> Any:
    base = {"producer": "p1", "result": "ok", "seq": None, "msg_id": None}
    return SimpleNamespace(i=i, op=SimpleNamespace(value=op), **{**base, **fields})


def _trace(answer: int, resend_id: str, *, twice_before: bool = False) -> list[Any]:
    events = [
        _ev(0, "producer_open", seq=-1),
        _ev(1, "publish", seq=1, msg_id="0:0:-1:-1"),
        _ev(2, "publish", seq=2, msg_id="0:1:-1:-1"),
    ]
    if twice_before:
        events.append(_ev(3, "publish", seq=1, msg_id="0:2:-1:-1"))
    return [*events, _ev(10, "producer_open", seq=answer), _ev(11, "publish", seq=1, msg_id=resend_id)]


def test_a_correct_broker_is_clean_and_each_planted_fault_is_found() -> None:
    starts = {10: "p1"}
    assert _judge(_trace(-1, "0:3:-1:-1"), starts) == []
    kinds = [k for k, _ in _judge(_trace(2, "-1:-1:-1:-1"), starts)]
    assert kinds == ["not_purged", "not_purged"]
    assert [k for k, _ in _judge(_trace(-1, "-1:-1:-1:-1"), starts)] == ["not_purged"]
    assert [k for k, _ in _judge(_trace(-1, "0:4:-1:-1", twice_before=True), starts)] == ["duplicate_publish"]
    # without a forgetting creation the epoch goes on: the resend stored again is a duplicate, a -1 answer behind
    assert [k for k, _ in _judge(_trace(-1, "0:3:-1:-1"), {})] == ["last_sequence_id_behind", "duplicate_publish"]
