"""Scenario files: the built-ins load, files round-trip, and every bad input is one teaching error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.scenarios import (
    AckHeld,
    Behaviour,
    Close,
    Crash,
    InvalidScenario,
    KeySet,
    Open,
    Pause,
    Publish,
    Redeliver,
    Resend,
    RestartBroker,
    Resume,
    Scenario,
    SetBehaviour,
    Settings,
    Sleep,
    StorageDown,
    StorageUp,
    SubscriptionSettings,
    WaitDelivered,
    WaitQuiet,
    WaitReceived,
    builtin_scenarios,
    dump_scenario,
    dumps_scenario,
    load_scenario,
    loads_scenario,
    parse_scenario,
)
from reference_model.errors import InvalidArgument

REQUIRED_BUILTINS = {
    "steady-state",
    "join-while-pending",
    "leave-while-pending",
    "crash-while-pending",
    "stuck-consumer",
    "nack-redelivery",
    "sticky-ranges",
    "dedup-retry",
}


def test_the_builtin_scenarios_cover_the_core_contracts() -> None:
    builtins = builtin_scenarios()
    assert set(builtins) >= REQUIRED_BUILTINS
    for name, scenario in builtins.items():
        assert scenario.name == name
        assert scenario.description, f"{name} needs a description"
        assert any(isinstance(s, Publish) for s in scenario.steps), f"{name} publishes nothing"


def test_join_while_pending_holds_then_joins_then_publishes_the_same_keys() -> None:
    s = load_scenario("join-while-pending")
    kinds = [type(step) for step in s.steps]
    first_open, second_open = [i for i, k in enumerate(kinds) if k is Open][:2]
    publishes = [i for i, k in enumerate(kinds) if k is Publish]
    assert s.steps[first_open].behaviour.kind == "hold"
    assert publishes[0] < second_open < publishes[1]
    assert s.steps[publishes[0]].keys == s.steps[publishes[1]].keys


def test_capabilities_a_scenario_needs_are_derived_from_its_steps() -> None:
    assert load_scenario("crash-while-pending").required_capabilities() == {"crash_consumer": "step 5 (crash)"}
    assert load_scenario("restart-recovery").required_capabilities() == {"broker_restart": "step 5 (restart_broker)"}
    assert load_scenario("steady-state").required_capabilities() == {}
    assert load_scenario("crash-while-pending").crashed_consumers() == {"c1"}


@pytest.mark.parametrize("name", sorted(REQUIRED_BUILTINS | {"sticky-conflict", "restart-recovery"}))
@pytest.mark.parametrize("fmt", ["toml", "json"])
def test_every_builtin_round_trips_through_a_file(name: str, fmt: str, tmp_path: Path) -> None:
    scenario = load_scenario(name)
    path = dump_scenario(scenario, tmp_path / f"{name}.{fmt}")
    assert load_scenario(path) == scenario
    assert load_scenario(str(path)) == scenario


def test_a_file_without_a_name_takes_the_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "my-workload.json"
    path.write_text(json.dumps({"steps": [{"do": "open", "consumer": "c1"}, {"do": "publish", "count": 3}]}))
    scenario = load_scenario(path)
    assert scenario.name == "my-workload"
    assert scenario.steps == (Open(consumer="c1"), Publish(count=3))


def test_defaults_are_not_written_back() -> None:
    text = dumps_scenario(Scenario(name="tiny", steps=(Open(consumer="c1"), Publish(count=5))))
    expected = [
        'name = "tiny"', "", "[[steps]]", 'do = "open"', 'consumer = "c1"', "",
        "[[steps]]", 'do = "publish"', "count = 5", "keys = 10",
    ]  # fmt: skip
    assert text.splitlines() == expected


# --- generated scenarios round-trip (the plugin stores shrunk ones this way) -----------------------------

names = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)
behaviours = st.one_of(
    st.builds(Behaviour, kind=st.sampled_from(["ack", "hold"])),
    st.builds(Behaviour, kind=st.just("ack_after"), delay_ms=st.integers(0, 5000)),
    st.builds(Behaviour, kind=st.just("nack"), nack_times=st.integers(1, 4)),
)
key_sets = st.one_of(
    st.builds(KeySet, count=st.integers(1, 200), prefix=st.sampled_from(["key-", "k", "user/"])),
    st.lists(names, min_size=1, max_size=5, unique=True).map(lambda ks: KeySet(names=tuple(ks))),
)
publishes = st.builds(
    Publish,
    count=st.integers(1, 500),
    keys=key_sets,
    producer=st.sampled_from(["p1", "p2"]),
    key_field=st.sampled_from(["partition_key", "ordering_key", "both", "none"]),
    batching=st.sampled_from(["none", "key_based", "default"]),
    order=st.sampled_from(["cycle", "shuffle"]),
)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    sticky = draw(st.booleans())
    steps: list[object] = []
    open_now: list[str] = []
    for index in range(draw(st.integers(1, 4))):
        name = f"c{index}"
        ranges = ((index * 1000, index * 1000 + 999),) if sticky else ()
        steps.append(Open(consumer=name, behaviour=draw(behaviours), ranges=ranges, paused=draw(st.booleans())))
        open_now.append(name)
    steps.append(draw(publishes))
    pick = st.sampled_from(open_now)
    for _ in range(draw(st.integers(0, 6))):
        maker = draw(
            st.sampled_from(
                [
                    "quiet",
                    "received",
                    "delivered",
                    "redeliver",
                    "sleep",
                    "ack",
                    "behaviour",
                    "resume",
                    "restart",
                    "storage",
                ]
            )
        )
        if maker == "quiet":
            steps.append(WaitQuiet(quiet_ms=draw(st.none() | st.integers(1, 999))))
        elif maker == "received":
            steps.append(WaitReceived(count=draw(st.integers(1, 9)), consumer=draw(st.none() | pick)))
        elif maker == "delivered":
            steps.append(WaitDelivered(timeout_ms=draw(st.none() | st.integers(1, 9999))))
        elif maker == "redeliver":
            steps.append(Redeliver(consumer=draw(pick), keep_prefetched=draw(st.booleans())))
        elif maker == "sleep":
            steps.append(Sleep(ms=draw(st.integers(0, 99))))
        elif maker == "ack":
            steps.append(AckHeld(consumer=draw(pick), count=draw(st.none() | st.integers(1, 9))))
        elif maker == "behaviour":
            steps.append(SetBehaviour(consumer=draw(pick), behaviour=draw(behaviours)))
        elif maker == "resume":
            steps.append(Resume(consumer=draw(pick)))
        elif maker == "storage":
            steps.append(StorageDown(fail_after_ms=draw(st.integers(0, 999))) if draw(st.booleans()) else StorageUp())
        else:
            steps.append(RestartBroker(kill=draw(st.booleans())))
    steps.append(draw(st.sampled_from([Close, Crash]))(consumer=open_now[0]))
    return Scenario(
        name=draw(names),
        steps=tuple(steps),  # type: ignore[arg-type]
        description=draw(st.text(min_size=0, max_size=30)),
        subscription=SubscriptionSettings(
            name=draw(names), mode="STICKY" if sticky else "AUTO_SPLIT", allow_out_of_order_delivery=draw(st.booleans())
        ),
        settings=Settings(quiet_ms=draw(st.integers(1, 5000)), deduplication=draw(st.booleans())),
        tags=tuple(draw(st.lists(names, max_size=3))),
    )


@settings(max_examples=60, deadline=None)
@given(scenario=scenarios(), fmt=st.sampled_from(["toml", "json"]))
def test_any_valid_scenario_round_trips(scenario: Scenario, fmt: str) -> None:
    assert loads_scenario(dumps_scenario(scenario, fmt), fmt) == scenario


# --- bad input: one error naming the place, the value and what would work -------------------------------


def _steps(*steps: dict[str, object]) -> dict[str, object]:
    return {"name": "bad", "steps": list(steps)}


OPEN = {"do": "open", "consumer": "c1"}
BAD_INPUTS = [
    pytest.param([1, 2], "expected a table/object at the top level", id="top-level-list"),
    pytest.param({"steps": [OPEN]}, "missing 'name'", id="no-name"),
    pytest.param({"name": "x"}, "no steps", id="no-steps"),
    pytest.param({"name": "x", "steps": []}, "no steps", id="empty-steps"),
    pytest.param({"name": "x", "setps": []}, "Did you mean 'steps'?", id="misspelt-top-level"),
    pytest.param({"name": "has space", "steps": [OPEN]}, "not a usable name", id="bad-name"),
    pytest.param(_steps({"consumer": "c1"}), "missing 'do'", id="no-do"),
    pytest.param(_steps({"do": "opne", "consumer": "c1"}), "Did you mean 'open'?", id="unknown-do"),
    pytest.param(_steps({**OPEN, "behavior": "hold"}), "Did you mean 'behaviour'?", id="unknown-field"),
    pytest.param(_steps({**OPEN, "behaviour": "hodl"}), "Did you mean 'hold'?", id="unknown-behaviour"),
    pytest.param(
        _steps({**OPEN, "delay_ms": 5}), 'applies only to behaviour = "ack_after"', id="delay-without-ack-after"
    ),
    pytest.param(
        _steps({"do": "publish", "count": "10"}), "expected an integer but got '10' (type=str)", id="count-str"
    ),
    pytest.param(_steps({"do": "publish", "count": True}), "expected an integer but got True", id="count-bool"),
    pytest.param(_steps({"do": "publish", "count": 0}), "expected an integer >= 1 but got 0", id="count-zero"),
    pytest.param(_steps({"do": "publish", "count": 5, "keys": []}), "non-empty list", id="empty-keys"),
    pytest.param(_steps({"do": "publish", "count": 5, "keys": ["a", "a"]}), "duplicates", id="dup-keys"),
    pytest.param(
        _steps({"do": "publish", "count": 5, "batching": "keybased"}), "Did you mean 'key_based'?", id="batching"
    ),
    pytest.param(_steps({**OPEN, "ranges": [[0, 10]]}), "ranges are sent only in STICKY mode", id="ranges-auto-split"),
    pytest.param(
        {"name": "x", "subscription": {"mode": "STICKY"}, "steps": [OPEN]}, "needs ranges", id="sticky-without-ranges"
    ),
    pytest.param(_steps({**OPEN, "mode": "STICKY", "ranges": [[0, 70000]]}), "<= 65535", id="range-out-of-domain"),
    pytest.param(_steps({**OPEN, "mode": "STICKY", "ranges": [[9, 3]]}), "start <= end", id="range-reversed"),
    pytest.param(_steps({**OPEN, "mode": "STICKY", "ranges": [[0, 9], [5, 20]]}), "overlap", id="range-self-overlap"),
    pytest.param(_steps({**OPEN, "mode": "sticky-ish"}), "is not one of AUTO_SPLIT, STICKY", id="bad-mode"),
    pytest.param(_steps({"do": "close", "consumer": "c1"}), "consumer 'c1' was never opened", id="close-unopened"),
    pytest.param(_steps(OPEN, {"do": "close", "consumer": "c2"}), "Open consumers here: c1", id="close-other"),
    pytest.param(_steps(OPEN, OPEN), "already open", id="open-twice"),
    pytest.param(
        _steps(OPEN, {"do": "crash", "consumer": "c1"}, {"do": "ack_held", "consumer": "c1"}),
        "was closed or crashed",
        id="use-after-crash",
    ),
    pytest.param(
        _steps({"do": "resend", "producer": "p1", "from_seq": 1, "to_seq": 2}), "published nothing", id="resend-none"
    ),
    pytest.param(
        _steps({"do": "publish", "count": 5}, {"do": "resend", "producer": "p1", "from_seq": 3, "to_seq": 9}),
        "sequence ids 1..5",
        id="resend-beyond",
    ),
    pytest.param(
        _steps({"do": "publish", "count": 5}, {"do": "resend", "producer": "p1", "from_seq": 3, "to_seq": 2}),
        "below from_seq",
        id="resend-reversed",
    ),
    pytest.param({"name": "x", "settings": {"quiet_ms": -1}, "steps": [OPEN]}, ">= 1 but got -1", id="bad-setting"),
    pytest.param({"name": "x", "settings": {"drain": "yes"}, "steps": [OPEN]}, "expected true or false", id="bad-bool"),
    pytest.param({"name": "x", "settings": {"quite_ms": 5}, "steps": [OPEN]}, "Did you mean 'quiet_ms'?", id="typo"),
    pytest.param(_steps({"do": "wait_received", "count": 3, "consumer": "zz"}), "never opened", id="wait-unknown"),
    pytest.param(
        {"name": "x", "settings": {"topic": "nonpersistent"}, "steps": [OPEN]},
        "Did you mean 'non-persistent'?",
        id="topic-kind-typo",
    ),
    *(
        pytest.param({"name": "x", "settings": {"topic": "non-persistent", **settings}, "steps": steps}, msg, id=name)
        for name, settings, steps, msg in [
            ("np-dedup", {"deduplication": True}, [OPEN], "deduplication never applies to a non-persistent topic"),
            ("np-restart", {}, [OPEN, {"do": "restart_broker"}], "keeps nothing over a broker restart"),
            ("np-wait-received", {}, [OPEN, {"do": "wait_received", "count": 3}], "use wait_quiet"),
            ("np-storage", {}, [OPEN, {"do": "storage_down"}], "writes nothing to storage"),
            (
                "np-resend",
                {},
                [{"do": "publish", "count": 2}, {"do": "resend", "producer": "p1", "from_seq": 1, "to_seq": 1}],
                "never applies to a non-persistent topic",
            ),
            ("np-default-batching", {}, [{"do": "publish", "count": 2, "batching": "default"}], "id 0:0"),
            (
                "np-two-producers",
                {},
                [{"do": "publish", "count": 1}, {"do": "publish", "count": 1, "producer": "p2"}],
                "publish from one producer",
            ),
        ]
    ),
    pytest.param(
        {
            "name": "x",
            "settings": {"topic": "non-persistent", "clusters": ["r1", "r2"]},
            "steps": [{"do": "publish", "count": 1}],
        },
        "a failover scenario replicates a persistent topic",
        id="np-failover",
    ),
    pytest.param(
        _steps({"do": "publish", "count": 2, "sequence_ids": [3, 3]}), "sequence_ids contains duplicates", id="ids-dup"
    ),
    pytest.param(
        _steps({"do": "publish", "count": 3, "sequence_ids": [3, 4]}), "names 2 ids but count is 3", id="ids-count"
    ),
    pytest.param(_steps({"do": "publish", "count": 1, "sequence_ids": [0]}), "sequence_ids", id="ids-zero"),
    pytest.param(
        _steps({"do": "publish", "count": 1, "sequence_ids": [2], "sequence": "auto"}),
        'sequence_ids needs sequence = "explicit"',
        id="ids-auto",
    ),
    pytest.param(
        _steps({"do": "publish", "count": 3}, {"do": "publish", "count": 1, "sequence_ids": [2]}),
        "already sent sequence id 2",
        id="ids-sent",
    ),
]


@pytest.mark.parametrize(("data", "message"), BAD_INPUTS)
def test_bad_scenarios_are_refused_with_a_teaching_message(data: object, message: str) -> None:
    with pytest.raises(InvalidScenario) as info:
        parse_scenario(data, source="bad.toml")
    text = str(info.value)
    assert message in text
    assert "\n" not in text.strip() or text.count("\n") < 3
    assert isinstance(info.value, InvalidArgument) and info.value.exit_code == 2


def test_syntax_errors_name_the_file_and_position(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text('name = "x"\n[[steps]\ndo = "open"\n')
    with pytest.raises(InvalidScenario, match=r"broken\.toml: not valid TOML: .*line 2"):
        load_scenario(broken)
    broken_json = tmp_path / "broken.json"
    broken_json.write_text('{"name": "x", "steps": [}')
    with pytest.raises(InvalidScenario, match=r"broken\.json: not valid JSON: .*line 1 column 25"):
        load_scenario(broken_json)


def test_unknown_names_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidScenario, match="Did you mean 'join-while-pending'"):
        load_scenario("join-while-pendng")
    with pytest.raises(InvalidScenario, match="Cannot read scenario file"):
        load_scenario(tmp_path / "absent.toml")
    other = tmp_path / "scenario.yaml"
    other.write_text("name: x")
    with pytest.raises(InvalidScenario, match=r"must end in \.toml or \.json"):
        load_scenario(other)
    with pytest.raises(InvalidScenario, match=r"must end in \.toml or \.json"):
        dump_scenario(load_scenario("steady-state"), tmp_path / "out.yaml")


def test_a_scenario_can_reopen_a_consumer_after_it_left() -> None:
    s = parse_scenario(_steps(OPEN, {"do": "close", "consumer": "c1"}, OPEN, {"do": "pause", "consumer": "c1"}))
    assert s.consumers() == ("c1",)
    assert isinstance(s.steps[3], Pause)


def test_a_non_persistent_scenario_round_trips_and_names_its_topic_kind(tmp_path: Path) -> None:
    data = {"name": "np", "settings": {"topic": "non-persistent"}, "steps": [OPEN, {"do": "publish", "count": 3}]}
    scenario = parse_scenario(data)
    assert scenario.settings.topic == "non-persistent"
    assert load_scenario(dump_scenario(scenario, tmp_path / "np.toml")) == scenario
    assert 'topic = "non-persistent"' in (tmp_path / "np.toml").read_text()


def test_resend_steps_parse_with_their_defaults() -> None:
    s = parse_scenario(
        _steps({"do": "publish", "count": 5}, {"do": "resend", "producer": "p1", "from_seq": 2, "to_seq": 5})
    )
    assert s.steps[1] == Resend(producer="p1", from_seq=2, to_seq=5, reconnect=True)


@pytest.mark.parametrize("fmt", ["toml", "json"])
def test_descriptions_with_quotes_and_control_characters_round_trip(fmt: str) -> None:
    scenario = Scenario(name="x", steps=(Open(consumer="c1"),), description='say "hi"\\ \x7f\x01\ttab\nline é')
    assert loads_scenario(dumps_scenario(scenario, fmt), fmt) == scenario
