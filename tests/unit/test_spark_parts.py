"""The Spark engine's part count, chosen by memory (``conformance.spark.parts``), and ``--spark-conf``: pure
functions, no Spark."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conformance.spark.parts import (
    MIN_SHARE_BYTES,
    SPARK_BYTES_PER_EVENT,
    TASK_OVERHEAD_BYTES,
    bucket_choice,
    choose_parts,
    defaults_file_settings,
    parse_memory,
    spark_memory,
)
from pytest_keyshared.cli import main
from pytest_keyshared.commands._spark_args import parse_spark_conf
from reference_model.errors import InvalidArgument

GiB = 2**30


def _fits(events: int, parts: int, memory: int, slots: int) -> bool:
    share_bytes = max(MIN_SHARE_BYTES, memory // slots - TASK_OVERHEAD_BYTES)
    return math.ceil(events / parts) * SPARK_BYTES_PER_EVENT <= share_bytes


@pytest.mark.parametrize(
    ("events", "memory", "cores", "slots"),
    [
        (100_000_000, 1 * GiB, 2, None),  # Spark's default memory, local[2]: the issue's failing default
        (100_000_000, 4 * GiB, 2, 1),  # two executors of 4 GB, one core each
        (100_000_000, 20 * GiB, 2, None),  # a local master on a 24 GB machine
        (30_000_000, 4 * GiB, 8, 4),
        (1_000_000, 512 * 2**20, 3, None),
    ],
)
def test_the_fewest_parts_that_fit_a_multiple_of_the_cores(
    events: int, memory: int, cores: int, slots: int | None
) -> None:
    choice = choose_parts(events, memory, cores, tasks_per_executor=slots, memory_from="spark.executor.memory")
    per_executor = slots if slots is not None else cores
    assert choice.by == "memory" and choice.parts > cores and choice.parts % cores == 0
    assert _fits(events, choice.parts, memory, per_executor)
    assert not _fits(events, choice.parts - cores, memory, per_executor)  # one wave fewer would not fit
    extra = choice.as_extra()
    assert extra["parts"] == choice.parts and extra["by"] == "memory" and extra["events"] == events
    assert "chosen by memory" in extra["reason"] and f"{events:,} events" in extra["reason"]


def test_the_issue_figures() -> None:
    """100M events on local[2]: at 1g (Spark's default) hundreds of parts; on a 24 GB machine (about 20 GB
    available) a few; 10M there: the two cores, as before."""
    assert choose_parts(100_000_000, 1 * GiB, 2).parts == 246
    assert choose_parts(100_000_000, 20 * GiB, 2).parts == 8
    ten = choose_parts(10_000_000, 20 * GiB, 2)
    assert (ten.parts, ten.by) == (2, "cores") and "which fit" in ten.reason()


def test_a_small_trace_that_fits_is_one_part_and_one_that_does_not_is_split() -> None:
    one = choose_parts(150_000, 4 * GiB, 2, small=True)
    assert (one.parts, one.by) == (1, "one part")
    tight = choose_parts(150_000, 512 * 2**20, 2, small=True)  # 32 MB per task: 256 MB each, less the overhead
    assert (tight.by, tight.parts) == ("memory", 4) and _fits(150_000, 4, 512 * 2**20, 2)
    assert not _fits(150_000, 2, 512 * 2**20, 2)


def test_unknown_size_or_memory_gives_the_cores() -> None:
    for choice in (choose_parts(None, GiB, 4), choose_parts(10**9, None, 4)):
        assert (choice.parts, choice.by) == (4, "cores") and "not known" in choice.reason()
    assert choose_parts(None, GiB, 4, small=True).parts == 1


def test_memory_too_small_for_the_overhead_still_gives_a_finite_count() -> None:
    choice = choose_parts(1_000_000, 100 * 2**20, 2)
    assert choice.parts == math.ceil(1_000_000 * SPARK_BYTES_PER_EVENT / MIN_SHARE_BYTES / 2) * 2


def test_a_bucketed_traces_parts_are_its_buckets_and_the_choice_says_whether_the_largest_fits() -> None:
    """100M events in 64 buckets on two 4 GB executors of one core (3.8 GB for a part's state): a part of about
    1.6M events needs 1.2 GB and fits; the same trace in 4 buckets (25M each, 18.5 GB) does not, and the choice
    names the buckets that would (25M x 740 over 3.8 GB is 5 times the buckets: 20)."""
    memory = choose_parts(100_000_000, 4 * GiB, 2, tasks_per_executor=1, memory_from="spark.executor.memory")
    fits = bucket_choice(memory, 64, 1_600_000)
    assert (fits.parts, fits.by, fits.buckets_needed) == (64, "buckets", None)
    assert fits.as_extra()["fits"] and fits.as_extra()["largest_part_events"] == 1_600_000
    assert fits.reason().startswith("64 parts, the trace's buckets (its layout's; --spark-parts does not apply):")
    assert fits.reason().endswith(": it fits")
    big = bucket_choice(memory, 4, 25_000_000)
    share = 4 * GiB - TASK_OVERHEAD_BYTES
    assert big.buckets_needed == 4 * math.ceil(25_000_000 * SPARK_BYTES_PER_EVENT / share) == 20
    assert not big.as_extra()["fits"] and "keyshared convert TRACE OUT --buckets 20" in big.reason()
    assert "the largest pass reads 25,000,000 events" in big.reason()
    # a local master's tasks share its memory: 2 cores over 1 GB leave 288 MB each for a part
    local = bucket_choice(choose_parts(1_000_000, GiB, 2, memory_from="spark.driver.memory"), 2, 500_000)
    assert local.buckets_needed == 4 and local.buckets_needed % local.cores == 0
    unknown = bucket_choice(choose_parts(None, None, 2), 8, 10)
    assert unknown.buckets_needed is None and unknown.reason().endswith("the memory is not known")


@pytest.mark.parametrize(
    ("text", "size"),
    [("512m", 512 * 2**20), ("4g", 4 * GiB), ("2gb", 2 * GiB), ("1024", GiB), ("1t", 1024 * GiB), ("300k", 300 * 1024)],
)
def test_memory_strings_as_spark_reads_them(text: str, size: int) -> None:
    assert parse_memory(text) == size


def test_a_memory_string_spark_would_refuse_is_refused() -> None:
    with pytest.raises(ValueError, match="'lots' is not a memory size"):
        parse_memory("lots")


def test_the_memory_comes_from_the_settings_in_order() -> None:
    both = {"spark.executor.pyspark.memory": "3g", "spark.executor.memory": "8g", "spark.driver.memory": "6g"}
    assert spark_memory(both, "spark://h:7077") == (3 * GiB, "spark.executor.pyspark.memory")
    assert spark_memory({}, "spark://h:7077") == (GiB, "spark.executor.memory")  # Spark's default
    assert spark_memory({"spark.executor.memory": "4g"}, "yarn") == (4 * GiB, "spark.executor.memory")
    local = {"spark.driver.memory": "1g"}  # keyshared's own setting for its driver JVM: not the workers' bound
    memory, source = spark_memory(local, "local[2]")
    assert source == "available on this machine" and memory > 0
    assert spark_memory(local, "local[2]", user_keys={"spark.driver.memory"}) == (GiB, "spark.driver.memory")


def test_spark_conf_pairs_as_spark_submit_takes_them() -> None:
    pairs = ["spark.driver.memory=2g", "spark.sql.shuffle.partitions=4", "spark.driver.memory=3g", "spark.x=a=b"]
    assert parse_spark_conf(pairs) == {
        "spark.driver.memory": "3g",
        "spark.sql.shuffle.partitions": "4",
        "spark.x": "a=b",
    }
    assert parse_spark_conf(None) == {}


@pytest.mark.parametrize(
    ("pair", "words"),
    [
        ("spark.driver.memory", "expects KEY=VALUE"),
        ("=4g", "expects KEY=VALUE"),
        ("driver.memory=4g", "is not a Spark setting"),
        ("spark.executor.memory=lots", "is not a memory size"),
    ],
)
def test_a_malformed_spark_conf_is_refused(pair: str, words: str) -> None:
    with pytest.raises(InvalidArgument, match=words):
        parse_spark_conf([pair])


def test_a_malformed_spark_conf_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("", encoding="utf-8")
    assert main(["check", str(trace), "--engine", "spark", "--spark-conf", "spark.driver.memory"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "keyshared check: InvalidArgument: --spark-conf expects KEY=VALUE (as spark-submit --conf),"
        " not 'spark.driver.memory'"
    ]


def test_the_memory_settings_of_spark_defaults_conf_count_and_spark_conf_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_keyshared.commands.check import _with_memory_defaults

    (tmp_path / "spark-defaults.conf").write_text(
        "# mine\nspark.driver.memory   6g\nspark.executor.memory=3g\nspark.ui.enabled: true\n! also a comment\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert defaults_file_settings() == {
        "spark.driver.memory": "6g",
        "spark.executor.memory": "3g",
        "spark.ui.enabled": "true",
    }
    assert _with_memory_defaults({"spark.executor.memory": "5g"}) == {
        "spark.driver.memory": "6g",
        "spark.executor.memory": "5g",
    }
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.memory lots\n", encoding="utf-8")
    with pytest.raises(InvalidArgument, match=r"spark\.driver\.memory in \$SPARK_CONF_DIR/spark-defaults\.conf"):
        _with_memory_defaults({})
    monkeypatch.delenv("SPARK_CONF_DIR")
    assert defaults_file_settings() == {}
