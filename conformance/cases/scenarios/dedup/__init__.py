"""Scenario files of the ``dedup`` conformance cases (a package so they are installed)."""
