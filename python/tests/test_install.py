"""cmake --install puts the package under <prefix>/<PIXFLOW_PYTHON_INSTALL_DIR> (docs/python.md),
from where it imports and finds the installed library and plugins, with nothing of the build
tree on its paths."""
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import BUILD

SCRIPT = r"""
import numpy as np, pixflow, sys
assert pixflow.__file__.startswith(sys.argv[1]), pixflow.__file__
e = pixflow.Engine()
assert "gauss5x5" in e.ops(), e.ops()
p = e.load_string('[nodes.src]\nop = "memory"\n[nodes.b]\nop = "gauss5x5"\ninput = "src"\n')
out = p.run(inputs={"src": np.full((8, 8, 3), 9, np.uint8)})["b"]
assert (out == 9).all()
print("installed module ok:", pixflow.__file__)
"""


def test_installed_package_imports_and_runs(tmp_path):
    if not (BUILD / "cmake_install.cmake").exists():
        pytest.skip(f"no build tree to install from at {BUILD} (PIXFLOW_BUILD_DIR)")
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], check=True, capture_output=True)
    site = prefix / os.environ.get("PIXFLOW_PYTHON_INSTALL_DIR", "lib/python%d.%d/site-packages" % sys.version_info[:2])
    assert (site / "pixflow" / "__init__.py").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIXFLOW_PLUGIN_PATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = str(site)
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(site)], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "installed module ok" in r.stdout
