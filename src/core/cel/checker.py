"""Compile-time checks of a selector expression (celpy has no type checker of its own)."""

from __future__ import annotations

from typing import Any

import lark
from celpy.evaluation import celstr

from .errors import CelCompileError
from .library import (
    _DEVICE_VAR,
    _GLOBAL_FUNCTIONS,
    _MACROS,
    _MEMBER_FUNCTIONS,
    _NAMESPACED,
    _NAMESPACES,
    DEVICE_FIELDS,
    _regex,
)


def _bare_ident(tree: Any) -> str | None:
    """The identifier if ``tree`` is just ``name`` (through member/primary wrappers)."""
    while isinstance(tree, lark.Tree):
        if tree.data == "ident":
            return str(tree.children[0])
        if tree.data not in ("member", "primary", "expr", "conditionalor", "conditionaland", "relation",
                             "addition", "multiplication", "unary") or len(tree.children) != 1:
            return None
        tree = tree.children[0]
    return None


def _args(tree: lark.Tree, index: int) -> list:
    if len(tree.children) > index and isinstance(tree.children[index], lark.Tree) and tree.children[index].data == "exprlist":
        return list(tree.children[index].children)
    return []


def _position(tree: Any) -> str:
    meta = getattr(tree, "meta", None)
    line = getattr(meta, "line", None) if meta is not None and not getattr(meta, "empty", True) else None
    column = getattr(meta, "column", None) if line is not None else None
    return f"<input>:{line}:{column}" if line is not None else "<input>"


_LITERAL_TYPES = {"INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
                  "MLSTRING_LIT": "string", "BYTES_LIT": "bytes", "BOOL_LIT": "bool", "NULL_LIT": "null_type"}
_RETURN_TYPES = {
    **dict.fromkeys(("all", "exists", "exists_one", "startsWith", "endsWith", "matches", "contains", "isGreaterThan",
                     "isLessThan", "isInteger", "hasValue", "includes", "isSorted", "has", "isQuantity", "isSemver",
                     "bool"), "bool"),
    **dict.fromkeys(("compareTo", "size", "indexOf", "lastIndexOf", "major", "minor", "patch", "sign", "asInteger",
                     "int"), "int"),
    **dict.fromkeys(("lowerAscii", "upperAscii", "replace", "substring", "trim", "charAt", "join", "format", "find",
                     "reverse", "string"), "string"),
    **dict.fromkeys(("map", "filter", "split", "findAll"), "list"),
    "asApproximateFloat": "double", "double": "double", "uint": "uint", "bytes": "bytes",
    **dict.fromkeys(("quantity", "add", "sub", "mul"), "kubernetes.Quantity"),
    "semver": "kubernetes.Semver",
    "sets.contains": "bool", "sets.intersects": "bool", "sets.equivalent": "bool", "strings.quote": "string",
    "optional.of": "optional_type", "optional.none": "optional_type", "optional.ofNonZeroValue": "optional_type",
}
#: Type identifiers usable as values (``type(x) == int``).
_TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"})
_DEVICE_FIELD_TYPES = {"driver": "string", "attributes": "map", "capacity": "map", "allowMultipleAllocations": "bool"}


class _Checker:
    """Walks the parse tree once: declared names, macro shapes, regex literals,
    and a conservative result type ("dyn" whenever unsure)."""

    def __init__(self, expression: str):
        self.expression = expression
        self.uses_optional = False

    def error(self, tree: Any, message: str) -> CelCompileError:
        return CelCompileError(f"ERROR: {_position(tree)}: {message}", self.expression)

    def check(self, tree: lark.Tree) -> str:
        return self.visit(tree, frozenset())

    def visit(self, tree: Any, scope: frozenset) -> str:
        if not isinstance(tree, lark.Tree):
            return "dyn"
        method = getattr(self, "t_" + str(tree.data), None)
        if method is not None:
            return method(tree, scope)
        types = [self.visit(child, scope) for child in tree.children if isinstance(child, lark.Tree)]
        return types[0] if len(types) == 1 and len(tree.children) == 1 else "dyn"

    # operators
    def t_expr(self, tree, scope):
        types = [self.visit(child, scope) for child in tree.children]
        if len(types) == 3:
            if types[0] not in ("bool", "dyn"):
                raise self.error(tree, f"found no matching overload for '_?_:_' applied to '({types[0]}, ...)'")
            return types[1] if types[1] == types[2] else "dyn"
        return types[0]

    def _boolean(self, tree, scope):
        types = [self.visit(child, scope) for child in tree.children]
        return "bool" if len(types) > 1 else types[0]

    t_conditionalor = t_conditionaland = t_relation = _boolean

    def _arithmetic(self, tree, scope):
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        left_op, right = tree.children
        left = self.visit(left_op.children[0], scope) if left_op.children else "dyn"
        right_type = self.visit(right, scope)
        if left == right_type and left in ("int", "uint", "double", "string", "bytes", "list"):
            if left in ("string", "bytes", "list") and left_op.data not in ("addition_add",):
                return "dyn"
            return left
        return "dyn"

    t_addition = t_multiplication = _arithmetic

    def t_unary(self, tree, scope):
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op, operand = tree.children
        inner = self.visit(operand, scope)
        if op.data == "unary_not":
            return "bool"
        return inner if inner in ("int", "double") else "dyn"

    # members
    def t_member_dot(self, tree, scope):
        member, name = tree.children
        if _bare_ident(member) == _DEVICE_VAR and _DEVICE_VAR not in scope:
            if str(name) not in DEVICE_FIELDS:
                raise self.error(tree, f"undefined field '{name}'")
            return _DEVICE_FIELD_TYPES[str(name)]
        self.visit(member, scope)
        return "dyn"

    def t_member_dot_opt(self, tree, scope):
        self.uses_optional = True
        self.visit(tree.children[0], scope)
        return "optional_type"

    def t_member_index(self, tree, scope):
        for child in tree.children:
            self.visit(child, scope)
        return "dyn"

    def t_member_index_opt(self, tree, scope):
        self.uses_optional = True
        for child in tree.children:
            self.visit(child, scope)
        return "optional_type"

    def t_member_object(self, tree, scope):
        raise self.error(tree, "message construction is not supported in device selectors")

    def t_member_dot_arg(self, tree, scope):
        member, name = tree.children[0], str(tree.children[1])
        args = _args(tree, 2)
        namespace = _bare_ident(member)
        if namespace in _NAMESPACES and namespace not in scope:
            qualified = f"{namespace}.{name}"
            if qualified == "cel.bind":
                if len(args) != 3 or _bare_ident(args[0]) is None:
                    raise self.error(tree, "cel.bind() requires a variable name, an initializer and an expression")
                self.visit(args[1], scope)
                return self.visit(args[2], scope | {_bare_ident(args[0])})
            if qualified not in _NAMESPACED:
                raise self.error(tree, f"undeclared reference to '{qualified}'")
            for arg in args:
                self.visit(arg, scope)
            return _RETURN_TYPES.get(qualified, "dyn")
        if name in _MACROS:
            arity = (2, 3) if name == "map" else (2,)
            if len(args) not in arity or _bare_ident(args[0]) is None:
                if len(args) == 3 and name in ("all", "exists", "exists_one"):
                    raise self.error(tree, f"two-variable comprehension {name}() is not supported")
                raise self.error(tree, f"{name}() requires a variable name and an expression")
            if len(args) == 3:
                raise self.error(tree, "three-argument map() is not supported; use filter() then map()")
            self.visit(member, scope)
            return self.visit_macro(name, args, scope)
        if name not in _MEMBER_FUNCTIONS:
            if name in _GLOBAL_FUNCTIONS:
                raise self.error(tree, f"found no matching overload for '{name}' applied as a method")
            raise self.error(tree, f"undeclared reference to '{name}'")
        self.visit(member, scope)
        for arg in args:
            self.visit(arg, scope)
        if name in ("matches", "find", "findAll") and args:
            self.check_regex(args[0])
        return _RETURN_TYPES.get(name, "dyn")

    def visit_macro(self, name, args, scope):
        self.visit(args[1], scope | {_bare_ident(args[0])})
        if name in ("all", "exists", "exists_one"):
            return "bool"
        return "list"

    def check_regex(self, tree):
        literal = self.string_literal(tree)
        if literal is None:
            return
        try:
            _regex(literal)
        except ValueError as err:
            raise self.error(tree, f"invalid regular expression {literal!r}: {err}") from None

    @staticmethod
    def string_literal(tree) -> str | None:
        while isinstance(tree, lark.Tree) and len(tree.children) == 1:
            if tree.data == "literal":
                token = tree.children[0]
                if isinstance(token, lark.Token) and token.type in ("STRING_LIT", "MLSTRING_LIT"):
                    return str(celstr(token))
                return None
            tree = tree.children[0]
        return None

    def t_primary(self, tree, scope):
        child = tree.children[0]
        kind = child.data
        if kind == "literal":
            return _LITERAL_TYPES.get(child.children[0].type, "dyn")
        if kind == "list_lit":
            for c in child.children:
                self.visit(c, scope)
            return "list"
        if kind == "map_lit":
            for c in child.children:
                self.visit(c, scope)
            return "map"
        if kind == "paren_expr":
            return self.visit(child.children[0], scope)
        if kind in ("dot_ident", "dot_ident_arg"):
            raise self.error(tree, f"undeclared reference to '.{child.children[0]}'")
        if kind == "ident":
            name = str(child.children[0])
            if name in scope:
                return "dyn"
            if name == _DEVICE_VAR:
                return "kubernetes.DRADevice"
            if name in _TYPE_NAMES:
                return "type"
            raise self.error(tree, f"undeclared reference to '{name}'")
        if kind == "ident_arg":
            name = str(child.children[0])
            args = _args(child, 1)
            if name == "has":
                if len(args) != 1 or not self.is_field_selection(args[0]):
                    raise self.error(tree, "invalid argument to has() macro")
            elif name not in _GLOBAL_FUNCTIONS:
                if name in _MEMBER_FUNCTIONS:
                    raise self.error(tree, f"found no matching overload for '{name}' applied as a global function")
                raise self.error(tree, f"undeclared reference to '{name}'")
            for arg in args:
                self.visit(arg, scope)
            if name == "matches" and len(args) == 2:
                self.check_regex(args[1])
            if name == "dyn":
                return "dyn"
            return _RETURN_TYPES.get(name, "dyn")
        return "dyn"

    @staticmethod
    def is_field_selection(tree) -> bool:
        while isinstance(tree, lark.Tree):
            if tree.data in ("member_dot", "member_dot_opt"):
                return True
            if len(tree.children) != 1:
                return False
            tree = tree.children[0]
        return False


