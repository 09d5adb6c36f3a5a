"""``keyshared ranges`` and ``keyshared select``, run in-process through ``cli.main``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_keyshared.cli import main
from reference_model.hashing import make_hash


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- ranges -------------------------------------------------------------------------------------------------------


def test_ranges_json_reproduces_pulsars_4_0_golden_vector(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "ranges", "--points", "3", "--json", "consumer1", "consumer2", "consumer3")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "consumer1": [[14359, 18366], [29991, 39817], [52980, 60442]],
        "consumer2": [[1, 6668], [39818, 52979], [60443, 63679], [65184, 65535]],
        "consumer3": [[6669, 14358], [18367, 29990], [63680, 65183]],
    }
    assert list(json.loads(out)) == ["consumer1", "consumer2", "consumer3"]  # join order


def test_ranges_json_for_3_0_3_prints_one_range_per_point(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "ranges", "--pulsar-version", "3.0.3", "--points", "3", "--json", "consumer1", "consumer2"
    )
    assert code == 0
    ranges = json.loads(out)
    assert ranges["consumer2"][:2] == [[0, 90164503], [90164504, 119056334]]  # adjacent, unmerged


def test_ranges_table_is_readable(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ranges", "--points", "3", "consumer1", "consumer2", "consumer3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("consistent-hashing selector, Pulsar 4.0, 3 points per consumer, hash range [1, 65535]")
    assert "keyHashRangeArrays" in lines[0]
    assert lines[1].split() == ["CONSUMER", "ID", "RANGES", "SLOTS", "SHARE", "HASH", "RANGES", "(inclusive)"]
    assert lines[2].split()[:5] == ["consumer1", "1", "3", "21298", "32.50%"]
    assert "[14359, 18366] [29991, 39817] [52980, 60442]" in lines[2]
    assert lines[3].split()[:4] == ["consumer2", "2", "4", "23419"]


def test_ranges_wraps_long_range_lists_without_splitting_a_range(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ranges", "c1", "c2")
    assert code == 0
    body = out.splitlines()[2:]
    assert len(body) > 2 and all(len(line) <= 120 for line in body)
    assert all(line.count("[") == line.count("]") for line in body)


def test_ranges_auto_split_and_sticky(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "ranges", "--selector", "auto-split", "--json", "c1", "c2", "c3")
    assert json.loads(out) == {"c1": [[32769, 65536]], "c2": [[16385, 32768]], "c3": [[0, 16384]]}
    _, out, _ = run(capsys, "ranges", "--selector", "sticky", "--json", "c1=0-99,400-65535", "c2=100-399")
    assert json.loads(out) == {"c1": [[0, 99], [400, 65535]], "c2": [[100, 399]]}
    _, out, _ = run(capsys, "ranges", "--selector", "sticky", "c1=0-99", "c2=200")
    assert "65435 slot(s) of [0, 65535] are in no printed range." in out


def test_ranges_shows_the_3_0_7_stats_gap(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "ranges", "--pulsar-version", "3.0.7", "--points", "3", "consumer1", "consumer2")
    assert "keyHashRanges" in out.splitlines()[0]
    assert "1 slot(s) of [0, 2147483647] are in no printed range." in out  # 2**31 - 1 (testGetConsumerKeyHashRanges)


def test_duplicate_names_get_numbered_labels(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "ranges", "--json", "--points", "5", "c1", "c1", "c1#2", "c1")
    assert list(json.loads(out)) == ["c1", "c1#3", "c1#2", "c1#4"]
    _, out, _ = run(capsys, "ranges", "--points", "5", "c1", "c1")
    assert [line.split()[:2] for line in out.splitlines()[2:4]] == [["c1", "1"], ["c1#2", "2"]]


# -- select -------------------------------------------------------------------------------------------------------


def test_select_json_matches_the_selector(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "select", "--consumers", "consumer1,consumer2,consumer3", "--points", "3", "--json",
                       "key-0", "a", "anyKey")  # fmt: skip
    assert code == 0
    # slots 23544, 42456, 8560 under the golden ring above
    assert json.loads(out) == {"key-0": "consumer3", "a": "consumer2", "anyKey": "consumer3"}


def test_select_table_shows_hash_and_slot(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "select", "--consumers", "c1,c2", "key-0", "")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split() == ["KEY", "HASH", "SLOT", "CONSUMER"]
    assert lines[2].split()[:3] == ["key-0", str(make_hash(b"key-0")), "23544"]
    assert lines[3].split()[:3] == ['""', "0", "1"]


def test_select_3x_range_selectors_show_the_reduced_slot(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "select", "--selector", "auto-split", "--pulsar-version", "3.0", "--consumers", "a,b",
                    "key-0")  # fmt: skip
    assert out.splitlines()[2].split() == ["key-0", "1664612543", "63679", "a"]


def test_select_sticky_with_continued_ranges_and_uncovered_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "select", "--selector", "sticky", "--consumers", "c1=0-99,400-20000,c2=100-399",
                       "--consumers", "c3=27058", "--json", "someKey1", "a", "key-0")  # fmt: skip
    assert code == 0
    # slots: someKey1 14238, a 27058, key-0 63679 (covered by nobody)
    assert json.loads(out) == {"someKey1": "c1", "a": "c3", "key-0": None}
    _, out, _ = run(capsys, "select", "--selector", "sticky", "--consumers", "c1=0-10", "--json", "key-0")
    assert json.loads(out) == {"key-0": None}
    _, out, _ = run(capsys, "select", "--selector", "sticky", "--consumers", "c1=0-10", "key-0")
    assert out.splitlines()[2].split()[-1] == "-"


def test_select_duplicate_names_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "select", "--consumers", "w,w", "--json", *[f"k{i}" for i in range(40)])
    assert set(json.loads(out).values()) == {"w", "w#2"}


# -- bad input: one line, exit code 2 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ranges", "--pulsar-version", "9.9", "c1"], "UnknownVersion: Pulsar version '9.9' is not a release line"),
        (["ranges", "--pulsar-version", "2.7", "c1"], "modelled from Pulsar 2.8.0 on"),
        (["ranges", "--points", "0", "c1"], "argument --points: expected an integer from 1 to 10000, got '0'"),
        (["ranges", "--points", "many", "c1"], "argument --points: expected an integer from 1 to 10000, got 'many'"),
        (["ranges", "--selector", "consistent", "c1"], "Did you mean 'consistent-hashing'?"),
        (["ranges", "--selector", "auto-split", "--points", "5", "c1"], "--points applies to consistent hashing"),
        (["ranges", "--selector", "sticky", "c1=0-99", "c2=50-150"], "ConsumerAssignError: Range conflict with"),
        (["ranges", "--selector", "sticky", "c1"], "Sticky consumer 'c1' has no ranges: write NAME=START-END"),
        (["ranges", "--selector", "sticky", "c1=9-3"], "start > end"),
        (["ranges", "--selector", "sticky", "c1=0-70000"], r"ranges must be [0, 65535]"),
        (["ranges", "--selector", "sticky", "c1=0-10,5-20"], "overlap"),
        (["ranges", "--selector", "sticky", "c1=a-b"], "Cannot read 'a-b' as a hash range"),
        (["ranges", "--selector", "sticky", "=0-5"], "gives ranges but no consumer name"),
        (["ranges", "c1=0-32767"], "looks like sticky ranges, but the selector is not sticky"),
        (["ranges", ""], "A consumer name is empty"),
        (["ranges"], "the following arguments are required: CONSUMER"),
        (["select", "key"], "the following arguments are required: --consumers"),
        (["select", "--consumers", "c1,,c2", "k"], "A consumer name is empty"),
        (["select", "--selector", "sticky", "--consumers", "0-5,c1=6-9", "k"], "Sticky consumer '0-5' has no ranges"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:  # argparse usage errors exit from parse_args
        raise SystemExit(main(argv))
    out, err = capsys.readouterr()
    assert exited.value.code == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_console_script_entry_point_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pytest_keyshared.cli", "select", "--consumers", "c1", "--json", "k"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (out.returncode, json.loads(out.stdout)) == (0, {"k": "c1"})
