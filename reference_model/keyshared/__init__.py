"""Key_Shared dispatch as Apache Pulsar's broker does it: PIP-379 (4.0+) and the classic (3.x) dispatcher.

Public surface only; each name lives in the module named after the Pulsar class it follows.
"""

from reference_model.keyshared.classic import ClassicDispatcher
from reference_model.keyshared.consumer import DispatchConsumer, EntrySink
from reference_model.keyshared.dispatcher import KeySharedDispatcher, ReadType, Scheduler
from reference_model.keyshared.draining import DrainingHashEntry, DrainingHashesTracker
from reference_model.keyshared.factory import (
    IMPLEMENTATIONS,
    check_implementation,
    default_implementation,
    make_dispatcher,
)
from reference_model.keyshared.nonpersistent import NonPersistentDispatcher
from reference_model.keyshared.pending_acks import PendingAcks
from reference_model.keyshared.pip379 import Pip379Dispatcher
from reference_model.keyshared.policy import AUTO_SPLIT, KEY_SHARED_MODES, STICKY, KeySharedPolicy
from reference_model.keyshared.replay_queue import ReplayQueue
from reference_model.keyshared.settings import BROKER_CONF_NAMES, DispatcherSettings, effective_lookahead_limit

__all__ = [
    "AUTO_SPLIT",
    "BROKER_CONF_NAMES",
    "IMPLEMENTATIONS",
    "KEY_SHARED_MODES",
    "STICKY",
    "ClassicDispatcher",
    "DispatchConsumer",
    "DispatcherSettings",
    "DrainingHashEntry",
    "DrainingHashesTracker",
    "EntrySink",
    "KeySharedDispatcher",
    "KeySharedPolicy",
    "NonPersistentDispatcher",
    "PendingAcks",
    "Pip379Dispatcher",
    "ReadType",
    "ReplayQueue",
    "Scheduler",
    "check_implementation",
    "default_implementation",
    "effective_lookahead_limit",
    "make_dispatcher",
]
