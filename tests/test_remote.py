"""What popcorn-cli and the server say back, the preflight as the server judges, and the remote history.

The samples in tests/samples follow popcorn-cli v1.3.23's output (2026-06): a 1.3 success with public and
secret scores, a 1.3 failure, an older text report, a `submissions list` and a `submissions show` page.
"""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import GOOD_BODY, ROOT, SAMPLES, candidate, json_server, run_cli
from scripts import history, leaderboard, remote

def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


# ----------------------------------------------------------------------------- reading popcorn


def test_a_1_3_success_gives_id_runs_and_both_scores_in_microseconds():
    record = remote.parse_submit_output(sample("popcorn_1_3_success.txt"))
    assert record["submission_id"] == 31337 and record["status"] == "done" and record["format"] == "1.3"
    assert [(r["mode"], r["secret"], r["passed"]) for r in record["runs"]] == [
        ("test", False, True), ("benchmark", False, True), ("leaderboard", False, True), ("leaderboard", True, True)]
    assert record["runs"][2]["score_us"] == pytest.approx(10.021) and record["runs"][3]["score_us"] == pytest.approx(10.104)
    assert [(s["secret"], s["runner"]) for s in record["scores"]] == [(False, "B200_Nebius"), (True, "B200_Nebius")]
    assert record["scores"][0]["score_us"] == pytest.approx(10.021)


def test_a_1_3_failure_is_recorded_failed_with_popcorns_message():
    record = remote.parse_submit_output(sample("popcorn_1_3_failure.txt"))
    assert record["submission_id"] == 4321 and record["status"] == "failed"
    assert record["message"].startswith("test 2 failed: mismatch found!") and record["runs"] == []


def test_the_older_text_report_gives_the_benchmark_means_and_test_marks():
    record = remote.parse_submit_output(sample("popcorn_text_report.txt"))
    assert record["format"] == "text report" and record["status"] == "done"
    assert record["benchmark_means_us"] == pytest.approx([7.41, 10.92, 19.84])
    assert record["tests_passed"] == 1 and record["tests_failed"] == 0


def test_output_with_nothing_to_read_is_no_score_found_never_a_number():
    record = remote.parse_submit_output("Submitting to leaderboard: causal_conv1d\nError: connection refused\n")
    assert record["status"] == "no score found" and record["scores"] == [] and record["runs"] == []


def test_submissions_list_and_show_pages():
    rows = remote.parse_list(sample("submissions_list.txt"))
    assert [r["submission_id"] for r in rows] == [31337, 31290, 31288]
    assert rows[1]["file_name"] == "submission_helio..." and rows[1]["score_us"] == pytest.approx(100.0)
    assert rows[0]["score_us"] is None and rows[0]["score_text"] == "0.0000"  # under the list's precision
    assert rows[2]["gpu"] is None and rows[2]["status"] == "pending"
    page = remote.parse_show(sample("submissions_show.txt"))
    assert page["submission_id"] == 31337 and page["leaderboard"] == "causal_conv1d" and page["status"] == "done"
    assert [(r["mode"], r["secret"], r["passed"]) for r in page["runs"]][-2:] == [
        ("leaderboard", False, True), ("leaderboard", True, True)]
    with pytest.raises(ValueError, match="not a `submissions show` page"):
        remote.parse_show("No submissions found.\n")


# ----------------------------------------------------------------------------- the preflight


@pytest.mark.parametrize("text,message", [
    ("#!POPCORN leaderboard causal_conv1d\n#!POPCORN gpu B200_Nebius H100\n", "names 2 GPUs"),
    ("#!POPCORN leaderboard causal_conv1d\n#!POPCORN gpu B200_Nebius\n#!POPCORN gpu H100\n",
     "line 3: '#!POPCORN gpu' repeats line 2; the server refuses a directive given twice"),
    ("#!POPCORN leaderboard causal_conv1d\n  #!POPCORN gpu B200_Nebius\n", "no GPU"),  # not at column 0
])
def test_directives_are_read_as_popcorn_reads_them(text, message):
    with pytest.raises(leaderboard.PreflightError, match=message):
        leaderboard.resolve_target(text, None, None)


def test_slash_directives_count_too():
    text = "//!POPCORN leaderboard causal_conv1d\n//!POPCORN gpu B200_Nebius\n"
    assert leaderboard.resolve_target(text, None, None)[:2] == ("causal_conv1d", "B200_Nebius")


def test_the_compile_step_warns_about_a_slow_or_failing_main(tmp_path, monkeypatch):
    monkeypatch.setattr(leaderboard, "COMPILE_WARN_S", 0.5)
    slow = tmp_path / "slow.py"
    slow.write_text("import time\nif __name__ == '__main__':\n    time.sleep(1.5)\n")
    assert re.search(r"took \d+ s: module-level or __main__ work", leaderboard.compile_step(slow, ROOT))
    broken = tmp_path / "broken.py"
    broken.write_text("import task\nraise SystemExit('no GPU here')\n")
    assert "failed on its own (exit 1: no GPU here)" in leaderboard.compile_step(broken, ROOT)
    fine = tmp_path / "fine.py"
    fine.write_text("VALUE = 1\n")
    assert leaderboard.compile_step(fine, ROOT) is None


# ----------------------------------------------------------------------------- the CLI with a fake popcorn


def test_a_ranked_submit_records_id_runs_scores_hash_and_commit(fake_popcorn):
    env, record, tmp = fake_popcorn
    env["FAKE_OUTPUT"] = str(SAMPLES / "popcorn_1_3_success.txt")
    sub = candidate(tmp)
    proc = run_cli(["submit", str(sub), "--mode", "leaderboard", "--yes"], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    args = json.loads(record.read_text())
    assert args[:9] == ["submit", "--no-tui", "--leaderboard", "causal_conv1d", "--gpu", "B200_Nebius",
                        "--mode", "leaderboard", str(sub)]
    assert "Geomean score (public) on B200_Nebius: 1.0021e-05 s" in proc.stdout  # popcorn's output comes through
    assert ("recorded: submission 31337, done, test public passed on B200_Nebius, benchmark public passed on"
            " B200_Nebius, leaderboard public 10.02 us on B200_Nebius, leaderboard secret 10.10 us on B200_Nebius"
            in proc.stdout)  # each run named once
    entry = history.read_entries(Path(env["WORKSPACE_HISTORY"]))[-1]
    assert entry["submission_id"] == 31337 and entry["source"] == "popcorn" and entry["mode"] == "leaderboard"
    assert entry["gpu"] == "B200_Nebius" and entry["leaderboard"] == "causal_conv1d" and entry["outcome"] == "pass"
    assert entry["file_hash"] == history.file_hash(sub) and entry["commit"]
    assert entry["geomean_us"] == pytest.approx(10.021) and history.remote_scores(entry)[1] == pytest.approx(10.104)
    assert Path(entry["output"]).is_file()


def test_a_ranked_run_asks_first_and_dry_run_sends_nothing(fake_popcorn):
    env, record, tmp = fake_popcorn
    env["FAKE_OUTPUT"] = str(SAMPLES / "popcorn_1_3_success.txt")
    proc = run_cli(["submit", str(candidate(tmp)), "--mode", "leaderboard"], env, input_text="n\n")
    assert proc.returncode != 0 and "Aborted" in proc.stdout + proc.stderr and not record.exists()
    proc = run_cli(["submit", str(candidate(tmp)), "--dry-run"], env)
    assert proc.returncode == 0 and "submit --no-tui --leaderboard causal_conv1d --gpu B200_Nebius --mode test" in proc.stdout
    assert not record.exists() and not Path(env["WORKSPACE_HISTORY"]).exists()


def test_a_dry_run_without_popcorn_says_a_real_submit_would_stop_there(fake_popcorn):
    """It used to print the command for a popcorn-cli that was not there, and no more."""
    env, record, tmp = fake_popcorn
    env["POPCORN_BIN"] = str(tmp / "nowhere")
    proc = run_cli(["submit", str(candidate(tmp)), "--dry-run"], env)
    assert proc.returncode == 0 and "popcorn-cli submit --no-tui" in proc.stdout, proc.stdout + proc.stderr
    assert f"warning: a real submit would stop at its first step: POPCORN_BIN={tmp / 'nowhere'}" in proc.stdout


def test_a_failed_job_is_recorded_failed_and_exits_non_zero(fake_popcorn):
    env, record, tmp = fake_popcorn
    env.update(FAKE_OUTPUT=str(SAMPLES / "popcorn_1_3_failure.txt"), FAKE_EXIT="1")
    proc = run_cli(["submit", str(candidate(tmp))], env)
    assert proc.returncode != 0 and "test 2 failed: mismatch found!" in proc.stderr
    entry = history.read_entries(Path(env["WORKSPACE_HISTORY"]))[-1]
    assert entry["outcome"] == "failed" and entry["submission_id"] == 4321 and "mismatch" in entry["message"]


def test_nothing_to_read_is_recorded_as_no_score_found_with_the_saved_output(fake_popcorn):
    env, record, tmp = fake_popcorn
    (tmp / "odd.txt").write_text("something popcorn never prints\n")
    env["FAKE_OUTPUT"] = str(tmp / "odd.txt")
    proc = run_cli(["submit", str(candidate(tmp))], env)
    assert proc.returncode == 1 and "no score found in popcorn's output (exit 0): it is saved in" in proc.stderr
    entry = history.read_entries(Path(env["WORKSPACE_HISTORY"]))[-1]
    assert entry["outcome"] == "no score found" and entry["geomean_us"] is None and Path(entry["output"]).is_file()


@pytest.mark.parametrize("body,message", [
    ("# keeps work on one stream\n" + GOOD_BODY, "contains 'stream'.*line 3: # keeps work on one stream"),
    ("import cupy\n" + GOOD_BODY, "imports cupy"),
    ("PAD = '" + "x" * 1_000_001 + "'\n" + GOOD_BODY, "over 1,000,000 bytes"),
])
def test_every_preflight_refusal_comes_before_popcorn_is_called(fake_popcorn, body, message):
    env, record, tmp = fake_popcorn
    env["FAKE_OUTPUT"] = str(SAMPLES / "popcorn_1_3_success.txt")
    proc = run_cli(["submit", str(candidate(tmp, body))], env)
    assert proc.returncode != 0 and re.search(message, proc.stderr), proc.stderr
    assert not record.exists() and "Traceback" not in proc.stderr
    assert "preflight: the local correctness suite" not in proc.stdout  # refused before the slow step


def test_no_popcorn_is_said_first_before_any_test_runs(fake_popcorn):
    env, record, tmp = fake_popcorn
    no_popcorn = dict(env, PATH=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin")
    start = time.monotonic()
    proc = run_cli(["submit", str(candidate(tmp))], no_popcorn)
    assert proc.returncode != 0 and "popcorn-cli was not found" in proc.stderr and "Traceback" not in proc.stderr
    assert "correctness suite" not in proc.stdout and time.monotonic() - start < 30


def test_remote_list_and_show_merge_into_the_history_once(fake_popcorn):
    env, record, tmp = fake_popcorn
    env["FAKE_OUTPUT"] = str(SAMPLES / "submissions_list.txt")
    for expected in ("3 new in the history", "0 new in the history"):
        proc = run_cli(["remote", "list"], env)
        assert proc.returncode == 0 and expected in proc.stdout, proc.stdout + proc.stderr
    assert json.loads(record.read_text()) == ["submissions", "list", "--leaderboard", "causal_conv1d"]
    env["FAKE_OUTPUT"] = str(SAMPLES / "submissions_show.txt")
    for expected in ("1 new in the history", "0 new in the history"):
        proc = run_cli(["remote", "show", "31337"], env)
        assert proc.returncode == 0 and expected in proc.stdout, proc.stdout + proc.stderr
    entries = history.read_entries(Path(env["WORKSPACE_HISTORY"]))
    assert len(entries) == 4 and sum(e["submission_id"] == 31337 for e in entries) == 2


def test_remote_without_popcorn_or_when_popcorn_fails_says_so_in_one_sentence(fake_popcorn):
    env, record, tmp = fake_popcorn
    no_popcorn = dict(env, PATH=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin")
    proc = run_cli(["remote", "list"], no_popcorn)
    assert proc.returncode != 0 and "popcorn-cli was not found" in proc.stderr and "Traceback" not in proc.stderr
    (tmp / "unregistered.txt").write_text("Error: not registered: run popcorn-cli register github\n")
    env.update(FAKE_OUTPUT=str(tmp / "unregistered.txt"), FAKE_EXIT="1")
    proc = run_cli(["remote", "show", "1"], env)
    assert proc.returncode != 0 and "failed (exit 1): Error: not registered" in proc.stderr


# ----------------------------------------------------------------------------- the public ranking


RANKING = [{"submission_id": 9, "rank": 1, "submission_name": "a.py", "submission_time": "2026-03-14T00:00:00",
            "submission_score": 1.0e-05, "leaderboard_name": "causal_conv1d", "user_id": 1, "user_name": "first",
            "gpu_type": "B200_Nebius"},
           {"submission_id": 8, "rank": 2, "submission_name": "b.py", "submission_time": "2026-03-14T00:00:00",
            "submission_score": 1.2e-05, "leaderboard_name": "causal_conv1d", "user_id": 2, "user_name": "second",
            "gpu_type": "B200_Nebius"}]


@pytest.fixture
def fake_server():
    """A KernelBot-like server on 127.0.0.1 answering the ranking, or 403 for one leaderboard path."""
    def answer(path, cli_id):
        return (200, RANKING) if path.startswith("/submissions/causal_conv1d/B200_Nebius") else (403, None)

    with json_server(answer) as served:
        yield served


def test_standings_print_the_top_and_the_rank_our_best_would_take(fake_server, tmp_path):
    url, seen = fake_server
    home = tmp_path / "home"
    home.mkdir()
    (home / ".popcorn.yaml").write_text("cli_id: abc123\n")
    hist = tmp_path / "h.jsonl"
    history.append_entry(history.remote_entry(remote.parse_submit_output(sample("popcorn_1_3_success.txt")),
                                              "popcorn", mode="leaderboard"), hist)
    env = {"POPCORN_API_URL": url, "HOME": str(home), "WORKSPACE_HISTORY": str(hist)}
    proc = run_cli(["remote", "standings", "--top", "5"], env)
    assert proc.returncode == 0, proc.stderr
    assert "first" in proc.stdout and "10.00" in proc.stdout and "12.00" in proc.stdout
    assert "ours: 10.02 us would take rank 2 of 3" in proc.stdout
    assert seen[0][0].startswith("/submissions/causal_conv1d/B200_Nebius?limit=") and seen[0][1] == "abc123"


def test_standings_refused_or_unreachable_in_one_sentence(fake_server, tmp_path):
    url, _ = fake_server
    proc = run_cli(["remote", "standings", "--gpu", "H100"], {"POPCORN_API_URL": url, "HOME": str(tmp_path)})
    assert proc.returncode != 0 and "refused the ranking of causal_conv1d on H100: HTTP 403" in proc.stderr
    proc = run_cli(["remote", "standings"], {"POPCORN_API_URL": "http://127.0.0.1:9", "HOME": str(tmp_path)})
    assert proc.returncode != 0 and "could not be reached" in proc.stderr and "Traceback" not in proc.stderr
    env = {k: v for k, v in os.environ.items() if k != "POPCORN_API_URL"}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "cli.py"), "remote", "standings"], cwd=ROOT,
                          env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "POPCORN_API_URL is not set" in proc.stderr


# ----------------------------------------------------------------------------- history a competitor reads


def test_the_best_mark_goes_to_submissions_never_to_a_baseline(tmp_path):
    path = tmp_path / "h.jsonl"
    base = {"time": "2026-12-02T12:00:00+00:00", "gpu": "NVIDIA H200", "outcome": "pass", "source": "compare"}
    history.append_entry(dict(base, mode="triton_copy_4096_4", kind="copy", geomean_us=12.7, file="scripts/baselines.py"),
                         path)
    history.append_entry(dict(base, mode="triton_fast", kind="variant", geomean_us=12.5, file="variants/triton_fast.py"),
                         path)
    history.append_entry(dict(base, mode="submission", geomean_us=13.0, file="submission.py", file_hash="aaa"), path)
    history.append_entry(history.remote_entry(remote.parse_submit_output(sample("popcorn_1_3_success.txt")),
                                              "popcorn", mode="leaderboard", file="submission.py", file_hash="aaa"),
                         path)
    entries = history.read_entries(path)
    assert history.best_per_gpu(entries) == {"NVIDIA H200": 2, "B200_Nebius": 3}  # a variant named triton_* is no baseline, nor a submission
    table = history.by_file(entries).splitlines()
    assert len(table) == 2 and "13.00 (NVIDIA H200)" in table[1] and "10.02" in table[1] and "10.10" in table[1]


def test_submit_with_a_history_no_run_may_write_sends_nothing(fake_popcorn):
    """submit used to spend the remote run and only then find it could not record the answer."""
    env, record, tmp = fake_popcorn
    env["FAKE_OUTPUT"] = str(SAMPLES / "popcorn_1_3_success.txt")
    env["WORKSPACE_HISTORY"] = str(tmp / "history.py")
    proc = run_cli(["submit", str(candidate(tmp))], env)
    assert proc.returncode == 1 and "names a Python file" in proc.stderr and "nothing was submitted" in proc.stderr
    assert not record.exists() and not (tmp / "history.py").exists()
