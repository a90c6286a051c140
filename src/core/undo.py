"""Undoing changes to the in-memory state: an undo log and saved fields (what ``kubesched.sim``'s transactions use).

Two small pieces, each used where the state lives:

- :class:`UndoLog`: steps recorded while a transaction is open (the embedded
  API server records each write of its store as a :class:`StoreWrite`), undone
  in reverse order; cost proportional to what changed.
- :func:`saved_fields`: an object's fields as they are now, with the builtin
  containers among them (dict, list, set, deque) copied, so that restoring
  puts back what they held.  For the state whose size is what is pending, not
  the cluster (the scheduling queue, the clock's timers, counters): saved on
  entry, restored on rollback.
"""

from __future__ import annotations

import collections
from typing import Any, Callable, Protocol

#: a saved state's restore: call it to put the state back (any number of times)
Restore = Callable[[], None]


class Step(Protocol):
    """One recorded change: :meth:`undo` puts back what it changed."""

    def undo(self) -> None:
        """Put back what this change changed."""


class UndoLog:
    """Steps recorded while at least one transaction is open, undone in reverse.

    :meth:`begin` opens a (nested) transaction and returns its mark;
    :meth:`rollback` undoes every step after a mark; :meth:`end` closes the
    innermost transaction (the steps stay for an outer one, and are dropped
    when the outermost ends).  Not thread-safe: the writer's lock guards it.
    """

    __slots__ = ("_steps", "_open")

    def __init__(self) -> None:
        self._steps: list[Step] = []
        self._open = 0

    @property
    def recording(self) -> bool:
        """Whether a transaction is open (a writer records its steps only then)."""
        return self._open > 0

    def begin(self) -> int:
        """Open a transaction; returns its mark (the number of steps before it)."""
        self._open += 1
        return len(self._steps)

    def record(self, step: Step) -> None:
        """Keep ``step`` (only while a transaction is open)."""
        if self._open:
            self._steps.append(step)

    def since(self, mark: int) -> list[Step]:
        """The steps recorded after ``mark``, oldest first."""
        return self._steps[mark:]

    def rollback(self, mark: int) -> None:
        """Undo every step recorded after ``mark``, newest first."""
        steps = self._steps
        while len(steps) > mark:
            steps.pop().undo()

    def end(self, mark: int) -> None:
        """Close the transaction opened at ``mark``; the outermost drops every step.  Raises RuntimeError when
        none is open."""
        if not self._open:
            raise RuntimeError("UndoLog.end: no transaction is open")
        self._open -= 1
        if not self._open:
            self._steps.clear()


class StoreWrite:
    """A write of one entry of a dict-like store: ``key`` held ``previous`` (:data:`ABSENT`: nothing) before."""

    __slots__ = ("store", "kind", "key", "previous")

    def __init__(self, store: dict[str, Any], kind: str, key: str, previous: Any):
        self.store, self.kind, self.key, self.previous = store, kind, key, previous

    def undo(self) -> None:
        """Put ``previous`` back under ``key`` (or remove the key)."""
        if self.previous is ABSENT:
            self.store.pop(self.key, None)
        else:
            self.store[self.key] = self.previous


#: what a :class:`StoreWrite` holds for a key that was not there
ABSENT: Any = object()

_CONTAINER_TYPES = frozenset({dict, list, set, collections.deque, collections.defaultdict, collections.OrderedDict,
                             collections.Counter})


def copied(value: Any) -> Any:
    """``value`` with its builtin containers copied, nested ones too; anything else (objects, frozen API objects)
    is shared."""
    kind = type(value)
    if kind not in _CONTAINER_TYPES:
        return value
    out = value.copy()
    if kind is list:
        if _holds_containers(value):
            out[:] = [copied(item) for item in value]
    elif kind in (set, collections.deque):
        pass  # members are hashable (sets) or treated as leaves (deques of keys or events)
    elif _holds_containers(value.values()):
        for key, item in value.items():
            out[key] = copied(item)
    return out


def _holds_containers(items: Any) -> bool:
    """Whether any of ``items`` is a builtin container (the loop runs in C: a store of 10,000 entries is cheap)."""
    return any(map(_CONTAINER_TYPES.__contains__, map(type, items)))


def saved_fields(obj: Any, names: tuple[str, ...] | None = None) -> Restore:
    """Save ``obj``'s fields ``names`` (None: every instance attribute, ``__slots__`` included) as they are now,
    containers copied (:func:`copied`); the returned callable puts them back and may be called more than once.
    A container field gets its own object back, refilled in place, so that whoever shares it (a dict handed to
    the plugins' handles) sees the restored contents.  Cost: the size of the containers saved."""
    fields = _field_names(obj) if names is None else names
    saved = [(name, getattr(obj, name)) for name in fields]
    contents = [copied(value) for _, value in saved]
    # a container holding containers is copied again on each restore (its inner ones would be shared otherwise)
    nested = [type(value) in _CONTAINER_TYPES and _holds_containers(
        value.values() if isinstance(value, dict) else value) for value in contents]

    def restore() -> None:
        for (name, original), content, deep in zip(saved, contents, nested):
            if type(original) in _CONTAINER_TYPES:
                _refill(original, copied(content) if deep else content)
            setattr(obj, name, original)
    return restore


def _refill(container: Any, content: Any) -> None:
    """Make ``container`` hold what ``content`` (a container of the same type) holds."""
    if isinstance(container, list):
        container[:] = content
    else:
        container.clear()
        if isinstance(container, dict):
            container.update(content)
        elif isinstance(container, set):
            container.update(content)
        else:
            container.extend(content)


def _field_names(obj: Any) -> tuple[str, ...]:
    """Every instance attribute of ``obj``: its ``__dict__`` and the ``__slots__`` it has a value for."""
    names = list(getattr(obj, "__dict__", ()))
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                names.append(name)
    return tuple(names)


def restoring_all(restores: list[Restore]) -> Restore:
    """One restore calling each of ``restores`` in order."""
    def restore() -> None:
        for each in restores:
            each()
    return restore
