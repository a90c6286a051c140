"""Finding an object by the name a person typed: ``NAMESPACE/NAME``, or ``NAME``
alone when one namespace holds it, and a miss answered in one line with the
nearest names ("no pod ml/train-lm; did you mean ml/train-llm?").

kubectl answers a miss with ``Error from server (NotFound): pods "x" not
found``; a simulation knows every name, so it can say which were meant.
"""

from __future__ import annotations

import difflib
from typing import Iterable

from .client import NotFound

#: Nearest names offered on a miss, at most.
SUGGESTED = 3
#: Names scoring this much less than the nearest one (difflib's ratio, 0..1) are not offered beside it.
MARGIN = 0.1


class NoSuchName(NotFound):
    """A name that matches no object (or, unqualified, objects in several namespaces); the message is one line
    with the nearest names, e.g. ``no pod ml/train-lm; did you mean ml/train-llm?``."""


def resolve(kind: str, given: str, keys: Iterable[str], *, where: str = "", namespaced: bool = True,
            default_namespace: str = "default") -> str:
    """The key (``namespace/name``, or ``name`` for a cluster-scoped ``kind``) among ``keys`` that ``given`` names.

    ``given`` is ``NAMESPACE/NAME`` or, for a namespaced kind, ``NAME``: the object of that name in
    ``default_namespace`` when there is one, else the only namespace holding that name.
    ``kind`` is the word used in the message (``pod``, ``PodGroup``, ``node``, ``namespace``), ``where`` says
    where the names were looked for (``in examples/cluster``).

    Raises :class:`NoSuchName` (a :class:`~kubesched.core.cluster.client.NotFound`) when nothing matches, naming
    up to :data:`SUGGESTED` nearest keys, or when an unqualified name is in several namespaces, naming them.
    """
    known = set(keys)
    if given in known and (not namespaced or "/" in given):
        return given
    if namespaced and "/" not in given:
        if f"{default_namespace}/{given}" in known:
            return f"{default_namespace}/{given}"
        same = sorted(key for key in known if key.rpartition("/")[2] == given)
        if len(same) == 1:
            return same[0]
        if same:
            raise NoSuchName(f"{kind} {given} is in {len(same)} namespaces: {', '.join(same)}; "
                             "give NAMESPACE/NAME")
    raise NoSuchName(miss(kind, given, known, where))


def miss(kind: str, given: str, keys: Iterable[str], where: str = "") -> str:
    """The one-line answer to ``given`` naming no ``kind`` among ``keys`` (looked for ``where``): with the nearest
    keys when some are close (by :mod:`difflib`'s ratio on the whole key and on the name alone), else the keys
    when there are at most :data:`SUGGESTED`, else how many there are."""
    known = sorted(set(keys))
    head = f"no {kind} {given}" + (f" {where}" if where else "")
    near = nearest(given, known)
    if near:
        return f"{head}; did you mean {' or '.join(near)}?"
    if not known:
        return f"{head} (there is none)"
    if len(known) <= SUGGESTED:
        return f"{head}; there are {', '.join(known)}"
    return f"{head} (there are {len(known)}, none of a similar name)"


def nearest(given: str, keys: Iterable[str], limit: int = SUGGESTED, cutoff: float = 0.6) -> list[str]:
    """At most ``limit`` of ``keys`` closest to ``given``, best first: each key scored by the better of its whole
    ``namespace/name`` and its name alone against ``given`` (so ``train-lm`` finds ``ml/train-llm``), keys
    scoring below ``cutoff`` (0..1, :class:`difflib.SequenceMatcher`'s ratio) or more than :data:`MARGIN` below
    the best left out."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(given)
    scored = []
    for key in keys:
        best = 0.0
        for candidate in {key, key.rpartition("/")[2]}:
            matcher.set_seq1(candidate)
            if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
                best = max(best, matcher.ratio())
        if best >= cutoff:
            scored.append((-best, key))
    scored.sort()
    return [key for score, key in scored[:limit] if score <= scored[0][0] + MARGIN]
