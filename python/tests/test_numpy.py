"""numpy in and out: results equal `pixflow run` bit for bit, inputs read and outputs written in
place (the output's memory is the buffer pixflow wrote; no copy note in the report), strided rows
passed as a pitch, arrays not contiguous within a row copied and said so, every dtype mapped."""
import numpy as np
import pytest

import pixflow
from conftest import CHAIN, MEMORY, SOURCE, cli, copies, noise


@pytest.mark.parametrize("dtype,channels", [(np.uint8, 3), (np.uint16, 4), (np.float32, 1)])
def test_result_equals_pixflow_run_bit_for_bit(engine, tmp_path, dtype, channels):
    shape = (45, 67, channels) if channels > 1 else (45, 67)
    image = noise(shape, dtype, seed=11)
    np.save(tmp_path / "in.npy", image)
    body = CHAIN.replace('[nodes.gray]\nop = "grayscale"\ninput = "pool"\n', "") if channels != 3 else CHAIN
    last = "gray" if channels == 3 else "pool"
    (tmp_path / "cli.toml").write_text(f'[nodes.src]\nop = "load"\npath = "{tmp_path / "in.npy"}"\n' + body +
                                       f'[nodes.out]\nop = "save"\ninput = "{last}"\npath = "{tmp_path / "out.npy"}"\n')
    cli("run", tmp_path / "cli.toml", "--backend", "cpu")
    expected = np.load(tmp_path / "out.npy")

    p = engine.load_string(MEMORY + body, "py.toml").backend("cpu")
    out = p.run(inputs={"src": image})
    assert list(out) == [last]
    got = out[last]
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


def test_pipeline_file_with_overrides_equals_pixflow_run(engine, tmp_path):
    blur = SOURCE / "pipelines" / "blur.toml"
    cli("run", blur, "--backend", "cpu", "--set", "blur.sigma=2", "--set", f"out.path={tmp_path / 'cli.npy'}")
    p = engine.load_file(blur).backend("cpu").set("blur.sigma", 2.0).set(f"out.path={tmp_path / 'py.npy'}")
    out = p.run(outputs=["blur"])
    expected = np.load(tmp_path / "cli.npy")
    assert out["blur"].tobytes() == expected.tobytes()
    assert np.load(tmp_path / "py.npy").tobytes() == expected.tobytes()  # its save node ran too
    assert p.report()["outputs"] == [str(tmp_path / "py.npy")]


def test_aligned_input_and_outputs_are_used_in_place(engine):
    image = pixflow.empty((48, 64, 3), np.uint8)
    image[...] = noise((48, 64, 3), seed=3)
    p = engine.load_string(MEMORY + CHAIN, "py.toml").backend("cpu")
    out = p.run(inputs={"src": image}, outputs=["a", "gray"])
    report = p.report()
    assert copies(report) == []
    assert report["transfers"] == {"h2d": {"count": 0, "bytes": 0.0}, "d2h": {"count": 0, "bytes": 0.0}}
    for name, arr in out.items():
        # The array is a view of the pixflow.Array the node wrote into: same address, no copy.
        assert isinstance(arr.base, pixflow.Array), name
        assert arr.__array_interface__["data"][0] == arr.base.data_ptr
        assert arr.ctypes.data % 64 == 0
        assert arr.flags.c_contiguous
    assert out["a"].shape == (48, 64, 3) and out["gray"].shape == (24, 32)


def test_outputs_written_into_caller_arrays(engine):
    image = pixflow.empty((40, 60, 3), np.uint8)
    image[...] = noise((40, 60, 3), seed=4)
    p = engine.load_string(MEMORY + CHAIN, "py.toml").backend("cpu")
    want = p.run(inputs={"src": image})["gray"]

    dest = pixflow.zeros((20, 30), np.uint8)
    got = p.run(outputs={"gray": dest})
    assert got["gray"] is dest
    assert np.array_equal(dest, want)
    assert copies(p.report()) == []  # written by the node itself

    big = np.zeros((20, 40), np.uint8)
    odd = big[:, 1:31]  # rows 40 bytes apart, starting 1 byte off alignment
    p.run(outputs={"gray": odd})
    assert np.array_equal(odd, want)
    notes = copies(p.report())
    assert len(notes) == 1 and notes[0].startswith('output("gray"): copied into the caller\'s buffer after the run')


def test_strided_rows_are_a_pitch_and_unaligned_memory_is_staged(engine):
    image = noise((30, 50, 3), seed=5)
    p = engine.load_string(MEMORY + CHAIN, "py.toml").backend("cpu")
    want = p.run(inputs={"src": image})["gray"]
    wide = pixflow.zeros((30, 64, 3), np.uint8)
    wide[:, :50] = image
    got = p.run(inputs={"src": wide[:, :50]})["gray"]  # rows 192 bytes apart: passed as the pitch
    assert np.array_equal(got, want)
    notes = copies(p.report())
    assert len(notes) == 1, notes  # the library's staging copy (its rows must be packed), not this module's
    assert notes[0].startswith('input("src"): copied into a staging buffer; memory is read in place when it lies on '
                               "the host, with packed rows that start 64-byte aligned")


def test_array_not_contiguous_within_a_row_is_copied_and_said_so(engine):
    image = noise((30, 100, 3), seed=6)
    p = engine.load_string(MEMORY + CHAIN, "py.toml").backend("cpu")
    every_other = image[:, ::2]
    want = p.run(inputs={"src": np.ascontiguousarray(every_other)})["gray"]
    got = p.run(inputs={"src": every_other})["gray"]
    assert np.array_equal(got, want)
    notes = copies(p.report())
    assert any(n.startswith('input("src"): copied by the Python module: the array is not contiguous within a row '
                            "(shape (30, 50, 3), strides (300, 6, 1) bytes)") for n in notes), notes


@pytest.mark.parametrize("name", sorted(pixflow.DTYPES))
def test_every_dtype_round_trips(engine, name):
    dtype = pixflow.DTYPES[name]
    image = pixflow.empty((5, 7, 2), dtype)
    image[...] = noise((5, 7, 2), dtype, seed=7)
    p = engine.load_string(MEMORY + '[nodes.c]\nop = "convert"\ninput = "src"\n', "py.toml").backend("cpu")
    p.set("c.dtype", name).input("src", image)
    assert p.shape("c") == dict(width=7, height=5, channels=2, dtype=name, device=-1)
    out = p.run()["c"]
    assert out.dtype == dtype and out.shape == (5, 7, 2)
    assert out.tobytes() == image.tobytes()


def test_one_channel_is_two_dimensional(engine):
    p = engine.load_string(MEMORY + '[nodes.b]\nop = "gauss5x5"\ninput = "src"\n', "py.toml").backend("cpu")
    assert p.run(inputs={"src": noise((9, 11), seed=1)})["b"].shape == (9, 11)
    assert p.run(inputs={"src": noise((9, 11, 1), seed=1)})["b"].shape == (9, 11)


def test_arrays_instead_of_numpy(engine):
    p = engine.load_string(MEMORY + '[nodes.b]\nop = "gauss5x5"\ninput = "src"\n', "py.toml").backend("cpu")
    image = noise((9, 11, 3), seed=2)
    arr = p.run(inputs={"src": image}, numpy=False)["b"]
    assert isinstance(arr, pixflow.Array)
    assert arr.shape == (9, 11, 3) and arr.dtype == "u8" and arr.device == -1
    view = np.asarray(arr)
    assert view.ctypes.data == arr.data_ptr
    assert np.array_equal(view, p.run(inputs={"src": image})["b"])
    assert not hasattr(arr, "__cuda_array_interface__")


def test_ops_describe_and_overrides(engine):
    assert {"gauss5x5", "memory", "maxpool2x2"} <= set(engine.ops())
    d = engine.describe("gauss5x5")
    assert d["name"] == "gauss5x5" and "cpu" in d["backends"]
    text = cli("describe", "gauss5x5").stdout
    assert f"{d['name']}: {d['doc']}" in text
    for q in d["params"]:
        line = (f"{q['name']} ({q['type']}, " + ("required" if q["required"] else f"default {q['default']}") +
                (f"; {q['accepted']}" if q["accepted"] else "") + f"): {q['doc']}")
        assert line in text, line
    p = engine.load_string(MEMORY + '[nodes.b]\nop = "gauss5x5"\ninput = "src"\n', "py.toml").backend("cpu")
    image = noise((16, 16), seed=8)
    runs = [p.set("b.sigma", 2.5).run(inputs={"src": image})["b"],
            p.set("b.sigma=2.5").run()["b"],
            p.set("b.border", "zero").run()["b"]]
    assert np.array_equal(runs[0], runs[1]) and not np.array_equal(runs[1], runs[2])
    assert "gauss5x5" in p.graphviz()
