"""The CEL parser: celpy's Lark grammar with the optional-selection syntax (``.?``, ``[?]``) added."""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

import celpy.celparser
import lark

from .errors import CelCompileError

_parser_lock = threading.Lock()
_parser: lark.Lark | None = None
_optional_syntax = False


def _grammar() -> tuple[str, bool]:
    """celpy's grammar plus two ``member`` alternatives for ``.?`` and ``[?``.
    If celpy's grammar no longer has the expected rule, the optional syntax is
    left out (and reported as a compile error by the checker)."""
    text = (Path(celpy.celparser.__file__).parent / "cel.lark").read_text()
    rule = re.compile(r"^(member\s*:\s*member_dot\s*\|\s*member_dot_arg\s*\|)", re.M)
    if not rule.search(text) or "member_dot_opt" in text:
        return text, False
    text = rule.sub(r"\1 member_dot_opt | member_index_opt |", text, count=1)
    text += '\nmember_dot_opt : member ".?" IDENT\nmember_index_opt : member "[" "?" expr "]"\n'
    return text, True


def _get_parser() -> lark.Lark:
    """Build the Lark LALR parser once per process (~0.3 s)."""
    global _parser, _optional_syntax
    if _parser is None:
        with _parser_lock:
            if _parser is None:
                text, optional = _grammar()
                try:
                    parser = _build_parser(text)
                except lark.exceptions.GrammarError:
                    text, optional = (Path(celpy.celparser.__file__).parent / "cel.lark").read_text(), False
                    parser = _build_parser(text)
                if sys.getrecursionlimit() < 2500:  # the interpreter recurses per tree level (celpy does the same)
                    sys.setrecursionlimit(2500)
                _optional_syntax = optional
                _parser = parser
    return _parser


def _build_parser(text: str) -> lark.Lark:
    return lark.Lark(
        text,
        parser="lalr",
        start="expr",
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": celpy.celparser.CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
    )


def _parse(expression: str) -> lark.Tree:
    parser = _get_parser()
    try:
        return parser.parse(expression)
    except lark.exceptions.UnexpectedInput as err:
        line, column = getattr(err, "line", "?"), getattr(err, "column", "?")
        if isinstance(err, lark.exceptions.UnexpectedCharacters):
            start = err.pos_in_stream or 0
            what = f"token recognition error at: {expression[start:start + 1]!r}"
        elif isinstance(err, lark.exceptions.UnexpectedToken):
            what = "unexpected end of input" if err.token.type == "$END" else f"Syntax error: mismatched input {str(err.token)!r}"
        else:
            what = "Syntax error"
        try:
            context = err.get_context(expression).rstrip("\n")
        except Exception:  # some lark errors carry no position
            context = ""
        raise CelCompileError(f"ERROR: <input>:{line}:{column}: {what}\n{context}", expression) from None
    except lark.exceptions.LarkError as err:
        raise CelCompileError(f"ERROR: <input>: Syntax error: {str(err).splitlines()[0]}", expression) from None


def optional_syntax_enabled() -> bool:
    """True when the parser accepts the optional-selection syntax (builds the parser first)."""
    _get_parser()
    return _optional_syntax
