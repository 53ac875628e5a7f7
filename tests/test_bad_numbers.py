"""Numbers, ids, times and settings that are not what they claim: a 400-digit integer (float() overflows), an
id of 5,000 digits (int() refuses past 4,300), Unicode digits (str.isdigit() takes '²'), text that is no
number ('1.2.3'), JSON nested past the recursion limit, a URL urlparse refuses, a time with an offset. Each
is one sentence, a skipped line with a warning, or no value; never a traceback, never a silent wrong answer."""
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, candidate, json_server, run_cli
from scripts import estimate, history, leaderboard, remote, times

HUGE = 10 ** 400  # float(HUGE) raises OverflowError
LONG_ID = "7" * 5000  # int() refuses more than 4,300 digits
GOOD = {"time": "2026-12-01T00:00:00+00:00", "gpu": "B200_Nebius", "outcome": "pass", "source": "remote",
        "submission_id": 1, "geomean_us": 10.0}


def one_sentence(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


# ----------------------------------------------------------------------------- 1. the history's numbers


BAD_LINES = {
    "geomean 400 digits": dict(GOOD, submission_id=2, geomean_us=HUGE),
    "run score 400 digits": dict(GOOD, submission_id=3, runs=[{"mode": "leaderboard", "secret": False, "passed": True,
                                                               "runner": "B200_Nebius", "score_us": HUGE}]),
    "geomean 1e-300": dict(GOOD, submission_id=4, geomean_us=1e-300),  # read 0.00 and took the best mark
    "time out of range in UTC": dict(GOOD, submission_id=5, time="0001-01-01T00:00:00+05:00"),
}


@pytest.mark.parametrize("name", BAD_LINES)
def test_a_history_line_with_a_number_no_float_holds_is_a_skipped_line(tmp_path, name):
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps(BAD_LINES[name]) + "\n" + json.dumps(GOOD) + "\n")
    warned = []
    assert history.read_entries(path, warn=warned.append) == [GOOD]
    assert len(warned) == 1 and "line 1 is not a history entry" in warned[0]


@pytest.mark.parametrize("command", ["history", "remote list"])
def test_history_and_remote_list_skip_a_line_with_a_400_digit_score(fake_popcorn, command):
    env, _, tmp = fake_popcorn
    Path(env["WORKSPACE_HISTORY"]).write_text(json.dumps(BAD_LINES["geomean 400 digits"]) + "\n"
                                              + json.dumps(BAD_LINES["run score 400 digits"]) + "\n"
                                              + json.dumps(GOOD) + "\n")
    env["FAKE_OUTPUT"] = str(SAMPLES / "submissions_list.txt")
    proc = run_cli(command.split(), env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert ("10.00" in proc.stdout and "skipped" in proc.stderr) if command == "history" else (
        "3 new in the history" in proc.stdout)


# ----------------------------------------------------------------------------- 2. the estimate's numbers


def compare_record(fixed_us=2.0, tb_s=4.0) -> dict:
    """A compare record whose floor is fixed + bytes / bandwidth exactly (the H200's, so the calibration holds)."""
    cases = ["1x1536x2048", "1x2560x2048", "1x2560x4096", "4x2560x4096", "8x4096x8192"]
    floor = {c: fixed_us + estimate.case_bytes(c) / (tb_s * 1e6) for c in cases}
    geo = estimate.harness.geomean([floor[c] for c in cases[:3]])
    return {"device": "NVIDIA H200", "commit": "abc1234", "date": "2026-12-04", "cases": cases,
            "impls": {"floor": {"kind": "copy", "per_case_us": floor, "geomean_us": geo},
                      "submission": {"kind": "submission", "per_case_us": {c: 1.1 * us for c, us in floor.items()},
                                     "geomean_us": 1.1 * geo}}}


@pytest.mark.parametrize("field,value", [
    ("per_case_us", HUGE), ("geomean_us", "Infinity"), ("geomean_us", 1e-300), ("geomean_us", HUGE),
    ("geomean_us", -3.0), ("geomean_us", "true"), ("geomean_us", 1e300),
])
def test_a_compare_record_with_a_time_that_is_no_time_is_one_sentence(tmp_path, field, value):
    record = compare_record()
    row = record["impls"]["submission"]
    if field == "per_case_us":
        row["per_case_us"]["1x1536x2048"] = "VALUE"
    else:
        row["geomean_us"] = "VALUE"
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(record).replace('"VALUE"', str(value)))
    with pytest.raises(estimate.EstimateError, match="not a time"):
        estimate.read_record(path)
    proc = run_cli(["estimate", str(path)], {"POPCORN_API_URL": ""})
    assert proc.returncode == 1 and "'submission'" in one_sentence(proc.stderr)


@pytest.mark.parametrize("fixed_us,tb_s", [(-0.5, 4.0), (100.0, -40.0)])
def test_a_floor_fit_without_a_positive_bandwidth_and_fixed_time_is_refused_in_one_sentence(fixed_us, tb_s):
    report = estimate.estimate(compare_record(fixed_us, tb_s), estimate.load_figures(), ([], "none (test)"))
    bandwidth, calibration = report["methods"]
    assert "fit" not in bandwidth and bandwidth["impls"] == {}
    assert len(bandwidth["missing"]) == 1 and "not both positive" in bandwidth["missing"][0]
    assert calibration["missing"] == [] and report["impls"]["submission"]["low_by"].startswith("calibration")
    assert "floor on the H200" not in estimate.format_estimate(report)


def test_the_estimate_command_names_a_fit_that_is_no_copy(tmp_path):
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(compare_record(100.0, -40.0)))
    proc = run_cli(["estimate", str(path)], {"POPCORN_API_URL": ""})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "bandwidth model: not computed: the floor's fit gives 100.00 us + bytes / -40.00 TB/s" in proc.stdout
    assert "floor on the H200" not in proc.stdout


# ----------------------------------------------------------------------------- 3. POPCORN_API_URL


BAD_URLS = ["http://[x", "http://127.0.0.1:99999", "http://127.0.0.1:port", "http://127.0.0.1:1/\n"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_malformed_popcorn_api_url_is_one_sentence_naming_it(url):
    with pytest.raises(remote.RemoteError, match="^POPCORN_API_URL=.* is not an http"):
        remote.fetch_standings(url, "causal_conv1d", "B200_Nebius")
    with pytest.raises(remote.RemoteError, match="^POPCORN_API_URL="):
        remote.fetch_board(url, "causal_conv1d")


@pytest.mark.parametrize("command", [["remote", "standings"], ["estimate"], ["submit", "--dry-run"]])
def test_each_command_that_asks_the_server_says_a_malformed_url_in_one_sentence(tmp_path, command):
    args = command + ([str(candidate(tmp_path))] if command[0] == "submit" else [])
    proc = run_cli(args, {"POPCORN_API_URL": "http://[x", "HOME": str(tmp_path)})
    assert "Traceback" not in proc.stderr, proc.stderr
    if command[0] == "remote":
        assert proc.returncode == 1 and "POPCORN_API_URL='http://[x' is not an http" in one_sentence(proc.stderr)
    else:
        assert proc.returncode == 0 and "POPCORN_API_URL='http://[x' is not an http" in proc.stdout, proc.stdout


# ----------------------------------------------------------------------------- 4. popcorn's submit output


def summary(**fields) -> str:
    run = {"mode": "leaderboard", "secret": False, "runner": "B200_Nebius", "passed": True, "score": 1.0e-05}
    return json.dumps({"submission_id": 31337, "leaderboard": "causal_conv1d", "runs": [run], **fields})


SUBMIT_OUTPUTS = {
    "JSON score of 400 digits": (summary(runs=[{"mode": "leaderboard", "secret": False, "runner": "B200_Nebius",
                                                "passed": True, "score": HUGE}]), "invalid score", 31337),
    "a benchmark time 1.2.3": ("✅ B: 1; D: 4; S: 16; W: 4; seed: 1\nB: 1; D: 1536; S: 2048; W: 4; seed: 1\n"
                               " ⏱ 1.2.3 ± 0.1 µs\n", "invalid score", None),
    "a benchmark time in Unicode digits": ("B: 1; D: 1536; S: 2048; W: 4; seed: 1\n ⏱ ١٢ ± 0.1 µs\n",
                                           "invalid score", None),
    "an accepted id of 5,000 digits": (f"Submission {LONG_ID} accepted.\n", "no score found", None),
    "a failed id of 5,000 digits": (f"Submission {LONG_ID} failed: boom\n", "failed", None),
    "a submission_id field of 5,000 digits": (f'{{"submission_id": {LONG_ID}\n', "partial", None),
    "a submission_id of '²'": (summary(submission_id="²") + "\n", "done", None),
    "a submission_id of '12²' in the text": ('"submission_id": 12²\nSubmission 12² accepted.\n', "no score found",
                                             None),
    "a queue of 5,000 digits": (f"Submission 5 accepted. B200 GPU queue: {LONG_ID} queued job\n" + summary(),
                                "done", 31337),
    "a line nested past the recursion limit": ('{"a": ' * 100_000 + "\n" + summary() + "\n", "done", 31337),
    "a refusal nested past the recursion limit": ("Server returned status 400: " + "[" * 100_000 + "\n",
                                                  "refused", None),
    "a wait of 400 digits": (f"Server returned status 429: Try again in {'9' * 400}s.\n", "refused", None),
}


@pytest.mark.parametrize("name", SUBMIT_OUTPUTS)
def test_popcorn_submit_output_with_bad_numbers_or_ids_is_read_without_a_traceback(name):
    text, status, submission_id = SUBMIT_OUTPUTS[name]
    record = remote.parse_submit_output(text)
    assert record["status"] == status and record["submission_id"] == submission_id, record["message"]
    numbers = [r["score_us"] for r in record["runs"]] + [c.get("mean_us") for c in record["cases"]]
    assert all(us is None or 1e-3 <= us < 1e9 for us in numbers)
    assert record["ids_found"] == ([] if submission_id is None else [submission_id])  # '12²' was read as 12
    if status == "invalid score":
        assert "not a finite positive number" in record["message"]
    if record["refusal"]:
        assert record["refusal"]["wait_s"] is None and "inf" not in record["message"]


def test_a_submit_whose_score_overflows_is_recorded_one_sentence_and_its_output_kept(fake_popcorn):
    env, _, tmp = fake_popcorn
    (tmp / "answer.txt").write_text("Submission 31337 accepted.\n" + SUBMIT_OUTPUTS["JSON score of 400 digits"][0])
    env["FAKE_OUTPUT"] = str(tmp / "answer.txt")
    proc = run_cli(["submit", str(candidate(tmp))], env)
    assert proc.returncode == 1 and "invalid score" in one_sentence(proc.stderr)
    entry = history.read_entries(Path(env["WORKSPACE_HISTORY"]))[-1]
    assert entry["outcome"] == "invalid score" and entry["submission_id"] == 31337
    assert Path(entry["output"]).read_text() == (tmp / "answer.txt").read_text()


# ----------------------------------------------------------------------------- 5. ids in list and show


@pytest.mark.parametrize("bad_id", ["3129²", "٣١٢٩٠", "-3129"])
def test_a_list_row_whose_id_is_no_ascii_number_is_skipped_with_a_warning(bad_id):
    text = (SAMPLES / "submissions_list.txt").read_text().replace("31290", f"{bad_id:<5}", 1)
    warned = []
    rows = remote.parse_list(text, warn=warned.append)
    assert [r["submission_id"] for r in rows] == [31337, 31288]
    assert len(warned) == 1 and "its ID column is not a number" in warned[0]


@pytest.mark.parametrize("head", [f"Submission #{LONG_ID}", "Submission #12²", "Submission #٣١٣٣٧"])
def test_a_show_page_whose_id_is_no_submission_id_is_one_sentence(head):
    text = (SAMPLES / "submissions_show.txt").read_text().replace("Submission #31337", head, 1)
    with pytest.raises(ValueError, match="is not a submission id") as raised:
        remote.parse_show(text)
    assert len(str(raised.value)) < 200


@pytest.mark.parametrize("value,expect", [
    ("31337", 31337), (" 42 ", 42), (0, 0), (7, 7), ("12²", None), ("²", None), ("٣", None), ("1_000", None),
    ("+5", None), ("-5", None), (-5, None), (True, None), (1.0, None), (LONG_ID, None), (2 ** 63, None), ("", None),
])
def test_decimal_id_reads_ascii_digits_only_and_refuses_absurd_lengths(value, expect):
    assert remote.decimal_id(value) == expect


# ----------------------------------------------------------------------------- 6. the server's ranking


def test_a_ranking_score_no_float_holds_is_no_score(tmp_path):
    rows = [{"rank": 1, "user_name": "huge", "submission_score": HUGE},
            {"rank": 2, "user_name": "tiny", "submission_score": 1e-300},
            {"rank": 3, "user_name": "fine", "submission_score": 1.2e-05}]
    with json_server(lambda path, cli_id: (200, rows)) as (url, _):
        found = remote.fetch_standings(url, "causal_conv1d", "B200_Nebius")
    assert [row["submission_score"] for row in found] == [None, None, 1.2e-05]
    assert remote.rank_of(10.0, found) == 1


# ----------------------------------------------------------------------------- 7. times with an offset


@pytest.mark.parametrize("text,expect", [
    ("2026-03-15T01:00:00-05:00", datetime.datetime(2026, 3, 15, 6, tzinfo=datetime.timezone.utc)),
    ("2026-03-15T01:00:00+05:30", datetime.datetime(2026, 3, 14, 19, 30, tzinfo=datetime.timezone.utc)),
    ("2026-03-15T01:00:00", datetime.datetime(2026, 3, 15, 1, tzinfo=datetime.timezone.utc)),
    ("0001-01-01T00:00:00+05:00", None), ("9999-12-31T23:00:00-05:00", None),
])
def test_an_aware_time_is_converted_to_utc_and_one_out_of_range_is_no_time(text, expect):
    moment = times.utc_time(text)
    assert moment == expect and (moment is None or moment.tzinfo == datetime.timezone.utc)


@pytest.mark.parametrize("deadline,said", [
    ("2099-03-15T01:00:00-05:00", "closes 2099-03-15 06:00 UTC"),
    ("9999-12-31T23:00:00-05:00", "a deadline that is not a date"),
])
def test_the_deadline_is_said_in_utc(tmp_path, deadline, said):
    boards = [{"name": "causal_conv1d", "deadline": deadline, "gpu_types": ["B200_Nebius"]}]
    with json_server(lambda path, cli_id: (200, boards)) as (url, _):
        board, sentence = leaderboard.ask_board(environ={"POPCORN_API_URL": url}, home=tmp_path)
    assert said in sentence


def test_with_no_server_to_ask_the_last_known_deadline_is_said_beside_it(tmp_path):
    """POPCORN_API_URL unset: the deadline goes unchecked, and the sentence says when the board last closed,
    so a dry run on a closed board is not read as a green light."""
    board, sentence = leaderboard.ask_board(environ={}, home=tmp_path)
    assert board is None and "was not asked" in sentence and "closed on 2026-03-15 01:00 UTC" in sentence


# ----------------------------------------------------------------------------- 8. ~/.popcorn.yaml


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "cli_id: " + "[" * 5000])
def test_a_popcorn_yaml_nested_past_the_recursion_limit_is_one_sentence(tmp_path, text):
    (tmp_path / ".popcorn.yaml").write_text(text)
    with pytest.raises(remote.RemoteError, match="cannot be read as YAML"):
        remote.popcorn_settings({}, tmp_path)


# ----------------------------------------------------------------------------- 9. where popcorn's answers are kept


@pytest.mark.parametrize("setting,remote_folder", [
    ("", "results/remote"),  # used to be ./remote in the working tree
    ("   ", "results/remote"),
    ("h.jsonl", "results/remote"),  # a history in the tree: its answers still go where git ignores them
    ("scripts/h.jsonl", "results/remote"),
    ("{tmp}/h.jsonl", "{tmp}/remote"),  # a history outside the workspace keeps them beside it
    (None, "results/remote"),
])
def test_popcorn_answers_are_kept_under_results_remote_unless_the_history_lies_outside_the_workspace(
        tmp_path, setting, remote_folder):
    env = {k: v for k, v in os.environ.items() if k != "WORKSPACE_HISTORY"}
    if setting is not None:
        env["WORKSPACE_HISTORY"] = setting.format(tmp=tmp_path)
    proc = subprocess.run([sys.executable, "-c", "from scripts import history; print(history.REMOTE.resolve())"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == (ROOT / remote_folder.format(tmp=tmp_path)).resolve()


@pytest.mark.parametrize("setting", ["", "   "])
def test_a_blank_history_setting_refuses_the_history_in_one_sentence_naming_it(tmp_path, setting):
    """'   ' was a history file named three spaces in the working folder."""
    proc = run_cli(["history"], {"WORKSPACE_HISTORY": setting}, cwd=tmp_path)
    assert proc.returncode == 1 and "WORKSPACE_HISTORY" in one_sentence(proc.stderr)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("chain", ["public", "secret"])
@pytest.mark.parametrize("mean", ["nan", "inf", "1e-300", "0.0", str(HUGE), "1.2.3", "\u0663", None],
                         ids=["nan", "inf", "tiny", "zero", "huge", "two-dots", "arabic-three", "missing"])
def test_a_judged_mean_that_is_no_time_fails_its_stage_in_one_sentence(tmp_path, mean, chain):
    """The judge reads eval.py's benchmark means as the history will; one that is no time (it used to print
    'secret inf us', write a score_us the reader then skipped, or crash on float('1.2.3')) fails its leaderboard
    stage, named, so the verdict is failed or hidden and the history line still reads."""
    from scripts import judge

    def leaderboard_stage(which, second):
        lines = {"check": "pass", "benchmark-count": "2", "benchmark.0.mean": "8000.0"}
        lines.update({} if second is None else {"benchmark.1.mean": second})
        stage = judge.Stage(chain=which, mode="leaderboard", code=0, lines=lines)
        judge.settle(stage, b"")
        return stage

    good, bad = leaderboard_stage(chain, "2000.0"), leaderboard_stage(chain, mean)
    assert good.passed and good.score_s() == pytest.approx(4e-6)  # the geomean of 8 and 2 us
    assert not bad.passed and bad.score_s() is None and "benchmark 1 mean" in bad.error
    other = leaderboard_stage("secret" if chain == "public" else "public", "2000.0")
    chains = {chain: [bad], other.chain: [other]}
    record = judge._record(tmp_path / "submission.py", "NVIDIA H200", True, 5, chains)
    assert record["verdict"] == ("failed" if chain == "public" else "hidden")
    sentence = judge.verdict_sentence(record)
    assert "benchmark 1 mean" in sentence and "\n" not in sentence
    path = tmp_path / "h.jsonl"
    history.append_entry(history.judge_entry(record), path)
    entry, = history.read_entries(path, warn=pytest.fail)
    assert entry["geomean_us"] is None
    scores = {r["secret"]: r["score_us"] for r in entry["runs"]}
    assert scores[chain == "secret"] is None and scores[chain != "secret"] == pytest.approx(4.0)
