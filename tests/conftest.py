"""Fixtures shared by every test folder: the fake API server."""

from __future__ import annotations

import gc
import logging
import os
import random
import signal

import pytest

from fake_apiserver import FakeAPIServer


def pytest_collection_modifyitems(config, items):
    """The tests marked ``long`` (tens of seconds of subprocesses and wall-clock waits) run first, the rest in
    their order: on two workers (xdist) a long test started near the end would keep one busy while the other
    has nothing left to do."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_collection_finish(session):
    """What the imports and the collection made lives until the run ends: it is frozen (gc.freeze), so the
    collector's full passes during the tests stop walking the ~100,000 objects of the imported libraries
    (they took a third of the CPU time of tests/perf)."""
    gc.collect()
    gc.freeze()


def _process_state() -> dict:
    """What of the worker process a test must leave as it found it: the tests after it on the same worker
    (which ones, xdist decides) would otherwise run in another process than the one they were written for."""
    root = logging.getLogger()
    return {"environment": {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
            "working directory": os.getcwd(),
            "root logger": (root.level, [h for h in root.handlers if not type(h).__module__.startswith("_pytest")]),
            "signal handlers": [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)]}


@pytest.fixture(autouse=True)
def process_state_left_as_found():
    """A test that changes process-wide state (an environment variable, the working directory, the root
    logger, a signal handler) and does not put it back errors here, at once and in that test, instead of
    making a later test on the worker fail now and then.  (Set up before monkeypatch - see the fixture
    below - and every fixture of the test, so checked after they are torn down and monkeypatch undone.)"""
    before = _process_state()
    yield
    after = _process_state()
    changed = sorted(key for key in before if before[key] != after[key])
    assert not changed, f"the test left process-wide state changed: {', '.join(changed)}"


@pytest.fixture(autouse=True)
def plugin_metrics_sampled_per_test(process_state_left_as_found, request, monkeypatch):
    """Which scheduling cycles time their plugins is a random draw (10 % of cycles, as upstream samples
    them), and which metric series a test reaches depends on it: each test draws from a generator seeded
    by its own id, so it samples the same cycles whichever worker runs it and whatever ran before it.
    (A test that needs every cycle sampled patches ``_SAMPLE`` itself, after this.)"""
    from kubesched.core.framework import cycle_state

    monkeypatch.setattr(cycle_state, "_SAMPLE", random.Random(request.node.nodeid).random)


@pytest.fixture
def apiserver():
    """A running :class:`FakeAPIServer` over a fresh MemoryCluster."""
    with FakeAPIServer() as server:
        yield server


@pytest.fixture
def kube(apiserver, tmp_path):
    """A KubernetesCluster talking to ``apiserver``, with short backoffs. Every
    watch it started is stopped when the test ends, passed or failed: a watch
    left running would retry against the closed server and log into the
    captured output of the tests after it."""
    from kubesched.core.cluster.kube import KubernetesCluster

    cluster = KubernetesCluster.from_kubeconfig(apiserver.kubeconfig(tmp_path / "kubeconfig"), qps=0,
                                                backoff_factor=0.01, watch_backoff=(0.01, 0.1))
    stops = []
    watch = cluster.watch

    def tracked_watch(kind, resource_version, sink):
        stop = watch(kind, resource_version, sink)
        stops.append(stop)
        return stop

    cluster.watch = tracked_watch
    yield cluster
    for stop in stops:
        stop()
