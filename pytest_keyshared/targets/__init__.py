"""Targets: the brokers a run can check, named by one string everywhere (CLI and plugin).

==================================  ========================================================================
``pulsar-lite`` (the default)       the embedded Rust broker from the ``pulsar-lite`` wheel, as a subprocess
``pulsar://HOST:PORT``              any running broker; ``?admin=http://HOST:8080`` adds its admin API
``testcontainers[:IMAGE:TAG]``      Apache Pulsar standalone in Docker (``testcontainers:4.0.14`` for a tag)
``testcontainers-geo[:IMAGE:TAG]``  two Apache Pulsar clusters (``r1``, ``r2``), a replicated namespace
``model[:VERSION][:IMPL]``          the in-process reference model (``model:classic``, ``model:pulsar-3.3``)
==================================  ========================================================================

``with open_target(spec, artifacts_dir=..., options=...) as target:`` starts the target, waits until it is
ready (bounded) and always stops what it started, also when the body fails or is interrupted.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_keyshared.targets.base import (
    CAPABILITY_NAMES,
    Capabilities,
    Claims,
    ClientQuirks,
    PulsarTarget,
    Target,
    TargetError,
    UnsupportedByTarget,
)
from reference_model.errors import InvalidArgument, did_you_mean

__all__ = [
    "CAPABILITY_NAMES",
    "DEFAULT_TARGET",
    "TARGET_KINDS",
    "Capabilities",
    "Claims",
    "ClientQuirks",
    "PulsarTarget",
    "Target",
    "TargetError",
    "TargetSpec",
    "UnsupportedByTarget",
    "make_target",
    "open_target",
    "parse_target",
    "target_list",
]

DEFAULT_TARGET = "pulsar-lite"
TARGET_KINDS: tuple[str, ...] = ("pulsar-lite", "url", "testcontainers", "testcontainers-geo", "model")


def target_list() -> str:
    """The target strings, as the unknown-target error and the README list them (one source for both).

    The Docker image tag is the testcontainers target's default and the model's release lines come from
    :data:`reference_model.versions.RELEASES`, so a new default tag or release line shows here unedited.
    """
    from pytest_keyshared.targets.testcontainers import DEFAULT_IMAGE, DEFAULT_TAG
    from reference_model.versions import MIN_MODEL_VERSION, RELEASES

    lines = [line for line in sorted(RELEASES) if line >= MIN_MODEL_VERSION.line]
    first, last = lines[0], lines[-1]
    return (
        f"pulsar-lite, pulsar://127.0.0.1:6650, testcontainers, testcontainers:{DEFAULT_IMAGE}:{DEFAULT_TAG},"
        f" testcontainers-geo, model, model:classic, model:pulsar-X.Y"
        f" (X.Y a release line from {first[0]}.{first[1]} to {last[0]}.{last[1]})"
    )


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """A parsed target string: its ``kind`` (one of :data:`TARGET_KINDS`) and the string itself."""

    kind: str
    spec: str


def parse_target(spec: str) -> TargetSpec:
    """Classify ``spec`` and check its syntax (values are checked again when the target is built)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgument(f"Expected a target string ({target_list()}) but got {spec!r}.")
    text = spec.strip()
    if text == "pulsar-lite":
        return TargetSpec("pulsar-lite", text)
    if text.startswith(("pulsar://", "pulsar+ssl://")):
        from pytest_keyshared.targets.url import parse_broker_url

        parse_broker_url(text)
        return TargetSpec("url", text)
    if text == "testcontainers" or text.startswith("testcontainers:"):
        from pytest_keyshared.targets.testcontainers import parse_image

        parse_image(text.partition(":")[2])
        return TargetSpec("testcontainers", text)
    if text == "testcontainers-geo" or text.startswith("testcontainers-geo:"):
        from pytest_keyshared.targets.testcontainers import parse_image

        parse_image(text.partition(":")[2])
        return TargetSpec("testcontainers-geo", text)
    if text == "model" or text.startswith("model:"):
        from pytest_keyshared.targets.model import parse_model_spec

        parse_model_spec(text)
        return TargetSpec("model", text)
    head = text.split(":", 1)[0]
    names = ["pulsar-lite", "testcontainers", "testcontainers-geo", "model", "pulsar"]
    raise InvalidArgument(f"Unknown target {spec!r}.{did_you_mean(head, names)} Targets: {target_list()}.")


def make_target(spec: str, *, artifacts_dir: str | Path, options: Mapping[str, Any] | None = None) -> Target:
    """Build (but do not start) the target ``spec`` names."""
    parsed = parse_target(spec)
    artifacts = Path(artifacts_dir)
    if parsed.kind == "pulsar-lite":
        from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget

        return PulsarLiteTarget(parsed.spec, artifacts, options)
    if parsed.kind == "url":
        from pytest_keyshared.targets.url import UrlTarget

        return UrlTarget(parsed.spec, artifacts, options)
    if parsed.kind == "testcontainers":
        from pytest_keyshared.targets.testcontainers import TestcontainersTarget

        return TestcontainersTarget(parsed.spec, artifacts, options)
    if parsed.kind == "testcontainers-geo":
        from pytest_keyshared.targets.geo import GeoTarget

        return GeoTarget(parsed.spec, artifacts, options)
    from pytest_keyshared.targets.model import ModelTarget

    return ModelTarget(parsed.spec, artifacts, options)


@contextlib.contextmanager
def open_target(
    spec: str = DEFAULT_TARGET,
    *,
    artifacts_dir: str | Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> Iterator[Target]:
    """Start the target ``spec`` names, yield it, and stop it whatever happens.

    ``artifacts_dir`` receives the broker's log and config (a fresh temporary directory when None).
    ``options`` are per-kind settings (``admin_url``, ``pulsar_version``, ``startup_timeout_s``, ...);
    an unknown one is an :class:`~reference_model.errors.InvalidArgument` naming the known ones.
    """
    artifacts = Path(tempfile.mkdtemp(prefix="keyshared-target-")) if artifacts_dir is None else Path(artifacts_dir)
    target = make_target(spec, artifacts_dir=artifacts, options=options)
    try:
        target.start()
        yield target
    finally:
        target.stop()
