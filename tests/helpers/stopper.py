"""What the in-run stopper's unit tests share: an index map of one benchmark's rows and a worker that records
what the stopper released and halted (``evalpipe.run.sequential_stop``)."""

from __future__ import annotations

from evalpipe.artifacts.schema.evalscope import IndexMap


def index_map(benchmark: str, n: int) -> IndexMap:
    """``n`` rows of ``benchmark``'s ``main`` subset, source ids ``s00``, ``s01``, …"""
    return IndexMap.model_validate(
        {
            "datasets": [
                {"benchmark": benchmark, "path": "d", "eval_split": "test", "subsets": ["main"], "files": {}}
            ],
            "entries": [
                {
                    "benchmark": benchmark,
                    "subset": "main",
                    "index": i,
                    "source_id": f"s{i:02d}",
                    "record_sha256": "0" * 64,
                    "stratum": "all",
                    "question": "q",
                }
                for i in range(n)
            ],
        }
    )


class Recorder:
    """The worker as the stopper sees it: what was released (never shrinking) and halted."""

    def __init__(self) -> None:
        self.released: dict[str, int] = {}
        self.halted: set[str] = set()

    def release(self, benchmark: str, units: int) -> None:
        assert units >= self.released.get(benchmark, 0)
        self.released[benchmark] = units

    def halt(self, benchmark: str) -> None:
        self.halted.add(benchmark)
