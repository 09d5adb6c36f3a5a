"""Several model brokers, one per cluster, joined by geo-replication and replicated subscriptions (PIP-33).

:class:`ReplicatedClusters` composes :class:`~reference_model.broker.ModelBroker` s that share one
:class:`~reference_model.broker.clock.SimClock`. Every topic of the brokers is replicated to every other cluster
(a namespace whose replication clusters are all of them). The layer plays, per cluster and topic:

* the **replicators** (:mod:`reference_model.replication.replicator`), one per remote cluster, each with a
  configurable delay; a cluster that is **down** is cut off: no replicator reads from or sends to it, and it
  answers no snapshot request;
* the **controller** (:class:`~reference_model.replication.ReplicatedSubscriptionsController`), ticking every
  ``snapshot_frequency_ms`` while the cluster has ``enabled`` replicated subscriptions and the topic has at least
  one replicated subscription there (``PersistentTopic.checkReplicatedSubscriptionControllerState``);
* the **snapshot cache** of each replicated subscription (newest-N or by distance, per the broker's version),
  fed by the SNAPSHOT markers its dispatcher reads, consulted when its mark-delete position advances.

It follows the brokers through their listener hooks (``on_entry_added``, ``on_marker_read``,
``on_mark_delete_advanced``) and acts through ``write_marker``, ``append_replicated`` and
``acknowledge_cumulative_to``. Work triggered from inside a broker call (a marker to write after an
acknowledgement, a replicator read after an append) runs from a timer at the same instant, as Pulsar runs it
asynchronously; controller ticks are background timers (they never keep ``run_until_idle`` busy), replication
in flight is not.

A broker restart (its ``generation`` changes) loses what Pulsar keeps in memory: controllers with their pending
snapshots, snapshot caches, the "last data written" time. Replicator positions survive (durable cursors).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reference_model.errors import InvalidArgument, did_you_mean
from reference_model.replication._hooks import ClusterBroker, append_replicated, subscription_names
from reference_model.replication.config import ReplicationConfig
from reference_model.replication.controller import AcknowledgeTo, ReplicatedSubscriptionsController
from reference_model.replication.markers import MarkerType, MarkerWrite, snapshot_from_payload
from reference_model.replication.replicator import ReplicatorAction, ReplicatorState, classify
from reference_model.replication.snapshot_cache import SnapshotCache, make_snapshot_cache
from reference_model.storage.entry import Entry

__all__ = ["ReplicatedClusters"]

Position = tuple[int, int]
_NS_PER_MS = 1_000_000


class _ClusterListener:
    """The listener registered on one broker: forwards its events with the cluster's name."""

    __slots__ = ("cluster", "layer")

    def __init__(self, layer: ReplicatedClusters, cluster: str) -> None:
        self.layer = layer
        self.cluster = cluster

    def on_entry_added(self, topic: str, entry: Entry) -> None:
        self.layer._entry_added(self.cluster, topic, entry)

    def on_marker_read(self, topic: str, subscription: str, entry: Entry) -> None:
        self.layer._marker_read(self.cluster, topic, subscription, entry)

    def on_mark_delete_advanced(self, topic: str, subscription: str, position: Position) -> None:
        self.layer._mark_delete_advanced(self.cluster, topic, subscription, position)


class ReplicatedClusters:
    """N clusters with asynchronous replication between every pair, on one simulated clock.

    ``brokers``: the model brokers (each with its own ``cluster`` name, all on the same ``clock``).
    ``config``: one :class:`ReplicationConfig` for all clusters, or a mapping cluster -> config.
    ``delays_ms``: per-link replication delay, ``{("r1", "r2"): 50}`` (source, remote); others use the source
    cluster's ``config.replication_delay_ms``.
    """

    def __init__(
        self,
        brokers: Iterable[ClusterBroker],
        *,
        config: ReplicationConfig | Mapping[str, ReplicationConfig] | None = None,
        delays_ms: Mapping[tuple[str, str], int] | None = None,
    ) -> None:
        self._brokers: dict[str, ClusterBroker] = {}
        for broker in brokers:
            name = getattr(broker, "cluster", None)
            if not isinstance(name, str):
                raise InvalidArgument(f"Expected model brokers with a cluster name but got {broker!r}.")
            if name in self._brokers:
                raise InvalidArgument(
                    f"Two brokers claim cluster {name!r}; give each ModelBroker(cluster=...) a distinct name."
                )
            if getattr(getattr(broker, "config", None), "trim_consumed_entries", False):
                raise InvalidArgument(
                    f"The broker of cluster {name!r} trims consumed entries (BrokerConfig.trim_consumed_entries),"
                    " but its replicators read the log from positions the broker does not know; turn it off."
                )
            self._brokers[name] = broker
        if len(self._brokers) < 2:
            raise InvalidArgument(
                f"Replication needs at least two clusters but got {sorted(self._brokers)}; pass two ModelBrokers"
                " with different cluster names on one shared clock."
            )
        clocks = {id(b.clock) for b in self._brokers.values()}
        if len(clocks) != 1:
            raise InvalidArgument(
                "Replicated clusters must share one clock: create the brokers with ModelBroker(..., clock=clock)"
                " using the same SimClock."
            )
        self.clock = next(iter(self._brokers.values())).clock
        self._configs = self._resolve_configs(config)
        self._delays: dict[tuple[str, str], int] = {}
        for (source, remote), delay in (delays_ms or {}).items():
            self.set_delay(source, remote, delay)
        self._down: set[str] = set()
        self._links_down: set[tuple[str, str]] = set()  #: (source, remote) replicators disconnected alone
        #: (source, remote) -> (lose_receipts, repeat_window): faults of that replicator's producer
        self._faults: dict[tuple[str, str], tuple[bool, int]] = {}
        self._generation: dict[str, int] = {c: b.generation for c, b in self._brokers.items()}
        self._replicators: dict[tuple[str, str, str], ReplicatorState] = {}
        self._controllers: dict[tuple[str, str], ReplicatedSubscriptionsController] = {}
        self._caches: dict[tuple[str, str, str], SnapshotCache] = {}
        self._last_data_ns: dict[tuple[str, str], int] = {}
        #: What the layer did, in order (cluster, topic, what, detail): for tests and explanations.
        self.events: list[tuple[int, str, str, str, str]] = []
        for cluster, broker in self._brokers.items():
            for topic in broker.topics():  # topics that exist already replicate from their end (Latest)
                for remote in self._brokers:
                    if remote != cluster:
                        self._replicators[(cluster, remote, topic)] = ReplicatorState(
                            cluster, remote, topic, broker.topic_log(topic).latest
                        )
            broker.add_listener(_ClusterListener(self, cluster))
            self._schedule_tick(cluster)

    def _resolve_configs(
        self, config: ReplicationConfig | Mapping[str, ReplicationConfig] | None
    ) -> dict[str, ReplicationConfig]:
        if config is None:
            return {c: ReplicationConfig() for c in self._brokers}
        if isinstance(config, ReplicationConfig):
            return {c: config for c in self._brokers}
        if not isinstance(config, Mapping):
            raise InvalidArgument(
                f"Expected a ReplicationConfig or a mapping cluster -> ReplicationConfig but got config={config!r}."
            )
        resolved = {}
        for cluster in self._brokers:
            value = config.get(cluster, ReplicationConfig())
            if not isinstance(value, ReplicationConfig):
                raise InvalidArgument(f"Expected a ReplicationConfig for cluster {cluster!r} but got {value!r}.")
            resolved[cluster] = value
        for cluster in config:
            self._check_cluster(cluster, "config")
        return resolved

    # ------------------------------------------------------------------ public surface

    @property
    def clusters(self) -> tuple[str, ...]:
        return tuple(self._brokers)

    def broker(self, cluster: str) -> Any:
        """The model broker of ``cluster``."""
        return self._brokers[self._check_cluster(cluster, "cluster")]

    def config(self, cluster: str) -> ReplicationConfig:
        return self._configs[self._check_cluster(cluster, "cluster")]

    def advance(self, ms: float) -> None:
        """Let ``ms`` of simulated time pass for every cluster."""
        self.clock.advance(ms)

    def run_until_idle(self, max_ms: float | None = None) -> None:
        """Advance until no replication (and no broker timer) is in flight; snapshot ticks do not count."""
        self.clock.run_until_idle(max_ms)

    def set_delay(self, source: str, remote: str, delay_ms: int) -> None:
        """Entries read from ``source`` reach ``remote`` ``delay_ms`` later (order is kept)."""
        self._check_cluster(source, "source")
        self._check_cluster(remote, "remote")
        if source == remote:
            raise InvalidArgument(f"A replication link joins two clusters, but source and remote are both {source!r}.")
        if isinstance(delay_ms, bool) or not isinstance(delay_ms, int) or delay_ms < 0:
            raise InvalidArgument(f"Expected delay_ms >= 0 (int) for link {source}->{remote} but got {delay_ms!r}.")
        self._delays[(source, remote)] = delay_ms

    def delay_ms(self, source: str, remote: str) -> int:
        return self._delays.get((source, remote), self._configs[source].replication_delay_ms)

    def set_down(self, cluster: str, down: bool = True) -> None:
        """Cut ``cluster`` off from the others (``down=True``) or reconnect it.

        Going down, every replicator from or to it stops and takes back what it had in flight; coming back,
        they resend that in order and catch up. Its clients are not affected: the broker itself keeps running.
        """
        self._check_cluster(cluster, "cluster")
        if down == (cluster in self._down):
            return
        if down:
            self._down.add(cluster)
            for state in self._replicators.values():
                if cluster in (state.source, state.remote):
                    state.take_back_in_flight()
            self._record(cluster, "*", "down", "")
        else:
            self._down.discard(cluster)
            self._record(cluster, "*", "up", "")
            for state in self._replicators.values():
                if cluster in (state.source, state.remote) and self._link_up(state.source, state.remote):
                    for entry in state.resend:
                        self._enqueue(state, entry)
                    state.resend.clear()
                    self._schedule_read(state)

    def set_link_down(self, source: str, remote: str, down: bool = True) -> None:
        """Disconnect (``down=True``) or reconnect the replicator of one direction only, ``source`` -> ``remote``
        (``GeoPersistentReplicator.disconnect``; ``testReplicatedSubscriptionWhenReplicatorProducerIsClosed``).

        Down, it reads and sends nothing and takes back what it had in flight; ``source``'s controller skips
        snapshots meanwhile (a replicator of the topic is disconnected).  Up, it resends that in order and
        catches up."""
        self._check_cluster(source, "source")
        self._check_cluster(remote, "remote")
        if source == remote:
            raise InvalidArgument(f"A replication link joins two clusters, but source and remote are both {source!r}.")
        link = (source, remote)
        if down == (link in self._links_down):
            return
        if down:
            self._links_down.add(link)
            for state in self._replicators.values():
                if (state.source, state.remote) == link:
                    state.take_back_in_flight()
            self._record(source, "*", "link down", f"-> {remote}")
            return
        self._links_down.discard(link)
        self._record(source, "*", "link up", f"-> {remote}")
        for state in self._replicators.values():
            if (state.source, state.remote) == link and self._link_up(source, remote):
                for entry in state.resend:
                    self._enqueue(state, entry)
                state.resend.clear()
                self._schedule_read(state)

    def set_replicator_faults(
        self, source: str, remote: str, *, lose_receipts: bool = False, repeat_window: int = 0
    ) -> None:
        """Faults of the replicator ``source`` -> ``remote``'s producer (``OneWayReplicatorDeduplicationTest``).

        ``lose_receipts``: what it sends is stored in ``remote`` but never confirmed, so it is sent again, with
        what is in flight, the next time the link drops (:meth:`set_link_down`, :meth:`set_down`); switching it
        off confirms nothing already unconfirmed (the test removes the injection, then closes the connection).
        ``repeat_window`` N > 0: every N-th send also writes the previous N sends again.  A remote with
        deduplication stores each message once (judged by its original producer and sequence id); markers are
        not deduplicated (``isDuplicateReplV1``), so a repeated marker is stored again (never delivered)."""
        self._check_cluster(source, "source")
        self._check_cluster(remote, "remote")
        if source == remote:
            raise InvalidArgument(f"A replication link joins two clusters, but source and remote are both {source!r}.")
        if isinstance(repeat_window, bool) or not isinstance(repeat_window, int) or repeat_window < 0:
            raise InvalidArgument(f"Expected repeat_window >= 0 (an int) but got {repeat_window!r}.")
        self._faults[(source, remote)] = (bool(lose_receipts), repeat_window)
        for state in self._replicators.values():
            if (state.source, state.remote) == (source, remote):
                self._apply_faults(state)
        self._record(
            source, "*", "replicator faults", f"-> {remote} lose_receipts={lose_receipts} repeat={repeat_window}"
        )

    def _apply_faults(self, state: ReplicatorState) -> None:
        state.lose_receipts, state.repeat_window = self._faults.get((state.source, state.remote), (False, 0))
        if not state.repeat_window:
            state.repeat_buffer.clear()

    def is_down(self, cluster: str) -> bool:
        return self._check_cluster(cluster, "cluster") in self._down

    def controller(self, cluster: str, topic: str) -> ReplicatedSubscriptionsController | None:
        """The controller of ``topic`` in ``cluster`` if it runs now (it needs a replicated subscription)."""
        return self._active_controller(self._check_cluster(cluster, "cluster"), self._topic_name(topic))

    def snapshot_cache(self, cluster: str, topic: str, subscription: str) -> SnapshotCache | None:
        """The snapshot cache of a replicated subscription (created when it reads its first snapshot)."""
        self._sync(self._check_cluster(cluster, "cluster"))
        return self._caches.get((cluster, self._topic_name(topic), subscription))

    def replicator(self, source: str, remote: str, topic: str) -> ReplicatorState | None:
        return self._replicators.get(
            (self._check_cluster(source, "source"), self._check_cluster(remote, "remote"), self._topic_name(topic))
        )

    def stats(self) -> dict[str, Any]:
        """JSON-safe state: per cluster, its link status, controllers, replicators and caches."""
        out: dict[str, Any] = {}
        for cluster in self._brokers:
            self._sync(cluster)
            out[cluster] = {
                "down": cluster in self._down,
                "controllers": {
                    topic: c.stats() for (cl, topic), c in sorted(self._controllers.items()) if cl == cluster
                },
                "replicators": {
                    f"{topic}->{remote}": r.stats()
                    for (src, remote, topic), r in sorted(self._replicators.items())
                    if src == cluster
                },
                "snapshotCaches": {
                    f"{topic}#{sub}": [s.snapshot_id for s in cache.snapshots()]
                    for (cl, topic, sub), cache in sorted(self._caches.items())
                    if cl == cluster
                },
            }
        return out

    def __repr__(self) -> str:
        return f"ReplicatedClusters(clusters={list(self._brokers)}, down={sorted(self._down)})"

    # ------------------------------------------------------------------ helpers

    def _check_cluster(self, cluster: str, what: str) -> str:
        if cluster not in self._brokers:
            raise InvalidArgument(
                f"Unknown cluster {what}={cluster!r}.{did_you_mean(str(cluster), self._brokers)}"
                f" Clusters: {', '.join(self._brokers)}."
            )
        return cluster

    def _topic_name(self, topic: str) -> str:
        if "://" in topic:
            return topic
        parts = topic.split("/")
        return f"persistent://public/default/{topic}" if len(parts) == 1 else f"persistent://{topic}"

    def _record(self, cluster: str, topic: str, what: str, detail: str) -> None:
        self.events.append((self.clock.now_ns(), cluster, topic, what, detail))

    def _link_up(self, a: str, b: str) -> bool:
        return a not in self._down and b not in self._down and (a, b) not in self._links_down

    def _others(self, cluster: str) -> list[str]:
        return [c for c in self._brokers if c != cluster]

    def _sync(self, cluster: str) -> None:
        """Forget what a restarted broker lost (controllers, caches, last-data time)."""
        generation = self._brokers[cluster].generation
        if self._generation[cluster] == generation:
            return
        self._generation[cluster] = generation
        for controller_key in [k for k in self._controllers if k[0] == cluster]:
            del self._controllers[controller_key]
        for cache_key in [k for k in self._caches if k[0] == cluster]:
            del self._caches[cache_key]
        for data_key in [k for k in self._last_data_ns if k[0] == cluster]:
            del self._last_data_ns[data_key]
        self._record(cluster, "*", "restart", f"generation {generation}")

    def _has_replicated_subscription(self, cluster: str, topic: str) -> bool:
        broker = self._brokers[cluster]
        for name in subscription_names(broker, topic):
            sub = broker.subscription(topic, name)
            if sub is not None and sub.replicated:
                return True
        return False

    def _active_controller(self, cluster: str, topic: str) -> ReplicatedSubscriptionsController | None:
        self._sync(cluster)
        key = (cluster, topic)
        if not (self._configs[cluster].enabled and self._has_replicated_subscription(cluster, topic)):
            self._controllers.pop(key, None)
            return None
        controller = self._controllers.get(key)
        if controller is None:
            controller = ReplicatedSubscriptionsController(
                cluster,
                topic,
                config=self._configs[cluster],
                version=self._brokers[cluster].version,
            )
            self._controllers[key] = controller
        return controller

    def _write(self, cluster: str, topic: str, write: MarkerWrite) -> Position:
        position = self._brokers[cluster].write_marker(
            topic,
            int(write.marker_type),
            dict(write.payload),
            None if write.replicate_to is None else list(write.replicate_to),
        )
        self._record(cluster, topic, f"write {write.marker_type.name}", _describe(write.payload, position))
        return position

    def _write_later(self, cluster: str, topic: str, write: MarkerWrite) -> None:
        generation = self._brokers[cluster].generation

        def run() -> None:
            if self._brokers[cluster].generation == generation:
                self._write(cluster, topic, write)

        self.clock.call_at(self.clock.now_ns(), run)

    # ------------------------------------------------------------------ controller ticks

    def _schedule_tick(self, cluster: str) -> None:
        period_ms = self._configs[cluster].snapshot_frequency_ms

        def tick() -> None:
            self._tick(cluster)
            self.clock.call_later(period_ms, tick, daemon=True)

        self.clock.call_at(self.clock.now_ns(), tick, daemon=True)

    def _tick(self, cluster: str) -> None:
        self._sync(cluster)
        broker = self._brokers[cluster]
        remotes = self._others(cluster)
        connected = all(self._link_up(cluster, r) for r in remotes)
        now = self.clock.now_ns()
        for topic in broker.topics():
            controller = self._active_controller(cluster, topic)
            if controller is None:
                continue
            write = controller.tick(
                now,
                last_data_write_ns=self._last_data_ns.get((cluster, topic)),
                remote_clusters=remotes,
                all_replicators_connected=connected,
            )
            if write is not None:
                self._write(cluster, topic, write)

    # ------------------------------------------------------------------ broker events

    def _entry_added(self, cluster: str, topic: str, entry: Entry) -> None:
        self._sync(cluster)
        if not entry.is_marker:
            self._last_data_ns[(cluster, topic)] = self.clock.now_ns()
        for remote in self._others(cluster):
            key = (cluster, remote, topic)
            state = self._replicators.get(key)
            if state is None:
                state = ReplicatorState(cluster, remote, topic, self._brokers[cluster].topic_log(topic).earliest)
                self._apply_faults(state)
                self._replicators[key] = state
            if self._link_up(cluster, remote):
                self._schedule_read(state)

    def _marker_read(self, cluster: str, topic: str, subscription: str, entry: Entry) -> None:
        self._sync(cluster)
        if entry.metadata.marker_type != MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT or entry.marker_payload is None:
            return
        sub = self._brokers[cluster].subscription(topic, subscription)
        if sub is None or not sub.replicated or not self._configs[cluster].enabled:
            return
        key = (cluster, topic, subscription)
        cache = self._caches.get(key)
        if cache is None:
            log = self._brokers[cluster].topic_log(topic)

            def distance(low: Position, high: Position) -> int:
                return max(0, log.count_between(low, high) - (1 if high in log else 0))

            cache = make_snapshot_cache(
                self._brokers[cluster].version,
                self._configs[cluster].max_cached_snapshots,
                distance,
            )
            self._caches[key] = cache
        snapshot = snapshot_from_payload(entry.marker_payload)
        cache.add(snapshot)
        self._record(cluster, topic, "cache snapshot", f"{subscription} {snapshot.snapshot_id}@{_pos(entry.position)}")

    def _mark_delete_advanced(self, cluster: str, topic: str, subscription: str, position: Position) -> None:
        self._sync(cluster)
        cache = self._caches.get((cluster, topic, subscription))
        if cache is None:
            return
        sub = self._brokers[cluster].subscription(topic, subscription)
        if sub is None or not sub.replicated:
            return
        snapshot = cache.advanced_mark_delete_position((position[0], position[1]))
        if snapshot is None:
            return
        controller = self._active_controller(cluster, topic)
        if controller is not None:
            self._write_later(cluster, topic, controller.local_subscription_updated(subscription, snapshot))

    # ------------------------------------------------------------------ replicators

    def _schedule_read(self, state: ReplicatorState) -> None:
        if state.read_scheduled:
            return
        state.read_scheduled = True

        def run() -> None:
            state.read_scheduled = False
            self._read(state)

        self.clock.call_at(self.clock.now_ns(), run)

    def _read(self, state: ReplicatorState) -> None:
        if not self._link_up(state.source, state.remote):
            return
        self._sync(state.source)
        log = self._brokers[state.source].topic_log(state.topic)
        for entry in log.entries_after(state.read_after):
            state.read_after = entry.position
            action = classify(entry, state.remote)
            if action is ReplicatorAction.MARKER_FROM_REMOTE:
                self._marker_from_remote(state.source, state.topic, entry)
            elif action is ReplicatorAction.SEND:
                self._enqueue(state, entry)

    def _controller_for_marker(self, cluster: str, topic: str) -> ReplicatedSubscriptionsController | None:
        """The controller that handles a marker from a remote: the running one, else one started for it when the
        cluster has replicated subscriptions enabled (see :meth:`_marker_from_remote`)."""
        controller = self._active_controller(cluster, topic)
        if controller is None and self._configs[cluster].enabled:
            controller = ReplicatedSubscriptionsController(
                cluster, topic, config=self._configs[cluster], version=self._brokers[cluster].version
            )
            self._controllers[(cluster, topic)] = controller
            self._record(cluster, topic, "start controller", "a marker arrived from a remote cluster")
        return controller

    def _marker_from_remote(self, cluster: str, topic: str, entry: Entry) -> None:
        """A marker from a remote cluster, handed over by the replicator that reads it.

        Pulsar's ``PersistentTopic.receivedReplicatedSubscriptionMarker`` force-starts the topic's controller when
        it has none (``checkReplicatedSubscriptionControllerState(true)``: the cluster has replicated
        subscriptions enabled), so a remote whose only replicated subscription was deleted still answers requests
        and applies an UPDATE, which creates the subscription again (``receiveSubscriptionUpdated``,
        ``testReplicatedSubscriptionWhenReplicatorProducerIsClosed``).  Here the started controller handles this
        marker; the next tick drops it again if the topic still has no replicated subscription (Pulsar keeps it
        until the next subscribe or policy check: it then answers requests, which this one also does)."""
        controller = self._controller_for_marker(cluster, topic)
        if controller is None or entry.marker_payload is None or entry.metadata.marker_type is None:
            return
        outcome = controller.received_marker(entry.position, entry.metadata.marker_type, entry.marker_payload)
        if isinstance(outcome, MarkerWrite):
            self._write(cluster, topic, outcome)
        elif isinstance(outcome, AcknowledgeTo):
            moved = self._brokers[cluster].acknowledge_cumulative_to(
                topic, outcome.subscription, outcome.position, create_if_missing=True
            )
            self._record(
                cluster, topic, "apply UPDATE", f"{outcome.subscription} -> {_pos(outcome.position)} moved={moved}"
            )

    def _enqueue(self, state: ReplicatorState, entry: Entry) -> None:
        due = max(self.clock.now_ns() + self.delay_ms(state.source, state.remote) * _NS_PER_MS, state.last_due_ns)
        state.last_due_ns = due
        window = state.repeat_window
        if window:
            if len(state.repeat_buffer) >= window:  # the injected repeat: the buffered sends written again
                for again in state.repeat_buffer:
                    state.in_flight.append((due, again))
                state.repeat_buffer.clear()
            state.repeat_buffer.append(entry)
        state.in_flight.append((due, entry))
        state.sent += 1
        self._schedule_delivery(state)

    def _schedule_delivery(self, state: ReplicatorState) -> None:
        if state.delivery_timer is not None or not state.in_flight:
            return

        def run() -> None:
            state.delivery_timer = None
            self._deliver_due(state)

        state.delivery_timer = self.clock.call_at(state.in_flight[0][0], run)

    def _deliver_due(self, state: ReplicatorState) -> None:
        now = self.clock.now_ns()
        remote = self._brokers[state.remote]
        while state.in_flight and state.in_flight[0][0] <= now and self._link_up(state.source, state.remote):
            _, entry = state.in_flight.popleft()
            position = append_replicated(remote, state.topic, entry, state.source)
            state.delivered += 1
            if state.lose_receipts:
                state.unconfirmed.append(entry)
            if entry.is_marker:
                kind = MarkerType(entry.metadata.marker_type).name if entry.metadata.marker_type else "marker"
                self._record(
                    state.remote, state.topic, f"replicated {kind}", f"from {state.source} at {_pos(position)}"
                )
        self._schedule_delivery(state)


def _pos(position: Sequence[int]) -> str:
    return f"{position[0]}:{position[1]}"


def _describe(payload: Mapping[str, Any], position: Position) -> str:
    ident = payload.get("snapshot_id") or payload.get("subscription_name") or ""
    return f"{ident} at {_pos(position)}"
