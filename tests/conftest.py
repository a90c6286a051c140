"""Fixtures shared by every test folder: the fake API server."""

from __future__ import annotations

import pytest

from fake_apiserver import FakeAPIServer


@pytest.fixture
def apiserver():
    """A running :class:`FakeAPIServer` over a fresh MemoryCluster."""
    with FakeAPIServer() as server:
        yield server


@pytest.fixture
def kube(apiserver, tmp_path):
    """A KubernetesCluster talking to ``apiserver``, with short backoffs."""
    from kubesched.core.cluster.kube import KubernetesCluster

    return KubernetesCluster.from_kubeconfig(apiserver.kubeconfig(tmp_path / "kubeconfig"), qps=0,
                                             backoff_factor=0.01, watch_backoff=(0.01, 0.1))
