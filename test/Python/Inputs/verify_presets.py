"""Driver of presets-verify.py: every preset of `python3 -m braid.models --list`
(tiny test models and published ones at their default sizes) must parse and
verify in braid-opt, and the compiler's parameter count must equal the
builder's (`--count-params`).

    python3 verify_presets.py BRAID_OPT

Prints one `ok <preset> ...` line per preset and a summary; on the first
failure prints `FAIL: <preset>: ...` and exits 1.
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from braid_stats import CheckError, cli_text, model_stats, preset_names, run_checks  # noqa: E402


def main(braid_opt):
    names = preset_names()
    if not names:
        raise CheckError("--list printed no presets")
    for name in names:
        stats = model_stats(braid_opt, cli_text([name]), name)
        count = int(cli_text([name, "--count-params"]))
        if stats.get("config.name") != name:
            raise CheckError(f"{name}: config.name is {stats.get('config.name')!r}")
        if stats.get("parameters") != count:
            raise CheckError(f"{name}: braid-opt counts {stats.get('parameters')} parameters, "
                             f"the builder {count}")
        print(f"ok {name} parameters {count} layers {stats['layers']}")
    print(f"verified {len(names)} presets")


if __name__ == "__main__":
    run_checks(lambda: main(sys.argv[1]))
