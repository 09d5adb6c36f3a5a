"""The plugin's pure parts, without pytester: contracts, expectations, results, case ids, summary, replay tally."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_keyshared.caseid import case_id, case_slug
from pytest_keyshared.commands.replay import render_tally, tally_runs
from pytest_keyshared.contracts import CONTRACTS, KIND_CONTRACTS, ContractViolation, check_contract, contract_of_kind
from pytest_keyshared.expectations import (
    Expectation,
    bundled_expectations,
    judge,
    load_expectations,
    parse_expectations,
)
from pytest_keyshared.results import (
    CaseRecord,
    RunResults,
    ViolationSummary,
    compare_with_baseline,
    contract_outcomes,
    read_results_file,
    write_results_file,
)
from pytest_keyshared.summary import contract_counts, contract_table, failure_blocks
from reference_model.errors import InvalidArgument

# -- contracts ---------------------------------------------------------------------------------------------------


def test_every_checker_kind_maps_to_a_contract() -> None:
    from conformance.violations import KINDS

    assert {k.value for k in KINDS} == set(KIND_CONTRACTS)
    assert set(KIND_CONTRACTS.values()) <= set(CONTRACTS)
    assert contract_of_kind("key_overlap") == "key-exclusivity"
    assert contract_of_kind("misassigned") == "assignment"


def test_unknown_kind_and_contract_teach() -> None:
    with pytest.raises(InvalidArgument, match=r"Unknown violation kind 'key_overlaps'\. Did you mean 'key_overlap'"):
        contract_of_kind("key_overlaps")
    with pytest.raises(InvalidArgument, match=r"Unknown contract 'exclusivity' in here\. Did you mean"):
        check_contract("exclusivity", source="here")


def test_contract_violation_sorts_its_contracts_in_table_order() -> None:
    exc = ContractViolation(["delivery", "ordering", "delivery"], "why")
    assert exc.contracts == ("ordering", "delivery")
    assert isinstance(exc, AssertionError)
    assert str(exc).startswith("broken contract(s): ordering, delivery\nwhy")


# -- expectations ------------------------------------------------------------------------------------------------

FAILS = Expectation("c", "fails", "known", ("key-exclusivity",))
MAY_FAIL = Expectation("c", "may-fail", "flaky")


@pytest.mark.parametrize(
    ("passed", "broken", "expectation", "outcome", "note"),
    [
        (True, [], None, "passed", None),
        (False, ["ordering"], None, "failed", None),
        (False, ["key-exclusivity"], FAILS, "xfailed", None),
        (True, [], FAILS, "failed", 'expected to fail (status = "fails") but passed'),
        (True, [], MAY_FAIL, "xpassed", None),
        (False, ["ordering"], MAY_FAIL, "xfailed", None),
        (False, [], MAY_FAIL, "xfailed", None),  # no contracts listed: any failure is the expected one
        (False, ["key-exclusivity", "ordering"], FAILS, "failed", "but also broke ordering"),
        (False, [], FAILS, "failed", "but failed without a contract violation"),
    ],
)
def test_judge(passed, broken, expectation, outcome, note) -> None:
    judgement = judge(passed, broken, expectation)
    assert judgement.outcome == outcome
    if note is None:
        assert judgement.note is None
    else:
        assert note in judgement.note


def test_target_wide_may_fail_excuses_its_contract_in_any_case() -> None:
    wide = {"redelivery": Expectation("contract:redelivery", "may-fail", "dups", ("redelivery",))}
    assert judge(False, ["redelivery"], None, wide).outcome == "xfailed"
    assert judge(False, ["redelivery"], None, wide).reason == "dups"
    both = judge(False, ["key-exclusivity", "redelivery"], FAILS, wide)
    assert (both.outcome, both.reason) == ("xfailed", "known; dups")
    assert judge(True, [], None, wide).outcome == "passed"  # a pass stays a pass
    other = judge(False, ["ordering", "redelivery"], None, wide)
    assert other.outcome == "failed" and "also broke ordering" in other.note
    assert judge(False, ["ordering"], None, wide).outcome == "failed"
    assert judge(False, [], None, wide).outcome == "failed"  # a harness error is never excused by contracts


def test_contract_entries_are_may_fail_only() -> None:
    with pytest.raises(InvalidArgument, match=r"\[contracts.ordering\]: a contract entry takes status = \"may-fail\""):
        parse_expectations({"contracts": {"ordering": {"status": "fails", "reason": "r"}}}, source="f")
    with pytest.raises(InvalidArgument, match=r"\[contracts.order\]: Unknown contract 'order'"):
        parse_expectations({"contracts": {"order": {"status": "may-fail", "reason": "r"}}}, source="f")
    parsed = parse_expectations({"contracts": {"redelivery": {"status": "may-fail", "reason": "r"}}}, source="f")
    assert parsed.contracts["redelivery"].reason == "r"


def test_parse_expectations_and_errors() -> None:
    parsed = parse_expectations(
        {"target": "t", "cases": {"a/b": {"status": "fails", "reason": " r ", "contracts": ["ordering"]}}}, source="f"
    )
    assert parsed.get("a/b") == Expectation("a/b", "fails", "r", ("ordering",))
    assert parsed.get("missing") is None
    with pytest.raises(InvalidArgument, match=r"Invalid expectations file f: top-level key 'case': unknown key"):
        parse_expectations({"case": {}}, source="f")
    with pytest.raises(InvalidArgument, match=r"status 'fail' is not one of fails, may-fail. Did you mean 'fails'\?"):
        parse_expectations({"cases": {"a": {"status": "fail", "reason": "r"}}}, source="f")


def test_bundled_expectations_by_target_kind() -> None:
    assert bundled_expectations("pulsar-lite") is not None
    assert bundled_expectations("model").name == "model-4.0.toml"  # 4.0.14 lacks #26635 (slow sockets)
    assert bundled_expectations("model:4.2").name == "model-4.2.toml"  # so does 4.2.5
    assert bundled_expectations("model:5.0") is None  # 5.0.0 carries every gate: the model passes everything
    assert bundled_expectations("model:4.1").name == "model-4.1.toml"  # 4.1.3 lacks #26236 and #26268
    assert bundled_expectations("model:classic").name == "model-4.0-classic.toml"  # 4.0 with the classic dispatcher
    assert bundled_expectations("model:3.0").name == "model-3.0.toml"
    assert bundled_expectations("model:3.0.5:classic").name == "model-3.0.toml"
    assert bundled_expectations("model:9.9") is None  # the target reports the bad version itself
    assert bundled_expectations("pulsar://127.0.0.1:6650") is None


def test_shipped_pulsar_lite_expectations_name_real_cases() -> None:
    """Every entry of the shipped file names a collected case (a renamed case must not orphan its entry)."""
    from conformance.cases import _support
    from conformance.generated import stored_programs
    from conformance.scenarios import builtin_scenarios

    path = bundled_expectations("pulsar-lite")
    assert path is not None
    known = {f"builtin/{n}" for n in builtin_scenarios()} | {f"generated/{n}" for n in stored_programs()}
    for area in ("catalogue", "known_bugs", "dedup", "assignment", "dispatch", "replication"):
        known |= {f"{area.replace('_', '-')}/{s.name}" for s in _support.area_scenarios(area)}
    known |= {f"pinned/{case.scenario.name}" for case in _support.pinned_cases("pinned")}
    known.add("generated/model-programs")
    known.add("soak/churn-and-faults")  # conformance/cases/test_soak.py, collected with --keyshared-soak
    unknown = sorted(set(load_expectations(path).cases) - known)
    assert unknown == []


# -- case ids ----------------------------------------------------------------------------------------------------


def _item(module: str, name: str, nodeid: str = "x.py::t", callspec_id: str | None = None, marker: str | None = None):
    return SimpleNamespace(
        module=SimpleNamespace(__name__=module),
        originalname=name,
        name=name + (f"[{callspec_id}]" if callspec_id else ""),
        nodeid=nodeid,
        callspec=None if callspec_id is None else SimpleNamespace(id=callspec_id),
        get_closest_marker=lambda n: SimpleNamespace(args=(marker,)) if marker and n == "keyshared_case" else None,
    )


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (
            _item("conformance.cases.test_builtin", "test_case", callspec_id="join-while-pending"),
            "builtin/join-while-pending",
        ),
        (
            _item("conformance.cases.test_known_bugs", "test_case", callspec_id="24730-sticky-gaps"),
            "known-bugs/24730-sticky-gaps",
        ),
        (
            _item("conformance.cases.test_replication", "test_case", callspec_id="ack-holes"),
            "replication/ack-holes",
        ),
        (_item("conformance.cases.test_dedup", "test_resend", callspec_id="batched"), "dedup/resend[batched]"),
        (_item("tests.test_mine", "test_x", nodeid="tests/test_mine.py::test_x"), "tests/test_mine.py::test_x"),
        (_item("tests.test_mine", "test_x", marker="orders/ordering"), "orders/ordering"),
    ],
)
def test_case_ids_are_stable_names(item, expected) -> None:
    assert case_id(item) == expected


def test_case_slug_is_a_safe_directory_name() -> None:
    assert case_slug("builtin/join-while-pending") == "builtin--join-while-pending"
    assert case_slug("tests/a b.py::test_x[1/2]") == "tests--a_b.py--test_x_1--2"


# -- results and baseline ----------------------------------------------------------------------------------------


def _record(case: str, outcome: str, contracts=("ordering",), broken=()) -> CaseRecord:
    return CaseRecord(case=case, nodeid=case, contracts=list(contracts), outcome=outcome, broken=list(broken))


def test_contract_outcomes() -> None:
    assert contract_outcomes(_record("a", "passed", ("ordering", "delivery"))) == {
        "ordering": "passed",
        "delivery": "passed",
    }
    broken = _record("a", "xfailed", ("ordering", "delivery"), broken=("key-exclusivity",))
    assert contract_outcomes(broken) == {"ordering": "passed", "delivery": "passed", "key-exclusivity": "xfailed"}
    error = _record("a", "error", ("ordering", "delivery"))
    assert contract_outcomes(error) == {"ordering": "error", "delivery": "error"}


def test_results_round_trip_and_comparison(tmp_path: Path) -> None:
    before = RunResults(
        "old",
        "3.3",
        1,
        {
            "a": _record("a", "passed"),
            "b": _record("b", "failed", broken=("ordering",)),
            "c": _record("c", "skipped"),
            "d": _record("d", "passed"),
        },
    )
    path = write_results_file(tmp_path / "r.json", before)
    stored = read_results_file(path)
    assert stored.target == "old" and stored.pulsar_version == "3.3"
    now = {
        "a": _record("a", "failed", broken=("key-exclusivity",)),  # ordering held; exclusivity broke (undeclared)
        "b": _record("b", "passed"),
        "c": _record("c", "failed", broken=("ordering",)),  # skipped before: not compared
        "e": _record("e", "passed"),
    }
    comparison = compare_with_baseline(stored, now)
    assert [(c.case, c.contract, c.before, c.after) for c in comparison.new_failures] == [
        ("a", "key-exclusivity", "passed", "failed")
    ]
    assert [(c.case, c.contract) for c in comparison.fixes] == [("b", "ordering")]
    assert comparison.only_in_baseline == ["d"] and comparison.only_in_run == ["e"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not JSON"),
        ('{"format": "x"}', "expected \"format\": 'pytest-keyshared-results/1'"),
        ('{"format": "pytest-keyshared-results/1", "cases": {"a": {}}}', "case 'a' needs"),
    ],
)
def test_bad_results_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(content)
    with pytest.raises(InvalidArgument, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_results_file(path)


# -- summary -----------------------------------------------------------------------------------------------------


def test_table_counts_each_contract_once_per_case() -> None:
    records = [
        _record("a", "passed", ("ordering", "delivery")),
        _record("b", "xfailed", ("ordering",), broken=("key-exclusivity",)),
        _record("c", "skipped", ("deduplication",)),
    ]
    counts = contract_counts(records)
    assert counts["ordering"] == {"passed": 2, "failed": 0, "xfailed": 0, "xpassed": 0, "skipped": 0}
    assert counts["key-exclusivity"]["xfailed"] == 1
    assert counts["deduplication"]["skipped"] == 1
    table = contract_table(records)
    assert table[0].split() == ["contract", "passed", "failed", "xfailed", "xpassed", "skipped"]
    assert table[-1].split() == ["cases", "1", "0", "1", "0", "1"]


def test_failure_block_caps_long_explanations() -> None:
    record = _record("a", "failed", broken=("ordering",))
    record.add_violation(ViolationSummary("out_of_order", "ordering", "k", "\n".join(f"line {i}" for i in range(40))))
    record.traces.append("t.jsonl")
    lines = failure_blocks([record])
    assert lines[0] == "FAILED a [ordering]  seed=None"
    assert "    ... (28 more lines in the verdict file)" in lines
    assert "  trace:    t.jsonl" in lines


# -- replay tally ------------------------------------------------------------------------------------------------


def test_replay_tally_counts_runs_per_kind() -> None:
    def verdict(*kinds: str) -> SimpleNamespace:
        return SimpleNamespace(valid=not kinds, violations=[SimpleNamespace(kind=k) for k in kinds])

    tally = tally_runs(
        [
            (verdict("key_overlap", "key_overlap"), "t1", 1),
            (verdict(), "t2", 2),
            (verdict("key_overlap", "out_of_order"), "t3", 3),
        ],
        scenario="s",
        target="t",
    )
    assert tally.invalid_runs == 2
    assert tally.runs_with == {"key_overlap": 2, "out_of_order": 1}
    assert tally.occurrences == {"key_overlap": 3, "out_of_order": 1}
    text = render_tally(tally)
    assert text.splitlines()[0] == "replay s on t: 3 run(s), 2 with violations (67%)"
    assert text.splitlines()[2].split() == ["key_overlap", "key-exclusivity", "2", "67%", "3"]
    data = tally.to_json()
    assert data["kinds"]["out_of_order"] == {"runs": 1, "share": 1 / 3, "total": 1}
    json.dumps(data)
