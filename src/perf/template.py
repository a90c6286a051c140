"""Expanding scheduler_perf's Go ``text/template`` placeholders.

scheduler_perf runs every node, pod and object template through Go's
``text/template`` before decoding it, with ``.Index`` (the object's index
within its op), ``.Count`` (how many the op creates) and the op's
``templateParams`` as data.  This module expands the subset of that language
the shipped templates use, and refuses anything else with a
:class:`TemplateError` that names the file and the action:

- text is copied; ``{{- `` / `` -}}`` trim the whitespace beside an action;
- ``{{ pipeline }}`` prints a value (``.Index``, ``.name.sub``, ``.``,
  ``$var``, literals, function calls, ``(...)`` groups, ``a | F b`` pipes);
- ``{{$var := pipeline}}`` declares a variable (visible to the end of the
  enclosing block), ``{{$var = pipeline}}`` assigns one;
- ``{{with p}} ... {{else}} ... {{end}}``: the body with ``.`` set to the
  pipeline's value when it is true (not empty), else the else branch;
- ``{{if p}} ... {{else}} ... {{end}}`` (also ``{{else if p}}``) and
  ``{{range p}} ... {{else}} ... {{end}}`` over a list, a mapping (its values,
  in key order) or an integer ``n`` (``0 .. n-1``, as Go 1.22 allows); inside
  a range, ``.`` is the element, and ``{{range $e := p}}`` /
  ``{{range $i, $e := p}}`` also name the element (and its index or key);
- functions: Go's ``or``, ``and``, ``not``, ``eq``, ``ne``, ``lt``, ``le``,
  ``gt``, ``ge``, ``len``, and scheduler_perf's ``AddInt``, ``SubtractInt``,
  ``MultiplyInt``, ``DivideInt``, ``Mod`` (and the older ``mod``, ``div``), ``AddFloat``, ``SubtractFloat``,
  ``MultiplyFloat``, ``DivideFloat``, ``Int`` and ``JSON``.

Printing follows Go's ``%v``: integers as digits, whole floats without a
fraction (``5.0`` prints ``5``), booleans ``true``/``false``.  Printing a
missing value (``{{.nosuch}}``) is an error rather than Go's ``<no value>``.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from kubesched.core.api.manifests import MAX_CONFIG_BYTES, InvalidManifest, decode, read_file_bytes

#: ``range $e := p`` / ``range $i, $e := p``: the variables and the pipeline
_RANGE_VARIABLES = re.compile(r"^\s*(\$\w+)\s*(?:,\s*(\$\w+)\s*)?:=(.*)$", re.S)


class TemplateError(ValueError):
    """A template kubesched cannot expand: ``where`` (file or ``template``) and the problem."""

    def __init__(self, where: str, problem: str):
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


# --- values ----------------------------------------------------------------------------------


def truth(value: Any) -> bool:
    """Go template truth: false, 0, nil and empty strings/lists/maps are false."""
    if value is None:
        return False
    if isinstance(value, (bool, int, float, str, list, tuple, dict)):
        return bool(value)
    return True


def format_value(value: Any) -> str:
    """Go's ``%v`` for the kinds of values templates print."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{format_value(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _number(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        raise ValueError(f"cannot use {value!r} as a number")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise ValueError(f"cannot use {value!r} as a number")


def _to_int(value: Any) -> int:
    return int(_number(value))


def _divide(a: Any, b: Any) -> float:
    divisor = _number(b)
    if divisor == 0:
        raise ValueError("division by zero")
    return _number(a) / divisor


def _or(*args: Any) -> Any:
    if not args:
        raise ValueError("or: at least one argument required")
    for arg in args:
        if truth(arg):
            return arg
    return args[-1]


def _and(*args: Any) -> Any:
    if not args:
        raise ValueError("and: at least one argument required")
    for arg in args:
        if not truth(arg):
            return arg
    return args[-1]


def _compare(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            return op(float(a), float(b))
        return op(a, b)
    return compare


FUNCTIONS: dict[str, Callable[..., Any]] = {
    # Go's builtins (the ones worth having)
    "or": _or,
    "and": _and,
    "not": lambda value: not truth(value),
    "eq": _compare(lambda a, b: a == b),
    "ne": _compare(lambda a, b: a != b),
    "lt": _compare(lambda a, b: a < b),
    "le": _compare(lambda a, b: a <= b),
    "gt": _compare(lambda a, b: a > b),
    "ge": _compare(lambda a, b: a >= b),
    "len": lambda value: len(value),
    # scheduler_perf's helpers
    "AddInt": lambda *numbers: int(sum(_number(n) for n in numbers)),
    "SubtractInt": lambda a, b: int(_number(a) - _number(b)),
    "MultiplyInt": lambda *numbers: int(math.prod(_number(n) for n in numbers)),
    "DivideInt": lambda a, b: int(_divide(a, b)),
    "Mod": lambda a, b: _to_int(a) % _to_int(b),
    # the older lower-case names some templates still use
    "mod": lambda a, b: _to_int(a) % _to_int(b),
    "div": lambda a, b: int(_divide(a, b)),
    "AddFloat": lambda *numbers: float(sum(_number(n) for n in numbers)),
    "SubtractFloat": lambda a, b: _number(a) - _number(b),
    "MultiplyFloat": lambda *numbers: float(math.prod(_number(n) for n in numbers)),
    "DivideFloat": _divide,
    "Int": _to_int,
    "JSON": lambda value: json.dumps(value, separators=(",", ":"), sort_keys=True),
}


# --- lexing the actions ----------------------------------------------------------------------

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<raw>`[^`]*`)
      | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<declare>:=)
      | (?P<assign>=)
      | (?P<punct>[()|,])
      | (?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
      | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\.)
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"unexpected {text[pos:].strip()[:20]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


# --- the tree --------------------------------------------------------------------------------


class _Node:
    __slots__ = ()


class _Text(_Node):
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class _Action(_Node):
    """Print a pipeline, or set a variable (``declare``/``assign`` name)."""

    __slots__ = ("pipeline", "variable", "declare", "source")

    def __init__(self, pipeline, variable: str | None, declare: bool, source: str):
        self.pipeline = pipeline
        self.variable = variable
        self.declare = declare
        self.source = source


class _Block(_Node):
    """``if``, ``with`` or ``range``: a pipeline, a body and an optional else branch; ``variables``: the
    names a ``range $e := ...`` or ``range $i, $e := ...`` declares (empty otherwise)."""

    __slots__ = ("kind", "pipeline", "body", "otherwise", "source", "variables")

    def __init__(self, kind: str, pipeline, body: list, otherwise: list, source: str,
                 variables: tuple[str, ...] = ()):
        self.kind = kind
        self.pipeline = pipeline
        self.body = body
        self.otherwise = otherwise
        self.source = source
        self.variables = variables


#: A pipeline is a list of commands; a command is a list of operands, where an
#: operand is ("field", ".a.b"), ("var", "$x.a"), ("ident", "F"), ("literal", v)
#: or ("group", pipeline).


class _Parser:
    def __init__(self, text: str, where: str):
        self.where = where
        self.items: list[tuple[str, str]] = []  # ("text", s) or ("action", body)
        pos = 0
        pending_trim = False
        for match in _ACTION.finditer(text):
            chunk = text[pos:match.start()]
            if pending_trim:
                chunk = chunk.lstrip()
            if match.group(1):
                chunk = chunk.rstrip()
            self.items.append(("text", chunk))
            body = match.group(2).strip()
            if body.startswith("/*"):
                if not body.endswith("*/"):
                    raise TemplateError(where, f"unterminated comment in {{{{{body}}}}}")
                body = ""
            self.items.append(("action", body))
            pending_trim = bool(match.group(3))
            pos = match.end()
        tail = text[pos:]
        if pending_trim:
            tail = tail.lstrip()
        if "{{" in tail:
            raise TemplateError(where, "unclosed action '{{'")
        self.items.append(("text", tail))
        self.index = 0

    def parse(self) -> list:
        nodes, stop = self._list(())
        if stop is not None:
            raise TemplateError(self.where, f"unexpected {{{{{stop}}}}}")
        return nodes

    def _list(self, stops: tuple[str, ...]) -> tuple[list, str | None]:
        nodes: list = []
        while self.index < len(self.items):
            kind, value = self.items[self.index]
            self.index += 1
            if kind == "text":
                if value:
                    nodes.append(_Text(value))
                continue
            if not value:
                continue  # a comment
            keyword = value.split(None, 1)[0]
            if keyword in stops:
                return nodes, value
            if keyword in ("end", "else"):
                raise TemplateError(self.where, f"unexpected {{{{{value}}}}}")
            if keyword in ("if", "range", "with"):
                nodes.append(self._block(keyword, value))
            elif keyword in ("define", "template", "block", "break", "continue"):
                raise TemplateError(self.where, f"unsupported action {{{{{value}}}}} (kubesched expands only "
                                                "printing, variables, if, with and range)")
            else:
                nodes.append(self._action(value))
        if stops:
            raise TemplateError(self.where, f"missing {{{{end}}}} for {{{{{stops[-1]}}}}}")
        return nodes, None

    def _block(self, keyword: str, source: str) -> _Block:
        text = source[len(keyword):]
        variables: tuple[str, ...] = ()
        declared = _RANGE_VARIABLES.match(text) if keyword == "range" else None
        if declared is not None:
            variables = tuple(v for v in declared.group(1, 2) if v)
            text = declared.group(3)
        elif keyword in ("range", "with") and any(t[0] in ("declare", "assign") for t in self._safe_tokens(source)):
            raise TemplateError(self.where, f"unsupported action {{{{{source}}}}} ({keyword} with variables)")
        pipeline = self._pipeline(text, source)
        body, stop = self._list(("else", "end"))
        otherwise: list = []
        if stop is not None and stop.startswith("else"):
            rest = stop[len("else"):].strip()
            if rest.startswith("if ") and keyword == "if":
                otherwise = [self._block("if", rest)]
                return _Block(keyword, pipeline, body, otherwise, source, variables)
            if rest:
                raise TemplateError(self.where, f"unsupported action {{{{{stop}}}}}")
            otherwise, stop = self._list(("end",))
        if stop is None or stop != "end":
            raise TemplateError(self.where, f"missing {{{{end}}}} for {{{{{source}}}}}")
        return _Block(keyword, pipeline, body, otherwise, source, variables)

    def _safe_tokens(self, source: str) -> list[tuple[str, str]]:
        try:
            return _tokens(source)
        except ValueError:
            return []

    def _action(self, source: str) -> _Action:
        try:
            tokens = _tokens(source)
        except ValueError as err:
            raise TemplateError(self.where, f"{{{{{source}}}}}: {err}") from None
        if len(tokens) >= 2 and tokens[0][0] == "var" and tokens[1][0] in ("declare", "assign"):
            name = tokens[0][1]
            if "." in name:
                raise TemplateError(self.where, f"{{{{{source}}}}}: cannot assign to a field")
            pipeline = self._pipeline_tokens(tokens[2:], source)
            return _Action(pipeline, name, tokens[1][0] == "declare", source)
        return _Action(self._pipeline_tokens(tokens, source), None, False, source)

    def _pipeline(self, text: str, source: str):
        try:
            tokens = _tokens(text)
        except ValueError as err:
            raise TemplateError(self.where, f"{{{{{source}}}}}: {err}") from None
        return self._pipeline_tokens(tokens, source)

    def _pipeline_tokens(self, tokens: list[tuple[str, str]], source: str):
        pipeline, rest = self._parse_pipeline(tokens, source)
        if rest:
            raise TemplateError(self.where, f"{{{{{source}}}}}: unexpected {rest[0][1]!r}")
        if not pipeline or not pipeline[0]:
            raise TemplateError(self.where, f"{{{{{source}}}}}: missing value")
        return pipeline

    def _parse_pipeline(self, tokens, source):
        commands: list[list] = [[]]
        while tokens:
            kind, value = tokens[0]
            if kind == "punct" and value == ")":
                break
            tokens = tokens[1:]
            if kind == "punct" and value == "|":
                if not commands[-1]:
                    raise TemplateError(self.where, f"{{{{{source}}}}}: missing command before '|'")
                commands.append([])
            elif kind == "punct" and value == "(":
                inner, tokens = self._parse_pipeline(tokens, source)
                if not tokens or tokens[0] != ("punct", ")"):
                    raise TemplateError(self.where, f"{{{{{source}}}}}: unclosed '('")
                tokens = tokens[1:]
                commands[-1].append(("group", inner))
            elif kind == "string":
                commands[-1].append(("literal", json.loads(value)))
            elif kind == "raw":
                commands[-1].append(("literal", value[1:-1]))
            elif kind == "number":
                number = float(value)
                commands[-1].append(("literal", int(value) if re.fullmatch(r"-?\d+", value) else number))
            elif kind in ("field", "var"):
                commands[-1].append((kind, value))
            elif kind == "ident":
                if value in ("nil", "true", "false"):
                    commands[-1].append(("literal", {"nil": None, "true": True, "false": False}[value]))
                elif value in FUNCTIONS:
                    if commands[-1]:
                        raise TemplateError(self.where, f"{{{{{source}}}}}: function {value} must start a command")
                    commands[-1].append(("ident", value))
                else:
                    raise TemplateError(self.where, f"{{{{{source}}}}}: function {value!r} not defined "
                                                    f"(kubesched knows {', '.join(sorted(FUNCTIONS))})")
            else:
                raise TemplateError(self.where, f"{{{{{source}}}}}: unexpected {value!r}")
        if not commands[-1] and len(commands) > 1:
            raise TemplateError(self.where, f"{{{{{source}}}}}: missing command after '|'")
        return commands, tokens


# --- executing -------------------------------------------------------------------------------

_MISSING = object()


class _Scope:
    __slots__ = ("vars", "parent")

    def __init__(self, parent: "_Scope | None" = None):
        self.vars: dict[str, Any] = {}
        self.parent = parent

    def lookup(self, name: str) -> Any:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            scope = scope.parent
        return _MISSING

    def assign(self, name: str, value: Any) -> bool:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.vars:
                scope.vars[name] = value
                return True
            scope = scope.parent
        return False


class Template:
    """A parsed template; :meth:`expand` runs it on data (a mapping).

    Raises :class:`TemplateError` at parse time for syntax kubesched does not
    expand, and at expansion for bad values (unknown variable, printing a
    missing key, a function given a non-number)."""

    def __init__(self, text: str, where: str = "template"):
        self.where = where
        self.static = "{{" not in text
        self._text = text
        self._nodes = _Parser(text, where).parse()

    def expand(self, data: dict[str, Any]) -> str:
        """The template's output for ``data`` (e.g. ``{"Index": 3, "Count": 10}``)."""
        if self.static:
            return self._text
        out: list[str] = []
        scope = _Scope()
        scope.vars["$"] = data
        self._run(self._nodes, data, scope, out)
        return "".join(out)

    # -- nodes --

    def _run(self, nodes: list, dot: Any, scope: _Scope, out: list[str]) -> None:
        for node in nodes:
            if isinstance(node, _Text):
                out.append(node.text)
            elif isinstance(node, _Action):
                value = self._pipeline(node.pipeline, dot, scope, node.source)
                if node.variable is None:
                    if value is _MISSING or value is None:
                        raise TemplateError(self.where, f"{{{{{node.source}}}}}: no value to print")
                    out.append(format_value(value))
                elif node.declare:
                    scope.vars[node.variable] = value
                elif not scope.assign(node.variable, value):
                    raise TemplateError(self.where, f"{{{{{node.source}}}}}: undefined variable {node.variable}")
            else:
                self._block(node, dot, scope, out)

    def _block(self, node: _Block, dot: Any, scope: _Scope, out: list[str]) -> None:
        value = self._pipeline(node.pipeline, dot, scope, node.source)
        if node.kind == "if":
            chosen = node.body if truth(None if value is _MISSING else value) else node.otherwise
            self._run(chosen, dot, _Scope(scope), out)
            return
        if node.kind == "with":  # the body with . set to the value, when it is true
            present = value is not _MISSING and truth(value)
            self._run(node.body if present else node.otherwise, value if present else dot, _Scope(scope), out)
            return
        keys: list = []
        if value is _MISSING or value is None:
            items: list = []
        elif isinstance(value, bool):
            raise TemplateError(self.where, f"{{{{{node.source}}}}}: range can't iterate over {value!r}")
        elif isinstance(value, int):
            items = list(range(value))
            keys = items
        elif isinstance(value, float) and value.is_integer():
            raise TemplateError(self.where, f"{{{{{node.source}}}}}: range can't iterate over {format_value(value)} "
                                            "(a float: convert it with Int)")
        elif isinstance(value, dict):
            keys = sorted(value)
            items = [value[k] for k in keys]
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            raise TemplateError(self.where, f"{{{{{node.source}}}}}: range can't iterate over {value!r}")
        if not items:
            self._run(node.otherwise, dot, _Scope(scope), out)
            return
        for position, item in enumerate(items):
            inner = _Scope(scope)
            if len(node.variables) == 1:  # range $e := ...: the element
                inner.vars[node.variables[0]] = item
            elif node.variables:  # range $i, $e := ...: the index (or key) and the element
                inner.vars[node.variables[0]] = keys[position] if keys else position
                inner.vars[node.variables[1]] = item
            self._run(node.body, item, inner, out)

    # -- pipelines --

    def _pipeline(self, pipeline: list, dot: Any, scope: _Scope, source: str) -> Any:
        value: Any = _MISSING
        for index, command in enumerate(pipeline):
            piped = () if index == 0 else (value,)
            value = self._command(command, dot, scope, source, piped)
        return value

    def _command(self, command: list, dot: Any, scope: _Scope, source: str, piped: tuple) -> Any:
        head = command[0]
        if head[0] == "ident":
            args = [self._operand(op, dot, scope, source) for op in command[1:]]
            args = [None if a is _MISSING else a for a in args] + list(piped)
            try:
                return FUNCTIONS[head[1]](*args)
            except TemplateError:
                raise
            except (TypeError, ValueError, ZeroDivisionError) as err:
                raise TemplateError(self.where, f"{{{{{source}}}}}: {head[1]}: {err}") from None
        if len(command) > 1 or piped:
            raise TemplateError(self.where, f"{{{{{source}}}}}: can't give arguments to a non-function")
        return self._operand(head, dot, scope, source)

    def _operand(self, operand: tuple, dot: Any, scope: _Scope, source: str) -> Any:
        kind, value = operand
        if kind == "literal":
            return value
        if kind == "group":
            return self._pipeline(value, dot, scope, source)
        if kind == "field":
            return self._fields(dot, value, source) if value != "." else dot
        if kind == "var":
            name, _, path = value.partition(".")
            base = scope.lookup(name)
            if base is _MISSING:
                raise TemplateError(self.where, f"{{{{{source}}}}}: undefined variable {name}")
            return self._fields(base, "." + path, source) if path else base
        raise TemplateError(self.where, f"{{{{{source}}}}}: unexpected {value!r}")

    def _fields(self, base: Any, path: str, source: str) -> Any:
        value = base
        for name in path.split(".")[1:]:
            if value is _MISSING or value is None:
                return _MISSING
            if not isinstance(value, dict):
                raise TemplateError(self.where, f"{{{{{source}}}}}: can't read field {name} of {format_value(value)!r}")
            value = value.get(name, _MISSING)
        return value


@lru_cache(maxsize=256)
def _load(path: str, mtime_ns: int) -> Template:
    try:
        text = decode(read_file_bytes(path, MAX_CONFIG_BYTES), path)
    except InvalidManifest as err:
        raise TemplateError(path, err.problem) from None
    return Template(text, path)


def load_template(path: str | Path) -> Template:
    """The parsed template in the file ``path`` (cached while the file is unchanged).
    Raises :class:`TemplateError` for a missing file or unsupported syntax."""
    path = str(path)
    try:
        mtime = Path(path).stat().st_mtime_ns
    except OSError as err:
        raise TemplateError(path, f"cannot read: {err.strerror or err}") from None
    return _load(path, mtime)


def expand(text: str, data: dict[str, Any], where: str = "template") -> str:
    """Expand the template ``text`` with ``data``; see :class:`Template`."""
    return Template(text, where).expand(data)
