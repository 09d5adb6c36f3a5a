"""Scenario files of the ``assignment`` conformance cases (a package so they are installed)."""
