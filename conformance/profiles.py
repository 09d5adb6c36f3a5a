"""Contract profiles: which violation kinds make a verdict invalid (data, not code).

Every check runs on every trace; a profile only decides which kinds *invalidate* the verdict.  Kinds a
profile permits are still reported, under ``allowed`` (Jepsen's ``allowed-error-types``, Elle's
reportable-but-not-prohibited anomalies).  Without ``--profile``, the profile follows the contract the
trace header records (:func:`profile_for_header`):

=================  =================================================================  ============================
profile            contract                                                           permitted kinds
=================  =================================================================  ============================
``pip379``         Pulsar 4.0+ Key_Shared (PIP-379 draining hashes), AUTO_SPLIT        none
``classic``        Pulsar 3.x / 4.x classic dispatcher ("recently joined consumers")  key_overlap
``out-of-order``   ``allowOutOfOrderDelivery=true``                                   key_overlap, out_of_order
``sticky``         KeySharedMode STICKY: hash ranges not covered by any consumer      undelivered
                   legitimately hold messages back
``shared``         Shared subscription: no per-key promise                            key_overlap, out_of_order,
                                                                                      misassigned,
                                                                                      accepted_conflicting_open,
                                                                                      refused_open
``strict``         everything forbidden, and a check that could not be judged         none
                   (run not drained, membership not rebuilt) makes the verdict invalid
``lenient``        at-least-once delivery only: nothing lost, nothing invented,       key_overlap, out_of_order,
                   nothing acknowledged delivered again                               duplicate_publish,
                                                                                      misassigned,
                                                                                      accepted_conflicting_open,
                                                                                      refused_open,
                                                                                      wrong_redelivery_count,
                                                                                      received_beyond_unacked_limit,
                                                                                      received_beyond_lookahead
=================  =================================================================  ============================

Deduplication off in the header adds ``duplicate_publish`` to the permitted kinds of a derived profile, and a
non-persistent topic (``"topic_kind": "non-persistent"``) adds ``undelivered``: such a topic may drop messages
(:mod:`conformance.checks.nonpersistent`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from conformance.trace.header import TraceHeader
from conformance.violations import Kind
from reference_model.errors import InvalidArgument, did_you_mean
from reference_model.versions import PIP_379, parse_version

__all__ = ["PROFILES", "Profile", "get_profile", "profile_for_header", "resolve_profile"]


@dataclass(frozen=True, slots=True)
class Profile:
    """A named contract: the kinds it permits (reported as allowed) and whether unjudged checks fail."""

    name: str
    description: str
    permitted: frozenset[Kind] = frozenset()
    unknown_is_invalid: bool = False
    #: why a derived profile differs from the named one it started from (empty for a named profile)
    adjustments: tuple[str, ...] = field(default=())

    def forbids(self, kind: Kind) -> bool:
        return kind not in self.permitted

    def permitting(self, kinds: Iterable[Kind], why: str) -> Profile:
        extra = frozenset(kinds) - self.permitted
        if not extra:
            return self
        return replace(self, permitted=self.permitted | extra, adjustments=(*self.adjustments, why))

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "permitted": sorted(k.value for k in self.permitted),
            "unknown_is_invalid": self.unknown_is_invalid,
            "adjustments": list(self.adjustments),
        }


_K = Kind
PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("pip379", "Pulsar 4.0+ Key_Shared with PIP-379 draining hashes: every kind forbidden"),
        Profile(
            "classic",
            "Pulsar 3.x (or 4.x classic dispatcher): ordering enforced, a key may overlap two consumers",
            frozenset({_K.KEY_OVERLAP}),
        ),
        Profile(
            "out-of-order",
            "allowOutOfOrderDelivery: neither ordering nor key exclusivity across membership changes",
            frozenset({_K.KEY_OVERLAP, _K.OUT_OF_ORDER}),
        ),
        Profile(
            "sticky",
            "KeySharedMode STICKY: messages of hashes no consumer range covers legitimately wait",
            frozenset({_K.UNDELIVERED}),
        ),
        Profile(
            "shared",
            "Shared subscription: no per-key promise, only delivery and deduplication",
            frozenset({_K.KEY_OVERLAP, _K.OUT_OF_ORDER, _K.MISASSIGNED, _K.ACCEPTED_CONFLICTING_OPEN, _K.REFUSED_OPEN}),
        ),
        Profile(
            "strict",
            "every kind forbidden; a check that could not be judged also makes the verdict invalid",
            unknown_is_invalid=True,
        ),
        Profile(
            "lenient",
            "at-least-once only: nothing lost, nothing invented, nothing redelivered after its ack",
            frozenset(
                {
                    _K.KEY_OVERLAP,
                    _K.OUT_OF_ORDER,
                    _K.DUPLICATE_PUBLISH,
                    _K.MISASSIGNED,
                    _K.ACCEPTED_CONFLICTING_OPEN,
                    _K.REFUSED_OPEN,
                    _K.WRONG_REDELIVERY_COUNT,
                    _K.RECEIVED_BEYOND_UNACKED_LIMIT,
                    _K.RECEIVED_BEYOND_LOOKAHEAD,
                }
            ),
        ),
    )
}


def get_profile(name: str | Profile) -> Profile:
    """The named profile; an unknown name raises :class:`InvalidArgument` with the choices."""
    if isinstance(name, Profile):
        return name
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        hint = did_you_mean(name, PROFILES) if isinstance(name, str) else ""
        raise InvalidArgument(f"Unknown profile {name!r}.{hint} Choices: {', '.join(PROFILES)}.") from None


def profile_for_header(header: TraceHeader) -> Profile:
    """The profile the contract recorded in ``header`` implies (used when no profile is given)."""
    sub = header.subscription
    if sub.type.lower() == "shared":
        base = PROFILES["shared"]
    elif sub.allow_out_of_order_delivery:
        base = PROFILES["out-of-order"]
    elif sub.key_shared_mode.upper() == "STICKY":
        base = PROFILES["sticky"]
    elif header.implementation == "classic" or _claims_pre_pip379(header.pulsar_version):
        base = PROFILES["classic"]
    else:
        base = PROFILES["pip379"]
    base = replace(base, adjustments=(f"derived from the trace header ({_contract_words(header)})",))
    if not header.deduplication:
        base = base.permitting({Kind.DUPLICATE_PUBLISH}, "deduplication off: duplicate_publish permitted")
    if header.extra.get("topic_kind") == "non-persistent":  # conformance.checks.nonpersistent: loss allowed there
        base = base.permitting({Kind.UNDELIVERED}, "non-persistent topic: messages may be dropped")
    return base


def resolve_profile(profile: str | Profile | None, header: TraceHeader) -> Profile:
    """``profile`` if given (by name or value), else the one the header implies."""
    return profile_for_header(header) if profile is None else get_profile(profile)


def _claims_pre_pip379(version: str | None) -> bool:
    if version is None:
        return False
    try:
        return not parse_version(version).has(PIP_379)
    except InvalidArgument:
        return False


def _contract_words(header: TraceHeader) -> str:
    sub = header.subscription
    words = [sub.type, sub.key_shared_mode]
    if sub.allow_out_of_order_delivery:
        words.append("allowOutOfOrderDelivery")
    if header.pulsar_version:
        words.append(f"Pulsar {header.pulsar_version}")
    if header.implementation:
        words.append(f"{header.implementation} dispatcher")
    words.append("deduplication " + ("on" if header.deduplication else "off"))
    return ", ".join(words)
