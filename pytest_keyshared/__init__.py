"""pytest-keyshared: a pytest plugin and conformance suite for Apache Pulsar-compatible brokers.

``pytest -p pytest_keyshared`` loads this package as the plugin, so it re-exports the plugin's hooks and
fixtures; the entry point registers :mod:`pytest_keyshared.plugin` under the same name, so the plugin is
never registered twice.
"""

from pytest_keyshared.plugin import *  # noqa: F403
from pytest_keyshared.plugin import __all__ as _plugin_all

__all__ = list(_plugin_all)
