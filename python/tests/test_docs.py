"""docs/python.md shows python/examples/*.py as they are, and the numpy example runs and checks
its own results (torch_blur.py runs in test_gpu.py, where there is a GPU)."""
import os
import re
import subprocess
import sys

from conftest import PLUGINS, SOURCE


def test_page_shows_the_example_files_verbatim():
    page = (SOURCE / "docs" / "python.md").read_text()
    shown = re.findall(r"<!-- file: (\S+) -->\n```python\n(.*?)```\n", page, re.S)
    assert {name for name, _ in shown} == {"python/examples/blur.py", "python/examples/torch_blur.py"}
    for name, text in shown:
        assert text == (SOURCE / name).read_text(), f"docs/python.md and {name} differ"


def test_numpy_example_runs():
    env = dict(os.environ, PIXFLOW_PLUGIN_PATH=str(PLUGINS))
    r = subprocess.run([sys.executable, str(SOURCE / "python" / "examples" / "blur.py")], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "ok: 640x480 -> 320x240, twice"
    # On the CPU the output is written into the caller's array in place; where the nodes ran on
    # CUDA (a GPU machine, backend "auto") it is copied there after the run, and the report says so.
    ran_on_cuda = any(line.split()[2:3] == ["cuda"] for line in r.stdout.splitlines())
    assert ("copies: none" in r.stdout) != ran_on_cuda, r.stdout
