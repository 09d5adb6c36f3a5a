"""Sticky keys, Murmur3 and the slot reductions, against published and Pulsar-derived vectors."""

from __future__ import annotations

import base64

import pytest

from reference_model.errors import InvalidArgument
from reference_model.hashing import (
    CLASSIC_CONSISTENT_HASHING_RANGE,
    CONSISTENT_HASHING_RANGE,
    HASH_RANGE,
    NONE_KEY,
    MessageKeys,
    batch_sticky_key,
    key_hash_range,
    make_hash,
    murmur3_32,
    reduce_hash,
    sticky_key,
    sticky_key_hash,
)

# MurmurHash3 x86_32 reference vectors (SMHasher / the algorithm's published test values).
MURMUR3_VECTORS = [
    (b"", 0, 0x00000000),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"\0\0\0\0", 0, 0x2362F9DE),
    (b"a", 0x9747B28C, 0x7FA09EA6),
    (b"ab", 0x9747B28C, 0x74875592),
    (b"abc", 0x9747B28C, 0xC84A62DD),
    (b"aaaa", 0x9747B28C, 0x5A97808A),
    (b"Hello, world!", 0x9747B28C, 0x24884CBA),
    (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
]


@pytest.mark.parametrize(("data", "seed", "expected"), MURMUR3_VECTORS)
def test_murmur3_reference_vectors(data: bytes, seed: int, expected: int) -> None:
    assert murmur3_32(data, seed) == expected


# key, raw murmur3, makeHash, 4.0 consistent-hashing slot, 4.0 auto-split/sticky slot, 3.x ``h % 65536``
# (pulsar-semantics.md §1.2; computed with an implementation that reproduces Pulsar's selector golden vectors).
KEY_VECTORS = [
    (b"", 0x00000000, 0, 1, 1, 0),
    (b"a", 0x3C2569B2, 1009084850, 42456, 27058, 27058),
    (b"anyKey", 0xDEA4C2CA, 1587856074, 8560, 49866, 49866),
    (b"key-0", 0xE337F8BF, 1664612543, 23544, 63679, 63679),
    (b"NONE_KEY", 0x9E15BEA3, 504741539, 56505, 48803, 48803),
    (b"someKey1", 0x862F379E, 103757726, 15822, 14238, 14238),
]


@pytest.mark.parametrize(("key", "raw", "hashed", "ch_slot", "range_slot", "mod_3x"), KEY_VECTORS)
def test_key_vectors(key: bytes, raw: int, hashed: int, ch_slot: int, range_slot: int, mod_3x: int) -> None:
    assert murmur3_32(key) == raw
    assert make_hash(key) == hashed == raw & 0x7FFFFFFF
    assert sticky_key_hash(key, "consistent-hashing", "4.0") == ch_slot
    assert sticky_key_hash(key, "auto-split", "4.0") == range_slot
    assert sticky_key_hash(key, "sticky", "4.0") == range_slot
    for selector in ("consistent-hashing", "auto-split", "sticky"):
        assert sticky_key_hash(key, selector, "3.3") == hashed  # 3.x dispatchers keep the full hash
    assert hashed % 65536 == mod_3x


def test_make_hash_clears_the_sign_bit() -> None:
    # raw 0xdea4c2ca has bit 31 set; Pulsar's makeHash masks it away
    assert murmur3_32(b"anyKey") > 0x7FFFFFFF
    assert make_hash(b"anyKey") == 0xDEA4C2CA & 0x7FFFFFFF


def test_reduce_hash_formula_and_zero_remap() -> None:
    assert reduce_hash(0, HASH_RANGE) == 1  # 0 is STICKY_KEY_HASH_NOT_SET
    assert reduce_hash(65536, HASH_RANGE) == 1
    assert reduce_hash(65537, HASH_RANGE) == 1
    assert reduce_hash(65535, HASH_RANGE) == 65535
    assert reduce_hash(0, CONSISTENT_HASHING_RANGE) == 1
    assert reduce_hash(65534, CONSISTENT_HASHING_RANGE) == 65535
    assert reduce_hash(65535, CONSISTENT_HASHING_RANGE) == 1  # h % 65535 + 1
    assert reduce_hash(2**31 - 1, CLASSIC_CONSISTENT_HASHING_RANGE) == 2  # (2^31-1) % (2^31-2) + 1
    assert reduce_hash(2**31 - 3, CLASSIC_CONSISTENT_HASHING_RANGE) == 2**31 - 2


def test_key_hash_ranges_per_version() -> None:
    assert key_hash_range("consistent-hashing", "4.0") == (1, 65535)
    assert key_hash_range("consistent-hashing", "4.0", classic=True) == (1, 2**31 - 2)
    assert key_hash_range("auto-split", "4.2") == (0, 65535)
    assert key_hash_range("sticky", "4.0.0") == (0, 65535)
    for version in ("2.10", "3.0", "3.0.7", "3.3"):
        assert key_hash_range("consistent-hashing", version) is None
        assert key_hash_range("auto-split", version) is None


def test_classic_consistent_hashing_slot_keeps_most_of_the_hash() -> None:
    h = make_hash(b"key-0")
    assert sticky_key_hash(b"key-0", "consistent-hashing", "4.0", classic=True) == h % (2**31 - 2) + 1


def test_unknown_selector_name_suggests_the_right_one() -> None:
    with pytest.raises(InvalidArgument, match="Did you mean 'consistent-hashing'"):
        key_hash_range("consistent-hash")


# -- sticky key resolution ----------------------------------------------------------------------------------------


def test_ordering_key_wins_over_partition_key() -> None:
    assert sticky_key(ordering_key=b"\x00ord", partition_key="any key") == b"\x00ord"
    assert sticky_key(ordering_key="ord", partition_key="any key") == b"ord"


def test_partition_key_plain_and_base64() -> None:
    assert sticky_key(partition_key="k\u00e9") == "k\u00e9".encode()
    raw = b"\xff\x00binary"
    assert sticky_key(partition_key=base64.b64encode(raw).decode(), partition_key_b64=True) == raw


def test_invalid_base64_partition_key_is_named() -> None:
    with pytest.raises(InvalidArgument, match=r"partition_key='not base64!' .*partition_key_b64=True"):
        sticky_key(partition_key="not base64!", partition_key_b64=True)


def test_empty_string_is_a_key() -> None:
    assert sticky_key(partition_key="", producer_name="p", sequence_id=1) == b""


@pytest.mark.parametrize("version", ["4.0", "4.0.0", "4.1", "4.2"])
def test_4x_keyless_fallback_is_producer_name_and_sequence(version: str) -> None:
    # KeySharedSubscriptionTest.testNoKeySendAndReceiveWithHashRangeExclusiveStickyKeyConsumerSelector
    assert sticky_key(producer_name="standalone-0-5", sequence_id=17, version=version) == b"standalone-0-5-17"


@pytest.mark.parametrize("version", ["2.10", "3.0", "3.0.7", "3.3"])
def test_3x_keyless_messages_all_hash_to_none_key(version: str) -> None:
    assert sticky_key(producer_name="p", sequence_id=17, version=version) == NONE_KEY


def test_4x_without_producer_metadata_falls_back_to_none_key() -> None:
    assert sticky_key() == NONE_KEY
    assert sticky_key(producer_name="p") == NONE_KEY
    assert sticky_key(sequence_id=3) == NONE_KEY


def test_batch_is_routed_by_its_first_message() -> None:
    batch = [MessageKeys(partition_key="first", sequence_id=4), MessageKeys(partition_key="second", sequence_id=5)]
    assert batch_sticky_key(batch) == b"first"
    keyless = [MessageKeys(producer_name="p", sequence_id=4), MessageKeys(partition_key="k", sequence_id=5)]
    assert batch_sticky_key(keyless, "4.0") == b"p-4"
    assert batch_sticky_key(keyless, "4.0", batch_sequence_id=5) == b"p-5"
    assert batch_sticky_key(keyless, "3.0") == NONE_KEY
    with pytest.raises(InvalidArgument, match="at least one message"):
        batch_sticky_key([])


def test_message_keys_resolve_like_sticky_key() -> None:
    keys = MessageKeys(ordering_key=b"o", partition_key="p")
    assert keys.sticky_key() == b"o"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ordering_key": 5}, "ordering_key=5"),
        ({"partition_key": ["k"]}, "partition_key=\\['k'\\]"),
        ({"producer_name": "p", "sequence_id": "7"}, "sequence_id='7'"),
        ({"producer_name": "p", "sequence_id": True}, "sequence_id=True"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        sticky_key(**kwargs)  # type: ignore[arg-type]


def test_unpaired_surrogate_is_encoded_like_java() -> None:
    # Java's getBytes(UTF_8) writes '?' for an unpaired surrogate
    assert sticky_key(partition_key="a\ud800b") == b"a?b"
