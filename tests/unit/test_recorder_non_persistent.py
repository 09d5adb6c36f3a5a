"""The driver's names for messages of a non-persistent topic (``docs/trace-format.md``, "Non-persistent topics").

Pulsar gives every such message the id ``0:0``; the recorder names each ``0:<seq>:<partition>:-1`` and keeps the
broker's id in ``broker_msg_id``, on the model exactly as on a real broker.
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance.scenarios import loads_scenario
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.driver.recorder import non_persistent_id
from pytest_keyshared.targets import open_target


def test_the_sequence_id_takes_the_entry_s_place() -> None:
    assert non_persistent_id("0:0:-1:-1", 7) == "0:7:-1:-1"
    assert non_persistent_id("0:0:3:2", 7) == "0:7:3:-1"  # the partition stays; a batch index does not
    assert non_persistent_id(None, 7) is None  # a send without a receipt
    assert non_persistent_id("0:0:-1:-1", None) == "0:0:-1:-1"  # no sequence id: the broker's id, as it came


SCENARIO = """
name = "np-ids"
[settings]
topic = "non-persistent"
quiet_ms = 100
[[steps]]
do = "open"
consumer = "c1"
[[steps]]
do = "publish"
count = 5
keys = 2
[[steps]]
do = "wait_quiet"
"""


def test_a_model_run_names_messages_by_sequence_id_and_records_the_topic_kind(tmp_path: Path) -> None:
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        result = run_scenario(target, loads_scenario(SCENARIO, "toml"), seed=3, out_dir=tmp_path / "run")
    assert result.valid
    lines = [json.loads(line) for line in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    header, events = lines[0], lines[1:]
    assert header["topic_kind"] == "non-persistent"
    assert header["topic"].startswith("non-persistent://public/default/ks-np-ids-3-")
    received = [e for e in events if e["op"] == "receive"]
    assert [e["msg_id"] for e in received] == [f"0:{n}:-1:-1" for n in range(1, 6)]
    assert all("broker_msg_id" in e for e in received)
