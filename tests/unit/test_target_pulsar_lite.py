"""pulsar-lite's config and readiness rules, without starting the real broker (``tests/broker/`` does).

Readiness failures are exercised with stand-in executables given through the ``binary`` option: scripts that
print what pulsar-lite prints in each failure mode (a config ignored in favour of 0.0.0.0 defaults, an early
exit, silence), so the rule is tested without binding anything on all interfaces.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

from pytest_keyshared.targets import TargetError, make_target
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget, find_binary, render_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_the_generated_config_keeps_both_listeners_on_loopback() -> None:
    config = tomllib.loads(render_config(41001, 41002, "warn"))
    assert config["addr"] == "127.0.0.1:41001"
    assert config["metrics"] == {"enabled": True, "addr": "127.0.0.1:41002", "cluster": "keyshared"}
    assert config["log_level"] == "warn"


def test_the_wheel_ships_the_binary() -> None:
    binary = find_binary()
    assert binary.name == "pulsar-lite" and os.access(binary, os.X_OK)


def test_a_missing_binary_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match=r"Option binary=.*absent.*no executable file there"):
        find_binary(str(tmp_path / "absent"))
    with pytest.raises(TargetError, match="Option log_level='loud'"):
        make_target("pulsar-lite", artifacts_dir=tmp_path, options={"log_level": "loud"})


def _stand_in(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-pulsar-lite"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_a_broker_that_ignored_its_config_is_stopped_and_reported(tmp_path: Path) -> None:
    fake = _stand_in(
        tmp_path,
        'echo "INFO Metrics endpoint listening on http://0.0.0.0:8080/metrics"\n'
        'echo "INFO Server listening on 0.0.0.0:6650"\nexec sleep 30',
    )
    target = make_target("pulsar-lite", artifacts_dir=tmp_path / "a", options={"binary": fake})
    assert isinstance(target, PulsarLiteTarget)
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"ignored its config .* listens on 0\.0\.0\.0"):
        target.start()
    assert time.monotonic() - started < 5
    assert target.pid is None  # stopped by pid, not left running
    target.stop()


def test_a_broker_that_exits_early_shows_the_tail_of_its_log(tmp_path: Path) -> None:
    fake = _stand_in(tmp_path, 'echo "ERROR cannot open database"; exit 7')
    target = make_target("pulsar-lite", artifacts_dir=tmp_path / "b", options={"binary": fake})
    with pytest.raises(TargetError, match=r"exited with code 7 .*cannot open database"):
        target.start()
    target.stop()


def test_a_silent_broker_times_out_within_its_bound(tmp_path: Path) -> None:
    fake = _stand_in(tmp_path, "exec sleep 30")
    target = make_target(
        "pulsar-lite", artifacts_dir=tmp_path / "c", options={"binary": fake, "startup_timeout_s": 0.5}
    )
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"did not become ready on 127.0.0.1:\d+ within 0.5s"):
        target.start()
    assert time.monotonic() - started < 5
    assert target.pid is None
