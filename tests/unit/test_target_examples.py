"""One list of target examples: the unknown-target error and README.md show the same strings (issue 28, item 11)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_keyshared.targets import TARGET_EXAMPLES, parse_target
from pytest_keyshared.targets.testcontainers import DEFAULT_TAG
from reference_model.errors import InvalidArgument

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_unknown_target_error_lists_every_example() -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_target("kafka://localhost:9092")
    assert f"Targets: {', '.join(TARGET_EXAMPLES)}." in str(info.value)


def test_every_example_parses() -> None:
    for example in TARGET_EXAMPLES:
        parse_target(example)


def test_readme_shows_the_same_examples_and_tag() -> None:
    text = README.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| targets and driver |"))
    assert [m for m in re.findall(r"`([^`]+)`", row) if m not in {"model:VERSION"}] == list(TARGET_EXAMPLES)
    assert set(re.findall(r"testcontainers:apachepulsar/pulsar:([\w.]+)", text)) == {DEFAULT_TAG}
    assert f"testcontainers:apachepulsar/pulsar:{DEFAULT_TAG}" in TARGET_EXAMPLES
