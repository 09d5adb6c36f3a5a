"""Scenario files of the ``replication`` conformance cases: failover scenarios (a package so they are installed)."""
