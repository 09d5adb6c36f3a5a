"""Sticky keys and their hashes, as Apache Pulsar's broker computes them.

Key_Shared routes each *entry* (one message, or one whole batch) by a "sticky key" taken from the entry's
metadata, hashed with Murmur3 and reduced to the "slot" the selector looks up.  Three facts decide where a
message goes, and each changed between releases:

1. **Which bytes are hashed** (:func:`sticky_key`).  Pulsar 3.x (``Commands.peekStickyKey``): the ordering key,
   else the partition key (Base64-decoded when flagged), else the literal ``NONE_KEY``, so every key-less
   message lands on one consumer (apache/pulsar#23212).  Pulsar 4.0 (``Commands.resolveStickyKey``,
   apache/pulsar#23219) inserts ``producerName-sequenceId`` before the ``NONE_KEY`` fallback.  A batch carries the
   keys of its *first* message in its entry metadata (Java and C++ ``initBatchMessageMetadata``), so a batch of
   mixed keys is routed by its first key (:func:`batch_sticky_key`).
2. **The hash**: ``Murmur3_32Hash.makeHash`` = MurmurHash3 x86_32, seed 0, with the sign bit cleared
   (:func:`make_hash`).
3. **The reduction** (:func:`reduce_hash`, :func:`key_hash_range`).  Pulsar 4.0's
   ``StickyKeyConsumerSelectorUtils.makeStickyKeyHash`` maps the hash into the selector's key hash range with
   ``h % size + start`` and turns a result of 0 into 1, because 0 means "no hash" (``STICKY_KEY_HASH_NOT_SET``):

   ============================================  ======================  ===============================
   selector (Pulsar 4.x)                          key hash range          slot
   ============================================  ======================  ===============================
   consistent hashing (PIP-379 dispatcher)        [1, 65535]              ``h % 65535 + 1``
   consistent hashing (classic dispatcher)        [1, 2**31 - 2]          ``h % 2147483646 + 1``
   hash-range auto-split, sticky (exclusive)      [0, 65535]              ``h % 65536``, then 0 -> 1
   ============================================  ======================  ===============================

   Pulsar 3.x dispatchers keep the full 31-bit ``makeHash`` value as the entry's hash; the consistent-hashing
   ring uses it as is, and the auto-split and sticky selectors reduce it with ``h % 65536`` inside ``select``
   (no 0 -> 1 remap).  :func:`sticky_key_hash` returns the value a dispatcher of the given version stores.

Pure functions only: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass

import mmh3

from reference_model.errors import InvalidArgument, did_you_mean
from reference_model.versions import DEFAULT_VERSION, NO_KEY_FALLBACK, PIP_379, PulsarVersion, parse_version

__all__ = [
    "CLASSIC_CONSISTENT_HASHING_RANGE",
    "CONSISTENT_HASHING_RANGE",
    "DEFAULT_RANGE_SIZE",
    "HASH_MASK",
    "HASH_RANGE",
    "NONE_KEY",
    "SELECTOR_KINDS",
    "STICKY_KEY_HASH_NOT_SET",
    "MessageKeys",
    "batch_sticky_key",
    "check_selector_kind",
    "key_hash_range",
    "make_hash",
    "murmur3_32",
    "reduce_hash",
    "sticky_key",
    "sticky_key_hash",
]

#: The sticky key of a message without keys (3.x always; 4.0 only without producer name and sequence id).
NONE_KEY = b"NONE_KEY"
#: ``Murmur3_32Hash.makeHash`` clears the sign bit: hashes lie in [0, 2**31 - 1].
HASH_MASK = 0x7FFFFFFF
#: ``StickyKeyConsumerSelector.DEFAULT_RANGE_SIZE = 2 << 15``: the auto-split and sticky hash range size.
DEFAULT_RANGE_SIZE = 65536
#: Pulsar 4.0 reserves hash 0 as "not set"; a reduction landing on 0 becomes 1.
STICKY_KEY_HASH_NOT_SET = 0

#: Inclusive key hash ranges (``getKeyHashRange()``) of Pulsar 4.x selectors.
CONSISTENT_HASHING_RANGE: tuple[int, int] = (1, 65535)
CLASSIC_CONSISTENT_HASHING_RANGE: tuple[int, int] = (1, 2**31 - 2)
HASH_RANGE: tuple[int, int] = (0, DEFAULT_RANGE_SIZE - 1)

#: Selector names used everywhere (model, trace headers, CLI), in the order help texts list them.
SELECTOR_KINDS: tuple[str, ...] = ("consistent-hashing", "auto-split", "sticky")


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86_32 of ``data`` as an unsigned 32-bit integer (the raw hash, before Pulsar's mask)."""
    return int(mmh3.hash(data, seed, signed=False))


def make_hash(key: bytes) -> int:
    """Pulsar's ``Murmur3_32Hash.makeHash``: Murmur3 x86_32, seed 0, masked to 31 bits."""
    return int(mmh3.hash(key, 0, signed=False)) & HASH_MASK


def reduce_hash(hash_value: int, key_range: tuple[int, int]) -> int:
    """``StickyKeyConsumerSelectorUtils.makeStickyKeyHash`` (4.0): ``h % size + start``, with 0 turned into 1."""
    start, end = key_range
    slot = hash_value % (end - start + 1) + start
    return 1 if slot == STICKY_KEY_HASH_NOT_SET else slot


def check_selector_kind(kind: object) -> str:
    """Return ``kind`` if it names a selector, else raise :class:`InvalidArgument` saying what would work."""
    if isinstance(kind, str) and kind in SELECTOR_KINDS:
        return kind
    hint = did_you_mean(kind, SELECTOR_KINDS) if isinstance(kind, str) else ""
    raise InvalidArgument(
        f"Expected a selector name but got selector={kind!r} (type={type(kind).__name__}).{hint}"
        f" Choices: {', '.join(SELECTOR_KINDS)}."
    )


def key_hash_range(
    selector: str = "consistent-hashing", version: str | PulsarVersion = DEFAULT_VERSION, *, classic: bool = False
) -> tuple[int, int] | None:
    """The inclusive range Pulsar 4.x reduces hashes into for ``selector``; ``None`` for 3.x (no reduction).

    ``classic`` selects the 4.x classic dispatcher (``subscriptionKeySharedUseClassicPersistentImplementation``),
    whose consistent-hashing selector is built with ``Integer.MAX_VALUE - 1`` as range end
    (``PersistentStickyKeyDispatcherMultipleConsumersClassic``).
    """
    kind = check_selector_kind(selector)
    if not parse_version(version).has(PIP_379):
        return None
    if kind == "consistent-hashing":
        return CLASSIC_CONSISTENT_HASHING_RANGE if classic else CONSISTENT_HASHING_RANGE
    return HASH_RANGE


def sticky_key_hash(
    key: bytes,
    selector: str = "consistent-hashing",
    version: str | PulsarVersion = DEFAULT_VERSION,
    *,
    classic: bool = False,
) -> int:
    """The hash a Key_Shared dispatcher of ``version`` stores for an entry with sticky key ``key``.

    4.x: the selector's slot (see the module table).  3.x: the full 31-bit hash; the auto-split and sticky
    selectors reduce it inside ``select``.
    """
    key_range = key_hash_range(selector, version, classic=classic)
    h = make_hash(key)
    return h if key_range is None else reduce_hash(h, key_range)


def _check_bytes_or_str(name: str, value: object) -> bytes | str | None:
    if value is None or isinstance(value, (bytes, str)):
        return value
    raise InvalidArgument(
        f"Expected bytes, str or None for {name} but got {name}={value!r} (type={type(value).__name__})."
    )


def _utf8(text: str) -> bytes:
    # Java's String.getBytes(UTF_8) writes '?' for an unpaired surrogate; Python's "replace" does the same.
    return text.encode("utf-8", "replace")


def sticky_key(
    ordering_key: bytes | str | None = None,
    partition_key: bytes | str | None = None,
    partition_key_b64: bool = False,
    producer_name: str | None = None,
    sequence_id: int | None = None,
    version: str | PulsarVersion = DEFAULT_VERSION,
) -> bytes:
    """The sticky key the broker of ``version`` resolves from an entry's metadata.

    Ordering key (raw bytes), else partition key (Base64-decoded when ``partition_key_b64``, else UTF-8), else in
    4.0 (apache/pulsar#23219) ``f"{producer_name}-{sequence_id}"``, else ``NONE_KEY``.  An empty string is a key
    (protobuf ``has_`` semantics): only ``None`` means "absent".
    """
    ordering = _check_bytes_or_str("ordering_key", ordering_key)
    partition = _check_bytes_or_str("partition_key", partition_key)
    if ordering is not None:
        return ordering if isinstance(ordering, bytes) else _utf8(ordering)
    if partition is not None:
        if partition_key_b64:
            try:
                return base64.b64decode(partition, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise InvalidArgument(
                    f"partition_key={partition!r} is flagged partition_key_b64=True but is not valid Base64 ({exc});"
                    " pass the Base64 text of the key bytes, or partition_key_b64=False for a plain key."
                ) from None
        return partition if isinstance(partition, bytes) else _utf8(partition)
    if parse_version(version).has(NO_KEY_FALLBACK) and producer_name is not None and sequence_id is not None:
        if isinstance(sequence_id, bool) or not isinstance(sequence_id, int):
            raise InvalidArgument(
                f"Expected an int for sequence_id but got sequence_id={sequence_id!r}"
                f" (type={type(sequence_id).__name__})."
            )
        return _utf8(f"{producer_name}-{sequence_id}")
    return NONE_KEY


@dataclass(frozen=True, slots=True)
class MessageKeys:
    """The key fields of one message's metadata, as :func:`sticky_key` reads them."""

    ordering_key: bytes | str | None = None
    partition_key: bytes | str | None = None
    partition_key_b64: bool = False
    producer_name: str | None = None
    sequence_id: int | None = None

    def sticky_key(self, version: str | PulsarVersion = DEFAULT_VERSION) -> bytes:
        return sticky_key(
            self.ordering_key,
            self.partition_key,
            self.partition_key_b64,
            self.producer_name,
            self.sequence_id,
            version,
        )


def batch_sticky_key(
    batch: Sequence[MessageKeys],
    version: str | PulsarVersion = DEFAULT_VERSION,
    *,
    batch_sequence_id: int | None = None,
) -> bytes:
    """The sticky key of a batch entry: its first message's keys (the broker never reads per-message keys).

    The 4.0 fallback uses the batch metadata's ``sequence_id``: the first message's id for the C++/Python
    client (the default here); pass ``batch_sequence_id`` for clients that write another (Java key-based
    batching writes the highest).
    """
    if not batch:
        raise InvalidArgument("batch_sticky_key needs at least one message; a batch entry is never empty.")
    first = batch[0]
    sequence_id = first.sequence_id if batch_sequence_id is None else batch_sequence_id
    return sticky_key(
        first.ordering_key, first.partition_key, first.partition_key_b64, first.producer_name, sequence_id, version
    )
