"""The report's data, decided in Python: holds, marks, witnesses, ranges, summarising (no browser)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.checks import check_trace
from conformance.report import build_report_data, render_html
from conformance.report.collect import FULL_EVENTS, MAX_KEYS, WINDOW_PAD, focus_of
from conformance.trace import SelectorSpec, SubscriptionSpec, TraceBuilder, TraceHeader, convert_to_parquet
from conformance.trace.reader import open_trace


def _data(path: Path, verdict: dict | None = None) -> dict:
    verdict = verdict if verdict is not None else check_trace(path).to_json()
    return build_report_data(open_trace(path), verdict)


def test_holds_run_from_receive_to_release_by_the_checker_rules(overlap_trace: Path) -> None:
    data = _data(overlap_trace)
    assert [h[:5] for h in data["holds"]["k1"]] == [[3, 9, "c1", "ack", "1:0"], [7, 8, "c2", "ack", "1:2"]]
    assert [h[5:] for h in data["holds"]["k1"]] == [[1030, 1090], [1070, 1080]]  # t of the receive and release
    k2 = data["holds"]["k2"]
    assert [h[:4] for h in k2] == [
        [4, 10, "c1", "nack"],  # released by its nack
        [11, 12, "c1", "redeliver"],  # by the consumer's redeliver
        [13, 14, "c1", "ack"],
        [16, 17, "c1", "fault"],  # by the broker fault
        [18, 19, "c1", "ack"],
    ]
    ops = [m[1] for m in data["global"]]
    assert ops == ["open", "open", "redeliver", "fault", "crash"]
    assert data["consumers"] == ["c1", "c2"]


def test_each_violation_carries_its_explanation_and_witness_lines(overlap_trace: Path) -> None:
    verdict = check_trace(overlap_trace)
    data = _data(overlap_trace, verdict.to_json())
    assert [v["kind"] for v in data["violations"]] == [v.kind.value for v in verdict.violations]
    overlap = next(v for v in data["violations"] if v["kind"] == "key_overlap")
    assert overlap["explanation"] == next(v.explanation for v in verdict.violations if v.kind.value == "key_overlap")
    assert [w["i"] for w in overlap["witnesses"]] == [3, 7]
    lines = [json.loads(w["line"]) for w in overlap["witnesses"]]
    assert [(e["i"], e["op"], e["consumer"]) for e in lines] == [(3, "receive", "c1"), (7, "receive", "c2")]
    assert data["verdict"]["counts"] == {"key_overlap": 1, "out_of_order": 1, "misassigned": 3}
    assert data["verdict"]["valid"] is False and data["verdict"]["profile"] == "pip379"
    assert data["summarised"] == [] and data["full"] is True


def test_ranges_follow_the_claimed_selector_and_flag_deliveries_elsewhere(overlap_trace: Path) -> None:
    from reference_model.selectors import ConsumerRef, make_selector

    ranges = _data(overlap_trace)["ranges"]
    assert ranges["selector"] == "auto-split (Pulsar 4.0)"
    assert [(p["i"], p["op"], p["consumer"]) for p in ranges["periods"]] == [
        (0, "open", "c1"),
        (5, "open", "c2"),
        (20, "crash", "c2"),
    ]
    sel = make_selector("auto-split", "4.0")
    sel.add(ConsumerRef("c1", 0))
    sel.add(ConsumerRef("c2", 5))
    expected = {ref.name: [list(r) for r in rs] for ref, rs in sel.ranges().items()}
    assert ranges["periods"][1]["owners"] == expected
    k2 = next(k for k in ranges["keys"] if k["key"] == "k2")
    owner = sel.select_key(b"k2")
    assert owner is not None and owner.name == "c2"
    # k2 went to c1 in the period after c2 joined, while the selector names c2: drawn as a difference
    assert [1, "c1", "c2"] in k2["deliveries"]
    assert k2["slot"] == sel.slot_of(b"k2")


def test_no_selector_in_the_header_draws_no_ranges_and_says_why(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.open("c1"), b.publish("k", "1:0"), b.receive("c1", "k", "1:0"), b.ack("c1", "1:0"), b.end()
    data = _data(b.write(tmp_path / "t.jsonl"))
    assert data["ranges"]["periods"] == []
    assert "names no selector" in data["ranges"]["notes"][0]


def test_parquet_and_jsonl_give_the_same_page_data(overlap_trace: Path, tmp_path: Path) -> None:
    parquet = convert_to_parquet(overlap_trace, tmp_path / "trace.parquet")
    a, b = _data(overlap_trace), _data(parquet)
    for key in ("holds", "marks", "global", "ranges", "consumers", "verdict"):
        assert a[key] == b[key], key
    assert [w["i"] for v in a["violations"] for w in v["witnesses"]] == [
        w["i"] for v in b["violations"] for w in v["witnesses"]
    ]


def test_small_traces_are_drawn_in_full_large_ones_around_their_violations() -> None:
    small = focus_of([{"key": "k", "events": [3, 9]}], FULL_EVENTS)
    assert small.keys is None and small.witnesses == {3, 9}
    violations = [{"key": f"k{n}", "events": [1000 * n, 1000 * n + 5]} for n in range(MAX_KEYS + 5)]
    violations.append({"key": "k1", "events": [50_000, 50_001]})
    violations.append({"key": None, "events": [7]})
    big = focus_of(violations, FULL_EVENTS + 1)
    assert big.keys is not None and len(big.keys) == MAX_KEYS and "k1" in big.keys  # most violations first
    assert big.windows["k1"] == ((1000 - WINDOW_PAD, 1005 + WINDOW_PAD), (50_000 - WINDOW_PAD, 50_001 + WINDOW_PAD))
    assert big.in_window("k1", 49_800, 49_900) and not big.in_window("k1", 20_000, 30_000)
    assert 7 in big.witnesses and "summarised" not in big.reason


def test_a_large_trace_is_summarised_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.report.collect as collect

    monkeypatch.setattr(collect, "FULL_EVENTS", 50)
    monkeypatch.setattr(collect, "WINDOW_PAD", 4)
    header = TraceHeader(target="t", subscription=SubscriptionSpec("s"), selector=SelectorSpec("auto-split", "4.0"))
    b = TraceBuilder(header)
    b.open("c1")
    for n in range(40):  # clean traffic on 20 keys, all c1's
        key, msg = f"k{n % 20}", f"1:{n}"
        b.publish(key, msg), b.receive("c1", key, msg), b.ack("c1", msg, key=key)
    b.open("c2")
    b.publish("hot", "2:0"), b.receive("c1", "hot", "2:0"), b.publish("hot", "2:1"), b.receive("c2", "hot", "2:1")
    b.ack("c1", "2:0", key="hot"), b.ack("c2", "2:1", key="hot"), b.end()
    path = b.write(tmp_path / "t.jsonl")
    data = _data(path)
    assert data["full"] is False
    assert set(data["holds"]) == {"hot"}  # only the key with violations is drawn
    assert any("summarised" in s for s in data["summarised"]) and any("drawn in full" in s for s in data["summarised"])
    assert sum(r[4] for r in data["throughput"]["rows"]) == 42  # every receive is counted, drawn or not


def test_the_page_is_self_contained(overlap_trace: Path) -> None:
    page = render_html(_data(overlap_trace))
    assert page.startswith("<!DOCTYPE html>")
    for remote in ("http://", "https://", "src=", "<link"):
        assert remote not in page.replace('xmlns="http://www.w3.org/2000/svg"', ""), remote
    assert "default-src 'none'" in page  # the page may load nothing
    assert "</script>" not in page.split('id="report-data">', 1)[1].split("</script>", 1)[0]


def test_a_fault_naming_its_consumers_releases_only_theirs() -> None:
    from conformance.report.collect import Focus, collect, rows_of_events

    b = TraceBuilder()
    b.open("c1"), b.open("c2")
    b.publish("a", "1:0"), b.receive("c1", "a", "1:0")
    b.publish("b", "1:1"), b.receive("c2", "b", "1:1")
    b.add("fault", fault="client_reconnect", consumers=["c2"])
    b.ack("c1", "1:0", key="a"), b.end()
    found = collect(rows_of_events(b.events), Focus(keys=None), columnar=False)
    assert {k: [h[:5] for h in hs] for k, hs in found.holds.items()} == {
        "a": [[3, 7, "c1", "ack", "1:0"]],
        "b": [[5, 6, "c2", "fault", "1:1"]],
    }


def test_many_keys_get_at_most_max_lanes_with_the_violated_ones_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import conformance.report.data as data

    monkeypatch.setattr(data, "MAX_LANES", 5)
    header = TraceHeader(target="t", subscription=SubscriptionSpec("s"))
    b = TraceBuilder(header)
    b.open("c1"), b.open("c2")
    for n in range(30):  # 10 clean keys; k0..k4 are received most
        key, msg = f"k{n % 10 if n < 20 else n % 5}", f"1:{n}"
        b.publish(key, msg), b.receive("c1", key, msg), b.ack("c1", msg, key=key)
    b.publish("hot", "2:0"), b.receive("c1", "hot", "2:0"), b.publish("hot", "2:1"), b.receive("c2", "hot", "2:1")
    b.ack("c1", "2:0", key="hot"), b.ack("c2", "2:1", key="hot"), b.end()
    page = _data(b.write(tmp_path / "t.jsonl"))
    assert set(page["holds"]) == {"hot", "k0", "k1", "k2", "k3"}
    assert set(page["marks"]) <= set(page["holds"])
    assert any("6 of 11 keys have no lane" in s for s in page["summarised"]), page["summarised"]


def test_the_exact_reader_path_draws_the_same_page(overlap_trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.trace.reader import FastPathUnavailable, TraceSource

    fast = _data(overlap_trace)

    def unavailable(self: TraceSource, **kwargs: object) -> None:
        raise FastPathUnavailable("test")

    monkeypatch.setattr(TraceSource, "batches", unavailable)
    exact = _data(overlap_trace)
    for key in ("holds", "marks", "global", "ranges", "consumers", "throughput"):
        assert exact[key] == fast[key], key
    assert [json.loads(w["line"])["i"] for v in exact["violations"] for w in v["witnesses"]] == [
        w["i"] for v in fast["violations"] for w in v["witnesses"]
    ]


def test_a_trace_without_header_is_drawn_under_the_default_contract(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"i":0,"t":5,"op":"open","consumer":"c1"}\n{"i":1,"t":6,"op":"end"}\n')
    page = _data(path)
    assert page["header"]["target"] == "unknown" and page["verdict"]["valid"] is True
    assert page["consumers"] == ["c1"] and page["ranges"]["periods"] == []


def _groups_of(data: dict) -> dict[tuple[str, str | None], dict]:
    return {(kind["kind"], g["key"]): g for kind in data["groups"] for g in kind["groups"]}


def test_violations_are_grouped_by_kind_and_key_with_counts_and_the_first_few_open(
    many_violations_trace: Path,
) -> None:
    data = _data(many_violations_trace)
    assert [(k["kind"], k["count"], k["keys"]) for k in data["groups"]] == [
        ("key_overlap", 68, 17),
        ("out_of_order", 68, 17),
    ]
    groups = _groups_of(data)
    assert len(groups) == 34 and {g["count"] for g in groups.values()} == {4}
    assert sorted(n for g in groups.values() for n in g["ids"]) == list(range(136))  # each card in one group
    for (kind, key), g in groups.items():
        assert all(data["violations"][n]["kind"] == kind and data["violations"][n]["key"] == key for n in g["ids"])
        assert g["consumers"] == ["c1", "c2"] or g["consumers"] == ["c2", "c1"]
        assert g["first"] == min(i for n in g["ids"] for i in data["violations"][n]["events"])
    # the first group of each kind shows its first card; the other 32 are one folded line each, of which a
    # kind's first 10 are lines of their own and the other 7 fold into one line
    assert [g["shown"] for k in data["groups"] for g in k["groups"]] == ([1] + [0] * 16) * 2
    assert [k["lines"] for k in data["groups"]] == [10, 10]


def test_groups_count_the_violations_beyond_the_listed_ones(
    many_violations_trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import conformance.report.data as report_data

    monkeypatch.setattr(report_data, "MAX_VIOLATIONS", 100)
    data = _data(many_violations_trace)
    assert len(data["violations"]) == 100
    assert sum(k["count"] for k in data["groups"]) == 136  # folded with the counts of all of them
    assert sum(len(g["ids"]) for g in _groups_of(data).values()) == 100
    assert any("36 more violation(s)" in s for s in data["summarised"])


def test_failing_kinds_come_before_permitted_ones_and_a_short_list_is_all_open() -> None:
    from conformance.report.data import OPEN_KINDS, SMALL_VIOLATIONS, group_violations

    found = [{"kind": "duplicate_publish", "key": None, "events": [1], "allowed": True}]
    found += [{"kind": f"kind{n}", "key": f"k{n % 2}", "events": [n + 2], "consumers": ["c1"]} for n in range(8)]
    kinds = group_violations(found, listed=len(found))
    assert [k["kind"] for k in kinds][-1] == "duplicate_publish"  # permitted: last, though it came first
    shown = [k["groups"][0]["shown"] for k in kinds]
    assert shown == [1] * OPEN_KINDS + [0] * (8 - OPEN_KINDS) + [0]
    assert kinds[-1]["keys"] == 0 and kinds[-1]["groups"][0]["key"] is None
    assert [k["lines"] for k in kinds] == [1] * 9  # one group each: no "more groups" line
    short = group_violations(found[: SMALL_VIOLATIONS - 1] * 1, listed=SMALL_VIOLATIONS - 1)
    assert all(g["shown"] == len(g["ids"]) for k in short for g in k["groups"])
    only_allowed = group_violations(found[:1] * (SMALL_VIOLATIONS + 1), listed=SMALL_VIOLATIONS + 1)
    assert only_allowed[0]["groups"][0]["shown"] == 1  # nothing fails: the permitted kind is opened


def test_faults_are_named_on_the_page_from_json_lines_and_parquet(overlap_trace: Path, tmp_path: Path) -> None:
    from conformance.report.faults import fault_names

    data = _data(overlap_trace)
    assert [[f[0], f[2], f[3]] for f in data["faults"]] == [[17, "broker_restart", []]]
    assert [m[3] for m in data["global"] if m[1] == "fault"] == ["broker_restart"]
    parquet = convert_to_parquet(overlap_trace, tmp_path / "trace.parquet")
    assert _data(parquet)["faults"] == data["faults"]
    assert fault_names(open_trace(parquet), {17, 3}) == {17: "broker_restart"}


def test_a_soak_trace_directory_shows_its_faults_and_names_keyshared_soak(tmp_path: Path) -> None:
    """A soak writes a directory of Parquet chunks; a fault touching consumers is named with them."""
    import pyarrow.parquet as pq

    from pytest_keyshared.report import write_report

    b = TraceBuilder(TraceHeader(target="t", subscription=SubscriptionSpec("s")))
    b.open("c1"), b.publish("a", "1:0"), b.receive("c1", "a", "1:0")
    b.add("fault", fault="net_partition", consumers=["c1"])
    b.add("fault", fault="net_partition_heal", consumers=["c1"])
    b.receive("c1", "a", "1:0", redelivery_count=1), b.ack("c1", "1:0", key="a"), b.end(drained=True)
    whole = convert_to_parquet(b.write(tmp_path / "t.jsonl"), tmp_path / "t.parquet")
    table = pq.read_table(whole)
    chunks = tmp_path / "soak" / "trace"
    chunks.mkdir(parents=True)
    meta = table.schema.metadata
    pq.write_table(table.slice(0, 4).replace_schema_metadata(meta), chunks / "part-000000.parquet")
    pq.write_table(table.slice(4).replace_schema_metadata(meta), chunks / "part-000001.parquet")
    data = build_report_data(open_trace(chunks), check_trace(chunks).to_json())
    assert [[f[0], f[2], f[3]] for f in data["faults"]] == [
        [3, "net_partition", ["c1"]],
        [4, "net_partition_heal", ["c1"]],
    ]
    assert [m[3] for m in data["global"] if m[1] == "fault"] == ["net_partition c1", "net_partition_heal c1"]
    page = write_report(chunks, tmp_path / "soak" / "report.html").read_text()
    assert '<code id="writer">keyshared soak</code>' in page


def test_the_subtitle_names_the_command_that_wrote_the_page(overlap_trace: Path) -> None:
    verdict = check_trace(overlap_trace).to_json()
    page = render_html(build_report_data(open_trace(overlap_trace), verdict, writer="keyshared run"))
    assert 'written by pytest-keyshared (<code id="writer">keyshared run</code>)' in page
    assert "keyshared report" not in page.split("<body>", 1)[1].split("<script", 1)[0]  # nor in the title
    anonymous = render_html(build_report_data(open_trace(overlap_trace), verdict))
    assert 'id="writer"' not in anonymous.split("<script", 1)[0]
