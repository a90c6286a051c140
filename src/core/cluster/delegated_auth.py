"""Delegated authentication and authorization for the daemon's secure port,
as kube-scheduler does it: the bearer token of a request is checked by the
API server (a TokenReview), and what the user may do there by a
SubjectAccessReview on the non-resource path (``get /metrics``).  Answers
are cached for :data:`CACHE_SECONDS` (kube-scheduler caches both, 10 s), at
most :data:`CACHE_ENTRIES` of them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from .client import ApiError

CACHE_SECONDS = 10.0
CACHE_ENTRIES = 1024


class DelegatedAuth:
    """``check(authorization header, path, verb)`` -> ``(HTTP status, text)``:
    401 without a valid bearer token, 403 when the user may not, 200 when
    allowed.  ``cluster`` is a :class:`KubernetesCluster` (its ``review``)."""

    def __init__(self, cluster: Any):
        self.cluster = cluster
        self._cache: OrderedDict[tuple[str, str, str], tuple[float, int, str]] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, authorization: str | None, path: str, verb: str = "get") -> tuple[int, str]:
        """Whether the bearer token in ``authorization`` may ``verb`` the non-resource ``path``, as (HTTP
        status, text): 401 Unauthorized, 403 Forbidden or 200 (a TokenReview then a SubjectAccessReview, the
        answer cached); 500 when the API server did not answer (not cached)."""
        token = (authorization or "").removeprefix("Bearer ").strip()
        if not authorization or not authorization.startswith("Bearer ") or not token:
            return 401, "Unauthorized"
        key = (token, path, verb)
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached[0] > now:
                return cached[1], cached[2]
        answer = self._ask(token, path, verb)
        if answer[0] == 500:
            return answer  # the API server did not answer: ask again next time
        with self._lock:
            self._cache[key] = (now + CACHE_SECONDS, *answer)
            self._cache.move_to_end(key)
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return answer

    def _ask(self, token: str, path: str, verb: str) -> tuple[int, str]:
        try:
            authenticated = self.cluster.review("authentication.k8s.io/v1", "tokenreviews", {"token": token})
            if not authenticated.get("authenticated"):
                return 401, "Unauthorized"
            user = authenticated.get("user") or {}
            decision = self.cluster.review("authorization.k8s.io/v1", "subjectaccessreviews", {
                "user": user.get("username", ""), "uid": user.get("uid", ""), "groups": user.get("groups") or [],
                "extra": user.get("extra") or {}, "nonResourceAttributes": {"path": path, "verb": verb}})
        except ApiError as err:
            return 500, f"cannot check the request with the API server: {err.message}"
        if not decision.get("allowed"):
            reason = decision.get("reason") or ""
            return 403, f'Forbidden: user "{user.get("username", "")}" cannot {verb} path "{path}"' + \
                (f": {reason}" if reason else "")
        return 200, "ok"
