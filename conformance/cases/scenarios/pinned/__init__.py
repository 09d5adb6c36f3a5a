"""Scenario files of the ``pinned`` conformance cases: key placement with its own expected answer."""
