"""Profiles, verdicts and violations: data, validity, rendering, and the errors users see."""

from __future__ import annotations

import json

import pytest
from small_traces import key_overlap

from conformance.checks import KINDS, PROFILES, Kind, Validity, check_trace, get_profile, profile_for_header
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from conformance.verdict import build_verdict
from conformance.violations import Violation, check_kind, describe_event
from reference_model.errors import InvalidArgument


def test_kind_values_are_the_format_names() -> None:
    assert [k.value for k in KINDS] == [
        "key_overlap", "out_of_order", "undelivered", "redelivered_after_ack", "duplicate_publish",
        "unexpected_message", "misassigned", "accepted_conflicting_open", "refused_open",
        "skipped_after_failover", "replicated_cursor_ahead", "outside_sticky_ranges", "stalled", "not_quiet",
        "pinned_owner", "lost_write",
        "redelivered_after_failover", "delivered_twice",
        "received_beyond_permits", "delivered_early", "stored_below_highest", "last_sequence_id_behind",
        "superseded_after_compaction", "wrong_redelivery_count",
        "received_after_dead_letter", "dead_lettered_early", "not_dead_lettered",
        "received_beyond_unacked_limit", "stats_mismatch", "dedup_snapshot_behind", "received_beyond_lookahead",
        "wrong_sequence_id", "wrong_message_id", "not_purged", "purge_off_schedule", "wrong_event_time",
        "oversized_batch", "batch_flushed_early",
    ]  # fmt: skip
    assert f"{Kind.KEY_OVERLAP}" == str(Kind.KEY_OVERLAP) == "key_overlap"
    assert {"key_overlap": 1}[Kind.KEY_OVERLAP] == 1
    assert check_kind("misassigned") is Kind.MISASSIGNED
    with pytest.raises(InvalidArgument, match="Did you mean 'key_overlap'"):
        check_kind("key-overlap")


@pytest.mark.parametrize(
    ("sub", "extra", "version", "dedup", "name", "permitted"),
    [
        (SubscriptionSpec("s"), {}, "4.0", True, "pip379", set()),
        (SubscriptionSpec("s"), {}, "4.0", False, "pip379", {"duplicate_publish"}),
        (SubscriptionSpec("s"), {}, "3.3", True, "classic", {"key_overlap"}),
        (SubscriptionSpec("s"), {"implementation": "classic"}, "4.0", True, "classic", {"key_overlap"}),
        (SubscriptionSpec("s", allow_out_of_order_delivery=True), {}, None, True, "out-of-order",
         {"key_overlap", "out_of_order"}),
        (SubscriptionSpec("s", key_shared_mode="STICKY"), {}, None, True, "sticky", {"undelivered"}),
        (SubscriptionSpec("s", type="Shared"), {}, None, True, "shared",
         {"key_overlap", "out_of_order", "misassigned", "accepted_conflicting_open", "refused_open"}),
    ],
)  # fmt: skip
def test_the_default_profile_follows_the_header(sub, extra, version, dedup, name, permitted) -> None:  # type: ignore[no-untyped-def]
    header = TraceHeader(target="x", subscription=sub, pulsar_version=version, deduplication=dedup, extra=extra)
    profile = profile_for_header(header)
    assert profile.name == name
    assert {k.value for k in profile.permitted} == permitted
    assert profile.adjustments and "derived from the trace header" in profile.adjustments[0]


def test_an_unknown_profile_lists_the_choices_and_suggests() -> None:
    with pytest.raises(InvalidArgument) as err:
        get_profile("out_of_order")
    text = str(err.value)
    assert "Did you mean 'out-of-order'?" in text and all(name in text for name in PROFILES)


def overlap_trace() -> TraceBuilder:
    return key_overlap()


def test_permitted_kinds_are_reported_as_allowed() -> None:
    b = overlap_trace()
    pip379 = check_trace(b.events, header=b.header)
    assert not pip379.valid and {v.kind for v in pip379.violations} == {Kind.KEY_OVERLAP, Kind.OUT_OF_ORDER}
    classic = check_trace(b.events, header=b.header, profile="classic")
    assert not classic.valid and [v.kind for v in classic.violations] == [Kind.OUT_OF_ORDER]
    assert [v.kind for v in classic.allowed] == [Kind.KEY_OVERLAP]
    ooo = check_trace(b.events, header=b.header, profile="out-of-order")
    assert ooo.valid and ooo.validity is Validity.VALID and len(ooo.allowed) == 2
    assert ooo.counts == {**{k.value: 0 for k in KINDS}, "key_overlap": 1, "out_of_order": 1}
    assert ooo.identities() == pip379.identities()


def test_json_has_the_documented_shape() -> None:
    b = overlap_trace()
    data = json.loads(check_trace(b.events, header=b.header).to_json_text())
    assert set(data) >= {"valid", "validity", "violations", "counts", "events", "allowed", "notes", "profile"}
    assert data["valid"] is False and data["events"] == len(b.events)
    first = data["violations"][0]
    assert set(first) >= {"kind", "key", "events", "explanation", "consumers", "subscription"}
    assert first["kind"] in ("key_overlap", "out_of_order") and first["events"] == [4, 5]


def test_render_caps_the_examples_per_kind() -> None:
    b = TraceBuilder()
    b.open("c1")
    for n in range(9):
        b.publish(f"k{n}", f"1:{n}")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    text = verdict.render(max_per_kind=3)
    assert text.startswith("INVALID: 11 events checked")
    assert text.count("[violation] undelivered") == 3 and "... and 6 more undelivered" in text
    assert len(verdict.violations) == 9


def test_validity_merges_invalid_over_unknown_over_valid() -> None:
    profile = get_profile("pip379")
    v = Violation(Kind.UNDELIVERED, "k", (), (1,), "x")
    assert build_verdict([], profile, events=0).validity is Validity.VALID
    assert build_verdict([], profile, events=0, unjudged=[Kind.UNDELIVERED]).validity is Validity.UNKNOWN
    assert build_verdict([v], profile, events=0, unjudged=[Kind.UNDELIVERED]).validity is Validity.INVALID
    lenient = get_profile("lenient")
    assert build_verdict([], lenient, events=0, unjudged=[Kind.MISASSIGNED]).validity is Validity.VALID


def test_violations_are_frozen_values_with_an_identity() -> None:
    a = Violation(Kind.KEY_OVERLAP, "k", ("c1", "c2"), (4, 5), "one text", "s", {"x": 1})
    b = Violation(Kind.KEY_OVERLAP, "k", ("c1", "c2"), (4, 5), "other text", "s", {"x": 2})
    assert a == b and a.identity() == ("key_overlap", "s", "k", (4, 5))
    with pytest.raises(AttributeError):
        a.key = "j"  # type: ignore[misc]
    assert describe_event((3, "close", "c1", None)) == "E3 = close of c1"
    assert describe_event((4, "receive", "c2", "1:0:-1:-1")) == "E4 = receive 1:0:-1:-1 by c2"


def test_the_spark_engine_never_starts_a_session(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from conformance.spark.engine import active_session
    from conformance.spark.session import session_config

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    with pytest.raises(InvalidArgument, match="needs a SparkSession: pass spark="):
        active_session(None)
    conf = session_config("local[2]", for_tests=True)
    assert conf["spark.driver.bindAddress"] == conf["spark.driver.host"] == "127.0.0.1"
    assert conf["spark.ui.enabled"] == "false" and "TieredStopAtLevel=1" in conf["spark.driver.extraJavaOptions"]
    assert "TieredStopAtLevel" not in session_config("local[*]").get("spark.driver.extraJavaOptions", "")


def test_importing_the_checkers_loads_no_spark_and_no_client() -> None:
    import subprocess
    import sys

    code = (
        "import sys, conformance.checks, conformance.spark, conformance.trace;"
        "print([m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pulsar', 'py4j')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
