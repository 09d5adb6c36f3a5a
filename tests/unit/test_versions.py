"""One place for version facts: the release table, the gate table, and docs/model.md listing the same gates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pulsar_vectors import NEWEST_PATCHES

from pytest_keyshared.targets.model import parse_model_spec
from reference_model import versions
from reference_model.broker import ModelBroker
from reference_model.errors import UnknownVersion
from reference_model.versions import GATES, PLACED_FIXES, RELEASES, Fix, check_released, newest_patch

DOC = Path(__file__).resolve().parents[2] / "docs" / "model.md"


def test_every_gate_constant_is_in_the_table() -> None:
    constants = {name for name, value in vars(versions).items() if isinstance(value, Fix)}
    assert {name for name, value in vars(versions).items() if isinstance(value, Fix) and value in GATES} == constants
    assert len(set(GATES)) == len(GATES)


def test_docs_list_every_gate_with_its_pr_and_first_releases() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([A-Z0-9_]+)`.*$", text, re.MULTILINE)}
    names = {name: value for name, value in vars(versions).items() if isinstance(value, Fix)}
    assert set(rows) == set(names)
    for name, gate in names.items():
        assert f"#{gate.reference.rsplit('#', 1)[1]}" in rows[name], name
        for first in gate.first_releases:
            assert first in rows[name], (name, first)


@pytest.mark.parametrize("line", sorted(RELEASES), ids=lambda line: f"{line[0]}.{line[1]}")
def test_every_released_version_from_2_8_0_is_accepted(line: tuple[int, int]) -> None:
    major, minor = line
    if line < (2, 8):
        with pytest.raises(UnknownVersion, match="older than the model reproduces"):
            parse_model_spec(f"model:{major}.{minor}.0")
        return
    for patch in range(RELEASES[line] + 1):
        assert parse_model_spec(f"model:{major}.{minor}.{patch}")[0] == f"{major}.{minor}.{patch}"
    assert newest_patch(f"{major}.{minor}").patch == RELEASES[line]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("3.0.18", "the 3.0 line ends at 3.0.17"),
        ("4.0.15", "the 4.0 line ends at 4.0.14"),
        ("2.7.5", "older than the model reproduces: give a release from 2.8.0 to 5.0.0"),
        ("4.2.6", "the 4.2 line ends at 4.2.5"),
        ("4.1.4", "the 4.1 line ends at 4.1.3"),
        ("3.3.10", "the 3.3 line ends at 3.3.9"),
        ("5.0.9", "the 5.0 line ends at 5.0.0"),
        ("5.0.1", "the 5.0 line ends at 5.0.0"),
        ("5.1", "not a release line the model knows"),
        ("4.3", "not a release line the model knows"),
        ("latest", "like '4.0' or '3.0.7'"),
    ],
)
def test_other_versions_are_refused_in_one_line(text: str, fragment: str) -> None:
    for attempt in (lambda: parse_model_spec(f"model:{text}"), lambda: ModelBroker(pulsar_version=text)):
        with pytest.raises(UnknownVersion) as info:
            attempt()
        assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("line", [line for line in sorted(RELEASES) if line >= (2, 10)], ids=str)
def test_a_line_without_patch_behaves_as_its_newest_release(line: tuple[int, int]) -> None:
    plain, newest = check_released(f"{line[0]}.{line[1]}"), newest_patch(f"{line[0]}.{line[1]}")
    assert [gate.present_in(plain) for gate in GATES] == [gate.present_in(newest) for gate in GATES]


def test_the_newest_release_of_every_supported_line() -> None:
    """Apache Pulsar's release notes (apache/pulsar-site, read 2026-11-29) end at these; a line name means them."""
    lines = ((3, 0), (3, 3), (4, 0), (4, 1), (4, 2), (5, 0))
    newest = {f"{a}.{b}": str(newest_patch(f"{a}.{b}")) for a, b in lines}
    assert newest == {"3.0": "3.0.17", "3.3": "3.3.9", "4.0": "4.0.14", "4.1": "4.1.3", "4.2": "4.2.5", "5.0": "5.0.0"}
    for release in newest.values():
        assert parse_model_spec(f"model:{release}")[0] == release


def test_every_placed_fix_names_released_versions_and_its_gate_or_what_is_missing() -> None:
    for placed in PLACED_FIXES:
        for release in placed.releases:
            check_released(release)
        if placed.gate is not None:
            assert placed.gate in GATES and placed.gate.reference == placed.reference, placed.reference
            assert placed.gate.first_releases == placed.releases, placed.reference
            assert not placed.missing, placed.reference
        else:
            assert placed.missing, f"{placed.reference} is placed but neither gated nor explained"
    assert len({p.reference for p in PLACED_FIXES}) == len(PLACED_FIXES)


def test_docs_place_every_fix_with_its_releases() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| #(\d+) \|.*$", text, re.MULTILINE)}
    for placed in PLACED_FIXES:
        number = placed.reference.rsplit("#", 1)[1]
        assert number in rows, placed.reference
        for release in placed.releases:
            assert release in rows[number], (placed.reference, release)
        gate_names = [name for name, value in vars(versions).items() if value is placed.gate]
        expected = f"`{gate_names[0]}`" if placed.gate else "not modelled"
        assert expected in rows[number], placed.reference


def test_the_vectors_newest_patches_follow_the_release_table() -> None:
    """Pulsar's test vectors run at the newest patch of every line; the release notes of 4.2.2-4.2.5 change no
    deduplication or selector rule, so moving 4.2 from 4.2.1 to 4.2.5 moves the vectors with it."""
    assert tuple(str(newest_patch(f"{a}.{b}")) for a, b in RELEASES if (a, b) >= (2, 10)) == NEWEST_PATCHES


def test_the_default_target_stays_on_4_0() -> None:
    """``model`` is 4.0 (docs/targets.md): 5.0 is a line the model knows, not the default."""
    assert parse_model_spec("model") == ("4.0", None)
    assert parse_model_spec("model:5.0") == ("5.0", None)


@pytest.mark.parametrize("release", ["5.0", "5.0.0"])
def test_the_classic_dispatcher_is_refused_on_5_0_in_one_line(release: str) -> None:
    """5.0 removed the classic Key_Shared dispatcher (apache/pulsar#26687): ``model:5.0:classic`` names the PR."""
    from pytest_keyshared.targets.model import ModelTarget
    from reference_model.errors import InvalidArgument

    attempts = (
        lambda: ModelTarget(f"model:{release}:classic", Path("/nonexistent")),
        lambda: ModelBroker(pulsar_version=release, implementation="classic"),
    )
    for attempt in attempts:
        with pytest.raises(InvalidArgument) as info:
            attempt()
        assert "#26687" in str(info.value) and "\n" not in str(info.value)
    assert versions.has_classic_dispatcher("4.2.5") and not versions.has_classic_dispatcher(release)
    assert ModelTarget(f"model:{release}", Path("/nonexistent")).implementation == "pip379"


def test_every_placed_fix_and_the_5_0_fixes_are_in_5_0_0() -> None:
    """The 5.0.0, 5.0.0-M1 and 5.0.0-M2 notes list every placed fix; 5.0.0 carries every gate but classic's own."""
    five = check_released("5.0.0")
    assert all("5.0.0" in placed.releases for placed in PLACED_FIXES)
    assert all(gate.present_in(five) for gate in GATES)
    assert not versions.CLASSIC_REMOVED.present_in(check_released("4.2.5"))
