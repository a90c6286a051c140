"""Hostile requests against a running `kubesched ui`: other web pages, foreign hosts, files it was not given.

One `kubesched ui` process serves every test of the module (examples/cluster,
with configs/bin-packing.yaml offered to the Config diff page); each test
speaks raw HTTP to it (http.client: the Host, Origin and Referer headers are
the test's), and the last one checks that its memory stays bounded and it is alive.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kubesched.cli import app

from .helpers import ROOT, RUN_TIMEOUT, text

EVIL = "http://evil.example"
#: Every state-changing address of the application, with a form that would change something.
CHANGES = [("/edit/delete", {"kind": "Node", "key": "worker-a1"}),
           ("/edit/node/worker-a1", {"cordon": "1"}),
           ("/edit/object", {"kind": "Pod", "key": "", "yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"
                                                                  "spec: {containers: [{name: c, image: i}]}\n"}),
           ("/edit/config", {"yaml": (ROOT / "configs/bin-packing.yaml").read_text()}),
           ("/undo", {}), ("/redo", {})]


class Ui:
    """The running server: its port, token and process."""

    def __init__(self, process: subprocess.Popen, url: str):
        self.process, self.url = process, url
        self.port = int(urllib.parse.urlsplit(url).port or 0)
        self.origin = url.rstrip("/")
        found = re.search(r'name="token" value="([^"]+)"', self.request("GET", "/whatif")[2])
        assert found
        self.token = found.group(1)

    def request(self, method: str, path: str, body: dict | bytes | None = None,
                headers: dict | None = None) -> tuple[int, dict, str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=RUN_TIMEOUT)
        try:
            data = urllib.parse.urlencode(body).encode() if isinstance(body, dict) else body
            sent = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
            if data is not None:
                sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read().decode(errors="replace")
        finally:
            connection.close()

    def change(self, path: str, fields: dict, **headers: str) -> tuple[int, dict, str]:
        """A change as the UI's own page sends it (unless ``headers`` say otherwise)."""
        return self.request("POST", path, {"token": self.token, **fields}, {"Origin": self.origin, **headers})

    def edits(self) -> int:
        return json.loads(self.request("GET", "/api/status")[2])["edits"]


@pytest.fixture(scope="module")
def ui():
    process = subprocess.Popen(
        [sys.executable, "-m", "kubesched.cli", "ui", "-f", str(ROOT / "examples/cluster"), "--no-open", "--port", "0",
         "--compare", str(ROOT / "configs/bin-packing.yaml")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = process.stdout.readline()
        assert line.startswith("kubesched ui: http://127.0.0.1:"), line + process.stderr.read()
        yield Ui(process, line.split()[2])
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=RUN_TIMEOUT)
        assert "Traceback" not in errors, errors


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1", "127.0.0.1:1",
                                  "localhost.evil.example:{port}", ""])
def test_a_foreign_host_is_answered_400_on_every_view(ui, host):
    host = host.format(port=ui.port)
    for path in ("/", "/api/status", "/export/bundle.zip", "/static/ui.js"):
        status, _, body = ui.request("GET", path, headers={"Host": host})
        assert status == 400 and body.count("\n") == 1 and "Host header" in body, (path, status, body)
    for own in (f"127.0.0.1:{ui.port}", f"localhost:{ui.port}", f"[::1]:{ui.port}", f"LOCALHOST:{ui.port}"):
        assert ui.request("GET", "/api/status", headers={"Host": own})[0] == 200


@pytest.mark.parametrize("path, fields", CHANGES, ids=[path for path, _ in CHANGES])
def test_a_cross_site_change_is_refused_and_changes_nothing(ui, path, fields):
    before = ui.edits()
    attempts = [
        {"Origin": EVIL},                                     # a form on another site, even with the token
        {"Origin": "null"},                                   # a sandboxed frame
        {"Origin": "", "Referer": EVIL + "/page"},            # a browser that sends only the Referer
        {"Origin": "", "Referer": ""},                        # neither
        {"Origin": f"http://127.0.0.1:{ui.port}.evil.example"},
    ]
    for headers in attempts:
        sent = {k: v for k, v in headers.items() if v}
        status, _, body = ui.request("POST", path, {"token": ui.token, **fields}, sent)
        assert status == 403 and "own pages" in body, (headers, status, body)
    for token in ("", "x" * 43, ui.token[:-1]):  # the UI's own origin without the right token
        status, _, body = ui.request("POST", path, {"token": token, **fields}, {"Origin": ui.origin})
        assert status == 403 and "token" in body, (token, status, body)
    assert ui.edits() == before


def test_a_change_from_the_ui_returns_only_to_its_own_pages(ui):
    for back in (EVIL + "/x", "//evil.example/x", "/\\evil.example", "javascript:alert(1)", "/\r\nSet-Cookie: a=b"):
        status, headers, _ = ui.change("/undo", {"back": back}, Referer=EVIL + "/x")
        assert status == 303 and headers["location"] == "/whatif", (back, headers)
    status, headers, _ = ui.change("/undo", {"back": "/pod/ml/train-llm?x=1"})
    assert status == 303 and headers["location"] == "/pod/ml/train-llm?x=1"
    status, headers, _ = ui.request("POST", "/undo", {}, {"Origin": ui.origin, "X-Kubesched-Token": ui.token})
    assert status == 303 and headers["location"] == "/whatif"  # htmx's header works as the form field does


def test_a_request_body_over_the_bound_is_refused(ui):
    status, _, body = ui.request("POST", "/edit/config", b"yaml=" + b"a" * (5 << 20),
                                 {"Origin": ui.origin, "X-Kubesched-Token": ui.token})
    assert status == 413 and "over 4194304 bytes" in body


@pytest.mark.parametrize("other", ["/dev/zero", "%00", "/dev/zero:default-scheduler", "/etc/passwd",
                                   "/nonexistent.yaml", str(ROOT / "configs"), str(ROOT / "configs/../configs/"
                                                                                    "bin-packing.yaml"),
                                   "configs/bin-packing.yaml"])
def test_the_config_diff_opens_only_the_configurations_it_was_given(ui, other):
    query = "other=" + (other if other.startswith("%") else urllib.parse.quote(other, safe=""))
    status, _, page = ui.request("GET", f"/config?{query}&run=1")
    assert status == 200
    error = text(page.split('class="error">')[1].split("</p>")[0])
    shown = urllib.parse.unquote(other)
    assert error == f"B: {shown!r} is not a configuration this UI was given (kubesched ui --config FILE or " \
                    f"--compare FILE; FILE:PROFILE for one profile)"  # the same words whether the file exists or not
    offered = str(ROOT / "configs/bin-packing.yaml")
    page = ui.request("GET", "/config?other=" + urllib.parse.quote(offered + ":bin-packing-scheduler"))[2]
    assert 'class="error"' not in page and "MostAllocated" in page


def _rss_kib(ui) -> int:
    return int(re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{ui.process.pid}/status").read_text()).group(1))


def test_edits_past_the_limit_keep_a_bounded_history_and_the_server_alive_under_300_mb(ui):
    """Three times MAX_EDITS edits: once the history is full, the next 150 edits leave the server's memory
    where it was (a leak of 100 KiB an edit would show), and the undo history stays at MAX_EDITS."""
    from kubesched.ui.scenario import MAX_EDITS

    base = ui.edits()

    def edit(i: int) -> None:
        status, headers, _ = ui.change("/edit/node/worker-a1", {"allocatable.cpu": f"{4 + i % 7}", "back": "/"})
        assert status == 303 and headers["location"] == "/", (i, status)

    for i in range(MAX_EDITS + 50):
        edit(i)
    full = _rss_kib(ui)
    for i in range(MAX_EDITS + 50, 3 * MAX_EDITS):
        edit(i)
    grown_kib = _rss_kib(ui) - full
    assert grown_kib < (3 * MAX_EDITS - (MAX_EDITS + 50)) * 100, grown_kib
    assert ui.edits() == MAX_EDITS and base <= MAX_EDITS
    status = ui.request("GET", "/api/status")[2]
    undone = sum(ui.change("/undo", {})[0] == 303 for _ in range(MAX_EDITS + 5))
    assert undone == MAX_EDITS + 5 and ui.edits() == 0, status  # undo stops at the floor (older edits folded in)
    assert "worker-a1" in ui.request("GET", "/node/worker-a1")[2]
    rss_kib = _rss_kib(ui)
    assert ui.process.poll() is None and rss_kib < 300 * 1024, rss_kib


def _bundle(tmp_path: Path, marker: dict) -> Path:
    bundle = tmp_path / "bundle"
    (bundle / "manifests").mkdir(parents=True)
    (bundle / "manifests/objects.yaml").write_text((ROOT / "examples/cluster/nodes.yaml").read_text())
    (bundle / "kubesched-ui.yaml").write_text(yaml.safe_dump(marker))
    return bundle


@pytest.mark.parametrize("marker, field, entry", [
    ({"manifests": "/etc"}, "manifests", "/etc"),
    ({"manifests": "../outside"}, "manifests", "../outside"),
    ({"manifests": "manifests/../../outside"}, "manifests", "manifests/../../outside"),
    ({"manifests": "manifests", "config": "/etc/passwd"}, "config", "/etc/passwd"),
    ({"manifests": "manifests", "config": "../../../../etc/passwd"}, "config", "../../../../etc/passwd"),
    ({"manifests": "manifests", "changes": [{"offset": 1, "file": "/etc/hosts"}]}, "changes[0].file", "/etc/hosts"),
    ({"manifests": "manifests", "changes": [{"offset": 1, "file": "at/../../x.yaml"}]}, "changes[0].file",
     "at/../../x.yaml"),
    ({"manifests": "escape"}, "manifests", "escape"),  # a link leading out
], ids=["absolute-manifests", "dotdot-manifests", "inner-dotdot", "absolute-config", "dotdot-config",
        "absolute-change", "dotdot-change", "symlink"])
def test_a_bundle_naming_a_file_outside_itself_is_refused_in_one_line(tmp_path, marker, field, entry):
    (tmp_path / "outside").mkdir()
    bundle = _bundle(tmp_path, marker)
    (bundle / "escape").symlink_to(tmp_path / "outside")
    done = CliRunner().invoke(app, ["ui", "-f", str(bundle), "--no-open", "--port", "0"])
    assert done.exit_code == 2 and done.output.count("\n") == 1 and "Traceback" not in done.output, done.output
    assert done.output.strip() == (f"{bundle / 'kubesched-ui.yaml'}: {field}: {entry!r} is outside the bundle "
                                   f"(absolute paths, '..' and links leading out are refused)")


def test_a_bundle_index_that_is_not_a_regular_file_is_refused_at_once(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    os.mkfifo(bundle / "kubesched-ui.yaml")
    done = CliRunner().invoke(app, ["ui", "-f", str(bundle), "--no-open", "--port", "0"])
    assert done.exit_code == 2 and done.output.count("\n") == 1


def test_every_form_that_changes_something_carries_the_token_and_htmx_sends_it():
    templates = ROOT / "src/ui/templates"
    for page in sorted(templates.glob("*.html")):
        for form in re.findall(r"<form[^>]*>.*?</form>", page.read_text(), re.S):
            if 'method="post"' in form:
                assert 'name="token" value="{{ token }}"' in form, (page.name, form[:80])
    assert """hx-headers='{"X-Kubesched-Token": "{{ token }}"}'""" in (templates / "base.html").read_text()
