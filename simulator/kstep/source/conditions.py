"""Which lines of a kernel source file a configuration builds: the preprocessor's conditionals
(``#if``, ``#ifdef``, ``#ifndef``, ``#elif``, ``#else``, ``#endif``) evaluated over a set of defined
symbols, as cpp evaluates them: a symbol the configuration does not define is 0 in an ``#if``, and
``IS_ENABLED``/``IS_BUILTIN``/``IS_REACHABLE`` of a defined one is 1 (``IS_MODULE`` is 0: the
configurations name built-in symbols only).

A header may define one macro in several branches (``_PAGE_SOFT_DIRTY`` with and without
``CONFIG_MEM_SOFT_DIRTY``); the configuration of the architecture a lab build models picks the one
that architecture compiles (``kernel-lab/scripts/kernel-functions``).  Only the conditionals are
evaluated: a ``#define`` inside the file does not change what a later ``#if`` sees, which is what
the configurations given here need (their symbols come from Kconfig, not from the file).
"""

from __future__ import annotations

import re
from typing import Mapping

_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")
_TOKEN = re.compile(r"\s*(defined|IS_ENABLED|\d+[uUlL]*|[A-Za-z_]\w*|&&|\|\||==|!=|<=|>=|[()!<>+*-])")


class Undecidable(ValueError):
    """An ``#if`` expression this evaluator does not read (division, shifts, a macro call)."""


def parse_config(text: str) -> dict[str, int]:
    """``"CONFIG_X86_64,CONFIG_PGTABLE_LEVELS=4"`` -> {"CONFIG_X86_64": 1, "CONFIG_PGTABLE_LEVELS": 4}."""
    out = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        out[name] = int(value or 1)
    return out


def evaluate(expr: str, config: Mapping[str, int]) -> bool:
    """An ``#if`` expression's truth under ``config``."""
    expr = expr.split("/*")[0].split("//")[0].strip()
    tokens, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            if expr[pos:].strip() == "":
                break
            raise Undecidable(f"#if {expr}")
        tokens.append(m.group(1))
        pos = m.end()
    out, k = [], 0
    while k < len(tokens):
        tok = tokens[k]
        if tok in ("defined", "IS_ENABLED", "IS_BUILTIN", "IS_REACHABLE", "IS_MODULE"):
            paren = k + 1 < len(tokens) and tokens[k + 1] == "("
            name = tokens[k + 2] if paren else tokens[k + 1]
            # a configuration here names built-in symbols only: none of them is a module
            out.append(str(int(name in config and tok != "IS_MODULE")))
            k += 4 if paren else 2
            continue
        if tok[0].isdigit():
            out.append(str(int(tok.rstrip("uUlL"))))
        elif tok[0].isalpha() or tok[0] == "_":
            out.append(str(config.get(tok, 0)))
        else:
            out.append({"&&": " and ", "||": " or ", "!": " not "}.get(tok, tok))
        k += 1
    try:
        return bool(eval("".join(out) or "0", {"__builtins__": {}}, {}))  # only digits, operators, parentheses
    except SyntaxError:
        raise Undecidable(f"#if {expr}") from None


def built_lines(lines: list[str], config: Mapping[str, int]) -> list[bool]:
    """For each line, whether ``config`` compiles it (directives themselves count as built when
    their branch's parent is)."""
    stack: list[tuple[bool, bool]] = []  # (parent built, some branch of this conditional taken)
    out, active, continued = [], True, False
    for k, line in enumerate(lines):
        m = None if continued else _DIRECTIVE.match(line)
        continued = line.rstrip().endswith("\\") and (continued or line.lstrip().startswith("#"))
        out.append(active)
        if m is None:
            continue
        kind, rest = m.group(1), m.group(2).strip()
        end = k
        while rest.endswith("\\") and end + 1 < len(lines):  # "#if A - \" continued on the next line
            end += 1
            rest = rest[:-1] + " " + lines[end].strip()
        if kind in ("if", "ifdef", "ifndef"):
            name = rest.split()[0] if rest else ""
            truth = (name in config if kind == "ifdef" else name not in config if kind == "ifndef"
                     else active and evaluate(rest, config))
            stack.append((active, active and truth))
            active = active and truth
        elif kind == "elif" and stack:
            parent, taken = stack[-1]
            truth = parent and not taken and evaluate(rest, config)
            stack[-1] = (parent, taken or truth)
            active = truth
        elif kind == "else" and stack:
            parent, taken = stack[-1]
            active = parent and not taken
            stack[-1] = (parent, True)
        elif kind == "endif" and stack:
            active = stack.pop()[0]
    return out
