"""``oracle_selector``: the selector a Key_Shared subscription of a release uses, built from the oracle's parts."""

from __future__ import annotations

from selector_oracle.base import OracleSelector
from selector_oracle.eras import era_of
from selector_oracle.ring import Ring
from selector_oracle.split import AutoSplit
from selector_oracle.sticky import Sticky

__all__ = ["OracleSelector", "oracle_selector"]


def oracle_selector(
    kind: str, version: str, points: int = 100, *, classic: bool = False, range_size: int = 65536
) -> OracleSelector:
    """``kind``: ``consistent-hashing``, ``auto-split`` or ``sticky``.  ``classic``: Pulsar 4.x's classic
    dispatcher (``PersistentStickyKeyDispatcherMultipleConsumersClassic``), which builds the ring with
    ``Integer.MAX_VALUE - 1`` as the range end and asks for no impacted ranges.  Before 4.0 every dispatcher is the
    classic one and no selector returns impacted ranges."""
    era = era_of(version)
    track = era.pip379 and not classic
    if kind == "consistent-hashing":
        key_range = None if not era.pip379 else (1, 2**31 - 2) if classic else (1, 65535)
        return Ring(era, points, key_range, track)
    if kind == "auto-split":
        return AutoSplit(era, range_size, track)
    if kind == "sticky":
        return Sticky(era, range_size)
    raise ValueError(f"unknown selector kind {kind!r}")
