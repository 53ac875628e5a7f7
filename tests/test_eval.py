"""eval.py: the runner's protocol, and the checks that keep a wrong kernel from looking right."""
import base64
import io
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import textwrap
import time

import pytest
import torch
import yaml

import eval as harness
import reference
from conftest import HAS_GPU, ROOT, needs_gpu

TASK = yaml.safe_load((ROOT / "task.yml").read_text())
PROTOCOL = ROOT.parent / "shared" / "PROTOCOL.md"

# ----------------------------------------------------------------------------- the contract


def _protocol_cases(label: str, until: str) -> list[dict]:
    text = PROTOCOL.read_text()
    section = text[text.index(label) + len(label):text.index(until)]
    return [dict(zip(("B", "D", "S", "W", "seed"), map(int, group.split(","))))
            for group in re.findall(r"\(([\d,]+)\)", section)]


@pytest.mark.skipif(not PROTOCOL.exists(), reason="the specs folder ../shared is not beside this checkout")
def test_task_yml_holds_the_cases_the_protocol_publishes_in_order():
    assert TASK["tests"] == _protocol_cases("tests (B, D, S, W, seed):", "benchmarks:")
    assert TASK["benchmarks"] == _protocol_cases("benchmarks:", "Time limits")
    assert TASK["ranking_by"] == "geom"


def test_time_limits_come_from_task_yml():
    limits = harness.time_limits(dict(TASK, test_timeout=1, benchmark_timeout=2, ranked_timeout=3))
    assert limits == {"test": 1, "benchmark": 2, "leaderboard": 3, "profile": 2}
    assert harness.time_limits()["leaderboard"] == TASK["ranked_timeout"]


def test_a_missing_or_broken_task_yml_is_named(tmp_path):
    with pytest.raises(harness.TaskError, match="cannot read .*task.yml"):
        harness.load_task(tmp_path)
    (tmp_path / "task.yml").write_text("tests: []\n")
    with pytest.raises(harness.TaskError, match="lacks benchmarks"):
        harness.load_task(tmp_path)


# ----------------------------------------------------------------------------- parsing


def test_parse_tests_reads_the_runner_format():
    cases = harness.parse_tests("B: 1; D: 1536; S: 2048; W: 4; seed: 2146\n\nB: 2; D: 3; S: 4; W: 1; seed: -5; fast: true\n")
    assert [c.args for c in cases] == [
        {"B": 1, "D": 1536, "S": 2048, "W": 4, "seed": 2146},
        {"B": 2, "D": 3, "S": 4, "W": 1, "seed": -5, "fast": True}]
    assert cases[0].spec == "B: 1; D: 1536; S: 2048; W: 4; seed: 2146"


@pytest.mark.parametrize("text,message", [
    ("B: 1; D: x1; S: 4; W: 4; seed: 1", "line 1 .*D is 'x1', not an integer"),
    ("B 1; D: 2; S: 4; W: 4; seed: 1", "line 1 .*cannot read 'B 1'"),
    ("B: 1.5; D: 2; S: 4; W: 4; seed: 1", "B is '1.5', not an integer"),
    ("B: 1;; D: 2; S: 4; W: 4; seed: 1", "cannot read ''"),
    ("B: 1; D: 2; S: 4; W: 4; seed: 1\n\nB: 1; D: 2; S: 4; seed: 1", "line 3 .*it lacks W"),
    ("B: 1; D: 2; S: 4; W: true; seed: 1", "W must be an integer"),
    ("", "holds no cases"),
    ("\n  \n", "holds no cases"),
])
def test_parse_tests_names_the_bad_line(text, message):
    with pytest.raises(harness.TaskError, match=message):
        harness.parse_tests(text)


@pytest.mark.parametrize("value,expect", [
    ("abc", "'abc'"),
    (12, "12"),
    (None, "None"),
    ("x" * 100, "'" + "x" * 78 + "'... (100 characters)"),
    (10 ** 400, "1" + "0" * 79 + "... (401 characters)"),
    ("\x00" * 300, "'" + "\\x00" * 19 + "'... (300 characters)"),  # escapes count as what is shown
    ("\U000e0000" * 200, "'" + "\\U000e0000" * 7 + "'... (200 characters)"),
], ids=["text", "int", "none", "long-text", "400-digits", "control-characters", "tag-characters"])
def test_a_value_in_a_message_is_one_short_line(value, expect):
    """Bad values are named in messages through eval.shown: text quoted, anything else as its repr, never
    more than 80 characters of it, however many escapes its repr takes."""
    assert harness.shown(value) == expect


def test_secret_seed_combination():
    assert harness.combine_seed(2146, 7) == 2146 + (2146 + 7) * (2146 + 7 + 1) // 2
    assert harness.combine_seed(0, 0) == 0
    cases = harness.parse_tests("B: 1; D: 2; S: 3; W: 4; seed: 10", secret=99)
    assert cases[0].args["seed"] == 10 + 109 * 110 // 2
    assert cases[0].spec.endswith("seed: 10")  # the spec echoes the public line


def test_format_spec_round_trips_through_parse():
    for args in TASK["tests"] + TASK["benchmarks"]:
        assert harness.parse_tests(harness.format_spec(args))[0].args == args


def test_stats_are_the_runners():
    s = harness.calculate_stats([1.0, 2.0, 3.0, 4.0])
    assert (s.runs, s.mean, s.best, s.worst) == (4, 2.5, 1.0, 4.0)
    assert s.std == pytest.approx((5 / 3) ** 0.5) and s.err == pytest.approx(s.std / 2)


# ----------------------------------------------------------------------------- checks inside a case

SMALL = {"B": 1, "D": 4, "S": 32, "W": 4, "seed": 1}


def good_kernel(data):
    return reference.ref_kernel(data).clone()


def off_by_one(data):
    return reference.ref_kernel(data) + 1.0


def nan_kernel(data):
    out = reference.ref_kernel(data).clone()
    out[0, 0, 0] = float("nan")
    return out


def mutating_kernel(data):
    out = reference.ref_kernel(data).clone()
    data[0].mul_(2.0)
    return out


def weight_mutating_kernel(data):
    out = reference.ref_kernel(data).clone()
    data[1][0, 0] += 1.0
    return out


def aliasing_kernel(data):
    x = data[0]
    x_out = x  # the right answer written over the input: same values, wrong memory
    x_out.copy_(reference.ref_kernel((x.clone(), data[1], data[2])))
    return x_out


def raising_kernel(data):
    raise RuntimeError("boom")


def list_kernel(data):
    return [0.0]


def test_a_correct_kernel_passes():
    outcome = harness.run_case("test", SMALL, good_kernel, reference)
    assert outcome.ok
    if not HAS_GPU:
        assert any("no CUDA-graph capture" in note for note in outcome.notes)


@pytest.mark.parametrize("kernel,message", [
    (off_by_one, "mismatch found"),
    (nan_kernel, "mismatch found"),
    (mutating_kernel, "mutated its input x"),
    (weight_mutating_kernel, "mutated its input weight"),
    (aliasing_kernel, "mutated its input x"),
    (raising_kernel, "custom_kernel raised RuntimeError: boom"),
    (list_kernel, "returned list, not a tensor"),
])
def test_a_wrong_kernel_fails_with_a_message_naming_why(kernel, message):
    with pytest.raises(harness.CaseFailure, match=message):
        harness.run_case("test", SMALL, kernel, reference)


def test_an_output_that_aliases_an_input_fails_before_its_values_are_compared():
    with pytest.raises(harness.CaseFailure, match="aliases the input x"):
        harness.run_case("test", SMALL, lambda data: data[0], reference)
    data = reference.generate_input(**SMALL)
    with pytest.raises(harness.CaseFailure, match="aliases the input x"):
        harness.check_no_alias(data[0][:, :, 5:9], data)  # a view into the middle of x
    harness.check_no_alias(reference.ref_kernel(data), data)  # a fresh tensor passes


def test_leaderboard_rechecks_catch_a_kernel_that_replays_an_old_answer():
    remembered = {}

    def replaying_kernel(data):
        if "out" not in remembered:
            remembered["out"] = reference.ref_kernel(data).clone()
        return remembered["out"].clone()

    assert harness.run_case("test", SMALL, replaying_kernel, reference).ok  # one input: looks right
    remembered.clear()
    with pytest.raises(harness.CaseFailure, match="mismatch found"):
        harness.run_case("leaderboard", SMALL, replaying_kernel, reference)


# ----------------------------------------------------------------------------- the worker, deadlines


def write_submission(tmp_path, body: str, name="submission.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


GOOD = """
    import reference
    def custom_kernel(data):
        return reference.ref_kernel(data).clone()
"""
WRONG = """
    import reference
    def custom_kernel(data):
        return reference.ref_kernel(data) * 1.01 + 0.5
"""
# Appends "pid calls-so-far" to $CALL_LOG on every call: shows which process ran each case.
LOGGING = """
    import os
    import reference
    CALLS = []
    def custom_kernel(data):
        CALLS.append(1)
        if data[0].shape[1] == int(os.environ.get("CRASH_AT_D", "-1")):
            os._exit(3)
        with open(os.environ["CALL_LOG"], "a") as log:
            log.write(f"{os.getpid()} {len(CALLS)}\\n")
        return reference.ref_kernel(data).clone()
"""
TINY = "B: 1; D: 2; S: 8; W: 4; seed: 1\nB: 1; D: 3; S: 8; W: 4; seed: 2\nB: 1; D: 4; S: 8; W: 4; seed: 3\n"


def suite(tmp_path, body, text=TINY, mode="test", limit_s=None):
    reporter = harness.HumanReporter(io.StringIO())
    run = harness.run_suite(mode, harness.parse_tests(text), write_submission(tmp_path, body), reporter,
                            limit_s=limit_s)
    return run["passed"], run["cases"], reporter.out.getvalue()


def test_all_cases_share_one_worker_and_its_module_state(tmp_path, monkeypatch):
    log = tmp_path / "calls.txt"
    monkeypatch.setenv("CALL_LOG", str(log))
    passed, cases, _ = suite(tmp_path, LOGGING)
    assert passed and all(c["ok"] for c in cases)
    pids = {line.split()[0] for line in log.read_text().splitlines()}
    counts = [int(line.split()[1]) for line in log.read_text().splitlines()]
    assert len(pids) == 1  # one process for the run, as on the runner
    assert counts == sorted(counts) and counts[-1] == len(counts)  # the module's list grew across the cases


def test_a_crash_fails_its_case_and_a_fresh_worker_takes_the_rest(tmp_path, monkeypatch):
    log = tmp_path / "calls.txt"
    monkeypatch.setenv("CALL_LOG", str(log))
    monkeypatch.setenv("CRASH_AT_D", "3")
    passed, cases, _ = suite(tmp_path, LOGGING)
    assert not passed and [c["ok"] for c in cases] == [True, False, True]
    assert "crashed during this case (exit code 3)" in cases[1]["error"]
    pids = [line.split()[0] for line in log.read_text().splitlines()]
    assert pids[0] != pids[-1]  # the third case ran in a new worker


def test_a_hang_past_the_deadline_is_killed_and_the_rest_reads_not_run(tmp_path):
    start = time.monotonic()
    passed, cases, text = suite(tmp_path, """
        import time
        def custom_kernel(data):
            time.sleep(600)
    """, limit_s=8)
    assert not passed and time.monotonic() - start < 60
    assert "time limit exceeded" in cases[0]["error"]
    assert [c["ran"] for c in cases] == [True, False, False] and "not run" in cases[1]["error"]
    assert text.count("[not run]") == 2


def test_an_import_failure_fails_the_run_is_reported_once_and_every_case_not_run_points_to_it(tmp_path):
    passed, cases, text = suite(tmp_path, "import not_a_real_module\n")
    assert not passed and all("could not import the submission" in c["error"] for c in cases)
    assert text.count("No module named 'not_a_real_module'") == 1 and text.count("[not run]") == 2
    lines = text.splitlines()
    assert [lines[i + 1].strip() for i, line in enumerate(lines) if "[not run]" in line] == \
        ["(the same reason as above)"] * 2


def test_every_failed_case_shows_its_reason_in_full_or_pointing_to_the_same_one_just_above(tmp_path):
    passed, cases, text = suite(tmp_path, """
        def custom_kernel(data):
            raise ValueError("odd D" if data[0].shape[1] % 2 else "even D")
    """, text=TINY + "B: 1; D: 6; S: 8; W: 4; seed: 4\n")
    assert not passed and [c["error"].endswith(" D") for c in cases] == [True] * 4
    reasons = [line.strip() for line in text.splitlines() if line.startswith("         ")]
    assert reasons == ["custom_kernel raised ValueError: even D", "custom_kernel raised ValueError: odd D",
                       "custom_kernel raised ValueError: even D", "(the same error as above)"]


def run_eval(args, fd_out=None, env_extra=None, cwd=ROOT):
    env = {k: v for k, v in os.environ.items() if k not in ("POPCORN_FD", "POPCORN_SEED")}
    env.update(env_extra or {})
    if fd_out is None:
        return subprocess.run([sys.executable, "eval.py", *args], cwd=cwd, env=env, capture_output=True, text=True)
    read_fd, write_fd = os.pipe()
    env["POPCORN_FD"] = str(write_fd)
    proc = subprocess.run([sys.executable, "eval.py", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          pass_fds=(write_fd,))
    os.close(write_fd)
    with os.fdopen(read_fd) as reader:
        fd_out.append(reader.read())
    return proc


def test_runner_mode_speaks_the_protocol_for_a_passing_and_a_failing_submission(tmp_path):
    tests_file = tmp_path / "tests.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 4242\nB: 2; D: 3; S: 9; W: 3; seed: 5\n")
    good = write_submission(tmp_path, GOOD, "good.py")
    lines = []
    proc = run_eval(["test", str(tests_file), "--submission", str(good)], fd_out=lines, env_extra={"POPCORN_SEED": "123"})
    assert proc.returncode == 0, proc.stderr
    assert lines[0].splitlines() == [
        "test-count: 2",
        "test.0.spec: B: 1; D: 4; S: 16; W: 4; seed: 4242", "test.0.status: pass",
        "test.1.spec: B: 2; D: 3; S: 9; W: 3; seed: 5", "test.1.status: pass",
        "check: pass"]

    wrong = write_submission(tmp_path, WRONG, "wrong.py")
    lines = []
    proc = run_eval(["test", str(tests_file), "--submission", str(wrong)], fd_out=lines)
    assert proc.returncode == harness.FAILED
    out = lines[0].splitlines()
    assert out[0] == "test-count: 2" and out[2] == "test.0.status: fail"
    assert out[3].startswith("test.0.error: mismatch found!") and "Number of mismatched elements" in out[3]
    assert out[-1] == "check: fail"


def test_runner_mode_sets_helion_disallow_autotuning_for_the_submission(tmp_path):
    tests_file = tmp_path / "tests.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    strict = write_submission(tmp_path, """
        import os
        import reference
        def custom_kernel(data):
            assert os.environ.get("HELION_DISALLOW_AUTOTUNING") == "1", "autotuning is not disallowed"
            return reference.ref_kernel(data).clone()
    """)
    lines = []
    proc = run_eval(["test", str(tests_file), "--submission", str(strict)], fd_out=lines,
                    env_extra={"HELION_DISALLOW_AUTOTUNING": "0"})
    assert proc.returncode == 0 and lines[0].splitlines()[-1] == "check: pass", lines


@pytest.mark.parametrize("text,message", [
    ("", "holds no cases"),
    ("B: 1; D: 4; S: 16; W: 4\n", "line 1 .*lacks seed"),
    ("B: 1; D: 4; S: 16; W: 4; seed: 1\nB: one; D: 4; S: 16; W: 4; seed: 1\n", "line 2 .*B is 'one', not an integer"),
])
def test_runner_mode_refuses_a_bad_tests_file_in_one_sentence(tmp_path, text, message):
    bad = tmp_path / "tests.txt"
    bad.write_text(text)
    proc = run_eval(["test", str(bad)], fd_out=[])
    assert proc.returncode == harness.BAD_TESTS_FILE and re.search(message, proc.stderr)
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_runner_mode_refuses_a_missing_tests_file_a_bad_fd_and_a_missing_submission(tmp_path):
    proc = run_eval(["test", str(tmp_path / "none.txt")], fd_out=[])
    assert proc.returncode == harness.BAD_TESTS_FILE and "cannot read the tests file" in proc.stderr
    tests_file = tmp_path / "tests.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    for fd in ("abc", "97"):  # not a number; a number no open file has
        proc = run_eval(["test", str(tests_file)], env_extra={"POPCORN_FD": fd})
        assert proc.returncode == harness.USAGE and "does not name an open file descriptor" in proc.stderr
        assert "Traceback" not in proc.stderr
    lines = []
    proc = run_eval(["test", str(tests_file), "--submission", str(tmp_path / "gone.py")], fd_out=lines)
    assert proc.returncode == harness.USAGE and "no submission file at" in proc.stderr and lines == [""]


def test_ctrl_c_says_interrupted_and_exits_130_without_a_traceback(tmp_path):
    started = tmp_path / "started"
    slow = write_submission(tmp_path, f"""
        import pathlib, time
        def custom_kernel(data):
            pathlib.Path({str(started)!r}).write_text("yes")
            time.sleep(600)
    """)
    env = {k: v for k, v in os.environ.items() if k != "POPCORN_FD"}
    proc = subprocess.Popen([sys.executable, "eval.py", "test", "--submission", str(slow)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal sends it: to the parent and the worker alike
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == harness.INTERRUPTED and "interrupted" in err
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU message; this machine has a GPU")
@pytest.mark.parametrize("mode", ["benchmark", "leaderboard", "profile"])
def test_timing_modes_without_a_gpu_say_so_in_one_sentence(mode):
    proc = run_eval([mode])
    assert proc.returncode != 0
    assert "needs a CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU message; this machine has a GPU")
def test_both_without_a_gpu_runs_the_tests_then_says_why_it_stops(tmp_path):
    tests_file = tmp_path / "tiny.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    proc = run_eval(["both", str(tests_file), "--submission", str(write_submission(tmp_path, GOOD))])
    assert proc.returncode == 0 and "[pass] B: 1; D: 4; S: 16; W: 4; seed: 1" in proc.stdout
    assert "benchmarks need a CUDA GPU and none is visible here, so only the tests ran." in proc.stdout
    proc = run_eval(["both", str(tests_file), "--submission", str(write_submission(tmp_path, WRONG, "w.py"))])
    assert proc.returncode == 1  # the tests' verdict


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU message; this machine has a GPU")
def test_runner_benchmark_without_a_gpu_fails_cleanly(tmp_path):
    tests_file = tmp_path / "b.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    lines = []
    proc = run_eval(["benchmark", str(tests_file)], fd_out=lines)
    assert proc.returncode == harness.FAILED and lines[0].strip().endswith("check: fail")
    assert "needs a CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr


def test_local_report_names_the_machine_the_failure_and_writes_json(tmp_path):
    tests_file = tmp_path / "tiny.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    wrong = write_submission(tmp_path, WRONG)
    report = tmp_path / "report.json"
    proc = run_eval(["test", str(tests_file), "--submission", str(wrong), "--json", str(report)])
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0]
    assert first.startswith("GPU: " if HAS_GPU else "CPU: no CUDA device visible") and "torch " in first
    assert "[FAIL] B: 1; D: 4; S: 16; W: 4; seed: 1" in proc.stdout and "mismatch found" in proc.stdout
    assert re.search(r"largest absolute error [\d.e+-]+ at \(\d+, \d+, \d+\): got [\d.e+-]+, expected", proc.stdout)
    assert "largest relative error" in proc.stdout
    data = json.loads(report.read_text())
    assert data["passed"] is False and data["runs"][0]["cases"][0]["ok"] is False
    assert set(data["versions"]) == {"torch", "triton", "helion"} and data["runs"][0]["cases"][0]["wall_s"] > 0


def test_a_local_test_run_leaves_the_tree_clean(tmp_path):
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    def status():
        return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    before = status()
    tests_file = tmp_path / "tiny.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    proc = run_eval(["test", str(tests_file), "--submission", str(write_submission(tmp_path, GOOD))])
    assert proc.returncode == 0 and status() == before
    ignored = subprocess.run(["git", "check-ignore", "-q", "results/history.jsonl"], cwd=ROOT)
    assert ignored.returncode == 0  # history is user data


def test_popcorn_lines_for_timings_and_a_profile():
    lines = io.StringIO()
    reporter = harness.PopcornReporter(lines)
    case = harness.parse_tests("B: 1; D: 4; S: 32; W: 4; seed: 1")[0]
    reporter.begin("benchmark", [case])
    record = harness.case_record(case, harness.Outcome(ok=True, stats=harness.calculate_stats([1000.0, 3000.0])))
    reporter.case("benchmark", 0, record)
    reporter.end(harness.run_record("benchmark", [record], True))
    assert lines.getvalue().splitlines() == [
        "benchmark-count: 1", "benchmark.0.spec: B: 1; D: 4; S: 32; W: 4; seed: 1", "benchmark.0.runs: 2",
        "benchmark.0.mean: 2000.0", f"benchmark.0.std: {2 ** 0.5 * 1000.0}", "benchmark.0.err: 1000.0",
        "benchmark.0.best: 1000.0", "benchmark.0.worst: 3000.0", "check: pass"]

    outcome = harness.run_case("profile", SMALL, good_kernel, reference)  # the profiler's table, any device
    assert outcome.ok and "Self CPU" in outcome.report
    lines = io.StringIO()
    harness.PopcornReporter(lines).case("profile", 0, harness.case_record(case, outcome))
    encoded = lines.getvalue().splitlines()[1].split(": ", 1)[1]
    assert base64.b64decode(encoded, altchars=b"+*").decode() == outcome.report


def test_profile_reports_use_the_runners_base64_alphabet():
    lines = io.StringIO()
    case = harness.parse_tests("B: 1; D: 4; S: 32; W: 4; seed: 1")[0]
    harness.PopcornReporter(lines).case("profile", 0, harness.case_record(case, harness.Outcome(ok=True, report="???>")))
    assert lines.getvalue().splitlines()[1] == "benchmark.0.report: Pz8*Pg=="  # standard base64: Pz8/Pg==


def test_interpreter_choice_follows_the_submission():
    assert harness.interpreter_env("import helion\nimport torch\n") == {"HELION_INTERPRET": "1"}
    assert harness.interpreter_env("import triton\n") == {"TRITON_INTERPRET": "1"}


# ----------------------------------------------------------------------------- on a GPU


def test_every_test_that_skips_without_cuda_is_marked_gpu_and_the_device_step_runs_them():
    """A skipif on `not HAS_GPU` or `not torch.cuda.is_available()` must give conftest's GPU reason, which
    marks the test `gpu`; scripts/device_run.sh's pytest step selects the suite by that mark."""
    import ast

    from conftest import GPU_REASON

    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("skipif") and node.args:
                condition = ast.unparse(node.args[0])
                if condition in ("not HAS_GPU", "not torch.cuda.is_available()"):
                    reason = next(k.value.value for k in node.keywords if k.arg == "reason")
                    assert reason.startswith(GPU_REASON), f"{path.name}:{node.lineno}: {reason}"
    step = next(line for line in (ROOT / "scripts" / "device_run.sh").read_text().splitlines()
                if "-m gpu" in line)
    assert "python3 -m pytest" in step and " tests -m gpu" in step, step


@needs_gpu
def test_a_kernel_that_cannot_be_captured_fails_the_case():
    def syncing_kernel(data):
        out = reference.ref_kernel(data).clone()
        torch.cuda.synchronize()  # illegal inside graph capture
        return out

    with pytest.raises(harness.CaseFailure, match="Failed to capture kernel in CUDA graph"):
        harness.run_case("test", SMALL, syncing_kernel, reference)


@needs_gpu
@pytest.mark.parametrize("flush", harness.FLUSHES)
def test_protocol_timing_gives_ten_positive_samples(flush):
    x = torch.ones(1 << 22, device="cuda")  # no RNG: an earlier failed capture can leave it unusable
    stats = harness.time_protocol(x.clone, rep_ms=5, flush=flush)
    assert stats.runs == 10 and 0 < stats.best <= stats.mean <= stats.worst


@needs_gpu
def test_the_read_flush_leaves_the_buffer_as_it_was_and_the_memset_zeroes_it(monkeypatch):
    """The two flushes differ in what they leave in L2 only because one writes the buffer and one reads it."""
    buffers = []
    real_empty = torch.empty

    def keep(*args, **kwargs):
        tensor = real_empty(*args, **kwargs)
        if tensor.numel() == harness.FLUSH_INT64S:
            tensor.fill_(7)
            torch.cuda.synchronize()  # the protocol works on a side stream that does not wait for this one
            buffers.append(tensor)
        return tensor

    monkeypatch.setattr(torch, "empty", keep)
    monkeypatch.setattr(harness, "FLUSH_INT64S", 1 << 20)  # small: the test watches the buffer, not L2
    seen = {}
    for flush in harness.FLUSHES:
        def call():  # the first call comes after one flush and before any capture, where a sync is allowed
            if flush not in seen:
                seen[flush] = int(buffers[-1][:4].sum())

        harness.time_protocol(call, rep_ms=1, flush=flush)
    assert seen == {"memset": 0, "read": 28}


def test_the_protocol_names_its_flushes_when_given_another():
    with pytest.raises(ValueError, match="flush must be one of memset, read, not 'clean'"):
        harness.time_protocol(lambda: None, rep_ms=1, flush="clean")


def test_a_case_has_one_label_and_its_fields_keep_the_public_and_the_timed_seed():
    public, secret = (harness.parse_tests("B: 2; D: 64; S: 128; W: 3; seed: 10", s)[0] for s in (None, 77))
    assert public.label == secret.label == "2x64x128x3" == harness.case_label(public.args)
    assert public.fields() == {"B": 2, "D": 64, "S": 128, "W": 3, "seed": 10, "timed_seed": 10}
    assert secret.fields() == dict(public.fields(), timed_seed=harness.combine_seed(10, 77))
    assert harness.parse_label(public.label, seed=10) == public.args


# About as many (flush; call) pairs as the protocol puts in a leaderboard graph: its 200 ms hold ~1900-2100
# pairs of ~95-110 us on the H100, ~2900 of ~69 us on the H200, where 2000 calls (~140 ms) read the slow level too (run58).
LEADERBOARD_GRAPH_CALLS = 2000


@needs_gpu
@pytest.mark.parametrize("case", harness.cases_from_task("benchmarks"), ids=lambda case: case.label)
def test_the_protocol_timer_and_the_searchs_graph_timer_agree_within_two_percent(case):
    """eval.time_protocol and submission.graph_timer (which stays inside the kernel file) are two
    copies of the leaderboard's timing: on each leaderboard case, over graphs of about the same length,
    they time one launch alike. The length is about the leaderboard's: after ~200 ms of graphs a call read
    0.27-0.41 us more on the H100 (0.10-0.17 on the H200) than in ~10 ms graphs with gaps between them, on
    the two kernels probed, so the graph timer's own 100-call graphs read a mix of two levels, not a
    different method. At equal length the graph timer read 0.1-1.2% above the protocol in all six probes
    (results/NOTES.md, timer agreement)."""
    import submission

    x, weight, bias = reference.generate_input(**case.args)
    out = torch.empty_like(x)
    tile = submission.heuristic_config(*x.shape, weight.shape[1])

    def run():
        submission.launch(x, weight, bias, out, *tile)

    run()
    timer = submission.graph_timer(x.device)
    protocol, graph = [], []
    for _ in range(3):  # interleaved, medians: one run of either sat at the bound on 1x1536x2048 (runs 21, 26)
        protocol.append(harness.time_protocol(run, rep_ms=harness.REP_MS["leaderboard"]).mean / 1e3)
        graph.append(timer([run], calls=LEADERBOARD_GRAPH_CALLS)[0])
    protocol_us, graph_us = statistics.median(protocol), statistics.median(graph)
    assert abs(graph_us - protocol_us) <= 0.02 * protocol_us, (protocol, graph)
