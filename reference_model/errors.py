"""Exceptions raised by the reference model.

The tree, so a caller can catch exactly what it can handle::

    KeySharedError                      base of everything this project raises on purpose
    ├── InvalidArgument (ValueError)    a value given by a user or caller is not acceptable
    │   └── UnknownVersion              a Pulsar version the model does not know
    ├── ConsumerAssignError             the broker would refuse the consumer (sticky range conflict,
    │                                   no range left to split); mirrors Pulsar's ConsumerAssignException
    └── ModelStateError (RuntimeError)  the model reached a state Apache Pulsar treats as impossible
                                        (IllegalStateException there); always a bug in the model or its caller

Violations found in traces are *data* (see ``conformance``), never exceptions.  Each error carries an
``exit_code`` so command-line shells can map it without a lookup table.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "ConsumerAssignError",
    "InvalidArgument",
    "KeySharedError",
    "ModelStateError",
    "UnknownVersion",
    "did_you_mean",
]


class KeySharedError(Exception):
    """Base class of every error this project raises deliberately."""

    exit_code: int = 2


class InvalidArgument(KeySharedError, ValueError):
    """A value passed in by a user or a caller is not acceptable; the message names it and says what would be."""

    exit_code = 2


class UnknownVersion(InvalidArgument):
    """A Pulsar version string the reference model has no rules for."""


class ConsumerAssignError(KeySharedError):
    """The broker would reject this consumer (Pulsar's ``ConsumerAssignException``; client: ConsumerAssignError)."""

    exit_code = 2


class ModelStateError(KeySharedError, RuntimeError):
    """The model reached a state that Apache Pulsar treats as impossible (an IllegalStateException there)."""

    exit_code = 3


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """A ``" Did you mean 'x'?"`` suffix when ``value`` is close to one of ``choices``, else ``""``."""
    close = difflib.get_close_matches(value, list(choices), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""
