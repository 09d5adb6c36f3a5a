"""Synthetic delivery traces: a small, correct Key_Shared broker with bugs that can be planted.

The checkers are proven on traces with *planted* violations (each kind must be found) and on clean traces
(nothing may be found).  :func:`synthesize` simulates producers, a subscription and its consumers under a
deliberately conservative dispatch rule, so a clean run satisfies every property the checkers judge:

* a message of key k goes to the consumer the reference selector names (or, without a selector, a fixed
  hash of the key over the live consumers), only when no other consumer holds k, and only when every earlier
  message of k is acknowledged or held by that consumer (unless a nack or redeliver exempted the key);
* releases (nack, redeliver, close, crash, fault) make messages pending again; the drain delivers and
  acknowledges everything;
* every other crash is followed by a ``gone`` (the broker removes a crashed consumer at once here, and the
  harness saw it); after a crash without one, no misassignment is planted (a membership with the crashed
  consumer still in it may explain it).

It also produces the recording races a real harness sees: publish receipts logged after the receive, receives
logged just after their consumer's close ("late" receives), acks and nacks in any order, messages in batches,
the same topic spelt in several ways, partitioned topics.  :func:`fuzz` produces well-formed traces with
arbitrary semantics (acks of unknown messages, duplicate deliveries...), for differential testing.

Everything is a pure function of its seed (``random.Random``), so a failing example is reproducible.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event
from conformance.trace.header import SelectorSpec, SubscriptionSpec, TraceHeader
from conformance.violations import Kind

__all__ = ["PLANTABLE", "SynthConfig", "Synthesized", "fuzz", "synthesize"]

#: The kinds :func:`synthesize` can plant; the others have planted tests of their own (accepted_conflicting_open:
#: tests/unit/test_check_assignment.py; skipped_after_failover and replicated_cursor_ahead:
#: tests/quality/test_planted_failover.py, tests/unit/test_check_replication_snapshots.py;
#: outside_sticky_ranges and stalled are judged by the cases: tests/model/test_known_bugs_matrix.py).
PLANTABLE: frozenset[Kind] = frozenset(
    {
        Kind.KEY_OVERLAP,
        Kind.OUT_OF_ORDER,
        Kind.UNDELIVERED,
        Kind.REDELIVERED_AFTER_ACK,
        Kind.DUPLICATE_PUBLISH,
        Kind.UNEXPECTED_MESSAGE,
        Kind.MISASSIGNED,
        Kind.LOST_WRITE,
        Kind.STORED_BELOW_HIGHEST,
    }
)


@dataclass(frozen=True)
class SynthConfig:
    """The shape of a synthetic run."""

    messages: int = 30
    keys: int = 4
    consumers: int = 3  #: consumers opened at the start
    max_consumers: int = 4
    producers: int = 2
    partitions: int = 0  #: 0: a non-partitioned topic; n: n partitions
    selector: str | None = "auto-split"
    pulsar_version: str = "4.0"
    deduplication: bool = True
    churn: float = 0.06  #: per step, chance of a membership change
    nack_rate: float = 0.05
    redeliver_rate: float = 0.02
    late_receive_rate: float = 0.3  #: chance that a close/crash races with a receive
    receipt_delay_rate: float = 0.2  #: chance that a publish receipt is logged a few steps late
    batch_rate: float = 0.2  #: chance that a publish joins the previous message's batch
    #: chance that a batch is a default one, mixing keys (routed whole by its first message's key); else key-based
    mixed_batch_rate: float = 0.5
    fault_rate: float = 0.0
    drain: bool = True
    #: acks and nacks carry their message's key, as this project's recorders write them (the Spark engine then
    #: routes a trace by key); else they carry none, as some other recorders write them
    keyed_acks: bool = False
    #: chance that a crash loses each ack its consumer logged since its last redeliver or crash (issue 24): the
    #: broker never saw it and redelivers the message, in order (a crash keeps it); non-batch messages only
    lost_ack_rate: float = 0.0
    plant: frozenset[Kind] = field(default_factory=frozenset)


@dataclass
class Synthesized:
    header: TraceHeader
    events: list[Event]
    planted: dict[Kind, int]


@dataclass
class _Msg:
    n: int
    key: str
    msg_id: str
    pos: tuple[int, int, int]
    partition: int
    producer: str
    seq: int
    uid: str
    t0: int = 0
    state: str = "pending"  # pending | held | acked | lost
    holder: str | None = None
    receipt_logged: bool = False
    acker: str | None = None
    ack_index: int = -1
    #: the key the broker dispatches it by: its own, or for a batch message its entry's first message's
    #: (default batching: the entry goes whole to that key's consumer; the trace still records the own key)
    sticky: str = ""
    known: bool = False  #: an event of it is in the trace (its receipt or a receive)


class _Sim:
    def __init__(self, seed: int, config: SynthConfig) -> None:
        self.rnd = random.Random(seed)
        self.cfg = config
        selector = None
        if config.selector is not None:
            selector = SelectorSpec(config.selector, config.pulsar_version)
        header = TraceHeader(
            target="synthetic",
            subscription=SubscriptionSpec("s"),
            pulsar_version=config.pulsar_version,
            deduplication=config.deduplication,
            selector=selector,
            seed=seed,
        )
        self.b = TraceBuilder(header, topic="orders", subscription="s", step=10)
        self.live: list[str] = []  # consumers in join order
        self.opened = 0
        self.msgs: list[_Msg] = []
        self.by_id: dict[str, _Msg] = {}
        self.entry = 0
        self.seq: dict[str, int] = {}
        self.exempt_msgs: set[int] = set()  # messages nacked or released by redeliver, not acked since
        self.last_disarm: dict[str, int] = {}  # consumer -> index of its last redeliver or crash
        self.last_change_open = True
        self.pending_receipts: list[tuple[int, _Msg, int]] = []
        self.planted: dict[Kind, int] = {}
        self.to_plant = set(config.plant)
        self.no_more_opens = False
        self.batch_mixed = False  #: the open batch is a default one (its messages' keys differ)
        self.faulted = False
        self.crashed = False  # a crash without a gone: the broker removes it at an unknown later moment
        self.crashes = 0
        self.last_change_t = 0
        self.acked_once: list[_Msg] = []
        self.sel: Any = None
        self.names: dict[str, int] = {}
        if config.selector is not None:
            from reference_model.selectors import make_selector

            self.sel = make_selector(config.selector, config.pulsar_version)

    # --- topic spellings ---------------------------------------------------------------------------------
    def topic_for(self, partition: int) -> str:
        if partition < 0:
            return self.rnd.choice(["orders", "persistent://public/default/orders", "public/default/orders"])
        return self.rnd.choice(
            [f"orders-partition-{partition}", f"persistent://public/default/orders-partition-{partition}"]
        )

    def receive_msg_id(self, m: _Msg) -> tuple[str, str]:
        """(topic, msg_id) as a receive might spell them: the partition in the id or only in the name."""
        if m.partition >= 0 and self.rnd.random() < 0.5:
            ledger, entry, _p, batch = m.msg_id.split(":")
            return f"orders-partition-{m.partition}", f"{ledger}:{entry}:-1:{batch}"
        return self.topic_for(m.partition), m.msg_id

    # --- membership --------------------------------------------------------------------------------------
    def open(self) -> None:
        name = f"c{self.opened}"
        self.opened += 1
        if self.sel is not None:
            from reference_model.selectors import ConsumerRef

            self.sel.add(ConsumerRef(name, len(self.b.events)))
            self.names[name] = len(self.b.events)
        self.b.open(name)
        self.live.append(name)
        self.last_change_t = self.b.t
        self.last_change_open = True

    def leave(self, name: str, how: str) -> None:
        late = None
        if self.rnd.random() < self.cfg.late_receive_rate:
            late = self.eligible_for(name)
            if late is not None:
                late.known = True
        for m in self.msgs:
            if m.state == "held" and m.holder == name:
                m.state, m.holder = "pending", None
        if how == "crash" and self.cfg.lost_ack_rate:
            since = self.last_disarm.get(name, -1)
            for m in self.msgs:
                if (
                    m.state == "acked"
                    and m.acker == name
                    and m.ack_index > since
                    and m.pos[2] < 0
                    and self.rnd.random() < self.cfg.lost_ack_rate
                ):
                    m.state = "pending"  # the crash lost the ack: the broker redelivers it
        gone = False
        if how == "crash":
            self.last_disarm[name] = len(self.b.events)
            self.crashes += 1
            gone = self.crashes % 2 == 1  # every other crash: the harness saw the broker remove it (at once here)
            self.crashed = self.crashed or not gone
        getattr(self.b, how)(name)
        self.live.remove(name)
        self.last_change_open = False
        if self.sel is not None:
            from reference_model.selectors import ConsumerRef

            self.sel.remove(ConsumerRef(name, self.names.pop(name)))
        self.last_change_t = self.b.t
        if late is not None:  # dispatched just before the close; its receive is logged just after
            topic, msg_id = self.receive_msg_id(late)
            self.b.receive(name, late.key, msg_id, uid=late.uid, topic=topic)
        if gone:
            self.b.gone(name)

    # --- dispatch ----------------------------------------------------------------------------------------
    def selected(self, key: str) -> str | None:
        if not self.live:
            return None
        if self.sel is not None:
            ref = self.sel.select_key(key.encode("utf-8"))
            return None if ref is None else ref.name
        return sorted(self.live)[sum(key.encode()) % len(self.live)]

    def blocked(self, m: _Msg, consumer: str) -> bool:
        same = [o for o in self.msgs if o.sticky == m.sticky and o.partition == m.partition and o is not m]
        if m.pos[2] > 0 and not self.msgs[m.n - m.pos[2]].known:
            return True  # an entry reaches a consumer in order: its first message's receive is logged first
        if any(o.state == "held" and o.holder != consumer for o in same):
            return True
        if any(o.n in self.exempt_msgs and o.pos < m.pos for o in same):
            return False  # an earlier message was nacked or redelivered: no ordering promise for the key
        return any(o.pos < m.pos and o.state in ("pending", "lost") for o in same)

    def eligible_for(self, consumer: str) -> _Msg | None:
        for m in self.msgs:
            if m.state == "pending" and self.selected(m.sticky) == consumer and not self.blocked(m, consumer):
                return m
        return None

    def deliver(self, m: _Msg, consumer: str) -> None:
        m.state, m.holder, m.known = "held", consumer, True
        topic, msg_id = self.receive_msg_id(m)
        self.b.receive(consumer, m.key, msg_id, uid=m.uid, topic=topic)

    def dispatch_one(self) -> bool:
        candidates = [m for m in self.msgs if m.state == "pending"]
        self.rnd.shuffle(candidates)
        for m in candidates:
            c = self.selected(m.sticky)
            if c is not None and not self.blocked(m, c):
                self.deliver(m, c)
                return True
        return False

    # --- producers ---------------------------------------------------------------------------------------
    def publish(self, *, resend_of: _Msg | None = None, fixed: tuple[str, int, int] | None = None) -> _Msg:
        """A stored message: new, a ``resend_of`` one (stored again), or ``fixed`` = (producer, seq, partition):
        unbatched, its receipt logged at once."""
        cfg = self.cfg
        key = f"k{self.rnd.randrange(cfg.keys)}" if resend_of is None else resend_of.key
        producer = f"p{self.rnd.randrange(cfg.producers)}" if resend_of is None else resend_of.producer
        if fixed is not None:
            producer, seq, partition = fixed
        elif resend_of is None:
            seq = self.seq.get(producer, 0)
            self.seq[producer] = seq + 1
        else:
            seq = resend_of.seq
        if fixed is None:
            partition = -1 if cfg.partitions == 0 else self.rnd.randrange(cfg.partitions)
        prev = self.msgs[-1] if self.msgs else None
        if fixed is None and self.rnd.random() < cfg.batch_rate:
            if prev is not None and prev.pos[2] >= 0 and prev.partition == partition:
                ledger, entry, batch = prev.pos[0], prev.pos[1], prev.pos[2] + 1  # joins the open batch
                if resend_of is None and not self.batch_mixed:
                    key = prev.key  # a key-based batch: one key
            else:
                ledger, entry, batch = 7, self.entry, 0  # starts a batch
                self.entry += 1
                self.batch_mixed = self.rnd.random() < cfg.mixed_batch_rate
        else:
            ledger, entry, batch = 7, self.entry, -1
            self.entry += 1
        msg_id = f"{ledger}:{entry}:{partition}:{batch}"
        uid = f"u{len(self.msgs)}" if resend_of is None else resend_of.uid
        t0 = self.b.t - 1
        m = _Msg(len(self.msgs), key, msg_id, (ledger, entry, batch), partition, producer, seq, uid, t0)
        m.sticky = prev.sticky if batch > 0 and prev is not None else key
        self.msgs.append(m)
        self.by_id[msg_id] = m
        # a batch's receipts come in one callback, in order: one delayed delays the rest of its entry
        behind = [d for d, o, _ in self.pending_receipts if batch > 0 and o is prev]
        if fixed is None and (behind or self.rnd.random() < cfg.receipt_delay_rate):
            self.pending_receipts.append((max([self.rnd.randrange(1, 6), *behind]), m, t0))
        else:
            self.log_receipt(m, t0)
        return m

    def log_receipt(self, m: _Msg, t0: int) -> None:
        self.b.publish(m.key, m.msg_id, producer=m.producer, seq=m.seq, uid=m.uid, t0=t0,
                       topic=self.topic_for(m.partition))  # fmt: skip
        m.receipt_logged = m.known = True

    def tick_receipts(self, flush: bool = False) -> None:
        still = []
        for delay, m, t0 in self.pending_receipts:
            if flush or delay <= 1:
                self.log_receipt(m, t0)
            else:
                still.append((delay - 1, m, t0))
        self.pending_receipts = still

    # --- consumers ---------------------------------------------------------------------------------------
    def held_by(self, consumer: str) -> list[_Msg]:
        return [m for m in self.msgs if m.state == "held" and m.holder == consumer]

    def ack(self, m: _Msg) -> None:
        consumer = m.holder
        assert consumer is not None
        m.acker, m.ack_index = consumer, len(self.b.events)
        self.b.ack(consumer, m.msg_id, key=self.ack_key(m), topic=self.topic_for(m.partition))
        m.state, m.holder = "acked", None
        self.acked_once.append(m)
        self.exempt_msgs.discard(m.n)

    def ack_key(self, m: _Msg) -> str | None:
        """The key an ack or nack of ``m`` carries (see :attr:`SynthConfig.keyed_acks`)."""
        return m.key if self.cfg.keyed_acks else None

    def make_exempt(self, m: _Msg) -> None:
        self.exempt_msgs.add(m.n)

    def consumer_step(self) -> None:
        holders = [c for c in self.live if self.held_by(c)]
        if not holders:
            return
        c = self.rnd.choice(holders)
        held = self.held_by(c)
        roll = self.rnd.random()
        if roll < self.cfg.nack_rate:
            m = self.rnd.choice(held)
            self.b.nack(c, m.msg_id, key=self.ack_key(m), topic=self.topic_for(m.partition))
            m.state, m.holder = "pending", None
            self.make_exempt(m)
        elif roll < self.cfg.nack_rate + self.cfg.redeliver_rate:
            self.last_disarm[c] = len(self.b.events)
            self.b.redeliver(c)
            for m in held:
                m.state, m.holder = "pending", None
                self.make_exempt(m)
        else:
            self.ack(self.rnd.choice(held))

    def fault(self) -> None:
        self.b.fault()
        self.faulted = True
        for m in self.msgs:
            if m.state == "held":
                m.state, m.holder = "pending", None

    # --- planting ----------------------------------------------------------------------------------------
    def try_plant(self) -> None:
        for kind in sorted(self.to_plant, key=lambda k: k.value):
            if getattr(self, f"_plant_{kind.value}")():
                self.to_plant.discard(kind)
                self.planted[kind] = self.planted.get(kind, 0) + 1
                return

    def _plant_key_overlap(self) -> bool:
        for m in self.msgs:
            if m.state != "pending":
                continue
            others = [o for o in self.msgs if o.sticky == m.sticky and o.partition == m.partition and o.state == "held"]
            if not others or (m.pos[2] > 0 and not self.msgs[m.n - m.pos[2]].known):
                continue
            intruders = [c for c in self.live if c != others[0].holder]
            if intruders:
                self.deliver(m, self.rnd.choice(intruders))
                return True
        return False

    def _plant_out_of_order(self) -> bool:
        if self.exempt_msgs:
            return False
        for m in self.msgs:
            if m.state != "pending" or not m.receipt_logged:
                continue
            same = [o for o in self.msgs if o.sticky == m.sticky and o.partition == m.partition]
            for later in same:
                if later.pos > m.pos and later.state == "pending" and self.msgs[later.n - max(later.pos[2], 0)].known:
                    c = self.selected(later.sticky)
                    if c is not None and not any(o.state == "held" and o.holder != c for o in same):
                        self.deliver(later, c)
                        return True
        return False

    def _plant_undelivered(self) -> bool:
        for m in self.msgs:
            if m.state == "pending" and m.receipt_logged:
                m.state = "lost"
                return True
        return False

    def _plant_redelivered_after_ack(self) -> bool:
        if self.faulted:
            return False
        for m in self.acked_once:
            if m.state == "acked" and self.last_disarm.get(m.acker or "", -1) < m.ack_index:
                # A batch comes back whole until every message of it is acknowledged (no batch-index acks): only
                # a message whose whole batch is acknowledged is a planted redelivery after acknowledgement.
                entry = [o for o in self.msgs if o.partition == m.partition and o.pos[:2] == m.pos[:2]]
                if any(o.state != "acked" for o in entry):
                    continue
                c = self.selected(m.sticky)
                same = [o for o in self.msgs if o.sticky == m.sticky and o.partition == m.partition]
                if c is not None and not any(o.state == "held" and o.holder != c for o in same):
                    self.deliver(m, c)
                    return True
        return False

    def _plant_duplicate_publish(self) -> bool:
        for m in self.msgs:
            if m.receipt_logged and m.state != "lost":
                self.publish(resend_of=m)
                return True
        return False

    def _plant_unexpected_message(self) -> bool:
        c = self.live[0] if self.live else None
        if c is None:
            return False
        ghost = _Msg(-1, "ghost", f"9:{len(self.b.events)}:-1:-1", (9, 0, -1), -1, "nobody", 0, "ghost-uid")
        self.b.receive(c, ghost.key, ghost.msg_id, uid=ghost.uid)
        self.b.ack(c, ghost.msg_id, key=self.ack_key(ghost))
        return True

    def _plant_lost_write(self) -> bool:
        """The broker answers a new (producer, seq) with the duplicate receipt and stores nothing."""
        producer = f"p{self.rnd.randrange(self.cfg.producers)}"
        seq = self.seq.get(producer, 0)
        self.seq[producer] = seq + 1
        partition = -1 if self.cfg.partitions == 0 else self.rnd.randrange(self.cfg.partitions)
        self.b.publish(f"k{self.rnd.randrange(self.cfg.keys)}", f"-1:-1:{partition}:-1", producer=producer,
                       seq=seq, uid=f"lost{len(self.b.events)}", t0=self.b.t - 1,
                       topic=self.topic_for(partition))  # fmt: skip
        return True

    def _plant_stored_below_highest(self) -> bool:
        """With deduplication on, the broker stores a new id below one its producer had stored: s + 1, then s."""
        if not self.b.header.deduplication:
            return False
        producer = f"p{self.rnd.randrange(self.cfg.producers)}"
        seq = self.seq.get(producer, 0)
        self.seq[producer] = seq + 2
        partition = -1 if self.cfg.partitions == 0 else self.rnd.randrange(self.cfg.partitions)
        self.publish(fixed=(producer, seq + 1, partition))
        self.publish(fixed=(producer, seq, partition))
        return True

    def _plant_misassigned(self) -> bool:
        if self.sel is None or len(self.live) < 2 or self.faulted or self.crashed:
            return False  # after a crash without a gone, a membership with the crashed consumer in it may explain any

        for m in self.msgs:
            if m.state != "pending" or not m.receipt_logged:
                continue
            c = self.selected(m.sticky)
            wrong = [x for x in self.live if x != c]
            same = [o for o in self.msgs if o.sticky == m.sticky and o.partition == m.partition]
            if any(o.state == "held" for o in same):
                continue
            # only the current membership may have dispatched it: sent after the last change, which was a
            # subscribe (a close may take effect late), and no later subscribe may excuse it
            if (
                c is not None
                and wrong
                and not self.blocked(m, c)
                and self.last_change_open
                and m.t0 > self.last_change_t
            ):
                self.no_more_opens = True
                self.deliver(m, self.rnd.choice(wrong))
                return True
        return False

    # --- the run -----------------------------------------------------------------------------------------
    def run(self) -> Synthesized:
        cfg = self.cfg
        for _ in range(cfg.consumers):
            self.open()
        published = 0
        steps = 0
        while published < cfg.messages or steps < cfg.messages:
            steps += 1
            self.tick_receipts()
            roll = self.rnd.random()
            if roll < cfg.churn:
                self.churn()
            elif roll < cfg.churn + cfg.fault_rate:
                self.fault()
            elif published < cfg.messages and roll < 0.45:
                self.publish()
                published += 1
            elif roll < 0.75:
                self.dispatch_one()
            else:
                self.consumer_step()
            if self.to_plant and self.rnd.random() < 0.15:
                self.try_plant()
            if steps > 20 * cfg.messages + 100:
                break
        while self.to_plant and self.msgs:
            before = set(self.to_plant)
            self.try_plant()
            if self.to_plant == before and not self.dispatch_one():
                break
        self.tick_receipts(flush=True)
        if cfg.drain:
            self.drain()
        self.b.end(drained=cfg.drain)
        return Synthesized(self.b.header, self.b.events, dict(self.planted))

    def churn(self) -> None:
        roll = self.rnd.random()
        if (len(self.live) < self.cfg.max_consumers and roll < 0.5 and not self.no_more_opens) or not self.live:
            if not self.no_more_opens:
                self.open()
            return
        if len(self.live) > 1:
            self.leave(self.rnd.choice(self.live), "close" if roll < 0.8 else "crash")

    def drain(self) -> None:
        if not self.live:
            self.no_more_opens = False
            self.open()
        for _ in range(10 * len(self.msgs) + 50):
            progressed = False
            for c in list(self.live):
                for m in self.held_by(c):
                    self.ack(m)
                    progressed = True
            if self.dispatch_one():
                progressed = True
            if not progressed:
                break


def synthesize(seed: int, config: SynthConfig | None = None, **overrides: Any) -> Synthesized:
    """One synthetic run; ``overrides`` replace fields of ``config`` (e.g. ``plant={Kind.KEY_OVERLAP}``)."""
    cfg = replace(config or SynthConfig(), **overrides)
    if cfg.plant:
        cfg = replace(cfg, plant=frozenset(cfg.plant))
    return _Sim(seed, cfg).run()


def fuzz(
    seed: int,
    *,
    events: int = 60,
    consumers: int = 3,
    messages: int = 8,
    selector: str | None = "auto-split",
    faults: bool = True,
    keyed_acks: bool = False,
) -> Synthesized:
    """A well-formed trace with arbitrary semantics: any op on any consumer and message, in any order
    (``keyed_acks``: acks and nacks carry their message's key, as recorders write them, and then the messages
    of a batch entry share its key and a stray uid is one key's, so that a split by key can hold)."""
    rnd = random.Random(seed)
    header = TraceHeader(
        target="fuzz",
        subscription=SubscriptionSpec("s"),
        deduplication=rnd.random() < 0.5,
        selector=None if selector is None else SelectorSpec(selector, "4.0"),
        seed=seed,
    )
    b = TraceBuilder(header, topic="t", subscription="s", step=rnd.choice([0, 1, 10]))
    names = [f"c{n}" for n in range(consumers)]
    live: set[str] = set()
    ids = [f"3:{n}:-1:-1" for n in range(messages)] + ["3:1:-1:0", "3:1:-1:1"]
    keys = ["a", "b", None]
    key_of = {m: rnd.choice(keys) for m in ids}
    if keyed_acks:  # key-based batching; a uid nobody published stays with one key
        key_of["3:1:-1:0"] = key_of["3:1:-1:1"] = key_of["3:1:-1:-1"]

    def own_seqs(m: str) -> int:  # with keyed_acks, each key's sequence ids apart
        return 4 * keys.index(key_of[m]) if keyed_acks else 0

    def stray(m: str) -> str:
        return f"x{key_of[m]}{rnd.randrange(3)}" if keyed_acks else f"x{rnd.randrange(3)}"

    for _ in range(events):
        roll = rnd.random()
        c = rnd.choice(names)
        m = rnd.choice(ids)
        if roll < 0.12:
            if c in live:
                b.close(c) if rnd.random() < 0.7 else b.crash(c)
                live.discard(c)
            else:
                result = "ok" if rnd.random() < 0.9 else "fail"
                b.open(c, subscription=rnd.choice(["s", "s", "s2"]), result=result)
                if result == "ok":
                    live.add(c)
        elif roll < 0.35:
            result = rnd.choice(["ok", "ok", "ok", "info", "fail"])
            msg = m if rnd.random() < 0.9 else "-1:-1:-1:-1"
            b.publish(key_of[m], msg, producer=rnd.choice(["p", "q"]), seq=rnd.randrange(4) + own_seqs(m),
                      uid=rnd.choice([b.uid_of(m), stray(m)]), result=result,
                      t0=b.t - rnd.randrange(0, 30))  # fmt: skip
        elif roll < 0.6:
            uid = rnd.choice([b.uid_of(m), stray(m), None])
            if uid is None:
                b.add("receive", consumer=c, topic=rnd.choice(["t", "persistent://public/default/t"]), key=key_of[m],
                      msg_id=m)  # fmt: skip
            else:
                b.receive(c, key_of[m], m, uid=uid)
        elif roll < 0.78:
            b.ack(c, m, key=key_of[m] if keyed_acks else None)
        elif roll < 0.86:
            b.nack(c, m, key=key_of[m] if keyed_acks else None)
        elif roll < 0.92:
            b.redeliver(c)
        elif roll < 0.93 and faults:
            b.fault()
        elif live:  # a receive right after an ack: redelivery checks get something to judge
            c = rnd.choice(sorted(live))
            b.ack(c, m, key=key_of[m] if keyed_acks else None)
            b.receive(rnd.choice(sorted(live)), key_of[m], m)
    b.end(drained=rnd.random() < 0.8)
    return Synthesized(header, b.events, {})
