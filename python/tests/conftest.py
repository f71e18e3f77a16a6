"""Shared fixtures of the Python module's tests (CTest runs each test_*.py file, with the build
tree's module, CLI and plugins named in the environment; see python/CMakeLists.txt).

Environment (each defaults to the build tree `build/` next to python/):
  PIXFLOW_BUILD_DIR        the build tree
  PIXFLOW_BIN              the pixflow CLI
  PIXFLOW_PLUGIN_DIR       the plugin folder (default <build>/lib/pixflow/plugins)
  PIXFLOW_TEST_PLUGIN_DIR  the test plugins (tests/test_plugins of the build tree)
  PIXFLOW_SOURCE_DIR       the source tree
"""
import os
import pathlib
import subprocess

import numpy as np
import pytest

import pixflow

SOURCE = pathlib.Path(os.environ.get("PIXFLOW_SOURCE_DIR") or pathlib.Path(__file__).resolve().parents[2])
BUILD = pathlib.Path(os.environ.get("PIXFLOW_BUILD_DIR") or SOURCE / "build")
BIN = pathlib.Path(os.environ.get("PIXFLOW_BIN") or BUILD / "bin" / "pixflow")
PLUGINS = pathlib.Path(os.environ.get("PIXFLOW_PLUGIN_DIR") or BUILD / "lib" / "pixflow" / "plugins")
TEST_PLUGINS = pathlib.Path(os.environ.get("PIXFLOW_TEST_PLUGIN_DIR") or BUILD / "tests" / "test_plugins")

# The body of the pipelines the tests run both here and through `pixflow run`: blur twice, pool,
# gray. The source node (memory here, load there) is put in front by each caller.
CHAIN = """
[nodes.a]
op = "gauss5x5"
input = "src"
sigma = 1.2
[nodes.b]
op = "gauss5x5"
input = "a"
border = "zero"
[nodes.pool]
op = "maxpool2x2"
input = "b"
[nodes.gray]
op = "grayscale"
input = "pool"
"""
MEMORY = '[nodes.src]\nop = "memory"\n'


@pytest.fixture(scope="session")
def engine():
    paths = [PLUGINS]
    planner_ops = TEST_PLUGINS / "pixflow_test_planner_ops.so"
    if planner_ops.exists():
        paths.append(planner_ops)
    return pixflow.Engine(paths)


def cli(*args, check=True):
    """Runs the pixflow CLI with the same plugins; returns the CompletedProcess."""
    paths = [str(PLUGINS)]
    planner_ops = TEST_PLUGINS / "pixflow_test_planner_ops.so"
    if planner_ops.exists():
        paths.append(str(planner_ops))
    cmd = [str(BIN)] + [a for p in paths for a in ("--plugin-path", p)] + [str(a) for a in args]
    env = dict(os.environ, PIXFLOW_PLUGIN_PATH="")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr}")
    return r


def noise(shape, dtype=np.uint8, seed=0):
    """A deterministic random image of `shape` and `dtype`."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.random(shape, dtype=np.float64).astype(dtype)
    return rng.integers(0, np.iinfo(dtype).max, size=shape, dtype=dtype, endpoint=True)


def copies(report):
    """The report's notes that say a buffer was copied (by the library or by this module)."""
    return [n for n in report["notes"] if "copied" in n]
