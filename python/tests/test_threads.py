"""Threads: pixflow releases the GIL while it runs, so other Python threads go on meanwhile, and
two threads that each run their own Pipeline of one Engine run at the same time."""
import threading
import time

import numpy as np

import pixflow
from conftest import MEMORY, noise

# About 0.1 to 0.5 s of CPU work on 2 cores: six blurs of a 2048x2048 RGB image.
BLURS = 6
HEAVY = MEMORY + "".join(f'[nodes.b{k}]\nop = "gauss5x5"\ninput = "{"src" if k == 0 else f"b{k - 1}"}"\n'
                         for k in range(BLURS))
LAST = f"b{BLURS - 1}"


def heavy_pipeline(engine):
    p = engine.load_string(HEAVY, "heavy.toml").backend("cpu")
    image = pixflow.empty((2048, 2048, 3), np.uint8)
    image[...] = noise((2048, 2048, 3), seed=1)
    p.input("src", image)
    p.run()  # compiled and warm
    return p


def test_other_threads_run_while_pixflow_runs(engine):
    p = heavy_pipeline(engine)
    # A machine with many cores blurs six 2048x2048 images in a few ms: chain the run with itself
    # (as many runs inside the measured window as it takes to last 0.1 s) rather than guess.
    t0 = time.perf_counter()
    p.run()
    repeats = max(1, int(0.1 / max(time.perf_counter() - t0, 1e-4)) + 1)
    ticks, stop = [], threading.Event()

    def ticker():  # wakes every millisecond; it can only run while nobody holds the GIL for long
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    for _ in range(repeats):
        p.run()
    t1 = time.perf_counter()
    stop.set()
    t.join()
    inside = [x for x in ticks if t0 < x < t1]
    # Holding the GIL for the whole run would allow at most a tick or two (before and after the
    # C++ part); released, the ticker runs about once a millisecond all along.
    assert t1 - t0 > 0.05, "the run is too short to tell"
    assert len(inside) >= 10, f"{len(inside)} ticks during a run of {1e3 * (t1 - t0):.0f} ms: the GIL was held"


def test_two_threads_run_two_pipelines_at_the_same_time(engine):
    long_runs = heavy_pipeline(engine)  # one Engine, two Pipelines
    short_runs = engine.load_string(MEMORY + '[nodes.m]\nop = "maxpool2x2"\ninput = "src"\n'
                                    '[nodes.g]\nop = "gauss5x5"\ninput = "m"\n', "short.toml").backend("cpu")
    want_long = long_runs.run()[LAST].copy()
    want_short = short_runs.run(inputs={"src": noise((256, 300), np.float32, seed=2)})["g"].copy()

    done, span, ok = [], [], {"long": True, "short": True}
    started, finished = threading.Event(), threading.Event()

    def long_worker():
        started.wait()
        t0 = time.perf_counter()
        ok["long"] &= np.array_equal(long_runs.run()[LAST], want_long)
        span.extend([t0, time.perf_counter()])
        finished.set()

    def short_worker():
        started.set()
        while not finished.is_set():
            ok["short"] &= np.array_equal(short_runs.run()["g"], want_short)
            done.append(time.perf_counter())

    threads = [threading.Thread(target=long_worker), threading.Thread(target=short_worker)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ok == {"long": True, "short": True}
    # While one thread is inside its long run, the other finishes short runs of its own. Had the
    # long run held the GIL, no short run could have returned to Python until it was over.
    inside = [x for x in done if span[0] < x < span[1]]
    assert len(inside) >= 5, (f"{len(inside)} short runs finished during a long run of "
                              f"{1e3 * (span[1] - span[0]):.0f} ms: the runs did not overlap")
