"""Expectations shipped with the suite: one TOML file per target kind (``pulsar-lite.toml``, ...).

Each lists the conformance cases known to fail on that target, with the reason, measured by running the
suite (see ``docs/conformance.md``).  The reference model has no file: it passes everything.  This is a
package so that the files are installed with ``conformance``.
"""
