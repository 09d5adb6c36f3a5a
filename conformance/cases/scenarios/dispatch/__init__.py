"""Scenario files of the ``dispatch`` conformance cases (a package so they are installed)."""
