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
    CONSISTENT_HASHING_REMOVE_BY_IDENTITY,
    DEDUP_REPLICATED_BY_SOURCE_POSITION,
    NON_PERSISTENT_FLOW_CONTROL,
    OUT_OF_ORDER_REPLAY_FILTERED,
    PIP_379,
    Fix,
    PulsarVersion,
    parse_version,
)

__all__ = ["GATED_CASES", "GatedCase"]


@dataclass(frozen=True, slots=True)
class GatedCase:
    """A case (``area/name``), the gate it needs, the contracts it breaks without it, and why.

    ``pip379_only``: the gate fixed only the PIP-379 dispatcher, so the classic dispatcher (every 3.x release, and
    4.x with ``subscriptionKeySharedUseClassicPersistentImplementation=true``) fails the case on every release.
    """

    case: str
    gate: Fix
    contracts: tuple[str, ...]
    reason: str
    pip379_only: bool = False

    def affects(self, version: str | PulsarVersion, implementation: str = "pip379") -> bool:
        """Whether a broker of ``version`` running ``implementation`` (``pip379``/``classic``) fails the case."""
        release = parse_version(version)
        if self.pip379_only and (implementation == "classic" or not release.has(PIP_379)):
            return True
        return not self.gate.present_in(release)


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
        " the topic, the other consumer's replayed message starves (apache/pulsar#26268, fixed in 4.0.14 and 4.2.5"
        " for the PIP-379 dispatcher only; the classic dispatcher's out-of-order replay has no filter)",
        pip379_only=True,
    ),
    GatedCase(
        "catalogue/out-of-order-replay-keeps-hashless-positions", OUT_OF_ORDER_REPLAY_FILTERED, ("delivery",),
        "with allowOutOfOrderDelivery a redelivered (hashless) position of a consumer without permits is read,"
        " discarded and queued again without its hash, so it spends every replay read's budget and, at the end of"
        " the topic, the other consumer's redelivered message starves (apache/pulsar#26268, fixed in 4.0.14 and"
        " 4.2.5 for the PIP-379 dispatcher only; the classic dispatcher's out-of-order replay has no filter)",
        pip379_only=True,
    ),
    GatedCase(
        "catalogue/non-persistent-flow-control", NON_PERSISTENT_FLOW_CONTROL, ("delivery",),
        "the non-persistent Key_Shared dispatcher ignores permits: a paused consumer is sent every message of its"
        " keys, past its receiver queue (apache/pulsar#11692; fixed in 2.8.1 and 2.9.0)",
    ),
)  # fmt: skip
