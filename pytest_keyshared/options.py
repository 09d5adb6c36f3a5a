"""The plugin's settings: one table, each setting reachable five ways, resolved in one fixed order.

A setting is given by a marker (``@pytest.mark.keyshared(seed=7)``, per-test settings only), the command line
(``--keyshared-seed=7``), an environment variable (``KEYSHARED_SEED=7``), the ini file (``keyshared_seed = 7``)
or its default, and the first of those that is present wins (pytest-timeout's order).  Help texts live here,
once, and feed both ``addoption`` and ``addini``.  A bad value is reported with its source, e.g.
``Invalid keyshared_seed 'x' from the ini file; expected an integer, 'last' or 'random'``.

Only the standard library at module level: the plugin imports this module when pytest starts.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CHECK_ENGINES",
    "ENV_PREFIX",
    "HYPOTHESIS_PROFILES",
    "SETTINGS",
    "Resolved",
    "Setting",
    "SettingError",
    "did_you_mean",
    "resolve",
    "resolve_marker",
]

ENV_PREFIX = "KEYSHARED_"
CHECK_ENGINES: tuple[str, ...] = ("python", "spark")
#: Our names for the Hypothesis profiles the generated cases register (``keyshared-<name>``).
HYPOTHESIS_PROFILES: tuple[str, ...] = ("fast", "thorough")


class SettingError(ValueError):
    """A setting's value is not acceptable; the message names the setting, the value and its source.

    A plain ``ValueError`` (not ``reference_model.errors.InvalidArgument``) so that this module, imported
    on every pytest start, needs nothing but the standard library; the plugin turns it into a usage error.
    """


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """A ``" Did you mean 'x'?"`` suffix when ``value`` is close to one of ``choices``, else ``""``."""
    close = difflib.get_close_matches(value, list(choices), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


@dataclass(frozen=True, slots=True)
class Setting:
    """One plugin setting.  ``parse`` turns the text into a value or raises ``ValueError(<what would work>)``."""

    name: str
    help: str
    default: str | None
    parse: Callable[[str], Any]
    metavar: str = "VALUE"
    per_test: bool = False  #: may be overridden by ``@pytest.mark.keyshared(<name>=...)``

    @property
    def ini(self) -> str:
        return f"keyshared_{self.name}"

    @property
    def flag(self) -> str:
        return "--keyshared-" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def dest(self) -> str:
        return f"keyshared_{self.name}"


@dataclass(frozen=True, slots=True)
class Resolved:
    """A setting's value and where it came from (for the header and for error messages)."""

    value: Any
    source: str


# -- parsers: each raises ValueError("expected ...") ---------------------------------------------------------


def _text(value: str) -> str:
    if not value.strip():
        raise ValueError("expected a non-empty string")
    return value.strip()


def _target(value: str) -> str:
    value = _text(value)
    if any(ch.isspace() for ch in value):
        raise ValueError("expected a target string without spaces, e.g. pulsar-lite, model, pulsar://127.0.0.1:6650")
    return value


def _admin_url(value: str) -> str:
    value = _text(value)
    if not value.startswith(("http://", "https://")):
        raise ValueError("expected an http:// or https:// URL of the broker's admin API, e.g. http://127.0.0.1:8080")
    return value.rstrip("/")


def _pulsar_version(value: str) -> str:
    from reference_model.versions import parse_version

    try:
        return str(parse_version(_text(value)))
    except ValueError as exc:
        raise ValueError(f"expected a Pulsar version like '4.0' or '3.0.7' ({exc})") from None


def _seed(value: str) -> int | str:
    value = _text(value).lower()
    if value in ("last", "random"):
        return value
    try:
        seed = int(value)
    except ValueError:
        raise ValueError("expected an integer, 'last' or 'random'") from None
    if not 0 <= seed < 2**32:
        raise ValueError("expected an integer between 0 and 4294967295, 'last' or 'random'")
    return seed


def _trace_layout(value: str) -> int | None:
    """The bucket count of ``bucketed[:N]``, None for ``flat`` (one parser: the layout module's)."""
    from conformance.trace.buckets import parse_layout

    return parse_layout(value)


def _choice(choices: tuple[str, ...], *, prefix: str = "") -> Callable[[str], str]:
    def parse(value: str) -> str:
        text = _text(value).lower()
        if prefix and text.startswith(prefix):
            text = text[len(prefix) :]
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}.{did_you_mean(text, choices)}".rstrip("."))
        return text

    return parse


def _soak_duration(value: str) -> float:
    from conformance.soak import parse_duration  # not at module level: this module stays stdlib-only

    try:
        return parse_duration(_text(value))
    except ValueError as exc:
        raise ValueError(str(exc).rstrip(".").replace("Expected", "expected")) from None


def _path(value: str) -> Path:
    return Path(_text(value)).expanduser()


def _expectations(value: str) -> str | Path:
    text = _text(value)
    if text.lower() in ("auto", "none"):
        return text.lower()
    return Path(text).expanduser()


#: Every setting, in ``--help`` order.
SETTINGS: Mapping[str, Setting] = {
    s.name: s
    for s in (
        Setting(
            "target",
            "The broker under test: pulsar-lite (default: the embedded broker, started on loopback), model, "
            "model:classic, model:pulsar-3.3, pulsar://HOST:PORT, testcontainers[:IMAGE:TAG], "
            "testcontainers-geo[:IMAGE:TAG] (two replicated clusters).",
            "pulsar-lite",
            _target,
            metavar="TARGET",
        ),
        Setting(
            "admin_url",
            "The admin (REST) URL of a pulsar://HOST:PORT target, e.g. http://127.0.0.1:8080; enables the "
            "cases that need the admin API (deduplication switch, topic stats).",
            None,
            _admin_url,
            metavar="URL",
        ),
        Setting(
            "pulsar_version",
            "The Pulsar version the target claims to be (e.g. 4.0, 3.3, 3.0.7); picks the reference selector and "
            "the contract the target is held to. Default: what the target declares.",
            None,
            _pulsar_version,
            metavar="VERSION",
        ),
        Setting(
            "seed",
            "Root seed of the run: an integer, 'last' (the previous run's seed) or 'random' (default). Each case "
            "derives its own seed from it and the case id.",
            "random",
            _seed,
            metavar="SEED",
            per_test=True,
        ),
        Setting(
            "artifacts",
            "Directory for traces, scenarios, verdicts and broker logs (default: keyshared-artifacts, relative to "
            "the directory pytest was started in); each session writes in a new subdirectory, DIR/latest links to "
            "the last one.",
            "keyshared-artifacts",
            _path,
            metavar="DIR",
        ),
        Setting(
            "hypothesis_profile",
            "Hypothesis profile of the generated cases: fast (CI, default) or thorough (nightly).",
            "fast",
            _choice(HYPOTHESIS_PROFILES, prefix="keyshared-"),
            metavar="NAME",
        ),
        Setting(
            "engine",
            "Check engine for the recorded traces: python (default, streaming) or spark (PySpark, local[*]).",
            "python",
            _choice(CHECK_ENGINES),
            metavar="ENGINE",
            per_test=True,
        ),
        Setting(
            "trace_layout",
            "Layout the recorded traces are also stored in: flat (default: only as recorded) or bucketed[:N] "
            "(beside each trace, NAME-buckets/ in the bucketed layout of N buckets, default 16: "
            "docs/trace-format.md), written when the trace ends.",
            "flat",
            _trace_layout,
            metavar="LAYOUT",
        ),
        Setting(
            "expectations",
            "File of cases known to fail on this target (TOML). 'auto' (default) uses the file shipped in "
            "conformance/expectations/ for the target, if any; 'none' expects everything to pass.",
            "auto",
            _expectations,
            metavar="FILE",
        ),
        Setting(
            "baseline",
            "A results file saved from another broker or version (--keyshared-results); the run reports new "
            "failures and fixes against it, and new failures fail the run.",
            None,
            _path,
            metavar="FILE",
        ),
        Setting(
            "soak",
            "Add the soak case (soak/churn-and-faults) to the conformance run: a randomized run of this duration "
            "(e.g. 2m) with consumer churn and every fault the target can take (docs/soak.md). Default: off.",
            None,
            _soak_duration,
            metavar="DURATION",
        ),
        Setting(
            "results",
            "Write this run's results (case by case and contract by contract) to FILE as JSON.",
            None,
            _path,
            metavar="FILE",
        ),
        Setting(
            "report",
            "Write an HTML report page per case (its trace drawn: timeline, violations, hash ranges) and an "
            "index.html for the run into DIR.",
            None,
            _path,
            metavar="DIR",
        ),
    )
}


def _parse(setting: Setting, text: str, source: str) -> Any:
    try:
        return setting.parse(text)
    except ValueError as exc:
        raise SettingError(f"Invalid {setting.ini} {text!r} from {source}; {exc}") from None


def resolve(
    setting: Setting,
    *,
    cli: object | None,
    env: Mapping[str, str] | None = None,
    ini: object | None = None,
) -> Resolved:
    """Resolve a session-level setting: command line > ``KEYSHARED_*`` env var > ini file > default."""
    environ = os.environ if env is None else env
    if cli is not None:
        return Resolved(_parse(setting, str(cli), f"the command line ({setting.flag})"), "cli")
    env_value = environ.get(setting.env)
    if env_value not in (None, ""):
        return Resolved(_parse(setting, str(env_value), f"the environment ({setting.env})"), "env")
    if ini not in (None, "", []):
        return Resolved(_parse(setting, str(ini), "the ini file"), "ini")
    if setting.default is None:
        return Resolved(None, "default")
    return Resolved(setting.parse(setting.default), "default")


def resolve_marker(kwargs: Mapping[str, object], *, where: str) -> dict[str, Any]:
    """Parse ``@pytest.mark.keyshared(**kwargs)``: only per-test settings, each validated like the others."""
    out: dict[str, Any] = {}
    for name, raw in kwargs.items():
        setting = SETTINGS.get(name)
        if setting is None or not setting.per_test:
            choices = sorted(n for n, s in SETTINGS.items() if s.per_test)
            raise SettingError(
                f"Unknown setting {name!r} in @pytest.mark.keyshared on {where}.{did_you_mean(name, choices)}"
                f" Per-test settings: {', '.join(choices)}."
            )
        out[name] = _parse(setting, str(raw), f"@pytest.mark.keyshared({name}=...) on {where}")
    return out
