"""Expectations shipped with the suite: one TOML file per target kind (``pulsar-lite.toml``, ...).

Each lists the conformance cases known to fail on that target, with the reason, measured by running the
suite (see ``docs/conformance.md``).  The reference model has one file per release line that still has a
known bug at its newest patch (``model-3.0.toml``, ``model-4.0-classic.toml``, ...), derived from Apache
Pulsar's fix history (``conformance/known_bugs.py``); ``model`` (4.0, PIP-379) passes everything.  This is a
package so that the files are installed with ``conformance``.
"""
