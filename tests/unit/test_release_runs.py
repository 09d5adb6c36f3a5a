"""``keyshared run --target model:RELEASE`` at the newest release of every line; other releases refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_keyshared.cli import main


@pytest.mark.parametrize("release", ["3.0.17", "3.3.9", "4.0.14", "4.1.3", "4.2.5", "4.2", "5.0.0", "5.0"])
def test_the_newest_releases_run(release: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "-t", f"model:{release}", "-s", "steady-state", "--json", "-d", str(tmp_path)])
    assert code == 0
    verdict = json.loads((tmp_path / "verdict.json").read_text(encoding="utf-8"))
    assert verdict["validity"] == "valid"


@pytest.mark.parametrize(
    ("release", "newest"), [("4.2.6", "4.2.5"), ("4.0.15", "4.0.14"), ("3.0.18", "3.0.17"), ("5.0.9", "5.0.0")]
)
def test_an_unreleased_patch_is_refused_in_one_line(
    release: str, newest: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "-t", f"model:{release}", "-s", "steady-state", "-d", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"ends at {newest}" in err


def test_the_classic_dispatcher_on_5_0_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "-t", "model:5.0:classic", "-s", "steady-state", "-d", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "apache/pulsar#26687" in err
