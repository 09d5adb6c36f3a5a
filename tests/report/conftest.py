"""Fixtures of the report tests: hand-written traces with known violations, and a real headless Chromium.

The browser is Debian's ``chromium`` (``apt-get install chromium``; ``.ci/run`` installs it where missing),
driven by Playwright's Python package with ``executable_path``: no browser is downloaded.  Without a browser
the browser tests skip, except under CI (``CI`` set), where they fail: CI must run them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.trace import SelectorSpec, SubscriptionSpec, TraceBuilder, TraceHeader

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def overlap_builder() -> TraceBuilder:
    """c1 holds k1 while c2 receives k1 (key_overlap, out_of_order; one of them misassigned), k2 clean.

    Also a nack, a redeliver, a crash and a broker fault, so every kind of mark is drawn.
    """
    header = TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s"),
        pulsar_version="4.0",
        selector=SelectorSpec("auto-split", "4.0"),
        seed=7,
    )
    b = TraceBuilder(header)
    b.open("c1")
    b.publish("k1", "1:0")
    b.publish("k2", "1:1")
    b.receive("c1", "k1", "1:0")
    b.receive("c1", "k2", "1:1")
    b.open("c2")
    b.publish("k1", "1:2")
    b.receive("c2", "k1", "1:2")  # c1 still holds 1:0 of k1
    b.ack("c2", "1:2", key="k1")
    b.ack("c1", "1:0", key="k1")
    b.nack("c1", "1:1", key="k2")
    b.receive("c1", "k2", "1:1", redelivery_count=1)
    b.redeliver("c1")
    b.receive("c1", "k2", "1:1", redelivery_count=2)
    b.ack("c1", "1:1", key="k2")
    b.publish("k2", "1:3")
    b.receive("c1", "k2", "1:3")
    b.fault("broker_restart")
    b.receive("c1", "k2", "1:3", redelivery_count=1)
    b.ack("c1", "1:3", key="k2")
    b.crash("c2")
    b.end(drained=True)
    return b


def many_violations_builder(keys: int = 17, later: int = 4) -> tuple[TraceBuilder, str]:
    """136 violations (the issue's run): c1 holds one message of each of 17 keys while c2, the owner the selector
    names after it joins, receives 4 later messages of each (key_overlap and out_of_order, 4 per key each).

    Also a clean key at the right end of the hash line (c1's); returns the builder and that key.
    """
    from reference_model.selectors import ConsumerRef, make_selector

    header = TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s"),
        pulsar_version="4.0",
        selector=SelectorSpec("auto-split", "4.0"),
        seed=1,
    )
    probe = make_selector("auto-split", "4.0")
    probe.add(ConsumerRef("c1", 0))
    probe.add(ConsumerRef("c2", 2 * keys + 4))  # the index of c2's open below

    def owner(key: str) -> str:
        ref = probe.select_key(key.encode())
        return "" if ref is None else ref.name

    names = [k for k in (f"key-{n:03d}" for n in range(400)) if owner(k) == "c2"][:keys]
    edge = max((f"edge-{n}" for n in range(400)), key=lambda k: probe.slot_of(k.encode()))
    b = TraceBuilder(header)
    b.open("c1")
    for n, key in enumerate(names):
        b.publish(key, f"1:{n}"), b.receive("c1", key, f"1:{n}")
    b.publish(edge, "3:0"), b.receive("c1", edge, "3:0"), b.ack("c1", "3:0", key=edge)
    b.open("c2")
    assert b.events[-1].i == 2 * keys + 4
    for m in range(later):
        for n, key in enumerate(names):
            msg = f"2:{m * keys + n}"
            b.publish(key, msg), b.receive("c2", key, msg), b.ack("c2", msg, key=key)
    for n, key in enumerate(names):
        b.ack("c1", f"1:{n}", key=key)
    b.end(drained=True)
    return b, edge


@pytest.fixture
def many_violations_trace(tmp_path: Path) -> Path:
    return many_violations_builder()[0].write(tmp_path / "many.jsonl")


@pytest.fixture
def overlap_trace(tmp_path: Path) -> Path:
    return overlap_builder().write(tmp_path / "trace.jsonl")


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Chromium for the session (skips without one, except under CI)."""
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    missing = "the playwright package (test extra)" if sync_playwright is None else None
    if executable is None:
        missing = "Debian's chromium (apt-get install chromium)"
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests need {missing}; .ci/run installs it")
        pytest.skip(f"browser tests need {missing}")
    assert sync_playwright is not None and executable is not None
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def open_page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """``open_page(path)``: a fresh page on a file, drawn, with script errors collected (must stay empty)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    errors: list[str] = []

    def opener(path: Path, fragment: str = "") -> Any:
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("request", lambda req: None if req.url.startswith(("file:", "data:", "about:")) else errors.append(
            f"network request: {req.url}"))  # fmt: skip
        page.goto(path.resolve().as_uri() + (f"#{fragment}" if fragment else ""))
        page.wait_for_selector("body[data-ready='1']", state="attached", timeout=15_000)
        return page

    yield opener
    context.close()
    assert errors == [], errors


@pytest.fixture
def artifact_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where a test keeps its screenshots: ``keyshared-artifacts/report-screenshots`` under pytest's base temp."""
    base = tmp_path_factory.getbasetemp() / "keyshared-artifacts" / "report-screenshots"
    base.mkdir(parents=True, exist_ok=True)
    return base
