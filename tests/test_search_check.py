"""search-check's bookkeeping on the CPU: the verdict, and fresh processes that fail or answer."""
import json
import signal
import statistics
import types

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
    assert entry["best"] == [2048, 4] and entry["best_us"] == 9.95
    key = tuple(v for v in picks[0] if v is not None)
    assert entry["pick_vs_best"][0] == (pytest.approx(SWEEP[key] / 9.95) if key in SWEEP else None)
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


def test_the_finalists_are_the_sweeps_fastest_then_the_picks_it_can_time():
    sweep = {(1024, 2, "cuda-ef"): 7.28, (2048, 1, "cuda-ef"): 7.33, (1024, 1, "cuda-ef"): 7.36, (4096, 2, "cuda-ef"): 7.53,
             (1024, 1): 7.9}
    picks = [(4096, 2, "cuda-ef"), (4096, 2, "cuda-ef"), (1024, 1, "--apply-controls /opt/booster_pack/a.acf")]
    got = search_check.finalists(sweep, picks, space=list(sweep))
    assert got == [(1024, 2, "cuda-ef"), (2048, 1, "cuda-ef"), (1024, 1, "cuda-ef"), (4096, 2, "cuda-ef")]
    assert search_check.finalists(sweep, [(1024, 2, "cuda-ef")] * 3, space=list(sweep))[-1] == (1024, 1, "cuda-ef")


@pytest.mark.parametrize("retimed_pick_us,holds", [(7.30, True), (7.50, False)], ids=["near-when-retimed", "slow-when-retimed"])
def test_the_verdict_takes_the_retimed_medians_not_the_sweeps_best_draw(monkeypatch, retimed_pick_us, holds):
    """run37: the sweep put 1024/2 cuda-ef 3.5% ahead of the search's pick; re-timed together they may be near."""
    from scripts import tune

    pick = [4096, 2, "cuda-ef"]
    monkeypatch.setattr(search_check, "fresh_searches", lambda args, processes, switch: [
        {"pick": pick, "line": "line", "timed": [[pick, 7.75]]}] * processes)
    sweep = {(1024, 2, "cuda-ef"): 7.28, (2048, 1, "cuda-ef"): 7.33, (1024, 1, "cuda-ef"): 7.36, (4096, 2, "cuda-ef"): 7.53}
    calls = []

    def fake_sweep(module, gpu, cases, space, rep_ms, rounds=1, progress=None, statistic=min):
        calls.append((list(space), rounds, statistic))
        timings = sweep if len(calls) == 1 else {**{c: sweep[c] + 0.02 for c in space}, (4096, 2, "cuda-ef"): retimed_pick_us}
        return {(1, 1536, 2048, 4): {c: timings[c] for c in space}}

    monkeypatch.setattr(tune, "sweep", fake_sweep)
    module = types.SimpleNamespace(gpu_key=lambda index: "h200", TUNE_ENV=submission.TUNE_ENV, TUNE_MARGIN=0.01,
                                   CONFIG_SPACE=list(sweep))
    monkeypatch.setattr(search_check.registry, "load_kernel_file", lambda path, name: module)
    run = search_check.check([dict(B=1, D=1536, S=2048, W=4, seed=1)], processes=3, rounds=2, rep_ms=1)
    assert run.stop is None and run.record() == {"asked": 1, "done": 1, "interrupted": None}
    entry = run.results["1x1536x2048x4"]
    assert len(calls) == 2 and calls[1][1] == search_check.CONFIRM_ROUNDS and calls[1][2] is statistics.median
    assert calls[1][0] == [(1024, 2, "cuda-ef"), (2048, 1, "cuda-ef"), (1024, 1, "cuda-ef"), (4096, 2, "cuda-ef")]
    assert entry["holds"] is holds and entry["best"] == [1024, 2, "cuda-ef"]
    assert entry["sweep_us"]["1024/2 cuda-ef"] == 7.28 and entry["retimed_us"]["4096/2 cuda-ef"] == retimed_pick_us


def test_sigterm_in_the_second_case_keeps_the_first_through_the_cli(tmp_path, monkeypatch):
    """End to end: a device call cut off by its time limit sends SIGTERM; the case that finished is written to
    search_check.json with its verdict, the one under way is dropped, one line says so, exit 143."""
    from click.testing import CliRunner

    import eval as harness
    from scripts import cli, compare as cmp, tune

    cases = [harness.parse_label("1x3x40x4"), harness.parse_label("2x2x33x3")]
    pick = [1024, 1, None]
    monkeypatch.setattr(harness, "gpu_available", lambda: True)
    monkeypatch.setattr(cmp, "resolve_cases", lambda shapes: cases)
    monkeypatch.setattr(search_check, "fresh_searches", lambda args, processes, switch: [
        {"pick": pick, "line": f"picked on {harness.case_label(args)}", "timed": [[pick, 5.0]]}] * processes)
    sweeps = []

    def fake_sweep(module, gpu, cases, space, rep_ms, rounds=1, progress=None, statistic=min):
        sweeps.append(cases[0])
        if len(sweeps) == 3:  # the second case's first sweep
            raise harness.Interrupted(signal.SIGTERM)
        return {(0,): {tuple(c): 5.0 for c in space}}

    monkeypatch.setattr(tune, "sweep", fake_sweep)
    module = types.SimpleNamespace(gpu_key=lambda index: "h200", TUNE_ENV=submission.TUNE_ENV, TUNE_MARGIN=0.01,
                                   CONFIGS={}, CONFIG_SPACE=[(1024, 1), (2048, 4)])
    monkeypatch.setattr(search_check.registry, "load_kernel_file", lambda path, name: module)
    result = CliRunner().invoke(cli.cli, ["search-check", "--out", str(tmp_path)])
    assert result.exit_code == 143, result.output
    assert "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        f"interrupted (SIGTERM) after 1 of 2 cases: the cases that finished are above and in "
        f"{tmp_path / 'search_check.json'}; the one under way was dropped")
    record = json.loads((tmp_path / "search_check.json").read_text())
    assert record["cases_run"] == {"asked": 2, "done": 1, "interrupted": "SIGTERM"}
    assert list(record["cases"]) == ["1x3x40x4"] and record["cases"]["1x3x40x4"]["holds"] is True
    assert "picked on 1x3x40x4" in result.output and "2x2x33x3" not in result.output
