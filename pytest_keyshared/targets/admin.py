"""A few calls of Apache Pulsar's admin REST API (v2), with bounded timeouts and one-line errors.

Only what the harness needs: readiness (``GET /admin/v2/clusters``), a topic's deduplication policy, topic
stats, and the registrations geo-replication needs (clusters, tenants, namespaces; see ``targets/geo.py``).
Paths follow ``/work/shared/research/pulsar-semantics.md`` §9.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from pytest_keyshared.targets.base import TargetError

__all__ = ["AdminClient", "AdminError", "topic_path"]


class AdminError(TargetError):
    """The admin API answered with an HTTP error; ``status`` is its code (409: already exists, 404: absent)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def topic_path(topic: str) -> str:
    """``persistent://tenant/ns/name`` -> ``persistent/tenant/ns/name`` (the REST path of a topic)."""
    domain, sep, rest = topic.partition("://")
    parts = rest.split("/")
    if not sep or domain not in ("persistent", "non-persistent") or len(parts) != 3 or not all(parts):
        raise TargetError(f"Expected a topic like 'persistent://public/default/name' but got {topic!r}.")
    return f"{domain}/" + "/".join(urllib.parse.quote(p, safe="") for p in parts)


class AdminClient:
    """Blocking admin calls to ``base_url`` (``http://HOST:PORT``); every call is bounded by ``timeout_s``."""

    def __init__(self, base_url: str, *, timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace").strip()[:200]
            raise AdminError(
                f"Admin API {method} {self.base_url}{path} answered {exc.code}: {detail}", exc.code
            ) from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TargetError(f"Admin API {method} {self.base_url}{path} failed: {reason}") from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw.decode("utf-8", "replace")

    def clusters(self) -> list[str]:
        result = self.request("GET", "/admin/v2/clusters")
        return list(result) if isinstance(result, list) else []

    def topic_stats(self, topic: str) -> dict[str, Any]:
        result = self.request("GET", f"/admin/v2/{topic_path(topic)}/stats")
        return result if isinstance(result, dict) else {}

    def internal_stats(self, topic: str) -> dict[str, Any]:
        """``GET .../internalStats``: ledgers, and every cursor's positions (``pulsar.dedup`` among them)."""
        result = self.request("GET", f"/admin/v2/{topic_path(topic)}/internalStats")
        return result if isinstance(result, dict) else {}

    def partitioned_stats(self, topic: str) -> dict[str, Any]:
        """``GET .../partitioned-stats``: a partitioned topic's stats summed over its partitions (subscriptions'
        backlogs added, a replicator connected only if it is on every partition)."""
        result = self.request("GET", f"/admin/v2/{topic_path(topic)}/partitioned-stats")
        return result if isinstance(result, dict) else {}

    def create_partitioned_topic(self, topic: str, partitions: int) -> None:
        """``PUT .../partitions`` (body: the partition count); one that exists already (409) is kept."""
        try:
            self.request("PUT", f"/admin/v2/{topic_path(topic)}/partitions", partitions)
        except AdminError as exc:
            if exc.status != 409:
                raise

    def delete_subscription(self, topic: str, subscription: str) -> bool:
        """``DELETE .../subscription/{sub}`` (refused by the broker while consumers are connected); False when
        there is no such subscription or topic (404: ``internalDeleteSubscriptionForNonPartitionedTopicAsync``)."""
        sub = urllib.parse.quote(subscription, safe="")
        try:
            self.request("DELETE", f"/admin/v2/{topic_path(topic)}/subscription/{sub}")
        except AdminError as exc:
            if exc.status != 404:
                raise
            return False
        return True

    def set_replicated_subscription_status(self, topic: str, subscription: str, enabled: bool) -> None:
        """``POST .../subscription/{sub}/replicatedSubscriptionStatus`` (body ``true`` / ``false``)."""
        sub = urllib.parse.quote(subscription, safe="")
        self.request("POST", f"/admin/v2/{topic_path(topic)}/subscription/{sub}/replicatedSubscriptionStatus", enabled)

    def expire_messages(self, topic: str, subscription: str, expire_time_s: int) -> None:
        """``POST .../subscription/{sub}/expireMessages/{expireTimeInSeconds}``: what a TTL check runs, now."""
        sub = urllib.parse.quote(subscription, safe="")
        self.request("POST", f"/admin/v2/{topic_path(topic)}/subscription/{sub}/expireMessages/{expire_time_s}")

    def compact(self, topic: str, *, wait_s: float = 30.0) -> None:
        """``PUT .../compaction`` (``triggerCompaction``), then wait (bounded) until ``GET .../compaction`` says
        ``SUCCESS``; :class:`TargetError` on ``ERROR`` or after ``wait_s``."""
        path = f"/admin/v2/{topic_path(topic)}/compaction"
        self.request("PUT", path)
        deadline = time.monotonic() + wait_s
        while True:
            answer = self.request("GET", path)
            status = answer.get("status") if isinstance(answer, dict) else None
            if status == "SUCCESS":
                return
            if status == "ERROR" or time.monotonic() >= deadline:
                raise TargetError(f"Compaction of {topic!r} did not succeed within {wait_s:g}s (status {status!r}).")
            time.sleep(0.2)

    def set_topic_deduplication(self, topic: str, enabled: bool, *, wait_s: float = 15.0) -> None:
        """Set the topic-level ``deduplicationEnabled`` policy and wait (bounded) until the topic applies it.

        Topic policies travel through a system topic, so the call returns only once ``GET`` agrees and, when
        enabling, the topic stats report ``deduplicationStatus: Enabled`` (a recovering topic treats every
        message as new); else :class:`TargetError` after ``wait_s``.
        """
        path = f"/admin/v2/{topic_path(topic)}/deduplicationEnabled"
        self.request("POST", path, enabled)
        deadline = time.monotonic() + wait_s
        while True:
            current = self.request("GET", path)
            applied = current is enabled or current == str(enabled).lower()
            status = None
            if applied and enabled:
                status = self.topic_stats(topic).get("deduplicationStatus")
                applied = status in (None, "Enabled")
            if applied:
                return
            if time.monotonic() >= deadline:
                raise TargetError(
                    f"Deduplication of {topic} not applied {wait_s:g}s after setting it to {enabled}:"
                    f" policy reads {current!r}, status {status!r}."
                )
            time.sleep(0.1)
