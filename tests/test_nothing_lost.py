"""Issue 23: each family of bad input is refused where it enters, in one sentence and a non-zero exit,
and nothing a user ran or submitted is lost. One parametrized test per family tries several inputs,
some the issue never named; signals are real signals to real subprocesses, writers run concurrently.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import eval as harness
from conftest import DIRECTIVES, GOOD_BODY, ROOT, SAMPLES, candidate, json_server, run_cli
from scripts import cli, history, leaderboard, remote

CASE_LINE = "B: 1; D: 4; S: 16; W: 4; seed: 1\n"


def run_eval(args, env_extra=None, **kwargs):
    env = {k: v for k, v in os.environ.items() if k not in ("POPCORN_FD", "POPCORN_SEED")}
    env.update(env_extra or {})
    kwargs.setdefault("timeout", 600)
    return subprocess.run([sys.executable, str(ROOT / "eval.py"), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, **kwargs)


def one_sentence(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def alive(pid: int) -> bool:
    """True while pid runs (a zombie waiting for its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(path: Path, limit_s: float = 240) -> None:
    deadline = time.monotonic() + limit_s
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert path.exists(), f"{path} never appeared"


# ============================================================================= 1. outputs written whole

UNWRITABLE = {"a device": ("/dev/full", "not a regular file"),
              "a /proc file": ("/proc/version", "takes no new file"),
              "a /sys folder": ("/sys/kernel/r.json", "takes no new file"),
              "a missing folder": ("{tmp}/nowhere/r.json", "does not exist"),
              "a folder": ("{tmp}", "is a folder")}


@pytest.mark.parametrize("command", ["eval.py", "cli test", "cli judge"])
@pytest.mark.parametrize("where", list(UNWRITABLE))
def test_an_output_that_cannot_be_written_is_refused_before_the_run(tmp_path, command, where):
    path, words = UNWRITABLE[where]
    path = path.format(tmp=tmp_path)
    if command == "eval.py":
        proc = run_eval(["test", "--json", path])
        code = harness.USAGE
    else:
        proc = run_cli([command.split()[1], "--json", path, str(candidate(tmp_path))],
                       {"WORKSPACE_HISTORY": str(tmp_path / "h.jsonl")})
        code = 1
    if where == "a folder" and command != "eval.py":  # click's own check on a file option, before ours
        assert proc.returncode == 2 and "is a directory" in proc.stderr and "Traceback" not in proc.stderr
        return
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == code and words in sentence and "nothing was run" in sentence, proc.stderr
    assert not (tmp_path / "h.jsonl").exists()  # refused before the run: nothing ran, nothing recorded


@pytest.mark.parametrize("failing", ["write", "fsync", "replace"])
def test_a_report_is_written_whole_or_not_at_all(tmp_path, monkeypatch, failing):
    path = tmp_path / "report.json"
    path.write_text('{"old": true}')

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    target = {"write": (harness.os, "fdopen"), "fsync": (harness.os, "fsync"), "replace": (harness.os, "replace")}
    monkeypatch.setattr(*target[failing], no_space)
    with pytest.raises(harness.TaskError, match="could not be written: No space left on device"):
        harness.write_whole(path, '{"new": true}')
    assert path.read_text() == '{"old": true}'  # the old report stands whole
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left behind


@pytest.fixture
def passing_runs(tmp_path, monkeypatch):
    """A history in tmp_path, and eval's and judge's runs replaced by ones that pass at once; returns the history."""
    hist = tmp_path / "h.jsonl"
    monkeypatch.setattr(history, "HISTORY", hist)
    run = {"mode": "benchmark", "passed": True, "cases": [], "geomean_us": 5.0}
    monkeypatch.setattr(harness, "run_local", lambda *a, **k: {"submission": str(a[1]), "device": "X", "runs": [run],
                                                               "passed": True, "versions": {}})
    from scripts import judge

    monkeypatch.setattr(judge, "judge", lambda *a, **k: {
        "file": str(a[0]), "runner": "cpu", "on_gpu": False, "secret_seed": 7, "verdict": "passed the tests",
        "public_s": None, "secret_s": None, "runs": [], "stages": [], "hidden_by": None})
    return hist


@pytest.mark.parametrize("command", ["test", "judge"])
def test_history_is_recorded_before_a_report_that_fails_to_write(tmp_path, monkeypatch, passing_runs, command):
    """The report's write fails after the run (a disk filling up): the run's history line is already there."""
    hist = passing_runs

    def full(path, text, flag="--json"):
        raise harness.TaskError(f"{flag} {path} could not be written: No space left on device")

    monkeypatch.setattr(harness, "write_whole", full)
    result = CliRunner().invoke(cli.cli, [command, "--json", str(tmp_path / "r.json"), str(candidate(tmp_path))])
    assert result.exit_code == 1 and "could not be written: No space left on device" in result.output
    entries = history.read_entries(hist)
    assert len(entries) == 1 and entries[0]["source"] == ("eval" if command == "test" else "judge")


@pytest.mark.parametrize("command", ["bench", "judge"])
def test_a_report_is_written_and_the_verdict_shown_when_the_history_write_fails(tmp_path, monkeypatch, passing_runs,
                                                                                 command):
    """The mirror of the test above: the disk fills during the history's append (os.write under the lock), after
    the run. The --json report is still written, judge still shows its verdict, and the exit says what failed."""
    import errno

    from scripts import judge

    monkeypatch.setattr(judge, "verdict_sentence", lambda record: "VERDICT SHOWN")

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(history.os, "write", full)
    report = tmp_path / "r.json"
    result = CliRunner().invoke(cli.cli, [command, "--json", str(report), str(candidate(tmp_path))])
    assert result.exit_code == 1 and "cannot be written: No space left on device" in result.output, result.output
    kept = json.loads(report.read_text())
    assert kept["passed"] is True if command == "bench" else kept["verdict"] == "passed the tests"
    assert ("VERDICT SHOWN" in result.output) == (command == "judge")
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)


def _full_device():
    return os.open("/dev/full", os.O_WRONLY)


def _closed_pipe():
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


@pytest.mark.parametrize("make_fd", [_full_device, _closed_pipe], ids=["a full device", "a pipe nobody reads"])
def test_popcorn_fd_that_takes_no_writes_is_one_sentence(tmp_path, make_fd):
    tests_file = tmp_path / "tests.txt"
    tests_file.write_text(CASE_LINE)
    fd = make_fd()
    try:
        proc = run_eval(["test", str(tests_file)], {"POPCORN_FD": str(fd)}, pass_fds=(fd,))
    finally:
        os.close(fd)
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == harness.USAGE and f"POPCORN_FD='{fd}' takes no results" in sentence


# ============================================================================= 2. inputs validated where they enter

def _fifo(tmp):
    os.mkfifo(tmp / "fifo")
    return tmp / "fifo"


TESTS_FILES = {
    "a FIFO": (_fifo, "is not a regular file"),
    "a device": (lambda tmp: Path("/dev/zero"), "is not a regular file"),
    "a folder": (lambda tmp: tmp, "is not a regular file"),
    "B 0": (lambda tmp: CASE_LINE.replace("B: 1", "B: 0"), "B must be 1 or more"),
    "S 0": (lambda tmp: CASE_LINE.replace("S: 16", "S: 0"), "S must be 1 or more"),
    "D negative": (lambda tmp: CASE_LINE.replace("D: 4", "D: -4"), "D must be 1 or more"),
    "W 0": (lambda tmp: CASE_LINE.replace("W: 4", "W: 0"), "W must be 1 or more"),
    "seed past 64 bits": (lambda tmp: CASE_LINE.replace("seed: 1", f"seed: {2 ** 64}"), "64-bit seed range"),
    "seed below 64 bits": (lambda tmp: CASE_LINE.replace("seed: 1", f"seed: {-2 ** 63 - 1}"), "64-bit seed range"),
}


@pytest.mark.parametrize("runner_mode", [False, True], ids=["local", "runner"])
@pytest.mark.parametrize("bad", list(TESTS_FILES))
def test_a_tests_file_that_is_no_file_or_holds_no_valid_case_is_refused_before_reading(tmp_path, bad, runner_mode):
    make, words = TESTS_FILES[bad]
    made = make(tmp_path)
    if isinstance(made, str):
        (tmp_path / "tests.txt").write_text(made)
        made = tmp_path / "tests.txt"
    extra, fds = {}, ()
    if runner_mode:
        fd = os.open(tmp_path / "results.txt", os.O_WRONLY | os.O_CREAT)
        extra, fds = {"POPCORN_FD": str(fd)}, (fd,)
    proc = run_eval(["test", str(made)], extra, pass_fds=fds, timeout=120)  # a FIFO read would hang: it is not read
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == (harness.BAD_TESTS_FILE if runner_mode else 1) and words in sentence, proc.stderr


def test_a_tests_file_with_a_byte_order_mark_reads_its_first_case(tmp_path):
    path = tmp_path / "bom-tests.txt"
    path.write_bytes(b"\xef\xbb\xbf" + CASE_LINE.encode())
    cases = harness.read_tests_file(path)
    assert [c.args for c in cases] == [{"B": 1, "D": 4, "S": 16, "W": 4, "seed": 1}]


SUBMISSIONS = {
    "not UTF-8": ("candidate.py", (DIRECTIVES + "x = 1\n").encode() + b"# caf\xe9\n",
                  f"is not UTF-8 text (byte {len(DIRECTIVES) + 11}, 0xe9)"),
    "Latin-1 at the top": ("candidate.py", b"\xff\xfe" + DIRECTIVES.encode(), "is not UTF-8 text (byte 0, 0xff)"),
    "a .txt file": ("ok.txt", DIRECTIVES.encode(), "does not end in .py"),
    "no suffix": ("kernel", DIRECTIVES.encode(), "does not end in .py"),
}


@pytest.mark.parametrize("bad", list(SUBMISSIONS))
def test_a_submission_that_is_not_a_utf8_python_file_names_the_file_and_byte(tmp_path, bad):
    name, raw, words = SUBMISSIONS[bad]
    (tmp_path / name).write_bytes(raw)
    proc = run_eval(["test", "--submission", str(tmp_path / name)])
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == 1 and words in sentence and name in sentence


HISTORY_LINES = {
    "geomean NaN": '{"time": "2026-12-01T00:00:00+00:00", "gpu": "H", "outcome": "pass", "geomean_us": NaN}',
    "geomean infinite": '{"time": "2026-12-01T00:00:00+00:00", "gpu": "H", "outcome": "pass", "geomean_us": Infinity}',
    "geomean negative": '{"time": "2026-12-01T00:00:00+00:00", "gpu": "H", "outcome": "pass", "geomean_us": -1.5}',
    "geomean zero": '{"time": "2026-12-01T00:00:00+00:00", "gpu": "H", "outcome": "pass", "geomean_us": 0}',
    "file_hash a list": '{"time": "2026-12-01T00:00:00+00:00", "gpu": "H", "outcome": "pass", "geomean_us": 1.0,'
                        ' "file_hash": [1]}',
    "submission_id text": '{"time": "2026-12-01T00:00:00+00:00", "gpu": "H", "outcome": "pass", "submission_id": "7"}',
    "a run scored NaN": '{"time": "2026-12-01T00:00:00+00:00", "gpu": "H", "outcome": "pass", "source": "popcorn",'
                        ' "runs": [{"mode": "leaderboard", "passed": true, "score_us": NaN}]}',
    "nested too deep": "[" * 200_000 + "]" * 200_000,
}


@pytest.mark.parametrize("bad", list(HISTORY_LINES))
def test_a_history_line_with_no_valid_score_or_a_wrong_type_is_one_invalid_line_never_ranked(tmp_path, bad):
    good = json.dumps({"time": "2026-12-02T00:00:00+00:00", "gpu": "H", "outcome": "pass", "geomean_us": 9.0,
                       "source": "eval", "file": "submission.py"})
    hist = tmp_path / "h.jsonl"
    text = HISTORY_LINES[bad] + "\n" + good + "\n"
    hist.write_text(text)
    proc = run_cli(["history"], {"WORKSPACE_HISTORY": str(hist)})
    warning = one_sentence(proc.stderr)
    assert proc.returncode == 0 and "h.jsonl line 1" in warning and "skipped" in warning, proc.stderr
    best = [line for line in proc.stdout.splitlines() if line.startswith("*") and "9.00" in line]
    assert len(best) == 1  # the good entry is the best one, the bad one never ranked
    assert hist.read_text() == text  # reading loses nothing


SCORE_LINES = ["nan", "-1e-5", "inf", "0", "0.0e0", "1e-5e"]


@pytest.mark.parametrize("value", SCORE_LINES)
def test_a_score_that_is_not_a_finite_positive_number_is_refused(value):
    text = (SAMPLES / "popcorn_1_3_success.txt").read_text()
    parsed = remote.parse_submit_output(text.replace("1.0021e-05 s", f"{value} s").replace('"score": 1.0021e-05',
                                                                                           '"score": NaN'))
    assert parsed["status"] == "invalid score" and value in parsed["message"]
    assert all(s["score_us"] is not None and s["score_us"] > 0 for s in parsed["scores"])
    assert all(r["score_us"] is None or r["score_us"] > 0 for r in parsed["runs"])


@pytest.mark.parametrize("cut_at", ['"runs": [', '"mode": "benchmark"', '"score": 1.0104e-05', "  ]\n}"])
def test_a_summary_cut_mid_object_is_recorded_partial_with_every_id(cut_at):
    text = (SAMPLES / "popcorn_1_3_success.txt").read_text().replace("Submission 31337 accepted", "Submission 4 accepted")
    cut = text[:text.index(cut_at)]
    parsed = remote.parse_submit_output(cut)
    assert parsed["status"] == "partial" and parsed["ids_found"] == [31337]
    assert parsed["submission_id"] == 4 and "31337" in parsed["message"]


def test_a_truncated_or_invalid_answer_through_submit_is_recorded_and_fails(fake_popcorn):
    env, _, tmp = fake_popcorn
    text = (SAMPLES / "popcorn_1_3_success.txt").read_text()
    for name, answer, status in (("cut", text[:text.index('"mode": "benchmark"')], "partial"),
                                 ("nan", text.replace("1.0021e-05 s", "nan s"), "invalid score")):
        (tmp / name).write_text(answer)
        env["FAKE_OUTPUT"] = str(tmp / name)
        proc = run_cli(["submit", str(candidate(tmp))], env)
        assert proc.returncode == 1 and status in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        entry = history.read_entries(Path(env["WORKSPACE_HISTORY"]))[-1]
        assert entry["outcome"] == status and entry["submission_id"] == 31337
        assert Path(entry["output"]).read_text() == answer


POPCORN_YAMLS = {"a list": "cli_id: [1, 2]\n", "binary": "cli_id: !!binary aGVsbG8=\n",
                 "a newline": 'cli_id: "abc\\ndef"\n', "empty": 'cli_id: ""\n', "a mapping": "cli_id: {a: 1}\n",
                 "not YAML": "cli_id: [\n", "not UTF-8": b"cli_id: \xff\xfe\n"}


@pytest.mark.parametrize("bad", list(POPCORN_YAMLS))
def test_a_popcorn_yaml_whose_cli_id_popcorn_cannot_send_is_one_sentence_naming_the_file(tmp_path, bad):
    content = POPCORN_YAMLS[bad]
    config = tmp_path / ".popcorn.yaml"
    config.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(remote.RemoteError) as caught:
        remote.popcorn_settings({"POPCORN_API_URL": "http://127.0.0.1:9"}, tmp_path)
    assert str(config) in str(caught.value) and "\n" not in str(caught.value)
    proc = run_cli(["remote", "standings"], {"HOME": str(tmp_path), "POPCORN_API_URL": "http://127.0.0.1:9"})
    sentence = one_sentence(proc.stderr)
    assert proc.returncode == 1 and str(config) in sentence


def _breaking_server(reply: bytes):
    """A server on 127.0.0.1 that sends reply to one request and closes, then stops by itself."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(reply)
        conn.close()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.parametrize("reply", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n[{\"name\": ",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"not http at all\r\n\r\n",
    b"",
], ids=["closed mid-body", "bad chunk", "not HTTP", "closed at once"])
def test_a_server_that_breaks_off_is_one_sentence(reply):
    url = _breaking_server(reply)
    with pytest.raises(remote.RemoteError) as caught:
        remote.fetch_board(url, "causal_conv1d", timeout=10)
    assert url in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("deadline", ["tomorrow-ish", 12345, ["2026"], "2026-13-45"])
def test_an_unreadable_deadline_is_a_warning_never_silence(deadline):
    board = {"name": "causal_conv1d", "deadline": deadline, "gpu_types": ["B200_Nebius"]}
    with json_server(lambda path, cli_id: (200, [board])) as (url, _):
        found, said = leaderboard.ask_board(environ={"POPCORN_API_URL": url}, home=Path("/nonexistent"))
    assert found["deadline"] is None and said.startswith("warning:") and "not checked" in said


# name -> (the file's text or None for a folder, its mode, what the sentence says)
POPCORN_BINS = {"not executable": ("#!/bin/sh\necho hi\n", 0o644, "is not an executable file"),
                "a #! to nowhere": ("#!/nonexistent/python3\nprint('hi')\n", 0o755, "an interpreter that is not there"),
                "an empty #!": ("#!\n", 0o755, "an interpreter that is not there"),
                "a folder": (None, 0o755, "is not an executable file")}


@pytest.mark.parametrize("bad", list(POPCORN_BINS))
@pytest.mark.parametrize("command", [["submit"], ["remote", "list"]])
def test_a_popcorn_bin_that_cannot_run_is_refused_first(tmp_path, bad, command):
    text, mode, words = POPCORN_BINS[bad]
    popcorn = tmp_path / "popcorn-cli"
    if text is None:
        popcorn.mkdir()
    else:
        popcorn.write_text(text)
        popcorn.chmod(mode)
    args = [*command, str(candidate(tmp_path))] if command == ["submit"] else command
    proc = run_cli(args, {"POPCORN_BIN": str(popcorn), "WORKSPACE_HISTORY": str(tmp_path / "h.jsonl")})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert words in proc.stderr.strip().splitlines()[-1]
    assert "correctness suite" not in proc.stdout  # checked before the preflight's other steps


@pytest.mark.parametrize("value,on", [("0", False), ("off", False), ("False", False), ("no", False), (" OFF ", False),
                                      ("1", True), ("on", True), ("true", True), ("YES", True),
                                      ("maybe", True), ("2", True), ("", True)])
def test_the_tune_switch_takes_the_usual_words_and_says_what_another_does(capsys, value, on):
    import submission

    submission.tune_switch.cache_clear()
    assert submission.tune_switch(value) is on
    said = capsys.readouterr().err
    if value.strip().lower() in submission.TUNE_WORDS:
        assert said == ""
    else:
        assert f"{submission.TUNE_ENV}={value!r} is not a word for on or off" in said and "stays on" in said


@pytest.mark.parametrize("prefix", [b"\xef\xbb\xbf", b"\xef\xbb\xbf\n"])
def test_a_byte_order_mark_before_the_directives_is_named(tmp_path, prefix):
    path = tmp_path / "candidate.py"
    path.write_bytes(prefix + DIRECTIVES.encode() + b"x = 1\n")
    with pytest.raises(leaderboard.PreflightError, match="byte-order mark"):
        leaderboard.server_file_rules(path)


# ============================================================================= 3. signals

def _hanging_popcorn(tmp, printed: bytes) -> dict:
    """A popcorn-cli that prints `printed` (a last line with no newline yet) and hangs."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "popcorn-cli"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import os, sys, time
        import signal
        signal.signal(signal.SIGINT, lambda *a: os._exit(130))  # as popcorn: Ctrl-C ends it without a word
        sys.stdout.buffer.write({printed!r})
        sys.stdout.flush()
        open({str(tmp / 'printed')!r}, "w").write(str(os.getpid()))
        time.sleep(600)
    """))
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "WORKSPACE_HISTORY": str(tmp / "h.jsonl")}


def _start_cli(args, env):
    return subprocess.Popen([sys.executable, str(ROOT / "scripts" / "cli.py"), *args], cwd=ROOT,
                            env=dict(os.environ, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _send(proc, signum):
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)  # as a terminal sends Ctrl-C: to the whole group
    else:
        proc.send_signal(signum)


SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
LAST_LINE = b"Geomean score (public) on B200_Nebius: 1.01e-05 s"


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_a_signal_during_submit_keeps_popcorns_last_line_without_its_newline(tmp_path, signum):
    printed = b"Submission 556 accepted. Waiting for results...\n" + LAST_LINE
    env = _hanging_popcorn(tmp_path, printed)
    proc = _start_cli(["submit", str(candidate(tmp_path))], env)
    wait_for(tmp_path / "printed")
    time.sleep(1.0)
    _send(proc, signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum and f"interrupted ({signum.name})" in one_sentence(err), err
    entry = history.read_entries(tmp_path / "h.jsonl")[-1]
    assert entry["outcome"] == "interrupted" and entry["submission_id"] == 556
    assert Path(entry["output"]).read_bytes() == printed  # every byte, the unfinished line too
    assert entry["scores"][0]["score_us"] == pytest.approx(10.1)
    assert not alive(int((tmp_path / "printed").read_text()))


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_a_signal_during_remote_list_keeps_what_popcorn_printed(tmp_path, signum):
    printed = (SAMPLES / "submissions_list.txt").read_bytes()[:-20]
    env = _hanging_popcorn(tmp_path, printed)
    proc = _start_cli(["remote", "list"], env)
    wait_for(tmp_path / "printed")
    time.sleep(1.0)
    _send(proc, signum)
    out, err = proc.communicate(timeout=60)
    sentence = one_sentence(err)
    assert proc.returncode == 128 + signum and f"interrupted ({signum.name})" in sentence, err
    saved = Path(sentence.rsplit(" ", 1)[1])
    assert saved.read_bytes() == printed
    assert not alive(int((tmp_path / "printed").read_text()))


def _slow_submission(tmp, marker: Path) -> Path:
    """A submission whose kernel writes its worker's pid and eval.py's pid to marker, then hangs."""
    return candidate(tmp, body=textwrap.dedent(f"""
        import os, pathlib, time
        def custom_kernel(data):
            pathlib.Path({str(marker)!r}).write_text(f"{{os.getpid()}} {{os.getppid()}}")
            time.sleep(600)
    """))


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize("command", ["eval.py", "judge", "submit's preflight"])
def test_a_signal_ends_every_process_the_run_started_in_one_line(tmp_path, command, signum, fake_popcorn):
    env, _, _ = fake_popcorn
    marker = tmp_path / "pids"
    slow = _slow_submission(tmp_path, marker)
    if command == "eval.py":
        proc = subprocess.Popen([sys.executable, str(ROOT / "eval.py"), "test", "--submission", str(slow)], cwd=ROOT,
                                env={k: v for k, v in os.environ.items() if k != "POPCORN_FD"},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    else:
        env["FAKE_OUTPUT"] = str(SAMPLES / "popcorn_1_3_success.txt")
        proc = _start_cli(["judge", str(slow)] if command == "judge" else ["submit", str(slow)], env)
    wait_for(marker)
    worker, parent = map(int, marker.read_text().split())
    _send(proc, signum)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 128 + signum, err
    assert "interrupted" in one_sentence(err) and "Traceback" not in out
    deadline = time.monotonic() + 20
    while (alive(worker) or alive(parent)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(worker) and not alive(parent)  # no orphan: the worker, and judge's eval.py, are gone


def _hangs_in_third_case(tmp, marker: Path) -> Path:
    """A correct submission that hangs in task.yml's third test case (the only one with W = 3), after writing
    marker: the first two cases finish before the signal comes."""
    return candidate(tmp, body=GOOD_BODY + textwrap.dedent(f"""
        import pathlib, time
        correct = custom_kernel
        def custom_kernel(data):
            if data[1].shape[1] == 3:
                pathlib.Path({str(marker)!r}).write_text("hanging")
                time.sleep(600)
            return correct(data)
    """))


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize("command", ["eval.py", "test", "judge"])
def test_a_signal_keeps_the_cases_that_finished_and_drops_the_one_under_way(tmp_path, command, signum):
    """The trial's finding: a signal ended test and judge with none of their finished cases kept. Now the
    --json report holds them (judge's history entry too), marked interrupted and with no verdict."""
    marker, report, hist = tmp_path / "hanging", tmp_path / "r.json", tmp_path / "h.jsonl"
    submission = _hangs_in_third_case(tmp_path, marker)
    env = {"WORKSPACE_HISTORY": str(hist)}
    if command == "eval.py":
        proc = subprocess.Popen([sys.executable, str(ROOT / "eval.py"), "test", "--submission", str(submission),
                                 "--json", str(report)], cwd=ROOT, env={**{k: v for k, v in os.environ.items() if k != "POPCORN_FD"}, **env},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    else:
        proc = _start_cli([command, "--json", str(report), str(submission)], env)
    wait_for(marker)
    _send(proc, signum)
    out, err = proc.communicate(timeout=90)
    sentence = one_sentence(err)
    assert proc.returncode == 128 + signum, err
    count = "after 2 case results" if command == "judge" else "after 2 finished cases"
    assert f"interrupted ({signum.name})" in sentence and count in sentence, sentence
    kept = json.loads(report.read_text())
    specs = [case.spec for case in harness.cases_from_task("tests")[:2]]
    if command == "judge":
        assert kept["verdict"] == "interrupted" and kept["interrupted"] == signum.name and kept["public_s"] is None
        lines = kept["stages"][0]["lines"]
        assert [lines.get(f"test.{i}.spec") for i in range(3)] == specs + [None]
        assert [lines.get(f"test.{i}.status") for i in range(2)] == ["pass", "pass"] and "check" not in lines
        entry = history.read_entries(hist)[-1]
        assert entry["outcome"] == "interrupted" and entry["geomean_us"] is None
        assert entry["secret_seed"] == kept["secret_seed"]
        assert "in the history" in sentence and f"in {report}" in sentence
    else:
        assert kept["passed"] is False and kept["interrupted"] == signum.name
        assert [(c["spec"], c["ok"]) for c in kept["runs"][0]["cases"]] == [(spec, True) for spec in specs]
        assert kept["runs"][0]["interrupted"] == signum.name
        third = harness.cases_from_task("tests")[2].spec
        assert kept["runs"][0]["dropped"] == third and f"({third}, under way, was dropped)" in sentence
        assert "history" not in sentence and not hist.exists()  # test keeps no history line and says none


def _slow_to_keep(tmp: Path, started: Path, main: str) -> Path:
    """eval.py's main, or the CLI's, with the report's fsync slowed to 3 s (a slow disk): a script to run,
    which writes started when the slow write begins."""
    script = tmp / "slow_keep.py"
    launch = {"eval.py": "import eval\n    sys.exit(eval.main(sys.argv[1:]))",
              "cli": "import runpy\n    runpy.run_path(str(root / 'scripts' / 'cli.py'), run_name='__main__')"}[main]
    script.write_text(textwrap.dedent(f"""\
        import os, pathlib, sys, time
        root = pathlib.Path({str(ROOT)!r})
        sys.path.insert(0, str(root))
        fsync = os.fsync
        def slow(fd):
            pathlib.Path({str(started)!r}).write_text("keeping")
            time.sleep(3)
            fsync(fd)
        if __name__ == "__main__":  # the worker, a fresh interpreter, imports this file too
            os.fsync = slow
        """) + f"    {launch}\n")
    return script


def _start_slow(tmp: Path, main: str, args: list, started: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "POPCORN_FD"}
    env["WORKSPACE_HISTORY"] = str(tmp / "h.jsonl")
    return subprocess.Popen([sys.executable, str(_slow_to_keep(tmp, started, main)), *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.mark.parametrize("command", ["eval.py", "test", "judge"])
def test_a_second_signal_does_not_cut_the_first_ones_keeping(tmp_path, command):
    """A second Ctrl-C while the first one's run is being kept (its report written on a slow disk) is dropped:
    what finished is still kept, whole."""
    marker, report, keeping = tmp_path / "hanging", tmp_path / "r.json", tmp_path / "keeping"
    submission = _hangs_in_third_case(tmp_path, marker)
    args = (["test", "--submission", str(submission)] if command == "eval.py" else [command, str(submission)])
    proc = _start_slow(tmp_path, "eval.py" if command == "eval.py" else "cli", args + ["--json", str(report)], keeping)
    wait_for(marker)
    _send(proc, signal.SIGTERM)
    wait_for(keeping, 60)
    _send(proc, signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    sentence = one_sentence(err)
    count = "after 2 case results" if command == "judge" else "after 2 finished cases"
    assert proc.returncode == 143 and "interrupted (SIGTERM)" in sentence and count in sentence, err
    assert json.loads(report.read_text())["interrupted"] == "SIGTERM"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".r.json")] == []  # no temporary file left


@pytest.mark.parametrize("command", ["eval.py", "test"])
def test_a_signal_while_a_finished_run_is_written_waits_for_the_write(tmp_path, command):
    """Every case passed and the report is being written when SIGTERM comes: the report is written whole,
    then the signal ends the command (the review found the report lost)."""
    report, keeping = tmp_path / "r.json", tmp_path / "keeping"
    args = ["test", "--submission", str(candidate(tmp_path))] if command == "eval.py" else ["test", str(candidate(tmp_path))]
    proc = _start_slow(tmp_path, "eval.py" if command == "eval.py" else "cli", args + ["--json", str(report)], keeping)
    wait_for(keeping, 240)
    _send(proc, signal.SIGTERM)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 143 and "interrupted (SIGTERM)" in one_sentence(err), err
    kept = json.loads(report.read_text())
    assert kept["passed"] is True and len(kept["runs"][0]["cases"]) == len(harness.cases_from_task("tests"))


def test_a_report_cut_by_a_signal_mid_write_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    path = tmp_path / "report.json"
    path.write_text('{"old": true}')

    def interrupted(fd):
        raise harness.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(harness.os, "fsync", interrupted)
    with pytest.raises(harness.Interrupted):
        harness.write_whole(path, '{"new": true}')
    assert path.read_text() == '{"old": true}' and [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_arming_the_signals_clears_an_earlier_commands_ending():
    """The CLI arms the signals for each command (one process may run several, as the tests do): a signal that
    ended the last command must not leave the next one deaf to Ctrl-C."""
    harness._ending = True
    previous = harness.interrupt_on_signals()
    try:
        with pytest.raises(harness.Interrupted):
            signal.raise_signal(signal.SIGHUP)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        harness._ending = False


def test_a_history_locked_by_another_process_is_waited_for_a_bounded_time(tmp_path, monkeypatch):
    """A run ending on a signal drops the signals after it, so the history's lock must not be waited for
    without end: past LOCK_WAIT_S it is one sentence, and nothing is written."""
    path = tmp_path / "h.jsonl"
    path.write_text("")
    monkeypatch.setattr(history, "LOCK_WAIT_S", 0.3)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1]); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)", str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        with pytest.raises(history.HistoryError, match="stayed locked by another process for 0.3 s"):
            history.append_entry({"time": "t", "gpu": "g", "outcome": "pass"}, path)
        assert time.monotonic() - start < 5 and path.read_text() == ""
    finally:
        holder.kill()
        holder.wait()


def test_an_interrupted_bench_enters_the_history_with_its_finished_cases_never_ranked(tmp_path, monkeypatch):
    """bench needs a GPU, so its run is faked here: eval.run_local ends with a Cut holding one timed case."""
    hist = tmp_path / "h.jsonl"
    monkeypatch.setattr(history, "HISTORY", hist)
    case = {"spec": "B: 1; D: 1536; S: 2048; W: 4; seed: 2146", "ok": True, "ran": True,
            "fields": {"B": 1, "D": 1536, "S": 2048, "W": 4, "seed": 2146}, "stats_ns": {"mean": 5000.0}}
    kept = {"submission": "s.py", "device": "X", "versions": {}, "passed": False, "interrupted": "SIGTERM",
            "runs": [{"mode": "benchmark", "passed": False, "cases": [case], "interrupted": "SIGTERM",
                      "dropped": None, "geomean_us": 5.0}]}  # a geomean, so only the outcome keeps it unranked

    def cut(*args, **kwargs):
        raise harness.Cut(signal.SIGTERM, kept)

    monkeypatch.setattr(harness, "run_local", cut)
    report = tmp_path / "r.json"
    result = CliRunner().invoke(cli.cli, ["bench", "--json", str(report), str(candidate(tmp_path))])
    assert result.exit_code == 143 and "after 1 finished case," in result.output, result.output
    assert f"above and in the history and in {report}" in result.output
    assert "no case was under way" in result.output  # the signal came in a cool-down
    assert json.loads(report.read_text()) == kept
    entry = history.read_entries(hist)[-1]
    assert entry["outcome"] == "interrupted" and entry["timed_cases"][0]["mean_us"] == 5.0
    assert history.best_per_gpu(history.read_entries(hist)) == {}


def test_an_interrupted_bench_whose_history_fails_names_only_where_it_was_kept(tmp_path, monkeypatch):
    """The history is a folder: the sentence names the report it did write and why the history failed."""
    monkeypatch.setattr(history, "HISTORY", tmp_path)
    kept = {"submission": "s.py", "device": "X", "versions": {}, "passed": False, "interrupted": "SIGINT",
            "runs": [{"mode": "benchmark", "passed": False, "cases": [], "interrupted": "SIGINT", "dropped": None}]}

    def cut(*args, **kwargs):
        raise harness.Cut(signal.SIGINT, kept)

    monkeypatch.setattr(harness, "run_local", cut)
    monkeypatch.setattr(cli, "check_writable", lambda *args, **kwargs: None)  # the folder is refused before a run
    report = tmp_path / "r.json"
    result = CliRunner().invoke(cli.cli, ["bench", "--json", str(report), str(candidate(tmp_path))])
    assert result.exit_code == 130, result.output
    assert f"they are above and in {report}; the history {tmp_path} cannot be written" in result.output
    assert "in the history" not in result.output and json.loads(report.read_text()) == kept


def test_a_judge_cut_in_the_secret_chain_keeps_the_public_score_and_hides_nothing():
    """On a GPU, the public chain passed and a signal cut the secret chain: no verdict, nothing said hidden,
    the history line carries no score."""
    from scripts import judge

    public = [judge.Stage(chain="public", mode=mode, passed=True, error="",
                          lines={"benchmark-count": "1", "benchmark.0.mean": "5000", "check": "pass"})
              for mode in judge.STAGES]
    secret = [judge.Stage(chain="secret", mode="test", error="interrupted (SIGTERM)",
                          lines={"test.0.spec": "B: 1", "test.0.status": "pass"})]
    record = judge._record(Path("s.py"), "NVIDIA H200", True, 7, {"public": public, "secret": secret},
                           interrupted="SIGTERM")
    assert record["verdict"] == "interrupted" and record["hidden_by"] is None
    assert record["public_s"] == pytest.approx(5e-6)
    assert "interrupted (SIGTERM) in the secret test stage, after 4 case results" in judge.verdict_sentence(record)
    entry = history.judge_entry(record)
    assert entry["outcome"] == "interrupted" and entry["geomean_us"] is None


def test_the_cut_sentence_counts_only_cases_that_ran():
    ran = {"ran": True}
    report = {"interrupted": "SIGHUP", "runs": [
        {"cases": [ran, ran, {"ran": False}], "dropped": None},
        {"cases": [ran], "dropped": "the warm-up (B: 1)"}]}
    assert harness.cut_sentence(report, "above") == (
        "interrupted (SIGHUP) after 3 finished cases, with no verdict (the warm-up (B: 1), under way, was dropped);"
        " they are above")


@pytest.mark.parametrize("raised", ["KeyboardInterrupt()", "SystemExit(3)", "GeneratorExit()",
                                    "type('Custom', (BaseException,), {})('odd')"])
def test_a_kernel_raising_a_base_exception_fails_that_case_with_the_exception_named(tmp_path, raised):
    path = candidate(tmp_path, body=textwrap.dedent(f"""
        def custom_kernel(data):
            raise {raised}
    """))
    cases = harness.parse_tests(CASE_LINE + CASE_LINE.replace("seed: 1", "seed: 2"))
    run = harness.run_suite("test", cases, path)
    name = raised.split("(")[0] if not raised.startswith("type") else "Custom"
    assert not run["passed"] and len(run["cases"]) == 2
    for case in run["cases"]:
        assert case["error"].startswith(f"custom_kernel raised {name}") and "crashed" not in case["error"]


# ============================================================================= 4. one writer at a time

WRITER = """
import sys
from pathlib import Path
from scripts import history
path, me = Path(sys.argv[1]), int(sys.argv[2])
entries = [{"time": "2026-12-01T00:00:00+00:00", "gpu": "B200_Nebius", "outcome": "pass", "submission_id": i,
            "runs": [{"mode": "leaderboard", "passed": True, "score_us": 10.0 + i}]} for i in range(1, 21)]
for round in range(5):
    history.merge_remote(entries, path)
    history.append_entry({"time": "2026-12-01T00:00:00+00:00", "gpu": "H", "outcome": "pass", "writer": me,
                          "round": round, "pad": "x" * 5000}, path)
"""


@pytest.mark.parametrize("writers", [2, 6, 12])
def test_concurrent_merges_and_appends_keep_one_entry_per_id_and_every_line(tmp_path, writers):
    path = tmp_path / "h.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(me)], cwd=ROOT) for me in range(writers)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    lines = path.read_text().splitlines()
    entries = [json.loads(line) for line in lines]  # every line whole
    ids = [e["submission_id"] for e in entries if "submission_id" in e]
    assert sorted(ids) == list(range(1, 21))  # one entry per id, however many merged at once
    appended = {(e["writer"], e["round"]) for e in entries if "writer" in e}
    assert appended == {(me, r) for me in range(writers) for r in range(5)}  # no append lost


# ============================================================================= 5. the same rules everywhere

JUDGED = {"a .txt file": ("ok.txt", DIRECTIVES.encode() + b"x = 1\n", "does not end in .py"),
          "an empty file": ("empty.py", b"", "is empty"),
          "not UTF-8": ("latin.py", DIRECTIVES.encode() + b"# \xe9\n", "is not valid UTF-8"),
          "over 1 MB": ("big.py", DIRECTIVES.encode() + b"#" * 1_000_001, "1,000,000 bytes")}


@pytest.mark.parametrize("bad", list(JUDGED))
def test_judge_applies_the_servers_file_rules_as_submit_does(tmp_path, bad):
    name, raw, words = JUDGED[bad]
    (tmp_path / name).write_bytes(raw)
    for command in (["judge"], ["submit", "--dry-run"]):
        proc = run_cli([*command, str(tmp_path / name)], {"WORKSPACE_HISTORY": str(tmp_path / "h.jsonl")})
        assert proc.returncode == 1 and words in one_sentence(proc.stderr), (command, proc.stderr)
    assert not (tmp_path / "h.jsonl").exists()


@pytest.mark.parametrize("value", ["-1", "0", "abc", "1.5", "-0", "1e3",
                                   "\u00b2", "12\u00b2", "9" * 30])  # str.isdigit() took the superscript (int() raised)
def test_remote_show_says_an_id_is_a_positive_integer(value):
    proc = run_cli(["remote", "show", value], {})
    assert proc.returncode == 2 and f"{value!r} is not a submission id: an id is a positive integer" in proc.stderr


def test_a_device_call_cut_off_by_timeout_still_packs_what_its_step_wrote(tmp_path):
    """`timeout N bash scripts/device_run.sh compare` on a step that outlives N: SIGTERM reaches the step's
    command (a stand-in python3 that writes its partial result on SIGTERM, as compare does), its last line
    reaches the log through tee, and the script packs results/device into device.tgz before it ends."""
    import tarfile

    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "device_run.sh").write_text((ROOT / "scripts" / "device_run.sh").read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python3"
    fake.write_text(textwrap.dedent("""\
        #!/bin/bash
        if [ "$2" = cases ]; then echo "case"; exit 0; fi
        trap 'echo "whole rounds kept" > results/device/compare/partial.txt; echo "interrupted (SIGTERM)"; exit 143' TERM
        mkdir -p results/device/compare; echo "timing"
        sleep 60 & wait
        """))
    fake.chmod(0o755)
    out = tmp_path / "out"
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", OUT=str(out))
    began = time.monotonic()
    done = subprocess.run(["timeout", "3", "bash", "scripts/device_run.sh", "compare"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 124 and time.monotonic() - began < 30, (done.returncode, done.stderr)
    log = (out / "log.txt").read_text()
    assert "timing" in log and "interrupted (SIGTERM)" in log and "### stopped by SIGTERM in step compare" in log, log
    with tarfile.open(out / "device.tgz") as packed:
        member = packed.extractfile("results/device/compare/partial.txt")
        assert member is not None and member.read() == b"whole rounds kept\n"
