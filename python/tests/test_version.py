"""braid.__version__ is the compiler's (the C API's braidGetVersion, what the
tools' --version prints), and the Python package declares the same version as
the project (CMakeLists.txt), so that a wheel's metadata and its compiler agree."""

import os
import re
import subprocess

import pytest

import braid

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def project_version():
    text = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    return re.search(r"^project\(braid VERSION ([0-9.]+)", text, re.M).group(1)


def test_pyproject_declares_the_project_version():
    text = open(os.path.join(ROOT, "python", "pyproject.toml")).read()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == project_version()


def test_version_is_the_compilers():
    pytest.importorskip("braid._braid")
    assert braid.__version__ == project_version()
    from braid import _braid
    commit = _braid.commit()
    assert commit == "" or re.fullmatch(r"[0-9a-f]{7,40}", commit)


def test_version_matches_the_tools():
    pytest.importorskip("braid._braid")
    build = os.environ.get("BRAID_BUILD_DIR", os.path.join(ROOT, "build"))
    tool = os.path.join(build, "bin", "braid-opt")
    if not os.path.exists(tool):
        pytest.skip("braid-opt is not built")
    out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    assert out.splitlines()[0] == f"Braid version {braid.__version__}"
