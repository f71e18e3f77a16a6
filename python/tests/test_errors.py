"""Errors: pixflow.UserError carries the very lines `pixflow` prints (without its "error: "
prefix) and lists them in .diagnostics; it is a ValueError too. Arrays pixflow cannot take are
refused the same way, naming the input and what would be accepted."""
import numpy as np
import pytest

import pixflow
from conftest import MEMORY, cli, noise


def cli_errors(result):
    """The diagnostics the CLI printed: its stderr's `error: ...` lines without the prefix."""
    return [line[len("error: "):] for line in result.stderr.splitlines() if line.startswith("error: ")]


def test_invalid_pipeline_raises_what_the_cli_prints(engine, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[nodes.src]\nop = "synth"\nwidth = 32\nheight = 16\n'
                   '[nodes.blur]\nop = "gauss5x5"\ninput = "src"\nborder = "mirror"\nsigma = 500\n'
                   '[nodes.pool]\nop = "maxpool2x2"\ninput = "blurr"\n')
    r = cli("validate", bad, check=False)
    assert r.returncode == 1
    expected = cli_errors(r)
    assert len(expected) == 3, r.stderr
    p = engine.load_file(bad)
    with pytest.raises(pixflow.UserError) as e:
        p.run()
    assert str(e.value).splitlines() == expected
    assert [d["text"] for d in e.value.diagnostics] == expected
    d = e.value.diagnostics[0]
    assert d["file"] == str(bad) and d["line"] > 0 and d["node"] in ("blur", "pool")
    assert isinstance(e.value, ValueError) and isinstance(e.value, pixflow.Error)


def test_format_errors_raise_at_load(engine, tmp_path):
    bad = tmp_path / "broken.toml"
    bad.write_text("[nodes.src\nop = 1\n")
    r = cli("validate", bad, check=False)
    with pytest.raises(pixflow.UserError) as e:
        engine.load_file(bad)
    assert str(e.value).splitlines() == cli_errors(r)
    with pytest.raises(pixflow.UserError, match="cannot open the pipeline file"):
        engine.load_file(tmp_path / "missing.toml")


def test_set_and_backend_errors(engine):
    p = engine.load_string(MEMORY + '[nodes.a]\nop = "gauss5x5"\ninput = "src"\n', "api.toml")
    p.input("src", noise((8, 8), seed=1))
    with pytest.raises(pixflow.UserError) as e:
        p.set("a.sigma", -3).compile()
    assert str(e.value) == ('set("a.sigma", -3): node \'a\': sigma = -3 is out of range; expected a number in '
                            "[0.1, 100]")
    assert e.value.diagnostics[0]["node"] == "a"
    with pytest.raises(pixflow.UserError, match=r'backend\("gpu"\): backend is one of auto, cpu, cuda'):
        p.backend("gpu")
    with pytest.raises(TypeError, match=r'set\("a.sigma", value\): value is a bool, an int, a float or a str, not list'):
        p.set("a.sigma", [1])


def test_operator_failing_while_running(engine, tmp_path):
    text = MEMORY + '[nodes.f]\nop = "tp_fail"\ninput = "src"\n'
    if "tp_fail" not in engine.ops():
        pytest.skip("the test plugin planner_ops was not built (PIXFLOW_TEST_PLUGIN_DIR)")
    p = engine.load_string(text, "fail.toml")
    with pytest.raises(pixflow.UserError) as e:
        p.run(inputs={"src": noise((8, 8), seed=1)})
    assert str(e.value) == "fail.toml:3:8: node 'f' (tp_fail on cpu): tp_fail failed on purpose"
    assert e.value.diagnostics[0]["context"] == "tp_fail on cpu"


def test_arrays_pixflow_cannot_take(engine):
    p = engine.load_string(MEMORY + '[nodes.a]\nop = "gauss5x5"\ninput = "src"\n', "api.toml")
    cases = [
        (np.zeros((4, 4), np.int8), 'input("src"): node \'src\': dtype int8 is not one of uint8, uint16, int16, '
                                    "int32, uint32, uint64, float32, float64"),
        (np.zeros((2, 4, 4, 3), np.uint8), "input(\"src\"): node 'src': the array has shape (2, 4, 4, 3); an image "
                                           "is (H, W) or (H, W, C)"),
        (np.zeros((4, 4, 5), np.uint8), "input(\"src\"): node 'src': the array has shape (4, 4, 5); an image is at "
                                        "least 1x1 with 1 to 4 channels"),
        (np.zeros((4, 4), ">u2"), 'input("src"): node \'src\': dtype >u2 is not one of'),
    ]
    for array, message in cases:
        with pytest.raises(pixflow.UserError) as e:
            p.run(inputs={"src": array})
        assert str(e.value).startswith(message), str(e.value)
    with pytest.raises(TypeError, match=r'input\("src"\): a numpy array, an object with __dlpack__'):
        p.run(inputs={"src": object()})
    with pytest.raises(pixflow.UserError, match=r"input\(\"nope\"\): no node 'nope' to bind an image to; its memory nodes: src"):
        p.run(inputs={"nope": np.zeros((4, 4), np.uint8)})


def test_output_errors(engine):
    p = engine.load_string(MEMORY + '[nodes.a]\nop = "gauss5x5"\ninput = "src"\n', "api.toml")
    p.input("src", noise((8, 8), seed=1))
    with pytest.raises(pixflow.UserError, match=r'output\("b"\): no node \'b\'; nodes: src, a'):
        p.run(outputs=["b"])
    with pytest.raises(pixflow.UserError, match=r"output\(\"a\"\): node 'a': the buffer is 4x8 u8 with 1 channel "
                                                r"but the output is 8x8 u8 with 1 channel"):
        p.run(outputs={"a": np.zeros((8, 4), np.uint8)})
    read_only = np.zeros((8, 8), np.uint8)
    read_only.flags.writeable = False
    with pytest.raises(pixflow.UserError, match=r'output\("a"\): node \'a\': the array is read-only'):
        p.run(outputs={"a": read_only})
    with pytest.raises(pixflow.UserError, match="unknown op 'gauss5x6'; did you mean gauss5x5"):
        engine.describe("gauss5x6")
    assert p.run()["a"].shape == (8, 8)  # the pipeline still works after the errors


def test_warnings_of_operators_that_disagree(engine):
    # Quantize at 20 and dequantize at 75 run (one by one, not fused) but are most likely not what
    # was meant: the pipeline says so, as the CLI's `warning:` lines.
    p = engine.load_string(MEMORY + '[nodes.dct]\nop = "dct8x8"\ninput = "src"\n'
                           '[nodes.q]\nop = "quantize"\ninput = "dct"\nquality = 20\n'
                           '[nodes.dq]\nop = "dequantize"\ninput = "q"\nquality = 75\n'
                           '[nodes.idct]\nop = "idct8x8"\ninput = "dq"\n', "w.toml")
    p.input("src", noise((16, 16), np.float32, seed=3))
    w = p.warnings()
    assert len(w) == 1 and w[0]["node"] == "dq"
    assert w[0]["text"].startswith("w.toml:13:11: node 'dq': quality = 75 but node 'q' (w.toml:9:11) has quality = 20"), w[0]["text"]
    quiet = engine.load_string(MEMORY + '[nodes.b]\nop = "gauss5x5"\ninput = "src"\n', "x.toml")
    assert quiet.input("src", noise((8, 8), seed=1)).warnings() == []
