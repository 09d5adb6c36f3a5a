"""One run's connection to a target: consumers, producers, broker faults, and the scheduler that fits.

:class:`PulsarSession` reaches a real broker through ``pulsar-client`` (threads, wall clock) and records the
clients' unplanned reconnects as faults (:mod:`.client_log`);
:class:`ModelSession` drives the in-process reference model (stepped, simulated clock).  The run loop in
:mod:`.run` sees only the :class:`Session` surface, so a scenario runs the same on both.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_keyshared.driver.client_log import ClientLogWatch, LogSource
from pytest_keyshared.driver.consumer_process import ProcessConsumer
from pytest_keyshared.driver.handles import ConsumerHandle, ConsumerSpec, ProducerHandle
from pytest_keyshared.driver.removals import stats_consumer_names
from pytest_keyshared.driver.workers import Scheduler, ThreadedScheduler
from pytest_keyshared.targets.base import PulsarTarget, Target, TargetError

__all__ = [
    "PulsarSession",
    "Session",
    "internal_stats_dedup_cursor",
    "open_session",
    "stats_key_hash_ranges",
    "stats_subscription_figures",
]

#: How long a restart step lets the client log catch up with clients that say they are back.
_LOG_CATCH_UP_MS = 250
#: the receive buffer of a stall proxy's socket to the broker (bytes): small, so that a stalled consumer's
#: connection backs up after little data (the broker's own send buffer still takes up to its kernel maximum)
_STALL_RCVBUF = 64 * 1024


class Session(ABC):
    """What the run loop needs from a target during one run."""

    scheduler: Scheduler

    def __init__(self, target: Target, topic: str, run_dir: Path, nonce: str) -> None:
        self.target = target
        self.topic = topic
        self.run_dir = run_dir
        self.nonce = nonce
        self._producers: dict[str, tuple[ProducerHandle, str]] = {}
        #: the run's topic is a partitioned topic of this many partitions (:meth:`create_partitioned_topic`)
        self.partitions = 0
        #: consumer handles some step stalls (``stall_connection``), set before the first step
        self.stallable: frozenset[str] = frozenset()
        #: producer handles created without a ``producer_name`` (the broker names them), set before the first step
        self.unnamed_producers: frozenset[str] = frozenset()

    def clock(self) -> int:
        return self.scheduler.now_ns()

    def keep_memory_bounded(self) -> None:
        """A long run (a soak) asks the target to keep only what is outstanding; nothing to do by default.

        The model keeps every entry ever published unless told to trim what every cursor is done with.
        """
        return None

    @abstractmethod
    def open_consumer(self, handle_name: str, spec: ConsumerSpec, *, crashable: bool) -> ConsumerHandle:
        """Subscribe; raises whatever the client raised when the broker refused or did not answer."""

    @abstractmethod
    def _create_producer(self, name: str, batching: str, send_timeout_ms: int) -> ProducerHandle: ...

    def producer(self, name: str, batching: str, send_timeout_ms: int) -> ProducerHandle:
        """The producer called ``name`` (created on first use, again if its batching mode changes)."""
        existing = self._producers.get(name)
        if existing is not None and existing[1] == batching:
            return existing[0]
        if existing is not None:
            existing[0].close()
        try:
            created = self._create_producer(name, batching, send_timeout_ms)
        except TargetError:
            raise
        except Exception as exc:
            raise TargetError(
                f"Could not create producer {name!r} on {self.topic}: {type(exc).__name__}: {exc}"
            ) from None
        self._producers[name] = (created, batching)
        return created

    def reconnect_producer(self, name: str, send_timeout_ms: int) -> ProducerHandle:
        """Close producer ``name`` and create it again under the same name (a retrying application)."""
        existing = self._producers.pop(name, None)
        batching = "none" if existing is None else existing[1]
        if existing is not None:
            existing[0].close()
        return self.producer(name, batching, send_timeout_ms)

    def close_producer(self, name: str) -> None:
        """Close producer ``name`` (if open); the next :meth:`producer` call creates it again."""
        existing = self._producers.pop(name, None)
        if existing is not None:
            existing[0].close()

    def create_partitioned_topic(self, partitions: int) -> None:
        """Create the run's topic as a partitioned topic of ``partitions`` (admin ``createPartitionedTopic``; only
        with ``capabilities.partitioned_topics``, checked before the run starts)."""
        from pytest_keyshared.targets.base import UnsupportedByTarget

        raise UnsupportedByTarget(f"Target {self.target.name!r} cannot create partitioned topics (partitioned_topics).")

    def ensure_topic(self) -> None:
        """Make the topic exist (a short-lived producer), e.g. before setting a topic policy."""
        name = f"ks-setup-{self.nonce}"
        self.producer(name, "none", 10_000)
        handle, _ = self._producers.pop(name)
        handle.close()

    def restart_broker(self, *, kill: bool) -> None:
        self.target.restart_broker(kill=kill)

    def await_clients(self, timeout_ms: int) -> tuple[bool, str]:
        """Wait (bounded) until every open consumer and producer is on a broker again, e.g. after a restart.

        Returns whether they all are, and else a note naming the ones that are not.
        """
        return True, ""

    def unreachable_consumers(self) -> list[str]:
        """The open consumers, by handle, whose client does not say it is connected to a broker now: cut off by
        a fault, still waiting to reconnect, or unable to answer (the drain cannot show such a consumer received
        what it was owed, ``driver/run.py``).  None on a target without connections (the model)."""
        return []

    def storage_down(self, fail_after_ms: int) -> None:
        """Make the broker's storage refuse writes (only with ``capabilities.storage_failure``, checked before the
        run starts: no real target has it, so this is unreachable on them)."""
        from pytest_keyshared.targets.base import UnsupportedByTarget

        raise UnsupportedByTarget(f"Target {self.target.name!r} cannot fail its storage (storage_failure).")

    def storage_up(self) -> None:
        """The storage takes writes again (see :meth:`storage_down`)."""
        from pytest_keyshared.targets.base import UnsupportedByTarget

        raise UnsupportedByTarget(f"Target {self.target.name!r} cannot fail its storage (storage_failure).")

    def stall_connection(self, handle_name: str, handle: ConsumerHandle) -> None:
        """Consumer ``handle_name``'s client stops reading its socket: the broker's writes back up (TCP
        back-pressure) while the consumer keeps its permits (``stall_connection``)."""
        from pytest_keyshared.targets.base import UnsupportedByTarget

        raise UnsupportedByTarget(f"Target {self.target.name!r} cannot stall one consumer's connection.")

    def resume_connection(self, handle_name: str, handle: ConsumerHandle) -> None:
        """The client reads its socket again (see :meth:`stall_connection`)."""
        from pytest_keyshared.targets.base import UnsupportedByTarget

        raise UnsupportedByTarget(f"Target {self.target.name!r} cannot stall one consumer's connection.")

    def expire_messages(self, subscription: str, expire_time_s: int) -> None:
        """Expire the subscription's messages older than ``expire_time_s`` (``message_expiry``, checked before
        the run starts)."""
        self.target.expire_messages(self.topic, subscription, expire_time_s)

    def set_deduplication(self, enabled: bool) -> None:
        self.ensure_topic()
        self.target.set_topic_deduplication(self.topic, enabled)

    def key_hash_ranges(self, subscription: str) -> dict[str, list[list[int]]] | None:
        """The hash ranges the broker's topic stats give each consumer of ``subscription``, by consumer name, or
        ``None`` when the target has no admin API or its stats print none (a scenario asks for them with the
        ``record:key-hash-ranges`` tag; the case judges them, ``conformance.cases._support``)."""
        return None

    # --- client faults (real brokers record unplanned reconnects; the model has none) -----------------------

    def watch_faults(self, recorder: Any) -> None:
        """Start recording client faults through ``recorder`` (see :mod:`.client_log`)."""
        return None

    def poll_faults(self) -> None:
        """Record the client faults that happened since the last look, and the clients' returns the log did not
        show."""
        return None

    def consumer_gone(self, handle_name: str) -> None:
        """Consumer ``handle_name`` was closed or crashed on purpose."""
        return None

    def before_subscribe(self) -> None:
        """A subscribe is about to be sent (its ``t0`` is read right after).  A real broker's clock moves on its
        own; the model's moves only when told (:class:`ModelSession`)."""
        return None

    def consumer_names(self, subscription: str) -> Counter[str] | None:
        """How many consumers of each name the broker's topic stats list for ``subscription`` now, or ``None``
        when the target shows no stats (``driver/removals.py`` reads it after a crash)."""
        return None

    def dedup_cursor(self) -> str | None:
        """The ``pulsar.dedup`` cursor's ``markDeletePosition`` in the topic's internal stats now (``""`` when the
        topic has no such cursor), or ``None`` when the target shows no internal stats (a scenario asks for it with
        the ``record:dedup-cursor`` tag)."""
        return None

    def subscription_stats(self, subscription: str) -> dict[str, Any] | None:
        """The figures of ``subscription`` a case judges against each other (:func:`stats_subscription_figures`)
        from the broker's topic stats now, or ``None`` when the target shows no stats (a scenario asks for them
        with the ``record:subscription-stats`` tag)."""
        return None

    def topic_stats_answered(self) -> bool | None:
        """Whether the broker answers the topic stats of the run's topic now: False when it says there is no such
        topic (Pulsar: 404 ``Topic not found``, and nothing created: ``getTopicReferenceAsync`` asks
        ``getTopicIfExists``), True when it answers, None when the target shows no stats or the answer says
        neither.  Asked before the first step of a ``record:subscription-stats`` scenario."""
        return None

    def stop_watching(self) -> list[str]:
        """Record what is left and stop (before ``end``); returns notes for the run."""
        return []

    def open_dead_letter_reader(self, topic: str) -> Any:
        """A consumer of the dead-letter topic ``topic`` from its start (``pulsar.Consumer`` surface:
        ``receive(timeout_millis)``, ``acknowledge``, ``close``), for :class:`~.dead_letters.DeadLetterWatch`."""
        raise NotImplementedError(f"{type(self).__name__} cannot read a dead-letter topic")

    def close(self) -> None:
        for handle, _ in self._producers.values():
            with contextlib.suppress(Exception):
                handle.close()
        self._producers.clear()


def stats_key_hash_ranges(stats: Any, subscription: str) -> dict[str, list[list[int]]] | None:
    """``keyHashRanges`` (``"[a, b]"`` strings, 2.x/3.x) or ``keyHashRangeArrays`` (4.x) per consumer name, from a
    topic stats document; ``None`` when it has none."""
    sub = (stats.get("subscriptions") or {}).get(subscription) if isinstance(stats, dict) else None
    if not isinstance(sub, dict):
        return None
    out: dict[str, list[list[int]]] = {}
    for consumer in sub.get("consumers") or ():
        raw = consumer.get("keyHashRangeArrays") or consumer.get("keyHashRanges")
        if not raw:
            continue
        ranges: list[list[int]] = []
        for item in raw:
            low, high = (item.strip("[] ").split(",") if isinstance(item, str) else item)[:2]
            ranges.append([int(low), int(high)])
        out.setdefault(str(consumer.get("consumerName")), []).extend(ranges)
    return out or None


#: The subscription's figures :func:`stats_subscription_figures` keeps (``SubscriptionStatsImpl``; the draining
#: figures are PIP-379's, 4.0 on; ``consumersAfterMarkDeletePosition`` is the classic dispatcher's).
SUBSCRIPTION_FIGURES = (
    "drainingHashesCount",
    "drainingHashesClearedTotal",
    "drainingHashesUnackedMessages",
    "consumersAfterMarkDeletePosition",
)
#: Each consumer's figures it keeps (``ConsumerStatsImpl``; ``readPositionWhenJoining``: classic).
CONSUMER_FIGURES = (
    "consumerName",
    "drainingHashesCount",
    "drainingHashesClearedTotal",
    "drainingHashesUnackedMessages",
    "readPositionWhenJoining",
    "msgOutCounter",
    "unackedMessages",
    "blockedConsumerOnUnackedMsgs",
    "avgMessagesPerEntry",
    "availablePermits",
)


def stats_subscription_figures(stats: Any, subscription: str) -> dict[str, Any] | None:
    """The figures of ``subscription`` in a topic stats document that a case judges against each other
    (``conformance.cases._support.subscription_stats_problems``): :data:`SUBSCRIPTION_FIGURES` and, under
    ``consumers``, :data:`CONSUMER_FIGURES` of each consumer, each only where the broker printed it; ``None``
    when the document has no such subscription."""
    sub = (stats.get("subscriptions") or {}).get(subscription) if isinstance(stats, dict) else None
    if not isinstance(sub, dict):
        return None
    out: dict[str, Any] = {name: sub[name] for name in SUBSCRIPTION_FIGURES if sub.get(name) is not None}
    consumers = [c for c in sub.get("consumers") or () if isinstance(c, dict)]
    out["consumers"] = [{name: c[name] for name in CONSUMER_FIGURES if c.get(name) is not None} for c in consumers]
    return out


def internal_stats_dedup_cursor(stats: Any) -> str | None:
    """The ``pulsar.dedup`` cursor's ``markDeletePosition`` in an internal stats document, ``""`` when it has no
    such cursor, ``None`` when it is no internal stats document."""
    cursors = stats.get("cursors") if isinstance(stats, dict) else None
    if not isinstance(cursors, dict):
        return None
    dedup = cursors.get("pulsar.dedup")
    return str(dedup.get("markDeletePosition") or "") if isinstance(dedup, dict) else ""


class PulsarSession(Session):
    """A real broker: a client per consumer, one for producers; crashable consumers in child processes."""

    def __init__(self, target: PulsarTarget, topic: str, run_dir: Path, nonce: str) -> None:
        super().__init__(target, topic, run_dir, nonce)
        from pytest_keyshared.driver.pulsar_client import ClientSettings, process_client_log

        self.pulsar_target = target
        self.settings = ClientSettings(
            target.service_url,
            operation_timeout_s=target.quirks.operation_timeout_s,
            log_path=process_client_log(),
            distinct_ids=target.quirks.distinct_consumer_ids,
            nonce=nonce,
        )
        self.scheduler = ThreadedScheduler(command_timeout_s=target.quirks.operation_timeout_s + 20.0)
        self._producer_client: Any = None
        self._consumers_opened = 0
        run_dir.mkdir(parents=True, exist_ok=True)
        self.client_log = run_dir / "pulsar-client.log"  #: this run's part of the process's client log
        self.client_log.touch()
        self.process_consumers_log = run_dir / "consumer-processes.log"  #: crashable consumers log here
        self._log_sources = [LogSource.from_now(self.settings.log_path, tee=self.client_log)]
        #: followed from the first consumer process on (before, a look at it would be a failing ``open``)
        self._process_log_source: LogSource | None = LogSource(self.process_consumers_log)
        self._watch: ClientLogWatch | None = None
        self._watching = False
        self._consumers: dict[str, ConsumerHandle] = {}  #: open consumers by handle (for ``is_connected``)
        self._stall_links: dict[str, Any] = {}  #: handle -> its ``ProxyLink`` (closed with the session)

    def watch_faults(self, recorder: Any) -> None:
        self._watch = ClientLogWatch(self._log_sources, recorder, self.topic, probe=self._is_connected)
        self._watching = True
        recorder.before_receive = self._watch.before_receive
        self.scheduler.on_poll(self._watch.poll)

    def _is_connected(self, role: str, name: str) -> bool | None:
        """The :data:`~.client_log.Probe` of this session: asks the handle's client."""
        if role == "consumer":
            handle: ConsumerHandle | ProducerHandle | None = self._consumers.get(name)
        else:
            entry = self._producers.get(name)
            handle = None if entry is None else entry[0]
        if handle is None:
            return None
        try:
            return handle.is_connected()
        except Exception:
            return None

    def poll_faults(self) -> None:
        if self._watch is not None:
            self._watch.reconcile()

    def await_clients(self, timeout_ms: int) -> tuple[bool, str]:
        def waiting() -> list[str]:
            names = [f"consumer {h!r}" for h in self._consumers if self._is_connected("consumer", h) is False]
            return names + [f"producer {p!r}" for p in self._producers if self._is_connected("producer", p) is False]

        back = self.scheduler.wait_until(lambda: not waiting(), timeout_ms)
        watch = self._watch
        if back and watch is not None:
            # a client says it is connected a moment before it logs so: give the lines (and their connections)
            # a short while to arrive, then record what the log did not show
            self.scheduler.wait_until(lambda: watch.lost() == ([], []), _LOG_CATCH_UP_MS)
        self.poll_faults()
        if back:
            return True, ""
        return False, f"not on the broker again within {timeout_ms} ms: {', '.join(waiting())}"

    def unreachable_consumers(self) -> list[str]:
        # ``None`` (a consumer process that cannot answer) counts too: the client-log watch reads it as "no
        # return yet", and the drain must not read silence from a consumer it cannot hear from as proof
        return [h for h in list(self._consumers) if self._is_connected("consumer", h) is not True]

    def consumer_gone(self, handle_name: str) -> None:
        self._consumers.pop(handle_name, None)
        if self._watch is not None:
            self._watch.closed(handle_name)

    def stop_watching(self) -> list[str]:
        watch = self._watch
        if watch is None or not self._watching:
            return []
        self._watching = False
        watch.reconcile()
        consumers, producers = watch.lost()
        watch.stop()
        watch.recorder.before_receive = None
        away = [f"consumer {h!r}" for h in consumers] + [f"producer {p!r}" for p in producers]
        if away:
            watch.notes.append(f"still reconnecting when the run ended: {', '.join(away)}")
        return list(watch.notes)

    def open_consumer(self, handle_name: str, spec: ConsumerSpec, *, crashable: bool) -> ConsumerHandle:
        watch = self._watch
        if watch is None:
            handle = self._open_consumer(handle_name, spec, crashable=crashable)
        else:
            with watch.opening(handle_name):
                handle = self._open_consumer(handle_name, spec, crashable=crashable)
        self._consumers[handle_name] = handle
        return handle

    def _open_consumer(self, handle_name: str, spec: ConsumerSpec, *, crashable: bool) -> ConsumerHandle:
        from pytest_keyshared.driver.pulsar_client import PulsarConsumer

        self._consumers_opened += 1
        burn_tag = f"{self.nonce}-{self._consumers_opened}"
        settings = self._settings_for(handle_name)
        if crashable:
            self._follow_process_log()
            return ProcessConsumer(
                spec,
                service_url=settings.service_url,
                operation_timeout_s=self.settings.operation_timeout_s,
                log_path=self.process_consumers_log,
                burn_ids=self.settings.reserve_consumer_id(),
                burn_topic=f"non-persistent://public/default/ks-idburn-{self.nonce}",
                burn_tag=burn_tag,
            )
        return PulsarConsumer(settings, spec, burn_tag)

    def key_hash_ranges(self, subscription: str) -> dict[str, list[list[int]]] | None:
        stats = self._topic_stats()
        return None if stats is None else stats_key_hash_ranges(stats, subscription)

    def consumer_names(self, subscription: str) -> Counter[str] | None:
        stats = self._topic_stats()
        return None if stats is None else stats_consumer_names(stats, subscription)

    def subscription_stats(self, subscription: str) -> dict[str, Any] | None:
        stats = self._topic_stats()
        return None if stats is None else stats_subscription_figures(stats, subscription)

    def topic_stats_answered(self) -> bool | None:
        admin_url = self.pulsar_target.admin_url
        if admin_url is None:
            return None
        from pytest_keyshared.targets.admin import AdminClient, AdminError

        try:
            AdminClient(admin_url).topic_stats(self.topic)
        except AdminError as exc:
            return False if exc.status == 404 else None
        except Exception:  # an admin API that cannot answer: nothing to tell
            return None
        return True

    def dedup_cursor(self) -> str | None:
        admin_url = self.pulsar_target.admin_url
        if admin_url is None:
            return None
        from pytest_keyshared.targets.admin import AdminClient

        try:
            return internal_stats_dedup_cursor(AdminClient(admin_url).internal_stats(self.topic))
        except Exception:  # an admin API that cannot answer: nothing to tell
            return None

    def _topic_stats(self) -> Any:
        """The topic's stats from the admin API, or ``None`` (no admin API, or one that cannot answer)."""
        admin_url = self.pulsar_target.admin_url
        if admin_url is None:
            return None
        from pytest_keyshared.targets.admin import AdminClient

        try:
            return AdminClient(admin_url).topic_stats(self.topic)
        except Exception:  # an admin API that cannot answer: nothing to tell
            return None

    def _follow_process_log(self) -> None:
        """Start reading the consumer processes' log (once, before the first one is started)."""
        source, self._process_log_source = self._process_log_source, None
        if source is None:
            return
        if self._watch is not None:
            self._watch.add_source(source)
        else:
            self._log_sources.append(source)

    def _settings_for(self, handle_name: str | None) -> Any:
        """The client settings of consumer ``handle_name`` (None: the producers' client); a subclass may point a
        client elsewhere (the soak's fault-injecting proxy). A consumer some step stalls connects through a
        loopback proxy of its own (``stall_connection``)."""
        if handle_name is None or handle_name not in self.stallable:
            return self.settings
        from pytest_keyshared.soak.nemesis import ViaLink, upstream_of
        from pytest_keyshared.soak.proxy import ProxyLink

        link = self._stall_links.get(handle_name)
        if link is None:
            link = self._stall_links[handle_name] = ProxyLink(
                upstream_of(self.pulsar_target.service_url), f"stall-{handle_name}", upstream_rcvbuf=_STALL_RCVBUF
            )
        return ViaLink(self.settings, link.url)

    def _stall_link(self, handle_name: str) -> Any:
        link = self._stall_links.get(handle_name)
        if link is None:
            raise TargetError(
                f"consumer {handle_name!r} was not opened behind a proxy (the scenario's stalled consumers are"
                " known before the run)"
            )
        return link

    def stall_connection(self, handle_name: str, handle: ConsumerHandle) -> None:
        """Stop forwarding the broker's bytes to the consumer's client (the client's bytes still go through): the
        proxy stops reading, the socket buffers fill and the broker's writes back up."""
        self._stall_link(handle_name).stall_to_client(True)

    def resume_connection(self, handle_name: str, handle: ConsumerHandle) -> None:
        self._stall_link(handle_name).stall_to_client(False)

    def create_partitioned_topic(self, partitions: int) -> None:
        admin_url = self.pulsar_target.admin_url
        if admin_url is None:
            super().create_partitioned_topic(partitions)
        from pytest_keyshared.targets.admin import AdminClient

        try:
            AdminClient(str(admin_url)).create_partitioned_topic(self.topic, partitions)
        except Exception as exc:
            raise TargetError(
                f"Could not create {self.topic} as a partitioned topic of {partitions}: {type(exc).__name__}: {exc}"
            ) from None
        self.partitions = partitions

    def open_dead_letter_reader(self, topic: str) -> Any:
        import pulsar

        if self._producer_client is None:
            self._producer_client = self._settings_for(None).client()
        return self._producer_client.subscribe(
            topic,
            f"ks-dlq-{self.nonce}",
            consumer_type=pulsar.ConsumerType.Shared,
            initial_position=pulsar.InitialPosition.Earliest,
        )

    def _create_producer(self, name: str, batching: str, send_timeout_ms: int) -> ProducerHandle:
        from pytest_keyshared.driver.pulsar_client import PulsarProducer

        if batching == "raw":
            from pytest_keyshared.driver.raw_handle import RawProducerHandle

            settings = self._settings_for(None)
            return RawProducerHandle(
                settings.service_url, self.topic, name, send_timeout_ms=send_timeout_ms, clock=self.clock,
                open_timeout_s=float(settings.operation_timeout_s),
            )  # fmt: skip

        if self._producer_client is None:
            self._producer_client = self._settings_for(None).client()
        return PulsarProducer(
            self._producer_client,
            self.topic,
            None if name in self.unnamed_producers else name,
            batching=batching,
            send_timeout_ms=send_timeout_ms,
            clock=self.clock,
        )

    def close(self) -> None:
        super().close()
        links, self._stall_links = self._stall_links, {}
        for link in links.values():
            link.close()  # bounded: joins its threads
        if self._producer_client is not None:
            with contextlib.suppress(Exception):
                self._producer_client.close()
            self._producer_client = None
        if self._watch is not None:
            self._watch.close()  # the teardown's lines go to pulsar-client.log too, unrecorded
        else:
            ClientLogWatch(self._log_sources, None, self.topic).close()


def open_session(target: Target, topic: str, run_dir: Path, nonce: str, *, seed: int) -> Session:
    """The session ``target`` opens for one run (:meth:`Target.open_session`): each target knows its own kind."""
    return target.open_session(topic, run_dir, nonce, seed=seed)  # type: ignore[no-any-return]
