"""The exceptions of Braid's Python API (pure Python: importable without braid._braid).

Every failure of the documented functions is a BraidError. The argument errors
are also the built-in exception Python code would expect for them (ValueError,
TypeError, FileNotFoundError), so that `except ValueError` written for an
earlier release, or around any Python library, still catches them.
"""

from __future__ import annotations

import difflib
from typing import Iterable


class BraidError(RuntimeError):
    """A failure reported by Braid: the compiler's or the run's message, or an
    argument the API cannot take."""


class ArgumentError(BraidError, ValueError):
    """An argument the API cannot take: an unknown option or model, a value
    out of range. Raised before anything is compiled; the message names the
    argument, the value and what is accepted."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type."""


class PathNotFoundError(ArgumentError, FileNotFoundError):
    """A file the arguments name does not exist (`.filename` is its path)."""

    def __init__(self, message: str, path: str):
        # FileNotFoundError's (errno, strerror, filename) form would print
        # "[Errno None]"; the message alone is the text, the path an attribute.
        super().__init__(message)
        self.filename = path

    def __str__(self) -> str:
        return self.args[0]


class DependencyError(BraidError, ImportError):
    """What a function needs is not installed: braid._braid (the bindings over
    the C API) or a package from PyPI (safetensors for braid.checkpoint)."""


def closest(word: str, choices: Iterable[str], n: int = 3) -> list:
    """The choices most like `word` (difflib's ratio, best first), for a
    "did you mean" hint; also matches when only '_' and '-' differ."""
    choices = list(choices)
    norm = {c.replace("-", "_").lower(): c for c in choices}
    exact = norm.get(word.replace("-", "_").lower())
    found = difflib.get_close_matches(word, choices, n=n, cutoff=0.6)
    if exact and exact not in found:
        found = [exact] + found[:n - 1]
    return found


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """ "; did you mean 'x' or 'y'?" for the closest choices, else ""."""
    found = closest(word, choices)
    if not found:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in found) + "?"
