"""Scheduler extenders: HTTP services a KubeSchedulerConfiguration's ``extenders`` names (upstream
``pkg/scheduler/extender.go`` and the extender steps of ``schedule_one.go`` and preemption).

An extender answers POSTs of JSON at ``urlPrefix/verb`` in the wire format of
``k8s.io/kube-scheduler/extender/v1``, whose Go structs carry no JSON tags, so
the keys are the Go field names (``Pod``, ``Nodes``, ``NodeNames``,
``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``, ``Host``,
``Score``, ``NodeNameToVictims``, ``NodeNameToMetaVictims``, ``PodName``, ...);
objects (Pod, NodeList) are their Kubernetes JSON.  :class:`HTTPExtender` is one
extender; the functions below are the steps of a scheduling attempt that call
them, in upstream's order:

- :func:`find_nodes_that_pass_extenders`: after the profile's Filter plugins,
  each interested extender in turn narrows the feasible nodes; its failed nodes
  get an Unschedulable (or UnschedulableAndUnresolvable) status with its message;
- :func:`extender_scores`: each interested prioritizing extender's scores (0 -
  :data:`MAX_EXTENDER_PRIORITY`) times its weight times
  ``MaxNodeScore / MaxExtenderPriority`` are added to the plugins' total;
  a prioritize failure only loses that extender's scores, as upstream;
- :func:`extenders_binding`: the first interested binder extender binds the pod
  instead of the profile's Bind plugins;
- :func:`process_preemption`: the preempt verb narrows preemption's candidates.

An extender that fails (connection refused, timeout, a status other than
200, an ``Error`` in its answer) fails the attempt with an Error, unless it is
``ignorable``: then it is skipped.  HTTP goes through urllib3's PoolManager
(thread-safe keep-alive pools with per-request timeouts and TLS), as
client-go's transport does for kube-scheduler.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..api.convert import unstructure
from ..api.core_v1 import Node, Pod
from .config import ConfigError, Extender, parse_duration
from .status import Code, Status

if TYPE_CHECKING:
    from .attempt_record import AttemptRecord

log = logging.getLogger(__name__)

#: Upstream ``extenderv1.MaxExtenderPriority``: an extender's scores are 0 - 10.
MAX_EXTENDER_PRIORITY = 10
#: Upstream ``framework.MaxNodeScore``.
MAX_NODE_SCORE = 100
#: Upstream ``framework.ExtenderName``: the "plugin" a pod rejected by an extender is unschedulable for.
EXTENDER_NAME = "Extender"
#: Upstream ``DefaultExtenderTimeout`` (seconds), when ``httpTimeout`` is 0.
DEFAULT_EXTENDER_TIMEOUT = 5.0
#: The largest answer read from an extender (bytes): a filter answer naming every node of a large cluster
#: fits many times over.
MAX_ANSWER_BYTES = 64 << 20


class ExtenderError(Exception):
    """An extender call failed: the message is upstream's (``failed filter with extender at URL ..., code
    500``), the extender's own ``Error``, or the connection's failure."""


class HTTPExtender:
    """One configured extender (upstream ``HTTPExtender``).  ``config``: its
    :class:`~kubesched.core.framework.config.Extender`.  Raises
    :class:`ConfigError` for TLS material that cannot be loaded."""

    def __init__(self, config: Extender):
        self.config = config
        self.name = config.url_prefix
        self.weight = config.weight
        self.ignorable = config.ignorable
        self.managed_resources = frozenset(r.name for r in config.managed_resources)
        timeout = parse_duration(config.http_timeout, "httpTimeout") or DEFAULT_EXTENDER_TIMEOUT
        import urllib3  # here, not with the module: a profile without extenders never needs it (~0.04 s)

        self.timeout = urllib3.Timeout(total=timeout)
        self._pool = urllib3.PoolManager(retries=False, **_tls_options(config))

    def __repr__(self) -> str:
        return f"HTTPExtender({self.name})"

    @property
    def is_binder(self) -> bool:
        """It has a ``bindVerb``."""
        return bool(self.config.bind_verb)

    @property
    def supports_preemption(self) -> bool:
        """It has a ``preemptVerb``."""
        return bool(self.config.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        """Upstream ``IsInterested``: an extender without managed resources wants every pod; otherwise only
        pods whose (init) containers request or limit one of them."""
        if not self.managed_resources:
            return True
        for container in (*pod.spec.containers, *pod.spec.init_containers):
            resources = container.resources
            if not self.managed_resources.isdisjoint(resources.requests) or \
                    not self.managed_resources.isdisjoint(resources.limits):
                return True
        return False

    def _args(self, pod: Pod, nodes: Sequence[Node]) -> dict[str, Any]:
        """``ExtenderArgs``: the pod and the nodes, as names for a ``nodeCacheCapable`` extender."""
        if self.config.node_cache_capable:
            return {"Pod": unstructure(pod), "Nodes": None, "NodeNames": [n.metadata.name for n in nodes]}
        return {"Pod": unstructure(pod), "Nodes": {"metadata": {}, "items": [unstructure(n) for n in nodes]},
                "NodeNames": None}

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """Upstream ``Filter``: the names of the nodes the extender keeps (a subset of ``nodes``, in its
        order), its failed nodes and its failed-and-unresolvable nodes (name -> message).  Without a filter
        verb every node is kept.  Raises :class:`ExtenderError`."""
        if not self.config.filter_verb:
            return [n.metadata.name for n in nodes], {}, {}
        result = self._send(self.config.filter_verb, self._args(pod, nodes))
        if result.get("Error"):
            raise ExtenderError(str(result["Error"]))
        known = {n.metadata.name for n in nodes}
        names: list[str] = []
        if self.config.node_cache_capable and result.get("NodeNames") is not None:
            names = _strings(result["NodeNames"], "NodeNames", self.name)
        elif result.get("Nodes") is not None:
            items = result["Nodes"].get("items") if isinstance(result["Nodes"], dict) else None
            if not isinstance(items, list):
                raise ExtenderError(f"extender {self.name!r} answered Nodes without a list of items")
            names = [(item.get("metadata") or {}).get("name", "") if isinstance(item, dict) else "" for item in items]
        for name in names:
            if name not in known:
                raise ExtenderError(f"extender {self.name!r} claims a filtered node {name!r} which is not found "
                                    "in the input node list")
        return names, _failed(result, "FailedNodes", self.name), _failed(result, "FailedAndUnresolvableNodes",
                                                                          self.name)

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> list[tuple[str, int]]:
        """Upstream ``Prioritize``: (node name, score 0-10) pairs; every node 0 without a prioritize verb.
        Raises :class:`ExtenderError`."""
        if not self.config.prioritize_verb:
            return [(n.metadata.name, 0) for n in nodes]
        result = self._send(self.config.prioritize_verb, self._args(pod, nodes))
        if not isinstance(result, list):
            raise ExtenderError(f"extender {self.name!r} answered {self.config.prioritize_verb} without a "
                                "HostPriorityList")
        out = []
        for entry in result:
            score = entry.get("Score", 0) if isinstance(entry, dict) else None
            if not isinstance(score, int) or isinstance(score, bool):
                raise ExtenderError(f"extender {self.name!r} answered a HostPriority that is not "
                                    f"{{Host, Score}}: {entry!r:.100}")
            out.append((str(entry.get("Host", "")), score))
        return out

    def bind(self, pod: Pod, node_name: str) -> None:
        """Upstream ``Bind``: ``ExtenderBindingArgs`` to the bind verb.  Raises :class:`ExtenderError`
        (including the extender's own ``Error``)."""
        result = self._send(self.config.bind_verb, {
            "PodName": pod.metadata.name, "PodNamespace": pod.metadata.namespace, "PodUID": pod.metadata.uid,
            "Node": node_name})
        if isinstance(result, dict) and result.get("Error"):
            raise ExtenderError(str(result["Error"]))

    def process_preemption(self, pod: Pod, victims: Mapping[str, tuple[Sequence[Pod], int]],
                           pods_on: Callable[[str], Sequence[Pod] | None]) -> dict[str, tuple[list[Pod], int]]:
        """Upstream ``ProcessPreemption``: ``victims`` is node -> (victim pods, PDB violations); the answer's
        ``NodeNameToMetaVictims`` (victims by UID) turned back into pods with ``pods_on(node)`` (the pods
        on a node, None for an unknown node).  Raises :class:`ExtenderError`."""
        if self.config.node_cache_capable:
            args: dict[str, Any] = {"Pod": unstructure(pod), "NodeNameToVictims": None, "NodeNameToMetaVictims": {
                node: {"Pods": [{"UID": p.metadata.uid} for p in pods], "NumPDBViolations": pdb}
                for node, (pods, pdb) in victims.items()}}
        else:
            args = {"Pod": unstructure(pod), "NodeNameToMetaVictims": None, "NodeNameToVictims": {
                node: {"Pods": [unstructure(p) for p in pods], "NumPDBViolations": pdb}
                for node, (pods, pdb) in victims.items()}}
        result = self._send(self.config.preempt_verb, args)
        meta = result.get("NodeNameToMetaVictims") if isinstance(result, dict) else None
        out: dict[str, tuple[list[Pod], int]] = {}
        for node, entry in (meta or {}).items():
            on_node = pods_on(node)
            if on_node is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node}"')
            by_uid = {p.metadata.uid: p for p in on_node}
            chosen = []
            for meta_pod in (entry or {}).get("Pods") or []:
                uid = (meta_pod or {}).get("UID", "")
                if uid not in by_uid:
                    raise ExtenderError(f"extender: {self.name} claims to preempt pod (UID: {uid}) on node: {node}, "
                                        "but the pod is not found on that node")
                chosen.append(by_uid[uid])
            out[node] = (chosen, int((entry or {}).get("NumPDBViolations") or 0))
        return out

    def _send(self, verb: str, args: Any) -> Any:
        """POST ``args`` as JSON to ``urlPrefix/verb`` and decode the answer (upstream ``send``)."""
        import urllib3

        url = self.name.rstrip("/") + "/" + verb
        try:
            response = self._pool.request("POST", url, body=json.dumps(args, separators=(",", ":")).encode(),
                                          headers={"Content-Type": "application/json"}, timeout=self.timeout,
                                          preload_content=False)
        except urllib3.exceptions.HTTPError as err:
            raise ExtenderError(f'Post "{url}": {_reason(err)}') from None
        try:
            if response.status != 200:
                raise ExtenderError(f"failed {verb} with extender at URL {url}, code {response.status}")
            body = response.read(MAX_ANSWER_BYTES + 1)
        except urllib3.exceptions.HTTPError as err:
            raise ExtenderError(f'Post "{url}": {_reason(err)}') from None
        finally:
            response.release_conn()
        if len(body) > MAX_ANSWER_BYTES:
            raise ExtenderError(f"extender at URL {url} answered {verb} with more than {MAX_ANSWER_BYTES} bytes")
        try:
            return json.loads(body)
        except ValueError as err:
            raise ExtenderError(f"extender at URL {url} answered {verb} with invalid JSON: {err}") from None


def _reason(err: Exception) -> str:
    """The innermost reason of a urllib3 failure (connection refused, timed out)."""
    reason = getattr(err, "reason", None)
    return str(reason or err)


def _strings(value: Any, key: str, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ExtenderError(f"extender {name!r} answered {key} that is not a list of node names")
    return value


def _failed(result: dict[str, Any], key: str, name: str) -> dict[str, str]:
    value = result.get(key) or {}
    if not isinstance(value, dict):
        raise ExtenderError(f"extender {name!r} answered {key} that is not a map of node name to message")
    return {str(k): str(v) for k, v in value.items()}


def _tls_options(config: Extender) -> dict[str, Any]:
    """urllib3's TLS options from ``enableHTTPS`` and ``tlsConfig`` as client-go's ``TLSConfigFor`` reads them:
    without a CA an HTTPS extender is not verified (upstream sets Insecure), ``serverName`` is the name
    verified, client certificates from files or base64 data."""
    tls = config.tls_config
    if tls is None and not config.enable_https:
        return {}
    has_ca = tls is not None and bool(tls.ca_file or tls.ca_data)
    insecure = (tls is not None and tls.insecure) or (config.enable_https and not has_ca)
    context = ssl.create_default_context()
    try:
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif tls is not None and tls.ca_file:
            context.load_verify_locations(cafile=tls.ca_file)
        elif tls is not None and tls.ca_data:
            context.load_verify_locations(cadata=base64.b64decode(tls.ca_data).decode())
        if tls is not None and (tls.cert_file or tls.cert_data):
            _load_client_cert(context, tls.cert_file, tls.key_file, tls.cert_data, tls.key_data)
    except (OSError, ValueError, ssl.SSLError) as err:
        raise ConfigError(f"extender {config.url_prefix}: tlsConfig: {err}") from None
    options: dict[str, Any] = {"ssl_context": context}
    if tls is not None and tls.server_name and not insecure:
        options["server_hostname"] = tls.server_name
        options["assert_hostname"] = tls.server_name
    if insecure:
        options["cert_reqs"] = ssl.CERT_NONE
        options["assert_hostname"] = False
    return options


def _load_client_cert(context: ssl.SSLContext, cert_file: str, key_file: str, cert_data: str, key_data: str) -> None:
    """Load a client certificate from files or base64 PEM data (ssl reads only files: the data go through a
    private temporary file, removed at once)."""
    if cert_file:
        context.load_cert_chain(cert_file, key_file or None)
        return
    pem = base64.b64decode(cert_data) + b"\n" + base64.b64decode(key_data or "")
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        context.load_cert_chain(path)
    finally:
        os.unlink(path)


def build_extenders(configs: Sequence[Extender]) -> tuple[HTTPExtender, ...]:
    """The configured extenders in upstream's calling order: the non-ignorable ones first, the ignorable
    ones at the tail, each group in the file's order.  Raises :class:`ConfigError` (TLS material)."""
    built = [HTTPExtender(config) for config in configs]
    return tuple([e for e in built if not e.ignorable] + [e for e in built if e.ignorable])


def find_nodes_that_pass_extenders(extenders: Sequence[HTTPExtender], pod: Pod, nodes: Sequence[Node],
                                   statuses: dict[str, Status],
                                   record: AttemptRecord | None = None) -> list[str]:
    """Upstream ``findNodesThatPassExtenders``: each interested extender in turn filters what the one before
    kept of ``nodes`` (those the profile's Filter plugins passed).  Returns the names kept; adds to
    ``statuses`` (node name -> Status, attributed to :data:`EXTENDER_NAME`) each failed node with the
    extender's message, Unschedulable or UnschedulableAndUnresolvable (which takes precedence; reasons
    already there are kept).  A failing ignorable extender is skipped; a failing other one raises
    :class:`ExtenderError`.  ``record``: the attempt's, which gets each extender's verdicts."""
    by_name = {n.metadata.name: n for n in nodes}
    kept = list(nodes)
    for extender in extenders:
        if not kept:
            break
        if not extender.is_interested(pod) or not extender.config.filter_verb:
            continue
        try:
            names, failed, unresolvable = extender.filter(pod, kept)
        except ExtenderError as err:
            if extender.ignorable:
                log.info("Skipping extender %s as it returned error and has ignorable flag set: %s",
                         extender.name, err)
                if record is not None:
                    record.extender_answer(extender.name, "filter", error=str(err), ignored=True)
                continue
            if record is not None:
                record.extender_answer(extender.name, "filter", error=str(err))
            raise
        rejected: list[tuple[str, Status]] = []
        for name, message in unresolvable.items():
            earlier = statuses.get(name)
            status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (*(earlier.reasons if earlier else ()), message),
                            EXTENDER_NAME)
            statuses[name] = status
            rejected.append((name, Status(status.code, (message,), EXTENDER_NAME)))
        for name, message in failed.items():
            if name in unresolvable:
                continue
            earlier = statuses.get(name)
            statuses[name] = Status(earlier.code if earlier else Code.UNSCHEDULABLE,
                                    (*(earlier.reasons if earlier else ()), message), EXTENDER_NAME)
            rejected.append((name, Status(Code.UNSCHEDULABLE, (message,), EXTENDER_NAME)))
        if record is not None:
            record.extender_answer(extender.name, "filter", kept=len(names), rejected=rejected)
        kept = [by_name[name] for name in names]
    return [n.metadata.name for n in kept]


def extender_scores(extenders: Sequence[HTTPExtender], pod: Pod, nodes: Sequence[Node],
                    record: AttemptRecord | None = None) -> np.ndarray | None:
    """Upstream's extender step of ``prioritizeNodes``: the sum over interested prioritizing extenders of
    score x weight x (MaxNodeScore / MaxExtenderPriority) per node of ``nodes`` (an int64 array in their
    order), None when no extender scored.  A failing extender gives no scores (logged), as upstream, for
    ignorable and other extenders alike."""
    total: np.ndarray | None = None
    index = {n.metadata.name: i for i, n in enumerate(nodes)}
    for extender in extenders:
        if not extender.config.prioritize_verb or not extender.is_interested(pod):
            continue
        try:
            scores = extender.prioritize(pod, nodes)
        except ExtenderError as err:
            log.info("Failed to run extender's priority function %s. No score given by this extender: %s",
                     extender.name, err)
            if record is not None:
                record.extender_answer(extender.name, "prioritize", error=str(err), ignored=True)
            continue
        if total is None:
            total = np.zeros(len(nodes), dtype=np.int64)
        factor = extender.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        given = {}
        for host, score in scores:
            at = index.get(host)
            if at is not None:
                total[at] += score * factor
                given[host] = score
        if record is not None:
            record.extender_answer(extender.name, "prioritize", weight=extender.weight, scores=given)
    return total


def extenders_binding(extenders: Sequence[HTTPExtender], pod: Pod, node_name: str) -> tuple[bool, Status | None]:
    """Upstream ``extendersBinding``: the first interested binder extender binds ``pod`` to ``node_name``.
    Returns (whether an extender took the binding, its failure as an Error status or None); a failing
    ignorable binder is skipped, leaving the binding to the next one or the Bind plugins."""
    for extender in extenders:
        if not extender.is_binder or not extender.is_interested(pod):
            continue
        try:
            extender.bind(pod, node_name)
        except ExtenderError as err:
            if extender.ignorable:
                log.info("Skipping extender %s in bind as it returned error and has ignorable flag set: %s",
                         extender.name, err)
                continue
            return True, Status.as_error(str(err)).with_plugin(EXTENDER_NAME)
        return True, None
    return False, None


def extenders_preemption(extenders: Sequence[HTTPExtender], pod: Pod,
                         victims: dict[str, tuple[list[Pod], int]],
                         pods_on: Callable[[str], Sequence[Pod] | None]) -> dict[str, tuple[list[Pod], int]]:
    """Upstream ``callExtenders`` of preemption: each interested extender with a preempt verb in turn narrows
    ``victims`` (node -> (victim pods, PDB violations) of each candidate node) with
    :meth:`HTTPExtender.process_preemption`; a node the answer leaves without victims is dropped when the
    extender is ignorable and an error otherwise.  Returns what is left (maybe nothing).  A failing ignorable
    extender is skipped; raises :class:`ExtenderError` for the others."""
    for extender in extenders:
        if not victims:
            break
        if not extender.supports_preemption or not extender.is_interested(pod):
            continue
        try:
            answer = extender.process_preemption(pod, victims, pods_on)
        except ExtenderError as err:
            if extender.ignorable:
                log.info("Skipped extender %s as it returned error and has ignorable flag set: %s", extender.name, err)
                continue
            raise
        for node, (pods, _) in list(answer.items()):
            if not pods:
                if not extender.ignorable:
                    raise ExtenderError(f'expected at least one victim pod on node "{node}"')
                del answer[node]
        victims = answer
    return victims
