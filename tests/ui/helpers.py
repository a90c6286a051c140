"""A running ``kubesched ui`` server for the tests, and reading its pages over HTTP (the standard library)."""

from __future__ import annotations

import contextlib
import re
import urllib.error
import urllib.parse
import urllib.request
from html import unescape
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
#: Seconds a test waits for a run of an example (they take well under a second).
RUN_TIMEOUT = 60


@contextlib.contextmanager
def serving(paths, config=None, changes=(), watch: bool = False, compare=()) -> Iterator:
    """(runs, server) over ``paths``, the first run over."""
    from kubesched.ui.runs import Runs
    from kubesched.ui.server import UiServer

    runs = Runs([Path(p) for p in paths], config, changes, compare=[Path(p) for p in compare])
    runs.start()
    server = UiServer(runs, watch=watch)
    server.start()
    try:
        assert runs.wait(0, RUN_TIMEOUT), "the first run did not finish"
        yield runs, server
    finally:
        server.stop()
        runs.close()


def get(server, path: str, status: int = 200) -> str:
    """The page at ``path``, which must answer with ``status``."""
    try:
        with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=RUN_TIMEOUT) as response:
            code, body = response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        code, body = err.code, err.read().decode()
    assert code == status, (path, code, body[:500])
    return body


def token(server) -> str:
    """The token a page of ``server`` carries in its forms (as a browser finds it)."""
    found = re.search(r'name="token" value="([^"]+)"', get(server, "/whatif"))
    assert found, "the page has no token"
    return found.group(1)


def post(server, path: str, fields: dict[str, str]) -> str:
    """POST a form like the browser does from one of the UI's pages (its Origin, the form's token); returns
    the page it leads to (after the redirect)."""
    data = urllib.parse.urlencode({"token": token(server), **fields}).encode()
    request = urllib.request.Request(server.url.rstrip("/") + path, data=data, method="POST",
                                     headers={"Origin": server.url.rstrip("/")})
    with urllib.request.urlopen(request, timeout=RUN_TIMEOUT) as response:
        return response.read().decode()


def text(html: str) -> str:
    """The page's text, tags dropped and white space collapsed."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()


def write_gangs(directory: Path) -> Path:
    """Two gangs over three racks of two 4-CPU nodes (zone-a: racks 1 and 2, zone-b: rack 3), each member
    asking 3 CPUs, both constrained to one rack: ml/small (minCount 2) fits in a rack, ml/big (minCount 3)
    never does and waits.  Returns the file."""
    import yaml

    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"r{rack}-n{i}", "labels": {
        "kubernetes.io/hostname": f"r{rack}-n{i}", "topology.kubernetes.io/zone": "zone-a" if rack < 3 else "zone-b",
        "topology.kubernetes.io/rack": f"rack-{rack}"}},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}} for rack in (1, 2, 3) for i in (1, 2)]
    documents: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}, *nodes]
    for name, min_count in (("small", 2), ("big", 3)):
        documents.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                          "metadata": {"name": name, "namespace": "ml"},
                          "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}},
                                   "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}})
        documents += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-{i}", "namespace": "ml"},
                       "spec": {"schedulingGroup": {"podGroupName": name}, "containers": [
                           {"name": "c", "image": "img", "resources": {"requests": {"cpu": "3"}}}]}}
                      for i in range(min_count)]
    file = directory / "gangs.yaml"
    file.write_text(yaml.safe_dump_all(documents))
    return file
