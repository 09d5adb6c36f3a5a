"""The plugin against the real embedded broker: pulsar-lite processes driven through pulsar-client.

Small selections of the suite, so they stay in seconds; the whole suite against pulsar-lite is the README's
main job (about two minutes).
"""

from __future__ import annotations

import json

import pytest
from plugin_helpers import assert_in_order

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.broker

SUBSET = "join-while-pending or steady-state or sticky-conflict"


@pytest.fixture(autouse=True)
def _no_keyshared_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("KEYSHARED_"):
            monkeypatch.delenv(name)


def test_passes_with_its_expectations_and_fails_without_them(pytester: pytest.Pytester) -> None:
    args = ("-p", "pytest_keyshared", "--pyargs", "conformance", "-k", SUBSET, "--keyshared-seed=7")
    expected = pytester.runpytest_subprocess(*args, "-n", "2", "--keyshared-results=lite.json")
    assert expected.ret == 0, expected.stdout.str()[-3000:]
    outcomes = expected.parseoutcomes()
    assert outcomes["passed"] == 1 and outcomes["xfailed"] == 2
    assert_in_order(
        expected,
        "keyshared expected failures",
        "XFAIL  builtin/join-while-pending [ordering, key-exclusivity]: no draining hashes",
        "XFAIL  builtin/sticky-conflict [assignment]: a consumer whose sticky ranges overlap",
    )
    results = json.loads((pytester.path / "lite.json").read_text())
    assert results["target"] == "pulsar-lite" and results["pulsar_version"] == "4.0"
    # each xdist worker started its own broker
    assert sorted(p.name for p in (pytester.path / "keyshared-artifacts" / "latest").glob("target-gw*")) == [
        "target-gw0",
        "target-gw1",
    ]

    unexpected = pytester.runpytest_subprocess(*args, "--keyshared-expectations=none")
    assert unexpected.ret == pytest.ExitCode.TESTS_FAILED
    assert_in_order(
        unexpected,
        "keyshared failures",
        "FAILED builtin/join-while-pending [ordering, key-exclusivity]",
        "  key_overlap (key-exclusivity) key=",
        "  trace:    ",
        "FAILED builtin/sticky-conflict [assignment]",
        "accepted_conflicting_open: c2 joined subscription",
    )

    # upgrade acceptance: the model as baseline, pulsar-lite as the candidate -> new failures fail the run
    pytester.runpytest_subprocess(
        "-p", "pytest_keyshared", "--pyargs", "conformance", "-k", SUBSET, "--keyshared-target=model",
        "--keyshared-results=model.json",
    )  # fmt: skip
    upgrade = pytester.runpytest_subprocess(*args, "--keyshared-baseline=model.json")
    assert upgrade.ret == pytest.ExitCode.TESTS_FAILED
    assert_in_order(
        upgrade,
        "keyshared baseline comparison",
        "new failures: 3   fixes: 0",
        "  NEW FAILURE builtin/join-while-pending [ordering]: passed -> xfailed",
        "  NEW FAILURE builtin/join-while-pending [key-exclusivity]: passed -> xfailed",
        "  NEW FAILURE builtin/sticky-conflict [assignment]: passed -> xfailed",
    )


APP_TEAM_TEST = """
import pulsar
import pytest


def handle_orders(consumer, expected):
    for _ in range(expected):
        msg = consumer.receive(5000)
        consumer.acknowledge(msg)


def test_orders_keep_per_customer_order(keyshared_target, keyshared_trace, keyshared_check):
    trace = keyshared_trace(subscription="orders")
    client = pulsar.Client(keyshared_target.service_url)
    consumer = trace.consumer(
        client.subscribe(trace.topic, "orders", consumer_type=pulsar.ConsumerType.KeyShared), "c1"
    )
    producer = trace.producer(client.create_producer(trace.topic, producer_name="orders-app"))
    for i in range(50):
        producer.send(f"order {i}".encode(), partition_key=f"customer-{i % 5}")
    handle_orders(consumer, expected=50)
    trace.end(drained=True)
    client.close()
    keyshared_check(trace)


def test_a_joining_consumer_takes_held_keys(keyshared_target, keyshared_trace, keyshared_check):
    trace = keyshared_trace(subscription="orders")
    client = pulsar.Client(keyshared_target.service_url)
    sub = lambda name: client.subscribe(
        trace.topic, "orders", consumer_type=pulsar.ConsumerType.KeyShared, consumer_name=name)
    c1 = trace.consumer(sub("c1"), "c1")
    producer = trace.producer(client.create_producer(trace.topic, producer_name="orders-app"))
    for i in range(20):
        producer.send(b"x", partition_key=f"customer-{i % 10}")
    held = [c1.receive(5000) for _ in range(20)]          # c1 holds everything
    c2 = trace.consumer(sub("c2"), "c2")
    for i in range(20):
        producer.send(b"y", partition_key=f"customer-{i % 10}")
    got = []
    try:
        while True:
            got.append(c2.receive(1000))                  # a PIP-379 broker gives c2 nothing yet
    except pulsar.Timeout:
        pass
    client.close()
    keyshared_check(trace)
"""


def test_the_app_team_example_records_real_client_code(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_orders=APP_TEAM_TEST)
    result = pytester.runpytest_subprocess("--keyshared-seed=2", "--keyshared-expectations=none", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    assert_in_order(
        result,
        "FAILED test_orders.py::test_a_joining_consumer_takes_held_keys [",
        "  key_overlap (key-exclusivity) key=customer-",
        "  trace:    ",
        "PASSED test_orders.py::test_orders_keep_per_customer_order",
    )
    traces = sorted((pytester.path / "keyshared-artifacts").rglob("trace-1.jsonl"))
    assert len(traces) == 2
    header = json.loads(traces[0].read_text().splitlines()[0])
    assert header["target"] == "pulsar-lite" and header["pulsar_version"] == "4.0"


def test_replay_counts_how_often_a_violation_reproduces(tmp_path) -> None:
    from pytest_keyshared.cli import main

    code = main(["replay", "join-while-pending", "--runs", "2", "--out", str(tmp_path), "--json"])
    assert code == 1
    runs = sorted(tmp_path.glob("run-*/trace.jsonl"))
    assert len(runs) == 2
