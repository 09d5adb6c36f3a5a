"""Generated programs on every release line of the model (CI): a bounded number per line, each failure explained.

An older release breaks a contract in a generated program only where one of its known bugs explains it
(``conformance.generated.attribution``); a failure nothing explains fails this test, except the open findings
listed below (each a reproducible program, reported for the known-bug table).  The longer run is documented in
``docs/conformance.md`` ("Generated workloads": ``python -m pytest_keyshared.generated_sweep --all-lines``).
"""

from __future__ import annotations

import pytest

from conformance.generated.attribution import attribute, later_specs
from conformance.generated.program import GeneratorOptions
from pytest_keyshared.generated_sweep import release_line_targets, sweep
from reference_model.versions import (
    CONSISTENT_HASHING_REMOVE_BY_IDENTITY,
    PIP_379,
    STICKY_GAP_FIX,
    newest_patch,
    parse_version,
)

PROGRAMS_PER_LINE = 5

#: (target, program seed) -> why nothing in the known-bug table explains it yet.  Exactly these are accepted.
#: (The ring's removal by name before 2.9.3, once listed here, is explained by its gated case
#: ``catalogue/same-name-consumers``: attribution reads conformance/gated_cases.py too.)
OPEN_FINDINGS: dict[tuple[str, int], str] = {}


@pytest.mark.parametrize("target", release_line_targets())
def test_generated_programs_fail_only_as_known_bugs_explain(target: str) -> None:
    report = sweep(target, PROGRAMS_PER_LINE, first_seed=0)
    assert report.programs == PROGRAMS_PER_LINE
    unexplained = {(target, f.seed): f.attribution.render() for f in report.unexplained}
    assert set(unexplained) == {k for k in OPEN_FINDINGS if k[0] == target}, unexplained
    for failure in report.expected:
        assert failure.attribution.bugs and failure.attribution.passes_on


#: a seed whose program (``GeneratorOptions.producers``) closes and creates p1 again and switches deduplication
PRODUCER_SEEDS = (29,)


@pytest.mark.parametrize("target", release_line_targets())
def test_producer_lifecycles_and_deduplication_switches_fail_only_as_known_bugs_explain(target: str) -> None:
    options = GeneratorOptions(producers=True)
    for seed in PRODUCER_SEEDS:
        report = sweep(target, 1, first_seed=seed, options=options)
        assert report.programs == 1 and not report.unexplained, [f.attribution.render() for f in report.unexplained]


def test_every_release_line_is_swept() -> None:
    targets = release_line_targets()
    assert "model:2.8" in targets and "model:4.0" in targets and "model:4.0:classic" in targets
    assert "model:5.0" in targets and "model:5.0:classic" not in targets
    assert len(targets) == len(set(targets))


def test_a_failure_a_known_bug_explains_names_it() -> None:
    """2.10 and 2.11 fail, 3.0 passes, and of its fix releases 3.0.14 (the sticky-gap fix) is the first that passes:
    the sticky-gap bug explains it."""
    asked: list[str] = []

    def passes(spec: str) -> bool:
        asked.append(spec)
        return spec in ("model:3.0.14", "model:3.0")

    attribution = attribute("model:2.10", "2.10", "classic", passes)
    assert attribution.expected and attribution.bugs == ("24730-sticky-gaps",)
    assert attribution.passes_on == "model:3.0.14"
    assert asked[:2] == ["model:2.11", "model:3.0"]


def test_a_failure_no_fix_explains_is_unexplained() -> None:
    only_210 = attribute("model:2.9", "2.9", "classic", lambda spec: spec == "model:2.10")
    assert not only_210.expected and "no known bug of 2.9.5" in only_210.note, only_210.render()
    nowhere = attribute("model", "4.0", "pip379", lambda spec: False)
    assert not nowhere.expected and nowhere.render().startswith("UNEXPLAINED on model")


def test_a_classic_failure_the_pip379_dispatcher_fixes_names_the_classic_bugs() -> None:
    attribution = attribute("model:4.0:classic", "4.0", "classic", lambda spec: spec == "model:4.0")
    assert attribution.expected
    assert set(attribution.bugs) == {
        "21199-restarted-consumer-unacked",
        "21656-joiners-with-replay",
        "23307-ordering-after-reconnects",
    }


def test_later_releases_keep_the_implementation() -> None:
    assert [s for s, _ in later_specs(parse_version("3.3.9"), "classic")] == [
        "model:4.0:classic",
        "model:4.1:classic",
        "model:4.2:classic",
    ]
    assert [s for s, _ in later_specs(parse_version("4.0.14"), "pip379")] == ["model:4.1", "model:4.2", "model:5.0"]
    assert [s for s, _ in later_specs(parse_version("4.2.5"), "classic")] == []  # 5.0 has no classic dispatcher


def test_a_classic_only_failure_breaking_another_contract_is_unexplained() -> None:
    """The PIP-379 dispatcher fixes it, but it delivered an acknowledged message again: no classic known bug's
    case breaks ``redelivery``, so it is a finding, not an expected failure."""
    attribution = attribute(
        "model:4.0:classic", "4.0", "classic", lambda spec: spec == "model:4.0", broken={"redelivery"}
    )
    assert not attribution.expected and "none of the classic dispatcher's known bugs" in attribution.note
    reordered = attribute("model:4.0:classic", "4.0", "classic", lambda spec: spec == "model:4.0", broken={"ordering"})
    assert reordered.expected


def test_a_gated_fix_explains_a_failure_as_a_known_bug_does() -> None:
    """A program that fails on 2.8 and first passes on 2.9.3, the release that brought the ring's removal by
    identity (#13991), is explained by that gate's own case, not reported as a finding; the same failure with no
    gate in between stays unexplained."""
    from conformance.generated.attribution import attribute

    def passes_from_2_9_3(spec: str) -> bool:
        release = spec.split(":")[1]
        version = newest_patch(release) if release.count(".") == 1 else parse_version(release)
        return version >= parse_version("2.9.3")

    found = attribute("model:2.8", "2.8", "classic", passes_from_2_9_3)
    assert found.expected, found.render()
    assert found.bugs == ("catalogue/same-name-consumers",) and found.passes_on == "model:2.9.3", found.render()
    assert found.fixes == (CONSISTENT_HASHING_REMOVE_BY_IDENTITY.name,)

    never = attribute("model:2.8", "2.8", "classic", lambda spec: False)
    assert not never.expected


def test_an_open_bug_is_explained_by_its_proposed_fix() -> None:
    """#23803 is open in every release, so no later release passes; the program passing on the failing release
    with #10662 (its proposed fix) applied names it, before any later release is asked."""
    asked: list[tuple[str, str]] = []

    def passes_with(spec: str, proposed: str) -> bool:
        asked.append((spec, proposed))
        return proposed == "apache/pulsar#10662"

    found = attribute("model:classic", "4.0", "classic", lambda spec: False, {"redelivery"}, passes_with)
    assert found.expected and found.bugs == ("23803-replay-read-during-rewind",), found.render()
    assert found.passes_on == "model:classic with apache/pulsar#10662"
    assert asked == [("model:classic", "apache/pulsar#10662")]

    # still failing with the fix applied: not this bug (and the rest of the rule goes on as before)
    not_it = attribute("model:classic", "4.0", "classic", lambda spec: False, {"redelivery"}, lambda s, p: False)
    assert not not_it.expected
    # the PIP-379 dispatcher is not asked: the model's reads synchronously after a removal (docs/model.md)
    pip379 = attribute("model", "4.0", "pip379", lambda spec: False, None, lambda s, p: pytest.fail("asked"))
    assert not pip379.expected


def test_a_later_line_without_a_fix_the_failing_release_has_is_skipped() -> None:
    """3.1 and 3.2 ended before 3.0.x took its later fixes: passing there proves nothing about 3.0.17, so the
    next line asked is 3.3, and the program is judged as 3.3 judges it."""
    asked: list[str] = []

    def passes(spec: str) -> bool:
        asked.append(spec)
        return spec in ("model:3.1", "model:3.2", "model:4.0")

    found = attribute("model:3.0", "3.0", "classic", passes, {"ordering"})
    assert "model:3.1" not in asked and "model:3.2" not in asked, asked
    assert asked[0] == "model:3.3"
    assert found.expected and "23307-ordering-after-reconnects" in found.bugs, found.render()


def test_a_classic_failure_only_22245_hides_is_judged_by_the_pip379_rule() -> None:
    """#22245 (3.3.0) issues no normal read for a recently joined consumer: a program #23307 reorders on 3.2 passes
    on 3.3.0 although 3.3 keeps #23307.  Its gain names no known bug, so the PIP-379 rule judges the failure: an
    ordering failure is #23307's kind, an acknowledged message delivered again is not."""

    def passes(spec: str) -> bool:
        return spec != "model:3.2"

    ordering = attribute("model:3.2", "3.2", "classic", passes, {"ordering"})
    assert ordering.expected and "23307-ordering-after-reconnects" in ordering.bugs, ordering.render()
    assert ordering.passes_on == "model:4.0"
    redelivery = attribute("model:3.2", "3.2", "classic", passes, {"redelivery"})
    assert not redelivery.expected and redelivery.passes_on == "model:3.3.0", redelivery.render()
    assert "replay filtered before reading" in redelivery.note


def test_a_backported_fix_names_the_bug_a_later_change_hid() -> None:
    """Seed 20's shape: 2.10 to 3.0.4 fail, 3.0.5 passes (#22245 hides it); with the sticky-gap fix alone
    backported, 2.10 passes: #24730 explains it, sharper than the whole PIP-379 dispatcher."""
    asked: list[tuple[str, str]] = []

    def backported(spec: str, gate: str) -> bool:
        asked.append((spec, gate))
        return gate == STICKY_GAP_FIX.name

    others = lambda spec: spec in ("model:3.0", "model:3.0.5", "model:4.0")  # noqa: E731
    found = attribute("model:2.10", "2.10", "classic", others, {"ordering"}, None, backported)
    assert found.expected and found.bugs == ("24730-sticky-gaps",), found.render()
    assert found.passes_on == "model:2.10 with sticky selector gaps backported"
    assert all(gate != PIP_379.name for _spec, gate in asked)
    # no backport helps: the reading of rules 1 to 3 stands
    kept = attribute("model:2.10", "2.10", "classic", others, {"ordering"}, None,
                     lambda spec, gate: False)  # fmt: skip
    assert kept.expected and "23307-ordering-after-reconnects" in kept.bugs
