"""The header of a trace: the run's metadata and the contract the checker holds the broker to.

In JSON Lines it is the first line, an object carrying ``"trace_format": 1``; in Parquet it is stored in
the file's key-value metadata under ``keyshared.header`` as the same JSON object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TRACE_FORMAT", "SelectorSpec", "SubscriptionSpec", "TraceHeader"]

TRACE_FORMAT = 1


@dataclass(frozen=True, slots=True)
class SubscriptionSpec:
    """The subscription the run used, as the broker was asked for it."""

    name: str
    type: str = "Key_Shared"  #: Pulsar's SubType name: Key_Shared, Shared, Failover, Exclusive
    key_shared_mode: str = "AUTO_SPLIT"  #: AUTO_SPLIT or STICKY
    allow_out_of_order_delivery: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "key_shared_mode": self.key_shared_mode,
            "allow_out_of_order_delivery": self.allow_out_of_order_delivery,
        }


@dataclass(frozen=True, slots=True)
class SelectorSpec:
    """The selector the broker is expected to use, for the ``misassigned`` check.

    ``kind`` is one of the reference model's selector names (``consistent-hashing``, ``auto-split``,
    ``sticky``, ...); ``pulsar_version`` picks that version's variant.
    """

    kind: str
    pulsar_version: str = "4.0"
    points: int = 100

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "pulsar_version": self.pulsar_version, "points": self.points}


@dataclass(frozen=True, slots=True)
class TraceHeader:
    """Run metadata.  Unknown keys read from a file are kept in ``extra`` and written back."""

    target: str
    subscription: SubscriptionSpec
    pulsar_version: str | None = None  #: the version the target claims to be
    deduplication: bool = False
    selector: SelectorSpec | None = None
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trace_format": TRACE_FORMAT,
            "target": self.target,
            "pulsar_version": self.pulsar_version,
            "subscription": self.subscription.to_dict(),
            "deduplication": self.deduplication,
            "selector": None if self.selector is None else self.selector.to_dict(),
            "seed": self.seed,
        }
        for name in sorted(self.extra):
            out.setdefault(name, self.extra[name])
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False, sort_keys=False)
