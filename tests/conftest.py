"""Fixtures shared by every test folder: the fake API server."""

from __future__ import annotations

import pytest

from fake_apiserver import FakeAPIServer


@pytest.fixture
def apiserver():
    """A running :class:`FakeAPIServer` over a fresh MemoryCluster."""
    with FakeAPIServer() as server:
        yield server
