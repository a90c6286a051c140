"""The static worst-case cost of a selector expression, refused over the limit at compile time.

The API server estimates what a DRA selector can cost before it stores the
object (cel-go's ``EstimateCost`` over the checked expression, compared with
``CELSelectorExpressionMaxCost`` = 1,000,000) and refuses a selector over it:
``Forbidden: too complex, exceeds cost limit``.  The estimate is a worst case
computed from the expression alone: every comprehension (``all``,
``exists``, ``exists_one``, ``map``, ``filter``) runs its body once per element
of the largest list or map its range can be, string work is proportional to
the longest string it can meet, ``cel.bind`` carries its value's bounds to the
body.

The bounds of what a device shows are upstream's limits on a ResourceSlice:
at most 32 attributes and capacities per device (so a domain map has at most
32 entries), attribute strings and versions at most 64 characters, a driver
name at most 63.  Literals have their own sizes.

This is our own estimator in cel-go's spirit, not a port of it: the units are
the same (about one per node evaluated, one per ten characters of string
work), the numbers are close for simple expressions and never lower than the
work an evaluation can do, so a selector refused here would also cost too
much to evaluate.  The runtime budget (:data:`~kubesched.core.cel.evaluator.MAX_COST`
per evaluation) stays the final guard.
"""

from __future__ import annotations

import math
from typing import Any

import lark
from attrs import frozen

from .library import _DEVICE_VAR, _MACROS

#: upstream ``resource.CELSelectorExpressionMaxCost``
MAX_ESTIMATED_COST = 1_000_000
#: upstream ResourceSlice limits: attributes + capacities per device, attribute string / version length, driver name
MAX_DEVICE_ENTRIES = 32
MAX_ATTRIBUTE_LENGTH = 64
MAX_DRIVER_LENGTH = 63

#: string work: one unit per this many characters (cel-go's "common" string cost factor, 0.1)
_CHARS_PER_UNIT = 10
_STRING_RESULTS = frozenset({"lowerAscii", "upperAscii", "trim", "reverse", "substring", "charAt", "replace",
                             "format", "join", "quote", "string"})
_LIST_RESULTS = frozenset({"split", "findAll"})


@frozen
class Bound:
    """What an expression can cost at worst (``cost``, in cel-go's units) and
    how large its value can be (``size``: characters of a string, elements of
    a list or entries of a map, 1 for anything else; ``element``: the bound of
    one element or map value)."""

    cost: int
    size: int = 1
    element: Bound | None = None


_SCALAR = Bound(0)
_ATTRIBUTE_VALUE = Bound(0, MAX_ATTRIBUTE_LENGTH, Bound(0, MAX_ATTRIBUTE_LENGTH))
_DOMAIN = Bound(0, MAX_DEVICE_ENTRIES, _ATTRIBUTE_VALUE)
_DEVICE_MAPS = Bound(0, MAX_DEVICE_ENTRIES, _DOMAIN)


def _units(characters: int) -> int:
    return math.ceil(characters / _CHARS_PER_UNIT)


def _then(first: Bound, *more: Bound) -> int:
    return first.cost + sum(b.cost for b in more)


class _Estimator:
    """Walks the parse tree (the shapes :mod:`.checker` accepted) bottom up."""

    def visit(self, tree: Any, scope: dict[str, Bound]) -> Bound:
        if not isinstance(tree, lark.Tree):
            return _SCALAR
        method = getattr(self, "e_" + str(tree.data), None)
        if method is not None:
            return method(tree, scope)
        parts = [self.visit(child, scope) for child in tree.children if isinstance(child, lark.Tree)]
        if len(parts) == 1:
            return parts[0]
        return Bound(sum(p.cost for p in parts) + 1, max((p.size for p in parts), default=1))

    def e_expr(self, tree, scope):
        parts = [self.visit(child, scope) for child in tree.children]
        if len(parts) == 3:  # cond ? a : b
            cond, then, other = parts
            worse = then if then.cost >= other.cost else other
            return Bound(cond.cost + worse.cost, max(then.size, other.size), then.element or other.element)
        return parts[0]

    def _logical(self, tree, scope):
        parts = [self.visit(child, scope) for child in tree.children]
        if len(parts) == 1:
            return parts[0]
        return Bound(sum(p.cost for p in parts) + len(parts) - 1)

    e_conditionalor = e_conditionaland = _logical

    def _operands(self, tree, scope) -> tuple[str, Bound, Bound]:
        """A binary operator's name (``relation_in``, ``addition_add``, ...) and its two operands' bounds."""
        operator, right = tree.children
        left = self.visit(operator.children[0], scope) if operator.children else _SCALAR
        return str(operator.data), left, self.visit(right, scope)

    def e_relation(self, tree, scope):
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        operator, left, right = self._operands(tree, scope)
        if operator == "relation_in":
            work = right.size * (1 + _units(left.size))
        else:
            work = 1 + _units(max(left.size, right.size))
        return Bound(_then(left, right) + work)

    def e_addition(self, tree, scope):
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        _, left, right = self._operands(tree, scope)
        size = left.size + right.size  # concatenation at worst
        return Bound(_then(left, right) + 1 + _units(size), size, left.element or right.element)

    def e_multiplication(self, tree, scope):
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        _, left, right = self._operands(tree, scope)
        return Bound(_then(left, right) + 1)

    def e_unary(self, tree, scope):
        inner = self.visit(tree.children[-1], scope)
        return Bound(inner.cost + len(tree.children) - 1, inner.size, inner.element)

    def e_member_dot(self, tree, scope):
        member, name = tree.children
        if _bare_device(member, scope):
            if str(name) in ("attributes", "capacity"):
                return Bound(2, _DEVICE_MAPS.size, _DEVICE_MAPS.element)
            if str(name) == "driver":
                return Bound(2, MAX_DRIVER_LENGTH)
            return Bound(2)
        inner = self.visit(member, scope)
        return _element_of(inner, cost=inner.cost + 1)

    e_member_dot_opt = e_member_dot

    def e_member_index(self, tree, scope):
        member, index = tree.children[0], tree.children[-1]
        inner, key = self.visit(member, scope), self.visit(index, scope)
        return _element_of(inner, cost=_then(inner, key) + 1)

    e_member_index_opt = e_member_index

    def e_member_dot_arg(self, tree, scope):
        member, name = tree.children[0], str(tree.children[1])
        args = _arguments(tree, 2)
        variable = _bare_name(member)
        if variable == "cel" and "cel" not in scope and name == "bind" and len(args) == 3:
            value = self.visit(args[1], scope)
            body = self.visit(args[2], {**scope, _bare_name(args[0]) or "": Bound(0, value.size, value.element)})
            return Bound(value.cost + body.cost + 2, body.size, body.element)
        if name in _MACROS and len(args) == 2:
            collection = self.visit(member, scope)
            item = collection.element or Bound(0)
            body = self.visit(args[1], {**scope, _bare_name(args[0]) or "": Bound(0, item.size, item.element)})
            cost = collection.cost + 1 + collection.size * (body.cost + 1)
            if name == "map":
                return Bound(cost, collection.size, Bound(0, body.size, body.element))
            if name == "filter":
                return Bound(cost, collection.size, item)
            return Bound(cost)
        target = self.visit(member, scope)
        bounds = [self.visit(arg, scope) for arg in args]
        return _call(name, target, bounds)

    def e_primary(self, tree, scope):
        child = tree.children[0]
        kind = child.data
        if kind == "literal":
            token = child.children[0]
            if token.type in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
                return Bound(0, max(len(str(token)) - 2, 0))
            return _SCALAR
        if kind in ("list_lit", "map_lit"):
            items = [self.visit(c, scope) for c in _flatten(child)]
            entries = len(items) // 2 if kind == "map_lit" else len(items)
            values = items[1::2] if kind == "map_lit" else items
            largest = max(values, key=lambda b: (b.size, b.cost), default=None)
            element = Bound(0, largest.size, largest.element) if largest is not None else None
            return Bound(sum(b.cost for b in items) + 1, entries, element)
        if kind == "paren_expr":
            return self.visit(child.children[0], scope)
        if kind == "ident":
            name = str(child.children[0])
            bound = scope.get(name)
            if bound is not None:
                return Bound(1, bound.size, bound.element)
            return Bound(1)
        if kind == "ident_arg":
            name = str(child.children[0])
            bounds = [self.visit(arg, scope) for arg in _arguments(child, 1)]
            if name == "has":
                return Bound(sum(b.cost for b in bounds) + 1)
            if name == "dyn" and bounds:
                return bounds[0]
            if name == "matches" and len(bounds) == 2:
                return _call("matches", bounds[0], bounds[1:])
            size = max((b.size for b in bounds), default=1)
            return Bound(sum(b.cost for b in bounds) + 1 + _units(size), size if name == "string" else 1)
        return Bound(1)


def _call(name: str, target: Bound, args: list[Bound]) -> Bound:
    """A method call on ``target``: its own work beside its operands'."""
    cost = _then(target, *args) + 1
    size = target.size
    if name == "matches":  # a regular expression scans the string once per pattern character at worst
        pattern = args[0].size if args else 1
        return Bound(cost + _units(size) * max(pattern, 1))
    if name in _LIST_RESULTS:
        return Bound(cost + _units(size) + size, size, Bound(0, size))
    if name == "replace" and len(args) >= 2:
        grown = size * max(args[1].size, 1)
        return Bound(cost + _units(grown), grown)
    if name == "join":
        element = target.element.size if target.element is not None else 1
        joined = size * (element + (args[0].size if args else 0))
        return Bound(cost + _units(joined), joined)
    if name == "format":
        formatted = size + sum(a.size for a in args) * MAX_ATTRIBUTE_LENGTH
        return Bound(cost + _units(formatted), formatted)
    if name in _STRING_RESULTS:
        return Bound(cost + _units(size), size)
    if name in ("sum", "min", "max", "isSorted", "indexOf", "lastIndexOf", "contains", "startsWith", "endsWith",
                "size"):
        return Bound(cost + _units(size + sum(a.size for a in args)) + (size if target.element else 0))
    return Bound(cost + _units(size))


def _element_of(inner: Bound, cost: int) -> Bound:
    """Selecting or indexing into ``inner``: an element of it."""
    element = inner.element or Bound(0, MAX_ATTRIBUTE_LENGTH)
    return Bound(cost, element.size, element.element)


def _bare_name(tree: Any) -> str | None:
    while isinstance(tree, lark.Tree):
        if tree.data == "ident":
            return str(tree.children[0])
        if len(tree.children) != 1:
            return None
        tree = tree.children[0]
    return None


def _bare_device(tree: Any, scope: dict[str, Bound]) -> bool:
    return _bare_name(tree) == _DEVICE_VAR and _DEVICE_VAR not in scope


def _arguments(tree: lark.Tree, index: int) -> list:
    if len(tree.children) > index and isinstance(tree.children[index], lark.Tree) \
            and tree.children[index].data == "exprlist":
        return list(tree.children[index].children)
    return []


def _flatten(tree: lark.Tree) -> list:
    """The element (list) or key and value (map) expressions of a literal, in order."""
    out: list = []
    for child in tree.children:
        if isinstance(child, lark.Tree) and child.data in ("exprlist", "mapinits"):
            out.extend(_flatten(child))
        elif isinstance(child, lark.Tree):
            out.append(child)
    return out


def estimate_cost(tree: lark.Tree) -> int:
    """The worst-case cost of evaluating the parsed selector ``tree`` on any
    device (module docstring).  Never raises for a tree the checker accepted."""
    return _Estimator().visit(tree, {}).cost
