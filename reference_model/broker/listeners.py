"""Listeners a component outside the broker (replicated subscriptions) registers to follow what happens.

A listener is any object; it receives the calls it defines:

``on_entry_added(topic, entry)``
    an entry (message, batch, marker or replicated entry) was appended to ``topic``.
``on_marker_read(topic, subscription, entry)``
    ``subscription``'s dispatcher read a marker entry (and acknowledged it: markers are never delivered).
``on_mark_delete_advanced(topic, subscription, position)``
    ``subscription``'s mark-delete position moved forward to ``position``.

Calls happen synchronously, in registration order, after the broker's own state change.
"""

from __future__ import annotations

from typing import Any

from reference_model.storage.entry import Entry
from reference_model.storage.position import Position

__all__ = ["ListenerHub"]


class ListenerHub:
    """Fan-out of broker events to registered listeners."""

    __slots__ = ("_listeners",)

    def __init__(self) -> None:
        self._listeners: list[Any] = []

    def add(self, listener: Any) -> None:
        self._listeners.append(listener)

    def remove(self, listener: Any) -> None:
        self._listeners.remove(listener)

    def __bool__(self) -> bool:
        return bool(self._listeners)

    def entry_added(self, topic: str, entry: Entry) -> None:
        for listener in list(self._listeners):
            fn = getattr(listener, "on_entry_added", None)
            if fn is not None:
                fn(topic, entry)

    def marker_read(self, topic: str, subscription: str, entry: Entry) -> None:
        for listener in list(self._listeners):
            fn = getattr(listener, "on_marker_read", None)
            if fn is not None:
                fn(topic, subscription, entry)

    def mark_delete_advanced(self, topic: str, subscription: str, position: Position) -> None:
        for listener in list(self._listeners):
            fn = getattr(listener, "on_mark_delete_advanced", None)
            if fn is not None:
                fn(topic, subscription, position)
