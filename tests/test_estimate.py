"""scripts/estimate.py: the B200 estimate from recorded compare runs, on the CPU."""
import copy
import json

import pytest

from conftest import ROOT, json_server, run_cli
from scripts import estimate, history

# A compare run frozen as it was recorded (H200, commit 4c93c4c, 2026-12-03, cases named before the one
# label); the CLI test below runs on results/nvidia-h200/compare.json, the latest.
RECORDED = ROOT / "tests" / "samples" / "compare_before_case_labels.json"
H200_RESULTS = ROOT / "results" / "nvidia-h200"
LEADERBOARD = ["1x1536x2048", "1x2560x2048", "1x2560x4096"]
FIGURES = estimate.load_figures()
BOARD = ([{"rank": int(k), "submission_score": us / 1e6} for k, us in FIGURES["board"]["scores_us"].items()],
         "recorded standings (test)")


def recorded() -> dict:
    return estimate.read_record(RECORDED)


def synthetic(fixed_us=2.0, tb_s=4.0, device="NVIDIA H200", large=True, kernel_ratio=1.05) -> dict:
    """A compare record whose floor is exactly fixed + bytes / bandwidth, and a kernel at a fixed ratio over it."""
    cases = LEADERBOARD + (["4x2560x4096", "8x4096x8192"] if large else [])
    floor = {c: fixed_us + estimate.case_bytes(c) / (tb_s * 1e6) for c in cases}
    kernel = {c: kernel_ratio * us for c, us in floor.items()}
    geo = lambda times: estimate.harness.geomean([times[c] for c in LEADERBOARD])  # noqa: E731
    return {"device": device, "commit": "abc1234", "date": "2026-12-04", "cases": cases,
            "impls": {"floor": {"kind": "copy", "per_case_us": floor, "geomean_us": geo(floor)},
                      "submission": {"kind": "submission", "per_case_us": kernel, "geomean_us": geo(kernel)}}}


def test_the_fit_recovers_a_floor_built_from_known_figures():
    method = estimate.bandwidth_model(synthetic(), FIGURES, LEADERBOARD)
    assert method["missing"] == []
    assert method["fit"]["fixed_us"] == pytest.approx(2.0, rel=1e-6)
    assert method["fit"]["tb_s"] == pytest.approx(4.0, rel=1e-6)
    hbm = 8.0 / 4.8
    b200 = [2.0 + estimate.case_bytes(c) / (4.0e6 * hbm) for c in LEADERBOARD]
    low, high = method["impls"]["submission"]
    assert low == pytest.approx(1.05 * estimate.harness.geomean(b200), rel=1e-6)
    assert high > low  # the SM ratio (148/132) is the smaller scale, so the slower end


def test_the_recorded_h200_run_gives_both_methods_and_a_rank():
    report = estimate.estimate(recorded(), FIGURES, BOARD)
    bandwidth, calibration = report["methods"]
    assert bandwidth["missing"] == [] and bandwidth["fit"]["card"] == "H200"
    assert 3.5 < bandwidth["fit"]["tb_s"] < 5.0 and 0 < bandwidth["fit"]["fixed_us"] < 3
    assert calibration["source"].startswith("shipped: H200, 2026-12-03")
    assert calibration["ratios"]["#1"] == pytest.approx(10.0 / 14.60)
    row = report["impls"]["submission"]
    geomean = recorded()["impls"]["submission"]["geomean_us"]
    assert row["low_us"] <= geomean * 10.0 / 14.60 and row["high_us"] >= geomean * 12.6 / 14.91
    assert row["low_by"].startswith("bandwidth model") and row["ranks"][0] == 1
    assert all(name not in report["impls"] for name in ("floor", "copy", "triton_copy_1024_1"))


def test_a_run_without_large_shapes_says_so_and_keeps_the_calibration():
    report = estimate.estimate(synthetic(large=False), FIGURES, BOARD)
    bandwidth, calibration = report["methods"]
    assert "no large shapes" in bandwidth["missing"][0] and bandwidth["impls"] == {}
    assert calibration["missing"] == []
    assert report["impls"]["submission"]["low_by"].startswith("calibration")
    assert "no large shapes" in estimate.format_estimate(report)


def test_an_unknown_gpu_gets_no_figure_and_says_which():
    report = estimate.estimate(synthetic(device="Tesla T4"), FIGURES, BOARD)
    assert report["impls"] == {}
    text = estimate.format_estimate(report)
    assert "'Tesla T4' has no figures" in text and "shipped calibration is from the H200" in text
    assert "no estimate" in text


def test_a_run_without_copies_has_no_floor():
    record = synthetic()
    del record["impls"]["floor"]
    method = estimate.bandwidth_model(record, FIGURES, LEADERBOARD)
    assert "no copies of x" in method["missing"][0] and method["impls"] == {}


def test_board_entries_in_the_run_replace_the_shipped_calibration():
    record = synthetic(device="Tesla T4")
    base = record["impls"]["submission"]
    record["impls"]["board1_helion"] = dict(copy.deepcopy(base), kind="variant", geomean_us=base["geomean_us"] * 1.2)
    record["impls"]["board2"] = dict(copy.deepcopy(base), kind="variant", geomean_us=base["geomean_us"] * 1.1)
    record["impls"]["boarding"] = dict(copy.deepcopy(base), kind="variant")  # not an entry: no number after board
    method = estimate.calibration(record, FIGURES)
    assert method["source"] == "board entries in this run"
    assert set(method["ratios"]) == {"#1 (board1_helion)", "#2 (board2)"}
    low, high = method["impls"]["submission"]
    assert low == pytest.approx(10.0 / 1.2) and high == pytest.approx(12.6 / 1.1)


def test_an_estimate_is_kept_in_history_and_never_ranked(tmp_path):
    path = tmp_path / "h.jsonl"
    report = estimate.estimate(recorded(), FIGURES, BOARD)
    entry = history.estimate_entry(estimate.history_fields("submission", report))
    history.append_entry(entry, path)
    entries = history.read_entries(path)
    assert entries[0]["kind"] == "estimate" and entries[0]["gpu"] == "NVIDIA H200"
    assert entries[0]["commit"] == "4c93c4c" and entries[0]["geomean_us"] is None
    assert history.best_per_gpu(entries) == {} and history.plot_series(entries) == {}
    assert "estimate" in history.format_table(entries)


@pytest.mark.parametrize("args,expect,code", [
    ([], "submission", 0),
    ([str(H200_RESULTS / "judge.json")], "not a compare record", 1),
])
def test_the_estimate_command_end_to_end(args, expect, code):
    done = run_cli(["estimate", *args], {"POPCORN_API_URL": ""})
    assert done.returncode == code, done.stderr
    assert expect in done.stdout + done.stderr
    if code == 0:
        assert "an estimate, not a score" in done.stdout and "recorded standings" in done.stdout


def test_the_estimate_command_reads_a_record_without_large_shapes(tmp_path):
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(synthetic(large=False)))
    done = run_cli(["estimate", str(path)], {"POPCORN_API_URL": ""})
    assert done.returncode == 0 and "no large shapes" in done.stdout


def test_judge_s_score_is_held_against_the_last_compare_run_of_its_gpu(tmp_path):
    report = estimate.for_score("submission", 13.0, "NVIDIA H200", H200_RESULTS)
    floor = estimate.read_record(H200_RESULTS / "compare.json")["impls"]["floor"]["geomean_us"]
    low, high = report["methods"][0]["b200_floor_us"]
    assert report["methods"][0]["impls"]["submission"] == pytest.approx((13.0 / floor * low, 13.0 / floor * high))
    alone = estimate.for_score("submission", 13.0, "NVIDIA H200", tmp_path)
    assert f"no compare run of the NVIDIA H200 in {tmp_path}" in alone["methods"][0]["missing"][0]
    assert alone["impls"]["submission"]["low_us"] == pytest.approx(13.0 * 10.0 / 14.60)


@pytest.mark.parametrize("status,expect", [(200, "the server's standings, 3 entries"), (503, "HTTP 503")])
def test_standings_come_from_the_server_when_it_answers(tmp_path, status, expect):
    rows = [{"rank": i + 1, "submission_score": s, "user_name": f"u{i}"} for i, s in enumerate((9e-6, 11e-6, 2e-5))]
    with json_server(lambda path, cli_id: (status, rows if status == 200 else None)) as (url, seen):
        found, where = estimate.standings(FIGURES, {"POPCORN_API_URL": url}, tmp_path)
    assert expect in where and seen[0][0].startswith("/submissions/causal_conv1d/B200_Nebius")
    assert len(found) == (3 if status == 200 else len(FIGURES["board"]["scores_us"]))
    if status == 200:
        assert estimate.remote.rank_of(10.0, found) == 2


def test_judge_s_estimate_survives_an_unreadable_compare_record(tmp_path):
    (tmp_path / "compare.json").write_text("{not json")
    report = estimate.for_score("submission", 13.0, "NVIDIA H200", tmp_path)
    assert "is not a readable JSON file" in report["methods"][0]["missing"][0]
    assert report["impls"]["submission"]["low_by"].startswith("calibration")


def test_a_case_not_named_bxdxs_is_one_sentence(tmp_path):
    record = synthetic()
    record["impls"]["floor"]["per_case_us"]["odd"] = 5.0
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(record))
    done = run_cli(["estimate", str(path)], {"POPCORN_API_URL": ""})
    assert done.returncode == 1 and "the case 'odd' is not named BxDxS" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_kernel_that_failed_a_check_gets_no_estimate_and_calibrates_nothing():
    record = synthetic()
    record["impls"]["submission"]["errors"] = {"8x4096x8192": "mismatch"}
    record["impls"]["board1"] = dict(copy.deepcopy(record["impls"]["submission"]), kind="variant")
    report = estimate.estimate(record, FIGURES, BOARD)
    assert report["impls"] == {} and report["methods"][1]["source"].startswith("shipped")


def test_judge_s_estimate_shows_the_judged_file_only():
    report = estimate.for_score("candidate", 13.0, "NVIDIA H200", H200_RESULTS)
    assert list(report["impls"]) == ["candidate"]


def test_a_record_that_names_its_cases_by_label_gives_the_same_estimate_as_one_written_before_the_label():
    """compare.json named cases BxDxS (BxDxS/Wk off the default width) before the one label, BxDxSxW."""
    old = recorded()
    relabeled = copy.deepcopy(old)
    relabeled["cases"] = [history.case_label_of(c) for c in old["cases"]]
    for row in relabeled["impls"].values():
        row["per_case_us"] = {history.case_label_of(c): us for c, us in row.get("per_case_us", {}).items()}
    assert all(c.count("x") == 3 for c in relabeled["cases"]) and relabeled["cases"] != old["cases"]
    assert estimate.estimate(relabeled, FIGURES, BOARD) == estimate.estimate(old, FIGURES, BOARD)
    assert estimate.case_bytes("1x768x512/W3") == estimate.case_bytes("1x768x512x3") == 8 * 768 * 512
