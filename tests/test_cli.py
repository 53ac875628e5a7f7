"""scripts/: the leaderboard loop. Plain functions first, then the CLI end to end with a fake popcorn."""
import json
import re
import signal
import statistics
import textwrap
import time
import types
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import eval as harness
from conftest import DIRECTIVES, GOOD_BODY, ROOT, needs_gpu
from scripts import compare as cmp
from scripts import configs, history, leaderboard, registry, tune



def ok_suite(path):
    return True, ""


# ----------------------------------------------------------------------------- preflight


def test_directives_and_target():
    assert leaderboard.parse_directives(DIRECTIVES) == {"leaderboard": "causal_conv1d", "gpu": "B200_Nebius"}
    board, gpu, notes = leaderboard.resolve_target(DIRECTIVES, None, None)
    assert (board, gpu, notes) == ("causal_conv1d", "B200_Nebius", [])


def test_a_flag_overriding_a_directive_is_reported():
    with pytest.raises(leaderboard.PreflightError, match="not one the causal_conv1d leaderboard runs on"):
        leaderboard.resolve_target(DIRECTIVES, None, "H100")
    text = "#!POPCORN leaderboard causal_conv1d\n#!POPCORN gpu H100\n"
    board, gpu, notes = leaderboard.resolve_target(text, None, "B200_Nebius")
    assert gpu == "B200_Nebius" and "overrides the file's '#!POPCORN gpu H100'" in notes[0]


@pytest.mark.parametrize("text,message", [
    ("import torch\n", "no leaderboard"),
    ("#!POPCORN leaderboard causal_conv1d\n", "no GPU"),
    ("#!POPCORN leaderboard grayscale\n#!POPCORN gpu B200_Nebius\n", "is not 'causal_conv1d'"),
    ("#!POPCORN leaderboard causal_conv1d\n#!POPCORN gpu MI300\n", "not one the causal_conv1d leaderboard runs on"),
])
def test_preflight_refuses_bad_directives(tmp_path, text, message):
    path = tmp_path / "s.py"
    path.write_text(text + GOOD_BODY)
    with pytest.raises(leaderboard.PreflightError, match=message):
        leaderboard.preflight(path, None, None, ok_suite, ROOT, need_popcorn=False)


@pytest.mark.parametrize("line,module,why", [
    ("from scripts import tune", "scripts", "which the runner does not have"),
    ("import cupy as cp", "cupy", "which the runner does not have"),
    ("from . import helper", ".", "which the runner does not have"),
    ("import reference", "reference", "the harness's own files, written beside the submission"),
    ("from utils import set_seed", "utils", "the harness's own files, written beside the submission"),
    ("from fla.ops import causal_conv1d", "fla", "others' kernels, installed on the runner"),
])
def test_preflight_refuses_imports_saying_why_each_is_refused(tmp_path, line, module, why):
    """reference and utils used to be refused as modules 'the runner does not have', which it does have."""
    path = tmp_path / "s.py"
    path.write_text(DIRECTIVES + line + "\n" + GOOD_BODY)
    with pytest.raises(leaderboard.PreflightError, match=f"imports {re.escape(module)}(,| \\(|\\s).*{why}"):
        leaderboard.preflight(path, None, None, ok_suite, ROOT, need_popcorn=False)


def test_preflight_accepts_the_runners_modules_and_the_standard_library():
    text = "import math, functools\nimport numpy as np\nimport triton.language as tl\nimport helion\nfrom task import input_t\n"
    assert leaderboard.foreign_imports(text) == []
    assert leaderboard.foreign_imports((ROOT / "submission.py").read_text()) == []
    assert leaderboard.foreign_imports((ROOT / "submissions" / "submission_helion.py").read_text()) == []


def test_preflight_refuses_a_file_that_fails_the_correctness_suite(tmp_path):
    path = tmp_path / "s.py"
    path.write_text(DIRECTIVES + GOOD_BODY)
    with pytest.raises(leaderboard.PreflightError, match="correctness suite fails: case 3 is wrong"):
        leaderboard.preflight(path, None, None, lambda p: (False, "case 3 is wrong"), ROOT, need_popcorn=False)


def test_the_one_hand_written_caching_warning_is_the_one_kernelguard_lacks():
    """KernelGuard flags pointer keys, id() keys and output caches itself (tests/test_server.py);
    a global rebound at call time is what it lets through, so that stays a warning of ours."""
    text = DIRECTIVES + textwrap.dedent("""
        def custom_kernel(data):
            global _last
            _last = data[0] + 1
            return _last
    """)
    warnings = leaderboard.caching_warnings(text)
    assert len(warnings) == 1 and "line 5 rebinds a global at call time: global _last" in warnings[0]
    assert leaderboard.caching_warnings((ROOT / "submission.py").read_text()) == []


def test_popcorn_command_is_the_plain_mode():
    cmd = leaderboard.popcorn_command("popcorn-cli", "causal_conv1d", "B200_Nebius", "leaderboard", Path("s.py"), Path("o.txt"))
    assert cmd == ["popcorn-cli", "submit", "--no-tui", "--leaderboard", "causal_conv1d", "--gpu", "B200_Nebius",
                   "--mode", "leaderboard", "s.py", "-o", "o.txt"]


def _submitted(status, code=0, message="", runs=()):
    parsed = {"submission_id": 31, "message": message, "runs": list(runs), "scores": []}
    return {"parsed": parsed, "status": status, "code": code, "output": Path("results/remote/x.txt"), "signal": "SIGINT"}


@pytest.mark.parametrize("status,code,expected", [
    ("done", 0, None),
    ("interrupted", harness.INTERRUPTED, (harness.INTERRUPTED, "interrupted (SIGINT)")),
    ("refused", 1, (1, "refused, the deadline passed")),
    ("no score found", 0, (1, "no score found in popcorn's output (exit 0)")),
    ("failed", 2, (1, "popcorn exited with 2, failed")),
    ("hacked", 0, (1, "popcorn exited with 0, hacked")),
    ("done", 3, (1, "popcorn exited with 3, done")),
], ids=["done", "interrupted", "refused", "no-score", "failed", "hacked", "done-but-nonzero-exit"])
def test_a_submit_s_failure_is_its_exit_code_and_one_sentence(status, code, expected):
    failure = leaderboard.submit_failure(_submitted(status, code, message="the deadline passed"))
    if expected is None:
        assert failure is None
    else:
        assert failure[0] == expected[0] and failure[1].startswith(expected[1]) and "x.txt" in failure[1]


def test_the_recorded_line_names_the_id_status_and_each_ranked_run():
    run = {"mode": "leaderboard", "secret": False, "passed": True, "score_us": 13.125, "runner": "B200"}
    line = leaderboard.recorded_line(_submitted("done", runs=[run]))
    assert line.startswith("recorded: submission 31, done") and "leaderboard public 13.12 us on B200" in line


# ----------------------------------------------------------------------------- history


def test_history_round_trip_skips_a_corrupt_line(tmp_path):
    path = tmp_path / "history.jsonl"
    for gpu, geo in (("NVIDIA H200", 13.5), ("NVIDIA H200", 12.9), ("B200_Nebius", None), ("NVIDIA H200", 14.0)):
        history.append_entry({"time": "2026-12-02T12:00:00+00:00", "gpu": gpu, "geomean_us": geo, "outcome": "pass",
                              "source": "eval", "mode": "benchmark", "commit": "abc", "file": "submission.py"}, path)
    with open(path, "a") as f:
        f.write("{not json\n")
    history.append_entry({"time": "2026-12-02T13:00:00+00:00", "gpu": "B200_Nebius", "geomean_us": 10.0,
                          "outcome": "pass"}, path)
    warned = []
    entries = history.read_entries(path, warn=warned.append)
    assert len(entries) == 5 and len(warned) == 1 and "line 5" in warned[0]
    assert history.best_per_gpu(entries) == {"NVIDIA H200": 1, "B200_Nebius": 4}
    table = history.format_table(entries).splitlines()
    assert table[2].startswith("* ") and table[5].startswith("* ") and not table[1].startswith("*")


def test_history_skips_mistyped_entries_in_the_table_and_the_plot(tmp_path):
    path = tmp_path / "history.jsonl"
    good = {"time": "2026-12-02T12:00:00+00:00", "gpu": "NVIDIA H200", "geomean_us": 13.0, "outcome": "pass"}
    for entry in (good, dict(good, geomean_us="13.0"), {k: v for k, v in good.items() if k != "time"},
                  dict(good, time="yesterday"), dict(good, geomean_us=True), ["not", "an", "object"]):
        history.append_entry(entry, path)
    warned = []
    entries = history.read_entries(path, warn=warned.append)
    assert entries == [good] and len(warned) == 5
    assert "line 2" in warned[0] and "geomean_us is str '13.0'" in warned[0]
    assert "no time" in warned[1] and "not an ISO date" in warned[2] and "not an object" in warned[4]


def test_history_appends_start_on_a_new_line(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text('{"time": "2026-12-02T12:00:00+00:00", "gpu": "a", "outcome": "pass"}')  # cut short: no newline
    history.append_entry({"time": "2026-12-02T13:00:00+00:00", "gpu": "b", "outcome": "pass"}, path)
    assert [e["gpu"] for e in history.read_entries(path, warn=pytest.fail)] == ["a", "b"]


def test_history_lines_are_whole_json_objects(tmp_path):
    path = tmp_path / "h.jsonl"
    entry = history.make_entry(source="eval", mode="benchmark", kind="submission", gpu="cpu", file=ROOT / "submission.py",
                               timed_cases=[], geomean_us=1.0, outcome="pass")
    history.append_entry(entry, path)
    line = path.read_text()
    assert line.endswith("\n") and json.loads(line)["file_hash"] == history.file_hash(ROOT / "submission.py")
    assert json.loads(line)["file"] == "submission.py"  # relative: the same on the device and here


def test_an_eval_entry_stores_each_case_s_fields_and_the_seed_it_timed():
    case = harness.parse_tests("B: 1; D: 4; S: 16; W: 3; seed: 7", secret=5)[0]
    run = {"mode": "leaderboard", "passed": True, "geomean_us": 2.0,
           "cases": [{"fields": case.fields(), "stats_ns": {"mean": 2000.0}}, {"fields": case.fields(), "ok": False}]}
    entry = history.eval_entry(run, ROOT / "submission.py", "cpu")
    assert entry["timed_cases"] == [{"B": 1, "D": 4, "S": 16, "W": 3, "seed": 7, "timed_seed": harness.combine_seed(7, 5),
                                     "mean_us": 2.0}]
    assert history.case_times(entry) == entry["timed_cases"]


def test_a_compare_entry_stores_the_fields_of_the_cases_it_ran():
    cases = [harness.parse_label("1x3x40x4"), harness.parse_label("2x2x33x3")]
    summary = {"per_case_us": {"1x3x40x4": 1.5, "2x2x33x3": 2.5}, "geomean_us": None, "vs_copy": None, "vs_floor": None}
    entry = history.compare_entry("submission", "submission", ROOT / "submission.py", summary, cases, "cpu")
    assert [(c["B"], c["W"], c["seed"], c["timed_seed"], c["mean_us"]) for c in entry["timed_cases"]] == [
        (1, 4, 1234, 1234, 1.5), (2, 3, 1234, 1234, 2.5)]


OLD_HISTORY = ROOT / "tests" / "samples" / "history_before_case_fields.jsonl"  # written by commit 3f33097's history.py


@pytest.mark.parametrize("line,expected", [
    (0, [(1, 1536, 2048, 4, 2146, 7.0), (1, 2560, 2048, 4, 3129, 8.0), (1, 2560, 4096, 4, 54352, 9.0)]),
    (1, [(1, 1536, 2048, 4, None, 7.8), (1, 2560, 2048, 4, None, 12.8), (1, 768, 512, 3, None, 3.1)]),
    (2, [(1, 1536, 2048, 4, 2146, 7.84), (1, 2560, 2048, 4, 3129, 1.85), (1, 2560, 4096, 4, 54352, 2500.0)]),
], ids=["eval-runner-lines", "compare-BxDxS-and-W3", "popcorn-server-rows"])
def test_history_lines_of_the_older_format_still_read(line, expected):
    entry = history.read_entries(OLD_HISTORY, warn=pytest.fail)[line]
    times = history.case_times(entry)
    assert [(c["B"], c["D"], c["S"], c["W"], c["seed"], c["mean_us"]) for c in times] == expected
    assert all(c["timed_seed"] is None for c in times)  # those lines did not record the seed timed


def test_one_case_across_the_history_reads_every_form_it_was_written_in():
    entries = history.read_entries(OLD_HISTORY, warn=pytest.fail)
    new = history.eval_entry({"mode": "leaderboard", "passed": True, "geomean_us": 2.0, "cases": [
        {"fields": harness.parse_tests("B: 1; D: 1536; S: 2048; W: 4; seed: 2146")[0].fields(),
         "stats_ns": {"mean": 6500.0}}]}, ROOT / "submission.py", "NVIDIA H200")
    case = new["timed_cases"][0]
    left_out = [{**new, "timed_cases": [{**case, "mean_us": bad}]} for bad in (1e-300, "3.0", True)]
    left_out.append({**new, "timed_cases": [{**case, "B": "1"}]})  # a size that is not an integer
    secret = {**new, "timed_cases": [{**case, "timed_seed": harness.combine_seed(2146, 9), "mean_us": 6.6}]}
    series = history.case_series(entries + left_out + [new, secret], "1x1536x2048x4")
    assert [(r["source"], r["seed"], r["secret"], r["mean_us"]) for r in series["runs"]] == [
        ("eval", 2146, False, 7.0), ("compare", None, False, 7.8), ("popcorn", 2146, False, 7.84),
        ("eval", 2146, False, 6.5), ("eval", 2146, True, 6.6)]  # two seeds of one case, told apart
    assert series["unreadable"] == 4
    assert history.case_series(entries, "1x768x512x3")["runs"][0]["mean_us"] == 3.1  # compare's /W3 form
    assert history.case_series(entries, "1x768x512x4") == {"label": "1x768x512x4", "runs": [], "unreadable": 0}


def test_one_case_s_table_sets_each_time_beside_the_first_passing_run_of_its_file_and_gpu():
    def run(gpu, file, outcome, us):
        return {"time": "2026-12-07T00:00:00+00:00", "commit": "abc1234", "gpu": gpu, "source": "eval",
                "mode": "leaderboard", "outcome": outcome, "file": file, "mean_us": us, "seed": 2146,
                "secret": outcome == "fail"}

    runs = [run("H200", "submission.py", "interrupted", 30.0), run("H200", "submission.py", "pass", 10.0),
            run("H100", "submission.py", "pass", 20.0), run("H200", "variants/v.py", "pass", 5.0),
            run("H200", "submission.py", "fail", 2.0), run("H200", "submission.py", "pass", 9.0),
            run("NVIDIA H100 80GB HBM3 with a long name", "submission.py", "pass", 4.0)]
    table = history.format_case_series({"label": "1x64x64x4", "runs": runs, "unreadable": 1}).splitlines()
    rows = [line.split() for line in table[2:-1]]
    assert [row[-2] for row in rows] == ["-", "1.000", "1.000", "1.000", "0.200", "0.900", "1.000"]
    assert [row[-4] for row in rows] == ["interrupted", "pass", "pass", "pass", "fail", "pass", "pass"]
    assert [row[-5] for row in rows] == ["2146"] * 4 + ["2146+secret"] + ["2146"] * 2
    assert len({line.index("  submission.py") for line in table[2:-1] if "submission.py" in line}) == 1
    assert table[-1].startswith("1 timed case(s) in the history left out")


def test_best_public_is_the_lowest_public_ranked_score_on_that_gpu():
    def ranked(gpu, score, secret=False, source="popcorn"):
        return {"gpu": gpu, "source": source, "runs": [{"mode": "leaderboard", "passed": True, "secret": secret,
                                                        "score_us": score}]}
    entries = [ranked("B200", 14.0), ranked("B200", 13.0), ranked("B200", 9.0, secret=True), ranked("H100", 5.0),
               ranked("B200", 1.0, source="eval")]
    assert history.best_public(entries, "B200") == 13.0 and history.best_public(entries, "A100") is None


def test_history_names_workspace_files_relative_and_others_as_given(tmp_path):
    assert history.workspace_path(ROOT / "submissions" / "submission_helion.py") == "submissions/submission_helion.py"
    assert history.workspace_path(tmp_path / "mine.py") == str(tmp_path / "mine.py")


def test_history_command_and_plot_message(tmp_path, monkeypatch):
    from scripts import cli

    path = tmp_path / "h.jsonl"
    monkeypatch.setattr(history, "HISTORY", path)
    result = CliRunner().invoke(cli.cli, ["history"])
    assert result.exit_code == 0 and "no history yet" in result.output
    result = CliRunner().invoke(cli.cli, ["history", "--plot", str(tmp_path / "p.png")])
    assert result.exit_code != 0 and result.output.strip().splitlines() == [
        f"Error: --plot {tmp_path / 'p.png'}: nothing to draw, no history yet in {path}; no picture written"]
    history.append_entry({"time": "2026-12-01T12:00:00+00:00", "gpu": "NVIDIA H200", "geomean_us": None,
                          "outcome": "fail"}, path)
    result = CliRunner().invoke(cli.cli, ["history", "--plot", str(tmp_path / "p.png")])
    assert result.exit_code != 0 and "nothing to draw" in result.output and not (tmp_path / "p.png").exists()
    history.append_entry({"time": "2026-12-02T12:00:00+00:00", "gpu": "NVIDIA H200", "geomean_us": 13.0,
                          "outcome": "pass"}, path)
    real_find_spec = cli.importlib.util.find_spec
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib"
                        else real_find_spec(name, *a))
    result = CliRunner().invoke(cli.cli, ["history", "--plot", str(tmp_path / "p.png")])
    assert result.exit_code != 0 and result.output.strip().splitlines() == [
        "Error: history --plot needs matplotlib: pip install matplotlib"]  # refused before the table is printed
    monkeypatch.setattr(cli.importlib.util, "find_spec", real_find_spec)
    result = CliRunner().invoke(cli.cli, ["history", "--case", "1x64x64"])
    assert result.exit_code == 0 and result.output.startswith("no line of") and "time of 1x64x64x4" in result.output
    history.append_entry({"time": "2026-12-03T12:00:00+00:00", "gpu": "NVIDIA H200", "geomean_us": 3.0,
                          "outcome": "pass", "source": "eval", "mode": "leaderboard", "file": "submission.py",
                          "timed_cases": [{"B": 1, "D": 64, "S": 64, "W": 4, "mean_us": 3.0}]}, path)
    result = CliRunner().invoke(cli.cli, ["history", "--case", "1x64x64x4"])
    assert result.exit_code == 0 and result.output.splitlines()[-1].split()[-4:] == ["pass", "3.00", "1.000",
                                                                                      "submission.py"]
    for args, message in ((["--case", "1x64"], "--case: shape '1x64' is not BxDxS"),
                          (["--case", "1x64x64", "--plot", str(tmp_path / "p.png")], "give one of them")):
        result = CliRunner().invoke(cli.cli, ["history", *args])
        assert result.exit_code != 0 and message in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(cli.cli, ["history", "--plot", str(tmp_path / "p.png")])
    try:
        import matplotlib  # noqa: F401
        assert result.exit_code == 0 and (tmp_path / "p.png").exists()
    except ImportError:
        assert result.exit_code != 0 and "needs matplotlib" in result.output


# ----------------------------------------------------------------------------- tune and compare mechanics


def fake_timer(fn, rep_ms):
    start = time.perf_counter()
    fn()
    return harness.calculate_stats([(time.perf_counter() - start) * 1e9] * 2)


def test_the_sweep_starts_each_round_one_config_later_and_keeps_the_statistic_asked(monkeypatch):
    """Rounds rotate, so no config is always timed first; min for tune, the median for search-check's re-timing."""
    module = types.SimpleNamespace(CONFIGS={}, custom_kernel=lambda data: None)
    order, draws = [], iter([5.0, 1.0, 3.0, 2.0, 9.0, 4.0, 6.0, 8.0, 7.0])

    def timer(fn, rep_ms):
        order.append(module.CONFIGS[("cpu", 1, 2, 40, 4)])
        return harness.calculate_stats([next(draws) * 1e3] * 2)

    monkeypatch.setattr(harness, "time_protocol", timer)
    space = [(64, 1), (128, 1), (256, 1)]
    got = tune.sweep(module, "cpu", [harness.parse_label("1x2x40x4")], space, rep_ms=1, rounds=3,
                     statistic=statistics.median)
    assert order == space + space[1:] + space[:1] + space[2:] + space[:2]
    assert got == {(1, 2, 40, 4): {(64, 1): 5.0, (128, 1): 2.0, (256, 1): 6.0}}
    assert module.CONFIGS == {}


def test_tune_sweeps_rewrites_only_exceptions_and_restores(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "time_protocol", fake_timer)
    from scripts.registry import load_kernel_file

    copy = tmp_path / "submission.py"
    copy.write_text((ROOT / "submission.py").read_text())
    module = load_kernel_file(copy, "submission_under_tune")
    before = dict(module.CONFIGS)
    results = tune.sweep(module, "cpu", [harness.parse_label("1x2x40x4")], [(64, 1), (128, 1)], rep_ms=1)
    assert module.CONFIGS == before  # the sweep leaves the table as it found it
    assert set(results[(1, 2, 40, 4)]) == {(64, 1), (128, 1)}

    old = copy.read_text()
    heuristic = module.heuristic_config(1, 1536, 2048, 4)
    margin = module.TUNE_MARGIN
    wins = {(1, 1536, 2048, 4): {heuristic: 10.0, (512, 2): 10.0 * (1 - 2 * margin)},
            (7, 7, 7, 7): {(256, 1): 5.0}}  # 7x7x7's heuristic was not timed: its winner is kept
    new = tune.rewrite(old, module, "h200", wins)
    assert configs.read_table(new)[1] == {**configs.read_table(old)[1], ("h200", 1, 1536, 2048, 4): (512, 2),
                                          ("h200", 7, 7, 7, 7): (256, 1)}
    assert "+    ('h200', 7, 7, 7, 7): (256, 1)," in configs.diff(old, new, "submission.py")
    assert old.split(configs.BEGIN)[0] == new.split(configs.BEGIN)[0]  # nothing outside the markers moves
    assert old.split(configs.END)[1] == new.split(configs.END)[1]
    back = tune.rewrite(new, module, "h200", {(1, 1536, 2048, 4): {heuristic: 10.0, (512, 2): 9.95}})
    assert ("h200", 1, 1536, 2048, 4) not in configs.read_table(back)[1]  # a win inside the margin needs no entry

    ok, _ = tune.apply_safely(copy, new, lambda p: (False, "a test fails"))
    assert not ok and copy.read_text() == old  # restored
    ok, _ = tune.apply_safely(copy, new, lambda p: (True, ""))
    assert ok and copy.read_text() == new
    ok, message = tune.apply_safely(copy, old, lambda p: 1 / 0)
    assert not ok and "ZeroDivisionError" in message and copy.read_text() == new


@pytest.mark.parametrize("config,label", [
    ((1024, 1), "1024/1"),
    ([2048, 4, None], "2048/4"),
    ((4096, 2, "cuda"), "4096/2 cuda"),
    ((1024, 1, "--apply-controls /opt/booster_pack/a.acf"), "1024/1 +a.acf"),
    ((1024, 1, "-O3"), "1024/1 -O3"),
], ids=["tile", "triton", "cuda", "control-file", "other-ptxas-options"])
def test_a_config_label_says_how_it_is_built(config, label):
    """Two builds of one tile are two rows of a table, never one key (a CUDA tile once read '+acf')."""
    assert configs.tile_label(config) == label


@pytest.mark.parametrize("text", ["CONFIGS = {}\n", "# <configs>\nCONFIGS = {}\n", "# </configs>\n# <configs>\n"])
def test_rewrite_refuses_a_file_without_its_markers(text):
    with pytest.raises(ValueError, match="no config table"):
        configs.rewrite(text, {})


def test_one_rewriter_serves_both_submissions_and_keeps_helion_configs_one_key_per_line():
    text = (ROOT / "submissions" / "submission_helion.py").read_text()
    name, table = configs.read_table(text)
    assert name == "SHAPE_CONFIGS" and configs.rewrite(text) == text  # its own format, unchanged
    new = configs.rewrite(text, {(1, 1536, 2048, 4): {"block_sizes": [2, 64], "num_warps": 4}})
    changed = [line for line in configs.diff(text, new, "h.py").splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert "+        'block_sizes': [2, 64]," in changed and "+        'num_warps': 4," in changed
    assert all(len(line) <= configs.WIDTH + 1 for line in new.splitlines()[:200] if "'" in line)
    assert configs.read_table(new)[1][(1, 1536, 2048, 4)] == {"block_sizes": [2, 64], "num_warps": 4}
    lanes = configs.rewrite(text, {(1, 1536, 2048, 4): (8, 2, "", "shift")}, markers=configs.LANES)
    assert configs.rewrite(text, markers=configs.LANES) == text  # the lane table too keeps its own format
    assert configs.read_table(lanes, configs.LANES)[1][(1, 1536, 2048, 4)] == (8, 2, "", "shift")
    assert configs.read_table(lanes)[1] == table  # the other table untouched


def test_compare_mechanics_on_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "time_protocol", fake_timer)
    wrong = tmp_path / "wrong_variant.py"
    wrong.write_text("import torch\ndef custom_kernel(data):\n    return torch.zeros_like(data[0])\n")
    impls = cmp.build_impls(registry.for_compare(ROOT / "submission.py", [wrong]))
    impls.pop("torch_compile")  # compiling needs a C++ toolchain run; its mechanics are the same
    assert {"copy", "triton_copy_1024_1", "triton_copy_2048_2", "triton_copy_4096_4", "triton_copy_8192_8",
            "triton_copy_evict_first_4096_2", "triton_copy_evict_first_4096_4", "tma_copy_2x256_1w_3s_16sm"} <= set(impls)
    cases = [harness.parse_label("1x3x40x4"), harness.parse_label("2x2x33x3")]
    ran = cmp.add_same_tile_copies(impls, cases)
    assert ran == {"submission": {"1x3x40x4": (64, 1), "2x2x33x3": (64, 1)}}  # the wrong variant says no tile
    assert impls["triton_copy_64_1"][0] == impls["triton_copy_evict_first_64_1"][0] == "copy"  # both copies at its tile
    ticks = []
    run = cmp.run_compare(impls, cases, rounds=2, rep_ms=1, progress=ticks.append)
    assert len(ticks) == 2 * len(cases) * len(impls) and run.rounds_done == 2 and run.stop is None
    raw = run.results
    summary = cmp.summarize(raw, cases, impls, ran)
    same = summary["submission"]["same_tile"]["1x3x40x4"]
    copies_us = [summary[name]["per_case_us"]["1x3x40x4"] for name in ("triton_copy_64_1", "triton_copy_evict_first_64_1")]
    assert same["tile"] == [64, 1] and same["copy_us"] == min(copies_us)  # the faster of the two
    assert same["vs_same_tile_copy"] == summary["submission"]["per_case_us"]["1x3x40x4"] / same["copy_us"]
    assert summary["wrong_variant"]["kind"] == "variant" and summary["triton_copy_1024_1"]["kind"] == "copy"
    assert len(raw["submission"]["1x3x40x4"]["rounds_us"]) == 2
    assert "1x3x40x4" in summary["wrong_variant"]["errors"] and "mismatch" in summary["wrong_variant"]["errors"]["1x3x40x4"]
    copies = [name for name, entry in summary.items() if entry["kind"] == "copy" and name != cmp.FLOOR]
    assert summary["floor"]["per_case_us"]["1x3x40x4"] == min(summary[c]["per_case_us"]["1x3x40x4"] for c in copies)
    fastest = {case: min(copies, key=lambda c: summary[c]["per_case_us"][case]) for case in ("1x3x40x4", "2x2x33x3")}
    assert summary["floor"]["copy_per_case"] == fastest  # which copy the floor is, case by case
    ratio = summary["submission"]["per_case_vs_floor"]["1x3x40x4"]
    assert ratio == summary["submission"]["per_case_us"]["1x3x40x4"] / summary["floor"]["per_case_us"]["1x3x40x4"]
    table = cmp.format_table(summary, cases)
    assert "wrong_variant" in table and "FAIL" in table and "failed checks" in table and "vs floor" in table
    same_tile_row = next(line for line in table.splitlines() if line.startswith("submission") and "64/1" in line)
    assert f"64/1 {same['vs_same_tile_copy']:.3f}" in same_tile_row
    assert f"the floor's copy: 1x3x40x4 {fastest['1x3x40x4']}, 2x2x33x3 {fastest['2x2x33x3']}" in table
    path = cmp.write_results(summary, cases, "cpu", "abc1234", "2026-12-02", tmp_path / "out",
                             rounds={"asked": 2, "done": 2, "interrupted": None})
    data = json.loads(path.read_text())
    assert data["commit"] == "abc1234" and "submission" in data["impls"] and "copy" in data["impls"]
    assert data["rounds"] == {"asked": 2, "done": 2, "interrupted": None}


def _counting_timer(stop_at: int):
    """A fake protocol timer that reads call n as n microseconds and raises SIGTERM's Interrupted on call stop_at."""
    calls = []

    def timer(fn, rep_ms):
        calls.append(fn)
        if len(calls) == stop_at:
            raise harness.Interrupted(signal.SIGTERM)
        fn()
        return harness.calculate_stats([len(calls) * 1e3] * 2)
    return timer


@pytest.mark.parametrize("stop_in_round", [2, 3], ids=["in-round-2", "in-round-3"])
def test_an_interrupted_compare_keeps_its_whole_rounds_and_drops_the_one_under_way(monkeypatch, stop_in_round):
    """Three rounds of 2 implementations on 2 cases (4 timings a round); SIGTERM part-way through a round keeps
    the rounds before it for every implementation alike, their median, and the signal."""
    impls = {"copy": ("copy", lambda data: data[0].clone()), "copy_again": ("copy", lambda data: data[0].clone())}
    cases = [harness.parse_label("1x3x40x4"), harness.parse_label("2x2x33x3")]
    per_round = len(cases) * len(impls)
    monkeypatch.setattr(harness, "time_protocol", _counting_timer((stop_in_round - 1) * per_round + 3))
    run = cmp.run_compare(impls, cases, rounds=3, rep_ms=1)
    done = stop_in_round - 1
    assert run.rounds_done == done and run.stop.name == "SIGTERM" and run.stop.exit_code == 143
    for name in impls:
        for label in ("1x3x40x4", "2x2x33x3"):
            entry = run.results[name][label]
            assert len(entry["rounds_us"]) == done and entry["us"] == statistics.median(entry["rounds_us"])
    assert run.results["copy"]["1x3x40x4"]["rounds_us"] == [1 + per_round * r for r in range(done)]


def test_a_compare_interrupted_in_its_first_round_passes_the_interrupt_on(monkeypatch):
    """Nothing whole was measured: no partial comparison stands in for one."""
    impls = {"copy": ("copy", lambda data: data[0].clone())}
    monkeypatch.setattr(harness, "time_protocol", _counting_timer(1))
    with pytest.raises(harness.Interrupted):
        cmp.run_compare(impls, [harness.parse_label("1x3x40x4")], rounds=2, rep_ms=1)


@pytest.mark.parametrize("stop_in_case", [2, 3], ids=["in-case-2", "in-case-3"])
def test_a_run_of_whole_cases_keeps_those_that_finished_and_drops_the_one_under_way(stop_in_case):
    """tiles and search-check measure case by case: SIGTERM in case n keeps cases 1 to n - 1 and the signal."""
    from scripts import whole_cases

    cases = [harness.parse_label(label) for label in ("1x3x40x4", "2x2x33x3", "1x5x300x4")]
    measured = []

    def measure(args):
        measured.append(harness.case_label(args))
        if len(measured) == stop_in_case:
            raise harness.Interrupted(signal.SIGTERM)
        return {"n": len(measured)}

    run = whole_cases.run_cases(cases, measure)
    assert list(run.results) == measured[:-1] and run.results[measured[0]] == {"n": 1}
    assert run.record() == {"asked": 3, "done": stop_in_case - 1, "interrupted": "SIGTERM"} and run.stop.exit_code == 143


def test_a_run_of_whole_cases_counts_a_case_named_twice_as_two():
    """`--shapes large large` measures each shape twice: the record's count says so, though a label keeps one entry."""
    from scripts import whole_cases

    run = whole_cases.run_cases([harness.parse_label("1x3x40x4")] * 2, lambda args: {})
    assert run.record() == {"asked": 2, "done": 2, "interrupted": None} and list(run.results) == ["1x3x40x4"]


def test_a_run_of_whole_cases_interrupted_in_its_first_case_passes_the_interrupt_on():
    """Nothing whole was measured: no empty record stands in for one."""
    from scripts import whole_cases

    def measure(args):
        raise harness.Interrupted(signal.SIGHUP)

    with pytest.raises(harness.Interrupted):
        whole_cases.run_cases([harness.parse_label("1x3x40x4")], measure)


@pytest.mark.parametrize("shape", ["2x3x40", "1x5x300", "2x2x33"], ids=["aligned", "several-tiles", "unaligned-rows"])
def test_every_copy_returns_x_exactly(shape):
    """The floor is the fastest copy: each copy must move every byte of x, through TMA or not."""
    import reference

    data = reference.generate_input(**harness.parse_label(shape))
    for impl in registry.copies():
        out = impl.make()(data)
        assert out.data_ptr() != data[0].data_ptr() and torch.equal(out, data[0]), impl.name


def test_cuda_copies_join_the_floor_only_where_they_can_run(monkeypatch):
    """NVRTC needs a GPU, so off one the CUDA copies are not listed; listed anyway, an input they cannot take
    (off a GPU, a CPU tensor) goes to the Triton copy of the same elements a program, still exact."""
    import reference
    from scripts import baselines

    names = {impl.name for impl in registry.copies()}
    cuda_names = {baselines.cuda_copy_name(*tile) for tile in baselines.CUDA_COPY_TILES}
    assert (cuda_names <= names) == baselines.cuda_copy_available()
    monkeypatch.setattr(baselines, "cuda_copy_available", lambda: True)
    listed = {impl.name: impl for impl in registry.copies()}
    assert {"cuda_copy_128x2_float4", "cuda_copy_1024x1_float4"} <= set(listed)
    data = reference.generate_input(**harness.parse_label("2x3x40"))
    for name in cuda_names:
        out = listed[name].make()(data)
        assert out.data_ptr() != data[0].data_ptr() and torch.equal(out, data[0]), name


@needs_gpu
@pytest.mark.parametrize("shape", ["2x3x40", "1x7x1000", "3x5x2052"], ids=["one-block", "partial-block", "blocks"])
def test_cuda_copies_are_exact_on_the_gpu(shape):
    """Built by NVRTC and run: every float4 of x, the last partial block's too, lands in a fresh output."""
    import reference
    from scripts import baselines

    data = reference.generate_input(**harness.parse_label(shape))
    for tile in baselines.CUDA_COPY_TILES:
        out = baselines.cuda_copy(*tile)(data)
        assert out.data_ptr() != data[0].data_ptr() and torch.equal(out, data[0]), baselines.cuda_copy_name(*tile)


@pytest.mark.parametrize("text,expected", [
    ("4x2560x4096", {"B": 4, "D": 2560, "S": 4096, "W": 4}), ("1x8x16x3", {"B": 1, "D": 8, "S": 16, "W": 3})])
def test_parse_label(text, expected):
    args = harness.parse_label(text)
    assert {k: args[k] for k in expected} == expected


@pytest.mark.parametrize("text", ["4x2560", "0x1x1", "axbxc"])
def test_parse_label_refuses_nonsense(text):
    with pytest.raises(ValueError):
        harness.parse_label(text)


# ----------------------------------------------------------------------------- the CLI (end to end with a fake
# popcorn in test_remote.py)


def _commands(group, prefix=""):
    """{'remote list': command, ...}: every command of the CLI, subgroups spelled out."""
    import click

    found = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[prefix + name] = command
    return found


def test_cli_docstring_and_help_list_every_command():
    from scripts import cli

    commands = _commands(cli.cli)
    doc = " ".join(cli.__doc__.split("python scripts/cli.py --help")[0].split())
    result = CliRunner().invoke(cli.cli, ["--help"])
    for name in commands:
        head = name.split()[0]
        assert f"  {head} " in result.output, name
        assert (name if " " not in name else name.split()[1]) in doc, f"cli.py's docstring does not list {name}"


def _readme_table() -> dict:
    """{command: (argument, [options])} from the README's command table."""
    rows = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0] != "`command`":
            rows[cells[0].strip("`")] = (cells[1], re.findall(r"`(--[\w-]+)`", cells[2]))
    return rows


def test_the_readme_command_table_names_every_command():
    from scripts import cli

    assert set(_readme_table()) == set(_commands(cli.cli))


@pytest.mark.parametrize("name", sorted(_readme_table()))
def test_each_command_s_help_agrees_with_the_readme_table(name):
    from scripts import cli

    argument, options = _readme_table()[name]
    result = CliRunner().invoke(cli.cli, [*name.split(), "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    usage = result.output.splitlines()[0]
    shown = [o for o in re.findall(r"^\s+(?:-\w, )?(--[\w-]+)", result.output, flags=re.M) if o != "--help"]
    assert shown == options, f"{name}: --help shows {shown}, the README {options}"
    takes = {"FILE": "[FILE]", "FILES...": "[FILES]...", "COMPARE_JSON": "[COMPARE_JSON]",
             "SUBMISSION_ID": "SUBMISSION_ID",
             "tests or benchmarks": "{tests|benchmarks}"}.get(argument)
    assert (usage.endswith(f"[OPTIONS] {takes}") if takes else usage.endswith("[OPTIONS]")), f"{name}: {usage}"


def test_cases_prints_task_yml_in_the_runners_format():
    from scripts import cli

    result = CliRunner().invoke(cli.cli, ["cases", "benchmarks"])
    lines = result.output.splitlines()
    assert result.exit_code == 0 and [c.args for c in harness.parse_tests(result.output)] == \
        [c.args for c in harness.cases_from_task("benchmarks")] and len(lines) == 3


def test_profile_without_ncu_or_a_gpu_says_so_in_one_sentence(monkeypatch):
    from scripts import cli, ncu_profile as profile

    monkeypatch.setattr(profile.shutil, "which", lambda name: None)
    result = CliRunner().invoke(cli.cli, ["profile", "--case", "1"])
    assert result.exit_code != 0 and "ncu is not on PATH" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(cli.cli, ["profile", "--case", "7"])
    assert result.exit_code != 0 and "--case must be 0 to 2" in result.output


@pytest.mark.parametrize("argv,says", [
    (["--shape", "4x2560"], "--shape: shape '4x2560' is not BxDxS or BxDxSxW with positive sizes"),
    (["--shape", "4x2560x0"], "is not BxDxS or BxDxSxW with positive sizes"),
    (["--shape", "4x2560x4096", "--case", "1"], "give --case or --shape, not both"),
], ids=["too-few-sizes", "zero-size", "both"])
def test_profile_refuses_a_shape_it_cannot_read_in_one_sentence(argv, says):
    from scripts import cli

    result = CliRunner().invoke(cli.cli, ["profile", *argv])
    assert result.exit_code != 0 and says in result.output and "Traceback" not in result.output


def test_profile_on_a_shape_profiles_that_shape(monkeypatch, tmp_path):
    from scripts import cli, ncu_profile as profile

    seen = []
    monkeypatch.setattr(profile, "unavailable", lambda: None)
    monkeypatch.setattr(profile, "profile_side_by_side", lambda file, args, out_dir, echo: seen.append(args) or "table")
    result = CliRunner().invoke(cli.cli, ["profile", "--shape", "4x2560x4096", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert seen == [{"B": 4, "D": 2560, "S": 4096, "W": 4, "seed": 1234}]
    result = CliRunner().invoke(cli.cli, ["profile", "--out", str(tmp_path)])  # neither: the first leaderboard case
    assert result.exit_code == 0 and seen[1] == harness.cases_from_task("benchmarks")[0].args


def test_ncu_raw_csv_is_read_and_summed_over_the_measured_kernels():
    from scripts import ncu_profile as profile

    text = ('==PROF== Connected\n"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum",'
            '"dram__bytes_write.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed",'
            '"sm__warps_active.avg.pct_of_peak_sustained_active","launch__registers_per_thread"\n'
            '"","","usecond","Mbyte","Kbyte","%","%","register/thread"\n'
            '"0","k","10.5","12.0","500","80.5","40","32"\n"1","k2","1.5","1.0","500","20","60","40"\n')
    found = profile.parse_raw_csv(text)
    assert found["duration us"] == 12.0 and found["DRAM read MB"] == 13.0 and found["DRAM write MB"] == 1.0
    assert found["DRAM % of peak"] == 80.5 and found["achieved occupancy %"] == 60 and found["registers/thread"] == 40
    assert found["kernels"] == 2 and "duration us" in profile.format_side_by_side({"a": found, "b": found})


def test_the_commit_stamp_says_dirty_where_a_tracked_file_differs_from_it(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.delenv("WORKSPACE_COMMIT", raising=False)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run(git + ["init", "-q"], check=True)
    (tmp_path / "kernel.py").write_text("a = 1\n")
    subprocess.run(git + ["add", "kernel.py"], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    short = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    (tmp_path / "untracked.txt").write_text("not part of the tree's commit\n")
    assert history.git_commit(tmp_path) == short  # an untracked file leaves the stamp clean
    (tmp_path / "kernel.py").write_text("a = 2\n")
    assert history.git_commit(tmp_path) == short + "+dirty"
    assert history.git_commit(tmp_path / "untracked.txt") == "unknown"  # not a folder git can run in
    monkeypatch.setenv("WORKSPACE_COMMIT", "abc1234")
    assert history.git_commit(tmp_path) == "abc1234"  # another commit than git's: the tree beside a stale .git
    monkeypatch.setenv("WORKSPACE_COMMIT", short)  # git's own HEAD: git can still tell the tree differs (run55)
    assert history.git_commit(tmp_path) == short + "+dirty"
    monkeypatch.setenv("WORKSPACE_COMMIT", short[:4])  # too short to say it is git's HEAD: taken as given
    assert history.git_commit(tmp_path) == short[:4]
    monkeypatch.setenv("WORKSPACE_COMMIT", short + "+dirty")  # already says so: not twice
    assert history.git_commit(tmp_path) == short + "+dirty"
    monkeypatch.setenv("WORKSPACE_COMMIT", short)
    (tmp_path / "kernel.py").write_text("a = 1\n")
    assert history.git_commit(tmp_path) == short


def test_a_run_record_is_headed_by_device_commit_and_date(tmp_path, monkeypatch):
    from scripts import cli

    monkeypatch.setenv("WORKSPACE_COMMIT", "abc1234")
    path = cli.write_record(tmp_path / "new" / "folder", "tiles.json", {"cases": {"1x2x40x4": {"best": (64, 1)}}})
    record = json.loads(path.read_text())
    assert path == tmp_path / "new" / "folder" / "tiles.json"
    assert record["commit"] == "abc1234" and record["device"] == harness.device_name() and len(record["date"]) == 10
    assert record["cases"] == {"1x2x40x4": {"best": [64, 1]}}


def test_the_compare_command_writes_its_whole_rounds_when_sigterm_ends_it(tmp_path, monkeypatch):
    """End to end through the CLI: SIGTERM in round 2 of 3 leaves compare.json with round 1's medians and
    says so in one line, exit 143 (128 + SIGTERM), and nothing enters the history."""
    from scripts import cli

    monkeypatch.setattr(harness, "gpu_available", lambda: True)
    monkeypatch.setattr(cmp, "resolve_cases", lambda shapes: [harness.parse_label("1x3x40x4")])
    monkeypatch.setattr(cmp, "build_impls", lambda listed: {"copy": ("copy", lambda data: data[0].clone()),
                                                            "copy_again": ("copy", lambda data: data[0].clone())})
    monkeypatch.setattr(cmp, "record_ours", lambda *args: pytest.fail("an interrupted compare entered the history"))
    monkeypatch.setattr(harness, "time_protocol", _counting_timer(3))
    result = CliRunner().invoke(cli.cli, ["compare", "--rounds", "3", "--out", str(tmp_path)])
    assert result.exit_code == 143, result.output
    assert "interrupted (SIGTERM) after 1 of 3 rounds" in result.output and "Traceback" not in result.output
    data = json.loads((tmp_path / "compare.json").read_text())
    assert data["rounds"] == {"asked": 3, "done": 1, "interrupted": "SIGTERM"}
    assert data["impls"]["copy"]["per_case_us"]["1x3x40x4"] == 1.0


def test_the_tiles_command_times_after_the_flush_asked_and_records_it(tmp_path, monkeypatch):
    """End to end through the CLI: --flush reaches every timing, tiles.json names it, and a flush other than
    the runner's is said before the table; an unknown flush is refused by name."""
    from scripts import cli, tiles

    flushes = []

    def timer(fn, rep_ms, flush="memset"):
        flushes.append(flush)
        return harness.calculate_stats([1e3] * 2)

    monkeypatch.setattr(harness, "gpu_available", lambda: True)
    monkeypatch.setattr(cmp, "resolve_cases", lambda shapes: [harness.parse_label("1x3x40x4")])
    monkeypatch.setattr(tiles, "_check", lambda *args: "")  # no launch: the CPU cannot synchronize a device
    monkeypatch.setattr(harness, "time_protocol", timer)
    result = CliRunner().invoke(cli.cli, ["tiles", "--rounds", "2", "--flush", "read", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    modules = tiles.load_modules([ROOT / "submission.py"])
    assert flushes == ["read"] * tiles.timings_count(modules, [harness.parse_label("1x3x40x4")], rounds=2)
    assert "timed after a read flush, not the runner's memset" in result.output
    record = json.loads((tmp_path / "tiles.json").read_text())
    assert record["flush"] == "read"
    assert len(record["cases"]["1x3x40x4"]["kernels"]["submission"]["configs"]) == len(modules["submission"].CONFIG_SPACE)
    refused = CliRunner().invoke(cli.cli, ["tiles", "--flush", "clean"])
    assert refused.exit_code == 2 and "'clean' is not one of 'memset', 'read'" in refused.output
    folded = tmp_path / "folded.py"  # two configs apart only by a flag: one label, so one row for both
    folded.write_text("def custom_kernel(data): pass\ndef launch(*args): pass\n"
                      "CONFIG_SPACE = [(1024, 1, False), (1024, 1, True)]\n")
    monkeypatch.setattr(harness, "gpu_available", lambda: False)  # said before the GPU is asked for
    refused = CliRunner().invoke(cli.cli, ["tiles", str(folded)])
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert refused.output.strip() == ("Error: config (1024, 1, False) has entries a label cannot show ([False]): "
                                      "give each choice as a number or as text")


def test_the_tiles_command_writes_the_cases_that_finished_when_sigterm_ends_it(tmp_path, monkeypatch):
    """End to end: SIGTERM in the second case's timings leaves tiles.json with the first case whole, the
    second dropped, one line saying so, exit 143 (a device call cut off by its time limit keeps its cases)."""
    from scripts import cli, tiles

    cases = [harness.parse_label("1x3x40x4"), harness.parse_label("2x2x33x3")]
    modules = tiles.load_modules([ROOT / "submission.py"])
    per_case = tiles.timings_count(modules, cases[:1], rounds=1)
    calls, stop_at = [], [per_case + 2]  # two timings into the second case

    def timer(fn, rep_ms, flush="memset"):
        calls.append(fn)
        if len(calls) == stop_at[0]:
            raise harness.Interrupted(signal.SIGTERM)
        return harness.calculate_stats([1e3] * 2)

    monkeypatch.setattr(harness, "gpu_available", lambda: True)
    monkeypatch.setattr(cmp, "resolve_cases", lambda shapes: cases)
    monkeypatch.setattr(tiles, "_check", lambda *args: "")  # no launch: the CPU cannot synchronize a device
    monkeypatch.setattr(harness, "time_protocol", timer)
    result = CliRunner().invoke(cli.cli, ["tiles", "--rounds", "1", "--out", str(tmp_path)])
    assert result.exit_code == 143, result.output
    assert "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        f"interrupted (SIGTERM) after 1 of 2 cases: the cases that finished are above and in "
        f"{tmp_path / 'tiles.json'}; the one under way was dropped")
    record = json.loads((tmp_path / "tiles.json").read_text())
    assert record["cases_run"] == {"asked": 2, "done": 1, "interrupted": "SIGTERM"}
    assert list(record["cases"]) == ["1x3x40x4"]
    assert len(record["cases"]["1x3x40x4"]["kernels"]["submission"]["configs"]) == len(modules["submission"].CONFIG_SPACE)
    calls.clear()
    stop_at[0] = 2  # in the first case: nothing whole, so no record
    first = CliRunner().invoke(cli.cli, ["tiles", "--rounds", "1", "--out", str(tmp_path / "first")])
    assert calls and first.exit_code == 143 and not (tmp_path / "first").exists()


@pytest.mark.parametrize("content", [b"def custom_kernel(:\n", b"\xff\xfe not text", b"import no_such_module_here\n"],
                         ids=["syntax-error", "not-utf8", "import-error"])
@pytest.mark.parametrize("command", ["tiles", "compare --variant"])
def test_a_kernel_file_that_does_not_import_is_refused_in_one_sentence(tmp_path, monkeypatch, content, command):
    """The tools import the user's kernel files: whatever that raises is said in one line, exit 1, where the
    GPU would otherwise be timing (a SyntaxError once reached the user as a traceback)."""
    from scripts import cli

    broken = tmp_path / "broken.py"
    broken.write_bytes(content)
    monkeypatch.setattr(harness, "gpu_available", lambda: True)
    monkeypatch.setattr(cmp, "resolve_cases", lambda shapes: [harness.parse_label("1x3x40x4")])
    result = CliRunner().invoke(cli.cli, [*command.split(), str(broken), "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert result.output.startswith("Error: broken.py did not load: ")
