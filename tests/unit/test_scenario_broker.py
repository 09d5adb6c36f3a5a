"""``[broker]``: a scenario gives its run's broker settings under their ``broker.conf`` names.

The model builds the run's broker with them (the unacked-message limit is reached and released, the
deduplication snapshot interval is the asked one); every real target refuses the scenario before anything
runs, naming the settings, so a case skips instead of passing without the setting.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.scenarios import dumps_scenario, loads_scenario
from conformance.scenarios.model import InvalidScenario
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import UnsupportedByTarget, open_target
from pytest_keyshared.targets.base import Target
from reference_model.broker import BrokerConfig

SCENARIO = """
name = "broker-settings"
[settings]
quiet_ms = 250
[broker]
{broker}
[[steps]]
do = "open"
consumer = "c1"
behaviour = "hold"
[[steps]]
do = "publish"
count = 10
keys = 3
[[steps]]
do = "wait_quiet"
[[steps]]
do = "ack_held"
consumer = "c1"
count = {acks}
[[steps]]
do = "wait_quiet"
"""


def _scenario(broker: str, acks: int = 2):  # type: ignore[no-untyped-def]
    return loads_scenario(SCENARIO.format(broker=broker, acks=acks), "toml")


def test_the_section_is_read_sorted_and_round_trips() -> None:
    scenario = _scenario("maxUnackedMessagesPerConsumer = 3\nbrokerDeduplicationEntriesInterval = 2")
    assert scenario.broker == (("brokerDeduplicationEntriesInterval", 2), ("maxUnackedMessagesPerConsumer", 3))
    assert "[broker]" in dumps_scenario(scenario)
    assert loads_scenario(dumps_scenario(scenario), "toml") == scenario
    assert loads_scenario(dumps_scenario(scenario, "json"), "json") == scenario
    assert _scenario("").broker == ()


@pytest.mark.parametrize(
    ("broker", "message"),
    [
        ("maxUnackedMessagesPerConsumr = 3", "unknown field 'maxUnackedMessagesPerConsumr'. Did you mean"),
        ("maxUnackedMessagesPerConsumer = -1", r"\[broker\] maxUnackedMessagesPerConsumer: expected an integer >= 0"),
        ("maxUnackedMessagesPerConsumer = true", "expected an integer but got"),
        ("brokerDeduplicationEnabled = 1", "expected true or false"),
        ("dispatcherMaxReadBatchSize = 0", "expected an integer >= 1"),
        ("subscriptionTypesEnabled = 'Shared'", "unknown field 'subscriptionTypesEnabled'"),
    ],
)
def test_bad_settings_name_the_problem(broker: str, message: str) -> None:
    with pytest.raises(InvalidScenario, match=message):
        _scenario(broker)


def test_config_applies_only_what_is_named() -> None:
    base = BrokerConfig.from_broker_conf({"keySharedUnblockingIntervalMs": 0, "brokerDeduplicationEnabled": True})
    merged = base.with_broker_conf({"maxUnackedMessagesPerConsumer": 4, "brokerDeduplicationEntriesInterval": 2})
    assert merged.key_shared.max_unacked_per_consumer == 4
    assert merged.key_shared.unblocking_interval_ms == 0  # the target's own option stays
    assert merged.dedup.entries_interval == 2 and merged.dedup.broker_enabled


def _held_counts(trace: Path) -> list[int]:
    """How many messages c1 held after each receive or ack."""
    held, out = 0, []
    for line in trace.read_text().splitlines()[1:]:
        event = json.loads(line)
        if event.get("op") == "receive":
            held += 1
        elif event.get("op") == "ack":
            held -= 1
        else:
            continue
        out.append(held)
    return out


def test_the_model_reaches_and_releases_the_unacked_limit(tmp_path: Path) -> None:
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        limited = run_scenario(
            target, _scenario("maxUnackedMessagesPerConsumer = 3"), seed=1, out_dir=tmp_path / "limited"
        )
        free = run_scenario(target, _scenario(""), seed=1, out_dir=tmp_path / "free")
        assert target.config.key_shared.max_unacked_per_consumer == 50000  # the shared target is left as it was
    assert limited.valid and free.valid
    header = json.loads(limited.trace_path.read_text().splitlines()[0])
    assert header["broker_conf"] == {"maxUnackedMessagesPerConsumer": 3}  # the trace says what the broker ran with
    assert "broker_conf" not in json.loads(free.trace_path.read_text().splitlines()[0])
    limited_held, free_held = _held_counts(limited.trace_path), _held_counts(free.trace_path)
    assert max(limited_held) == 3  # reached: c1 holds 3 of 10 until it acknowledges
    assert limited_held[:5] == [1, 2, 3, 2, 1]  # ack_held 2 releases it (down to half), then it receives again
    assert limited_held[5] == 2
    assert max(free_held) == 10


def test_the_subscription_limit_is_reached_and_released_below_half(tmp_path: Path) -> None:
    """Pulsar unblocks a subscription once ``unAckedMessages < maxUnackedMessages / 2``: at 4, two acks (down to
    2) release nothing, three (down to 1) do."""
    helds = {}
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        for acks in (2, 3):
            scenario = _scenario("maxUnackedMessagesPerSubscription = 4", acks=acks)
            result = run_scenario(target, scenario, seed=1, out_dir=tmp_path / f"run{acks}")
            assert result.valid
            helds[acks] = _held_counts(result.trace_path)
    assert helds[2][:6] == [1, 2, 3, 4, 3, 2] and helds[2][6] == 1  # still blocked: the drain's acks go first
    assert helds[3][:8] == [1, 2, 3, 4, 3, 2, 1, 2]  # released at 1: it receives again at once


def test_a_subscription_blocked_by_its_last_holders_unblocks_when_they_leave(tmp_path: Path) -> None:
    """``removeConsumer`` calls ``addUnAckedMessages(-unacked)``: the holders leaving releases the limit.  Found by a
    generated program (STICKY, allowOutOfOrderDelivery, limit 4): the model's subscription stayed blocked with
    nothing unacknowledged and delivered nothing more."""
    scenario = loads_scenario(
        """
name = "blocked-holders-leave"
[settings]
quiet_ms = 250
drain_timeout_ms = 4000
[broker]
maxUnackedMessagesPerSubscription = 4
[[steps]]
do = "open"
consumer = "c1"
behaviour = "hold"
[[steps]]
do = "publish"
count = 6
keys = 3
[[steps]]
do = "wait_quiet"
[[steps]]
do = "close"
consumer = "c1"
[[steps]]
do = "open"
consumer = "c2"
[[steps]]
do = "wait_quiet"
""",
        "toml",
    )
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        result = run_scenario(target, scenario, seed=1, out_dir=tmp_path / "run", live_check=False)
    assert result.valid, [str(v.kind) for v in result.verdict.violations]


def test_a_real_target_refuses_naming_the_settings(tmp_path: Path) -> None:
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        assert Target.with_broker_conf(target, {}) is target
        with pytest.raises(UnsupportedByTarget, match=r"\[broker\] maxUnackedMessagesPerConsumer = 3"):
            Target.with_broker_conf(target, {"maxUnackedMessagesPerConsumer": 3})


def test_pulsar_lite_refuses_before_starting(tmp_path: Path) -> None:
    from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget

    target = PulsarLiteTarget("pulsar-lite", tmp_path)  # never started: the refusal comes first
    with pytest.raises(UnsupportedByTarget, match="cannot apply the scenario's broker settings"):
        run_scenario(target, _scenario("keySharedUnblockingIntervalMs = 50"), seed=1, out_dir=tmp_path / "run")
