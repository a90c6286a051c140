"""Plugin discovery through the entry-point group ``kubesched.plugins``.

A plugin class has a ``name`` (defaults to the entry-point name), an optional
``args_class`` (an attrs class decoded strictly from the profile's
``pluginConfig`` args, upstream's ``<Name>Args``; ``STRICT = False`` on it
lets unknown fields through) and a constructor ``(args, handle)``.  kubesched's own plugins are announced through the same
group in its pyproject.toml.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any, Iterable

from ..api.convert import ManifestError, structure_args
from .hookspecs import EXTENSION_POINTS, PROJECT

ENTRY_POINT_GROUP = "kubesched.plugins"

_IMPL_ATTR = PROJECT + "_impl"


class PluginError(ValueError):
    """A plugin that cannot be found, loaded or configured."""


def implemented_hooks(cls: type) -> frozenset[str]:
    """Names of the hook methods ``cls`` marks with ``hookimpl``."""
    return frozenset(
        name for name in dir(cls) if not name.startswith("__") and hasattr(getattr(cls, name, None), _IMPL_ATTR)
    )


def extension_points(cls: type) -> list[str]:
    """Config keys of the extension points ``cls`` implements (``filter``, ``score`` ...)."""
    hooks = implemented_hooks(cls)
    return [point for point, names in EXTENSION_POINTS.items() if names[0] in hooks]


def build_args(cls: type, raw: dict[str, Any] | None) -> Any:
    """Decode ``raw`` pluginConfig args into ``cls.args_class`` (defaults when
    None), strictly as upstream's decoding of the configuration: an unknown
    field is refused unless the args class (or the nested class holding it)
    sets ``STRICT = False``.  A plugin without ``args_class`` gets the raw dict
    (out-of-tree args pass through raw, as upstream).  Raises
    :class:`PluginError` naming the field path (``args.scoringStrategy.typo:
    unknown field``)."""
    args_class = getattr(cls, "args_class", None)
    if args_class is None:
        return dict(raw or {})
    body = {k: v for k, v in (raw or {}).items() if k not in ("apiVersion", "kind")}
    try:
        return structure_args(body, args_class)
    except ManifestError as err:
        raise PluginError(f"args.{err}" if err.field else f"args: {err.problem}") from None


class Registry:
    """Plugin name -> plugin class.

    :meth:`discover` finds the entry points of the group without importing
    them: a plugin is imported when a profile asks for it (:meth:`get`), so a
    broken package that no profile uses is reported by ``kubesched plugins``
    (:meth:`broken`) and does not stop the scheduler.  :meth:`add` registers a
    class directly (tests, embedding).
    """

    def __init__(self, plugins: Iterable[type] = ()):
        self._plugins: dict[str, type] = {}
        self._entries: dict[str, importlib.metadata.EntryPoint] = {}
        self._errors: dict[str, str] = {}
        self.origin: dict[str, str] = {}
        for cls in plugins:
            self.add(cls)

    @classmethod
    def discover(cls, group: str = ENTRY_POINT_GROUP) -> "Registry":
        """Find every entry point in ``group`` (imported on first :meth:`get`).
        Two entry points of one name that point at different classes make
        that name unusable (:meth:`get` raises, :meth:`broken` says why)."""
        registry = cls()
        names: dict[Any, str] = {}  # a distribution's name is read from its metadata file: once per distribution
        for entry in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
            dist = entry.dist
            if dist is not None and dist not in names:
                names[dist] = dist.name
            origin = "?" if dist is None else names[dist]
            known = registry._entries.get(entry.name)
            if known is not None and known.value != entry.value:
                registry._errors[entry.name] = (f"plugin {entry.name} is registered twice "
                                                f"({registry.origin.get(entry.name)} and {origin})")
                continue
            registry._entries[entry.name] = entry
            registry.origin[entry.name] = origin
        return registry

    def _load(self, name: str) -> type | None:
        """Import the entry point ``name`` once; PluginError when it does not load."""
        if name in self._errors:
            raise PluginError(self._errors[name])
        entry = self._entries.pop(name, None)
        if entry is None:
            return self._plugins.get(name)
        try:
            plugin = entry.load()
            self.add(plugin, name=entry.name, origin=self.origin.get(name, ""))
        except Exception as err:  # noqa: BLE001 - any import failure is the plugin's
            message = f"entry point {entry.name} = {entry.value}: cannot load: {err}"
            if isinstance(err, PluginError):
                message = str(err)
            self._errors[name] = message
            raise PluginError(message) from err
        return self._plugins[name]

    def broken(self) -> dict[str, str]:
        """Plugin name -> why it cannot be used (after trying to load every entry point)."""
        for name in list(self._entries):
            try:
                self._load(name)
            except PluginError:
                pass
        return dict(sorted(self._errors.items()))

    def add(self, plugin: type, name: str | None = None, origin: str = "") -> None:
        """Register plugin class ``plugin`` under ``name`` (default: its ``name`` attribute, else the class name);
        ``origin`` says where it came from.  Raises PluginError for a non-class, a ``name`` attribute that
        disagrees, or a second class under one name."""
        name = name or getattr(plugin, "name", None) or plugin.__name__
        if not isinstance(plugin, type):
            raise PluginError(f"plugin {name}: expected a class, got {plugin!r}")
        declared = getattr(plugin, "name", name)
        if declared != name:
            raise PluginError(f"plugin {name}: its class says name = {declared!r}")
        existing = self._plugins.get(name)
        if existing is not None and existing is not plugin:
            raise PluginError(f"plugin {name} is registered twice ({self.origin.get(name)} and {origin})")
        self._plugins[name] = plugin
        self.origin[name] = origin

    def get(self, name: str) -> type | None:
        """The plugin class ``name`` (imported now if it was not), or None when
        no entry point has that name.  Raises :class:`PluginError` when it
        does not load."""
        if name in self._entries or name in self._errors:
            return self._load(name)
        return self._plugins.get(name)

    def names(self) -> list[str]:
        """Every known plugin name, loaded or not."""
        return sorted({*self._plugins, *self._entries, *self._errors})

    def items(self) -> list[tuple[str, type]]:
        """(name, plugin class) pairs of every plugin that loads, by name (see :meth:`broken`)."""
        self.broken()
        return sorted(self._plugins.items())

    def __contains__(self, name: str) -> bool:
        return name in self._plugins or name in self._entries
