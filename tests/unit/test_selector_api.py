"""The selector surface: construction, validation, membership bookkeeping, determinism, purity."""

from __future__ import annotations

import subprocess
import sys

import pytest

import reference_model
from reference_model.errors import InvalidArgument, ModelStateError, UnknownVersion
from reference_model.selectors import (
    AutoSplitSelector,
    CollisionListRingSelector,
    ConsistentHashingSelector,
    ConsumerRef,
    NameIndexRingSelector,
    StickyRangesSelector,
    make_selector,
)


@pytest.mark.parametrize(
    ("kind", "version", "expected"),
    [
        ("consistent-hashing", "4.0", ConsistentHashingSelector),
        ("consistent-hashing", "4.0.0", ConsistentHashingSelector),
        ("consistent-hashing", "3.3", NameIndexRingSelector),
        ("consistent-hashing", "3.3.2", NameIndexRingSelector),
        ("consistent-hashing", "3.0.7", NameIndexRingSelector),
        ("consistent-hashing", "3.3.1", CollisionListRingSelector),
        ("consistent-hashing", "3.0.6", CollisionListRingSelector),
        ("consistent-hashing", "3.0.3", CollisionListRingSelector),
        ("consistent-hashing", "2.10", CollisionListRingSelector),
        ("auto-split", "2.10", AutoSplitSelector),
        ("auto-split", "4.0", AutoSplitSelector),
        ("sticky", "3.0", StickyRangesSelector),
    ],
)
def test_each_version_gets_its_eras_class(kind: str, version: str, expected: type) -> None:
    selector = make_selector(kind, version)
    assert type(selector) is expected
    assert selector.kind == kind
    assert str(selector.version) == version


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: make_selector("consistent-hash"), InvalidArgument, "Did you mean 'consistent-hashing'"),
        (lambda: make_selector("exclusive"), InvalidArgument, "Choices: consistent-hashing, auto-split, sticky"),
        (lambda: make_selector(version="5.1"), UnknownVersion, "Known release lines"),
        (lambda: make_selector(version="5.0", classic=True), InvalidArgument, "apache/pulsar#26687"),
        (lambda: make_selector(version="latest"), UnknownVersion, "like '4.0' or '3.0.7'"),
        (lambda: make_selector(version="2.7"), InvalidArgument, "modelled from Pulsar 2.8.0 on"),
        (lambda: make_selector(points=0), InvalidArgument, "points=0"),
        (lambda: make_selector(points="100"), InvalidArgument, "points='100'"),  # type: ignore[arg-type]
        (lambda: make_selector(points=True), InvalidArgument, "points=True"),
        (lambda: make_selector(classic="yes"), InvalidArgument, "classic='yes'"),  # type: ignore[arg-type]
        (lambda: make_selector(range_size=64), InvalidArgument, "range_size=64 applies to the auto-split"),
        (lambda: ConsumerRef(1, 1), InvalidArgument, "name=1"),  # type: ignore[arg-type]
        (lambda: ConsumerRef("c", "1"), InvalidArgument, "consumer_id='1'"),  # type: ignore[arg-type]
        (lambda: make_selector().add("c1"), InvalidArgument, "Expected a ConsumerRef"),  # type: ignore[arg-type]
        (lambda: make_selector().select(-1), InvalidArgument, "non-negative slot"),
        (lambda: make_selector(version="3.0").select(-1), InvalidArgument, "non-negative slot"),
        (lambda: make_selector(version="3.3").select(-1), InvalidArgument, "non-negative slot"),
        (lambda: make_selector("auto-split").select(-5), InvalidArgument, "non-negative slot"),
    ],
)
def test_bad_arguments_get_one_teaching_error(call, error, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=message):
        call()


def test_consumer_ref_identity_and_repr() -> None:
    ref = ConsumerRef(name="c1", consumer_id=1)
    assert eval(repr(ref)) == ref
    assert ConsumerRef("c1", 1) != ConsumerRef("c1", 2)  # same name, different consumers
    assert ConsumerRef("c1", 1) != ConsumerRef("other", 1)
    assert len({ConsumerRef("c", 1), ConsumerRef("c", 1)}) == 1


def test_membership_is_kept_in_join_order_and_ids_are_unique() -> None:
    selector = make_selector()
    b, a = ConsumerRef("b", 2), ConsumerRef("a", 1)
    selector.add(b)
    selector.add(a)
    assert selector.consumers() == [b, a]
    assert list(selector.ranges()) == [b, a]
    assert a in selector and ConsumerRef("a", 3) not in selector and len(selector) == 2
    with pytest.raises(ModelStateError, match="consumer_id 2 already belongs to"):
        selector.add(ConsumerRef("someone-else", 2))
    with pytest.raises(ModelStateError, match="consumer_id 1 belongs to"):
        selector.remove(ConsumerRef("not-a", 1))
    assert selector.remove(ConsumerRef("never-joined", 9)) == {}  # ignored, as Pulsar ignores it
    assert "ConsistentHashingSelector" in repr(selector) and "ConsumerRef(name='b'" in repr(selector)


@pytest.mark.parametrize("version", ["2.10", "3.0.3", "3.0.7", "4.0"])
def test_same_operations_give_the_same_result(version: str) -> None:
    def build() -> str:
        selector = make_selector("consistent-hashing", version, points=50)
        for i, name in enumerate(["x", "y", "x", "z", "y"]):
            selector.add(ConsumerRef(name, i))
        selector.remove(ConsumerRef("x", 0))
        return repr(selector.ranges()) + repr([selector.select_key(f"k{i}".encode()) for i in range(100)])

    assert build() == build()


def test_public_names_are_exported_from_the_package() -> None:
    for name in ("make_hash", "sticky_key", "NONE_KEY", "ConsumerRef", "make_selector", "Selector", "ImpactedRanges"):
        assert name in reference_model.__all__
        assert hasattr(reference_model, name)


def test_selectors_import_no_io_library() -> None:
    code = (
        "import sys, reference_model.selectors, reference_model.hashing; "
        "bad = [m for m in ('socket', 'pulsar', 'pyspark', 'conformance', 'pytest_keyshared', 'random') "
        "if m in sys.modules]; print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == ""
