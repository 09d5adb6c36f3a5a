"""The contracts a conformance case checks, and which contract each violation kind breaks.

A *contract* is a promise a Pulsar-compatible broker makes to its users; the suite reports, contract by
contract, what holds.  The checker's violation kinds (``docs/architecture.md`` §5) are finer-grained; each
belongs to exactly one contract (a test holds :data:`KIND_CONTRACTS` to ``conformance.violations.Kind``).

Pure data and stdlib only: the plugin imports this at configure time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reference_model.errors import InvalidArgument, did_you_mean

__all__ = [
    "CONTRACTS",
    "CONTRACT_DESCRIPTIONS",
    "KIND_CONTRACTS",
    "ContractViolation",
    "UnknownVerdict",
    "check_contract",
    "contract_of_kind",
]

#: Every contract, in the order the terminal summary lists them.
CONTRACTS: tuple[str, ...] = (
    "ordering",
    "key-exclusivity",
    "delivery",
    "redelivery",
    "deduplication",
    "assignment",
    "replication",
    "message-ids",
)

#: One sentence per contract, for ``--markers``, the docs and the summary's legend.
CONTRACT_DESCRIPTIONS: Mapping[str, str] = {
    "ordering": "messages of one key reach the application in publish order (PIP-379)",
    "key-exclusivity": "a key is unacknowledged at no more than one consumer at a time (Key_Shared)",
    "delivery": "every published message is delivered, and nothing that was not published",
    "redelivery": "an acknowledged message is not delivered again",
    "deduplication": "a (producer, sequence id) is stored once when deduplication is on, and answered as a"
    " duplicate only if stored",
    "assignment": "keys go to the consumer the reference selector of the claimed Pulsar version names",
    "replication": "a replicated subscription resumes in another cluster without skipping unacked messages,"
    " and without redelivering what a settled snapshot already covered",
    "message-ids": "message ids are numbered as Apache Pulsar numbers them: a ledger's entries 0, 1, 2, ..., and a"
    " topic loaded again writes to a new, higher ledger",
}

#: Violation kind (the checker's names, part of the trace format) -> the contract it breaks.
KIND_CONTRACTS: Mapping[str, str] = {
    "key_overlap": "key-exclusivity",
    "out_of_order": "ordering",
    "undelivered": "delivery",
    "unexpected_message": "delivery",
    "redelivered_after_ack": "redelivery",
    "delivered_twice": "redelivery",
    "received_beyond_permits": "delivery",
    "received_beyond_unacked_limit": "delivery",
    "received_beyond_lookahead": "delivery",
    "wrong_redelivery_count": "redelivery",
    "duplicate_publish": "deduplication",
    "lost_write": "deduplication",
    "stored_below_highest": "deduplication",
    "last_sequence_id_behind": "deduplication",
    "misassigned": "assignment",
    "accepted_conflicting_open": "assignment",
    "refused_open": "assignment",
    "skipped_after_failover": "replication",
    "replicated_cursor_ahead": "replication",
    "redelivered_after_failover": "replication",
    "superseded_after_compaction": "delivery",
    "outside_sticky_ranges": "assignment",
    "stalled": "delivery",
    "not_quiet": "redelivery",
    "pinned_owner": "assignment",
    "delivered_early": "delivery",
    "received_after_dead_letter": "redelivery",
    "dead_lettered_early": "redelivery",
    "not_dead_lettered": "redelivery",
    "stats_mismatch": "key-exclusivity",
    "dedup_snapshot_behind": "deduplication",
    "wrong_sequence_id": "deduplication",
    "wrong_message_id": "message-ids",
    "wrong_event_time": "delivery",
    "oversized_batch": "message-ids",
    "batch_flushed_early": "message-ids",
    "not_purged": "deduplication",
    "purge_off_schedule": "deduplication",
}


def contract_of_kind(kind: str) -> str:
    """The contract a checker violation kind breaks; an unknown kind is an error naming the known ones."""
    try:
        return KIND_CONTRACTS[kind]
    except KeyError:
        raise InvalidArgument(
            f"Unknown violation kind {kind!r}.{did_you_mean(kind, KIND_CONTRACTS)}"
            f" Known kinds: {', '.join(sorted(KIND_CONTRACTS))}."
        ) from None


def check_contract(name: object, *, source: str) -> str:
    """Return ``name`` if it is a contract, else raise :class:`InvalidArgument` saying where it came from."""
    if isinstance(name, str) and name in CONTRACTS:
        return name
    hint = did_you_mean(name, CONTRACTS) if isinstance(name, str) else ""
    raise InvalidArgument(f"Unknown contract {name!r} in {source}.{hint} Contracts: {', '.join(CONTRACTS)}.")


class ContractViolation(AssertionError):
    """A conformance case found the target breaking one or more contracts.

    Raised by the ``keyshared_check`` fixture (from a checker verdict) and by cases that judge something the
    trace checker does not (replication positions).  ``contracts`` names what was broken; the message is
    the rendered explanation, shown by pytest and, condensed, in the keyshared summary.
    """

    def __init__(self, contracts: Iterable[str], explanation: str) -> None:
        self.contracts: tuple[str, ...] = tuple(sorted(set(contracts), key=_contract_rank))
        self.explanation = explanation
        super().__init__(f"broken contract(s): {', '.join(self.contracts)}\n{explanation}")


def _contract_rank(name: str) -> int:
    return CONTRACTS.index(name) if name in CONTRACTS else len(CONTRACTS)


class UnknownVerdict(Exception):
    """The checker could not reach a verdict on a case's trace: a check crashed, or (under ``strict``) a
    forbidden kind could not be judged.

    Not an :class:`AssertionError`: no contract was found broken, the judgement itself failed.  The case does
    not pass; pytest reports it failed with this error, whose message names the crashed check and its exception.
    """
