"""Compiling a selector (with an LRU cache of compiled expressions) and evaluating it."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Iterator, Protocol

import celpy.celtypes as ct
import lark
from celpy.evaluation import Activation, CELEvalError, Evaluator, NameContainer

from .checker import _args, _bare_ident, _Checker
from .cost import _CHARS_PER_UNIT, MAX_ESTIMATED_COST, estimate_cost
from .errors import CelCompileError, CelCostError, CelRuntimeError
from .library import _DEVICE_VAR, _FUNCTIONS, _NAMESPACED, _NAMESPACES, _type_name
from .parser import _parse, optional_syntax_enabled
from .values import _OPTIONAL_NONE, DomainMap, _Optional

#: Upstream limit for a selector expression (resource.k8s.io ``CELSelectorExpressionMaxLength``), in bytes of UTF-8.
MAX_EXPRESSION_LENGTH = 10 * 1024

#: Upstream's cost limit of one selector evaluation (resource.k8s.io ``CELSelectorExpressionMaxCost``).
#: kubesched's interpreter charges in the units of the static estimate (:mod:`.cost`), so that
#: no selector the estimate accepts can run out of budget: one unit per operation (a name, a
#: field selection, an index, a call, a literal list or map, each binary or unary operator),
#: and one per ten characters or elements of every string, list or map a call or ``+``
#: produces, the way cel-go charges size-proportional costs.  An expression that loops or grows
#: values without bound stops here instead of running for minutes or filling memory.
MAX_COST = 1_000_000
#: The deepest parse tree a selector may have: evaluation recurses once or twice per level,
#: and Python's stack (1,000 frames, shared with the scheduler that evaluates) must hold it.
#: About 25 levels of nested expressions (``cel.bind`` in ``cel.bind``, ``[1].all(x, [1].all(...))``).
MAX_NESTING = 250
#: The error of an evaluation over :data:`MAX_COST` (cel-go's message).
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"
#: Wall-clock seconds one evaluation may take, beside :data:`MAX_COST` (read at each evaluation, so it
#: can be changed at run time).  Calibrated to this interpreter: it spends about 170 microseconds per
#: cost unit (measured on nested ``.all`` loops at machine factor 1.2), some 1,000 times cel-go's
#: time, so a selector the static estimate admits (up to 1,000,000 units) could run for minutes here
#: where cel-go spends a fraction of a second on its whole budget.  One second is ~6,000 units here
#: (a 32 x 32 loop over a device's attributes fits); past it the evaluation stops with
#: :data:`TIME_LIMIT_EXCEEDED`, a runtime error like the cost limit's (remembered per device content
#: by the selector cache, so it is paid once).
MAX_EVALUATION_SECONDS = 1.0
#: The error of an evaluation over :data:`MAX_EVALUATION_SECONDS` (kubesched's; cel-go's cancellation wording).
TIME_LIMIT_EXCEEDED = "operation cancelled: evaluation time limit exceeded"

#: Entries kept by the compiled-expression cache (upstream's scheduler keeps only 10).
COMPILE_CACHE_SIZE = 1024

# celpy logs every evaluation problem itself; errors reach callers as CelError instead.
logging.getLogger("celpy").setLevel(logging.CRITICAL)


def _error_text(err: CELEvalError) -> str:
    message = str(err.args[0]) if err.args else "evaluation error"
    if message.startswith("undeclared reference to"):
        message = message.split(" (in activation", 1)[0]
    elif message == "no such overload":
        cause = err.__cause__
        detail = str(cause.args[0]) if cause is not None and cause.args else ""
        if detail.startswith("no such overload"):
            message = detail
        elif err.token is not None:
            message = f"no such overload: {err.token}"
    return message


class _CostLimitExceeded(Exception):
    """Raised through the interpreter when an evaluation spends its :data:`MAX_COST`."""


class _TimeLimitExceeded(Exception):
    """Raised through the interpreter when an evaluation runs past :data:`MAX_EVALUATION_SECONDS`."""


class EvaluationAborted(Exception):
    """An evaluation stopped because the caller's deadline (:func:`abort_when`)
    passed: not a property of the device, so never remembered as a result."""


#: Evaluation steps between two looks at the clocks (a step takes tens of microseconds).
DEADLINE_CHECK_STEPS = 256
_deadline: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar("cel_deadline", default=None)


@contextlib.contextmanager
def abort_when(deadline: Callable[[], bool] | None) -> Iterator[None]:
    """Inside the block, an evaluation whose ``deadline()`` turns true stops with
    :class:`EvaluationAborted` (checked every :data:`DEADLINE_CHECK_STEPS`
    steps), so a costly selector cannot hold a scheduling cycle past
    DynamicResourcesArgs.filterTimeout."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


class _Budget:
    """What is left of one evaluation's cost (shared by the macro sub-evaluators),
    when its time is up (``time.monotonic()`` seconds) and the caller's
    deadline, if any."""

    __slots__ = ("left", "deadline", "steps", "next_check", "ends")

    def __init__(self, left: int, deadline: Callable[[], bool] | None = None, seconds: float = float("inf")):
        self.left = left
        self.deadline = deadline
        self.steps = 0
        #: the step count at which the clocks are read next (steps are counted before a node's children
        #: and checked after them, so a check is due once the count reaches this, not at exact multiples)
        self.next_check = DEADLINE_CHECK_STEPS
        self.ends = time.monotonic() + seconds


#: parse-tree nodes that cost one unit each (as the estimate counts them), operator chains one per operator,
#: and the nodes whose new strings, lists and maps cost one unit per ten characters or elements
_OPERATIONS = frozenset({"ident", "member_dot", "member_dot_opt", "member_index", "member_index_opt",
                         "member_dot_arg", "ident_arg", "list_lit", "map_lit"})
_OPERATORS = frozenset({"relation", "addition", "multiplication", "conditionalor", "conditionaland", "unary"})
_PRODUCERS = frozenset({"member_dot_arg", "ident_arg", "addition"})


class _Evaluator(Evaluator):
    """celpy's interpreter plus the DRA rules: ``no such key: <name>`` errors,
    ``cel.bind``, namespaced functions, optional values, and a cost budget
    (:data:`MAX_COST`)."""

    budget = _Budget(MAX_COST)

    #: a macro's body or a ``cel.bind`` body: each evaluation of it costs one unit (an iteration)
    iterating = False

    def sub_evaluator(self, ast: lark.Tree) -> _Evaluator:
        sub = _Evaluator(ast, activation=self.activation)
        sub.budget = self.budget
        sub.iterating = True
        return sub

    def evaluate(self, context: Any = None) -> Any:
        if self.iterating:
            self.budget.left -= 1
            if self.budget.left < 0:
                raise _CostLimitExceeded
        return super().evaluate(context)

    def _visit_tree(self, tree: lark.Tree) -> Any:
        budget = self.budget
        kind = tree.data
        charge = 1 if kind in _OPERATIONS else len(tree.children) - 1 if kind in _OPERATORS else 0
        budget.left -= charge
        budget.steps += 1
        result = super()._visit_tree(tree)
        if kind in _PRODUCERS and isinstance(result, (str, bytes, list, dict)) and charge:
            budget.left -= -(-len(result) // _CHARS_PER_UNIT)
        if budget.left < 0:
            raise _CostLimitExceeded
        if budget.steps >= budget.next_check:
            budget.next_check = budget.steps + DEADLINE_CHECK_STEPS
            if time.monotonic() > budget.ends:
                raise _TimeLimitExceeded
            if budget.deadline is not None and budget.deadline():
                raise EvaluationAborted("filter operation aborted: deadline exceeded")
        return result

    def _logical(self, tree: lark.Tree, absorbing: bool, operator: str) -> Any:
        """cel-go's commutative ``||``/``&&``: the absorbing value (true for ``||``)
        wins over an error on either side, otherwise the left error is reported;
        the right side is not evaluated when the left one decides."""
        if len(tree.children) == 1:
            return self.visit(tree.children[0])
        left = self.visit(tree.children[0])
        if isinstance(left, ct.BoolType) and bool(left) == absorbing:
            return left
        right = self.visit(tree.children[1])
        if isinstance(right, ct.BoolType):
            if bool(right) == absorbing or isinstance(left, ct.BoolType):
                return right
            if isinstance(left, CELEvalError):
                return left
        elif isinstance(left, CELEvalError):
            return left
        elif isinstance(right, CELEvalError) and isinstance(left, ct.BoolType):
            return right
        return CELEvalError(f"no such overload: {_type_name(left)} {operator} {_type_name(right)}", tree=tree)

    def conditionalor(self, tree: lark.Tree) -> Any:
        return self._logical(tree, True, "||")

    def conditionaland(self, tree: lark.Tree) -> Any:
        return self._logical(tree, False, "&&")

    def _select(self, member: Any, name: str, tree: lark.Tree) -> Any:
        if isinstance(member, ct.MapType):
            found, value = _lookup_key(member, name)
            return value if found else CELEvalError(f"no such key: {name}", tree=tree)
        return None

    def member_dot(self, tree: lark.Tree) -> Any:
        member_tree, name_token = tree.children
        member = self.visit(member_tree)
        if isinstance(member, CELEvalError):
            return member
        name = str(name_token)
        if isinstance(member, _Optional):
            if not member.present:
                return member
            inner = self._select(member.value, name, tree)
            if inner is None:
                return CELEvalError(f"no such overload: field selection on {_type_name(member.value)}", tree=tree)
            return inner if isinstance(inner, CELEvalError) else _Optional(inner)
        if isinstance(member, ct.MapType) and not isinstance(member, (ct.MessageType, ct.PackageType)):
            return self._select(member, name, tree)
        if isinstance(member, (NameContainer, ct.MessageType, ct.PackageType)):
            return super().member_dot(tree)
        return CELEvalError(f"no such overload: field selection on {_type_name(member)}", tree=tree)

    def member_dot_opt(self, tree: lark.Tree) -> Any:
        member_tree, name_token = tree.children
        member = self.visit(member_tree)
        if isinstance(member, CELEvalError):
            return member
        if isinstance(member, _Optional):
            if not member.present:
                return member
            member = member.value
        if not isinstance(member, ct.MapType):
            return CELEvalError(f"no such overload: optional field selection on {_type_name(member)}", tree=tree)
        found, value = _lookup_key(member, str(name_token))
        return _Optional(value) if found else _OPTIONAL_NONE

    def _index(self, member: Any, index: Any, tree: lark.Tree, optional: bool) -> Any:
        if isinstance(member, CELEvalError):
            return member
        if isinstance(index, CELEvalError):
            return index
        wrap = optional
        if isinstance(member, _Optional):
            if not member.present:
                return member
            member, wrap = member.value, True
        if isinstance(member, ct.MapType):
            if not ct.MapType.valid_key_type(index):
                return CELEvalError(f"no such overload: map index with {_type_name(index)}", tree=tree)
            found, value = _lookup_key(member, index)
            if not found:
                if optional:
                    return _OPTIONAL_NONE
                return CELEvalError(f"no such key: {index}", tree=tree)
        elif isinstance(member, list):
            if not isinstance(index, int) or isinstance(index, ct.BoolType):
                return CELEvalError(f"no such overload: list index with {_type_name(index)}", tree=tree)
            if not 0 <= index < len(member):
                if optional:
                    return _OPTIONAL_NONE
                return CELEvalError(f"index out of range: {index}", tree=tree)
            value = member[index]
        else:
            return CELEvalError(f"no such overload: index of {_type_name(member)}", tree=tree)
        return _Optional(value) if wrap else value

    def member_index(self, tree: lark.Tree) -> Any:
        member, index = self.visit_children(tree)
        return self._index(member, index, tree, optional=False)

    def member_index_opt(self, tree: lark.Tree) -> Any:
        member, index = self.visit_children(tree)
        return self._index(member, index, tree, optional=True)

    def _is_variable(self, name: str) -> bool:
        try:
            self.activation.identifiers.resolve_name(self.activation.package, name)
        except KeyError:
            return False
        return True

    def member_dot_arg(self, tree: lark.Tree) -> Any:
        namespace = _bare_ident(tree.children[0])
        if namespace in _NAMESPACES and not self._is_variable(namespace):
            name = f"{namespace}.{tree.children[1]}"
            args = _args(tree, 2)
            if name == "cel.bind":
                variable = _bare_ident(args[0]) or ""  # the checker refused a cel.bind without a name
                init = self.visit(args[1])
                nested = self.sub_evaluator(args[2])
                try:
                    return nested.evaluate({variable: init})
                except CELEvalError as err:
                    return err
            function = _NAMESPACED.get(name)
            if function is None:
                return CELEvalError(f"undeclared reference to '{name}'", tree=tree)
            values = [self.visit(arg) for arg in args]
            for value in values:
                if isinstance(value, CELEvalError):
                    return value
            try:
                return function(*values)
            except (TypeError, AttributeError) as err:
                return CELEvalError(str(err) if str(err).startswith("no such overload") else f"no such overload: {name}", tree=tree)
        return super().member_dot_arg(tree)


def _lookup_key(mapping: ct.MapType, key: Any) -> tuple[bool, Any]:
    """``(found, value)``; a :class:`DomainMap` finds every domain (missing ones are empty)."""
    if isinstance(mapping, DomainMap):
        return True, mapping[key]
    if dict.__contains__(mapping, key):
        return True, dict.__getitem__(mapping, key)
    return False, None


# --- compiled selectors --------------------------------------------------------------------


class CelDevice(Protocol):
    """What a selector evaluates: the ``device`` variable as a celpy value
    (:class:`kubesched.core.dra.selectors.DeviceView` builds it from a slice's device)."""

    cel_value: Any


class CompiledSelector:
    """A compiled selector expression (use :func:`compile`, which caches).

    :meth:`matches` evaluates it for one :class:`DeviceView`; it is safe to call
    from several threads (each call gets its own interpreter state).
    ``evaluations`` counts calls, for tests and metrics.
    """

    __slots__ = ("expression", "_ast", "_activation", "evaluations")

    def __init__(self, expression: str, ast: lark.Tree):
        self.expression = expression
        self._ast = ast
        self._activation = Activation(annotations={}, functions=_FUNCTIONS)
        self.evaluations = 0

    def matches(self, device: CelDevice) -> bool:
        """True when the device satisfies the expression.

        Raises :class:`CelRuntimeError` for an evaluation error (``no such key:
        model``, ``no such overload: ...``), an evaluation over :data:`MAX_COST`
        (``operation cancelled: actual cost limit exceeded``), one that runs past
        :data:`MAX_EVALUATION_SECONDS` (``operation cancelled: evaluation time
        limit exceeded (1s)``) and for a result
        that is not a bool (``CEL result of type string could not be converted
        to bool``).
        """
        self.evaluations += 1
        evaluator = _Evaluator(self._ast, self._activation)
        limit = MAX_EVALUATION_SECONDS
        evaluator.budget = _Budget(MAX_COST, _deadline.get(), limit)
        try:
            result = evaluator.evaluate({_DEVICE_VAR: device.cel_value})
        except _CostLimitExceeded:
            raise CelRuntimeError(COST_LIMIT_EXCEEDED, self.expression) from None
        except _TimeLimitExceeded:
            raise CelRuntimeError(f"{TIME_LIMIT_EXCEEDED} ({limit:g}s)", self.expression) from None
        except CELEvalError as err:
            raise CelRuntimeError(_error_text(err), self.expression) from None
        except RecursionError:
            raise CelRuntimeError("expression nested too deeply", self.expression) from None
        except (ArithmeticError, TypeError, ValueError, KeyError, IndexError, AttributeError) as err:
            raise CelRuntimeError(f"{type(err).__name__}: {err}", self.expression) from None
        if isinstance(result, ct.BoolType) or result is True or result is False:
            return bool(result)
        raise CelRuntimeError(f"CEL result of type {_type_name(result)} could not be converted to bool", self.expression)

    def __repr__(self) -> str:
        return f"CompiledSelector({self.expression!r})"


_compile_lock = threading.Lock()
_compiled: OrderedDict[str, CompiledSelector | CelCompileError] = OrderedDict()
_compile_stats = {"hits": 0, "misses": 0}


def compile(expression: str) -> CompiledSelector:  # noqa: A001 - mirrors cel.Env.Compile
    """Compile a DRA selector expression (cached by its text, LRU of
    :data:`COMPILE_CACHE_SIZE`; compile errors are cached too).

    Raises :class:`CelCompileError` for an expression longer than 10 KiB, a
    syntax error, an undeclared function or variable (``undeclared reference
    to 'foo'``), an unknown ``device`` field, an invalid regex literal, a
    malformed macro, or a result type that can never be bool (``must evaluate
    to bool or the unknown type, not int``).
    """
    if not isinstance(expression, str):
        raise TypeError(f"expression must be a string, got {type(expression).__name__}")
    with _compile_lock:
        found = _compiled.get(expression)
        if found is not None:
            _compiled.move_to_end(expression)
            _compile_stats["hits"] += 1
    if found is None:
        _compile_stats["misses"] += 1
        try:
            found = _compile_uncached(expression)
        except CelCompileError as err:
            found = err
        with _compile_lock:
            _compiled[expression] = found
            while len(_compiled) > COMPILE_CACHE_SIZE:
                _compiled.popitem(last=False)
    if isinstance(found, CelCompileError):
        raise type(found)(found.message, expression)
    return found


def compile_cache_info() -> dict[str, int]:
    """``{"hits", "misses", "size"}`` of the compiled-expression cache."""
    with _compile_lock:
        return {**_compile_stats, "size": len(_compiled)}


def _compile_uncached(expression: str) -> CompiledSelector:
    size = len(expression.encode("utf-8"))
    if size > MAX_EXPRESSION_LENGTH:
        raise CelCompileError(
            f"expression too long: {size} bytes, must be at most {MAX_EXPRESSION_LENGTH} (10 KiB)", expression
        )
    if not expression.strip():
        raise CelCompileError("ERROR: <input>:1:1: Syntax error: empty expression", expression)
    ast = _parse(expression)
    depth = _depth(ast)
    if depth > MAX_NESTING:
        raise CelCompileError(f"expression nested too deeply: its syntax tree is {depth} levels deep, "
                              f"this engine evaluates at most {MAX_NESTING}", expression)
    checker = _Checker(expression)
    try:
        result_type = checker.check(ast)
    except RecursionError:
        raise CelCompileError("expression nested too deeply", expression) from None
    if checker.uses_optional and not optional_syntax_enabled():
        raise CelCompileError("optional syntax (.? and [?]) is not supported by this CEL engine", expression)
    if result_type not in ("bool", "dyn"):
        raise CelCompileError(f"must evaluate to bool or the unknown type, not {result_type}", expression)
    cost = estimate_cost(ast)
    if cost > MAX_ESTIMATED_COST:
        raise CelCostError(f"too complex, exceeds cost limit (estimated worst case {cost:,}, "
                           f"limit {MAX_ESTIMATED_COST:,})", expression)
    return CompiledSelector(expression, ast)


def _depth(tree: lark.Tree) -> int:
    """The parse tree's depth, measured without recursion (any depth is safe to measure)."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in node.children if isinstance(child, lark.Tree))
    return deepest
