"""``keyshared report``: the command's outputs and exit codes, bad input as one line, the replay hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.checks import check_trace
from conformance.trace import TraceBuilder
from pytest_keyshared.cli import main
from pytest_keyshared.report import load_verdict, report_name, write_index


def _page_data(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    return json.loads(text.split('id="report-data">', 1)[1].split("</script>", 1)[0])


def test_report_checks_the_trace_and_exits_with_the_verdict(
    overlap_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "page.html"
    assert main(["report", str(overlap_trace), "-o", str(out)]) == 1
    printed = capsys.readouterr()
    verdict_line = check_trace(overlap_trace).render().splitlines()[0]  # the line `keyshared check` starts with
    assert printed.out.splitlines() == [
        f"{verdict_line}; found: key_overlap=1, out_of_order=1, misassigned=3",
        f"report: {out}",
    ]
    assert printed.err == ""  # exit 1 is the verdict, said on stdout, not a failure of the command
    assert _page_data(out)["verdict"]["counts"] == {"key_overlap": 1, "out_of_order": 1, "misassigned": 3}


def test_report_draws_a_given_verdict_without_checking_again(overlap_trace: Path, tmp_path: Path) -> None:
    verdict = tmp_path / "verdict.json"
    from conformance.checks import check_trace

    data = check_trace(overlap_trace, profile="lenient").to_json()
    verdict.write_text(json.dumps(data))
    assert main(["report", str(overlap_trace), "--verdict", str(verdict)]) == 0
    page = _page_data(overlap_trace.with_name("report.html"))  # default: beside the trace
    assert page["verdict"]["profile"] == "lenient" and page["verdict"]["valid"] is True
    assert all(v["allowed"] for v in page["violations"]) and len(page["violations"]) == 5
    assert page["writer"] == "keyshared report"  # the page's subtitle names the command


def test_a_valid_trace_exits_0(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.open("c1"), b.publish("k", "1:0"), b.receive("c1", "k", "1:0"), b.ack("c1", "1:0", key="k"), b.end()
    assert main(["report", str(b.write(tmp_path / "t.jsonl.gz", gzip=True))]) == 0
    assert _page_data(tmp_path / "report.html")["violations"] == []


@pytest.mark.parametrize(
    ("trace_text", "verdict_text", "message"),
    [
        ('{"i":0,"t":1,"op":"recieve"}\n', None, "unknown op 'recieve'"),
        ('{"i":0,"t":1,"op":"end"}\n', "not json", "not a verdict (JSON expected"),
        ('{"i":0,"t":1,"op":"end"}\n', '{"valid": true}', "expected an object with 'violations' and 'counts'"),
    ],
    ids=["misspelt-op", "verdict-not-json", "verdict-not-a-verdict"],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trace_text: str, verdict_text: str | None, message: str
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(trace_text)
    args = ["report", str(trace)]
    if verdict_text is not None:
        (tmp_path / "v.json").write_text(verdict_text)
        args += ["--verdict", str(tmp_path / "v.json")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "report.html").exists()


def test_missing_files_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope.jsonl")]) == 2
    assert main(["report", str(tmp_path / "nope.jsonl"), "--verdict", str(tmp_path / "nope.json")]) == 2
    assert "cannot read the verdict" in capsys.readouterr().err


def test_replay_writes_a_report_per_run(tmp_path: Path) -> None:
    out = tmp_path / "replay"
    assert main(["replay", "leave-while-pending", "--target", "model", "--runs", "2", "--out", str(out)]) == 0
    pages = sorted(p.relative_to(out).as_posix() for p in out.glob("run-*/report.html"))
    assert pages == ["run-001/report.html", "run-002/report.html"]
    assert _page_data(out / "run-001" / "report.html")["verdict"]["valid"] is True
    assert _page_data(out / "run-001" / "report.html")["writer"] == "keyshared replay"


def test_index_rows_and_file_names(tmp_path: Path) -> None:
    assert report_name("builtin/join-while-pending") == "builtin_join-while-pending.html"
    assert report_name("generated[seed=3]", 1) == "generated_seed_3-2.html"
    index = write_index(
        tmp_path,
        [{"case": "a/<b>", "outcome": "xfailed", "broken": ["ordering"], "reason": "known", "note": "", "pages": []}],
        title="t",
        baseline_lines=["NEW FAILURE a/<b> [ordering]: passed -> failed"],
    )
    text = index.read_text()
    assert "a/&lt;b&gt;" in text and "<b>" not in text.split("<main>", 1)[1].split("<h2>Cases", 1)[1]
    assert 'id="baseline-lines">NEW FAILURE' in text


def test_load_verdict_accepts_objects_dicts_and_files(overlap_trace: Path, tmp_path: Path) -> None:
    from conformance.checks import check_trace

    verdict = check_trace(overlap_trace)
    path = tmp_path / "v.json"
    path.write_text(verdict.to_json_text())
    assert load_verdict(verdict) == load_verdict(verdict.to_json()) == load_verdict(path)


def test_index_rows_say_what_changed_since_the_baseline() -> None:
    from pytest_keyshared.report_index import suite_rows
    from pytest_keyshared.results import BaselineComparison, CaseRecord, Change, StoredResults

    records = [
        CaseRecord(case="a", nodeid="a", outcome="failed", broken=["ordering"]),
        CaseRecord(case="b", nodeid="b", outcome="xfailed", reason="known: no draining hashes"),
        CaseRecord(case="c", nodeid="c", outcome="passed"),
    ]
    comparison = BaselineComparison(
        baseline=StoredResults(source="old.json", target="pulsar-lite", pulsar_version="4.0", cases={}),
        new_failures=[Change("a", "ordering", "passed", "failed")],
        fixes=[Change("c", "delivery", "failed", "passed")],
        only_in_baseline=[],
        only_in_run=[],
    )
    rows = suite_rows(records, {"a": (["a.html"], []), "b": ([], ["no page for t: boom"])}, comparison)
    assert [r["changed"] for r in rows] == [
        ["NEW FAILURE [ordering]: passed -> failed"],
        [],
        ["FIXED [delivery]: failed -> passed"],
    ]
    assert rows[0]["pages"] == ["a.html"] and rows[1]["reason"] == "known: no draining hashes"
    assert rows[1]["note"] == "no page for t: boom"


def test_an_unknown_verdict_exits_4(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.open("c1"), b.publish("k", "1:0"), b.end(drained=False)  # undelivered cannot be judged: not drained
    from conformance.checks import check_trace

    assert check_trace(b).validity.value == "unknown"
    assert main(["report", str(b.write(tmp_path / "t.jsonl"))]) == 4
