"""Client reconnects read from the C++ client's log: the parser, the tracker, and the watch that records faults.

The log lines below are the ones ``pulsar-client`` 3.13 wrote during a real pulsar-lite run of
``restart-recovery`` (topic shortened): two consumers on their own clients (I/O threads ``A`` and ``B``; ``B``
also holds the throwaway id-spacing consumer), a producer client (``P``), a broker restart, the reconnections,
and the planned closes at the end.  The broker tests (``tests/broker/test_client_reconnects.py``) check the
same against a live broker.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from conformance.trace import SubscriptionSpec, TraceHeader, TraceWriter
from pytest_keyshared.driver.client_log import (
    ClientLogWatch,
    ConnectionEvent,
    ReconnectTracker,
    parse_handler,
    parse_line,
    split_interleaved,
)
from pytest_keyshared.driver.handles import Delivery
from pytest_keyshared.driver.recorder import Recorder

TOPIC = "persistent://public/default/ks-rr-0-n1"
BURN = "non-persistent://public/default/ks-idburn-n1"
A, B, P, MAIN = "140508456281792", "140508353513152", "140507841820352", "140508523658112"


def log(time: str, thread: str, source: str, text: str, level: str = "INFO ") -> str:
    return f"2026-11-22 {time} {level} [{thread}] {source} | {text}"


def c(consumer_id: int, topic: str = TOPIC, sub: str = "ks-sub") -> str:
    return f"[{topic}, {sub}, {consumer_id}]"


def conn(local: int) -> str:
    return f"[127.0.0.1:{local} -> 127.0.0.1:36637]"


CREATE_C1 = [
    log("05:26:56.502", A, "HandlerBase:112", f"{c(0)} Getting connection from pool"),
    log("05:26:56.508", A, "ConsumerImpl:336", f"{c(0)} Created consumer on broker {conn(49986)} "),
    log("05:26:56.508", A, "HandlerBase:133", "Finished connecting to broker after 6 ms"),
]
CREATE_C2 = [
    log(
        "05:26:56.519",
        B,
        "ConsumerImpl:336",
        f"{c(0, BURN, 'ks-idburn-n1-2')} Created consumer on broker {conn(49994)}",
    ),
    log("05:26:56.519", MAIN, "ClientImpl:568", f"Subscribing on Topic :{TOPIC}"),
    log("05:26:56.520", B, "ConsumerImpl:336", f"{c(1)} Created consumer on broker {conn(49994)} "),
]
CREATE_P1 = [
    log(
        "05:26:56.530", P, "ProducerImpl:147", f"Creating producer for topic:{TOPIC}, producerName:p1 on {conn(49996)}"
    ),
    log("05:26:56.530", P, "ProducerImpl:222", f"[{TOPIC}, p1] Created producer on broker {conn(49996)} "),
]
RESTART = [
    log("05:26:57.207", P, "ClientConnection:1290", f"{conn(49996)} Connection disconnected (refCnt: 4)"),
    log("05:26:57.207", P, "HandlerBase:186", f"[{TOPIC}, p1] Schedule reconnection in 0.1 s"),
    log("05:26:57.211", B, "ClientConnection:1290", f"{conn(49994)} Connection disconnected (refCnt: 4)"),
    log("05:26:57.211", B, "HandlerBase:186", f"{c(1)} Schedule reconnection in 0.1 s"),
    log("05:26:57.211", B, "HandlerBase:186", f"{c(0, BURN, 'ks-idburn-n1-2')} Schedule reconnection in 0.1 s"),
    log("05:26:57.216", A, "ClientConnection:1290", f"{conn(49986)} Connection disconnected (refCnt: 4)"),
    log("05:26:57.216", A, "HandlerBase:186", f"{c(0)} Schedule reconnection in 0.1 s"),
    # the broker is still down: failed attempts, and (older clients) the handler scheduled again
    log(
        "05:26:57.306",
        A,
        "ClientConnection:485",
        "[<none> -> pulsar://127.0.0.1:36637] Failed to establish connection to 0.0.0.0:0: Connection refused",
        level="ERROR",
    ),
    log("05:26:57.306", A, "ClientConnection:1290", "[<none> -> pulsar://127.0.0.1:36637] Connection disconnected"),
    log("05:26:57.306", A, "RetryableOperation:112", f"Reschedule get-broker-{TOPIC} for 100 ms"),
    log("05:26:57.306", A, "HandlerBase:186", f"{c(0)} Schedule reconnection in 0.2 s"),
]
BACK = [
    log("05:26:57.309", P, "ProducerImpl:222", f"[{TOPIC}, p1] Created producer on broker {conn(50010)} "),
    log("05:26:57.314", B, "ConsumerImpl:336", f"{c(1)} Created consumer on broker {conn(50026)} "),
    log(
        "05:26:57.315",
        B,
        "ConsumerImpl:336",
        f"{c(0, BURN, 'ks-idburn-n1-2')} Created consumer on broker {conn(50026)}",
    ),
    log("05:26:57.322", A, "ConsumerImpl:336", f"{c(0)} Created consumer on broker {conn(50032)} "),
]
PLANNED_CLOSES = [
    log("05:26:58.768", MAIN, "ConsumerImpl:1388", f"{c(0)} Closing consumer for topic {TOPIC}"),
    log("05:26:58.772", MAIN, "ConsumerImpl:1372", f"{c(0)} Closed consumer 0"),
    log("05:26:58.773", MAIN, "ClientImpl:802", "Closing Pulsar client with 0 producers and 0 consumers"),
    log(
        "05:26:58.773", "140508328335040", "ClientConnection:1290", f"{conn(50032)} Connection disconnected (refCnt: 4)"
    ),
    log("05:26:58.797", MAIN, "ProducerImpl:807", f"[{TOPIC}, p1] Closing producer for topic {TOPIC}"),
    log("05:26:58.798", P, "ProducerImpl:771", f"[{TOPIC}, p1] Closed producer 0"),
    log(
        "05:26:58.798", "140508464674496", "ClientConnection:1290", f"{conn(50010)} Connection disconnected (refCnt: 2)"
    ),
]


def test_lines_and_handler_labels_parse() -> None:
    line = parse_line(RESTART[1])
    assert line is not None
    assert (line.time, line.level, line.thread, line.source) == (
        "2026-11-22 05:26:57.207",
        "INFO",
        P,
        "HandlerBase:186",
    )
    assert line.text == f"[{TOPIC}, p1] Schedule reconnection in 0.1 s"
    assert parse_line("Traceback (most recent call last):") is None
    assert parse_line("") is None
    consumer = parse_handler(f"{TOPIC}, ks-sub, 1")
    assert consumer is not None and (consumer.role, consumer.subscription, consumer.consumer_id) == (
        "consumer",
        "ks-sub",
        1,
    )
    producer = parse_handler(f"{TOPIC}, p1")
    assert producer is not None and (producer.role, producer.producer, producer.topic) == ("producer", "p1", TOPIC)
    assert parse_handler("127.0.0.1:1 -> 127.0.0.1:2") is None


def test_a_restart_is_one_loss_and_one_restoration_per_client() -> None:
    tracker = ReconnectTracker()
    assert tracker.feed(CREATE_C1 + CREATE_C2 + CREATE_P1) == []  # first creations restore nothing
    lost = tracker.feed(RESTART)
    assert [(e.kind, e.thread, e.connection) for e in lost] == [
        ("lost", P, "127.0.0.1:49996 -> 127.0.0.1:36637"),
        ("lost", B, "127.0.0.1:49994 -> 127.0.0.1:36637"),
        ("lost", A, "127.0.0.1:49986 -> 127.0.0.1:36637"),  # the failed attempts neither replace it nor repeat it
    ]
    assert [h.label for h in lost[1].handlers] == [f"{TOPIC}, ks-sub, 1", f"{BURN}, ks-idburn-n1-2, 0"]
    back = tracker.feed(BACK)
    assert [(e.kind, e.thread, e.connection) for e in back] == [
        ("restored", P, "127.0.0.1:50010 -> 127.0.0.1:36637"),
        ("restored", B, "127.0.0.1:50026 -> 127.0.0.1:36637"),
        ("restored", A, "127.0.0.1:50032 -> 127.0.0.1:36637"),
    ]
    assert tracker.lost == {}
    assert tracker.feed(PLANNED_CLOSES) == []  # closes schedule no reconnection


def test_lines_split_across_reads_still_make_one_loss() -> None:
    tracker = ReconnectTracker()
    first = tracker.feed(RESTART[:4])
    second = tracker.feed(RESTART[4:])
    assert [(e.kind, e.thread) for e in first] == [("lost", P), ("lost", B)]
    assert [(e.kind, e.thread) for e in second] == [("lost", B), ("lost", A)]  # the burn handler, then c1
    assert isinstance(second[0], ConnectionEvent) and second[0].connection == "127.0.0.1:49994 -> 127.0.0.1:36637"


# --- the watch: a real trace writer and recorder, a log file written in stages ------------------------------


class Run:
    def __init__(self, tmp_path: Path) -> None:
        self.log = tmp_path / "pulsar-client.log"
        self.log.touch()
        header = TraceHeader(target="pulsar-lite", subscription=SubscriptionSpec(name="ks-sub"))
        self.writer = TraceWriter(tmp_path / "trace.jsonl", header)
        self.recorder = Recorder(self.writer, TOPIC, "ks-sub")
        self.watch = ClientLogWatch(self.log, self.recorder, TOPIC)
        self.recorder.before_receive = self.watch.before_receive

    def write(self, lines: list[str], *, end: str = "\n") -> None:
        with self.log.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + end)

    def faults(self) -> list[dict[str, object]]:
        assert self.writer.events is not None
        return [json.loads(e.to_json()) for e in self.writer.events if e.op.value == "fault"]

    def ops(self) -> list[str]:
        assert self.writer.events is not None
        return [e.op.value for e in self.writer.events]


def opened(run: Run) -> None:
    with run.watch.opening("c1"):
        run.write(CREATE_C1)
    with run.watch.opening("c2"):
        run.write(CREATE_C2)
    run.write(CREATE_P1)


def test_reconnects_become_faults_naming_the_run_s_consumers_and_producers(tmp_path: Path) -> None:
    run = Run(tmp_path)
    opened(run)
    assert run.watch.poll() == 0 and run.faults() == []
    run.write(RESTART)
    assert run.watch.poll() == 3
    run.write(BACK)
    assert run.watch.poll() == 3
    faults = run.faults()
    assert [(f["fault"], f.get("consumers"), f.get("producers")) for f in faults] == [
        ("client_reconnect", None, ["p1"]),
        ("client_reconnect", ["c2"], None),  # the id-spacing consumer on its connection is not the run's
        ("client_reconnect", ["c1"], None),
        ("client_reconnected", None, ["p1"]),
        ("client_reconnected", ["c2"], None),
        ("client_reconnected", ["c1"], None),
    ]
    assert faults[2]["connection"] == "127.0.0.1:49986 -> 127.0.0.1:36637"
    assert faults[5]["connection"] == "127.0.0.1:50032 -> 127.0.0.1:36637"
    assert faults[0]["client_log_time"] == "2026-11-22 05:26:57.207"
    assert all(f["topic"] == TOPIC and "unattributed" not in f for f in faults)
    run.write(PLANNED_CLOSES)
    run.watch.stop()
    assert len(run.faults()) == 6 and run.watch.notes == []


def test_a_receive_is_recorded_after_the_loss_its_client_logged_before_it(tmp_path: Path) -> None:
    run = Run(tmp_path)
    opened(run)
    run.write(RESTART + BACK)
    # c1's client handed over a redelivered message: the watch reads the log before the receive is recorded
    run.recorder.receive("c1", Delivery(key="key-00", msg_id="0:3:-1:-1", uid="p1:4", redelivery_count=1))
    assert run.ops() == ["fault"] * 6 + ["receive"]


def test_a_look_while_another_is_under_way_waits_for_its_faults(tmp_path: Path) -> None:
    """The look skips the lock only when no log grew and no look holds it: a look under way may have read the
    loss lines past our offset and not recorded them yet, and a receive must come after them."""
    run = Run(tmp_path)
    opened(run)
    assert run.watch.poll() == 0  # nothing new: the quiet look
    run.write(RESTART)
    source = run.watch.sources[0]
    assert source.has_news()
    with run.watch._lock:  # as another thread's look would: it has read the lines, not yet recorded them
        lines = source.read_lines(run.watch.chunk_bytes)
        assert lines and not source.has_news()  # nothing past the offset now, but the look is under way
        receiver = threading.Thread(
            target=run.recorder.receive,
            args=("c1", Delivery(key="key-00", msg_id="0:3:-1:-1", uid="p1:4", redelivery_count=1)),
        )
        receiver.start()
        receiver.join(0.3)
        assert receiver.is_alive()  # it waits for the look under way instead of recording at once
        run.watch._process(0, source, lines)
    receiver.join(10)
    assert not receiver.is_alive() and run.ops() == ["fault"] * 3 + ["receive"]


def test_half_written_lines_wait_for_their_end(tmp_path: Path) -> None:
    run = Run(tmp_path)
    opened(run)
    run.write(RESTART[:1])
    line = RESTART[1]
    run.write([line[:40]], end="")
    assert run.watch.poll() == 0
    run.write([line[40:]])
    assert run.watch.poll() == 1 and run.faults()[0]["producers"] == ["p1"]


def test_a_closed_consumer_s_thread_and_label_go_to_the_next_consumer(tmp_path: Path) -> None:
    run = Run(tmp_path)
    opened(run)
    run.watch.closed("c1")
    with run.watch.opening("c3"):  # a new client that got the same I/O thread id and consumer id
        run.write([log("05:27:00.000", A, "ConsumerImpl:336", f"{c(0)} Created consumer on broker {conn(50100)}")])
    run.write(
        [
            log("05:27:01.000", A, "ClientConnection:1290", f"{conn(50100)} Connection disconnected (refCnt: 4)"),
            log("05:27:01.000", A, "HandlerBase:186", f"{c(0)} Schedule reconnection in 0.1 s"),
        ]
    )
    run.watch.poll()
    assert [f.get("consumers") for f in run.faults()] == [["c3"]]


def test_a_creation_logged_by_the_subscribing_thread_is_still_the_consumer_s(tmp_path: Path) -> None:
    """The client sometimes logs the first creation on the thread that called subscribe (a completed future runs
    its callback there); the connection, not the thread, ties the consumer to its later loss."""
    run = Run(tmp_path)
    with run.watch.opening("c1"):
        run.write([log("05:26:56.508", MAIN, "ConsumerImpl:336", f"{c(0)} Created consumer on broker {conn(49986)}")])
    run.write(RESTART[5:7] + BACK[3:])
    run.watch.poll()
    assert [(f["fault"], f.get("consumers")) for f in run.faults()] == [
        ("client_reconnect", ["c1"]),
        ("client_reconnected", ["c1"]),
    ]


def test_a_consumer_the_log_never_showed_is_reported_unattributed_and_noted(tmp_path: Path) -> None:
    run = Run(tmp_path)
    with run.watch.opening("c1"):
        pass  # the client wrote nothing (another log format, say)
    assert run.watch.notes and "no creation of consumer 'c1'" in run.watch.notes[0]
    run.write(RESTART[5:7])
    run.watch.poll()
    (fault,) = run.faults()
    assert fault["fault"] == "client_reconnect" and "consumers" not in fault
    assert fault["unattributed"] == [f"{TOPIC}, ks-sub, 0"]


def test_nothing_is_recorded_after_stop(tmp_path: Path) -> None:
    run = Run(tmp_path)
    opened(run)
    run.watch.stop()
    run.write(RESTART)
    assert run.watch.poll() == 0 and run.faults() == []


def test_a_missing_log_file_is_no_fault(tmp_path: Path) -> None:
    header = TraceHeader(target="pulsar-lite", subscription=SubscriptionSpec(name="ks-sub"))
    recorder = Recorder(TraceWriter(None, header), TOPIC, "ks-sub")
    watch = ClientLogWatch(tmp_path / "absent.log", recorder, TOPIC)
    assert watch.poll() == 0


# --- mangled lines: the C++ file logger shares one unlocked stream between threads ------------------------


def test_a_line_written_into_the_middle_of_another_is_cut_out_and_read() -> None:
    torn = RESTART[1][:60]  # the producer's loss line, cut off by c1's loss line written into it
    pieces = split_interleaved(torn + RESTART[6])
    assert pieces == [torn, RESTART[6]]
    assert split_interleaved(RESTART[6]) == [RESTART[6]]
    assert split_interleaved("no log line here") == ["no log line here"]
    tracker = ReconnectTracker()
    events = tracker.feed([RESTART[5], torn + RESTART[6]])
    assert [(e.kind, e.thread, [h.label for h in e.handlers]) for e in events] == [("lost", A, [f"{TOPIC}, ks-sub, 0"])]


class Clients:
    """The probe's answers: which handles' clients say they are connected."""

    def __init__(self) -> None:
        self.connected: dict[tuple[str, str], bool] = {}
        self.asked: list[tuple[str, str]] = []

    def __call__(self, role: str, name: str) -> bool | None:
        self.asked.append((role, name))
        return self.connected.get((role, name))


def probed_run(tmp_path: Path) -> tuple[Run, Clients]:
    run = Run(tmp_path)
    clients = Clients()
    run.watch.probe = clients
    opened(run)
    return run, clients


def test_a_restoration_whose_line_was_lost_is_recorded_before_the_consumer_s_next_receive(tmp_path: Path) -> None:
    run, clients = probed_run(tmp_path)
    run.write(RESTART + BACK[:3])  # c1's "Created consumer" line never made it to the file
    run.watch.poll()
    assert run.watch.lost() == (["c1"], [])
    delivery = Delivery(key="key-00", msg_id="0:3:-1:-1", uid="p1:4", redelivery_count=1)
    run.recorder.receive("c1", delivery)  # a prefetched message: the client is still away
    clients.connected[("consumer", "c1")] = True
    run.recorder.receive("c1", delivery)
    restored = [(f.get("consumers"), f.get("producers"), f.get("inferred_from")) for f in run.faults()[3:]]
    assert restored == [(None, ["p1"], None), (["c2"], None, None), (["c1"], None, "is_connected")]
    assert "connection" not in run.faults()[-1]
    assert run.ops()[-3:] == ["receive", "fault", "receive"]  # the inferred return comes right before the receive
    assert run.watch.lost() == ([], [])
    # the line shows up late: no second restoration
    run.write(BACK[3:])
    run.watch.poll()
    assert len([f for f in run.faults() if f["fault"] == "client_reconnected"]) == 3


def test_the_probe_is_asked_only_about_handles_still_lost(tmp_path: Path) -> None:
    run, clients = probed_run(tmp_path)
    delivery = Delivery(key="key-00", msg_id="0:3:-1:-1", uid="p1:4", redelivery_count=0)
    run.recorder.receive("c1", delivery)
    assert run.watch.reconcile() == 0 and clients.asked == []  # nothing lost: no client is asked
    run.write(RESTART + BACK)
    run.recorder.receive("c1", delivery)
    assert clients.asked == []  # the log showed c1 back
    assert not [f for f in run.faults() if f.get("inferred_from")]


def test_reconcile_records_the_producers_and_consumers_that_are_back_in_one_fault(tmp_path: Path) -> None:
    run, clients = probed_run(tmp_path)
    run.write(RESTART)
    run.watch.poll()
    assert run.watch.lost() == (["c1", "c2"], ["p1"])
    clients.connected.update({("producer", "p1"): True, ("consumer", "c2"): True, ("consumer", "c1"): False})
    assert run.watch.reconcile() == 1
    inferred = run.faults()[-1]
    assert (inferred["fault"], inferred["consumers"], inferred["producers"]) == ("client_reconnected", ["c2"], ["p1"])
    assert run.watch.lost() == (["c1"], [])
    clients.connected[("consumer", "c1")] = None  # cannot tell: nothing is recorded
    assert run.watch.reconcile() == 0
    run.watch.stop()
    clients.connected[("consumer", "c1")] = True
    assert run.watch.reconcile() == 0  # nothing after stop
