"""A small scheduler extender: an HTTP server speaking k8s.io/kube-scheduler/extender/v1.

    python examples/extender/extender.py --port 8888
    kubesched simulate examples/extender/cluster.yaml --config examples/extender/scheduler-config.yaml

Its policy reads node labels (it is not nodeCacheCapable, so each call carries the Node objects):

- filter: a node labelled ``extender.example.com/draining`` is rejected with the label's value as the
  reason (``FailedNodes``), one labelled ``extender.example.com/no-gpu-sharing`` is rejected for pods
  requesting ``example.com/gpu-share`` as unresolvable (``FailedAndUnresolvableNodes``: preemption
  cannot help there);
- prioritize: the value of ``extender.example.com/preference`` (0-10) is the node's score.

Only the Python standard library: copy it and put your own policy in :func:`filter_nodes` and
:func:`prioritize_nodes`.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DRAINING = "extender.example.com/draining"
NO_SHARING = "extender.example.com/no-gpu-sharing"
PREFERENCE = "extender.example.com/preference"
GPU_SHARE = "example.com/gpu-share"
#: The largest request body read (bytes).
MAX_BODY = 64 << 20


def _wants_gpu_share(pod: dict[str, Any]) -> bool:
    containers = pod.get("spec", {}).get("containers", [])
    return any(GPU_SHARE in (c.get("resources") or {}).get("requests", {}) for c in containers)


def filter_nodes(args: dict[str, Any]) -> dict[str, Any]:
    """ExtenderArgs -> ExtenderFilterResult (Go field names)."""
    kept, failed, unresolvable = [], {}, {}
    for node in args["Nodes"]["items"]:
        name, labels = node["metadata"]["name"], node["metadata"].get("labels") or {}
        if DRAINING in labels:
            failed[name] = f"node is draining: {labels[DRAINING]}"
        elif NO_SHARING in labels and _wants_gpu_share(args["Pod"]):
            unresolvable[name] = "node does not share GPUs"
        else:
            kept.append(node)
    return {"Nodes": {"metadata": {}, "items": kept}, "NodeNames": None, "FailedNodes": failed,
            "FailedAndUnresolvableNodes": unresolvable, "Error": ""}


def prioritize_nodes(args: dict[str, Any]) -> list[dict[str, Any]]:
    """ExtenderArgs -> HostPriorityList: scores 0-10."""
    out = []
    for node in args["Nodes"]["items"]:
        labels = node["metadata"].get("labels") or {}
        try:
            score = min(10, max(0, int(labels.get(PREFERENCE, "0"))))
        except ValueError:
            score = 0
        out.append({"Host": node["metadata"]["name"], "Score": score})
    return out


VERBS = {"filter": filter_nodes, "prioritize": prioritize_nodes}


class Handler(BaseHTTPRequestHandler):
    """POST /<prefix>/<verb> with a JSON body; 404 for an unknown verb, 400 for a bad body."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        verb = VERBS.get(self.path.rstrip("/").rsplit("/", 1)[-1])
        length = int(self.headers.get("Content-Length") or 0)
        if verb is None or length > MAX_BODY:
            self.send_error(404 if verb is None else 413)
            return
        try:
            answer = verb(json.loads(self.rfile.read(length)))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            self.send_error(400, f"bad ExtenderArgs: {err}")
            return
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(host: str = "127.0.0.1", port: int = 8888) -> ThreadingHTTPServer:
    """The extender's server bound to ``host:port`` (port 0: any free one); call ``serve_forever()``."""
    return ThreadingHTTPServer((host, port), Handler)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888)
    options = parser.parse_args()
    server = serve(options.host, options.port)
    print(f"extender listening on http://{options.host}:{server.server_address[1]}/scheduler")
    server.serve_forever()
