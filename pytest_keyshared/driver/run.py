"""``run_scenario``: apply a scenario to a target, record the trace, drain, and judge it.

The shape of the run (artifacts, steps one at a time in the calling thread, drain, ``end`` event, verdict,
failures) is :class:`~.run_loop.RunLoop`, shared with failover runs; this module holds what a Key_Shared run
does in it.  Membership changes (open, close, crash) are issued one at a time, each waited for, so trace
order is the order the broker applied them.  Consumers work concurrently (threads against real brokers) or
in deterministic steps (the model); see :mod:`.workers`.  Every wait is bounded by a scenario setting; a
bound that expires is noted in the step's outcome and the run goes on, so a stalled broker ends in a saved
trace and an ``undelivered`` verdict.

Artifacts in ``out_dir``: ``trace.jsonl`` (written and flushed event by event), ``scenario.toml`` (the exact
scenario run), ``verdict.json``, ``broker.log`` (the part of the broker's log this run produced),
``pulsar-client.log`` (the client library's log of this run) and ``consumer-processes.log`` (that of the
consumers in child processes, when the scenario crashes one).  Unplanned client reconnects read from those
logs are recorded as ``fault`` events (:mod:`.client_log`).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from conformance.scenarios import (
    AckHeld,
    Close,
    CloseProducer,
    Crash,
    Deduplication,
    ExpireMessages,
    NackHeld,
    Open,
    OpenProducer,
    Pause,
    Publish,
    Redeliver,
    Resend,
    RestartBroker,
    Resume,
    ResumeConnection,
    Scenario,
    SetBehaviour,
    Sleep,
    StallConnection,
    Step,
    StorageDown,
    StorageUp,
    WaitDelivered,
    WaitQuiet,
    WaitReceived,
)
from conformance.trace import Op, SubscriptionSpec, TraceHeader, TraceWriter
from pytest_keyshared.driver.agent import Action, ConsumerAgent
from pytest_keyshared.driver.dead_letters import DeadLetterWatch
from pytest_keyshared.driver.handles import (
    BATCHING_MAX_BYTES,
    BATCHING_MAX_MESSAGES,
    BATCHING_MAX_PUBLISH_DELAY_MS,
    PROP_KEY,
    PROP_SEQ,
    PROP_UID,
    ConsumerSpec,
    OutgoingMessage,
    ProducerHandle,
    SendOutcome,
)
from pytest_keyshared.driver.live import LiveChecker
from pytest_keyshared.driver.pipeline import TracePipeline
from pytest_keyshared.driver.progress import Progress
from pytest_keyshared.driver.recorder import Counters, Recorder
from pytest_keyshared.driver.removals import RemovalWatch
from pytest_keyshared.driver.run_loop import RunLoop, RunResult, StepOutcome, write_verdict
from pytest_keyshared.driver.selfcheck import discipline_problems
from pytest_keyshared.driver.session import Session, open_session
from pytest_keyshared.driver.workers import ConsumerWorker
from pytest_keyshared.targets.base import Target, TargetError
from reference_model.errors import InvalidArgument

__all__ = ["RunResult", "StepOutcome", "run_scenario", "topic_for", "write_verdict"]

#: Consecutive sends without a confirmation after which a publish step gives up (the broker stopped accepting).
MAX_CONSECUTIVE_UNCONFIRMED = 3


def topic_for(scenario: Scenario, seed: int, nonce: str) -> str:
    """A topic no other run uses: ``persistent://public/default/ks-<scenario>-<seed>-<nonce>`` (``non-persistent://``
    with ``[settings] topic = "non-persistent"``)."""
    return f"{scenario.settings.topic}://public/default/ks-{scenario.name}-{seed}-{nonce}"


def run_scenario(
    target: Target,
    scenario: Scenario,
    *,
    seed: int,
    out_dir: str | Path,
    profile: Any = None,
    live_check: bool = True,
    progress: Callable[[Progress], None] | None = None,
    buckets: int | None = None,
) -> RunResult:
    """Run ``scenario`` on ``target`` (opened with :func:`~pytest_keyshared.targets.open_target`).

    ``buckets``: also store the ended trace in the bucketed layout of that many buckets, beside it
    (``trace-buckets/``, :func:`conformance.trace.buckets.write_bucketed_copy`).

    Raises :class:`~pytest_keyshared.targets.UnsupportedByTarget` before touching the broker when the target
    lacks a capability a step needs, and :class:`~pytest_keyshared.targets.TargetError` when the target fails
    during the run (the trace and verdict are saved first).  ``KeyboardInterrupt`` also saves them, then
    propagates.
    """
    if not isinstance(scenario, Scenario):
        raise InvalidArgument(
            f"Expected a conformance.scenarios.Scenario but got {type(scenario).__name__}; load one with"
            f" conformance.scenarios.load_scenario(name_or_path)."
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidArgument(f"Expected seed to be an integer >= 0 but got seed={seed!r}.")
    target.capabilities.require(scenario.required_capabilities(), target.name)
    if scenario.broker:  # [broker]: applied to this run, or the scenario is refused (skipped) naming them
        target = target.with_broker_conf(scenario.broker_conf())
    if scenario.is_failover():  # the replication workload on the target's clusters (docs/scenarios.md)
        from pytest_keyshared.driver.failover_run import run_failover_scenario

        return run_failover_scenario(
            target, scenario, seed=seed, out_dir=Path(out_dir), profile=profile, progress=progress, buckets=buckets
        )
    if scenario.settings.selector or scenario.settings.points:
        target = target.with_selector(scenario.settings.selector, scenario.settings.points)
    run = _Run(
        target, scenario, seed=seed, out_dir=Path(out_dir), profile=profile, live_check=live_check, progress=progress
    )
    run.buckets = buckets
    return run.execute()


#: A scenario tag: record the broker's published hash ranges per consumer (topic stats) in the ``end`` event.
RECORD_RANGES_TAG = "record:key-hash-ranges"
#: A scenario tag: record the subscription's draining and recently-joined figures (topic stats) in the ``end``
#: event, which the case judges against each other (``conformance.cases._support.subscription_stats_problems``).
RECORD_STATS_TAG = "record:subscription-stats"
#: A scenario tag: record the ``pulsar.dedup`` cursor's position (internal stats) in the ``end`` event, which the
#: case judges against the entries the trace shows stored (``conformance.cases._support.dedup_snapshot_problems``).
RECORD_DEDUP_CURSOR_TAG = "record:dedup-cursor"


#: How often (on the run's clock) a drain asks the clients whether a consumer is away: a consumer in a process
#: of its own answers by a round trip, and the drain's predicate runs every few milliseconds.
_AWAY_EVERY_NS = 250_000_000


class _Every:
    """``ask()``'s answer, asked again only once ``every_ns`` have passed on ``clock`` since it was last asked
    (the first call always asks): a cheap predicate for :meth:`Scheduler.wait_until`, which may call it every
    few milliseconds.  The answer may be up to ``every_ns`` old."""

    def __init__(self, ask: Callable[[], list[str]], every_ns: int, clock: Callable[[], int]) -> None:
        self.ask, self.every_ns, self.clock = ask, every_ns, clock
        self.at: int | None = None  #: when ``ask`` last answered, on ``clock``
        self.answer: list[str] = []

    def __call__(self) -> list[str]:
        now = self.clock()
        if self.at is None or now - self.at >= self.every_ns:
            self.answer, self.at = self.ask(), now
        return self.answer


def end_fields(counters: Any, quiet: bool, interrupted: bool, failure: BaseException | None) -> dict[str, Any]:
    """The fields of a run's ``end`` event (every run loop writes the same): what was received, expected and
    acknowledged, whether the drain went quiet, and why the run stopped early, if it did."""
    fields: dict[str, Any] = {
        "quiet": quiet,
        "received": counters.received,
        "expected": counters.expected_uids,
        "acked": counters.acked_expected,
    }
    if interrupted:
        fields["interrupted"] = True
    if failure is not None and not interrupted:
        fields["error"] = f"{type(failure).__name__}: {failure}"
    return fields


class _Run(RunLoop):
    """A Key_Shared scenario on a target's session: workers per consumer, the recorder, a live checker."""

    #: crashed consumers waiting for the broker's stats to show their removal (``driver/removals.py``)
    _removal_watch: RemovalWatch | None = None
    #: handle -> the consumer name it subscribed with (the name the broker's stats show)
    _broker_names: dict[str, str] | None = None
    #: open consumers not connected when the drain ended, messages still unacknowledged (see :meth:`_drain`)
    unreachable: tuple[str, ...] = ()

    def __init__(
        self,
        target: Target,
        scenario: Scenario,
        *,
        seed: int,
        out_dir: Path,
        profile: Any,
        live_check: bool,
        progress: Callable[[Progress], None] | None,
    ) -> None:
        super().__init__(target, scenario, seed=seed, out_dir=out_dir, profile=profile, progress=progress)
        self.target: Target = target
        self.settings = scenario.settings
        self.drains = scenario.settings.drain
        self.live_check = live_check
        self.nonce = "0" if target.deterministic else secrets.token_hex(4)
        self.topic = topic_for(scenario, seed, self.nonce)
        self.workers: dict[str, ConsumerWorker] = {}
        #: consumers whose connection a step stalled and no step resumed yet (resumed before the drain)
        self._stalled: set[str] = set()
        self.next_seq: dict[str, int] = {}
        self._announced: dict[str, ProducerHandle] = {}  # producer name -> the handle recorded as open
        self.sent: dict[str, dict[int, OutgoingMessage]] = {}
        #: per producer name, the highest sequence id sent so far (any step): a send above it has its client's
        #: ``last_sequence_id()`` recorded (``last_seq``), which must then be its own id
        self._highest_sent: dict[str, int] = {}
        #: producers the harness's protocol producer sends for (``Scenario.raw_producers``), read on first use
        self._raw_names: frozenset[str] | None = None
        #: the broker's published hash ranges per consumer, for the ``end`` event (``RECORD_RANGES_TAG``)
        self.ranges: dict[str, list[list[int]]] | None = None
        #: the subscription's figures from the broker's topic stats, for the ``end`` event (``RECORD_STATS_TAG``)
        self.stats: dict[str, Any] | None = None
        #: the same figures read after the last step, before the drain acknowledges what consumers hold
        self.stats_held: dict[str, Any] | None = None
        #: whether the broker answered the run topic's stats before the first step (``RECORD_STATS_TAG``): it must
        #: not, nothing has named the topic yet (None: not asked, or the target cannot tell)
        self.stats_before: bool | None = None
        #: the ``pulsar.dedup`` cursor's position from the internal stats, for the ``end`` event
        self.dedup_cursor: str | None = None
        #: the reader of the dead-letter topic (``[settings] dead_letter``), opened before the first step
        self.dead_letters: DeadLetterWatch | None = None

    # --- the run ----------------------------------------------------------------------------------------

    def _open_session(self) -> Session:
        """The run's session on the target (the soak's puts a fault-injecting proxy before each client)."""
        session = open_session(self.target, self.topic, self.out_dir, self.nonce, seed=self.seed)
        session.stallable = self.scenario.stalled_consumers()  # on a real broker each goes through a proxy
        return session

    def _open(self, trace_path: Path) -> None:
        self.log_since = self.target.log_position()
        self.session: Session = self._open_session()
        self.session.unnamed_producers = frozenset(self.settings.unnamed_producers)
        header = self._header()
        self.pipeline: TracePipeline | None = None
        if self.target.deterministic:  # no threads against the model: the writer keeps its file, checks inline
            self.live = LiveChecker(header, self.profile, enabled=self.live_check)
            self.writer = TraceWriter(trace_path, header, clock=self.session.clock, keep=False)
            self.writer.add_listener(self.live.feed)
        else:  # the file and the checker off the client threads (see pipeline.py, checker_process.py)
            log = self.out_dir / "checker.log"
            self.live = LiveChecker(header, self.profile, enabled=self.live_check, process_log=log)
            self.writer = TraceWriter(None, header, clock=self.session.clock, keep=False)
            self.pipeline = TracePipeline(trace_path, header, [self.live.feed_lines])
            self.writer.add_listener(self.pipeline.append)
        self.recorder = Recorder(
            self.writer,
            self.topic,
            self.scenario.subscription.name,
            non_persistent=self.scenario.settings.topic == "non-persistent",
        )
        self.session.watch_faults(self.recorder)
        self.scheduler = self.session.scheduler
        self.scheduler.on_tick(self._report)

    def _after_steps(self) -> None:
        if self.drains and RECORD_STATS_TAG in self.scenario.tags:
            self.stats_held = self.session.subscription_stats(self.scenario.subscription.name)
        if self.drains:
            self.step_index = len(self.scenario.steps) + 1
            self._report()
            self.quiet = self._drain()
            self.drained = not self.unreachable
        if RECORD_RANGES_TAG in self.scenario.tags:
            # while the consumers are still connected: what the broker's stats say each one owns
            self.ranges = self.session.key_hash_ranges(self.scenario.subscription.name)
        if RECORD_STATS_TAG in self.scenario.tags:
            self.stats = self.session.subscription_stats(self.scenario.subscription.name)
        if RECORD_DEDUP_CURSOR_TAG in self.scenario.tags:
            self.dedup_cursor = self.session.dedup_cursor()

    def _close(self, interrupted: bool, failure: BaseException | None) -> None:
        self._stop_workers()
        if self.dead_letters is not None:
            self._poll_dead_letters()  # what the last nacks routed
            if self.dead_letters.unreadable:
                self.notes.append(
                    "dead-letter copies without a usable ORIGIN_MESSAGE_ID, not recorded:"
                    f" {self.dead_letters.unreadable[:5]}"
                )
            self.dead_letters.close()
        self.notes.extend(self.session.stop_watching())
        more: dict[str, Any] = {}
        if self.ranges is not None:
            more["key_hash_ranges"] = self.ranges
        if self.stats is not None:
            more["subscription_stats"] = self.stats
        if self.stats_held is not None:
            more["subscription_stats_held"] = self.stats_held
        if self.stats_before is not None:
            more["topic_stats_before"] = self.stats_before
        if self.dedup_cursor is not None:
            more["dedup_cursor"] = self.dedup_cursor
        self._end(interrupted, failure, **more)
        self._close_handles()
        self.writer.close()
        if self.pipeline is not None and not self.pipeline.close():
            self.live.abandon("the live checker fell behind by more than its bound; checked the saved trace")
        self.session.close()

    def _judge(self, trace_path: Path) -> Any:
        verdict = self.live.finish(trace_path)
        self.notes.extend(self.live.notes)
        self.notes.extend(f"harness self-check: {p}" for p in _self_check(trace_path))
        return verdict

    def _broker_log(self) -> Path | None:
        return self.target.copy_log(self.log_since, self.out_dir / "broker.log")

    def _counters(self) -> Counters:
        return self.recorder.counters()

    def _header(self) -> TraceHeader:
        sub = self.scenario.subscription
        claims = self.target.claims
        dedup_asked = self.scenario.settings.deduplication
        extra: dict[str, Any] = {
            **self.target.header_extra(),
            "scenario": self.scenario.name,
            "topic": self.topic,
            "nonce": self.nonce,
            "publish_mode": "async-batched" if self.scenario.uses_batching() else "sync",
            "driver": f"pytest-keyshared {_version()}",
            "capabilities": self.target.capabilities.to_dict(),
        }
        if self.scenario.settings.topic != "persistent":
            extra["topic_kind"] = self.scenario.settings.topic  # the checker's contract for it (docs/checker.md)
        if self.scenario.uses_batching():
            # the client's batching limits: oversized_batch and batch_flushed_early judge them
            extra["batching_max_bytes"] = BATCHING_MAX_BYTES
            extra["batching_max_messages"] = BATCHING_MAX_MESSAGES
            extra["batching_max_publish_delay_ms"] = BATCHING_MAX_PUBLISH_DELAY_MS
        if self.scenario.uses_delayed_delivery():
            extra["delayed_delivery"] = True  # publishes carry deliver_after_ms: the checker reads it
        if self.settings.partitions:
            extra["partitions"] = self.settings.partitions  # message ids name their partition: one stream each
        if self.settings.dead_letter:
            topics = self._dead_letter_topics()
            extra["dead_letter"] = {
                "max_redeliver_count": self.settings.dead_letter,
                **({"topics": topics} if self.settings.partitions else {"topic": topics[0]}),
            }
        if dedup_asked and not claims.deduplication:
            extra["deduplication_switched_on"] = self.target.capabilities.dedup_switch
        return TraceHeader(
            target=self.target.name,
            subscription=SubscriptionSpec(
                name=sub.name,
                type="Key_Shared",
                key_shared_mode=sub.mode,
                allow_out_of_order_delivery=sub.allow_out_of_order_delivery,
            ),
            pulsar_version=claims.pulsar_version,
            deduplication=dedup_asked or claims.deduplication,
            selector=claims.selector_for(sub.mode),
            seed=self.seed,
            extra=extra,
        )

    def _before_steps(self) -> None:
        if RECORD_STATS_TAG in self.scenario.tags:  # before anything names the topic
            self.stats_before = self.session.topic_stats_answered()
        if self.settings.deduplication and not self.target.claims.deduplication:
            if self.target.capabilities.dedup_switch:
                self.session.set_deduplication(True)
            else:
                reason = self.target.capabilities.reasons.get("dedup_switch", "no deduplication switch")
                self.notes.append(
                    f"deduplication requested but not switched on ({reason}); the trace holds the broker to it anyway"
                )
        if self.settings.partitions:  # before anything names the topic (a reader, a producer, a subscribe)
            self.session.create_partitioned_topic(self.settings.partitions)
        if self.settings.dead_letter:
            readers = [(self.session.open_dead_letter_reader(t), t) for t in self._dead_letter_topics()]
            self.dead_letters = DeadLetterWatch(readers, self.recorder)

    # --- steps ------------------------------------------------------------------------------------------

    def _apply(self, step: Step) -> tuple[bool, str]:
        do: Callable[[Step], tuple[bool, str]] = getattr(self, f"_do_{step.do}")
        outcome = do(step)
        self._poll_dead_letters()
        return outcome

    def _dead_letter_topics(self) -> list[str]:
        """The client's default dead-letter topics: ``<topic>-<subscription>-DLQ``; of a partitioned topic, one per
        partition, named from the partition (``reference_model.broker.partitioned.dead_letter_topic``)."""
        from reference_model.broker.partitioned import dead_letter_topic, partition_name

        sub = self.scenario.subscription.name
        if not self.settings.partitions:
            return [dead_letter_topic(self.topic, sub)]
        return [dead_letter_topic(partition_name(self.topic, i), sub) for i in range(self.settings.partitions)]

    def _dead_letter_policy(self) -> tuple[int, str | None] | None:
        """The consumers' policy: the one topic by name; of a partitioned topic none, so that each partition's
        consumer names its own (the client's default)."""
        if not self.settings.dead_letter:
            return None
        return self.settings.dead_letter, None if self.settings.partitions else self._dead_letter_topics()[0]

    def _poll_dead_letters(self) -> None:
        if self.dead_letters is not None:
            self.dead_letters.poll()

    def _worker(self, name: str) -> ConsumerWorker | None:
        return self.workers.get(name)

    def _missing(self, name: str) -> tuple[bool, str]:
        return False, f"consumer {name!r} is not open (its open failed); step skipped"

    def _do_open(self, step: Open) -> tuple[bool, str]:
        sub = self.scenario.subscription
        spec = ConsumerSpec(
            topic=self.topic,
            subscription=sub.name,
            name=step.broker_name(),
            mode=step.mode or sub.mode,
            allow_out_of_order_delivery=sub.allow_out_of_order_delivery
            if step.allow_out_of_order_delivery is None
            else step.allow_out_of_order_delivery,
            ranges=step.ranges,
            receiver_queue=self.settings.receiver_queue if step.receiver_queue is None else step.receiver_queue,
            nack_delay_ms=self.settings.nack_delay_ms,
            ack_timeout_ms=step.ack_timeout_ms,
            dead_letter=self._dead_letter_policy(),
            partitions=self.settings.partitions,
        )
        crashable = self._crashable(step.consumer)
        if self._removal_watch is not None:
            self._removal_watch.reopened(step.consumer)
        self.session.before_subscribe()
        t0 = self.session.clock()
        try:
            handle = self.session.open_consumer(step.consumer, spec, crashable=crashable)
        except (TargetError, KeyboardInterrupt):
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self.recorder.open(step.consumer, spec, ok=False, error=error, t0=t0)
            return False, f"open {step.consumer!r} failed: {error}"
        self.recorder.open(step.consumer, spec, ok=True, t0=t0)
        if self._broker_names is None:
            self._broker_names = {}
        self._broker_names[step.consumer] = spec.name
        worker = ConsumerWorker(
            step.consumer,
            handle,
            ConsumerAgent(step.consumer, step.behaviour, paused=step.paused, ack_timeout_ms=step.ack_timeout_ms),
            self.recorder,
        )
        self.workers[step.consumer] = worker
        self.scheduler.start(worker)
        return True, ""

    def _keyless_sticky_key(self, producer: str, seq: int) -> str:
        """The sticky key the claimed release gives a keyless message: ``producerName-sequenceId`` from 4.0
        (apache/pulsar#23219), the literal ``NONE_KEY`` before (one key for every keyless message)."""
        from reference_model.hashing import sticky_key

        version = self.target.claims.pulsar_version
        return sticky_key(producer_name=producer, sequence_id=seq, version=version).decode("utf-8", "replace")

    def _crashable(self, handle: str) -> bool:
        """Whether consumer ``handle`` must run where a crash can be injected (some step crashes it)."""
        return handle in self.scenario.crashed_consumers()

    def _messages(self, step: Publish) -> Iterator[OutgoingMessage]:
        keys = step.message_keys(self.rng)
        producer = step.producer
        chosen = iter(step.sequence_ids)
        for key in keys:
            seq = next(chosen, None) if step.sequence_ids else None
            if seq is None:
                seq = self.next_seq.get(producer, 1)
            self.next_seq[producer] = max(self.next_seq.get(producer, 1), seq + 1)
            earlier = self.sent.get(producer, {}).get(seq) if step.highest_sequence_id is not None else None
            if earlier is not None:  # a batch sent with its ids resends an earlier id: the same message again
                yield earlier
                continue
            uid = f"{producer}:{seq}"
            partition_key = ordering_key = None
            if step.key_field == "none":
                key = self._keyless_sticky_key(self._trace_producer(producer), seq)
            elif step.key_field == "partition_key":
                partition_key = key
            elif step.key_field == "ordering_key":
                ordering_key = key
            else:
                ordering_key, partition_key = key, f"pk-{key}"
            body = f"{uid}|{key}|"
            payload = (body + "." * max(0, self.settings.payload_bytes - len(body))).encode()
            message = OutgoingMessage(
                key=key,
                seq=seq,
                uid=uid,
                payload=payload,
                partition_key=partition_key,
                ordering_key=ordering_key,
                properties={PROP_UID: uid, PROP_SEQ: str(seq), PROP_KEY: key},
                auto_sequence=step.sequence == "auto",
                deliver_after_ms=step.deliver_after_ms,
            )
            self.sent.setdefault(producer, {})[seq] = message
            yield message

    def _do_publish(self, step: Publish) -> tuple[bool, str]:
        producer = self._producer(step.producer, step.batching)
        messages = list(self._messages(step))
        if step.highest_sequence_id is not None:
            return self._send_with_ids(step, producer, messages, step.highest_sequence_id)
        if step.batching != "none":
            timeout_s = self.settings.send_timeout_ms / 1000 + self.settings.step_timeout_ms / 1000

            # default batches of consecutive ids above every earlier one: each receipt leaves the client's last
            # published id at its batch's last id (first + count - 1), so at or above each of its messages' ids
            judged = step.batching == "default" and self._ascending_from_top(step.producer, messages)

            spaced = self.step_index if step.spacing_ms else None  # the step the judgement groups spaced sends by

            def record(message: OutgoingMessage, outcome: SendOutcome) -> None:
                self.recorder.publish(
                    self._trace_producer(step.producer),
                    message,
                    outcome,
                    last_seq=outcome.last_seq if judged else None,
                    size=len(message.payload),
                    step=spaced,
                )

            def between() -> None:
                self.scheduler.sleep(step.spacing_ms)

            self._sent_up_to(step.producer, messages)
            done = producer.send_batch(messages, record, timeout_s, between if step.spacing_ms else None)
            return done, "" if done else f"some sends unconfirmed after {timeout_s:g}s (recorded as info)"
        return self._send_each(step.producer, messages)

    def _send_with_ids(
        self, step: Publish, producer: ProducerHandle, messages: list[OutgoingMessage], highest: int
    ) -> tuple[bool, str]:
        """The step's messages as one batch sent with its ids (``highest_sequence_id``), through the raw protocol
        producer; each message's publish records both ids of the send."""
        send_seq = messages[0].seq if step.send_sequence_id is None else step.send_sequence_id
        self._sent_up_to(step.producer, messages)
        timeout_s = self.settings.send_timeout_ms / 1000 + self.settings.step_timeout_ms / 1000
        outcomes = producer.send_ids(  # type: ignore[attr-defined]
            messages, sequence_id=send_seq, highest_sequence_id=highest, timeout_s=timeout_s
        )
        self.session.poll_faults()
        for message, outcome in zip(messages, outcomes, strict=True):
            self.recorder.publish(self._trace_producer(step.producer), message, outcome, send_ids=(send_seq, highest))
        unconfirmed = sum(1 for outcome in outcomes if outcome.result != "ok")
        return unconfirmed == 0, "" if not unconfirmed else f"the batch was not confirmed: {outcomes[0].error}"

    def _send_each(self, producer_name: str, messages: list[OutgoingMessage]) -> tuple[bool, str]:
        producer = self._producer(producer_name, "none")
        unconfirmed = 0
        next_report = time.monotonic() + 1.0
        for position, message in enumerate(messages):
            if position % 64 == 0 and time.monotonic() >= next_report:  # progress during long publish steps
                self._report()
                next_report = time.monotonic() + 1.0
            highest = self._highest_sent.get(producer_name)
            self._highest_sent[producer_name] = message.seq if highest is None else max(highest, message.seq)
            outcome = producer.send(message)
            self.session.poll_faults()  # a reconnect of the producer is recorded before the send's outcome
            above = highest is None or message.seq > highest  # not a resend, nor an id below one sent before
            self.recorder.publish(
                self._trace_producer(producer_name), message, outcome, last_seq=outcome.last_seq if above else None
            )
            if outcome.error is not None and outcome.error.startswith("Interrupted:"):
                # Ctrl-C during the send: pulsar-client turns it into a failed send (pulsar.Interrupted), recorded
                # as of unknown outcome above; the run still ends here, as at any other Ctrl-C
                raise KeyboardInterrupt
            unconfirmed = unconfirmed + 1 if outcome.result != "ok" else 0
            if unconfirmed >= MAX_CONSECUTIVE_UNCONFIRMED:
                left = len(messages) - position - 1
                return False, f"{unconfirmed} sends in a row unconfirmed; gave up with {left} messages unsent"
        return True, ""

    def _ascending_from_top(self, producer: str, messages: list[OutgoingMessage]) -> bool:
        """Whether ``messages`` have consecutive ids, each above every id ``producer`` sent before."""
        highest = self._highest_sent.get(producer)
        seqs = [message.seq for message in messages]
        consecutive = seqs == list(range(seqs[0], seqs[0] + len(seqs))) if seqs else False
        return consecutive and (highest is None or seqs[0] > highest)

    def _sent_up_to(self, producer: str, messages: list[OutgoingMessage]) -> None:
        """Note ``messages`` as sent by ``producer`` (pipelined or as one batch: their receipts are not judged)."""
        if messages:
            top = max(message.seq for message in messages)
            self._highest_sent[producer] = max(self._highest_sent.get(producer, top), top)

    def _producer(self, name: str, batching: str) -> ProducerHandle:
        """The session's producer ``name``; a newly created one is recorded (``producer_open``: the last sequence id
        the broker answered it, which the checker judges against the ids stored before)."""
        raw = self._raw_names
        if raw is None:
            raw = self._raw_names = self.scenario.raw_producers()
        if name in raw:
            batching = "raw"  # the harness's protocol producer sends all of this producer's messages
        handle = self.session.producer(name, batching, self.settings.send_timeout_ms)
        if self._announced.get(name) is not handle:
            self._announced[name] = handle
            self.recorder.producer_open(self._trace_producer(name), handle.created_t0, handle.answered_sequence_id)
        return handle

    def _trace_producer(self, name: str) -> str:
        """The name the trace gives producer ``name``: its own, or for one of ``[settings] unnamed_producers`` the
        name the broker generated for it (what its messages carry, and what deduplication keys on)."""
        if name in self.session.unnamed_producers:
            handle = self._announced.get(name)
            if handle is not None:
                return handle.name
        return name

    def _do_resend(self, step: Resend) -> tuple[bool, str]:
        if step.reconnect:
            self.session.reconnect_producer(step.producer, self.settings.send_timeout_ms)
        sent = self.sent.get(step.producer, {})
        messages = [sent[seq] for seq in range(step.from_seq, step.to_seq + 1) if seq in sent]
        return self._send_each(step.producer, messages)

    def _command(self, name: str, command: Callable[[ConsumerAgent], list[Action]]) -> tuple[bool, str]:
        worker = self._worker(name)
        if worker is None:
            return self._missing(name)
        self.scheduler.call(worker, command)
        return True, ""

    def _do_set_behaviour(self, step: SetBehaviour) -> tuple[bool, str]:
        def command(agent: ConsumerAgent) -> list[Action]:
            agent.set_behaviour(step.behaviour)
            return []

        return self._command(step.consumer, command)

    def _do_ack_held(self, step: AckHeld) -> tuple[bool, str]:
        return self._command(step.consumer, lambda agent: agent.take_held("ack", step.count))

    def _do_nack_held(self, step: NackHeld) -> tuple[bool, str]:
        return self._command(step.consumer, lambda agent: agent.take_held("nack", step.count))

    def _do_pause(self, step: Pause) -> tuple[bool, str]:
        return self._command(step.consumer, lambda agent: _set_paused(agent, True))

    def _do_resume(self, step: Resume) -> tuple[bool, str]:
        return self._command(step.consumer, lambda agent: _set_paused(agent, False))

    def _do_stall_connection(self, step: StallConnection) -> tuple[bool, str]:
        worker = self.workers.get(step.consumer)
        if worker is None:
            return self._missing(step.consumer)
        try:
            self.session.stall_connection(step.consumer, worker.handle)
        except Exception as exc:
            return False, f"stall_connection {step.consumer!r}: {type(exc).__name__}: {exc}"
        self._stalled.add(step.consumer)
        return True, ""

    def _do_resume_connection(self, step: ResumeConnection) -> tuple[bool, str]:
        worker = self.workers.get(step.consumer)
        if worker is None:
            return self._missing(step.consumer)
        self._stalled.discard(step.consumer)
        try:
            self.session.resume_connection(step.consumer, worker.handle)
        except Exception as exc:
            return False, f"resume_connection {step.consumer!r}: {type(exc).__name__}: {exc}"
        return True, ""

    def _resume_stalled(self) -> None:
        """Before the drain (and a close): every connection a step left stalled reads again."""
        for name in sorted(self._stalled):
            worker = self.workers.get(name)
            if worker is not None:
                with contextlib.suppress(Exception):
                    self.session.resume_connection(name, worker.handle)
        self._stalled.clear()

    def _do_redeliver(self, step: Redeliver) -> tuple[bool, str]:
        worker = self._worker(step.consumer)
        if worker is None:
            return self._missing(step.consumer)

        def command(agent: ConsumerAgent) -> list[Action]:
            worker.redeliver(keep_prefetched=step.keep_prefetched)
            return []

        self.scheduler.call(worker, command)
        return True, ""

    def _do_close(self, step: Close) -> tuple[bool, str]:
        return self._leave(step.consumer, Op.CLOSE)

    def _do_crash(self, step: Crash) -> tuple[bool, str]:
        return self._leave(step.consumer, Op.CRASH)

    def _leave(self, name: str, op: Op) -> tuple[bool, str]:
        worker = self.workers.pop(name, None)
        if worker is None:
            return self._missing(name)
        if name in self._stalled:  # a close waits for the broker's answer: let it through first
            self._stalled.discard(name)
            with contextlib.suppress(Exception):
                self.session.resume_connection(name, worker.handle)
        self.scheduler.stop(worker)
        self.recorder.membership(op, name)
        try:
            if op is Op.CRASH:
                worker.handle.crash()
            else:
                worker.handle.close()
                self.recorder.membership(Op.CLOSED, name)  # the close completed (refused_open reads it)
        except Exception as exc:
            return False, f"{op.value} {name!r}: {type(exc).__name__}: {exc}"
        finally:
            self.session.consumer_gone(name)
        if op is Op.CRASH:
            self._watch_removal(name)
        return True, ""

    def _watch_removal(self, name: str) -> None:
        """Record ``gone`` for crashed ``name`` once the broker's stats no longer list it (targets that show
        stats; ``driver/removals.py``): it bounds the crash's floating removal for the misassigned check."""
        names = self._broker_names or {}
        watch = self._removal_watch
        if watch is None:  # the first crash: look at every turn of a wait (at most every 100 ms of the clock)
            subscription = self.scenario.subscription.name
            watch = self._removal_watch = RemovalWatch(
                lambda: self.session.consumer_names(subscription),
                lambda: [names.get(handle, handle) for handle in self.workers],
                lambda handle: self.recorder.membership(Op.GONE, handle),
                self.scheduler.now_ns,
            )
            self.scheduler.on_poll(watch.poll)
        watch.crashed(name, names.get(name, name))

    def _do_wait_quiet(self, step: WaitQuiet) -> tuple[bool, str]:
        quiet_ms = step.quiet_ms or self.settings.quiet_ms
        timeout_ms = step.timeout_ms or self.settings.step_timeout_ms
        if self._wait_quiet(quiet_ms, timeout_ms):
            return True, ""
        return False, f"still receiving after {timeout_ms} ms"

    def _wait_quiet(self, quiet_ms: int, timeout_ms: int, *, also: Callable[[], bool] | None = None) -> bool:
        since = self.scheduler.now_ns()
        quiet_ns = quiet_ms * 1_000_000

        def is_quiet() -> bool:
            last = max(since, self.recorder.counters().last_receive_ns)
            return self.scheduler.now_ns() - last >= quiet_ns and (also is None or also())

        return self.scheduler.wait_until(is_quiet, timeout_ms)

    def _do_wait_received(self, step: WaitReceived) -> tuple[bool, str]:
        timeout_ms = step.timeout_ms or self.settings.step_timeout_ms
        if self.scheduler.wait_until(lambda: self.recorder.received_by(step.consumer) >= step.count, timeout_ms):
            return True, ""
        got = self.recorder.received_by(step.consumer)
        who = f"consumer {step.consumer!r}" if step.consumer else "all consumers"
        return False, f"{who} received {got} of {step.count} within {timeout_ms} ms"

    def _do_wait_delivered(self, step: WaitDelivered) -> tuple[bool, str]:
        timeout_ms = step.timeout_ms or self.settings.step_timeout_ms
        if self.scheduler.wait_until(lambda: self.recorder.owed() == 0, timeout_ms):
            return True, ""
        owed = self.recorder.owed()
        return False, (
            f"{owed} message(s) published ok were neither acknowledged nor held by an open consumer"
            f" after {timeout_ms} ms"
        )

    def _do_sleep(self, step: Sleep) -> tuple[bool, str]:
        self.scheduler.sleep(step.ms)
        return True, ""

    def _do_expire_messages(self, step: ExpireMessages) -> tuple[bool, str]:
        self.session.expire_messages(self.scenario.subscription.name, step.seconds)
        # recorded after the call returned: every message the broker expired was sent more than ``seconds``
        # before this event's t (the checker's rule, docs/checker.md "Message expiry")
        self.recorder.fault(
            "expire_messages", consumers=[], subscription=self.scenario.subscription.name, expire_seconds=step.seconds
        )
        return True, ""

    def _do_deduplication(self, step: Deduplication) -> tuple[bool, str]:
        self.session.set_deduplication(step.enabled)
        # recorded after the switch took effect (the admin call waits until the topic applies it): what was
        # sent before this event met the old setting; the checker judges deduplication by these switches
        self.recorder.fault("deduplication_on" if step.enabled else "deduplication_off", consumers=[])
        return True, ""

    def _do_open_producer(self, step: OpenProducer) -> tuple[bool, str]:
        self._producer(step.producer, "none")
        return True, ""

    def _do_close_producer(self, step: CloseProducer) -> tuple[bool, str]:
        t0 = self.session.clock()
        self.session.close_producer(step.producer)
        # recorded after the close returned: the broker no longer had the producer from this event's t on, so a
        # creation more than the purge timeout plus one purge period later proves it forgotten (the checker's epochs)
        self.recorder.producer_close(step.producer, t0)
        return True, ""

    def _do_restart_broker(self, step: RestartBroker) -> tuple[bool, str]:
        self.recorder.fault("broker_restart", kill=step.kill)
        self.session.restart_broker(kill=step.kill)
        self.session.poll_faults()  # the clients' losses happened during the restart: record them first
        self.recorder.fault("broker_restarted", result="ok")
        # the step ends when the clients are back, so the next steps meet the same consumers on every run
        return self.session.await_clients(self.settings.step_timeout_ms)

    def _do_storage_down(self, step: StorageDown) -> tuple[bool, str]:
        self.recorder.fault("storage_down", consumers=[], fail_after_ms=step.fail_after_ms)
        self.session.storage_down(step.fail_after_ms)
        return True, ""

    def _do_storage_up(self, step: StorageUp) -> tuple[bool, str]:
        self.session.storage_up()
        self.recorder.fault("storage_up", consumers=[])
        return True, ""

    # --- drain and teardown -----------------------------------------------------------------------------

    def _drain(self) -> bool:
        """Every open consumer resumes, acks what it holds and everything after; until quiet or the bound.

        Silence proves nothing while an open consumer is away from the broker: cut off by a fault, its client
        waits to reconnect (after a long fault it backs off for seconds), and what the broker owes it cannot
        arrive.  So while messages are missing the drain gives up on silence only once every open consumer is
        connected, and counts the silence from the last moment one was seen away (what a returning consumer is
        owed has ``drain_quiet_ms`` to arrive), within the same bound.  A consumer whose client cannot say is
        counted away (:meth:`Session.unreachable_consumers`).  Everything published means every message stored:
        each uid, and each second copy a resend stored under another id (deduplication off), which the broker owes
        as a message of its own (``Counters.unacked_copies``).  Once everything published is acknowledged, who is
        away does not matter: nothing is owed.  Else the consumers still away when the drain ends are named in
        :attr:`unreachable`, and the run is not drained (``end`` says ``drained: false`` and ``unreachable``):
        whether the broker still owed the missing messages to a consumer nobody could reach cannot be told, so
        ``undelivered`` is not judged.  Returns whether the drain ended quiet (not by its bound).
        """
        self._resume_stalled()
        for worker in list(self.workers.values()):
            self.scheduler.call(worker, lambda agent: agent.start_drain())
        settle_ns = self.settings.quiet_ms * 1_000_000
        give_up_ns = self.settings.drain_quiet_ms * 1_000_000
        clock = self.scheduler.now_ns
        since = clock()
        away = _Every(self.session.unreachable_consumers, _AWAY_EVERY_NS, clock)
        seen_away = since  # the last time a consumer was seen away (or the drain's start)

        def drained() -> bool:
            nonlocal seen_away
            self._poll_dead_letters()
            counters = self.recorder.counters()
            now = clock()
            silent_ns = now - max(since, counters.last_receive_ns)
            if counters.all_acknowledged:
                return silent_ns >= settle_ns
            if silent_ns < give_up_ns:
                return False
            if away():
                seen_away = now
                return False
            return now - max(seen_away, counters.last_receive_ns) >= give_up_ns

        started, first = time.monotonic(), self.writer.count
        bound_ms = self.settings.drain_timeout_ms
        quiet = self.scheduler.wait_until(drained, bound_ms)
        counters = self.recorder.counters()
        complete = counters.all_acknowledged
        # the answer the wait went by (asked again only if it is older than _AWAY_EVERY_NS)
        self.unreachable = () if complete else tuple(away())
        note = f"{counters.acked_expected} of {counters.expected_uids} published messages acknowledged"
        if counters.unacked_copies:
            note += f", {counters.unacked_copies} second copies stored by resends not acknowledged"
        if self.unreachable:
            names = ", ".join(repr(h) for h in self.unreachable)
            when = f"the {bound_ms} ms drain bound expired" if not quiet else "the drain ended"
            note += f"; consumer {names} not connected when {when}"
            self.notes.append(
                f"the drain could not reach consumer {names} (not connected when it ended, with"
                f" {counters.expected_uids - counters.acked_expected} published messages unacknowledged):"
                " the run is not counted as drained, so what it left undelivered is not judged"
            )
        elif not quiet:
            note += f"; still receiving when the {bound_ms} ms drain bound expired"
        elapsed = time.monotonic() - started
        self.outcomes.append(StepOutcome(self.step_index, "drain", complete, elapsed, note, first, self.writer.count))
        return quiet

    def _end(self, interrupted: bool, failure: BaseException | None, **more: Any) -> None:
        """Write the run's ``end`` event: ``drained`` as the drain left it (:meth:`_after_steps`: it ran and reached
        every consumer it needed to), and ``unreachable`` naming the consumers it could not reach."""
        fields = end_fields(self.recorder.counters(), self.quiet, interrupted, failure)
        if self.unreachable:
            fields["unreachable"] = list(self.unreachable)
        self.recorder.end(drained=self.drained, **fields, **more)

    def _stop_workers(self) -> None:
        for worker in self.workers.values():
            self.scheduler.stop(worker)
            if worker.prefetch_dropped:
                self.notes.append(
                    f"consumer {worker.name!r}: dropped {worker.prefetch_dropped} prefetched messages at redeliver"
                )
            for error in worker.errors[:5]:
                self.notes.append(f"consumer {worker.name!r}: {error}")

    def _close_handles(self) -> None:
        """Close what is still open, after ``end``: teardown is not part of the workload and is not recorded."""
        for worker in self.workers.values():
            with contextlib.suppress(Exception):
                worker.handle.close()
        self.workers.clear()


def _self_check(trace_path: Path) -> list[str]:
    """Recording-discipline problems of the finished trace (harness bugs; see :mod:`.selfcheck`)."""
    with trace_path.open(encoding="utf-8") as fh:
        next(fh, None)  # header
        return discipline_problems(json.loads(line) for line in fh if line.strip())


def _set_paused(agent: ConsumerAgent, paused: bool) -> list[Action]:
    agent.paused = paused
    return []


def _version() -> str:
    try:
        return importlib.metadata.version("pytest-keyshared")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"
