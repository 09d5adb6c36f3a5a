"""Conformance cases outside ``known-bugs/`` that a release before a model gate fails, as data.

A case here passes on every release that carries its gate (:mod:`reference_model.versions`) and fails on the
releases before it: the model's expectations files (``conformance/expectations/model-*.toml``) list it for every
release line whose newest patch lacks the gate, and ``tests/model/test_model_expectations.py`` keeps the files
equal to this table and to :mod:`conformance.known_bugs`.

Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_model.versions import (
    CLASSIC_REPLAY_FILTER,
    CONSISTENT_HASHING_REMOVE_BY_IDENTITY,
    DEDUP_REPLICATED_BY_SOURCE_POSITION,
    DRAINING_REASSIGNMENT_FIX,
    LOOKAHEAD_ONLY_WITH_MORE_ENTRIES,
    NON_PERSISTENT_FLOW_CONTROL,
    OUT_OF_ORDER_REPLAY_FILTERED,
    SLOW_SOCKET_DOES_NOT_STALL_OTHERS,
    Fix,
    PulsarVersion,
    parse_version,
)

__all__ = ["GATED_CASES", "GatedCase"]


@dataclass(frozen=True, slots=True)
class GatedCase:
    """A case (``area/name``), the gate it needs, the contracts it breaks without it, and why.

    ``fixed_in``: the Key_Shared dispatchers (``pip379``, ``classic``) the gate changed; empty: the gate is not
    about a dispatcher.  On a dispatcher it did not change, every release fails the case.  ``only_in``: the
    dispatchers that had the bug; on another, every release passes the case (``fixed_in`` and ``only_in`` are
    not given together).
    """

    case: str
    gate: Fix
    contracts: tuple[str, ...]
    reason: str
    fixed_in: tuple[str, ...] = ()
    only_in: tuple[str, ...] = ()

    def affects(self, version: str | PulsarVersion, implementation: str | None = None) -> bool:
        """Whether a broker of ``version`` (and dispatcher ``implementation``, where given) fails the case."""
        if self.fixed_in and implementation is not None and implementation not in self.fixed_in:
            return True
        if self.only_in and implementation is not None and implementation not in self.only_in:
            return False
        return not self.gate.present_in(parse_version(version))


GATED_CASES: tuple[GatedCase, ...] = (
    GatedCase(
        "replication/same-producer-name-in-two-clusters",
        DEDUP_REPLICATED_BY_SOURCE_POSITION,
        ("replication",),
        "a replicated message is deduplicated by its original producer name and sequence id, which collide with"
        " the other cluster's producer of the same name: it is dropped and the failover skips it"
        " (apache/pulsar#23697; fixed in 3.0.11, 3.3.5, 4.0.3)",
    ),
    GatedCase(
        "catalogue/same-name-consumers", CONSISTENT_HASHING_REMOVE_BY_IDENTITY, ("delivery",),
        "the consistent-hashing ring removes every consumer of the leaving consumer's name from its points, so the"
        " other same-name consumers own nothing and their keys wait (apache/pulsar#10750; fixed in 2.9.3 by #13991,"
        " never in the 2.8 line)",
    ),
    GatedCase(
        "catalogue/out-of-order-replay-skips-consumer-without-permits", OUT_OF_ORDER_REPLAY_FILTERED, ("delivery",),
        "with allowOutOfOrderDelivery every replay position is read in order: the positions of a consumer without"
        " permits spend the read budget and are pushed back, the look-ahead skips the next replay and, at the end of"
        " the topic, the other consumer's replayed message starves (apache/pulsar#26268, fixed in 4.0.14, 4.2.5"
        " and 5.0.0 for the PIP-379 dispatcher only; the classic dispatcher's out-of-order replay has no filter)",
        fixed_in=("pip379",),
    ),
    GatedCase(
        "catalogue/out-of-order-replay-keeps-hashless-positions", OUT_OF_ORDER_REPLAY_FILTERED, ("delivery",),
        "with allowOutOfOrderDelivery a redelivered (hashless) position of a consumer without permits is read,"
        " discarded and queued again without its hash, so it spends every replay read's budget and, at the end of"
        " the topic, the other consumer's redelivered message starves (apache/pulsar#26268, fixed in 4.0.14,"
        " 4.2.5 and 5.0.0 for the PIP-379 dispatcher only; the classic dispatcher's out-of-order replay has no filter)",
        fixed_in=("pip379",),
    ),
    GatedCase(
        "catalogue/recent-joined-out-of-order", OUT_OF_ORDER_REPLAY_FILTERED, ("delivery",),
        "with allowOutOfOrderDelivery every replay position is read in order: the paused consumer's positions spend"
        " each replay read and are pushed back, so the acknowledging consumer's last messages, queued for replay"
        " behind them at the end of the topic, starve until the paused consumer resumes (stalled at the mid-run wait;"
        " apache/pulsar#26268, fixed in 4.0.14, 4.2.5 and 5.0.0 for the PIP-379 dispatcher only; the classic"
        " dispatcher's out-of-order replay has no filter)",
        fixed_in=("pip379",),
    ),
    GatedCase(
        "dispatch/ack-holes-close-and-join-in-order", CLASSIC_REPLAY_FILTER, ("delivery",),
        "the classic dispatcher reads the replay positions of the stuck consumer and of the recently joined one,"
        " discards them and reads them again instead of reading on, so the acknowledging consumer gets none of the"
        " newer messages of its keys until the holes are acknowledged (stalled at the mid-run wait; the repeated"
        " read-and-discard of apache/pulsar#22245, fixed in 3.0.5 and 3.3.0, never in 2.x, 3.1 or 3.2; the PIP-379"
        " dispatcher never had it)",
        only_in=("classic",),
    ),
    GatedCase(
        "catalogue/slow-socket-does-not-block-fast", SLOW_SOCKET_DOES_NOT_STALL_OTHERS, ("delivery",),
        "the Key_Shared dispatchers keep writing to a consumer whose socket is not read while it has permits, and"
        " read again only once every consumer's write of a round has completed: the stalled write holds back the"
        " other consumer, which gets none of its messages until the stalled one reads again (stalled at its wait;"
        " apache/pulsar#26635 with #26630, in 5.0.0 only: not in 4.0.14 or 4.2.5)",
    ),
    GatedCase(
        "catalogue/non-persistent-flow-control", NON_PERSISTENT_FLOW_CONTROL, ("delivery",),
        "the non-persistent Key_Shared dispatcher ignores permits: a paused consumer is sent every message of its"
        " keys, past its receiver queue (apache/pulsar#11692; fixed in 2.8.1 and 2.9.0)",
    ),
    GatedCase(
        "dispatch/replay-at-end-of-topic", LOOKAHEAD_ONLY_WITH_MORE_ENTRIES, ("delivery",),
        "a replay read discarded at the end of the topic (its position belongs to a consumer without permits)"
        " engages the look-ahead, which skips the next replay: the other consumer's replayed message waits for"
        " entries that never come (apache/pulsar#26236; fixed in 4.0.13, 4.2.4 and 5.0.0 in the PIP-379 dispatcher"
        " only, never in 4.1 or 3.x; the classic dispatcher's stuck-on-replays read parks the same way at every"
        " release)",
        fixed_in=("pip379",),
    ),
    GatedCase(
        "dispatch/draining-owner-closes", DRAINING_REASSIGNMENT_FIX, ("delivery",),
        "a hash that moved away from the consumer holding its messages, back and away again stays marked draining"
        " with references counted twice; once that consumer closes, the new owner never gets the messages"
        " (apache/pulsar#23845; fixed by #24736 in 4.0.7 and 4.1.1; the classic dispatcher has no draining hashes)",
        only_in=("pip379",),
    ),
)  # fmt: skip
