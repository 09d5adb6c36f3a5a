"""The report pages in a real headless Chromium: drawn content, the links between list and picture, the index.

Each test keeps a screenshot under pytest's temporary directory (``keyshared-artifacts/report-screenshots``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.checks import check_trace
from pytest_keyshared.cli import main
from pytest_keyshared.report import write_report

pytest_plugins = ["pytester"]


def _in_viewport(page: Any, selector: str) -> bool:
    return bool(
        page.eval_on_selector(
            selector,
            "e => { const r = e.getBoundingClientRect();"
            " return r.bottom > 0 && r.top < window.innerHeight && r.right > 0 && r.left < window.innerWidth; }",
        )
    )


def test_witnesses_are_highlighted_and_list_and_picture_link_both_ways(
    overlap_trace: Path, tmp_path: Path, open_page: Any, artifact_dir: Path
) -> None:
    verdict = check_trace(overlap_trace)
    page = open_page(write_report(overlap_trace, tmp_path / "report.html", verdict))
    assert page.inner_text("#verdict-badge") == "INVALID"
    assert page.inner_text("#verdict-profile") == "pip379"
    counts = page.inner_text("#counts")
    assert "key_overlap\t1" in counts and "misassigned\t3" in counts and "out_of_order\t1" in counts
    assert "auto-split (Pulsar 4.0, 100 points)" in page.inner_text("#claims")
    assert "misassigned not judged after the fault at E17" in page.inner_text("#notes")

    overlap = next(n for n, v in enumerate(verdict.violations) if v.kind.value == "key_overlap")
    article = page.locator(f"#v-{overlap}")
    assert article.locator("pre.explanation").inner_text() == verdict.violations[overlap].explanation
    lines = article.locator("table.witnesses code").all_inner_texts()
    assert [json.loads(line)["i"] for line in lines] == [3, 7]

    page.mouse.wheel(0, 5000)  # away from the picture first
    page.click(f"#v-{overlap} a.show")
    active = page.locator(f'#timeline-svg .witness.active[data-v="{overlap}"]')
    assert sorted(int(w.get_attribute("data-i")) for w in active.all()) == [3, 7]
    assert page.locator("#timeline-svg .witness.active").count() == 2  # only this violation's
    assert page.locator(f'#timeline-svg .vband.active[data-v="{overlap}"]').count() >= 1
    assert _in_viewport(page, f'#timeline-svg .witness.active[data-v="{overlap}"]')
    assert "active" in (article.get_attribute("class") or "")
    page.screenshot(path=str(artifact_dir / "witnesses.png"))

    page.evaluate("window.scrollTo(0, 0)")
    page.click(f'#timeline-svg .witness[data-v="{overlap}"][data-i="7"]')
    assert _in_viewport(page, f"#v-{overlap} h3")

    linked = open_page(tmp_path / "report.html", fragment=f"v-{overlap}")  # a link to one violation shows it
    assert linked.locator("#timeline-svg .witness.active").count() == 2


def test_lanes_switch_between_keys_and_consumers(overlap_trace: Path, tmp_path: Path, open_page: Any) -> None:
    page = open_page(write_report(overlap_trace, tmp_path / "report.html"))
    labels = [e.get_attribute("data-lane") for e in page.locator("#timeline-svg .lane-label").all()]
    assert labels == ["k1", "k2"]
    assert page.locator("#timeline-svg rect.hold").count() == 7
    page.select_option("#mode", "consumer")
    labels = [e.get_attribute("data-lane") for e in page.locator("#timeline-svg .lane-label").all()]
    assert labels == ["c1", "c2"]
    assert page.locator("#timeline-svg rect.hold").count() == 7
    marks = {m.get_attribute("class") for m in page.locator("#timeline-svg .gmark").all()}
    assert {"gmark open", "gmark redeliver", "gmark fault", "gmark crash"} <= marks
    page.select_option("#axis", "t")
    assert page.inner_text("#view-range").startswith("0ns–210ns of 210ns")  # the builder's 10 ns per event
    assert page.locator("#timeline-svg rect.hold").count() == 7
    first = page.locator('#timeline-svg rect.hold[data-s="3"]')
    assert float(first.get_attribute("x") or 0) > 150  # placed by time, after the axis labels


def test_the_range_chart_shows_every_consumer_and_deliveries_elsewhere(
    overlap_trace: Path, tmp_path: Path, open_page: Any, artifact_dir: Path
) -> None:
    page = open_page(write_report(overlap_trace, tmp_path / "report.html"))
    owners = {g.get_attribute("data-consumer") for g in page.locator("#ranges-svg g.owner").all()}
    assert owners == {"c1", "c2"}
    legend = {s.get_attribute("data-consumer") for s in page.locator("#ranges-legend .range-consumer").all()}
    assert legend == {"c1", "c2"}
    assert page.locator('#ranges-svg g.owner[data-consumer="c2"] rect').count() >= 1
    assert page.locator('#ranges-svg line.keytick.differs[data-key="k2"]').count() >= 1
    assert page.locator('#ranges-svg line.keytick.misassigned[data-key="k2"]').count() == 1
    page.locator("#ranges").scroll_into_view_if_needed()
    page.screenshot(path=str(artifact_dir / "ranges.png"))


def test_a_summarised_page_says_what_it_left_out(
    overlap_trace: Path, tmp_path: Path, open_page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import conformance.report.collect as collect

    monkeypatch.setattr(collect, "FULL_EVENTS", 10)
    page = open_page(write_report(overlap_trace, tmp_path / "report.html"))
    text = page.inner_text("#summarised")
    assert "drawn in full are the 2 key(s) with the most violations" in text


def test_keyshared_run_writes_a_report_beside_the_trace(tmp_path: Path, open_page: Any) -> None:
    out = tmp_path / "run"
    code = main(["run", "--target", "model", "--scenario", "join-while-pending", "--out", str(out), "-q"])
    assert code == 0
    page = open_page(out / "report.html")
    assert page.inner_text("#verdict-badge") == "VALID"
    assert page.inner_text("#writer") == "keyshared run"  # the subtitle names the command that wrote it
    assert page.locator("#timeline-svg rect.hold").count() >= 200
    assert {g.get_attribute("data-consumer") for g in page.locator("#ranges-svg g.owner").all()} == {"c1", "c2"}


def _top(page: Any, selector: str) -> float:
    return float(page.eval_on_selector(selector, "e => e.getBoundingClientRect().top + window.scrollY"))


def test_a_run_with_136_violations_is_a_short_page_with_the_charts_first(
    tmp_path: Path, open_page: Any, artifact_dir: Path
) -> None:
    from tests.report.conftest import many_violations_builder

    builder, edge = many_violations_builder()
    trace = builder.write(tmp_path / "trace.jsonl")
    verdict = check_trace(trace)
    assert len(verdict.violations) == 136
    page = open_page(write_report(trace, tmp_path / "report.html", verdict, writer="keyshared run"))
    page.screenshot(path=str(artifact_dir / "136-violations.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollHeight") < 6000  # it was 44,000 px with every card open
    assert page.inner_text("#subtitle").endswith("written by pytest-keyshared (keyshared run)")
    first_card = _top(page, "article.violation")
    for chart in ("#timeline-svg", "#ranges-svg", "#throughput-svg"):
        assert _top(page, chart) < first_card, chart

    groups = page.locator("details.vgroup")
    assert groups.count() == 34
    assert page.locator("details.vgroup[open]").count() == 2  # the first key of each kind
    assert page.locator("article.violation:visible").count() == 2
    assert {g.get_attribute("data-count") for g in groups.all()} == {"4"}
    assert "(136 in 34 groups by kind and key)" in page.inner_text("#toc")
    assert page.locator("details.vgroup:visible").count() == 20  # 10 lines a kind, then one "more" line
    assert page.locator("details.vkeys > summary").all_inner_texts() == [
        "7 more groups of key_overlap, 28 violations",
        "7 more groups of out_of_order, 28 violations",
    ]
    folded = page.locator("details.vgroup:not([open])").first
    assert "×4" in folded.locator("summary").inner_text()

    # a witness on the timeline opens its folded group and brings back its explanation (the last group's
    # violation is drawn last: its marker is the one on top where two violations share a witness)
    last_folded = page.locator("details.vgroup:not([open])").last
    kind, key = last_folded.get_attribute("data-kind"), last_folded.get_attribute("data-key") or ""
    folded = page.locator(f'details.vgroup[data-kind="{kind}"][data-key="{key}"]')  # stays put once opened
    n = int(folded.locator("article.violation").first.get_attribute("data-v") or -1)
    last = max(int((a.text_content() or "E-1")[1:]) for a in page.locator(f"#v-{n} a.wit").all())  # "E123"
    page.click(f'#timeline-svg .witness[data-v="{n}"][data-i="{last}"]')
    assert folded.get_attribute("open") is not None  # and the "more groups" line it is in
    assert _in_viewport(page, f"#v-{n} h3")
    assert key in page.inner_text(f"#v-{n} h3")

    # every key label on the hash line lies inside the chart, the last one (the clean key at the end) too
    width = float(page.get_attribute("#ranges-svg", "width") or 0)
    boxes = page.eval_on_selector_all(
        "#ranges-svg text.keylabel",
        "ts => ts.map(t => { const b = t.getBBox(); return [t.textContent, b.x, b.x + b.width]; })",
    )
    assert boxes and boxes[-1][0] == edge
    assert all(left >= 0 and right <= width for _, left, right in boxes), (width, boxes[-3:])


def test_a_soak_page_shows_its_faults_on_the_timeline_and_the_throughput(tmp_path: Path, open_page: Any) -> None:
    from conformance.trace import TraceBuilder

    b = TraceBuilder()
    b.open("c1"), b.open("c2")
    for n in range(40):
        key, msg = f"k{n % 5}", f"1:{n}"
        b.publish(key, msg), b.receive("c1" if n % 2 else "c2", key, msg), b.ack("c1" if n % 2 else "c2", msg, key=key)
        if n == 20:
            b.add("fault", fault="net_partition", consumers=["c2"])
            b.add("fault", fault="net_partition_heal", consumers=["c2"])
    b.end(drained=True)
    trace = b.write(tmp_path / "trace.jsonl")
    page = open_page(write_report(trace, tmp_path / "report.html", writer="keyshared soak"))
    assert page.locator("#timeline-svg .fault-mark").count() == 2
    assert "net_partition c2" in (page.text_content("#timeline-svg") or "")
    assert page.locator("#throughput-svg line.tfault").count() == 2
    assert page.locator("#throughput-svg line.tfault.heal").count() == 1
    assert page.locator("#throughput-svg polyline.rate").count() == 3


@pytest.mark.broker
def test_suite_index_on_pulsar_lite_links_each_case_to_its_page(
    pytester: pytest.Pytester, open_page: Any, artifact_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("KEYSHARED_"):
            monkeypatch.delenv(name)
    # the subprocess runs in pytester's directory: import this checkout, not whichever one is installed
    checkout = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p))
    result = pytester.runpytest_subprocess(
        "-p", "pytest_keyshared", "--pyargs", "conformance", "-k", "join-while-pending or steady-state",
        "--keyshared-seed=3", "--keyshared-report=pages", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["keyshared report written to *index.html"])
    index = open_page(pytester.path / "pages" / "index.html")
    rows = {r.get_attribute("data-case"): r for r in index.locator("#cases tr.case").all()}
    assert set(rows) == {"builtin/join-while-pending", "builtin/steady-state"}
    jwp = rows["builtin/join-while-pending"].inner_text()
    assert "xfailed" in jwp and "no draining hashes" in jwp and "key-exclusivity" in jwp
    assert "key-exclusivity" in index.inner_text("#contracts")
    index.screenshot(path=str(artifact_dir / "index.png"))

    rows["builtin/join-while-pending"].locator("a").first.click()
    index.wait_for_selector("body[data-ready='1']", state="attached")
    assert index.inner_text("#verdict-badge") == "INVALID"
    assert index.inner_text("#writer") == "pytest --keyshared-report"
    assert "key_overlap" in index.inner_text("#counts")
    assert {g.get_attribute("data-consumer") for g in index.locator("#ranges-svg g.owner").all()} >= {"c1", "c2"}
    index.screenshot(path=str(artifact_dir / "join-while-pending.png"), full_page=False)
