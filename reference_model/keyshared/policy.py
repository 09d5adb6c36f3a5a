"""The Key_Shared policy a consumer subscribes with, validated as the Python/C++ client validates it.

Follows ``pulsar.ConsumerKeySharedPolicy`` (Python) / ``KeySharedPolicy`` (C++) and the broker's
``KeySharedMeta``: a mode (``AUTO_SPLIT`` or ``STICKY``), ``allowOutOfOrderDelivery``, and for STICKY the
inclusive hash ranges ``[start, end]`` within ``[0, 65535]``. The client rejects empty, out-of-range and
self-overlapping ranges before anything reaches the broker; the broker rejects ranges that overlap another
consumer's (:class:`~reference_model.errors.ConsumerAssignError`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from reference_model.errors import InvalidArgument, did_you_mean

__all__ = ["AUTO_SPLIT", "KEY_SHARED_MODES", "STICKY", "KeySharedPolicy"]

AUTO_SPLIT = "AUTO_SPLIT"
STICKY = "STICKY"
KEY_SHARED_MODES: tuple[str, ...] = (AUTO_SPLIT, STICKY)
_MODE_ALIASES = {"AUTO_SPLIT": AUTO_SPLIT, "AUTOSPLIT": AUTO_SPLIT, "STICKY": STICKY}
_MAX_SLOT = 65535


def _normalise_mode(mode: object) -> str:
    if isinstance(mode, str):
        canonical = _MODE_ALIASES.get(mode.replace("-", "_").upper())
        if canonical is not None:
            return canonical
    name = getattr(mode, "name", None)  # pulsar.KeySharedMode.AutoSplit and similar enums
    if isinstance(name, str) and not isinstance(mode, str):
        return _normalise_mode(name)
    hint = did_you_mean(mode, KEY_SHARED_MODES) if isinstance(mode, str) else ""
    raise InvalidArgument(
        f"Expected a Key_Shared mode but got mode={mode!r} (type={type(mode).__name__}).{hint}"
        f" Choices: {', '.join(KEY_SHARED_MODES)} (or AutoSplit, Sticky)."
    )


def _normalise_ranges(ranges: Sequence[Sequence[int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for item in ranges:
        if len(item) != 2:
            raise InvalidArgument(f"Each sticky range is a (start, end) pair, but got {item!r}.")
        start, end = item
        for value in (start, end):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgument(
                    f"Sticky range bounds are ints, but got {value!r} (type={type(value).__name__}) in {item!r}."
                )
        if start < 0 or end > _MAX_SLOT or start > end:
            raise InvalidArgument(
                f"KeySharedPolicy Exception: Ranges must be [0, 65535], and start <= end, but got [{start}, {end}]."
            )
        out.append((start, end))
    if not out:
        raise InvalidArgument("Ranges for KeyShared policy must not be empty.")
    ordered = sorted(out)
    for (s1, e1), (s2, e2) in itertools.pairwise(ordered):
        if s2 <= e1:
            raise InvalidArgument(f"Ranges for KeyShared policy with overlap: [{s1}, {e1}] and [{s2}, {e2}].")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class KeySharedPolicy:
    """``mode`` (``"AUTO_SPLIT"`` or ``"STICKY"``), ``allow_out_of_order_delivery`` and STICKY ``sticky_ranges``.

    ``KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 99), (1000, 1999)])``. STICKY without ranges is refused
    (``ValueError`` in the Python client); in AUTO_SPLIT mode ranges are validated but not sent to the broker.
    """

    mode: str = AUTO_SPLIT
    allow_out_of_order_delivery: bool = False
    #: any sequence of ``(start, end)`` pairs on input; always a tuple of tuples afterwards
    sticky_ranges: Sequence[tuple[int, int]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", _normalise_mode(self.mode))
        if not isinstance(self.allow_out_of_order_delivery, bool):
            raise InvalidArgument(
                "Expected a bool for allow_out_of_order_delivery but got"
                f" {self.allow_out_of_order_delivery!r} (type={type(self.allow_out_of_order_delivery).__name__})."
            )
        if self.sticky_ranges is not None:
            object.__setattr__(self, "sticky_ranges", _normalise_ranges(self.sticky_ranges))
        elif self.mode == STICKY:
            raise InvalidArgument(
                "When using mode='STICKY' you must also provide sticky_ranges, e.g. sticky_ranges=[(0, 32767)]."
            )

    @property
    def is_sticky(self) -> bool:
        return self.mode == STICKY

    @property
    def ranges_sent(self) -> tuple[tuple[int, int], ...] | None:
        """The ranges the client sends (``KeySharedMeta.hashRanges``): STICKY only."""
        if self.mode != STICKY or self.sticky_ranges is None:
            return None
        return tuple(self.sticky_ranges)

    def to_json(self) -> dict[str, object]:
        """The trace format's ``policy`` field (``docs/architecture.md`` §4)."""
        return {
            "key_shared_mode": self.mode,
            "allow_out_of_order_delivery": self.allow_out_of_order_delivery,
            "sticky_ranges": [list(r) for r in self.sticky_ranges] if self.sticky_ranges is not None else None,
        }
