"""RBAC for the fake API server: kube-apiserver's RBAC authorizer over the roles of a manifest file.

:class:`Rbac` reads ServiceAccounts, ClusterRoles, ClusterRoleBindings, Roles
and RoleBindings (deploy/rbac.yaml) and answers whether a service account
may make a request, as upstream's ``rbac.authorizer``: a ClusterRole bound
by a ClusterRoleBinding applies in every namespace, a Role (or a ClusterRole
bound by a RoleBinding) in its binding's namespace; a rule matches on API
group, resource (``pods/status`` for a subresource), verb and, when it names
any, ``resourceNames`` (never for list, watch or create).  ``*`` matches
anything.  Discovery (``/api``, ``/apis``...) is open to every
authenticated user (upstream's ``system:discovery``).  Refusals carry
upstream's message.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import yaml


class Attributes(NamedTuple):
    """One request as the authorizer sees it (upstream ``authorizer.Attributes``)."""

    verb: str
    group: str
    resource: str  # "pods", or "pods/status" with its subresource
    namespace: str
    name: str


class Rbac:
    """The roles of ``path``; :meth:`user` names the identity of a service account."""

    def __init__(self, path: str | Path):
        docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
        roles = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d.get("rules") or []
                 for d in docs if d["kind"] in ("ClusterRole", "Role")}
        #: user -> [(namespace the rules apply in, "" everywhere; rules)]
        self.grants: dict[str, list[tuple[str, list[dict]]]] = {}
        for doc in docs:
            if doc["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
                continue
            ref = doc["roleRef"]
            scope = doc["metadata"].get("namespace", "") if doc["kind"] == "RoleBinding" else ""
            rules = roles.get((ref["kind"], scope if ref["kind"] == "Role" else "", ref["name"]), [])
            for subject in doc.get("subjects") or ():
                if subject["kind"] == "ServiceAccount":
                    user = self.user(subject["namespace"], subject["name"])
                    self.grants.setdefault(user, []).append((scope, rules))
        self.service_accounts = [(d["metadata"]["namespace"], d["metadata"]["name"])
                                 for d in docs if d["kind"] == "ServiceAccount"]

    @staticmethod
    def user(namespace: str, name: str) -> str:
        return f"system:serviceaccount:{namespace}:{name}"

    def allows(self, user: str, request: Attributes) -> bool:
        for scope, rules in self.grants.get(user, ()):
            if scope and scope != request.namespace:
                continue
            if any(_matches(rule, request) for rule in rules):
                return True
        return False

    @staticmethod
    def refusal(user: str, request: Attributes) -> str:
        """Upstream's 403 message (``forbiddenMessage`` wrapped by ``NewForbidden``)."""
        plural = request.resource.split("/")[0]
        qualified = f"{plural}.{request.group}" if request.group else plural
        what = f'{qualified} "{request.name}"' if request.name else qualified
        scope = (f'in the namespace "{request.namespace}"' if request.namespace else "at the cluster scope")
        return (f'{what} is forbidden: User "{user}" cannot {request.verb} resource "{request.resource}" '
                f'in API group "{request.group}" {scope}')


def _matches(rule: dict, request: Attributes) -> bool:
    def has(key: str, value: str) -> bool:
        values = rule.get(key) or []
        return "*" in values or value in values

    if not (has("apiGroups", request.group) and has("resources", request.resource) and has("verbs", request.verb)):
        return False
    names = rule.get("resourceNames") or []
    return not names or (request.verb not in ("list", "watch", "create") and request.name in names)
