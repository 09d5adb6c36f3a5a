"""The removal watch: ``gone`` once the broker's stats list no more consumers of a crashed handle's name than
the handles open with it; stats read at most every 100 ms of the run clock; nothing when the target shows none."""

from __future__ import annotations

from collections import Counter

from pytest_keyshared.driver.removals import EVERY_NS, RemovalWatch, stats_consumer_names


class Broker:
    def __init__(self) -> None:
        self.listed: Counter[str] | None = Counter()
        self.reads = 0
        self.now = 0

    def read(self) -> Counter[str] | None:
        self.reads += 1
        return None if self.listed is None else Counter(self.listed)


def watch(broker: Broker, open_names: list[str], gone: list[str]) -> RemovalWatch:
    return RemovalWatch(broker.read, lambda: open_names, gone.append, lambda: broker.now)


def test_gone_once_the_stats_no_longer_list_it() -> None:
    broker, gone = Broker(), []
    broker.listed = Counter({"a": 1, "x": 1})
    w = watch(broker, ["a"], gone)
    w.crashed("x", "x")
    assert gone == []
    broker.listed = Counter({"a": 1})
    broker.now += EVERY_NS // 2
    w.poll()
    assert gone == [] and broker.reads == 1  # too soon to look again
    broker.now += EVERY_NS
    w.poll()
    assert gone == ["x"]
    w.poll()
    assert gone == ["x"]


def test_same_name_consumers_are_gone_when_the_count_says_all_crashed_ones_are() -> None:
    broker, gone = Broker(), []
    broker.listed = Counter({"n": 3})
    w = watch(broker, ["n"], gone)  # one handle named n is open; two crashed ones share the name
    w.crashed("c1", "n")
    w.crashed("c2", "n")
    broker.listed = Counter({"n": 2})  # one of the two removed: which one, the stats do not say
    broker.now += EVERY_NS
    w.poll()
    assert gone == []
    broker.listed = Counter({"n": 1})
    broker.now += EVERY_NS
    w.poll()
    assert sorted(gone) == ["c1", "c2"]


def test_a_reopened_handle_gets_no_gone_and_a_target_without_stats_stops_the_watch() -> None:
    broker, gone = Broker(), []
    broker.listed = Counter({"x": 1})
    w = watch(broker, [], gone)
    w.crashed("x", "x")
    w.reopened("x")
    broker.listed = Counter()
    broker.now += EVERY_NS
    w.poll()
    assert gone == []
    broker.listed = None
    w.crashed("y", "y")
    assert w.stopped and gone == []
    w.crashed("z", "z")
    w.poll()
    assert gone == [] and broker.reads == 2


def test_consumer_names_from_a_stats_document() -> None:
    stats = {"subscriptions": {"s": {"consumers": [{"consumerName": "a"}, {"consumerName": "a"}, {}]}}}
    assert stats_consumer_names(stats, "s") == Counter({"a": 2, "None": 1})
    assert stats_consumer_names(stats, "other") is None and stats_consumer_names([], "s") is None
