"""Fixtures for testing the plugin from outside with pytester.

``fake_target_conftest`` writes a ``conftest.py`` into the pytester directory that provides a small
in-test target through the ``pytest_keyshared_make_target`` hook, so the plugin's mechanics (options,
expectations, summary, baseline, skips, xdist) are tested without a broker.  The cases that run real
scenarios on the real model target live in ``test_plugin_model_target.py``.
"""

from __future__ import annotations

import hypothesis  # noqa: F401 - imported once here, so in-process pytester runs do not re-import it
import pytest

FAKE_TARGET_CONFTEST = '''
import contextlib, json, os

class FakeTarget:
    name = "fake"
    capabilities = {"crash-consumer": True, "deduplication-switch": "fake has no admin API"}

    def __init__(self, artifacts_dir):
        self.artifacts_dir = artifacts_dir


class FakeViolation:
    def __init__(self, kind, key, explanation):
        self.kind, self.key, self.explanation = kind, key, explanation


class FakeVerdict:
    """Stands in for conformance.checks.Verdict in these plugin tests only."""

    def __init__(self, *violations):
        self.violations = list(violations)
        self.valid = not self.violations

    def render(self):
        return "\\n".join(v.explanation for v in self.violations) or "valid"


@contextlib.contextmanager
def _start(artifacts_dir):
    log = os.environ.get("FAKE_TARGET_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(json.dumps({"event": "start", "worker": os.environ.get("PYTEST_XDIST_WORKER")}) + "\\n")
    if os.environ.get("FAKE_TARGET_BROKEN"):
        raise ConnectionRefusedError("nothing listens on 127.0.0.1:1")
    yield FakeTarget(artifacts_dir)


def pytest_keyshared_make_target(config, spec, artifacts_dir):
    if spec == "fake":
        return _start(artifacts_dir)
    return None
'''


@pytest.fixture
def fake_target_conftest(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(FAKE_TARGET_CONFTEST)
    return pytester
