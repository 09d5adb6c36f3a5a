"""The soak generator: a seeded, endless stream of timed steps (Jepsen's generator, as plain data).

:class:`SoakGenerator` yields :class:`Timed` steps, each due ``at_ms`` after the run began (on the run's clock),
in due order.  The steps are the scenario steps of :mod:`conformance.scenarios` (publish, open, close, crash,
set_behaviour, ack_held, nack_held, redeliver, pause, resume, restart_broker).  The network faults come from
:meth:`SoakGenerator.nemesis`, a stream of its own: the nemesis runs beside the workload (as in Jepsen), so that
a fault which blocks a client (a partitioned producer) cannot hold back the faults and heals that follow it.
Everything comes from ``random.Random(seed)`` (the faults from a second source seeded from it), and the
generator never looks at what the broker did, so a plan gives the same steps on every run; against the model
(stepped on its simulated clock) the same seed therefore gives the same trace, byte for byte.

What the mix holds:

* publishes from ``producers`` producers at ``rate`` messages per second: sync sends and async sends with
  key-based or default (mixed-key, routed by the first key) batching (one message per key in a batch, see
  :meth:`SoakGenerator._publish`), keys in the
  partition key, the ordering key, both, or none (keyless, sync only: Pulsar 4.0's ``producer-seq`` fallback
  key, which a batch would replace by its first message's);
  keys drawn uniformly or Zipf-distributed over ``keys`` keys;
* consumers with random behaviours: ack at once, ack after a random delay, slow (a long delay and a small
  receiver queue), hold then ack (``ack_held`` a while later), nack (then ack the redelivery);
* churn, ``churn_per_min`` changes a minute: joins (a fresh handle name every time: a handle is never
  reused; about one join in seven takes the consumer name of one already open: same-name consumers), leaves,
  crashes (targets that can), behaviour changes, redeliver requests, pause and resume;
* faults: broker restarts (in the step stream), and per client connection cut, stall, delay and partition
  (from :meth:`SoakGenerator.nemesis`; healed about ``fault_seconds`` later).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

from conformance.scenarios import (
    AckHeld,
    Behaviour,
    Close,
    Crash,
    KeySet,
    NackHeld,
    Open,
    Pause,
    Publish,
    Redeliver,
    RestartBroker,
    Resume,
    SetBehaviour,
    Step,
)
from conformance.soak.plan import SoakPlan, parse_key_distribution

__all__ = ["PRODUCERS_CLIENT", "NetFault", "SoakGenerator", "Timed"]

#: The client name of the producers' shared client in :class:`NetFault` (consumers have one client each).
PRODUCERS_CLIENT = "producers"


@dataclass(frozen=True, slots=True)
class NetFault:
    """A nemesis action on the connections of one client, due ``at_ms`` after the run began.

    ``kind``: ``cut`` (close its connections once), ``stall`` (forward nothing), ``delay`` (add ``delay_ms``
    to everything forwarded), ``partition`` (cut, and refuse new connections); the last three end (heal)
    ``seconds`` later.  The client is chosen when the fault is due, among the clients then open:
    ``pick`` (in [0, 1)) indexes the consumers in open order followed by :data:`PRODUCERS_CLIENT`.
    """

    at_ms: int
    kind: str
    pick: float
    seconds: float = 0.0
    delay_ms: int = 0

    def client(self, consumers: list[str]) -> str:
        """The client this fault touches, given the consumer handles open now (in open order)."""
        clients = [*consumers, PRODUCERS_CLIENT]
        return clients[min(int(self.pick * len(clients)), len(clients) - 1)]


@dataclass(frozen=True, slots=True)
class Timed:
    """A step and when it is due, in ms after the run began."""

    at_ms: int
    step: Step


_BEHAVIOURS = ("ack", "ack", "ack", "ack_after", "slow", "hold", "nack")
_KEY_FIELDS = ("partition_key", "partition_key", "partition_key", "ordering_key", "both", "none")
_BATCHING = ("none", "none", "key_based")
#: Of the batched publishes, the share sent with default (mixed-key) batching instead of key-based.
_DEFAULT_BATCHING_SHARE = 0.5
_MODE_TAG = {"none": "sync", "key_based": "kb", "default": "batch"}
_CHURN = ("join", "leave", "crash", "behaviour", "behaviour", "redeliver", "pause")
#: How often a join takes the broker name of a consumer already open (same-name consumers, which a ring keys
#: by name and an index since apache/pulsar#23327; one closing must not move the other's keys).
_SAME_NAME_SHARE = 0.15
#: Limits on the consumer count around the plan's ``consumers``.
_SLACK = 2


class SoakGenerator:
    """``iter(SoakGenerator(plan, can_crash=..., can_restart=...))`` -> :class:`Timed` steps, forever.

    ``crashable`` is the set of handles the generator may crash later: the driver runs those where a crash can be
    injected (a consumer process of its own), and only those.
    """

    def __init__(self, plan: SoakPlan, *, can_crash: bool, can_restart: bool) -> None:
        self.plan = plan
        self.can_crash = can_crash
        self.can_restart = can_restart
        self.rng = random.Random(plan.seed)
        #: the draws of the dimensions added later (default batches, same-name joins) come from a source of
        #: their own, so a plan's other steps are what they were before those existed
        self.dimension_rng = random.Random(plan.seed * 104_729 + 3)
        self.crashable: set[str] = set()
        self.live: list[str] = []  #: open consumer handles, in open order
        self.names: dict[str, str] = {}  #: open handle -> the consumer name it subscribed with
        self.behaviours: dict[str, str] = {}
        self.paused: set[str] = set()
        self._opened = 0
        self._published = 0
        self._queue: list[tuple[int, int, str, str]] = []  # (due_ms, tie, what, who)
        self._tie = itertools.count()
        allowed = plan.behaviours or _BEHAVIOURS
        self._behaviour_labels = tuple(label for label in _BEHAVIOURS if label in allowed)
        self._key_names = [f"key-{i:04d}" for i in range(plan.keys)]
        kind, exponent = parse_key_distribution(plan.key_distribution)
        self._cum: list[float] | None = None
        if kind == "zipf":
            total, cum = 0.0, []
            for rank in range(1, plan.keys + 1):
                total += 1.0 / rank**exponent
                cum.append(total)
            self._cum = cum

    @property
    def published(self) -> int:
        """Messages in the publish steps yielded so far."""
        return self._published

    # --- the stream ----------------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Timed]:
        plan, rng = self.plan, self.rng
        for _ in range(plan.consumers):
            yield Timed(0, self._open())
        self._schedule(0, "publish")
        if plan.churn_per_min > 0:
            self._schedule(self._exp(60_000 / plan.churn_per_min), "churn")
        self._schedule(1_000, "ack_held")
        # the first fault of each kind comes early (within one mean interval, or the first third of the run), so
        # that every kind asked for is injected in every run; the following ones come as a Poisson process
        first_ms = self._first_fault_ms()
        if "restart" in plan.faults and self.can_restart:
            self._schedule(rng.randint(1, max(1, round(first_ms))), "restart")
        while True:
            at, _, what, who = heapq.heappop(self._queue)
            if what == "publish":
                if plan.messages is not None and self._published >= plan.messages:
                    continue  # the message bound is reached: no more publishes (the rest goes on until stopped)
                step = self._publish()
                self._schedule(at + max(1, round(step.count * 1000 / plan.rate)), "publish")
                yield Timed(at, step)
            elif what == "churn":
                self._schedule(at + self._exp(60_000 / plan.churn_per_min), "churn")
                yield from (Timed(at, s) for s in self._churn(at))
            elif what == "ack_held":
                self._schedule(at + rng.randint(500, 2_500), "ack_held")
                for handle in self.live:
                    if self.behaviours.get(handle) == "hold":
                        yield Timed(at, AckHeld(handle))
            elif what == "resume":
                if who in self.paused:
                    self.paused.discard(who)
                    yield Timed(at, Resume(who))
            elif what == "restart":
                self._schedule(at + self._exp(plan.fault_every_s * 2_000), "restart")
                yield Timed(at, RestartBroker(kill=rng.random() < 0.5))

    def nemesis(self) -> Iterator[NetFault]:
        """The network faults of the plan, in due order, forever (from a random source of their own, so that
        they do not shift the workload's steps).  The first of each kind comes early, like restarts."""
        plan = self.plan
        if not plan.net_faults:
            return
        rng = random.Random(plan.seed * 7919 + 17)
        first_ms = self._first_fault_ms()
        queue = [(rng.randint(1, max(1, round(first_ms))), n, kind) for n, kind in enumerate(plan.net_faults)]
        heapq.heapify(queue)
        tie = itertools.count(len(queue))
        while True:
            at, _, kind = heapq.heappop(queue)
            heapq.heappush(queue, (at + self._exp_with(rng, plan.fault_every_s * 1_000), next(tie), kind))
            seconds = 0.0 if kind == "cut" else round(plan.fault_seconds * rng.uniform(0.5, 1.5), 3)
            delay = plan.delay_ms if kind == "delay" else 0
            yield NetFault(at, kind, rng.random(), seconds, delay)

    # --- pieces --------------------------------------------------------------------------------------------

    def _schedule(self, at_ms: int, what: str, who: str = "") -> None:
        heapq.heappush(self._queue, (at_ms, next(self._tie), what, who))

    def _first_fault_ms(self) -> float:
        plan = self.plan
        expected_s = plan.duration_s if plan.duration_s is not None else (plan.messages or 0) / plan.rate
        return min(plan.fault_every_s * 1_000, expected_s * 1_000 / 3)

    @staticmethod
    def _exp_with(rng: random.Random, mean_ms: float) -> int:
        return max(1, round(rng.expovariate(1.0 / mean_ms)))

    def _exp(self, mean_ms: float) -> int:
        """An exponential wait (a Poisson process) of mean ``mean_ms``, at least 1 ms."""
        return max(1, round(self.rng.expovariate(1.0 / mean_ms)))

    def _key(self) -> str:
        if self._cum is None:
            return self._key_names[self.rng.randrange(len(self._key_names))]
        point = self.rng.random() * self._cum[-1]
        return self._key_names[min(bisect.bisect_left(self._cum, point), len(self._key_names) - 1)]

    def _publish(self) -> Publish:
        plan, rng = self.plan, self.rng
        count = rng.randint(1, 2 * plan.batch - 1)
        if plan.messages is not None:
            count = min(count, plan.messages - self._published)
        self._published += count
        key_field = rng.choice(_KEY_FIELDS)
        batching = rng.choice(_BATCHING)
        if key_field == "none" or plan.publish == "sync":
            batching = "none"
        if batching == "key_based" and self.dimension_rng.random() < _DEFAULT_BATCHING_SHARE:
            batching = "default"
        if batching == "none":
            keys = tuple(self._key() for _ in range(count))
        else:
            # one message per key in a batch: a batch is acknowledged and redelivered as a whole (no batch-index
            # acknowledgement), so a batch of several messages, partly acknowledged and then released, comes back
            # whole, and the checker would take the acknowledged ones for redeliveries after an ack
            distinct: dict[str, None] = {}
            for _ in range(4 * count):
                distinct.setdefault(self._key(), None)
                if len(distinct) >= count:
                    break
            keys = tuple(distinct)
            self._published -= count - len(keys)
            count = len(keys)
        # a producer handle per (producer, batching mode): a producer's settings are fixed once it is created
        producer = f"p{rng.randint(1, plan.producers)}-{_MODE_TAG[batching]}"
        return Publish(
            count=count,
            keys=KeySet(count=len(keys), names=keys),
            producer=producer,
            key_field=key_field,
            batching=batching,
        )

    def _behaviour(self) -> tuple[str, Behaviour, int | None]:
        """(label, behaviour, receiver queue or None for the plan's)."""
        rng = self.rng
        label = rng.choice(self._behaviour_labels)
        if label == "ack_after":
            return label, Behaviour("ack_after", delay_ms=rng.randint(5, 300)), None
        if label == "slow":
            return label, Behaviour("ack_after", delay_ms=rng.randint(500, 2_000)), rng.randint(5, 20)
        if label == "hold":
            return label, Behaviour("hold"), None
        if label == "nack":
            return label, Behaviour("nack", nack_times=1), None
        return label, Behaviour("ack"), None

    def _open(self) -> Open:
        self._opened += 1
        handle = f"c{self._opened}"
        label, behaviour, queue = self._behaviour()
        # a crashable consumer runs in a process of its own (a crash is a kill), which costs a pipe round trip per
        # call: only when crashes can come at all (churn); the draw is made either way, so plans that differ only
        # there keep the same steps
        if self.can_crash and self.rng.random() < 0.3 and self.plan.churn_per_min > 0:
            self.crashable.add(handle)
        same_name = self.dimension_rng.random() < _SAME_NAME_SHARE
        name = self.names[self.dimension_rng.choice(self.live)] if same_name and self.live else handle
        self.live.append(handle)
        self.names[handle] = name
        self.behaviours[handle] = "hold" if behaviour.kind == "hold" else label
        return Open(
            handle,
            behaviour=behaviour,
            receiver_queue=queue or self.plan.receiver_queue,
            name=None if name == handle else name,
        )

    def _leave(self, handle: str) -> None:
        self.live.remove(handle)
        self.names.pop(handle, None)
        self.behaviours.pop(handle, None)
        self.paused.discard(handle)

    def _churn(self, at: int) -> list[Step]:
        plan, rng = self.plan, self.rng
        low, high = max(1, plan.consumers - _SLACK), plan.consumers + _SLACK
        what = rng.choice(_CHURN)
        if what == "join" or not self.live:
            return [self._open()] if len(self.live) < high else []
        handle = rng.choice(self.live)
        if what == "leave" and len(self.live) > low:
            self._leave(handle)
            return [Close(handle)]
        if what == "crash" and len(self.live) > low:
            crashable = [h for h in self.live if h in self.crashable]
            if crashable:
                victim = rng.choice(crashable)
                self._leave(victim)
                return [Crash(victim)]
            return []
        if what == "redeliver":
            return [Redeliver(handle)]
        if what == "pause" and handle not in self.paused:
            self.paused.add(handle)
            self._schedule(at + rng.randint(200, 3_000), "resume", handle)
            return [Pause(handle)]
        if what == "behaviour":
            label, behaviour, _ = self._behaviour()
            steps: list[Step] = []
            if self.behaviours.get(handle) == "hold":  # what it held is settled first: acked, or nacked
                steps.append(AckHeld(handle) if rng.random() < 0.7 else NackHeld(handle))
            self.behaviours[handle] = label
            steps.append(SetBehaviour(handle, behaviour))
            return steps
        return []
