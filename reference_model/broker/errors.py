"""Errors the model broker gives a client, named after the ``pulsar`` exceptions a real client raises.

Each class carries ``pulsar_name``, the name of the ``pulsar.<Name>`` exception the Python client raises for
the same failure, so a driver can map a model failure and a real one to the same trace event::

    BrokerClientError (KeySharedError)        exit code 3: the target refused or failed an operation
    ├── ConsumerBusy                          policy/type mismatch on a subscription with connected consumers
    ├── ProducerBusy                          a producer with that name is already connected to the topic
    ├── NotAllowedError                       the subscription type is disabled (``subscriptionTypesEnabled``)
    ├── CumulativeAcknowledgementNotAllowedError   cumulative ack on a Key_Shared consumer (client-side check)
    ├── BrokerPersistenceError                dedup cannot tell whether a send is a duplicate yet (``Unknown``),
    │                                         or the storage failed the write
    ├── SendTimeout                           no receipt within the producer's ``send_timeout_millis``
    └── AlreadyClosed                         an operation on a closed (or crashed) producer or consumer

Sticky range conflicts raise :class:`reference_model.errors.ConsumerAssignError` (``pulsar.ConsumerAssignError``).
"""

from __future__ import annotations

from reference_model.errors import KeySharedError

__all__ = [
    "AlreadyClosed",
    "BrokerClientError",
    "BrokerPersistenceError",
    "ConsumerBusy",
    "CumulativeAcknowledgementNotAllowedError",
    "NotAllowedError",
    "ProducerBusy",
    "SendTimeout",
]


class BrokerClientError(KeySharedError):
    """An operation the model broker (or the modelled client) refused, as a real client would see it."""

    exit_code = 3
    pulsar_name = "PulsarException"


class ConsumerBusy(BrokerClientError):
    pulsar_name = "ConsumerBusy"


class ProducerBusy(BrokerClientError):
    pulsar_name = "ProducerBusy"


class NotAllowedError(BrokerClientError):
    pulsar_name = "NotAllowedError"


class CumulativeAcknowledgementNotAllowedError(BrokerClientError):
    pulsar_name = "CumulativeAcknowledgementNotAllowedError"


class BrokerPersistenceError(BrokerClientError):
    pulsar_name = "BrokerPersistenceError"


class SendTimeout(BrokerClientError):
    """The client gave up waiting for a receipt (``pulsar.Timeout``): the broker may still store the message."""

    pulsar_name = "Timeout"


class AlreadyClosed(BrokerClientError):
    pulsar_name = "AlreadyClosed"
