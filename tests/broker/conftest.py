"""Real pulsar-lite brokers for the ``broker`` tests: one per test module, stopped by pid at its end.

Runs isolate themselves on the shared broker with a unique topic each (``ks-<scenario>-<seed>-<nonce>``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_keyshared.targets import open_target
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PulsarLiteTarget]:
    with open_target("pulsar-lite", artifacts_dir=tmp_path_factory.mktemp("pulsar-lite")) as target:
        assert isinstance(target, PulsarLiteTarget)
        yield target


def trace_events(trace_path: Path) -> list[dict[str, Any]]:
    """The events of a trace file (header dropped)."""
    with trace_path.open(encoding="utf-8") as fh:
        next(fh)
        return [json.loads(line) for line in fh]


@pytest.fixture
def events() -> Any:
    return trace_events
