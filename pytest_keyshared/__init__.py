"""pytest-keyshared: a pytest plugin and conformance suite for Apache Pulsar-compatible brokers.

``pytest -p pytest_keyshared`` loads this package as the plugin, so it re-exports the plugin's hooks and
fixtures; the entry point registers :mod:`pytest_keyshared.plugin` under the same name, so the plugin is
never registered twice.

The re-export is lazy: the ``keyshared`` command imports this package too, and importing pytest (which the
plugin needs) would add a fifth of a second to every command's start-up.  pytest lists a plugin's names with
``dir()`` before reading them, and any name of the plugin read here loads it (:pep:`562`).
"""

from __future__ import annotations

import importlib
from typing import Any

_loading = False


def _plugin_names() -> list[str]:
    """The plugin's names, copied here on first use (then ``dir()`` and the module's dict both hold them)."""
    global _loading
    _loading = True
    try:
        plugin = importlib.import_module("pytest_keyshared.plugin")
    finally:
        _loading = False
    names = list(plugin.__all__)
    globals().update({name: getattr(plugin, name) for name in names}, __all__=names)
    return names


def __getattr__(name: str) -> Any:
    # a submodule being imported is looked up here first (and import machinery probes dunders): not the plugin's
    if _loading or (name.startswith("__") and name != "__all__"):
        raise AttributeError(name)
    if name in _plugin_names() or name == "__all__":
        return globals()[name]
    raise AttributeError(f"module 'pytest_keyshared' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_plugin_names()})
