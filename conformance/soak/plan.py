"""A soak run's parameters, validated before anything starts (every problem is one ``InvalidArgument`` line).

A :class:`SoakPlan` is plain data: how long (a duration or a message count), how fast, how many producers,
consumers and keys, how keys are drawn, how often consumers churn, which faults the nemesis injects, and the
seed.  :func:`parse_duration` and :func:`parse_faults` turn command-line text into those values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reference_model.errors import InvalidArgument, did_you_mean

__all__ = [
    "BEHAVIOUR_LABELS",
    "FAULT_KINDS",
    "NET_FAULTS",
    "PUBLISH_MODES",
    "SoakPlan",
    "parse_duration",
    "parse_faults",
    "parse_key_distribution",
]

#: Every fault the nemesis knows.  ``restart`` restarts the broker (targets that can); the others act on one
#: client's connections through the harness's loopback proxy.
FAULT_KINDS: tuple[str, ...] = ("restart", "cut", "stall", "delay", "partition")
#: The faults that need the loopback proxy (real brokers only).
NET_FAULTS: frozenset[str] = frozenset({"cut", "stall", "delay", "partition"})

#: Consumer behaviours: ack at once, ack after a short delay, slow (a long delay and a small receiver queue),
#: hold then ack (``ack_held`` a while later), nack then ack the redelivery.
BEHAVIOUR_LABELS: tuple[str, ...] = ("ack", "ack_after", "slow", "hold", "nack")
#: How publishes are sent (see :attr:`SoakPlan.publish`).
PUBLISH_MODES: tuple[str, ...] = ("auto", "mixed", "sync")

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> float:
    """``"90"``, ``"90s"``, ``"10m"``, ``"1.5h"``, ``"500ms"`` -> seconds (> 0)."""
    match = _DURATION.match(str(text))
    if match is None:
        raise InvalidArgument(f"Expected a duration such as 90s, 10m or 1h but got {text!r}.")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    if seconds <= 0:
        raise InvalidArgument(f"Expected a duration > 0 but got {text!r}.")
    return seconds


def parse_faults(text: str | None) -> tuple[str, ...]:
    """``"restart,cut"`` -> ``("restart", "cut")`` in :data:`FAULT_KINDS` order; ``""``/``"none"`` -> ``()``."""
    if text is None or text.strip() in ("", "none"):
        return ()
    names = [part.strip() for part in text.split(",") if part.strip()]
    for name in names:
        if name not in FAULT_KINDS:
            raise InvalidArgument(
                f"Unknown fault {name!r}.{did_you_mean(name, FAULT_KINDS)} Faults: {', '.join(FAULT_KINDS)}."
            )
    return tuple(kind for kind in FAULT_KINDS if kind in names)


def parse_key_distribution(text: str) -> tuple[str, float]:
    """``"uniform"`` -> ``("uniform", 0.0)``; ``"zipf:1.2"`` -> ``("zipf", 1.2)`` (exponent > 0)."""
    if text == "uniform":
        return ("uniform", 0.0)
    name, _, exponent = text.partition(":")
    if name == "zipf":
        try:
            s = float(exponent)
        except ValueError:
            s = -1.0
        if s > 0:
            return ("zipf", s)
    raise InvalidArgument(f"Expected --key-distribution uniform or zipf:S with S > 0 (e.g. zipf:1.1) but got {text!r}.")


@dataclass(frozen=True, slots=True)
class SoakPlan:
    """What a soak run does.  ``duration_s`` or ``messages`` bounds it (the first reached ends the load).

    Times run on the run's clock: the wall clock against real brokers, the model's simulated clock against the
    model, where the same plan therefore gives the same trace byte for byte, whatever the machine's speed.
    """

    duration_s: float | None = 60.0
    messages: int | None = None
    rate: float = 500.0  #: messages per second, a ceiling (a slow broker gets fewer)
    producers: int = 2
    consumers: int = 3
    keys: int = 100
    key_distribution: str = "uniform"
    churn_per_min: float = 6.0  #: joins, leaves, crashes and behaviour changes per minute
    faults: tuple[str, ...] = ()
    seed: int = 0
    batch: int = 20  #: mean messages per publish step
    fault_every_s: float = 8.0  #: mean time between two faults of one kind
    fault_seconds: float = 2.0  #: how long a stall, delay or partition lasts
    delay_ms: int = 50  #: latency the ``delay`` fault adds to each forwarded chunk
    #: ``mixed``: sync sends and async key-based batches; ``sync``: sync sends only; ``auto``: what the target
    #: takes (``sync`` where pipelined sends are a known trap, e.g. pulsar-lite), resolved by the driver
    publish: str = "auto"
    #: consumer behaviours drawn from (all of :data:`BEHAVIOUR_LABELS` when empty)
    behaviours: tuple[str, ...] = ()
    receiver_queue: int = 200
    drain_timeout_ms: int = 30_000
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.duration_s is None and self.messages is None:
            raise InvalidArgument("A soak needs a bound: pass --duration (e.g. 10m) or --messages N.")
        if self.duration_s is not None and not self.duration_s > 0:
            raise InvalidArgument(f"Expected a duration > 0 but got {self.duration_s!r} s.")
        if self.messages is not None and self.messages < 1:
            raise InvalidArgument(f"Expected --messages >= 1 but got {self.messages}.")
        if not self.rate > 0:
            raise InvalidArgument(f"Expected --rate > 0 (messages per second) but got {self.rate!r}.")
        for name, value, low in (
            ("producers", self.producers, 1),
            ("consumers", self.consumers, 1),
            ("keys", self.keys, 1),
            ("batch", self.batch, 1),
            ("seed", self.seed, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvalidArgument(f"Expected --{name} to be an integer >= {low} but got {value!r}.")
        if self.churn_per_min < 0:
            raise InvalidArgument(f"Expected --churn >= 0 (changes per minute) but got {self.churn_per_min!r}.")
        parse_key_distribution(self.key_distribution)
        for kind in self.faults:
            if kind not in FAULT_KINDS:
                raise InvalidArgument(
                    f"Unknown fault {kind!r}.{did_you_mean(kind, FAULT_KINDS)} Faults: {', '.join(FAULT_KINDS)}."
                )
        for label in self.behaviours:
            if label not in BEHAVIOUR_LABELS:
                raise InvalidArgument(
                    f"Unknown behaviour {label!r}.{did_you_mean(label, BEHAVIOUR_LABELS)}"
                    f" Behaviours: {', '.join(BEHAVIOUR_LABELS)}."
                )
        if self.publish not in PUBLISH_MODES:
            raise InvalidArgument(
                f"Expected --publish to be one of {', '.join(PUBLISH_MODES)} but got {self.publish!r}."
            )
        if not (self.fault_every_s > 0 and self.fault_seconds > 0 and self.delay_ms >= 0):
            raise InvalidArgument("Expected fault_every_s > 0, fault_seconds > 0 and delay_ms >= 0.")

    @property
    def net_faults(self) -> tuple[str, ...]:
        return tuple(kind for kind in self.faults if kind in NET_FAULTS)

    def to_dict(self) -> dict[str, object]:
        """JSON-safe, for ``soak.json`` and the summary."""
        return {
            "duration_s": self.duration_s,
            "messages": self.messages,
            "rate": self.rate,
            "producers": self.producers,
            "consumers": self.consumers,
            "keys": self.keys,
            "key_distribution": self.key_distribution,
            "churn_per_min": self.churn_per_min,
            "faults": list(self.faults),
            "seed": self.seed,
            "batch": self.batch,
            "fault_every_s": self.fault_every_s,
            "fault_seconds": self.fault_seconds,
            "delay_ms": self.delay_ms,
            "publish": self.publish,
            "behaviours": list(self.behaviours),
            "receiver_queue": self.receiver_queue,
            "drain_timeout_ms": self.drain_timeout_ms,
        }
