"""Read scenarios from TOML or JSON, and validate them before anything runs.

Every problem is reported as one :class:`~conformance.scenarios.model.InvalidScenario` naming the file, the
place (``step 3 (open)``), the value and what would be accepted, so a CLI can print it as one line with exit
code 2.  Validation is complete before a broker is touched: a scenario that closes a consumer it never
opened, or sends sticky ranges in AUTO_SPLIT mode, never starts.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from importlib import resources
from pathlib import Path
from typing import Any, get_args

from conformance.scenarios.model import (
    BATCHING_MODES,
    BEHAVIOURS,
    BROKER_SETTINGS,
    FAILOVER_STEPS,
    HASH_RANGE_MAX,
    KEY_FIELDS,
    KEY_ORDERS,
    KEY_SHARED_MODES,
    MIN_ACK_TIMEOUT_MS,
    SELECTORS,
    SEQUENCE_MODES,
    TOPIC_KINDS,
    AckHeld,
    AckPlan,
    Behaviour,
    Close,
    CloseProducer,
    ClusterDown,
    ClusterUp,
    Compact,
    Consume,
    Crash,
    Deduplication,
    DeleteSubscription,
    ExpireMessages,
    FailOver,
    InvalidScenario,
    KeySet,
    LinkDown,
    LinkUp,
    NackHeld,
    Open,
    OpenProducer,
    Pause,
    Publish,
    Read,
    Redeliver,
    ReplicatedStatus,
    ReplicatorFaults,
    Resend,
    RestartBroker,
    Resume,
    ResumeConnection,
    Scenario,
    SetBehaviour,
    Settings,
    Sleep,
    Snapshot,
    StallConnection,
    Step,
    StorageDown,
    StorageUp,
    SubscriptionSettings,
    WaitDelivered,
    WaitQuiet,
    WaitReceived,
)
from reference_model.broker.config import BrokerConfig
from reference_model.errors import InvalidArgument, did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["builtin_scenarios", "load_scenario", "loads_scenario", "parse_scenario"]

#: Each step's ``do`` and its class, in the order of the :data:`Step` union (the one list of steps).
STEP_TYPES: dict[str, type] = {cls.do: cls for cls in get_args(Step)}
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: ``pinned`` is the conformance cases' expected key placement (``conformance/cases/scenarios/pinned/``); a run
#: ignores it, so those files run as they are (``keyshared run --scenario <file>``).
_TOP_LEVEL = ("name", "description", "tags", "subscription", "settings", "broker", "steps", "pinned")
_BEHAVIOUR_FIELDS = ("behaviour", "delay_ms", "nack_times")
_STEP_FIELDS: dict[str, tuple[str, ...]] = {
    "open": (
        "consumer",
        *_BEHAVIOUR_FIELDS,
        "name",
        "receiver_queue",
        "mode",
        "allow_out_of_order_delivery",
        "ranges",
        "paused",
        "ack_timeout_ms",
    ),
    "publish": (
        "count",
        "keys",
        "key_prefix",
        "producer",
        "key_field",
        "batching",
        "order",
        "sequence",
        "sequence_ids",
        "cluster",
        "deliver_after_ms",
        "spacing_ms",
        "highest_sequence_id",
        "send_sequence_id",
    ),
    "resend": ("producer", "from_seq", "to_seq", "reconnect"),
    "set_behaviour": ("consumer", *_BEHAVIOUR_FIELDS),
    "ack_held": ("consumer", "count"),
    "nack_held": ("consumer", "count"),
    "redeliver": ("consumer", "keep_prefetched"),
    "close": ("consumer",),
    "crash": ("consumer",),
    "pause": ("consumer",),
    "resume": ("consumer",),
    "stall_connection": ("consumer",),
    "resume_connection": ("consumer",),
    "wait_quiet": ("quiet_ms", "timeout_ms"),
    "wait_received": ("count", "consumer", "timeout_ms"),
    "wait_delivered": ("timeout_ms",),
    "sleep": ("ms",),
    "expire_messages": ("seconds",),
    "deduplication": ("enabled",),
    "open_producer": ("producer",),
    "close_producer": ("producer",),
    "restart_broker": ("kill",),
    "storage_down": ("fail_after_ms",),
    "storage_up": (),
    "consume": ("ack",),
    "snapshot": (),
    "cluster_down": ("cluster",),
    "cluster_up": ("cluster",),
    "replicated_status": ("cluster", "enabled"),
    "link_down": ("cluster", "remote"),
    "link_up": ("cluster", "remote"),
    "replicator_faults": ("cluster", "remote", "lose_receipts", "repeat_window"),
    "read": ("cluster", "compacted"),
    "compact": ("cluster",),
    "delete_subscription": ("cluster",),
    "failover": ("to",),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "open": ("consumer",),
    "publish": ("count",),
    "resend": ("producer", "from_seq", "to_seq"),
    "set_behaviour": ("consumer", "behaviour"),
    "wait_received": ("count",),
    "sleep": ("ms",),
    "expire_messages": ("seconds",),
    "deduplication": ("enabled",),
    "open_producer": ("producer",),
    "close_producer": ("producer",),
    "cluster_down": ("cluster",),
    "cluster_up": ("cluster",),
    "replicated_status": ("cluster", "enabled"),
    "link_down": ("cluster", "remote"),
    "link_up": ("cluster", "remote"),
    "replicator_faults": ("cluster", "remote"),
    "read": ("cluster",),
    "compact": ("cluster",),
    "delete_subscription": ("cluster",),
    "failover": ("to",),
}


# --- entry points ---------------------------------------------------------------------------------------


def builtin_scenarios() -> dict[str, Scenario]:
    """Every scenario shipped in ``conformance/scenarios/builtin/``, by name, sorted."""
    out: dict[str, Scenario] = {}
    for name in _builtin_names():
        out[name] = load_scenario(name)
    return out


def load_scenario(name_or_path: str | Path) -> Scenario:
    """A built-in scenario by name (``join-while-pending``) or a scenario file (``.toml`` / ``.json``)."""
    text = str(name_or_path)
    path = Path(text)
    if isinstance(name_or_path, Path) or path.suffix in (".toml", ".json") or path.exists():
        return _load_file(path)
    builtins = _builtin_names()
    if text not in builtins:
        raise InvalidScenario(
            f"Unknown scenario {text!r}: not a built-in scenario and no such file.{did_you_mean(text, builtins)}"
            f" Built-in scenarios: {', '.join(builtins)}; or pass a path to a .toml or .json file."
        )
    resource = resources.files("conformance.scenarios").joinpath("builtin", f"{text}.toml")
    return loads_scenario(resource.read_text(encoding="utf-8"), "toml", source=f"builtin scenario {text!r}")


def loads_scenario(text: str, fmt: str, *, source: str = "<string>", default_name: str | None = None) -> Scenario:
    """Parse scenario text in ``fmt`` (``"toml"`` or ``"json"``)."""
    if fmt == "toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InvalidScenario(f"{source}: not valid TOML: {exc}.") from None
    elif fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidScenario(f"{source}: not valid JSON: {exc}.") from None
    else:
        raise InvalidScenario(f"Expected scenario format 'toml' or 'json' but got fmt={fmt!r}.")
    return parse_scenario(data, source=source, default_name=default_name)


def parse_scenario(data: Any, *, source: str = "<data>", default_name: str | None = None) -> Scenario:
    """Build and validate a :class:`Scenario` from the decoded file structure (a mapping)."""
    if not isinstance(data, Mapping):
        raise InvalidScenario(f"{source}: expected a table/object at the top level but got {_type(data)}.")
    _check_keys(data, _TOP_LEVEL, f"{source}: top level")
    name = data.get("name", default_name)
    if name is None:
        raise InvalidScenario(f"{source}: missing 'name' (a short identifier such as 'join-while-pending').")
    name = _name(name, f"{source}: name")
    where = f"scenario {name!r}" if source.startswith("builtin") else f"{source}"
    description = _str(data.get("description", ""), f"{where}: description")
    tags = tuple(_str(t, f"{where}: tags") for t in _list(data.get("tags", []), f"{where}: tags"))
    subscription = _subscription(data.get("subscription", {}), f"{where}: [subscription]")
    settings = _settings(data.get("settings", {}), f"{where}: [settings]")
    broker = _broker(data.get("broker", {}), f"{where}: [broker]")
    raw_steps = _list(data.get("steps"), f"{where}: steps") if "steps" in data else None
    if not raw_steps:
        raise InvalidScenario(f'{where}: no steps; add at least one [[steps]] table, e.g. do = "open".')
    steps = tuple(_step(raw, f"{where}: step {i}") for i, raw in enumerate(raw_steps, start=1))
    scenario = Scenario(
        name=name,
        steps=steps,
        description=description,
        subscription=subscription,
        settings=settings,
        tags=tags,
        broker=broker,
    )
    _check_semantics(scenario, where)
    return scenario


# --- files ----------------------------------------------------------------------------------------------


def _builtin_names() -> list[str]:
    folder = resources.files("conformance.scenarios").joinpath("builtin")
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))


def _load_file(path: Path) -> Scenario:
    if path.suffix not in (".toml", ".json"):
        raise InvalidScenario(f"Scenario file {str(path)!r} must end in .toml or .json.")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidScenario(f"Cannot read scenario file {str(path)!r}: {exc.strerror or exc}.") from None
    except UnicodeDecodeError:
        raise InvalidScenario(f"Scenario file {str(path)!r} is not UTF-8 text.") from None
    return loads_scenario(text, path.suffix[1:], source=str(path), default_name=path.stem)


# --- sections -------------------------------------------------------------------------------------------


def _subscription(raw: Any, where: str) -> SubscriptionSettings:
    table = _table(raw, where)
    _check_keys(table, ("name", "mode", "allow_out_of_order_delivery"), where)
    default = SubscriptionSettings()
    return SubscriptionSettings(
        name=_name(table.get("name", default.name), f"{where} name"),
        mode=_choice(table.get("mode", default.mode), KEY_SHARED_MODES, f"{where} mode", upper=True),
        allow_out_of_order_delivery=_bool(
            table.get("allow_out_of_order_delivery", default.allow_out_of_order_delivery),
            f"{where} allow_out_of_order_delivery",
        ),
    )


def _settings(raw: Any, where: str) -> Settings:
    table = _table(raw, where)
    names = tuple(f.name for f in fields(Settings))
    _check_keys(table, names, where)
    values: dict[str, Any] = {}
    for f in fields(Settings):
        if f.name not in table:
            continue
        if f.name == "clusters":
            values[f.name] = _clusters(table[f.name], f"{where} clusters")
        elif f.name == "replication_delays":
            values[f.name] = _delays(table[f.name], f"{where} replication_delays")
        elif f.name == "unnamed_producers":
            names = tuple(_name(n, f"{where} unnamed_producers") for n in _list(table[f.name], f"{where} {f.name}"))
            if len(set(names)) != len(names):
                raise InvalidScenario(f"{where} unnamed_producers: name each producer once, got {list(names)!r}.")
            values[f.name] = names
        elif f.type in ("bool", bool):
            values[f.name] = _bool(table[f.name], f"{where} {f.name}")
        elif f.name == "selector":
            values[f.name] = _choice(table[f.name], SELECTORS, f"{where} selector")
        elif f.name == "topic":
            values[f.name] = _choice(table[f.name], TOPIC_KINDS, f"{where} topic")
        else:
            minimum = 0 if f.name in ("payload_bytes", "partitions") else 1
            values[f.name] = _int(table[f.name], f"{where} {f.name}", minimum=minimum)
    settings = Settings(**values)
    if settings.points and settings.selector == "auto-split":
        raise InvalidScenario(f'{where}: points applies only to selector = "consistent-hashing", not "auto-split".')
    for origin, to, _ in settings.replication_delays:
        for name in (origin, to):
            if name not in settings.clusters:
                raise InvalidScenario(
                    f"{where} replication_delays: cluster {name!r} is not one of the clusters"
                    f" ({', '.join(settings.clusters) or 'none: set clusters = [...] first'})."
                )
    return settings


def _broker(raw: Any, where: str) -> tuple[tuple[str, int | bool], ...]:
    """``[broker]``: broker.conf names of :data:`BROKER_SETTINGS`, each a whole number (or a flag)."""
    table = _table(raw, where)
    _check_keys(table, tuple(BROKER_SETTINGS), where)
    out: dict[str, int | bool] = {}
    for name, value in table.items():
        if name == "brokerDeduplicationEnabled":
            out[name] = _bool(value, f"{where} {name}")
        else:
            out[name] = _int(value, f"{where} {name}", minimum=1 if name == "dispatcherMaxReadBatchSize" else 0)
    try:
        BrokerConfig.from_broker_conf(out)  # the model's own validation, so a file the loader accepts runs
    except InvalidArgument as exc:
        raise InvalidScenario(f"{where}: {exc}") from None
    return tuple(sorted(out.items()))


def _clusters(raw: Any, where: str) -> tuple[str, ...]:
    names = tuple(_name(n, where) for n in _list(raw, where))
    if len(names) < 2 or len(set(names)) != len(names):
        raise InvalidScenario(f"{where}: a failover needs two or more distinct cluster names, got {list(names)!r}.")
    return names


def _delays(raw: Any, where: str) -> tuple[tuple[str, str, int], ...]:
    out: list[tuple[str, str, int]] = []
    for item in _list(raw, where):
        if not (isinstance(item, list) and len(item) == 3):
            raise InvalidScenario(f'{where}: each delay is [from, to, ms], e.g. ["r1", "r2", 900]; got {_type(item)}.')
        out.append((_name(item[0], f"{where} from"), _name(item[1], f"{where} to"), _int(item[2], f"{where} ms")))
    links = [(a, b) for a, b, _ in out]
    if len(set(links)) != len(links) or any(a == b for a, b in links):
        raise InvalidScenario(f"{where}: give each link from -> to (two different clusters) once, got {raw!r}.")
    return tuple(out)


def _step(raw: Any, where: str) -> Step:
    table = _table(raw, where)
    if "do" not in table:
        raise InvalidScenario(f"{where}: missing 'do' (one of {', '.join(STEP_TYPES)}).")
    do = table["do"]
    if not isinstance(do, str) or do not in STEP_TYPES:
        hint = did_you_mean(do, STEP_TYPES) if isinstance(do, str) else ""
        raise InvalidScenario(f"{where}: unknown step do={do!r}.{hint} Steps: {', '.join(STEP_TYPES)}.")
    where = f"{where} ({do})"
    _check_keys(table, ("do", *_STEP_FIELDS[do]), where)
    for required in _REQUIRED.get(do, ()):
        if required not in table:
            raise InvalidScenario(f"{where}: missing {required!r}.")
    parse = _STEP_PARSERS[do]
    return parse(table, where)  # type: ignore[no-any-return]


def _behaviour(table: Mapping[str, Any], where: str, default: str = "ack") -> Behaviour:
    kind = _choice(table.get("behaviour", default), BEHAVIOURS, f"{where} behaviour")
    delay = _int(table.get("delay_ms", 0), f"{where} delay_ms", minimum=0)
    nack_times = _int(table.get("nack_times", 1), f"{where} nack_times", minimum=1)
    if "delay_ms" in table and kind != "ack_after":
        raise InvalidScenario(f'{where}: delay_ms applies only to behaviour = "ack_after" (got {kind!r}).')
    if "nack_times" in table and kind != "nack":
        raise InvalidScenario(f'{where}: nack_times applies only to behaviour = "nack" (got {kind!r}).')
    return Behaviour(kind=kind, delay_ms=delay, nack_times=nack_times)


def _open(t: Mapping[str, Any], where: str) -> Open:
    ranges: tuple[tuple[int, int], ...] = ()
    if "ranges" in t:
        ranges = _ranges(t["ranges"], f"{where} ranges")
    return Open(
        consumer=_name(t["consumer"], f"{where} consumer"),
        behaviour=_behaviour(t, where),
        name=None if "name" not in t else _name(t["name"], f"{where} name"),
        receiver_queue=None
        if "receiver_queue" not in t
        else _int(t["receiver_queue"], f"{where} receiver_queue", minimum=0),
        mode=None if "mode" not in t else _choice(t["mode"], KEY_SHARED_MODES, f"{where} mode", upper=True),
        allow_out_of_order_delivery=None
        if "allow_out_of_order_delivery" not in t
        else _bool(t["allow_out_of_order_delivery"], f"{where} allow_out_of_order_delivery"),
        ranges=ranges,
        paused=_bool(t.get("paused", False), f"{where} paused"),
        ack_timeout_ms=_ack_timeout(t.get("ack_timeout_ms", 0), f"{where} ack_timeout_ms"),
    )


def _ack_timeout(raw: Any, where: str) -> int:
    value = _int(raw, where, minimum=0)
    if 0 < value < MIN_ACK_TIMEOUT_MS:
        raise InvalidScenario(
            f"{where}: {value} is below the client's minimum ack timeout ({MIN_ACK_TIMEOUT_MS} ms, the C++ client"
            f" behind pulsar-client refuses less); use 0 (off) or at least {MIN_ACK_TIMEOUT_MS}."
        )
    return value


def _publish(t: Mapping[str, Any], where: str) -> Publish:
    raw_keys = t.get("keys", 10)
    prefix = _str(t.get("key_prefix", "key-"), f"{where} key_prefix")
    if isinstance(raw_keys, list):
        if "key_prefix" in t:
            raise InvalidScenario(f"{where}: key_prefix applies only when keys is a count, not a list.")
        names = tuple(_str(k, f"{where} keys") for k in raw_keys)
        if not names or any(not k for k in names):
            raise InvalidScenario(f"{where}: keys must be a non-empty list of non-empty strings, got {raw_keys!r}.")
        if len(set(names)) != len(names):
            raise InvalidScenario(f"{where}: keys contains duplicates: {raw_keys!r}.")
        keys = KeySet(names=names)
    else:
        keys = KeySet(count=_int(raw_keys, f"{where} keys"), prefix=prefix)
    return Publish(
        count=_int(t["count"], f"{where} count"),
        keys=keys,
        producer=_name(t.get("producer", "p1"), f"{where} producer"),
        key_field=_choice(t.get("key_field", "partition_key"), KEY_FIELDS, f"{where} key_field"),
        batching=_choice(t.get("batching", "none"), BATCHING_MODES, f"{where} batching"),
        order=_choice(t.get("order", "cycle"), KEY_ORDERS, f"{where} order"),
        sequence=_choice(t.get("sequence", "explicit"), SEQUENCE_MODES, f"{where} sequence"),
        sequence_ids=_sequence_ids(t, where),
        cluster=None if "cluster" not in t else _name(t["cluster"], f"{where} cluster"),
        deliver_after_ms=_int(t.get("deliver_after_ms", 0), f"{where} deliver_after_ms", minimum=0),
        spacing_ms=_spacing(t, where),
        **_send_ids(t, where),
    )


def _spacing(t: Mapping[str, Any], where: str) -> int:
    """``spacing_ms``: only for default batches, whose batch timer it exercises (``batch_flushed_early``)."""
    spacing = _int(t.get("spacing_ms", 0), f"{where} spacing_ms", minimum=0)
    if spacing and t.get("batching", "none") != "default":
        raise InvalidScenario(f'{where}: spacing_ms applies only with batching = "default".')
    return spacing


def _send_ids(t: Mapping[str, Any], where: str) -> dict[str, int | None]:
    """``highest_sequence_id`` (and ``send_sequence_id``): the step's messages as one batch with these send ids."""
    if "highest_sequence_id" not in t:
        if "send_sequence_id" in t:
            raise InvalidScenario(f"{where}: send_sequence_id applies only with highest_sequence_id.")
        return {}
    highest = _int(t["highest_sequence_id"], f"{where} highest_sequence_id", minimum=1)
    send = None if "send_sequence_id" not in t else _int(t["send_sequence_id"], f"{where} send_sequence_id", minimum=1)
    for name, bad in (
        ("batching", t.get("batching", "none") != "none"),
        ("sequence", t.get("sequence", "explicit") != "explicit"),
        ("deliver_after_ms", bool(t.get("deliver_after_ms", 0))),
        ("cluster", "cluster" in t),
    ):
        if bad:
            raise InvalidScenario(
                f"{where}: highest_sequence_id sends the step as one batch of its own (the harness's protocol"
                f" producer, explicit ids, no delay, one cluster); drop {name}."
            )
    if "sequence_ids" in t and isinstance(t["sequence_ids"], list) and t["sequence_ids"]:
        first = t["sequence_ids"][0]
        if send is None and isinstance(first, int) and highest < first:
            raise InvalidScenario(
                f"{where}: highest_sequence_id {highest} is below the send's sequence id {first}; Pulsar refuses that"
                " send (MetadataError)."
            )
    if send is not None and highest < send:
        raise InvalidScenario(
            f"{where}: highest_sequence_id {highest} is below send_sequence_id {send}; Pulsar refuses that send"
            " (MetadataError)."
        )
    return {"highest_sequence_id": highest, "send_sequence_id": send}


def _sequence_ids(t: Mapping[str, Any], where: str) -> tuple[int, ...]:
    """``sequence_ids``: ``count`` distinct ids of at least 1 (``pulsar-client`` drops a sequence id of 0)."""
    if "sequence_ids" not in t:
        return ()
    raw = t["sequence_ids"]
    if not isinstance(raw, list) or not raw:
        raise InvalidScenario(f"{where}: sequence_ids must be a non-empty list of whole numbers, got {raw!r}.")
    ids = tuple(_int(v, f"{where} sequence_ids", minimum=1) for v in raw)
    if len(set(ids)) != len(ids):
        raise InvalidScenario(f"{where}: sequence_ids contains duplicates: {raw!r}; resend an id with a resend step.")
    count = t.get("count")
    if count != len(ids):
        raise InvalidScenario(f"{where}: sequence_ids names {len(ids)} ids but count is {count!r}; make them agree.")
    if t.get("sequence", "explicit") != "explicit":
        raise InvalidScenario(f'{where}: sequence_ids needs sequence = "explicit" (the driver chooses the ids).')
    return ids


#: ``ack = "all"`` / ``"none"`` in a ``consume`` step, else a table of :class:`AckPlan` fields.
ACK_WORDS: dict[str, AckPlan] = {"all": AckPlan(), "none": AckPlan(invert=True)}


def _ack_plan(raw: Any, where: str) -> AckPlan:
    if isinstance(raw, str):
        if raw not in ACK_WORDS:
            raise InvalidScenario(f"{where}: {raw!r} is not one of all, none, or a table such as {{every = 2}}.")
        return ACK_WORDS[raw]
    table = _table(raw, where)
    _check_keys(table, ("every", "offset", "below", "invert"), where)
    return AckPlan(
        every=_int(table.get("every", 1), f"{where} every"),
        offset=_int(table.get("offset", 0), f"{where} offset", minimum=0),
        below=None if "below" not in table else _int(table["below"], f"{where} below", minimum=0),
        invert=_bool(table.get("invert", False), f"{where} invert"),
    )


def _resend(t: Mapping[str, Any], where: str) -> Resend:
    step = Resend(
        producer=_name(t["producer"], f"{where} producer"),
        from_seq=_int(t["from_seq"], f"{where} from_seq"),
        to_seq=_int(t["to_seq"], f"{where} to_seq"),
        reconnect=_bool(t.get("reconnect", True), f"{where} reconnect"),
    )
    if step.to_seq < step.from_seq:
        raise InvalidScenario(f"{where}: to_seq={step.to_seq} is below from_seq={step.from_seq}.")
    return step


def _consumer_step(cls: type) -> Callable[[Mapping[str, Any], str], Any]:
    def parse(t: Mapping[str, Any], where: str) -> Any:
        return cls(consumer=_name(t.get("consumer"), f"{where} consumer"))

    return parse


def _held_step(cls: type) -> Callable[[Mapping[str, Any], str], Any]:
    def parse(t: Mapping[str, Any], where: str) -> Any:
        count = None if "count" not in t else _int(t["count"], f"{where} count")
        return cls(consumer=_name(t.get("consumer"), f"{where} consumer"), count=count)

    return parse


_STEP_PARSERS: dict[str, Callable[[Mapping[str, Any], str], Any]] = {
    "open": _open,
    "publish": _publish,
    "resend": _resend,
    "set_behaviour": lambda t, w: SetBehaviour(
        consumer=_name(t["consumer"], f"{w} consumer"), behaviour=_behaviour(t, w)
    ),
    "ack_held": _held_step(AckHeld),
    "nack_held": _held_step(NackHeld),
    "redeliver": lambda t, w: Redeliver(
        consumer=_name(t.get("consumer"), f"{w} consumer"),
        keep_prefetched=_bool(t.get("keep_prefetched", False), f"{w} keep_prefetched"),
    ),
    "close": _consumer_step(Close),
    "crash": _consumer_step(Crash),
    "pause": _consumer_step(Pause),
    "resume": _consumer_step(Resume),
    "stall_connection": _consumer_step(StallConnection),
    "resume_connection": _consumer_step(ResumeConnection),
    "wait_quiet": lambda t, w: WaitQuiet(
        quiet_ms=None if "quiet_ms" not in t else _int(t["quiet_ms"], f"{w} quiet_ms"),
        timeout_ms=None if "timeout_ms" not in t else _int(t["timeout_ms"], f"{w} timeout_ms"),
    ),
    "wait_received": lambda t, w: WaitReceived(
        count=_int(t["count"], f"{w} count"),
        consumer=None if "consumer" not in t else _name(t["consumer"], f"{w} consumer"),
        timeout_ms=None if "timeout_ms" not in t else _int(t["timeout_ms"], f"{w} timeout_ms"),
    ),
    "wait_delivered": lambda t, w: WaitDelivered(
        timeout_ms=None if "timeout_ms" not in t else _int(t["timeout_ms"], f"{w} timeout_ms"),
    ),
    "sleep": lambda t, w: Sleep(ms=_int(t["ms"], f"{w} ms", minimum=0)),
    "expire_messages": lambda t, w: ExpireMessages(seconds=_int(t["seconds"], f"{w} seconds", minimum=0)),
    "deduplication": lambda t, w: Deduplication(enabled=_bool(t["enabled"], f"{w} enabled")),
    "open_producer": lambda t, w: OpenProducer(producer=_name(t["producer"], f"{w} producer")),
    "close_producer": lambda t, w: CloseProducer(producer=_name(t["producer"], f"{w} producer")),
    "restart_broker": lambda t, w: RestartBroker(kill=_bool(t.get("kill", False), f"{w} kill")),
    "storage_down": lambda t, w: StorageDown(
        fail_after_ms=_int(t.get("fail_after_ms", 200), f"{w} fail_after_ms", minimum=0)
    ),
    "storage_up": lambda t, w: StorageUp(),
    "consume": lambda t, w: Consume(ack=_ack_plan(t.get("ack", "all"), f"{w} ack")),
    "snapshot": lambda t, w: Snapshot(),
    "cluster_down": lambda t, w: ClusterDown(cluster=_name(t["cluster"], f"{w} cluster")),
    "cluster_up": lambda t, w: ClusterUp(cluster=_name(t["cluster"], f"{w} cluster")),
    "link_down": lambda t, w: LinkDown(
        cluster=_name(t["cluster"], f"{w} cluster"), remote=_name(t["remote"], f"{w} remote")
    ),
    "link_up": lambda t, w: LinkUp(
        cluster=_name(t["cluster"], f"{w} cluster"), remote=_name(t["remote"], f"{w} remote")
    ),
    "read": lambda t, w: Read(
        cluster=_name(t["cluster"], f"{w} cluster"), compacted=_bool(t.get("compacted", False), f"{w} compacted")
    ),
    "compact": lambda t, w: Compact(cluster=_name(t["cluster"], f"{w} cluster")),
    "replicator_faults": lambda t, w: ReplicatorFaults(
        cluster=_name(t["cluster"], f"{w} cluster"),
        remote=_name(t["remote"], f"{w} remote"),
        lose_receipts=_bool(t.get("lose_receipts", False), f"{w} lose_receipts"),
        repeat_window=_int(t.get("repeat_window", 0), f"{w} repeat_window", minimum=0),
    ),
    "delete_subscription": lambda t, w: DeleteSubscription(cluster=_name(t["cluster"], f"{w} cluster")),
    "replicated_status": lambda t, w: ReplicatedStatus(
        cluster=_name(t["cluster"], f"{w} cluster"), enabled=_bool(t["enabled"], f"{w} enabled")
    ),
    "failover": lambda t, w: FailOver(to=_name(t["to"], f"{w} to")),
}


# --- whole-scenario checks ------------------------------------------------------------------------------


def _check_failover(scenario: Scenario, where: str) -> None:
    """A failover scenario: only the failover steps, clusters that exist, one ``failover`` as the last step,
    to another cluster than the first (where the consumer starts)."""
    clusters = scenario.settings.clusters
    allowed = ", ".join(str(getattr(cls, "do", cls.__name__)) for cls in FAILOVER_STEPS)
    last = len(scenario.steps)
    for index, step in enumerate(scenario.steps, start=1):
        at = f"{where}: step {index} ({step.do})"
        if not isinstance(step, FAILOVER_STEPS):
            raise InvalidScenario(f"{at}: not a failover step; a scenario with [settings] clusters uses {allowed}.")
        for named in (getattr(step, "to", None), getattr(step, "cluster", None), getattr(step, "remote", None)):
            if named is not None and named not in clusters:
                raise InvalidScenario(
                    f"{at}: cluster {named!r} is not one of the clusters ({', '.join(clusters)})."
                    + did_you_mean(named, clusters)
                )
        if isinstance(step, (LinkDown, LinkUp, ReplicatorFaults)) and step.cluster == step.remote:
            raise InvalidScenario(
                f"{at}: a replication link joins two clusters, but cluster and remote are both {step.cluster!r}."
            )
        if isinstance(step, DeleteSubscription) and step.cluster == clusters[0]:
            raise InvalidScenario(
                f"{at}: the consumer is connected in {clusters[0]!r}; delete the subscription in another cluster."
            )
        if isinstance(step, Publish) and (step.producer, step.key_field, step.batching) != (
            "p1",
            "partition_key",
            "none",
        ):
            raise InvalidScenario(
                f"{at}: a failover publish sends one keyed message at a time from the cluster's own producer;"
                " producer, key_field and batching are not used here."
            )
        if isinstance(step, FailOver):
            if index != last:
                raise InvalidScenario(
                    f"{at}: the failover drains the other cluster and ends the run: make it the last step."
                )
            if step.to == clusters[0]:
                raise InvalidScenario(f"{at}: the consumer starts in {clusters[0]!r}; fail over to another cluster.")
    if not isinstance(scenario.steps[-1], FailOver):
        raise InvalidScenario(
            f'{where}: a failover scenario ends with a failover step (do = "failover", to = "{clusters[1]}").'
        )
    if not scenario.settings.drain:
        raise InvalidScenario(
            f"{where}: drain = false does not apply to a failover scenario (the failover step drains)."
        )


#: what a non-persistent topic cannot do, by step kind: the reason the loader gives
_NOT_ON_NON_PERSISTENT: dict[type, str] = {
    Resend: "a resend is judged by deduplication, which never applies to a non-persistent topic.",
    RestartBroker: "a non-persistent topic keeps nothing over a broker restart.",
    StorageDown: "a non-persistent topic writes nothing to storage.",
    StorageUp: "a non-persistent topic writes nothing to storage.",
    WaitReceived: "a non-persistent topic owes no consumer any count (it may drop messages); use wait_quiet.",
}


def _check_raw_producers(scenario: Scenario, where: str) -> None:
    """A producer that sends a batch with its highest id sends everything through the harness's protocol producer,
    which sends each other message alone, with the driver's id: no client batching, no auto ids, no delay."""
    raw = scenario.raw_producers()
    for index, step in enumerate(scenario.steps, start=1):
        if not isinstance(step, Publish) or step.producer not in raw or step.highest_sequence_id is not None:
            continue
        for name, bad in (
            ("batching", step.batching != "none"),
            ("sequence", step.sequence != "explicit"),
            ("deliver_after_ms", bool(step.deliver_after_ms)),
        ):
            if bad:
                raise InvalidScenario(
                    f"{where}: step {index} (publish): producer {step.producer!r} sends a batch with"
                    f" highest_sequence_id elsewhere, so it is the harness's protocol producer, which sends other"
                    f" messages alone with the driver's ids; drop {name}."
                )


def _check_non_persistent(scenario: Scenario, where: str) -> None:
    """``[settings] topic = "non-persistent"``: only what such a topic does, and one producer.

    The broker gives every message of a non-persistent topic the id ``0:0`` (``NonPersistentTopic.publishMessage``),
    so the driver names each message by its producer's sequence id (``docs/trace-format.md``): one producer, and
    no ``default`` batching (a batch of several keys is one entry the checkers could not tell apart).
    """
    if scenario.settings.deduplication or any(name.startswith("brokerDeduplication") for name, _ in scenario.broker):
        raise InvalidScenario(
            f'{where}: [settings] topic = "non-persistent": deduplication never applies to a non-persistent topic;'
            " drop deduplication (and the brokerDeduplication settings)."
        )
    producers: set[str] = set()
    for index, step in enumerate(scenario.steps, start=1):
        at = f"{where}: step {index} ({step.do})"
        reason = _NOT_ON_NON_PERSISTENT.get(type(step))
        if reason is not None:
            raise InvalidScenario(
                f'{at}: not on a non-persistent topic ([settings] topic = "non-persistent"); {reason}'
            )
        if isinstance(step, Publish):
            if step.batching == "default":
                raise InvalidScenario(
                    f'{at}: batching = "default" on a non-persistent topic: every message there has the id 0:0, so'
                    ' the messages of a batch of several keys cannot be told apart; use batching = "key_based" or'
                    ' "none".'
                )
            producers.add(step.producer)
            if len(producers) > 1:
                raise InvalidScenario(
                    f"{at}: a second producer ({', '.join(sorted(producers))}) on a non-persistent topic: the trace"
                    " names each message by its one producer's sequence id there (the broker's ids are all 0:0);"
                    " publish from one producer."
                )


#: what a Key_Shared run on a partitioned topic does not do, by step kind: the reason the loader gives
_NOT_ON_PARTITIONED: dict[type, str] = {
    Crash: "the driver watches a crashed consumer's removal in the topic's stats, which name one partition each.",
    Resend: "a resend is judged by deduplication, which the partitioned producer keeps per partition.",
    RestartBroker: "the Key_Shared driver restarts a broker under one non-partitioned topic only.",
    StorageDown: "the model fails the storage of one non-partitioned topic only.",
    StorageUp: "the model fails the storage of one non-partitioned topic only.",
    ExpireMessages: "expire_messages names one non-partitioned topic's subscription.",
}


def _check_partitioned(scenario: Scenario, where: str) -> None:
    """``[settings] partitions = N`` in a Key_Shared scenario: what the driver does on a partitioned topic.

    It creates the topic through the target's admin API, subscribes every consumer to the partitioned name and
    publishes to it (the producer routes each key by its hash); each partition is a topic with its own
    subscription and dispatcher, and the trace names each message's partition.  What acts on one topic's
    stats, storage or broker is refused, as are a non-persistent topic and deduplication.
    """
    n = scenario.settings.partitions
    if scenario.settings.topic != "persistent":
        raise InvalidScenario(f"{where}: partitions = {n} needs a persistent topic; drop [settings] topic.")
    if scenario.settings.deduplication:
        raise InvalidScenario(
            f"{where}: partitions = {n} with deduplication: the driver switches deduplication on for one"
            " non-partitioned topic; drop one of them."
        )
    limits = [name for name, _ in scenario.broker if name.startswith("maxUnackedMessagesPer")]
    if limits:
        raise InvalidScenario(
            f"{where}: partitions = {n} with [broker] {', '.join(limits)}: the broker counts the limit per"
            " partition's consumer, the checker per consumer; drop one of them."
        )
    if "record:key-hash-ranges" in scenario.tags:
        raise InvalidScenario(
            f"{where}: partitions = {n} with the record:key-hash-ranges tag: the ranges are read from one"
            " non-partitioned topic's stats; drop one of them."
        )
    for index, step in enumerate(scenario.steps, start=1):
        reason = _NOT_ON_PARTITIONED.get(type(step))
        if reason is not None:
            raise InvalidScenario(
                f"{where}: step {index} ({step.do}): not on a partitioned topic (partitions = {n}); {reason}"
            )


def _check_zero_queue(scenario: Scenario, where: str) -> None:
    """A zero-queue consumer (``receiver_queue = 0``) takes one message per receive: the clients refuse it on a
    partitioned topic and do not support it with batched messages (Java's ``ZeroQueueConsumerImpl`` fails a batch;
    the C++ client's ``receiveIndividualMessagesFromBatch`` says it is not supported)."""
    zero = [i for i, step in enumerate(scenario.steps, start=1) if isinstance(step, Open) and step.receiver_queue == 0]
    if not zero:
        return
    at = f"{where}: step {zero[0]} (open)"
    if scenario.settings.partitions:
        raise InvalidScenario(f"{at}: receiver_queue = 0 is refused by the clients on a partitioned topic.")
    batched = [
        i
        for i, step in enumerate(scenario.steps, start=1)
        if isinstance(step, Publish) and (step.batching != "none" or step.highest_sequence_id is not None)
    ]
    if batched:
        raise InvalidScenario(
            f"{at}: receiver_queue = 0 does not take batched messages, but step {batched[0]} publishes in batches;"
            ' use batching = "none" or a receiver queue of 1 or more.'
        )


def _check_unnamed_producers(scenario: Scenario, where: str) -> None:
    """An unnamed producer is created once: another incarnation would get another name from the broker, so the
    trace would hold two producers where the scenario names one (and deduplication would not link them)."""
    unnamed = set(scenario.settings.unnamed_producers)
    if not unnamed:
        return
    if scenario.settings.partitions:
        raise InvalidScenario(
            f"{where}: unnamed_producers on a partitioned topic would name each partition's producer apart;"
            " drop unnamed_producers or partitions."
        )
    batching: dict[str, str] = {}
    for index, step in enumerate(scenario.steps, start=1):
        at = f"{where}: step {index} ({step.do})"
        producer = getattr(step, "producer", None)
        if producer not in unnamed:
            continue
        if isinstance(step, CloseProducer) or (isinstance(step, Resend) and step.reconnect):
            raise InvalidScenario(
                f"{at}: producer {producer!r} is unnamed (the broker names it) and is created once per run; a new"
                " incarnation would be another producer to the broker. Use a named producer, or another handle."
            )
        mode = "none" if isinstance(step, (OpenProducer, Resend)) else getattr(step, "batching", None)
        if mode is not None and batching.setdefault(producer, mode) != mode:
            raise InvalidScenario(
                f"{at}: unnamed producer {producer!r} changes batching ({batching[producer]!r} -> {mode!r}), which"
                " creates it again under another name; keep one batching mode."
            )
        if isinstance(step, Publish) and step.highest_sequence_id is not None:
            raise InvalidScenario(
                f"{at}: highest_sequence_id is sent by the harness's protocol producer, which names itself;"
                f" drop {producer!r} from unnamed_producers."
            )


def _check_semantics(scenario: Scenario, where: str) -> None:
    """Consumer lifecycles, sticky ranges against modes, and resends against what was published."""
    if scenario.is_failover():
        if scenario.settings.topic != "persistent":
            raise InvalidScenario(f"{where}: a failover scenario replicates a persistent topic; drop [settings] topic.")
        if scenario.raw_producers():
            raise InvalidScenario(
                f"{where}: highest_sequence_id is sent by the harness's protocol producer, which the failover workload"
                " does not use; drop it."
            )
        if scenario.settings.unnamed_producers:
            raise InvalidScenario(f"{where}: the failover workload names its producers; drop unnamed_producers.")
        _check_failover(scenario, where)
        return
    if scenario.settings.topic == "non-persistent":
        _check_non_persistent(scenario, where)
    _check_raw_producers(scenario, where)
    _check_unnamed_producers(scenario, where)
    _check_zero_queue(scenario, where)
    if scenario.settings.partitions:
        _check_partitioned(scenario, where)
    open_now: dict[str, bool] = {}  # handle -> paused
    opened_ever: set[str] = set()
    published: dict[str, int] = {}  # producer -> highest sequence id sent
    sent_ids: dict[str, set[int]] = {}  # producer -> every sequence id it sent (sequence_ids may leave gaps)
    recreated: dict[str, bool] = {}  # producer -> created again (resend with reconnect) since its last own-id publish
    auto_ids: dict[str, set[int]] = {}  # producer -> the driver's ids of messages the client numbered
    sub = scenario.subscription
    for index, step in enumerate(scenario.steps, start=1):
        at = f"{where}: step {index} ({step.do})"
        if isinstance(step, Open):
            if step.consumer in open_now:
                raise InvalidScenario(
                    f"{at}: consumer {step.consumer!r} is already open; close or crash it before opening it again."
                )
            mode = step.mode or sub.mode
            if mode == "STICKY" and not step.ranges:
                raise InvalidScenario(
                    f"{at}: consumer {step.consumer!r} joins in STICKY mode and needs ranges,"
                    f" e.g. ranges = [[0, 32767]]."
                )
            if mode == "AUTO_SPLIT" and step.ranges:
                raise InvalidScenario(
                    f"{at}: ranges are sent only in STICKY mode, but consumer {step.consumer!r} joins in AUTO_SPLIT;"
                    f' set mode = "STICKY" (on the step or in [subscription]) or drop ranges.'
                )
            open_now[step.consumer] = step.paused
            opened_ever.add(step.consumer)
        elif (isinstance(step, FAILOVER_STEPS) and not isinstance(step, (Publish, Sleep))) or (
            isinstance(step, Publish) and step.cluster is not None
        ):
            raise InvalidScenario(f"{at}: a failover step; it needs [settings] clusters = [...] (two or more).")
        elif isinstance(step, Publish) and step.sequence_ids:
            highest = published.get(step.producer, 0)
            earlier = sent_ids.setdefault(step.producer, set())
            again = [i for i in step.sequence_ids if i in earlier]
            if again and step.highest_sequence_id is None:  # a batch sent with its ids may resend earlier ids
                raise InvalidScenario(
                    f"{at}: producer {step.producer!r} already sent sequence id {again[0]}; a message sent again keeps"
                    " its uid: use a resend step."
                )
            earlier.update(step.sequence_ids)
            recreated[step.producer] = False
            published[step.producer] = max(highest, *step.sequence_ids)
        elif isinstance(step, Publish):
            first = published.get(step.producer, 0) + 1
            if step.sequence == "auto":
                if not recreated.get(step.producer, False):
                    raise InvalidScenario(
                        f"{at}: sequence = \"auto\" numbers from the broker's answer on connect, so the driver's ids"
                        f" {first}.. match the client's only on a producer created again (a resend with reconnect ="
                        f" true) after publishing with its own ids; producer {step.producer!r} is not."
                    )
                auto_ids.setdefault(step.producer, set()).update(range(first, first + step.count))
            else:
                recreated[step.producer] = False
            published[step.producer] = first - 1 + step.count
            sent_ids.setdefault(step.producer, set()).update(range(first, first + step.count))
        elif isinstance(step, Resend):
            sent = published.get(step.producer, 0)
            if sent == 0:
                raise InvalidScenario(f"{at}: producer {step.producer!r} has published nothing to resend.")
            if step.to_seq > sent:
                raise InvalidScenario(
                    f"{at}: producer {step.producer!r} has sent sequence ids 1..{sent}; to_seq={step.to_seq} is beyond."
                )
            numbered = sorted(auto_ids.get(step.producer, set()) & set(range(step.from_seq, step.to_seq + 1)))
            if numbered:
                raise InvalidScenario(
                    f'{at}: producer {step.producer!r} sent id {numbered[0]} with sequence = "auto" (the client'
                    " chose its sequence id), so it cannot be resent under the same id."
                )
            if step.reconnect:
                recreated[step.producer] = True
        elif isinstance(step, WaitReceived):
            if step.consumer is not None and step.consumer not in opened_ever:
                raise InvalidScenario(f"{at}: consumer {step.consumer!r} is never opened before this step.")
        elif hasattr(step, "consumer"):
            consumer = step.consumer
            if consumer not in open_now:
                state = "was closed or crashed" if consumer in opened_ever else "was never opened"
                known = sorted(open_now)
                raise InvalidScenario(
                    f"{at}: consumer {consumer!r} {state}.{did_you_mean(consumer, known)}"
                    f" Open consumers here: {', '.join(known) or 'none'}."
                )
            if isinstance(step, (Close, Crash)):
                del open_now[consumer]
            elif isinstance(step, Pause):
                open_now[consumer] = True
            elif isinstance(step, Resume):
                open_now[consumer] = False


# --- value checkers -------------------------------------------------------------------------------------


def _type(value: object) -> str:
    return f"{value!r} (type={type(value).__name__})"


def _table(raw: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise InvalidScenario(f"{where}: expected a table/object but got {_type(raw)}.")
    return raw


def _list(raw: Any, where: str) -> Sequence[Any]:
    if not isinstance(raw, list):
        raise InvalidScenario(f"{where}: expected a list but got {_type(raw)}.")
    return raw


def _check_keys(table: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise InvalidScenario(
                f"{where}: unknown field {key!r}.{did_you_mean(str(key), allowed)} Allowed: {', '.join(allowed)}."
            )


def _int(value: Any, where: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidScenario(f"{where}: expected an integer but got {_type(value)}.")
    if value < minimum:
        raise InvalidScenario(f"{where}: expected an integer >= {minimum} but got {value}.")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidScenario(f"{where}: expected true or false but got {_type(value)}.")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidScenario(f"{where}: expected a string but got {_type(value)}.")
    return value


def _name(value: Any, where: str) -> str:
    text = _str(value, where)
    if not _NAME_RE.match(text):
        raise InvalidScenario(
            f"{where}: {text!r} is not a usable name; use letters, digits, '-', '_' and '.', starting with a"
            f" letter or digit."
        )
    return text


def _choice(value: Any, choices: Sequence[str], where: str, *, upper: bool = False) -> str:
    text = _str(value, where)
    if upper:
        text = text.upper().replace("-", "_")
    if text not in choices:
        raise InvalidScenario(f"{where}: {value!r} is not one of {', '.join(choices)}.{did_you_mean(text, choices)}")
    return text


def _ranges(raw: Any, where: str) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for item in _list(raw, where):
        if not (isinstance(item, list) and len(item) == 2):
            raise InvalidScenario(f"{where}: each range is a pair [start, end], got {_type(item)}.")
        start = _int(item[0], f"{where} start", minimum=0)
        end = _int(item[1], f"{where} end", minimum=0)
        if end > HASH_RANGE_MAX or start > end:
            raise InvalidScenario(
                f"{where}: range [{start}, {end}] must satisfy 0 <= start <= end <= {HASH_RANGE_MAX}."
            )
        out.append((start, end))
    if not out:
        raise InvalidScenario(f"{where}: empty; give at least one [start, end] pair.")
    ordered = sorted(out)
    for (s1, e1), (s2, e2) in itertools.pairwise(ordered):
        if s2 <= e1:
            raise InvalidScenario(
                f"{where}: ranges [{s1}, {e1}] and [{s2}, {e2}] of one consumer overlap (the client refuses this)."
            )
    return tuple(out)
