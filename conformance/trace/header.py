"""The header of a trace: the run's metadata and the contract the checker holds the broker to.

In JSON Lines it is the first line, an object carrying ``"trace_format": 1``; in Parquet it is stored in
the file's key-value metadata under ``keyshared.header`` as the same JSON object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_model.errors import InvalidArgument

__all__ = ["TRACE_FORMAT", "HeaderError", "SelectorSpec", "SubscriptionSpec", "TraceHeader"]

TRACE_FORMAT = 1

#: Header keys with a field of their own; anything else is kept in ``TraceHeader.extra``.
_HEADER_KEYS = frozenset(
    {"trace_format", "target", "pulsar_version", "subscription", "deduplication", "selector", "seed"}
)


class HeaderError(InvalidArgument):
    """A trace header that cannot be read; the message names the key, the value and what would work."""


def _expect(value: Any, kinds: type | tuple[type, ...], where: str, hint: str) -> Any:
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise HeaderError(f"expected {hint} for {where} but got {value!r} (type=bool)")
    if not isinstance(value, kinds):
        raise HeaderError(f"expected {hint} for {where} but got {value!r} (type={type(value).__name__})")
    return value


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

    @classmethod
    def from_dict(cls, data: Any) -> SubscriptionSpec:
        """Read the header's ``subscription`` object; a bare string is taken as the subscription name."""
        if isinstance(data, str):
            return cls(name=data)
        _expect(data, dict, "header key 'subscription'", 'an object like {"name": "sub"}')
        name = _expect(data.get("name", ""), str, "subscription.name", "a string")
        sub_type = _expect(data.get("type", "Key_Shared"), str, "subscription.type", "a string like 'Key_Shared'")
        mode = _expect(
            data.get("key_shared_mode") or "AUTO_SPLIT", str, "subscription.key_shared_mode", "AUTO_SPLIT or STICKY"
        )
        out_of_order = _expect(
            data.get("allow_out_of_order_delivery", False),
            bool,
            "subscription.allow_out_of_order_delivery",
            "true or false",
        )
        return cls(name=name, type=sub_type, key_shared_mode=mode.upper(), allow_out_of_order_delivery=out_of_order)


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

    @classmethod
    def from_dict(cls, data: Any, *, default_version: str | None = None) -> SelectorSpec:
        """Read the header's ``selector``: an object, or a bare selector name."""
        version = default_version or "4.0"
        if isinstance(data, str):
            return cls(kind=data, pulsar_version=version)
        _expect(data, dict, "header key 'selector'", 'an object like {"kind": "consistent-hashing"}')
        kind = _expect(data.get("kind"), str, "selector.kind", "a selector name such as 'consistent-hashing'")
        pulsar_version = _expect(data.get("pulsar_version") or version, str, "selector.pulsar_version", "'4.0'")
        points = _expect(data.get("points", 100), int, "selector.points", "a positive integer such as 100")
        return cls(kind=kind, pulsar_version=pulsar_version, points=points)


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

    @property
    def implementation(self) -> str | None:
        """The dispatcher the target claims (``pip379`` or ``classic``), from the optional ``implementation`` key."""
        value = self.extra.get("implementation")
        return value if isinstance(value, str) else None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceHeader:
        """Read a header object (the first JSON line, or the Parquet metadata); raise :class:`HeaderError`."""
        fmt = data.get("trace_format")
        if fmt != TRACE_FORMAT:
            raise HeaderError(
                f"unsupported trace_format {fmt!r}: this checker reads trace format {TRACE_FORMAT}"
                f' (a header line carries "trace_format": {TRACE_FORMAT})'
            )
        target = data.get("target")
        target = "unknown" if target is None else _expect(target, str, "header key 'target'", "a string")
        version = data.get("pulsar_version")
        if version is not None:
            version = _expect(version, str, "header key 'pulsar_version'", "a version string like '4.0'")
        dedup = _expect(data.get("deduplication", False), bool, "header key 'deduplication'", "true or false")
        seed = data.get("seed")
        if seed is not None:
            seed = _expect(seed, int, "header key 'seed'", "an integer")
        sub = data.get("subscription")
        subscription = SubscriptionSpec(name="") if sub is None else SubscriptionSpec.from_dict(sub)
        sel = data.get("selector")
        selector = None if sel is None else SelectorSpec.from_dict(sel, default_version=version)
        extra = {k: v for k, v in data.items() if k not in _HEADER_KEYS}
        impl = extra.get("implementation")
        if impl is not None and impl not in ("pip379", "classic"):
            raise HeaderError(f"expected 'pip379' or 'classic' for header key 'implementation' but got {impl!r}")
        return cls(
            target=target,
            subscription=subscription,
            pulsar_version=version,
            deduplication=dedup,
            selector=selector,
            seed=seed,
            extra=extra,
        )

    @classmethod
    def unknown(cls) -> TraceHeader:
        """The header assumed for a trace that has none: no claims beyond the default Key_Shared contract."""
        return cls(target="unknown", subscription=SubscriptionSpec(name=""))
