"""``wait_delivered``: the bounded end of a case, judged ``stalled`` when messages stay owed.

The recorder counts what the broker still owes (published ok, neither acknowledged nor held by an open consumer);
the cases report an expired ``wait_delivered`` as ``stalled``.  The loader reads the step and ``redeliver``'s
``keep_prefetched``.
"""

from __future__ import annotations

from types import SimpleNamespace

from conformance.cases._support import progress_problems
from conformance.scenarios import Redeliver, WaitDelivered, dumps_scenario, loads_scenario
from conformance.trace import Op, SubscriptionSpec, TraceHeader, TraceWriter
from conformance.violations import Kind
from pytest_keyshared.driver.handles import Delivery, OutgoingMessage, SendOutcome
from pytest_keyshared.driver.recorder import Recorder
from pytest_keyshared.driver.run import StepOutcome

TOPIC = "persistent://public/default/owed"


def _recorder() -> Recorder:
    return Recorder(
        TraceWriter(None, TraceHeader(target="model", subscription=SubscriptionSpec(name="ks-sub"))), TOPIC, "ks-sub"
    )


def _publish(recorder: Recorder, n: int) -> Delivery:
    uid = f"p1:{n}"
    message = OutgoingMessage(f"k{n}", n, uid, b"x", f"k{n}", None, {})
    recorder.publish("p1", message, SendOutcome("ok", msg_id=f"0:{n}:-1:-1"))
    return Delivery(f"k{n}", f"0:{n}:-1:-1", uid, 0, "p1", n)


def test_owed_counts_what_no_open_consumer_holds() -> None:
    recorder = _recorder()
    a, b, c = (_publish(recorder, n) for n in (1, 2, 3))
    assert recorder.owed() == 3
    recorder.receive("c1", a)
    recorder.receive("c2", b)
    assert recorder.owed() == 1  # c is undelivered
    recorder.ack("c1", a)
    recorder.nack("c2", b)  # released: owed again
    assert recorder.owed() == 2
    recorder.receive("c1", b)
    recorder.receive("c2", c)
    assert recorder.owed() == 0
    recorder.membership(Op.CLOSE, "c2")  # c2's hold of c goes back to the broker
    assert recorder.owed() == 1
    recorder.receive("c1", c)
    recorder.membership(Op.REDELIVER, "c1")  # c1 gives up b and c
    assert recorder.owed() == 2
    recorder.receive("c1", b)
    recorder.ack("c1", b)
    recorder.receive("c1", c)
    recorder.ack_timeout("c1", c)  # the ack timeout releases it
    assert recorder.owed() == 1
    recorder.receive("c1", c)
    recorder.ack("c1", c)
    assert recorder.owed() == 0


def test_an_expired_wait_delivered_is_stalled_and_a_met_one_is_not() -> None:
    note = "2 message(s) published ok were neither acknowledged nor held by an open consumer after 5000 ms"
    failed = SimpleNamespace(steps=(StepOutcome(3, "wait_delivered", False, 5.0, note),))
    assert progress_problems(failed) == [("delivery", Kind.STALLED, f"stalled: step 3 (wait_delivered): {note}")]
    assert progress_problems(SimpleNamespace(steps=(StepOutcome(3, "wait_delivered", True, 0.1),))) == []


def test_the_loader_reads_wait_delivered_and_keep_prefetched_and_writes_them_back() -> None:
    text = """
name = "owed"
[[steps]]
do = "open"
consumer = "c1"
[[steps]]
do = "redeliver"
consumer = "c1"
keep_prefetched = true
[[steps]]
do = "wait_delivered"
timeout_ms = 2500
"""
    scenario = loads_scenario(text, "toml")
    assert scenario.steps[1:] == (Redeliver(consumer="c1", keep_prefetched=True), WaitDelivered(timeout_ms=2500))
    assert loads_scenario(dumps_scenario(scenario, "toml"), "toml") == scenario
