"""Shared helpers of the test/Python lit tests (this directory is not a test).

The tests import this module after putting test/Python/Inputs on sys.path; lit
sets PYTHONPATH to the source tree's python/, so `braid` is importable, and
passes the path of braid-opt on the command line (lit substitutes the word
`braid-opt` in RUN lines with the tool's full path).
"""

import contextlib
import io
import subprocess
import sys

from braid import models


class CheckError(Exception):
    """A failed check; the message names the model."""


def cli_text(argv):
    """What `python3 -m braid.models ARGV...` prints, run in-process through
    the same `main` (so CLI overrides take the command line's path)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = models.main(list(argv))
    except SystemExit as e:
        rc = e.code
    if rc:
        raise CheckError(f"braid.models {' '.join(argv)} failed ({rc}): {err.getvalue().strip()}")
    return out.getvalue()


def preset_names():
    """The preset names, in the order `--list` prints them."""
    return [line.split()[0] for line in cli_text(["--list"]).splitlines() if line.strip()]


def _parse_value(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def model_stats(braid_opt, text, label):
    """Run `braid-opt --braid-model-stats` on the module `text` (which also
    parses and verifies it) and return its `name: value` lines as a dict of
    int / float / str. Raises CheckError naming `label` if braid-opt fails."""
    proc = subprocess.run([braid_opt, "--braid-model-stats", "-o", "/dev/null", "-"],
                          input=text, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CheckError(f"{label}: braid-opt --braid-model-stats failed "
                         f"(exit {proc.returncode}):\n{proc.stderr.strip()}")
    stats = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition(": ")
        if not sep:
            raise CheckError(f"{label}: unexpected stats line {line!r}")
        stats[key] = _parse_value(value)
    return stats


def preset_stats(braid_opt, argv):
    """Stats of the model `python3 -m braid.models ARGV...` prints."""
    label = " ".join(argv)
    return model_stats(braid_opt, cli_text(argv), label)


def rel_err(got, want):
    return abs(got - want) / abs(want)


def run_checks(checks):
    """Run `checks` (a callable); print a FAIL line and exit 1 on CheckError."""
    try:
        checks()
    except CheckError as e:
        print(f"FAIL: {e}")
        sys.stdout.flush()
        sys.exit(1)
