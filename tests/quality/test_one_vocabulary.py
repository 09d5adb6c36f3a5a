"""One vocabulary: every anomaly the product reports is a ``conformance.violations.Kind`` member.

No module of the three packages passes a kind as a free string (``kind="..."``), and every ``Kind`` has a
contract and is known to every profile's data (a profile permits kinds by member, so a new member is forbidden
everywhere until a profile says otherwise).
"""

from __future__ import annotations

import re
from pathlib import Path

from conformance.profiles import PROFILES
from conformance.violations import Kind
from pytest_keyshared.contracts import KIND_CONTRACTS

ROOT = Path(__file__).resolve().parents[2]
#: a violation kind passed as a string literal (selector kinds such as ``kind = "sticky"`` are another matter)
FREE_KIND = re.compile(r"""(?:[(,]\s*|^\s*)kind=f?["']|violation\([^)]*,\s*["'][a-z_]+["']\s*\)""")


def test_no_free_string_kinds_in_the_packages() -> None:
    offenders = []
    for package in ("conformance", "pytest_keyshared"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if FREE_KIND.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == [], "kinds must be Kind members:\n" + "\n".join(offenders)


def test_every_kind_has_a_contract_and_profiles_name_only_kinds() -> None:
    assert {k.value for k in Kind} == set(KIND_CONTRACTS)
    for profile in PROFILES.values():
        assert all(isinstance(k, Kind) for k in profile.permitted), profile.name


def test_the_refused_open_rule_lives_only_in_the_checks() -> None:
    """``accepted_conflicting_open`` is decided in conformance/checks/assignment.py and nowhere else."""
    deciders = [
        path.relative_to(ROOT).as_posix()
        for package in ("conformance", "pytest_keyshared")
        for path in sorted((ROOT / package).rglob("*.py"))
        if "Kind.ACCEPTED_CONFLICTING_OPEN" in path.read_text(encoding="utf-8")
    ]
    assert deciders == ["conformance/checks/assignment.py"]
