"""Murmur3 as Pulsar's broker uses it, and the slot each release line dispatches on.

``Murmur3_32Hash.makeHash``: MurmurHash3 x86_32, seed 0, ``& Integer.MAX_VALUE``.  Pulsar 4.x
(``StickyKeyConsumerSelectorUtils.makeStickyKeyHash``) reduces it into the selector's key hash range,
``h % range.size() + range.start``, and replaces 0 (``STICKY_KEY_HASH_NOT_SET``) by 1.  3.x and 2.x dispatchers
keep the full hash; the auto-split and sticky selectors take ``h % rangeSize`` inside ``select``.
"""

from __future__ import annotations

import mmh3

INT_MAX = 2**31 - 1


def java_hash(data: bytes) -> int:
    """``Murmur3_32Hash.getInstance().makeHash(data)``."""
    return int(mmh3.hash(data, 0, signed=False)) & INT_MAX


def slot_for(data: bytes, start: int, end: int) -> int:
    """``makeStickyKeyHash(data, Range.of(start, end))`` (Pulsar 4.x)."""
    value = java_hash(data) % (end - start + 1) + start
    return 1 if value == 0 else value


def java_int(value: int) -> int:
    """``value`` wrapped like a Java ``int``."""
    return (value + 2**31) % 2**32 - 2**31


def java_bytes(text: str) -> bytes:
    """``String.getBytes()`` (UTF-8; an unpaired surrogate becomes ``?``)."""
    return text.encode("utf-8", "replace")
