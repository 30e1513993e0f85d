"""The bench's clock covers the collector's first walk over what each cycle leaves alive, at any size.

Left to the collector's threshold, that walk fell inside the window of a large run and after the
clock had stopped for a small one (issue 22): the two sizes were not charged alike.
"""

from __future__ import annotations

import gc

from vcsched import bench
from vcsched.cli import main


def test_each_cycle_pays_for_its_young_collection_inside_the_window(monkeypatch, capsys):
    timeline: list[tuple[str, int]] = []

    def note_collection(phase: str, info: dict) -> None:
        if phase == "start":
            timeline.append(("collection", info["generation"]))

    freeze = bench.freeze_heap
    result = bench.BenchResult

    def freeze_then_open_the_window() -> None:
        freeze()
        timeline.append(("window opens", 0))

    def close_the_window(*args, **kwargs):
        timeline.append(("window closes", kwargs["cycles"]))
        return result(*args, **kwargs)

    monkeypatch.setattr(bench, "freeze_heap", freeze_then_open_the_window)
    monkeypatch.setattr(bench, "BenchResult", close_the_window)
    thresholds = gc.get_threshold()
    gc.set_threshold(10**8)  # no collection of the collector's own accord in so small a run
    gc.callbacks.append(note_collection)
    try:
        # 60 pods of 2 CPUs on 4 nodes of 16: a second cycle finds nothing more to place
        assert main(["bench", "--nodes", "4", "--node-cpu", "16", "--pods", "60", "--cpu", "2",
                     "--max-cycles", "3", "-o", "json"]) == 0
    finally:
        gc.callbacks.remove(note_collection)
        gc.set_threshold(*thresholds)
    capsys.readouterr()
    opened = timeline.index(("window opens", 0))
    closed, cycles = next((i, n) for i, (what, n) in enumerate(timeline) if what == "window closes")
    assert cycles == 2
    assert timeline[opened + 1:closed] == [("collection", 0)] * cycles
