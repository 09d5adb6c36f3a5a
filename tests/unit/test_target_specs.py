"""Target strings, options, capabilities and claims: everything decided before a broker is started."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.trace import SelectorSpec
from pytest_keyshared.targets import (
    Capabilities,
    Claims,
    TargetSpec,
    UnsupportedByTarget,
    make_target,
    open_target,
    parse_target,
)
from pytest_keyshared.targets.base import CAPABILITY_NAMES
from pytest_keyshared.targets.model import parse_model_spec
from pytest_keyshared.targets.url import parse_broker_url
from reference_model.errors import InvalidArgument, UnknownVersion


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("pulsar-lite", "pulsar-lite"),
        ("pulsar://127.0.0.1:6650", "url"),
        ("pulsar://broker.example:6651?admin=http://broker.example:8080", "url"),
        ("testcontainers", "testcontainers"),
        ("testcontainers:4.0.13", "testcontainers"),
        ("testcontainers:apachepulsar/pulsar:3.0.12", "testcontainers"),
        ("model", "model"),
        ("model:classic", "model"),
        ("model:pulsar-3.3", "model"),
        ("model:4.0.2:pip379", "model"),
        (" model ", "model"),
    ],
)
def test_target_strings_name_their_kind(spec: str, kind: str) -> None:
    assert parse_target(spec) == TargetSpec(kind, spec.strip())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "Expected a target string"),
        ("modle", "Did you mean 'model'?"),
        ("pulsar-light", "Did you mean 'pulsar-lite'?"),
        ("pulsar://localhost", "needs a host and a port"),
        ("pulsar://h:6650/path", "must not have a path"),
        ("pulsar://h:6650?adm=http://x", "unknown parameter 'adm'"),
        ("pulsar://h:6650?admin=h:8080", "admin must be an http(s) URL"),
        ("pulsar+ssl://h:6651", "TLS (pulsar+ssl://) is not supported"),
        ("testcontainers:apachepulsar/pulsar", "pin a release tag"),
        ("testcontainers:apachepulsar/pulsar:latest", "not reproducible"),
        ("model:9.9", "Known release lines"),
        ("model:classic:pip379", "two implementations"),
        ("model:4.0:3.0", "two versions"),
    ],
)
def test_bad_target_strings_are_one_teaching_error(spec: str, message: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_target(spec)
    assert message in str(info.value)
    assert info.value.exit_code == 2


def test_broker_urls_split_into_host_port_and_admin() -> None:
    assert parse_broker_url("pulsar://127.0.0.1:6650") == ("127.0.0.1", 6650, None)
    assert parse_broker_url("pulsar://h:1?admin=https://h:8443") == ("h", 1, "https://h:8443")


def test_model_specs() -> None:
    assert parse_model_spec("model") == ("4.0", None)
    assert parse_model_spec("model:classic") == ("4.0", "classic")
    assert parse_model_spec("model:pulsar-3.3") == ("pulsar-3.3", None)
    with pytest.raises(UnknownVersion):
        parse_model_spec("model:1.22")


def test_unknown_options_name_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match=r"Unknown option 'startup_timeout' .*Did you mean 'startup_timeout_s'"):
        make_target("pulsar-lite", artifacts_dir=tmp_path, options={"startup_timeout": 3})
    with pytest.raises(InvalidArgument, match=r"Option startup_timeout_s=True .*expected int or float"):
        make_target("pulsar-lite", artifacts_dir=tmp_path, options={"startup_timeout_s": True})
    with pytest.raises(InvalidArgument, match="Options of this target: admin_url"):
        make_target("pulsar://127.0.0.1:6650", artifacts_dir=tmp_path, options={"nope": 1})


def test_pulsar_lite_claims_pulsar_4_and_declares_what_it_lacks(tmp_path: Path) -> None:
    target = make_target("pulsar-lite", artifacts_dir=tmp_path)
    assert target.claims == Claims(pulsar_version="4.0", implementation="pip379", selector="consistent-hashing")
    assert target.claims.selector_for("AUTO_SPLIT") == SelectorSpec("consistent-hashing", "4.0", 100)
    assert target.claims.selector_for("STICKY") == SelectorSpec("sticky", "4.0", 100)
    caps = target.capabilities
    assert caps.crash_consumer and caps.broker_restart
    assert not (caps.admin_api or caps.dedup_switch or caps.replication)
    assert "no deduplication" in caps.reasons["dedup_switch"]
    assert target.quirks.distinct_consumer_ids and target.quirks.sync_publish  # pulsar-lite.md §5.1, §5.2


def test_url_targets_gain_dedup_with_an_admin_url_and_never_restart(tmp_path: Path) -> None:
    plain = make_target("pulsar://127.0.0.1:6650", artifacts_dir=tmp_path)
    assert not plain.capabilities.dedup_switch and not plain.capabilities.broker_restart
    with_admin = make_target("pulsar://127.0.0.1:6650?admin=http://127.0.0.1:8080", artifacts_dir=tmp_path)
    assert with_admin.capabilities.dedup_switch and with_admin.capabilities.admin_api
    assert with_admin.admin_url == "http://127.0.0.1:8080"  # type: ignore[attr-defined]
    classic = make_target("pulsar://h:1", artifacts_dir=tmp_path, options={"pulsar_version": "3.0"})
    assert classic.claims.implementation == "classic" and classic.claims.pulsar_version == "3.0"
    with pytest.raises(InvalidArgument, match="Option implementation='pip3': expected one of"):
        make_target("pulsar://h:1", artifacts_dir=tmp_path, options={"implementation": "pip3"})


def test_model_targets_claim_their_version_and_implementation(tmp_path: Path) -> None:
    assert make_target("model", artifacts_dir=tmp_path).claims.implementation == "pip379"
    old = make_target("model:pulsar-3.3", artifacts_dir=tmp_path)
    assert (old.claims.pulsar_version, old.claims.implementation) == ("3.3", "classic")
    assert make_target("model:classic", artifacts_dir=tmp_path).claims.implementation == "classic"
    with pytest.raises(InvalidArgument, match=r"needs Pulsar 4\.0 or later"):
        make_target("model:3.0:pip379", artifacts_dir=tmp_path)
    dedup = make_target("model", artifacts_dir=tmp_path, options={"broker_conf": {"brokerDeduplicationEnabled": True}})
    assert dedup.claims.deduplication
    assert make_target("model", artifacts_dir=tmp_path).deterministic


def test_capabilities_refuse_with_every_missing_reason() -> None:
    caps = Capabilities(crash_consumer=False, broker_restart=False, reasons={"crash_consumer": "no way to kill"})
    with pytest.raises(UnsupportedByTarget) as info:
        caps.require({"crash_consumer": "step 5 (crash)", "broker_restart": "step 7 (restart_broker)"}, "t")
    text = str(info.value)
    assert "step 5 (crash) needs crash_consumer (no way to kill)" in text
    assert "step 7 (restart_broker) needs broker_restart" in text
    assert info.value.exit_code == 2
    caps.require({}, "t")
    with pytest.raises(InvalidArgument, match="Did you mean 'crash_consumer'"):
        caps.has("crash_consumers")
    assert set(caps.to_dict()) == set(CAPABILITY_NAMES)


def test_open_target_stops_what_it_started_when_the_body_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="boom"), open_target("model", artifacts_dir=tmp_path) as target:
        assert target.name == "model"
        raise RuntimeError("boom")
