"""Bad input gets one sentence and a non-zero exit, and nothing a user ran or submitted is lost.

One test per case of issue 16: each asserts the sentence and the exit code, and for the cases that
used to lose data, that the history entry and the saved output exist afterwards.
"""
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import eval as harness
import reference
from conftest import GOOD_BODY, ROOT, SAMPLES, candidate, json_server, run_cli
from scripts import history, times

BINARY = b"\x00\xff\xfe binary \x80\n"


def run_eval(args, env_extra=None, **kwargs):
    env = {k: v for k, v in os.environ.items() if k not in ("POPCORN_FD", "POPCORN_SEED")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, str(ROOT / "eval.py"), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600, **kwargs)


def one_sentence(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


# ----------------------------------------------------------------------------- data lost before


def test_popcorn_output_that_is_not_utf8_is_saved_raw_recorded_and_decoded_leniently(fake_popcorn):
    env, _, tmp = fake_popcorn
    raw = (SAMPLES / "popcorn_1_3_success.txt").read_bytes().replace(b"Waiting for results...", b"Waiting \xff\xfe...")
    (tmp / "odd.bin").write_bytes(raw)
    env["FAKE_OUTPUT"] = str(tmp / "odd.bin")
    proc = run_cli(["submit", str(candidate(tmp))], env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    entry = history.read_entries(Path(env["WORKSPACE_HISTORY"]))[-1]
    assert entry["submission_id"] == 31337 and entry["outcome"] == "pass"
    assert Path(entry["output"]).read_bytes() == raw  # the bytes as popcorn printed them


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_ctrl_c_sigterm_or_sighup_while_popcorn_waits_is_recorded_interrupted_with_the_id(fake_popcorn, signum):
    """Ctrl-C reaches the whole process group, as a terminal sends it; SIGTERM and SIGHUP the CLI alone."""
    env, record, tmp = fake_popcorn
    (tmp / "started.txt").write_text("Submission 556 accepted. Waiting for results...\n")
    env.update(FAKE_OUTPUT=str(tmp / "started.txt"), FAKE_SLEEP="600")
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "cli.py"), "submit", str(candidate(tmp))],
                            cwd=ROOT, env=dict(os.environ, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 300
    while not record.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.5)  # popcorn has printed its accepted line
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum and f"interrupted ({signal.Signals(signum).name})" in err
    assert "Traceback" not in out + err
    entry = history.read_entries(Path(env["WORKSPACE_HISTORY"]))[-1]
    assert entry["outcome"] == "interrupted" and entry["submission_id"] == 556
    assert "Submission 556 accepted" in Path(entry["output"]).read_text()


@pytest.mark.parametrize("command", [
    [sys.executable, "eval.py", "test"],
    [sys.executable, "scripts/cli.py", "test"],
])
def test_json_into_a_missing_folder_is_refused_before_the_run(tmp_path, command):
    proc = subprocess.run(command + ["--json", str(tmp_path / "nowhere" / "r.json")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode != 0 and "does not exist" in one_sentence(proc.stderr.replace("Error: ", ""))
    assert "[pass]" not in proc.stdout  # refused before anything ran


def test_remote_list_skips_a_line_that_only_starts_with_digits(fake_popcorn):
    env, _, tmp = fake_popcorn
    (tmp / "list.txt").write_text((SAMPLES / "submissions_list.txt").read_text() + "12345678 is not a row\n")
    env["FAKE_OUTPUT"] = str(tmp / "list.txt")
    proc = run_cli(["remote", "list"], env)
    assert proc.returncode == 0 and "3 submissions; 3 new in the history" in proc.stdout
    assert "line 6 of popcorn's list is not a row (its time column is not a date): 12345678" in proc.stderr
    ids = [e["submission_id"] for e in history.read_entries(Path(env["WORKSPACE_HISTORY"]))]
    assert 12345678 not in ids and sorted(ids) == [31288, 31290, 31337]


def test_remote_show_with_an_unreadable_history_says_so_and_keeps_the_answer(fake_popcorn):
    env, _, tmp = fake_popcorn
    Path(env["WORKSPACE_HISTORY"]).mkdir()  # a folder where the history file should be
    env["FAKE_OUTPUT"] = str(SAMPLES / "submissions_show.txt")
    proc = run_cli(["remote", "show", "31337"], env)
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == 1 and "cannot be written: Is a directory" in sentence and "is saved in" in sentence
    saved = Path(sentence.split("is saved in ")[1].split(";")[0])
    assert saved.read_text() == (SAMPLES / "submissions_show.txt").read_text()


# ----------------------------------------------------------------------------- tracebacks before


def test_a_binary_tests_file_is_one_sentence_in_both_modes(tmp_path):
    tests = tmp_path / "tests.txt"
    tests.write_bytes(BINARY)
    proc = run_eval(["test", str(tests)])
    assert proc.returncode == 1 and "is not UTF-8 text" in one_sentence(proc.stderr)
    proc = run_cli(["test", "--tests-file", str(tests)], {})
    assert proc.returncode == 1 and "is not UTF-8 text" in one_sentence(proc.stderr)
    with open(tmp_path / "out.txt", "w") as out:
        proc = run_eval(["test", str(tests)], {"POPCORN_FD": str(out.fileno())}, pass_fds=(out.fileno(),))
    assert proc.returncode == harness.BAD_TESTS_FILE and "is not UTF-8 text" in one_sentence(proc.stderr)


def test_popcorn_fd_open_for_reading_only(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("")
    tests = tmp_path / "tests.txt"
    tests.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    with open(source) as readable:
        proc = run_eval(["test", str(tests)], {"POPCORN_FD": str(readable.fileno())}, pass_fds=(readable.fileno(),))
    assert proc.returncode == harness.USAGE and "open for reading only" in one_sentence(proc.stderr)


@pytest.fixture
def broken_task_copy(tmp_path):
    """The workspace's contract and tools copied beside a task.yml whose benchmarks are malformed."""
    for name in ("eval.py", "reference.py", "task.py", "utils.py", "submission.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    text = (ROOT / "task.yml").read_text().replace('"seed": 2146', '"seed": "soon"').replace('"seed": 4242', '"seed": "later"')
    assert text != (ROOT / "task.yml").read_text()
    (tmp_path / "task.yml").write_text(text)
    return tmp_path


@pytest.mark.parametrize("args", [["cases", "benchmarks"], ["submit", "--dry-run"], ["profile"]])
def test_a_malformed_task_yml_is_one_sentence_naming_the_file(broken_task_copy, args):
    proc = subprocess.run([sys.executable, "scripts/cli.py", *args], cwd=broken_task_copy, capture_output=True, text=True,
                          timeout=600)
    sentence = one_sentence(proc.stderr)
    where = re.escape(str(broken_task_copy / "task.yml"))
    assert proc.returncode == 1 and re.search(rf"{where}: (tests|benchmarks) case 1: .*seed is '(soon|later)'",
                                              sentence), sentence


@pytest.mark.parametrize("content", [
    "score_us string",
    "garbage appended",
    "garbage only",
    "folder",
])
def test_history_bad_files_are_warnings_or_one_sentence(tmp_path, content):
    path = tmp_path / "h.jsonl"
    good = {"time": "2026-12-01T00:00:00+00:00", "gpu": "B200_Nebius", "outcome": "pass", "source": "remote",
            "submission_id": 1, "geomean_us": 10.0}
    if content == "score_us string":
        path.write_text(json.dumps(dict(good, runs=[{"mode": "leaderboard", "passed": True, "secret": False,
                                                      "score_us": "12"}])) + "\n" + json.dumps(good) + "\n")
    elif content == "garbage appended":
        path.write_bytes(json.dumps(good).encode() + b"\n" + BINARY)
    elif content == "garbage only":
        path.write_bytes(BINARY)
    else:
        path.mkdir()
    proc = run_cli(["history"], {"WORKSPACE_HISTORY": str(path)})
    assert "Traceback" not in proc.stderr
    if content == "folder":
        assert proc.returncode == 1 and "cannot be read: Is a directory" in one_sentence(proc.stderr)
    elif content == "garbage only":
        assert proc.returncode == 0 and "no readable entry" in proc.stdout and "line 1 is not JSON" in proc.stderr
    else:
        assert proc.returncode == 0 and "10.00" in proc.stdout and "skipped" in proc.stderr


@pytest.fixture
def odd_server():
    """A server on 127.0.0.1 whose ranking mixes types: a string, a string score, a string rank."""
    def answer(path, cli_id):
        if path == "/leaderboards":
            return 200, [{"name": "causal_conv1d", "deadline": 12345, "gpu_types": "B200_Nebius"}]
        return 200, [{"rank": 1, "user_name": "first", "submission_score": 1.0e-05}, "not a row", 7,
                     {"rank": "2", "user_name": "second", "submission_score": "fast"}]

    with json_server(answer) as (url, _):
        yield url


def test_standings_with_a_url_that_is_not_one_or_a_server_of_mixed_types(odd_server, tmp_path):
    proc = run_cli(["remote", "standings"], {"POPCORN_API_URL": "localhost:8000", "HOME": str(tmp_path)})
    assert proc.returncode == 1 and "is not an http(s) URL" in one_sentence(proc.stderr)
    proc = run_cli(["remote", "standings"], {"POPCORN_API_URL": odd_server, "HOME": str(tmp_path)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "first" in proc.stdout and "second" in proc.stdout and "deadline: unknown" in proc.stdout


def test_remote_list_output_that_is_not_utf8(fake_popcorn):
    env, _, tmp = fake_popcorn
    (tmp / "list.bin").write_bytes((SAMPLES / "submissions_list.txt").read_bytes().replace(b"sion.py", b"\xff\xfe\xfd\xfc.py", 1))
    env["FAKE_OUTPUT"] = str(tmp / "list.bin")
    proc = run_cli(["remote", "list"], env)
    assert proc.returncode == 0 and "3 submissions" in proc.stdout and "Traceback" not in proc.stderr


def test_history_plot_after_a_submit_and_a_remote_show_compares_times_in_utc(fake_popcorn):
    env, _, tmp = fake_popcorn
    env["FAKE_OUTPUT"] = str(SAMPLES / "popcorn_1_3_success.txt")
    assert run_cli(["submit", str(candidate(tmp))], env).returncode == 0
    env["FAKE_OUTPUT"] = str(SAMPLES / "submissions_show.txt")
    assert run_cli(["remote", "show", "31337"], env).returncode == 0
    entries = history.read_entries(Path(env["WORKSPACE_HISTORY"]))
    assert len(entries) == 2 and all(times.utc_time(e["time"]).utcoffset() == datetime.timedelta(0) for e in entries)
    # a line an older workspace wrote, its time without an offset, beside the new ones
    history.append_entry({"time": "2026-12-01T09:00:00", "gpu": "B200_Nebius", "outcome": "pass", "source": "remote",
                          "geomean_us": 11.0}, Path(env["WORKSPACE_HISTORY"]))
    series = history.plot_series(history.read_entries(Path(env["WORKSPACE_HISTORY"])))  # raised before on mixed times
    assert [[us for _, us in points] for points in series.values()] == [[11.0, pytest.approx(10.021)]]
    try:
        import matplotlib  # noqa: F401  (optional: the picture itself)
    except ImportError:
        return
    proc = run_cli(["history", "--plot", str(tmp / "h.png")], env)
    assert proc.returncode == 0 and (tmp / "h.png").stat().st_size > 0, proc.stderr


@pytest.mark.parametrize("name,message", [("nowhere/h.png", "does not exist"), ("h.txt", "must end in .png, .pdf, .svg")])
def test_history_plot_into_a_missing_folder_or_an_unknown_format(tmp_path, name, message):
    path = tmp_path / "h.jsonl"
    history.append_entry({"time": "2026-12-01T00:00:00+00:00", "gpu": "g", "outcome": "pass", "geomean_us": 1.0}, path)
    proc = run_cli(["history", "--plot", str(tmp_path / name)], {"WORKSPACE_HISTORY": str(path)})
    assert proc.returncode == 1 and message in one_sentence(proc.stderr)


# ----------------------------------------------------------------------------- borderline, decided


def test_a_field_given_twice_in_a_tests_line_is_refused_with_the_line(tmp_path):
    tests = tmp_path / "tests.txt"
    tests.write_text("B: 1; B: 2; D: 4; S: 16; W: 4; seed: 1\n")
    with open(tmp_path / "out.txt", "w") as out:
        proc = run_eval(["test", str(tests)], {"POPCORN_FD": str(out.fileno())}, pass_fds=(out.fileno(),))
    assert proc.returncode == harness.BAD_TESTS_FILE
    assert "line 1 ('B: 1; B: 2; D: 4; S: 16; W: 4; seed: 1'): B is given twice" in one_sentence(proc.stderr)


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_a_timeout_that_is_no_time_is_refused_as_an_option(value):
    proc = run_eval(["test", "--timeout", value])
    assert proc.returncode == harness.USAGE and "must be a number of seconds above 0" in proc.stderr
    proc = run_cli(["test", "--timeout", value], {})
    assert proc.returncode == 2 and "must be a number of seconds above 0" in proc.stderr


def test_popcorn_exiting_3_with_an_error_is_failed_with_its_message(fake_popcorn):
    env, _, tmp = fake_popcorn
    (tmp / "err.txt").write_text("Submitting to leaderboard: causal_conv1d\nError: the runner is unavailable\n")
    env.update(FAKE_OUTPUT=str(tmp / "err.txt"), FAKE_EXIT="3")
    proc = run_cli(["submit", str(candidate(tmp))], env)
    assert proc.returncode == 1 and "popcorn exited with 3, failed: Error: the runner is unavailable" in proc.stderr
    entry = history.read_entries(Path(env["WORKSPACE_HISTORY"]))[-1]
    assert entry["outcome"] == "failed" and entry["message"] == "Error: the runner is unavailable"


def test_a_float64_output_passes_with_a_note_that_the_task_is_float32():
    def float64_kernel(data):
        return reference.ref_kernel(data).double()

    outcome = harness.run_case("test", {"B": 1, "D": 4, "S": 16, "W": 4, "seed": 3}, float64_kernel, reference)
    assert outcome.ok and any("torch.float64, not the task's float32" in note for note in outcome.notes)


# ----------------------------------------------------------------------------- the bad-input trial of 2026-12-07


@pytest.mark.parametrize("make", [lambda out: out.to(torch.complex64), lambda out: out > 0,
                                  lambda out: out.to(torch.int32)], ids=["complex64", "bool", "int32"])
def test_an_output_that_is_no_real_float_fails_with_its_dtype_named(make):
    """complex and bool outputs used to fail with torch's own words ('isposinf does not support complex')."""
    def kernel(data):
        return make(reference.ref_kernel(data))

    with pytest.raises(harness.CaseFailure, match=r"the output is torch\.\w+, not a real floating-point tensor"):
        harness.run_case("test", {"B": 1, "D": 4, "S": 16, "W": 4, "seed": 3}, kernel, reference)


@pytest.mark.parametrize("command,target", [(command, target) for command in ("eval", "cli")
                                            for target in ("submission", "tests file", "history", "another .py",
                                                           "history not yet made")])
def test_json_onto_an_input_of_the_run_or_a_python_file_is_refused_and_the_file_kept(tmp_path, command, target):
    """--json used to rename its report over whatever it named: the submission itself, the history."""
    sub = candidate(tmp_path)
    tests_file = tmp_path / "one.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    hist = tmp_path / "history.jsonl"
    hist.write_text('{"kept": true}\n')
    other = tmp_path / "other.py"
    other.write_text("x = 1\n")
    if target == "history not yet made":  # a fresh workspace: the report would have become the history
        hist = tmp_path / "history-to-come.jsonl"
    named = {"submission": sub, "tests file": tests_file, "history": hist, "another .py": other,
             "history not yet made": hist}[target]
    before = named.read_bytes() if named.exists() else None
    env = {"WORKSPACE_HISTORY": str(hist), "TRITON_INTERPRET": "1"}
    if command == "eval":
        proc = run_eval(["test", str(tests_file), "--submission", str(sub), "--json", str(named)], env)
    else:
        proc = run_cli(["test", str(sub), "--tests-file", str(tests_file), "--json", str(named)], env)
    assert proc.returncode not in (0, None) and "nothing was run" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and (named.read_bytes() if named.exists() else None) == before


@pytest.mark.parametrize("command", [["scripts/cli.py", "test"], ["eval.py", "test"]])
def test_json_onto_task_yml_is_refused_and_it_is_kept(task_copy, command):
    """task.yml is read by every run; a copy of the workspace, so a failure cannot spoil this one's."""
    before = (task_copy / "task.yml").read_bytes()
    proc = subprocess.run([sys.executable, *command, "--json", str(task_copy / "task.yml")], cwd=task_copy,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "WORKSPACE_HISTORY": str(task_copy / "h.jsonl")})
    assert proc.returncode not in (0, None) and "the task's contract" in proc.stderr, proc.stderr
    assert (task_copy / "task.yml").read_bytes() == before


def track_notes(folder: Path) -> None:
    """folder made a repository of its own whose one tracked file is NOTES.md."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    (folder / "NOTES.md").write_text("tracked\n")
    subprocess.run([*git, "init", "-q"], cwd=folder, check=True)
    subprocess.run([*git, "add", "NOTES.md"], cwd=folder, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], cwd=folder, check=True)


@pytest.mark.parametrize("command", [["scripts/cli.py", "test"], ["eval.py", "test"]])
@pytest.mark.parametrize("target", ["a tracked file", "a tracked file deleted from the tree", "git's own folder",
                                    "git's own folder through a link"])
def test_json_onto_a_file_git_tracks_or_into_git_is_refused(task_copy, command, target):
    """A local run never changes tracked files: --json README.md used to replace it, --json .git/HEAD broke the
    repository. The copy is made a repository of its own, so a failure spoils nothing here."""
    track_notes(task_copy)
    named = {"a tracked file": task_copy / "NOTES.md", "a tracked file deleted from the tree": task_copy / "NOTES.md",
             "git's own folder": task_copy / ".git" / "HEAD",
             "git's own folder through a link": task_copy / "g" / "HEAD"}[target]
    if target == "a tracked file deleted from the tree":
        named.unlink()
    if target == "git's own folder through a link":
        (task_copy / "g").symlink_to(task_copy / ".git")
    before = named.read_bytes() if named.exists() else None
    proc = subprocess.run([sys.executable, *command, "--json", str(named)], cwd=task_copy, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "WORKSPACE_HISTORY": str(task_copy / "h.jsonl")})
    sentence = one_sentence(proc.stderr)
    assert proc.returncode not in (0, None) and "nothing was run" in sentence
    assert ("git's own folder" if target.startswith("git's own folder") else "a file git tracks") in sentence
    assert (named.read_bytes() if named.exists() else None) == before


@pytest.mark.parametrize("name", ["a[b].json", "a?.json", "*.json", ":(exclude)zz.json"])
def test_a_new_name_that_reads_as_a_git_pattern_is_not_taken_for_a_tracked_file(tmp_path, name):
    """git's pathspecs matched the tracked ab.json for each of these names, so each was refused."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    (tmp_path / "ab.json").write_text("{}")
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "ab.json"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], cwd=tmp_path, check=True)
    assert harness.output_problem(tmp_path / name) is None
    assert "a file git tracks" in harness.output_problem(tmp_path / "ab.json")


# More than a pipe's buffer (64 KiB) a call, so the kernel's own print meets the closed pipe whatever the timing
PRINTING_BODY = GOOD_BODY.replace("    x, weight, bias = data\n",
                                  "    x, weight, bias = data\n    print('k' * 70000, flush=True)\n")


@pytest.mark.parametrize("command", ["eval", "cli"])
@pytest.mark.parametrize("merged,printing", [(False, False), (True, False), (False, True)],
                         ids=["stdout piped", "2>&1 piped", "a kernel that prints"])
def test_a_reader_that_quits_leaves_the_run_going_and_its_report_kept(tmp_path, command, merged, printing):
    """`... | head -1`: the first write after the reader quit used to end the run on a BrokenPipeError (eval.py
    with a traceback, the CLI with exit 1 and nothing said), and the --json report was never written. With
    `2>&1` the notice itself met the closed pipe; a kernel that prints failed its cases in the worker."""
    tests_file = tmp_path / "three.txt"
    tests_file.write_text("".join(f"B: 1; D: 4; S: {16 * n}; W: 4; seed: {n}\n" for n in (1, 2, 3)))
    report = tmp_path / "r.json"
    sub = candidate(tmp_path, PRINTING_BODY if printing else GOOD_BODY)
    args = (["eval.py", "test", str(tests_file), "--submission", str(sub), "--json", str(report)] if command == "eval"
            else ["scripts/cli.py", "test", str(sub), "--tests-file", str(tests_file), "--json", str(report)])
    proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                            env={**os.environ, "TRITON_INTERPRET": "1", "WORKSPACE_HISTORY": str(tmp_path / "h.jsonl")})
    for line in proc.stdout:  # the reader quits after the first case's line, as `grep -m1 'pass]'` does, so the
        if b"pass]" in line:  # worker is already running with the pipe as its stdout
            break
    proc.stdout.close()
    stderr = "" if merged else proc.stderr.read().decode()
    assert proc.wait(timeout=600) == 0, stderr
    assert "Traceback" not in stderr and (merged or "stdout's reader quit" in stderr), stderr
    kept = json.loads(report.read_text())
    assert kept["passed"] and len(kept["runs"][0]["cases"]) == 3


@pytest.mark.parametrize("line,message", [
    ("B: 1; D: 8; S: 99999999999999999999999; W: 4; seed: 1", "S has 23 digits, too many"),
    ("B: 1; D: 8; S: 16; W: 4; seed: " + "9" * 5000, "seed has 5000 digits, too many"),
])
def test_integers_of_more_than_20_digits_are_one_sentence_naming_the_line(line, message):
    """int() refused 5,000 digits with its own error; the line is quoted cut short, not whole."""
    with pytest.raises(harness.TaskError, match=re.escape(message)) as caught:
        harness.parse_tests(line)
    assert len(str(caught.value)) < 300


def test_leading_zeros_are_no_digits():
    """The runner's int() reads '000...042' as 42; so does the parse."""
    assert harness.parse_tests("B: 1; D: 8; S: 16; W: 4; seed: " + "0" * 30 + "42")[0].args["seed"] == 42
    assert harness.parse_label("0" * 30 + "1x2x3")["B"] == 1


@pytest.mark.parametrize("args,message", [
    ({"B": 1, "D": 8, "S": 9999999999999999999, "W": 4}, "x would hold 8e+19 elements, more than a tensor can"),
    ({"B": 1, "D": 10 ** 17, "S": 1, "W": 99}, "the weight would hold 9.9e+18 elements"),
])
def test_sizes_no_tensor_can_hold_fail_their_case_in_one_sentence(args, message):
    """They used to fail in the case with a C++ stack of 22 frames. A case failure, as in the runner, whose
    other cases still run."""
    with pytest.raises(harness.CaseFailure, match=re.escape(message)):
        harness.run_case("test", {**args, "seed": 1}, lambda data: data[0], reference)


def test_a_case_no_tensor_can_hold_fails_alone(tmp_path):
    tests_file = tmp_path / "two.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\nB: 1; D: 8; S: 9999999999999999999; W: 4; seed: 2\n")
    proc = run_eval(["test", str(tests_file), "--submission", str(candidate(tmp_path)), "--json",
                     str(tmp_path / "r.json")], {"TRITON_INTERPRET": "1"})
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    first, second = json.loads((tmp_path / "r.json").read_text())["runs"][0]["cases"]
    assert first["ok"] and not second["ok"] and "more than a tensor can" in second["error"]


@pytest.mark.parametrize("label,message", [
    ("1x2x99999999999999999999999", "has a size of more than 20 digits"),
    ("1x8x9999999999999999999", "x would hold 8e+19 elements"),
    ("1x2x" + "9" * 5000, "has a size of more than 20 digits"),
    ("1x2x\u0663", "is not BxDxS or BxDxSxW"),  # an Arabic-Indic three: only ASCII digits are sizes
])
def test_shapes_no_tensor_can_hold_are_refused(label, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        harness.parse_label(label)
    proc = run_cli(["compare", "--shapes", label], {})
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("command", [["eval.py", "test"], ["scripts/cli.py", "test"]])
def test_a_python_without_torch_is_one_sentence(command):
    """-S leaves site-packages out, so torch cannot be imported: the run used to end in a traceback."""
    proc = subprocess.run([sys.executable, "-S", *command], cwd=ROOT, capture_output=True, text=True, timeout=120)
    sentence = one_sentence(proc.stderr)
    assert proc.returncode not in (0, None) and "is not installed for" in sentence


def test_a_report_written_whole_keeps_the_old_files_permissions_or_takes_the_umasks(tmp_path):
    """mkstemp's temporary file is 0600, so every report (and the Helion file helion-tune rewrites) became private."""
    fresh, old = tmp_path / "fresh.json", tmp_path / "old.json"
    old.write_text("{}")
    old.chmod(0o640)
    umask = os.umask(0o022)
    try:
        harness.write_whole(fresh, "{}")
        harness.write_whole(old, "{}")
    finally:
        os.umask(umask)
    assert (fresh.stat().st_mode & 0o777, old.stat().st_mode & 0o777) == (0o644, 0o640)


@pytest.mark.parametrize("command", ["bench", "judge"])
def test_a_history_that_cannot_be_written_is_refused_before_the_run(tmp_path, command):
    """judge used to run both chains, then lose the verdict, the secret seed and --json to the history's error."""
    proc = run_cli([command, str(candidate(tmp_path)), "--json", str(tmp_path / "r.json")],
                   {"WORKSPACE_HISTORY": str(tmp_path)})
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == 1 and "is not a regular file" in sentence and "nothing was run" in sentence
    assert not (tmp_path / "r.json").exists() and "[pass]" not in proc.stdout


def test_test_runs_with_a_history_it_would_not_write_to(tmp_path):
    """test keeps no history entry, so a history that cannot be written does not stop it."""
    tests_file = tmp_path / "one.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    proc = run_cli(["test", str(candidate(tmp_path)), "--tests-file", str(tests_file)],
                   {"WORKSPACE_HISTORY": str(tmp_path), "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0 and "== test: pass" in proc.stdout, proc.stderr


def test_a_history_that_fails_after_the_run_still_gets_the_report_written(tmp_path):
    """keep_run tries the report where the history fails, and says which failed."""
    from scripts import cli

    def unwritable(record):
        raise history.HistoryError("the history h cannot be written: disk full")

    kept = cli.keep_run(unwritable, tmp_path / "r.json", {"passed": True})
    assert kept.failure == "the history h cannot be written: disk full" and kept.places == [f"in {tmp_path / 'r.json'}"]
    assert json.loads((tmp_path / "r.json").read_text()) == {"passed": True}


@pytest.mark.parametrize("args,message", [
    (["compare", "--rounds", "0"], "0 is not in the range x>=1"),
    (["tiles", "--rounds", "-1"], "-1 is not in the range x>=1"),
    (["tune", "--rounds", "0", "--dry-run"], "0 is not in the range x>=1"),
    (["compare", "--rep-ms", "nan"], "must be a number of milliseconds above 0"),
    (["search-check", "--rep-ms", "-5"], "must be a number of milliseconds above 0"),
    (["compare", "--shapes", "banana"], "shape 'banana' is not BxDxS"),
    (["tiles", "--shapes", "large", "--shapes", "4x0x8"], "shape '4x0x8' is not BxDxS"),
    (["judge", "--seed", "10000000000"], "10000000000 is not in the range 1<=x<=4294967295"),
    (["test", "--timeout", "1e10"], "must be at most 1000000 seconds"),
])
def test_an_option_out_of_range_is_a_usage_error_before_anything_runs(args, message):
    """--rounds 0 used to record a pass that timed nothing; --shapes banana was a traceback on a GPU machine;
    --seed 1e10 ran the public chain and then failed the file; --timeout 1e10 was an OverflowError."""
    proc = run_cli(args, {})
    assert proc.returncode == 2 and message in " ".join(proc.stderr.split()), proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_timeout_too_long_to_wait_is_refused_by_eval_too():
    proc = run_eval(["test", "--timeout", "1e10"])
    assert proc.returncode == harness.USAGE and "must be at most 1000000 seconds" in proc.stderr


@pytest.fixture
def task_copy(tmp_path):
    """The workspace's contract and tools copied beside its task.yml, for a test to spoil."""
    for name in ("eval.py", "reference.py", "task.py", "utils.py", "submission.py", "task.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.mark.parametrize("spoil,message", [
    (lambda t: re.sub(r"(?m)^test_timeout: .*$", 'test_timeout: "abc"', t), "test_timeout is 'abc'; a time limit"),
    (lambda t: re.sub(r"(?m)^test_timeout: .*$", "test_timeout: -5", t), "test_timeout is -5; a time limit"),
    (lambda t: re.sub(r"(?m)^ranked_timeout: .*$", "ranked_timeout: null", t), "ranked_timeout is None; a time limit"),
    (lambda t: "# caf\xe9\n" + t, "is not UTF-8 text"),
    (lambda t: re.sub(r"(?ms)^tests:\n.*?(?=^\w)", "tests: []\n", t), "tests has no cases, so a run would check nothing"),
])
def test_a_task_yml_with_bad_values_is_one_sentence_naming_it(task_copy, spoil, message):
    """These were a TypeError, a UnicodeDecodeError, every case [not run], and a pass over zero cases."""
    path = task_copy / "task.yml"
    spoiled = spoil(path.read_text())
    assert spoiled != path.read_text()
    path.write_bytes(spoiled.encode("latin-1") if "\xe9" in spoiled else spoiled.encode())
    proc = subprocess.run([sys.executable, "scripts/cli.py", "test"], cwd=task_copy, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "WORKSPACE_HISTORY": str(task_copy / "h.jsonl")})
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == 1 and str(path) in sentence and message in sentence, sentence


QUITS = {"sys.exit(0)": "import sys\nsys.exit(0)\n",
         "os._exit(0)": "import os\nos._exit(0)\n",
         "os._exit(3)": "from os import _exit\n_exit(3)\n",
         "os.abort()": "import os\nos.abort()\n"}


@pytest.mark.parametrize("command", ["tiles", "sass"])
@pytest.mark.parametrize("call", list(QUITS))
def test_a_kernel_file_that_exits_while_importing_is_one_sentence(tmp_path, command, call):
    """tiles and sass used to end silently with exit 0 (or die on SIGABRT): the file's own exit ended the tool.
    A subprocess, since an os._exit that is not caught would end the test's own process."""
    path = tmp_path / "quits.py"
    path.write_text(QUITS[call])
    args = [command, str(path)] + (["--entry", "k"] if command == "sass" else [])
    proc = run_cli(args, {"WORKSPACE_HISTORY": str(tmp_path / "h.jsonl")})
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == 1 and f"quits.py did not load: it called {call} while importing" in sentence, sentence


def test_the_import_guard_is_the_importing_threads_only_and_ends_with_the_import(tmp_path):
    """A child forked during the import, and anything after it, call the real os._exit (the review: a forked
    child's own os._exit raised and ran on into the parent's code). In a subprocess: a broken guard there must
    not loose a forked copy of the test run."""
    path = tmp_path / "forks.py"
    path.write_text(textwrap.dedent("""\
        import os
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        CHILD_EXIT = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        KEPT = os._exit  # a library that keeps a reference while the guard is on
        def custom_kernel(data):
            return data[0]
    """))
    probe = textwrap.dedent(f"""\
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from scripts import registry
        real = os._exit, os.abort
        module = registry.load_kernel_file({str(path)!r}, "forks")
        print(module.CHILD_EXIT, (os._exit, os.abort) == real, flush=True)
        module.KEPT(5)
    """)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["7", "True"] and proc.returncode == 5, proc.stdout + proc.stderr


def test_tune_puts_the_file_back_when_a_signal_ends_its_check(tmp_path):
    """A Ctrl-C during the check used to leave the submission holding the unchecked rewrite."""
    from scripts import tune

    path = tmp_path / "submission.py"
    path.write_text("OLD\n")

    def interrupted(p):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tune.apply_safely(path, "NEW (unverified)\n", interrupted)
    assert path.read_text() == "OLD\n"


@pytest.mark.parametrize("field,value,expected", [
    ("submission_id", '"31337"', {"submission_id": 31337}),
    ("submission_id", "null", {"submission_id": 31337}),  # the id from the accepted line stands
    ("passed", '"false"', {"passed": False}),
    ("runner", "5", {"runner": "5"}),
    ("score", "1e303", {"score_us": None}),
])
def test_a_popcorn_summary_field_of_an_odd_type_is_read_as_the_history_stores_it(field, value, expected):
    """A string id used to be recorded as given, and the history's reader then skipped the entry; a text
    'false' counted the run as passed; a number for a runner was kept as a number; 1e303 s became inf us."""
    from scripts import remote

    text = (SAMPLES / "popcorn_1_3_success.txt").read_text()
    pattern = {"submission_id": r'"submission_id": 31337', "passed": r'"passed": true', "runner": r'"runner": "B200_Nebius"',
               "score": r'"score": [0-9.e-]+'}[field]
    spoiled = re.sub(pattern, f'"{field}": {value}', text, count=1)
    assert spoiled != text
    parsed = remote.parse_submit_output(spoiled)
    if field == "score":  # the first run with a score: 1e303 s is no finite number of microseconds
        spoiled_run = re.findall(r'"score": (null|[0-9.e+-]+)', spoiled).index("1e303")
        got = parsed["runs"][spoiled_run]
    else:
        got = parsed if field == "submission_id" else parsed["runs"][0]
    assert {k: got[k] for k in expected} == expected


@pytest.mark.parametrize("answer", ["", "Error: could not reach the server\n"])
def test_remote_list_of_an_answer_that_is_no_list_is_one_sentence_and_kept(fake_popcorn, answer):
    """An empty or foreign answer used to read as '0 submissions; 0 new' with exit 0."""
    env, _, tmp = fake_popcorn
    (tmp / "list.txt").write_text(answer)
    env["FAKE_OUTPUT"] = str(tmp / "list.txt")
    proc = run_cli(["remote", "list"], env)
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == 1 and "is not a submissions list" in sentence and "saved in" in sentence
    assert Path(sentence.rsplit("saved in ", 1)[1]).read_text() == answer


def test_remote_show_keeps_a_page_with_a_score_that_is_no_number():
    """One 'score: n/a' used to refuse the whole page (could not convert string to float)."""
    from scripts import remote

    text = (SAMPLES / "submissions_show.txt").read_text()
    spoiled = re.sub(r"\(score: [0-9.e-]+\)", "(score: n/a)", text, count=1)
    assert spoiled != text
    runs = remote.parse_show(spoiled)["runs"]
    assert [r["score_text"] for r in runs].count("n/a") == 1 and len(runs) == len(remote.parse_show(text)["runs"])
    assert next(r for r in runs if r["score_text"] == "n/a")["score_us"] is None


@pytest.mark.parametrize("time_us", ["1e-300", "Infinity", "true"])
def test_estimate_refuses_a_compare_record_whose_time_is_no_time(tmp_path, time_us):
    """A hand-edited floor of 1e-300 us was a ZeroDivisionError; Infinity printed '8.67 - inf us'."""
    from scripts import estimate

    record = json.loads((ROOT / "results" / "nvidia-h200" / "compare.json").read_text())
    case = record["cases"][0]
    text = json.dumps(record).replace(f'"{case}": {record["impls"]["floor"]["per_case_us"][case]}',
                                      f'"{case}": {time_us}', 1)
    (tmp_path / "c.json").write_text(text)
    with pytest.raises(estimate.EstimateError, match=rf"gives {case} .* us, not a time"):
        estimate.read_record(tmp_path / "c.json")


@pytest.mark.parametrize("flag", [["--json", "{tmp}/r.json"], ["--timeout", "0.001"], ["--no-torch-copy"]])
def test_runner_mode_refuses_the_local_options_it_would_ignore(tmp_path, flag):
    """With POPCORN_FD set, --json used to write nothing and --timeout 0.001 to pass, both without a word."""
    flag = [part.format(tmp=tmp_path) for part in flag]
    tests = tmp_path / "tests.txt"
    tests.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    results = tmp_path / "results.txt"
    with open(results, "w") as out:
        proc = run_eval(["test", str(tests), *flag], {"POPCORN_FD": str(out.fileno())}, pass_fds=(out.fileno(),))
    assert proc.returncode == harness.USAGE and f"{flag[0]} apply to local runs only" in one_sentence(proc.stderr)
    assert results.read_text() == "" and not (tmp_path / "r.json").exists()


# ----------------------------------------------------------------------------- the bad-input trial of 2026-12-08

class FakesEquality(torch.Tensor):
    """An output whose subtraction says it matches whatever it is compared with."""

    def __sub__(self, other):
        return torch.zeros_like(other)


def test_a_tensor_subclass_output_fails_though_its_operators_would_pass_the_check():
    """A zeros output of a subclass whose __sub__ returns zeros passed every case, as it passes the runner's."""
    def kernel(data):
        return torch.zeros(data[0].shape).as_subclass(FakesEquality)

    with pytest.raises(harness.CaseFailure, match="a subclass of torch.Tensor"):
        harness.run_case("test", {"B": 1, "D": 4, "S": 16, "W": 4, "seed": 3}, kernel, reference)


SWAPS = {  # when and what a submission replaces, so that a zeros output passes the check
    "reference.check_implementation at import": (
        "import reference\nreference.check_implementation = lambda data, output: (True, '')\n", "",
        "reference.check_implementation"),
    "utils.verbose_allclose at import": (
        "import utils\nutils.verbose_allclose = lambda *args, **kwargs: []\n", "", "utils.verbose_allclose"),
    "the harness's check_output inside custom_kernel": (  # in the names the worker's code reads, which a
        # worker spawned from `python eval.py` keeps apart from its __mp_main__ copy of the file
        "import sys\n", "    for module in list(sys.modules.values()):\n"
        "        if hasattr(module, '_worker_main'):\n"
        "            module._worker_main.__globals__['check_output'] = lambda *args, **kwargs: None\n",
        "eval.check_output"),
    "the code of reference.ref_kernel at import": (
        "import reference\nreference.ref_kernel.__code__ = (lambda data: __import__('torch').zeros_like(data[0])).__code__\n",
        "", "reference.ref_kernel"),
}


@pytest.mark.parametrize("swap", list(SWAPS))
def test_a_submission_that_replaces_the_check_fails_every_case_naming_what_it_replaced(tmp_path, swap):
    """Each of these passed `eval.py test` with exit 0 (and judge): the worker checks, after the import and
    after each case, that the functions it held before the import are still in place with their code."""
    top, inside, named = SWAPS[swap]
    sub = tmp_path / "swap.py"
    sub.write_text(f"import torch\n{top}\n\ndef custom_kernel(data):\n{inside}    return torch.zeros_like(data[0])\n")
    tests_file = tmp_path / "two.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\nB: 1; D: 4; S: 32; W: 4; seed: 2\n")
    proc = run_eval(["test", str(tests_file), "--submission", str(sub)], {"TRITON_INTERPRET": "1"})
    assert proc.returncode == 1 and "[pass]" not in proc.stdout, proc.stdout + proc.stderr
    assert f"the submission replaced {named}, which this harness checks cases with" in proc.stdout


@pytest.mark.parametrize("fd", ["2147483648", "9" * 22])
def test_popcorn_fd_too_large_for_a_descriptor_is_one_sentence(tmp_path, fd):
    """fcntl's OverflowError used to end eval.py in a traceback."""
    tests = tmp_path / "tests.txt"
    tests.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    proc = run_eval(["test", str(tests)], {"POPCORN_FD": fd})
    assert proc.returncode == harness.USAGE and "does not name an open file descriptor" in one_sentence(proc.stderr)


@pytest.mark.parametrize("seed", ["-3", str(2 ** 32)])
def test_a_secret_seed_numpy_refuses_is_one_sentence_before_any_case(tmp_path, seed):
    """numpy's seed range: the worker crashed on every case, which read as the kernel's crash."""
    tests = tmp_path / "tests.txt"
    tests.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    results = tmp_path / "results.txt"
    with open(results, "w") as out:
        proc = run_eval(["test", str(tests)], {"POPCORN_FD": str(out.fileno()), "POPCORN_SEED": seed},
                        pass_fds=(out.fileno(),))
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == harness.BAD_TESTS_FILE and "POPCORN_SEED must be 0 to 4294967295" in sentence
    assert results.read_text() == ""


def test_a_task_yml_nested_too_deeply_is_one_sentence(tmp_path):
    """yaml's RecursionError used to be a traceback from every command that reads task.yml."""
    (tmp_path / "task.yml").write_text("tests: " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(harness.TaskError, match="nests too deeply to read"):
        harness.load_task(tmp_path)


@pytest.mark.parametrize("target", ["the submission", "a tracked file", "another .py", "git's own folder"])
def test_a_history_that_names_a_file_no_run_may_write_is_refused_and_the_file_kept(task_copy, target):
    """WORKSPACE_HISTORY=README.md appended a JSON line to a tracked file; naming the submission judged it and
    then broke it. The copy is a repository of its own, so a failure spoils nothing here."""
    track_notes(task_copy)
    sub = candidate(task_copy)
    (task_copy / "other.py").write_text("x = 1\n")
    named = {"the submission": sub, "a tracked file": task_copy / "NOTES.md", "another .py": task_copy / "other.py",
             "git's own folder": task_copy / ".git" / "h.jsonl"}[target]
    before = named.read_bytes() if named.exists() else None
    proc = subprocess.run([sys.executable, "scripts/cli.py", "judge", str(sub)], cwd=task_copy, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "WORKSPACE_HISTORY": str(named)})
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == 1 and "point WORKSPACE_HISTORY at a file of its own" in sentence
    assert "nothing was run" in sentence and (named.read_bytes() if named.exists() else None) == before


def test_compare_with_a_history_no_run_may_write_is_refused_before_it_times(tmp_path):
    """compare used to time every round and then fail on recording them."""
    sub = candidate(tmp_path)
    proc = run_cli(["compare", str(sub)], {"WORKSPACE_HISTORY": str(sub)})
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == 1 and "which this run reads" in sentence and "nothing was run" in sentence


def test_every_history_writer_refuses_a_file_no_run_may_write(tmp_path):
    """The writers no run's check comes before (submit's record, compare's, estimate's) append through
    history.locked, which refuses the same files."""
    named = tmp_path / "kernel.py"
    named.write_text("x = 1\n")
    with pytest.raises(history.HistoryError, match="names a Python file.*nothing was written"):
        history.append_entry({"time": "2026-12-08T00:00:00Z", "gpu": "H200", "outcome": "pass"}, named)
    assert named.read_text() == "x = 1\n"


@pytest.mark.parametrize("error,said", [(KeyboardInterrupt(), "custom_kernel raised KeyboardInterrupt"),
                                        (ValueError("no"), "custom_kernel raised ValueError: no")])
def test_a_kernel_error_without_a_message_is_named_without_a_dangling_colon(error, said):
    def kernel(data):
        raise error

    with pytest.raises(harness.CaseFailure) as failure:
        harness.run_case("test", {"B": 1, "D": 4, "S": 16, "W": 4, "seed": 3}, kernel, reference)
    assert str(failure.value) == said


def test_a_helion_file_runs_under_its_own_interpreter_though_tritons_is_set(tmp_path):
    """With TRITON_INTERPRET=1 exported, every case of a Helion file failed as the kernel's own
    IncompatibleInterpretModes: eval.py now sets the one interpreter the file needs and clears the other."""
    pytest.importorskip("helion")
    tests = tmp_path / "tests.txt"
    tests.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    proc = run_eval(["test", str(tests), "--submission", str(ROOT / "submissions" / "submission_helion.py")],
                    {"TRITON_INTERPRET": "1"})
    assert proc.returncode == 0 and "== test: pass" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("field,value,said", [("submission_id", -5, "submission_id is -5, not an id"),
                                              ("submission_id", 10 ** 30, "not an id (0 to 2^63 - 1)"),
                                              ("gpu", "", "gpu is empty")])
def test_a_history_entry_with_an_id_no_server_gives_or_no_gpu_is_skipped(field, value, said):
    """These were shown: an id of -5, and an entry of GPU '' that took the best mark as '13.10 ()'."""
    entry = {"time": "2026-12-08T00:00:00+00:00", "gpu": "NVIDIA H200", "outcome": "pass", "geomean_us": 13.1}
    assert history.problem(entry) is None
    assert said in history.problem({**entry, field: value})
