"""How the selectors name a consumer: :class:`ConsumerRef`."""

from __future__ import annotations

from dataclasses import dataclass

from reference_model.errors import InvalidArgument

__all__ = ["ConsumerRef"]


@dataclass(frozen=True, slots=True, order=True)
class ConsumerRef:
    """One consumer connection as a selector sees it: the name it subscribed with and a unique id.

    Pulsar lets several connected consumers share a name, so the name is not an identity.  The broker gives
    each connection a ``consumerId`` (the model broker a unique id per connection, the trace checker one per
    consumer incarnation); ``consumer_id`` is what identifies a consumer here.

    Equality and hashing use both fields (plain dataclass semantics), so two refs are equal only when they are
    the same consumer described the same way; a selector refuses a second member with an id it already holds
    (:class:`~reference_model.errors.ModelStateError`), so within one selector the id alone identifies.  The
    consistent-hashing ring of every era places points by *name* (3.0.7+ adds a per-name index); all other
    bookkeeping follows the id, as Pulsar 4.0's ``ConsumerIdentityWrapper`` follows object identity.

    The repr round-trips: ``ConsumerRef(name='c1', consumer_id=1)``.
    """

    name: str
    consumer_id: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise InvalidArgument(
                f"Expected a str for ConsumerRef.name but got name={self.name!r} (type={type(self.name).__name__})."
            )
        if isinstance(self.consumer_id, bool) or not isinstance(self.consumer_id, int):
            raise InvalidArgument(
                f"Expected an int for ConsumerRef.consumer_id but got consumer_id={self.consumer_id!r}"
                f" (type={type(self.consumer_id).__name__})."
            )
