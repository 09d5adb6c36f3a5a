"""Key_Shared sticky-key consumer selectors, per Pulsar version.

>>> sel = make_selector("consistent-hashing", version="4.0", points=100)
>>> c1, c2 = ConsumerRef("c1", 1), ConsumerRef("c2", 2)
>>> sel.add(c1), sel.add(c2)  # 4.0 returns what existing consumers lost (PIP-379 draining input)
... # doctest: +ELLIPSIS
(ImpactedRanges({}), ImpactedRanges({ConsumerRef(name='c1', consumer_id=1): (...)}))
>>> sel.select_key(b"key-0") in (c1, c2)
True

Which class models which Pulsar release is decided here (:func:`make_selector`); each class cites the Pulsar
class and PRs it follows.  See ``docs/selectors.md`` for the rules of every era.
"""

from __future__ import annotations

from reference_model.errors import InvalidArgument
from reference_model.hashing import (
    CLASSIC_CONSISTENT_HASHING_RANGE,
    CONSISTENT_HASHING_RANGE,
    DEFAULT_RANGE_SIZE,
    SELECTOR_KINDS,
    check_selector_kind,
)
from reference_model.selectors.auto_split import AutoSplitSelector
from reference_model.selectors.base import Selector
from reference_model.selectors.consistent_hashing import (
    CollisionListRingSelector,
    ConsistentHashingSelector,
    NameIndexRingSelector,
    ring_key,
)
from reference_model.selectors.consumer_ref import ConsumerRef
from reference_model.selectors.exclusive import StickyRangesSelector, validate_sticky_ranges
from reference_model.selectors.impacted import (
    AssignmentSnapshot,
    HashRange,
    HashRangeAssignment,
    ImpactedRanges,
    diff_ranges,
    merge_ranges,
    resolve_impacted,
)
from reference_model.versions import (
    CONSISTENT_HASHING_NAME_INDEX,
    CONSISTENT_HASHING_NUL_SEPARATOR,
    DEFAULT_VERSION,
    MIN_SELECTOR_VERSION,
    PIP_379,
    PulsarVersion,
    has_classic_dispatcher,
    parse_version,
)

__all__ = [
    "DEFAULT_POINTS",
    "SELECTOR_KINDS",
    "AssignmentSnapshot",
    "AutoSplitSelector",
    "CollisionListRingSelector",
    "ConsistentHashingSelector",
    "ConsumerRef",
    "HashRange",
    "HashRangeAssignment",
    "ImpactedRanges",
    "NameIndexRingSelector",
    "Selector",
    "StickyRangesSelector",
    "diff_ranges",
    "make_selector",
    "merge_ranges",
    "resolve_impacted",
    "ring_key",
    "validate_sticky_ranges",
]

#: ``subscriptionKeySharedConsistentHashingReplicaPoints`` default.
DEFAULT_POINTS = 100


def make_selector(
    kind: str = "consistent-hashing",
    version: str | PulsarVersion = DEFAULT_VERSION,
    points: int = DEFAULT_POINTS,
    *,
    classic: bool = False,
    range_size: int | None = None,
    track_impacted: bool | None = None,
) -> Selector:
    """The selector a Key_Shared subscription of Pulsar ``version`` uses.

    ``kind``: ``"consistent-hashing"`` (AUTO_SPLIT, the default broker setting), ``"auto-split"`` (AUTO_SPLIT with
    ``subscriptionKeySharedUseConsistentHashing=false``) or ``"sticky"`` (STICKY mode, explicit ranges).
    ``points``: ring points per consumer (consistent hashing only).  ``classic``: the 4.x classic dispatcher
    (``subscriptionKeySharedUseClassicPersistentImplementation=true``), whose consistent-hashing ring spans
    ``[1, 2**31 - 2]`` and which needs no impacted ranges; 3.x dispatchers are all classic.  ``range_size``: the
    auto-split / sticky hash range size (Pulsar's tests use small ones; the broker uses 65536).
    ``track_impacted``: return :class:`ImpactedRanges` from ``add``/``remove``; by default exactly when Pulsar's
    dispatcher asks for them (4.x, PIP-379 dispatcher, AUTO_SPLIT selectors).
    """
    kind = check_selector_kind(kind)
    pulsar = parse_version(version)
    if pulsar < MIN_SELECTOR_VERSION:
        raise InvalidArgument(
            f"The selectors are modelled from Pulsar {MIN_SELECTOR_VERSION} on, but got version={str(pulsar)!r};"
            " Use 2.8 or later."
        )
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise InvalidArgument(
            f"Expected a positive int for points but got points={points!r} (type={type(points).__name__});"
            f" Pulsar's default is {DEFAULT_POINTS}."
        )
    if not isinstance(classic, bool):
        raise InvalidArgument(f"Expected a bool for classic but got classic={classic!r}.")
    if classic and not has_classic_dispatcher(pulsar):
        raise InvalidArgument(
            f"classic=True: Pulsar {pulsar} has no classic Key_Shared dispatcher (removed in 5.0,"
            " apache/pulsar#26687); use a 4.x version for it."
        )
    modern = pulsar.has(PIP_379)
    if track_impacted is None:
        track_impacted = modern and not classic and kind != "sticky"
    elif track_impacted and not modern:
        raise InvalidArgument(
            f"track_impacted=True needs Pulsar 4.0 or later (PIP-379 snapshots), but version is {pulsar}."
        )
    if kind == "consistent-hashing":
        if range_size is not None:
            raise InvalidArgument(
                f"range_size={range_size!r} applies to the auto-split and sticky selectors; the consistent-hashing"
                " ring range follows the version (and classic=True for the 4.x classic dispatcher)."
            )
        if modern:
            key_range = CLASSIC_CONSISTENT_HASHING_RANGE if classic else CONSISTENT_HASHING_RANGE
            return ConsistentHashingSelector(pulsar, points, key_range, track_impacted)
        if pulsar.has(CONSISTENT_HASHING_NAME_INDEX):
            return NameIndexRingSelector(pulsar, points)
        return CollisionListRingSelector(pulsar, points, pulsar.has(CONSISTENT_HASHING_NUL_SEPARATOR))
    size = DEFAULT_RANGE_SIZE if range_size is None else range_size
    if kind == "auto-split":
        return AutoSplitSelector(pulsar, size, track_impacted)
    if track_impacted:
        raise InvalidArgument("track_impacted=True does not apply to the sticky selector: STICKY mode never drains.")
    return StickyRangesSelector(pulsar, size)
