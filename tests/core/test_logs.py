"""klog-style structured logs: text and component-base JSON."""

from __future__ import annotations

import io
import json
import logging

import pytest

from kubesched.core.observability.logs import configure_logging


@pytest.fixture
def restore_root_logger():
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_carry_the_message_verbosity_and_key_values(restore_root_logger):
    out = io.StringIO()
    configure_logging("json", v=2, stream=out)
    log = logging.getLogger("kubesched.test")
    log.debug("Successfully bound pod to node", extra={"pod": "default/web", "node": "n1"})
    log.info("caches synced", extra={"nodes": 3})
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("the scheduler loop failed")
    first, second, third = (json.loads(line) for line in out.getvalue().splitlines()[:3])
    assert first["msg"] == "Successfully bound pod to node" and first["v"] == 2
    assert (first["pod"], first["node"]) == ("default/web", "n1")
    assert first["caller"].startswith("test_logs.py:") and isinstance(first["ts"], float)
    assert (second["v"], second["nodes"]) == (0, 3)
    assert "v" not in third and "RuntimeError: boom" in third["err"]


def test_text_lines_have_klogs_header_and_quoted_values(restore_root_logger):
    out = io.StringIO()
    configure_logging("text", v=0, stream=out)
    log = logging.getLogger("kubesched.test")
    log.debug("hidden at -v 0")
    log.warning("watch of pods failed", extra={"retryIn": 0.8})
    [line] = out.getvalue().splitlines()
    assert line.startswith("W") and "test_logs.py:" in line
    assert line.endswith("] watch of pods failed retryIn=0.8")


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match="--log-format"):
        configure_logging("xml")
