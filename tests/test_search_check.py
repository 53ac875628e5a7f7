"""search-check's bookkeeping on the CPU: the verdict, and fresh processes that fail or answer."""
import pytest

import submission
from scripts import search_check

SWEEP = {(1024, 1): 10.0, (2048, 4): 9.95, (4096, 8): 10.3, (4096, 2, "cuda"): 9.96}


@pytest.mark.parametrize("picks,agree,holds", [
    ([(1024, 1, None)] * 3, True, True),  # the heuristic, 0.5% off the best: inside a 1% margin
    ([(4096, 8, None)] * 3, True, False),  # the same pick each time, 3.5% off the best
    ([(1024, 1, None), (2048, 4, None), (1024, 1, None)], False, False),  # the processes disagree
    ([(1024, 1, "--apply-controls /opt/booster_pack/a.acf")] * 3, True, False),  # the sweep cannot time a control file
    ([(4096, 2, "cuda")] * 3, True, True),  # a CUDA pick is looked up as itself, not as the Triton tile
    ([(4096, 8, "cuda")] * 3, True, False),  # a build the sweep did not time has no ratio
], ids=["heuristic-in-margin", "stable-but-slow", "disagree", "control-file", "cuda-pick", "untimed-build"])
def test_verdict(picks, agree, holds):
    entry = search_check.verdict(picks, SWEEP, margin=0.01)
    assert entry["agree"] is agree and entry["holds"] is holds
    assert entry["sweep_best"] == [2048, 4] and entry["sweep_best_us"] == 9.95
    key = tuple(v for v in picks[0] if v is not None)
    assert entry["pick_vs_sweep_best"][0] == (pytest.approx(SWEEP[key] / 9.95) if key in SWEEP else None)
    table = search_check.format_table({"1x2560x2048": entry}, 0.01)
    assert ("holds" if holds else "MISSED") in table.splitlines()[1]


def test_fresh_searches_read_each_process_and_name_the_one_that_fails(monkeypatch):
    monkeypatch.setattr(search_check, "_CHILD", "import json, sys; print('noise'); print(json.dumps({'pick': json.loads(sys.argv[1])['B']}))")
    assert search_check.fresh_searches({"B": 3}, 2, submission.TUNE_ENV) == [{"pick": 3}, {"pick": 3}]
    monkeypatch.setattr(search_check, "_CHILD", "import sys; sys.stderr.write('boom\\n'); sys.exit(3)")
    with pytest.raises(RuntimeError, match=r"process 1 of 2 failed \(exit 3\): boom"):
        search_check.fresh_searches({"B": 3}, 2, submission.TUNE_ENV)


def test_the_child_runs_with_the_search_switched_on(monkeypatch):
    monkeypatch.setenv(submission.TUNE_ENV, "0")
    monkeypatch.setattr(search_check, "_CHILD", f"import json, os; print(json.dumps(os.environ.get('{submission.TUNE_ENV}')))")
    assert search_check.fresh_searches({}, 1, submission.TUNE_ENV) == [None]


@pytest.mark.parametrize("timed,first,rest", [
    ({"1024/1": 22.24, "4096/2 cuda": 22.47, "2048/1 cuda": 22.39, "1024/2": 22.64}, 22.24 / 22.25, 22.47 / 22.07),
    ({"1024/1": 10.0}, 1.0, None),  # one candidate timed: no rest
    ({"1024/1 +a.acf": 9.0, "1024/1": 10.0}, 1.0, None),  # a control file the sweep cannot time is left out
    ({}, None, None),
], ids=["run26-like", "one-timed", "control-file-first", "nothing-timed"])
def test_timed_vs_sweep_sets_the_first_candidate_against_the_rest(timed, first, rest):
    sweep = {"1024/1": 22.25 if "4096/2 cuda" in timed else 10.0, "4096/2 cuda": 22.07, "2048/1 cuda": 21.96, "1024/2": 22.31}
    got = search_check.timed_vs_sweep(timed, sweep)
    assert got["first"] == (pytest.approx(first) if first is not None else None)
    assert got["rest"] == (pytest.approx(rest) if rest is not None else None)


def test_the_table_prints_each_process_first_candidate_and_rest_over_the_sweep():
    entry = search_check.verdict([(1024, 1, None)] * 2, SWEEP, margin=0.01)
    entry["timed_vs_sweep"] = [{"first": 0.999, "rest": 1.021}, {"first": 1.0, "rest": None}]
    table = search_check.format_table({"1x2560x4096": entry}, 0.01)
    assert "  1x2560x4096   0.999 / 1.021, 1.000 / -" in table.splitlines(), table


def test_the_table_keeps_its_columns_apart_when_picks_name_long_builds():
    sweep = {(4096, 2, "cuda-ef"): 10.0, (2048, 1, "cuda"): 10.05}
    entry = search_check.verdict([(4096, 2, "cuda-ef")] * 3, sweep, margin=0.01)
    header, row = search_check.format_table({"1x2560x4096": entry}, 0.01).splitlines()[:2]
    picks = "4096/2 cuda-ef, 4096/2 cuda-ef, 4096/2 cuda-ef"
    assert row.split("  ")[0] == "1x2560x4096" and f"  {picks}  " in row, row
    assert row.index(picks) == header.index("picks") and row.index("1.000") == header.index("pick / best"), (header, row)
