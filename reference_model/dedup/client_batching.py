"""Which sequence ids a client's batch reaches the broker with: the rule deduplication judges by.

The broker judges a batch by the ``sequence_id`` (and optional ``highest_sequence_id``) of its ``CommandSend``,
never by the ids inside the batch. Clients differ:

* **C++, and therefore Python** (``pulsar-client`` wraps the C++ client; checked v3.4.0 .. v4.2.0): a batch is
  sent with the *first* message's id and no ``highest_sequence_id``. After batch ``[10..19]`` the broker's pushed
  id is 10, so a later lone re-send of 15 is accepted as new; ``last_sequence_id`` after a reconnect is the first
  id of the last batch. Key-based batching (``BatchMessageKeyBasedContainer.cc``) groups by ordering key, else
  partition key, and sends the groups sorted by their first id, ids unchanged.
* **Java** (``BatchMessageContainerImpl``): ``sequence_id`` = first id, ``highest_sequence_id`` = last id.
  Key-based batching (apache/pulsar#15413, 2.8.4 / 2.9.3 / 2.10.1) rewrites each group's lowest id to its highest
  and sends the groups sorted by it, so ``A(0,3,4) B(1,2)`` goes out as B then A (consumer order 1,2,0,3,4).

Also modelled: the Python binding's ``if sequence_id:`` test (an explicit id 0 is silently ignored, as is
``initial_sequence_id=0``) and the C++ client's own ``last_sequence_id()`` after a receipt (first + count - 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reference_model.errors import InvalidArgument, did_you_mean

__all__ = [
    "CLIENTS",
    "SendIds",
    "batch_send_ids",
    "client_last_sequence_id",
    "key_based_batches",
    "python_batch_send_ids",
    "python_explicit_sequence_id",
]

#: Client families whose batching rules differ. ``python`` and ``cpp`` share one rule.
CLIENTS: tuple[str, ...] = ("python", "cpp", "java")


@dataclass(frozen=True, slots=True)
class SendIds:
    """The ids one ``CommandSend`` carries: ``highest_sequence_id`` is -1 when the field is absent."""

    sequence_id: int
    highest_sequence_id: int = -1


def _check_client(client: str) -> str:
    if client not in CLIENTS:
        raise InvalidArgument(
            f"Expected a client family but got client={client!r}.{did_you_mean(str(client), CLIENTS)}"
            f" Choices: {', '.join(CLIENTS)}."
        )
    return client


def _check_ids(name: str, ids: Sequence[int]) -> tuple[int, ...]:
    values = tuple(ids)
    if not values:
        raise InvalidArgument(f"A batch needs at least one message, but {name} is empty.")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgument(
                f"Expected int sequence ids in {name} but got {value!r} (type={type(value).__name__})."
            )
    return values


def batch_send_ids(sequence_ids: Sequence[int], *, client: str = "python") -> SendIds:
    """The ids a default (non key-based) batch holding ``sequence_ids``, in send order, is sent with."""
    ids = _check_ids("sequence_ids", sequence_ids)
    if _check_client(client) == "java":
        return SendIds(ids[0], ids[-1])
    return SendIds(ids[0], -1)


def python_batch_send_ids(sequence_ids: Sequence[int]) -> SendIds:
    """The Python/C++ rule: the first id, no ``highest_sequence_id``."""
    return batch_send_ids(sequence_ids, client="python")


def key_based_batches(
    messages: Sequence[tuple[str | None, int]], *, client: str = "python"
) -> list[tuple[SendIds, tuple[int, ...]]]:
    """Split one flush of a key-based batching producer into the batches it sends, in send order.

    ``messages`` are ``(key, sequence_id)`` in the order ``send`` was called; ``key`` is the ordering key if
    the message has one, else its partition key (``None`` or ``""`` for none: those share one batch). Returns,
    per batch, its :class:`SendIds` and the ids inside it.
    """
    _check_client(client)
    groups: dict[str | None, list[int]] = {}
    for index, item in enumerate(messages):
        if not isinstance(item, tuple) or len(item) != 2:
            raise InvalidArgument(f"Expected (key, sequence_id) pairs but messages[{index}] is {item!r}.")
        key, seq = item
        _check_ids(f"messages[{index}]", (seq,))
        groups.setdefault(key or None, []).append(seq)
    batches: list[tuple[SendIds, tuple[int, ...]]] = []
    for ids in groups.values():
        if client == "java":
            batches.append((SendIds(ids[-1], ids[-1]), tuple(ids)))
        else:
            batches.append((SendIds(ids[0], -1), tuple(ids)))
    # A stable sort: Python's sort keeps insertion order for equal ids, as std::sort need not; equal first ids
    # only occur with explicit duplicate ids, which the broker treats alike whichever goes first.
    batches.sort(key=lambda batch: batch[0].sequence_id)
    return batches


def python_explicit_sequence_id(sequence_id: int | None) -> int | None:
    """The id the Python client actually sets for ``send(..., sequence_id=x)``: falsy values (0) are dropped.

    ``pulsar/__init__.py`` builds the message with ``if sequence_id: builder.sequence_id(sequence_id)``; the
    same test drops ``create_producer(initial_sequence_id=0)``. A dropped id means the producer's own counter
    assigns one.
    """
    if sequence_id is None:
        return None
    if isinstance(sequence_id, bool) or not isinstance(sequence_id, int):
        raise InvalidArgument(
            f"Expected an int or None for sequence_id but got sequence_id={sequence_id!r}"
            f" (type={type(sequence_id).__name__})."
        )
    return sequence_id or None


def client_last_sequence_id(receipt_sequence_id: int, messages_in_send: int) -> int:
    """The C++/Python producer's ``last_sequence_id()`` after a successful receipt (``ProducerImpl::ackReceived``).

    ``lastSequenceIdPublished_ = sequenceId + messagesCount - 1``: right for a batch of consecutive ids, off
    for key-based batches or explicit ids with gaps (a batch sent as 0 with ids 0,3,4 gives 2, not 4).
    """
    if messages_in_send < 1:
        raise InvalidArgument(f"messages_in_send={messages_in_send} must be >= 1 (a send carries one message or more).")
    return receipt_sequence_id + messages_in_send - 1
