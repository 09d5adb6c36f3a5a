"""Every workload dimension of issue 24 is reachable by the generator's strategies and runs on the model.

For each dimension a move list and a shape that Hypothesis' strategies can draw (every integer within the
ranges ``conformance.generated.strategies.moves()`` and ``shapes()`` draw from) give a program of that shape; it
is written as a scenario file and loaded back (a shrunk program is such a file), then run on the model
(Pulsar 4.0), where it must be valid.  ``python -m pytest_keyshared.generated_sweep`` runs them in random
combination (``tests/unit/test_generated_lines.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conformance.generated.program import (
    EDGE_KEYS,
    MANY_CONSUMERS,
    MAX_AMOUNT,
    SHAPE_CHOICES,
    SHAPE_DIMENSIONS,
    TAIL_KEYS,
    GeneratorOptions,
    Move,
    program_from_moves,
)
from conformance.scenarios import (
    HASH_RANGE_MAX,
    AckHeld,
    Close,
    Crash,
    NackHeld,
    Open,
    Pause,
    Publish,
    Resend,
    RestartBroker,
    Scenario,
    WaitQuiet,
    dump_scenario,
    load_scenario,
)
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target
from reference_model.hashing import sticky_key_hash

Predicate = Callable[[Scenario], bool]
OPTIONS = GeneratorOptions()
KINDS = OPTIONS.move_kinds()


def _m(kind: str, consumer: str = "c1", amount: int = 1) -> Move:
    return Move(KINDS.index(kind), MANY_CONSUMERS.index(consumer), amount)


def _shape(**chosen: int) -> tuple[int, ...]:
    return tuple(chosen.get(d, 0) for d in SHAPE_DIMENSIONS)


def _reachable(moves: list[Move], shape: tuple[int, ...]) -> bool:
    """Within what ``strategies.moves()`` / ``shapes()`` draw: so Hypothesis can generate (and shrink to) it."""
    return (
        len(moves) <= 16
        and all(
            0 <= m.kind < len(KINDS) and 0 <= m.consumer < len(MANY_CONSUMERS) and 1 <= m.amount <= MAX_AMOUNT
            for m in moves
        )
        and all(0 <= v < len(SHAPE_CHOICES[d]) for d, v in zip(SHAPE_DIMENSIONS, shape, strict=True))
    )


def _batched(step: object) -> bool:
    return isinstance(step, Publish) and step.batching != "none"


def _partly_acked_batch_then(kinds: tuple[type, ...]) -> Predicate:
    def holds(s: Scenario) -> bool:
        steps = s.steps
        for i, step in enumerate(steps):
            if not _batched(step):
                continue
            for j, ack in enumerate(steps[i + 1 :], start=i + 1):
                later = steps[j + 1 :]
                if (
                    isinstance(ack, AckHeld)
                    and ack.count is not None
                    and any(isinstance(b, kinds) and b.consumer == ack.consumer for b in later)
                ):
                    return True
        return False

    return holds


def _held_batch_then_join(s: Scenario) -> bool:
    steps = s.steps
    for i, step in enumerate(steps):
        if _batched(step):
            holders = {o.consumer for o in steps[:i] if isinstance(o, Open) and o.behaviour.kind == "hold"}
            if holders and any(isinstance(b, Open) and b.consumer not in holders for b in steps[i + 1 :]):
                return True
    return False


def _dedup_snapshot_restart(s: Scenario) -> bool:
    if ("brokerDeduplicationEntriesInterval", 2) not in s.broker or not s.settings.deduplication:
        return False
    for i, step in enumerate(s.steps):
        if isinstance(step, RestartBroker):
            sent = sum(p.count for p in s.steps[:i] if isinstance(p, Publish))
            if sent > 2 and any(isinstance(r, Resend) for r in s.steps[i + 1 :]):
                return True
    return False


def _join_one_outstanding(s: Scenario) -> bool:
    steps = s.steps
    return any(
        isinstance(a, Publish) and a.count == 1 and isinstance(b, WaitQuiet) and isinstance(c, Open)
        for a, b, c in zip(steps, steps[1:], steps[2:], strict=False)
    )


def _restricted_left_alone(s: Scenario) -> bool:
    steps = s.steps
    for i, step in enumerate(steps[1:-2], start=1):
        joined_holding = isinstance(step, Open) and step.behaviour.kind == "hold"
        if joined_holding and isinstance(steps[i + 1], Publish) and isinstance(steps[i + 2], Close):
            return True
    return False


def _tail_keys_many_holders(s: Scenario) -> bool:
    tail = any(isinstance(p, Publish) and p.keys.names == TAIL_KEYS for p in s.steps)
    holders = {o.consumer for o in s.steps if isinstance(o, Open) and o.behaviour.kind == "hold"}
    return tail and len(holders) >= 3 and bool(holders & {"c4", "c5"})


def _same_name_closed_and_reopened(s: Scenario) -> bool:
    renamed = [i for i, o in enumerate(s.steps) if isinstance(o, Open) and o.name not in (None, o.consumer)]
    return len(renamed) >= 2 and any(isinstance(c, (Close, Crash)) for c in s.steps[renamed[0] : renamed[-1]])


#: dimension -> (what a program of it must show, a move list and shape the strategies can draw that give one)
DIMENSIONS: dict[str, tuple[Predicate, list[Move], tuple[int, ...]]] = {
    "unacked limit per consumer, reached and released": (
        lambda s: ("maxUnackedMessagesPerConsumer", 3) in s.broker,
        [_m("publish", amount=8), _m("ack_held", amount=3), _m("publish", amount=4)],
        _shape(unacked_consumer=1),
    ),
    "unacked limit per subscription, reached and released": (
        lambda s: ("maxUnackedMessagesPerSubscription", 4) in s.broker,
        [_m("open", "c2", 2), _m("publish", amount=8), _m("ack_held", amount=4), _m("ack_held", "c2", 4)],
        _shape(unacked_subscription=1),
    ),
    "consumed entries trimmed (ledgers of 2 entries), then a restart": (
        lambda s: ("managedLedgerMaxEntriesPerLedger", 2) in s.broker,
        [
            _m("publish", amount=8),
            _m("ack_held", amount=6),
            _m("publish", amount=4),
            _m("restart"),
            _m("open", "c2", 1),
        ],
        _shape(trim=1, dedup=2),
    ),
    "look-ahead limit": (
        lambda s: any(n.startswith("keySharedLookAhead") for n, _ in s.broker),
        [_m("publish", amount=6), _m("open", "c2", 1), _m("publish", amount=8), _m("ack_held", amount=2)],
        _shape(lookahead=1),
    ),
    "look-ahead limit reached: receiver queues of two, a consumer paused while the others receive": (
        lambda s: (
            s.settings.receiver_queue == 2
            and ("keySharedLookAheadMsgInReplayThresholdPerConsumer", 2) in s.broker
            and any(isinstance(x, Pause) for x in s.steps)
        ),
        [_m("open", "c2", 1), _m("pause"), *[_m("publish", amount=8)] * 4, _m("ack_held", "c2", 4)],
        _shape(lookahead=1, queue=1),
    ),
    "redelivery (unblocking) delay": (
        lambda s: ("keySharedUnblockingIntervalMs", 150) in s.broker,
        [_m("publish", amount=4), _m("open", "c2", 1), _m("publish", amount=4), _m("ack_held", amount=2)],
        _shape(redelivery_delay=2),
    ),
    "nack delay": (
        lambda s: s.settings.nack_delay_ms == 600 and any(isinstance(x, NackHeld) for x in s.steps),
        [_m("publish", amount=4), _m("nack_held", amount=2)],
        _shape(nack_delay_ms=2),
    ),
    "dedup snapshot every 2 entries, more before a restart, resends after": (
        _dedup_snapshot_restart,
        [_m("publish", amount=5), _m("restart", amount=1), _m("resend", amount=3)],
        _shape(dedup=2),
    ),
    "key-based batches": (
        lambda s: any(isinstance(p, Publish) and p.batching == "key_based" for p in s.steps),
        [_m("publish", amount=5), _m("open", "c2", 1)],
        _shape(batching=1),
    ),
    "default (mixed-key) batches": (
        lambda s: any(isinstance(p, Publish) and p.batching == "default" for p in s.steps),
        [_m("publish", amount=5), _m("open", "c2", 1)],
        _shape(batching=2),
    ),
    "batches held while another consumer joins": (
        _held_batch_then_join,
        [_m("publish", amount=6), _m("wait_quiet"), _m("open", "c2", 1), _m("publish", amount=4)],
        _shape(batching=1),
    ),
    "a batch partly acked, then its holder closes": (
        _partly_acked_batch_then((Close,)),
        [_m("open", "c2", 1), _m("publish", amount=4), _m("ack_held", amount=1), _m("close")],
        _shape(batching=2),
    ),
    "a batch partly acked, then its holder crashes": (
        _partly_acked_batch_then((Crash,)),
        [_m("open", "c2", 1), _m("publish", amount=4), _m("ack_held", amount=1), _m("crash")],
        _shape(batching=2),
    ),
    "a batch partly acked, then its holder nacks": (
        _partly_acked_batch_then((NackHeld,)),
        [_m("publish", amount=4), _m("ack_held", amount=1), _m("nack_held", amount=2)],
        _shape(batching=1),
    ),
    "deduplication with batching": (
        lambda s: (
            s.settings.deduplication
            and any(_batched(p) for p in s.steps)
            and any(isinstance(r, Resend) for r in s.steps)
        ),
        [_m("publish", amount=4), _m("publish", amount=3), _m("resend", amount=2), _m("restart", amount=2)],
        _shape(dedup=1, batching=1),
    ),
    "a key moves to a joiner while one message is outstanding": (
        _join_one_outstanding,
        [_m("join_one_outstanding", "c2", 2)],
        _shape(keys=2),
    ),
    "a recently joined holder left alone": (
        _restricted_left_alone,
        [_m("publish", amount=3), _m("leave_alone", "c2", 3)],
        _shape(),
    ),
    "many holders of keys in the ring's wrap-around tail": (
        _tail_keys_many_holders,
        [_m("open", "c2", 2), _m("open", "c4", 2), _m("publish", amount=8), _m("open", "c5", 1)],
        _shape(keys=1, consumers=1),
    ),
    "keys at the ends of the hash range, on sticky ranges with a one-slot range": (
        lambda s: (
            s.subscription.mode == "STICKY"
            and any(isinstance(o, Open) and (HASH_RANGE_MAX, HASH_RANGE_MAX) in o.ranges for o in s.steps)
            and any(isinstance(p, Publish) and p.keys.names == EDGE_KEYS for p in s.steps)
        ),
        [_m("open", "c2", 2), _m("publish", amount=8), _m("close", "c2")],
        _shape(keys=3, mode=1),
    ),
    "same-name consumers closing and reopening": (
        _same_name_closed_and_reopened,
        [
            _m("open_same_name", "c2", 2),
            _m("publish", amount=6),
            _m("close", "c2"),
            _m("open_same_name", "c2", 1),
            _m("publish", amount=4),
        ],
        _shape(),
    ),
    "selector: auto-split": (
        lambda s: s.settings.selector == "auto-split",
        [_m("open", "c2", 2), _m("publish", amount=8), _m("close")],
        _shape(selector=1),
    ),
    "selector: a 1-point ring": (
        lambda s: s.settings.points == 1,
        [_m("open", "c2", 2), _m("open", "c3", 1), _m("publish", amount=8)],
        _shape(selector=2),
    ),
    "sticky ranges": (
        lambda s: s.subscription.mode == "STICKY" and all(o.ranges for o in s.steps if isinstance(o, Open)),
        [_m("open", "c2", 2), _m("publish", amount=8), _m("close", "c2")],
        _shape(mode=1),
    ),
    "allowOutOfOrderDelivery": (
        lambda s: s.subscription.allow_out_of_order_delivery,
        [_m("open", "c2", 1), _m("publish", amount=8), _m("close")],
        _shape(out_of_order=1),
    ),
    "allowOutOfOrderDelivery changed once every consumer has left": (
        lambda s: any(isinstance(o, Open) and o.allow_out_of_order_delivery is False for o in s.steps),
        [_m("publish", amount=4), _m("close"), _m("open", "c2", 2), _m("publish", amount=8)],
        _shape(out_of_order=1),
    ),
    "a non-persistent topic: holds, a paused consumer, a join, a leave": (
        lambda s: s.settings.topic == "non-persistent" and any(isinstance(x, Pause) for x in s.steps),
        [
            _m("publish", amount=4),
            _m("open", "c2", 5),  # a queue of 5
            _m("pause", "c2"),
            _m("publish", amount=8),
            _m("open", "c3", 1),
            _m("nack_held"),
            _m("close", "c2"),
            _m("publish", amount=6),
        ],
        _shape(topic=1, dedup=1, batching=2),
    ),
    "a partitioned topic: holds, nacks, a join, a redeliver and a leave, no crash": (
        lambda s: (
            s.settings.partitions == 2
            and any(isinstance(x, NackHeld) for x in s.steps)
            and not any(isinstance(x, (Crash, RestartBroker)) for x in s.steps)
        ),
        [
            _m("publish", amount=8),
            _m("open", "c2", 2),
            _m("crash"),  # dropped: the driver watches a crash's removal on one non-partitioned topic
            _m("publish", amount=6),
            _m("nack_held", amount=3),
            _m("redeliver", "c2"),
            _m("restart"),  # dropped too
            _m("close"),
            _m("publish", amount=4),
        ],
        _shape(partitions=1, batching=1, mode=1),
    ),
    "default batches of large messages sent spaced: closed by size and by the batch timer, with a hold and a join": (
        lambda s: (
            s.settings.payload_bytes == 50_000
            and sum(1 for x in s.steps if isinstance(x, Publish) and x.spacing_ms and x.count >= 3) >= 2
            and any(isinstance(x, Open) and x.consumer != "c1" for x in s.steps)
        ),
        [
            _m("publish", amount=8),
            _m("open", "c2"),
            _m("publish", amount=6),
            _m("ack_held", amount=3),
            _m("publish", amount=5),
        ],
        _shape(batching=2, batch_timing=1, dedup=1),
    ),
}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with open_target("model", artifacts_dir=tmp_path_factory.mktemp("target")) as target:
        yield target


@pytest.mark.parametrize("dimension", list(DIMENSIONS))
def test_a_program_of_the_dimension_is_generated_written_and_run_on_the_model(
    dimension: str, model: object, tmp_path: Path
) -> None:
    holds, moves, shape = DIMENSIONS[dimension]
    assert _reachable(moves, shape)
    program = program_from_moves(moves, name="generated", options=OPTIONS, shape=shape)
    loaded = load_scenario(dump_scenario(program, tmp_path / "program.toml"))
    assert loaded == program and holds(loaded), (tmp_path / "program.toml").read_text()
    result = run_scenario(model, loaded, seed=7, out_dir=tmp_path / "run", live_check=False)  # type: ignore[arg-type]
    assert result.valid, (dimension, sorted({str(v.kind) for v in result.verdict.violations}))


def test_random_programs_take_every_dimension() -> None:
    """The seeded generator (the same draw as Hypothesis') reaches every dimension within 1,000 programs."""
    from conformance.generated.program import program_from_seed

    drawn = [program_from_seed(seed, length=20) for seed in range(1000)]
    missing = [d for d, (holds, _m2, _s) in DIMENSIONS.items() if not any(holds(p) for p in drawn)]
    assert missing == []


def test_tail_keys_lie_past_every_ring_point_of_every_era() -> None:
    """``TAIL_KEYS`` hash above the last point of a ring of five consumers in 3.x (31-bit), in 4.0 (1..65535)
    and in the 4.x classic dispatcher: they wrap around to the first point."""
    for key in TAIL_KEYS:
        assert sticky_key_hash(key.encode(), version="4.0") >= 65440
        assert sticky_key_hash(key.encode(), version="3.3") >= int(0.9985 * (2**31 - 1))
        assert sticky_key_hash(key.encode(), version="4.0", classic=True) >= int(0.9985 * (2**31 - 1))


def test_edge_keys_lie_at_the_ends_of_every_era_s_hash_range() -> None:
    """``EDGE_KEYS``: slot 0 of 3.x's 65536-slot reduction (1 in 4.x, which turns 0 into 1), the last slot of the
    65536-slot range, and slots 1 and 65535 of 4.0's consistent-hashing range."""
    bottom, top, ring_first, ring_last = (k.encode() for k in EDGE_KEYS)
    assert sticky_key_hash(bottom, version="3.0") % 65536 == 0
    assert sticky_key_hash(bottom, "auto-split", version="4.0") == 1
    assert sticky_key_hash(top, "auto-split", version="4.0") == 65535
    assert sticky_key_hash(top, version="3.0") % 65536 == 65535
    assert sticky_key_hash(ring_first, version="4.0") == 1
    assert sticky_key_hash(ring_last, version="4.0") == 65535
