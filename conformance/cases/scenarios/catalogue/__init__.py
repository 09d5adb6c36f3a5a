"""Scenario files of the ``catalogue`` conformance cases (a package so they are installed)."""
