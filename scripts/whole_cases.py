"""A measurement over several cases that keeps the cases it finished when Ctrl-C, SIGTERM or SIGHUP ends it.

tiles and search-check spend minutes a case on a GPU, and a device call cut off by its time limit ends them
with SIGTERM: the cases already measured are written, the one under way is dropped whole (a case half timed
would compare its configs over unlike rounds). Before the first case ends the interrupt goes on up, since
nothing was measured.
"""
from dataclasses import dataclass

import eval as harness


@dataclass
class CasesRun:
    """{case label: what the case measured} for the cases that finished, how many were asked and finished (a case
    named twice is measured twice and kept once), and the Interrupted that ended the run early (None where
    every case ran)."""
    results: dict
    asked: int
    done: int
    stop: harness.Interrupted | None = None

    def record(self) -> dict:
        """The record's "cases_run" field: how many cases were asked, how many finished, and the signal."""
        return {"asked": self.asked, "done": self.done, "interrupted": self.stop.name if self.stop else None}

    def interrupted_line(self, path) -> str:
        return (f"interrupted ({self.stop.name}) after {self.done} of {self.asked} cases: the cases that "
                f"finished are above and in {path}; the one under way was dropped")


def run_cases(cases: list[dict], measure) -> CasesRun:
    """measure(args) for each case in turn, keyed by the case's label."""
    results, done, stop = {}, 0, None
    try:
        for args in cases:
            results[harness.case_label(args)] = measure(args)
            done += 1
    except KeyboardInterrupt as interrupt:
        if not done:
            raise
        stop = harness.interrupted_of(interrupt)
    return CasesRun(results, len(cases), done, stop)
