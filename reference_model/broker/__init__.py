"""The model as an in-process broker: producers, consumers, topics, policies, restart, clusters, a clock.

Public surface only; each name lives in the module named after the concept it models.
"""

from reference_model.broker.clock import NS_PER_MS, SimClock, Timer
from reference_model.broker.config import BrokerConfig
from reference_model.broker.consumer import ModelConsumer
from reference_model.broker.errors import (
    AlreadyClosed,
    BrokerClientError,
    BrokerPersistenceError,
    ConsumerBusy,
    CumulativeAcknowledgementNotAllowedError,
    NotAllowedError,
    ProducerBusy,
    SendTimeout,
)
from reference_model.broker.listeners import ListenerHub
from reference_model.broker.messages import DUPLICATE_MESSAGE_ID, ModelMessage, ModelMessageId
from reference_model.broker.model_broker import DEFAULT_NAMESPACE, ModelBroker, normalise_topic
from reference_model.broker.producer import BATCHING_TYPES, ModelProducer, SendCallback
from reference_model.broker.subscription import ServerSubscription
from reference_model.broker.topic import MARKER_PRODUCER_NAME, ServerTopic
from reference_model.keyshared.policy import KeySharedPolicy

__all__ = [
    "BATCHING_TYPES",
    "DEFAULT_NAMESPACE",
    "DUPLICATE_MESSAGE_ID",
    "MARKER_PRODUCER_NAME",
    "NS_PER_MS",
    "AlreadyClosed",
    "BrokerClientError",
    "BrokerConfig",
    "BrokerPersistenceError",
    "ConsumerBusy",
    "CumulativeAcknowledgementNotAllowedError",
    "KeySharedPolicy",
    "ListenerHub",
    "ModelBroker",
    "ModelConsumer",
    "ModelMessage",
    "ModelMessageId",
    "ModelProducer",
    "NotAllowedError",
    "ProducerBusy",
    "SendCallback",
    "SendTimeout",
    "ServerSubscription",
    "ServerTopic",
    "SimClock",
    "Timer",
    "normalise_topic",
]
