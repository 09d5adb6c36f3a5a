"""Write a :class:`Scenario` back to TOML or JSON (the plugin stores shrunk generated scenarios this way).

Only values that differ from the defaults are written, so a file stays as short as one written by hand, and
``load_scenario(dump_scenario(s, path)) == s`` for every valid scenario.  TOML is emitted directly (the shapes
are known and small), so no TOML writer is needed at run time.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from conformance.scenarios.model import (
    AckPlan,
    Behaviour,
    Consume,
    InvalidScenario,
    Open,
    Publish,
    Scenario,
    SetBehaviour,
    Settings,
    Step,
    SubscriptionSettings,
)

__all__ = ["dump_scenario", "dumps_scenario", "scenario_to_dict"]


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    """The file structure of ``scenario`` (what :func:`~conformance.scenarios.parse_scenario` reads)."""
    out: dict[str, Any] = {"name": scenario.name}
    if scenario.description:
        out["description"] = scenario.description
    if scenario.tags:
        out["tags"] = list(scenario.tags)
    sub = _non_default(scenario.subscription, SubscriptionSettings())
    if sub:
        out["subscription"] = sub
    settings = _non_default(scenario.settings, Settings())
    if settings:
        out["settings"] = settings
    if scenario.broker:
        out["broker"] = scenario.broker_conf()
    out["steps"] = [_step_to_dict(step) for step in scenario.steps]
    return out


def dumps_scenario(scenario: Scenario, fmt: str = "toml") -> str:
    """``scenario`` as TOML or JSON text."""
    data = scenario_to_dict(scenario)
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "toml":
        return _to_toml(data)
    raise InvalidScenario(f"Expected format 'toml' or 'json' but got fmt={fmt!r}.")


def dump_scenario(scenario: Scenario, path: str | Path) -> Path:
    """Write ``scenario`` to ``path``; the suffix (``.toml`` or ``.json``) picks the format."""
    target = Path(path)
    if target.suffix not in (".toml", ".json"):
        raise InvalidScenario(f"Scenario file {str(target)!r} must end in .toml or .json.")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dumps_scenario(scenario, target.suffix[1:]), encoding="utf-8")
    return target


def _non_default(value: Any, default: Any) -> dict[str, Any]:
    return {f.name: getattr(value, f.name) for f in fields(value) if getattr(value, f.name) != getattr(default, f.name)}


def _behaviour_fields(behaviour: Behaviour) -> dict[str, Any]:
    out: dict[str, Any] = {"behaviour": behaviour.kind}
    if behaviour.kind == "ack_after":
        out["delay_ms"] = behaviour.delay_ms
    if behaviour.kind == "nack" and behaviour.nack_times != 1:
        out["nack_times"] = behaviour.nack_times
    return out


def _step_to_dict(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {"do": step.do}
    if isinstance(step, Open):
        out["consumer"] = step.consumer
        if step.behaviour != Behaviour():
            out.update(_behaviour_fields(step.behaviour))
        for name in ("name", "receiver_queue", "mode", "allow_out_of_order_delivery"):
            if getattr(step, name) is not None:
                out[name] = getattr(step, name)
        if step.ranges:
            out["ranges"] = [list(r) for r in step.ranges]
        if step.paused:
            out["paused"] = True
        if step.ack_timeout_ms:
            out["ack_timeout_ms"] = step.ack_timeout_ms
        return out
    if isinstance(step, SetBehaviour):
        out["consumer"] = step.consumer
        out.update(_behaviour_fields(step.behaviour))
        return out
    if isinstance(step, Publish):
        out["count"] = step.count
        if step.keys.names:
            out["keys"] = list(step.keys.names)
        else:
            out["keys"] = step.keys.count
            if step.keys.prefix != "key-":
                out["key_prefix"] = step.keys.prefix
        default = Publish(count=step.count)
        for name in (
            "producer",
            "key_field",
            "batching",
            "order",
            "sequence",
            "cluster",
            "deliver_after_ms",
            "spacing_ms",
        ):
            if getattr(step, name) != getattr(default, name):
                out[name] = getattr(step, name)
        if step.sequence_ids:
            out["sequence_ids"] = list(step.sequence_ids)
        if step.highest_sequence_id is not None:
            out["highest_sequence_id"] = step.highest_sequence_id
        if step.send_sequence_id is not None:
            out["send_sequence_id"] = step.send_sequence_id
        return out
    if isinstance(step, Consume):
        if step.ack != AckPlan():
            out["ack"] = _ack_plan(step.ack)
        return out
    for f in fields(step):
        value = getattr(step, f.name)
        if value is None or (f.default is not MISSING and value == f.default):
            continue
        out[f.name] = value
    return out


def _ack_plan(plan: AckPlan) -> str | dict[str, Any]:
    """``"none"``, or the plan's fields that differ from acknowledging everything (an inline table)."""
    if plan == AckPlan(invert=True):
        return "none"
    return _non_default(plan, AckPlan())


# --- a small TOML emitter for the shapes above ----------------------------------------------------------


def _to_toml(data: dict[str, Any]) -> str:
    lines: list[str] = []
    for key, value in data.items():
        if not isinstance(value, (dict, list)) or (isinstance(value, list) and key != "steps"):
            lines.append(f"{key} = {_toml_value(value)}")
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append("")
            lines.append(f"[{key}]")
            lines.extend(f"{k} = {_toml_value(v)}" for k, v in value.items())
    for step in data.get("steps", []):
        lines.append("")
        lines.append("[[steps]]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in step.items())
    return "\n".join(lines) + "\n"


_TOML_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes and backslashes escaped, control characters (and DEL) as ``\\uXXXX``."""
    out = []
    for char in text:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # an inline table (a consume step's ack plan)
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise InvalidScenario(f"Cannot write {value!r} (type={type(value).__name__}) to a scenario file.")
