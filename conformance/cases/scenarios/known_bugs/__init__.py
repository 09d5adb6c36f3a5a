"""Scenario files of the ``known_bugs`` conformance cases (a package so they are installed)."""
