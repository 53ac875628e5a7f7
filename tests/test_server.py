"""The judge for a closed leaderboard: the server asked about its deadline, the server's rules and
KernelGuard in the preflight, popcorn's newer answers and HTTP refusals, and the runner's chain run
locally (`judge`). Fake servers listen on 127.0.0.1 only and stop with their test."""
import datetime
import json
import os
import re
from pathlib import Path

import pytest

import eval as harness
import reference
from conftest import DIRECTIVES, GOOD_BODY, ROOT, SAMPLES, candidate, json_server, run_cli
from scripts import history, judge, leaderboard, remote, times

HAS_KERNELGUARD = leaderboard.kernelguard_command() is not None
needs_kernelguard = pytest.mark.skipif(not HAS_KERNELGUARD,
                                       reason="kernelguard is not installed (pip install -r requirements-guard.txt)")
PAST = "2026-03-15T01:00:00+00:00"
FUTURE = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S")


@pytest.fixture
def board_server():
    """A KernelBot-like server on 127.0.0.1: /leaderboards with the deadline the test sets, and a ranking."""
    state = {"deadline": PAST}

    def answer(path, cli_id):
        if path == "/leaderboards":
            return 200, [{"id": 7, "name": "grayscale", "deadline": FUTURE, "gpu_types": ["H100"]},
                         {"id": 9, "name": "causal_conv1d", "deadline": state["deadline"], "gpu_types": ["B200_Nebius"],
                          "task": {}, "creator_id": 1, "forum_id": 2, "description": "", "visibility": "public"}]
        if path.startswith("/submissions/causal_conv1d/B200_Nebius"):
            return 200, [{"rank": 1, "user_name": "first", "submission_score": 1.0e-05}]
        return 404, None

    with json_server(answer) as (url, seen):
        state.update(url=url, seen=seen)
        yield state


# ----------------------------------------------------------------------------- the deadline, asked


def test_past_the_deadline_submit_refuses_before_any_test_and_never_calls_popcorn(fake_popcorn, board_server, tmp_path):
    env, record, tmp = fake_popcorn
    home = tmp_path / "home"
    home.mkdir()
    (home / ".popcorn.yaml").write_text("cli_id: abc123\n")
    env.update(FAKE_OUTPUT=str(SAMPLES / "popcorn_1_3_success.txt"), POPCORN_API_URL=board_server["url"], HOME=str(home))
    proc = run_cli(["submit", str(candidate(tmp))], env)
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    assert proc.returncode == 1 and not record.exists(), proc.stdout + proc.stderr
    assert f"closed on 2026-03-15 01:00 UTC and today is {today}" in proc.stderr and "Traceback" not in proc.stderr
    assert "correctness suite" not in proc.stdout and "KernelGuard" not in proc.stdout
    assert board_server["seen"][0] == ("/leaderboards", "abc123")  # asked as popcorn asks, with its cli_id


def test_before_the_deadline_or_with_the_server_unreachable_the_submit_goes_on(fake_popcorn, board_server):
    env, record, tmp = fake_popcorn
    board_server["deadline"] = FUTURE
    env.update(FAKE_OUTPUT=str(SAMPLES / "popcorn_1_3_success.txt"), POPCORN_API_URL=board_server["url"])
    proc = run_cli(["submit", str(candidate(tmp))], env)
    assert proc.returncode == 0 and record.exists(), proc.stdout + proc.stderr
    assert f"the server says causal_conv1d closes {FUTURE[:10]}" in proc.stdout
    record.unlink()
    env["POPCORN_API_URL"] = "http://127.0.0.1:9"
    proc = run_cli(["submit", str(candidate(tmp))], env)
    assert proc.returncode == 0 and record.exists(), proc.stdout + proc.stderr
    said = [line for line in proc.stdout.splitlines() if "could not be reached" in line]
    assert len(said) == 1 and "popcorn will say what the server says" in said[0]


def test_standings_print_the_deadline_and_call_a_closed_ranking_final(board_server, tmp_path):
    env = {"POPCORN_API_URL": board_server["url"], "HOME": str(tmp_path), "WORKSPACE_HISTORY": str(tmp_path / "h.jsonl")}
    proc = run_cli(["remote", "standings"], env)
    assert proc.returncode == 0 and "deadline: 2026-03-15 01:00 UTC, passed: this ranking is final" in proc.stdout
    board_server["deadline"] = FUTURE
    proc = run_cli(["remote", "standings"], env)
    assert proc.returncode == 0 and "still open: the ranking can change" in proc.stdout


def test_a_deadline_without_an_offset_is_utc():
    board = {"name": "causal_conv1d", "deadline": times.utc_time("2026-03-15T01:00:00")}
    assert board["deadline"] == datetime.datetime(2026, 3, 15, 1, tzinfo=datetime.timezone.utc)
    assert remote.deadline_passed(board, datetime.datetime(2026, 3, 15, 1, 0, 1, tzinfo=datetime.timezone.utc))
    assert not remote.deadline_passed(board, datetime.datetime(2026, 3, 15, 0, 59, tzinfo=datetime.timezone.utc))
    assert times.utc_time("soon") is None and times.utc_time(None) is None


# ----------------------------------------------------------------------------- HTTP refusals popcorn relays


@pytest.mark.parametrize("answer,sentence", [
    ('Server returned status 400: {"detail": "The deadline to submit to causal_conv1d has passed. It was 2026-03-15 '
     '01:00:00+00:00 and today is 2026-12-03."}', "the leaderboard's deadline has passed (HTTP 400): The deadline to"),
    ("Server returned status 403: This leaderboard is closed.", "closed to this account (HTTP 403): This leaderboard"),
    ("Server returned status 413: Submission file is too large (limit: 1MB).", "over the server's 1 MB limit (HTTP 413)"),
    ("Server returned status 429: Rate limit exceeded: 6/6 test submissions per hour. Try again in 1234s.",
     "hourly quota is spent (HTTP 429): Rate limit exceeded: 6/6 test submissions per hour. Try again in 1234s"
     " (wait 1234 s before the next try)."),
    ("Server returned status 500: Your code contains work on another stream. This is not allowed.",
     "contains the word 'stream' (HTTP 500): Your code contains work on another"),
])
def test_each_http_refusal_is_one_sentence_and_a_refused_record(fake_popcorn, answer, sentence):
    env, record, tmp = fake_popcorn
    (tmp / "answer.txt").write_text(f"Submitting to leaderboard: causal_conv1d\n{answer}\n")
    env.update(FAKE_OUTPUT=str(tmp / "answer.txt"), FAKE_EXIT="1")
    proc = run_cli(["submit", str(candidate(tmp))], env)
    assert proc.returncode == 1 and sentence in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len([line for line in proc.stderr.splitlines() if line.strip()]) == 1
    entry = history.read_entries(Path(env["WORKSPACE_HISTORY"]))[-1]
    assert entry["outcome"] == "refused" and sentence in entry["message"] and entry["refusal"]["code"] == int(answer[23:26])


# ----------------------------------------------------------------------------- popcorn's newer answers


def test_newer_ranked_output_plain_decimals_blank_line_queue_and_job():
    record = remote.parse_submit_output((SAMPLES / "popcorn_newer_ranked.txt").read_text())
    assert record["status"] == "done" and record["submission_id"] == 40001 and record["format"] == "1.3 with job"
    assert [s["score_us"] for s in record["scores"]] == pytest.approx([10.1234, 10.2001])
    assert record["queue"] == {"runner": "B200_Nebius", "queued": 3} and record["job"]["status"] == "succeeded"
    assert len(history.ranked_runs(record)) == 3  # the JSON's runs, not the score lines again


def test_newer_test_failure_rows_and_diagnostics_are_a_failed_record():
    record = remote.parse_submit_output((SAMPLES / "popcorn_newer_test_failure.txt").read_text())
    assert record["status"] == "failed" and record["message"] == "test 1 failed: mismatch found"
    assert [(c["passed"], c["error"]) for c in record["cases"]] == [
        (True, None), (False, "mismatch found! custom implementation does not match reference"), (True, None)]
    assert record["diagnostics"].startswith("Failure diagnostics (test on B200_Nebius):")
    assert "registers spilled" in record["diagnostics"]


def test_newer_benchmark_rows_read_ns_us_and_ms():
    record = remote.parse_submit_output((SAMPLES / "popcorn_newer_benchmark.txt").read_text())
    assert [c["spec"] for c in record["cases"]] == [c.spec for c in harness.cases_from_task("benchmarks")]
    assert [c["mean_us"] for c in record["cases"]] == pytest.approx([7.84, 1.85, 2500.0])
    assert record["cases"][1]["err_us"] == pytest.approx(0.0035)


def test_a_ranked_submit_without_a_ranked_score_is_unranked(fake_popcorn):
    record = remote.parse_submit_output((SAMPLES / "popcorn_newer_unranked.txt").read_text())
    assert record["status"] == "unranked" and "will not appear on the leaderboard" in record["message"]
    env, _, tmp = fake_popcorn
    env.update(FAKE_OUTPUT=str(SAMPLES / "popcorn_newer_unranked.txt"), FAKE_EXIT="1")
    proc = run_cli(["submit", str(candidate(tmp)), "--mode", "leaderboard", "--yes"], env)
    assert proc.returncode == 1 and "unranked: Submission 40004 failed secret validation" in proc.stderr
    entry = history.read_entries(Path(env["WORKSPACE_HISTORY"]))[-1]
    assert entry["outcome"] == "unranked" and entry["submission_id"] == 40004


def test_history_shows_each_remote_entrys_submission_id(tmp_path):
    path = tmp_path / "h.jsonl"
    history.append_entry(history.remote_entry(remote.parse_submit_output((SAMPLES / "popcorn_newer_ranked.txt")
                                                                         .read_text()), "popcorn", "leaderboard"), path)
    table = history.format_table(history.read_entries(path))
    assert re.search(r"pass\s+40001\s", table)


# ----------------------------------------------------------------------------- the server's rules in preflight


def preflight_text(tmp_path, text: str, name="s.py", gpus=None):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return leaderboard.preflight(path, None, None, lambda p: (True, ""), ROOT, need_popcorn=False,
                                 ask_server=(lambda: ({"name": "causal_conv1d", "deadline": None,
                                                       "gpu_types": gpus}, "asked")) if gpus else None)


@pytest.mark.parametrize("text,message", [
    ("#!POPCORN leaderboard causal_conv1d\n#!POPCORN leaderboard causal_conv1d\n#!POPCORN gpu B200_Nebius\n",
     "line 2: '#!POPCORN leaderboard' repeats line 1; the server refuses a directive given twice"),
    ("#!POPCORN leaderboard causal_conv1d\n#!POPCORN gpu B200_Nebius\n#!POPCORN gpus B200_Nebius\n",
     "lines 2 and 3: both 'gpu' and 'gpus'"),
    ("#!POPCORN leaderboard causal_conv1d\n#!POPCORN gpu B200_Nebius\n#!POPCORN tile 1024\n",
     "line 3: '#!POPCORN tile' is not a directive the server knows"),
    ("#!POPCORN leaderboard causal_conv1d\n#!POPCORN gpu\n#!POPCORN gpu B200_Nebius\n",
     "line 2: '#!POPCORN gpu' has no value; the server refuses it"),
    ("#!POPCORN\n#!POPCORN leaderboard causal_conv1d\n#!POPCORN gpu B200_Nebius\n", "line 1: '#!POPCORN' with no key"),
])
def test_the_servers_directive_rules_name_rule_and_line(tmp_path, text, message):
    with pytest.raises(leaderboard.PreflightError, match=re.escape(message)):
        preflight_text(tmp_path, text + GOOD_BODY)


def test_a_leaderboard_flag_against_the_files_directive_and_a_gpu_the_server_does_not_list(tmp_path):
    text = "#!POPCORN leaderboard causal_conv1d_old\n#!POPCORN gpu B200_Nebius\n" + GOOD_BODY
    (tmp_path / "s.py").write_text(text)
    with pytest.raises(leaderboard.PreflightError, match="line 1: the file names leaderboard 'causal_conv1d_old' but"
                                                         " goes to 'causal_conv1d'; the server refuses the mismatch"):
        leaderboard.preflight(tmp_path / "s.py", "causal_conv1d", None, lambda p: (True, ""), ROOT, need_popcorn=False)
    with pytest.raises(leaderboard.PreflightError, match=r"'B200_Nebius' is not one the causal_conv1d leaderboard runs"
                                                         r" on \(H100\)"):
        preflight_text(tmp_path, DIRECTIVES + GOOD_BODY, gpus=["H100"])


@pytest.mark.parametrize("content,name,message", [
    (DIRECTIVES + GOOD_BODY, "s.txt", "does not end in .py"),
    ("", "s.py", "is empty; the server refuses an empty file"),
    ("\n  \n", "s.py", "is empty"),
    ((DIRECTIVES + "# caf\xe9\n").encode("latin-1") + GOOD_BODY.encode(), "s.py", r"not valid UTF-8 \(line 3, byte"),
])
def test_the_servers_file_rules(tmp_path, content, name, message):
    with pytest.raises(leaderboard.PreflightError, match=message):
        preflight_text(tmp_path, content, name)


def test_directives_below_the_first_comment_block_get_a_warning(tmp_path):
    text = "#!POPCORN leaderboard causal_conv1d\n\n#!POPCORN gpu B200_Nebius\n" + GOOD_BODY
    checked = preflight_text(tmp_path, text)
    assert checked["gpu"] == "B200_Nebius"  # popcorn still reads it
    assert any("line 3: #!POPCORN gpu B200_Nebius is below the first comment block" in w for w in checked["warnings"])
    assert not any("first comment block" in w for w in preflight_text(tmp_path, DIRECTIVES + GOOD_BODY)["warnings"])


# ----------------------------------------------------------------------------- KernelGuard


@needs_kernelguard
def test_kernelguard_refuses_a_file_that_pip_installs_at_run_time(tmp_path):
    body = "import subprocess, sys\nsubprocess.check_call([sys.executable, '-m', 'pip', 'install', 'fastconv'])\n"
    with pytest.raises(leaderboard.PreflightError, match="KernelGuard classifies s.py hacked and the server would"
                                                         " reject it: RUNTIME_PACKAGE_INSTALL"):
        preflight_text(tmp_path, DIRECTIVES + body + GOOD_BODY)


@needs_kernelguard
@pytest.mark.parametrize("body,pattern", [
    ("_out = {}\ndef custom_kernel(data):\n    key = data[0].data_ptr()\n    if key in _out:\n        return _out[key]\n"
     "    _out[key] = data[0] * 2\n    return _out[key]\n", "POINTER_REPLAY"),
    ("seen = {}\ndef custom_kernel(data):\n    k = id(data[0])\n    if k in seen:\n        return seen[k]\n"
     "    seen[k] = data[0] + 1\n    return seen[k]\n", "LAST_CALL_REPLAY"),
])
def test_kernelguard_covers_the_caching_patterns_we_used_to_warn_about(tmp_path, body, pattern):
    with pytest.raises(leaderboard.PreflightError, match=pattern):
        preflight_text(tmp_path, DIRECTIVES + body)


@needs_kernelguard
def test_kernelguards_word_on_our_submissions_is_printed_never_hidden(tmp_path):
    checked = preflight_text(tmp_path, (ROOT / "submission.py").read_text())
    said = [w for w in checked["warnings"] if w.startswith("KernelGuard classifies s.py")]
    assert checked["kernelguard"]["classification"] == "low_confidence" and not checked["kernelguard"]["should_filter"]
    assert len(said) == 1 and "CUDA_GRAPH_PYTHON (medium)" in said[0]
    helion = preflight_text(tmp_path, (ROOT / "submissions" / "submission_helion.py").read_text())
    assert helion["kernelguard"]["classification"] == "valid" and not any("KernelGuard" in w for w in helion["warnings"])


def test_without_kernelguard_one_line_names_the_install(tmp_path, monkeypatch):
    monkeypatch.setattr(leaderboard, "kernelguard_command", lambda: None)
    checked = preflight_text(tmp_path, DIRECTIVES + GOOD_BODY)
    assert checked["kernelguard"] is None
    assert [w for w in checked["warnings"] if "KernelGuard" in w] == [leaderboard.KERNELGUARD_HINT]
    assert "pip install -r requirements-guard.txt" in leaderboard.KERNELGUARD_HINT


# ----------------------------------------------------------------------------- eval.py closer to the runner


def test_the_timed_call_gets_a_fresh_input_from_the_seed_the_rechecks_advanced(monkeypatch):
    args = {"B": 1, "D": 4, "S": 16, "W": 4, "seed": 77}
    seen = []

    def kernel(data):
        seen.append(data[0].clone())
        return reference.ref_kernel(data).clone()

    def one_call(fn, rep_ms):
        fn()
        return harness.calculate_stats([1.0, 1.0])

    monkeypatch.setattr(harness, "time_protocol", one_call)
    for mode, seed in (("leaderboard", 77 + 13 * harness.RECHECKS), ("benchmark", 77)):
        seen.clear()
        harness.run_case(mode, dict(args), kernel, reference)
        expected = reference.generate_input(**dict(args, seed=seed))[0]
        assert seen[-1].equal(expected), mode


def test_the_cool_down_follows_the_warm_up_and_every_timed_case_inside_the_limit(monkeypatch, tmp_path):
    calls = []

    class FakeWorker:
        def __init__(self, submission, secret):
            pass

        def run(self, mode, args, deadline, limit_s, **kwargs):
            calls.append(mode)
            return harness.Outcome(ok=True, stats=harness.calculate_stats([1000.0, 1000.0]))

        def close(self):
            pass

    monkeypatch.setattr(harness, "Worker", FakeWorker)
    monkeypatch.setattr(harness, "cool_down", lambda deadline: calls.append("cool down"))
    cases = harness.cases_from_task("benchmarks")
    harness.run_suite("benchmark", cases, tmp_path / "s.py", limit_s=100)
    assert calls == ["warmup", "cool down"] + ["benchmark", "cool down"] * len(cases)


def test_the_cool_down_never_sleeps_past_the_deadline(monkeypatch):
    slept = []
    monkeypatch.setattr(harness.time, "sleep", slept.append)
    monkeypatch.setenv("EVAL_COOLDOWN_S", "10")
    harness.cool_down(harness.time.monotonic() + 2.0)
    harness.cool_down(harness.time.monotonic() - 5.0)
    assert 1.5 < slept[0] <= 2.0 and slept[1] == 0.0


# ----------------------------------------------------------------------------- judge: the runner's chain


def test_judge_dry_run_names_the_steps(tmp_path):
    proc = run_cli(["judge", "--dry-run"], {"WORKSPACE_HISTORY": str(tmp_path / "h.jsonl")})
    assert proc.returncode == 0 and "[public] test: fresh folder" in proc.stdout and "[secret] test:" in proc.stdout
    assert "POPCORN_SEED=1 python3 submission.py (120 s)" in proc.stdout and not (tmp_path / "h.jsonl").exists()


def test_judge_on_the_cpu_runs_each_stage_in_its_own_process_and_records_the_run(tmp_path):
    sub = tmp_path / "mine.py"
    sub.write_text(DIRECTIVES + GOOD_BODY + "\nif __name__ == '__main__':\n    import os\n"
                   "    print('compile step pid', os.getpid(), 'seed', os.environ.get('POPCORN_SEED'),"
                   " 'helion flag', os.environ.get('HELION_DISALLOW_AUTOTUNING'))\n")
    out = tmp_path / "judge.json"
    proc = run_cli(["judge", str(sub), "--seed", "4242", "--json", str(out)],
                   {"WORKSPACE_HISTORY": str(tmp_path / "h.jsonl")})
    if harness.gpu_available():
        pytest.skip("this machine has a GPU: the full chain runs there (results/ holds its record)")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the compile steps and the test stages passed in both chains" in proc.stdout
    record = json.loads(out.read_text())
    stages = record["stages"]
    assert [(s["chain"], s["mode"], s["passed"]) for s in stages] == [("public", "test", True), ("secret", "test", True)]
    pids = {s["pid"] for s in stages}
    assert len(pids) == 2 and os.getpid() not in pids  # each stage its own eval.py process
    assert all(s["compile"]["code"] == 0 for s in stages) and record["secret_seed"] == 4242
    assert all(s["lines"]["check"] == "pass" and s["lines"]["test-count"] == "5" for s in stages)
    # both chains echo the published lines, as the runner does (the secret seed is folded in inside eval.py)
    assert stages[0]["lines"]["test.0.spec"] == stages[1]["lines"]["test.0.spec"] == harness.cases_from_task("tests")[0].spec
    entry = history.read_entries(tmp_path / "h.jsonl")[-1]
    assert entry["source"] == "judge" and entry["outcome"] == "tests passed" and entry["secret_seed"] == 4242


def test_the_compile_step_runs_as_the_runner_runs_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HELION_DISALLOW_AUTOTUNING", "1")
    sub = tmp_path / "s.py"
    sub.write_text("import os, sys\nimport task, reference, utils\n"
                   "sys.exit(0 if os.environ.get('POPCORN_SEED') == '1' and"
                   " 'HELION_DISALLOW_AUTOTUNING' not in os.environ else 3)\n")
    assert leaderboard.run_compile_step(sub, ROOT)["code"] == 0
    sub.write_text("raise SystemExit('no GPU here')\n")
    step = leaderboard.run_compile_step(sub, ROOT)
    assert step["code"] == 1 and step["tail"] == "no GPU here"  # tolerated: data, not an error


def test_a_judge_record_prints_as_popcorn_prints_a_ranked_run():
    record = {"file": "submission.py", "runner": "NVIDIA H200", "public_s": 1.3e-05, "secret_s": 1.31e-05,
              "runs": [{"mode": "leaderboard", "secret": False, "runner": "NVIDIA H200", "score": 1.3e-05,
                        "passed": True, "start_time": "", "end_time": ""}]}
    text = judge.popcorn_text(record)
    parsed = remote.parse_submit_output(text)
    assert text.splitlines()[0] == "Geomean score (public) on NVIDIA H200: 1.3000e-05 s"
    assert parsed["status"] == "done" and parsed["runs"][0]["score_us"] == pytest.approx(13.0)
    assert [s["score_us"] for s in parsed["scores"]] == pytest.approx([13.0, 13.1])
