"""eval.py: the runner's protocol, and the checks that keep a wrong kernel from looking right."""
import base64
import io
import json
import os
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

# ----------------------------------------------------------------------------- the contract


def test_task_yml_holds_the_leaderboards_cases_in_order():
    assert TASK["tests"] == [
        {"B": 1, "D": 64, "S": 64, "W": 4, "seed": 4242}, {"B": 2, "D": 128, "S": 128, "W": 4, "seed": 5236},
        {"B": 1, "D": 256, "S": 256, "W": 3, "seed": 1001}, {"B": 1, "D": 128, "S": 64, "W": 8, "seed": 5531},
        {"B": 4, "D": 64, "S": 128, "W": 4, "seed": 9173}]
    assert TASK["benchmarks"] == [
        {"B": 1, "D": 1536, "S": 2048, "W": 4, "seed": 2146}, {"B": 1, "D": 2560, "S": 2048, "W": 4, "seed": 3129},
        {"B": 1, "D": 2560, "S": 4096, "W": 4, "seed": 54352}]
    assert TASK["ranking_by"] == "geom"


def test_time_limits_match_task_yml():
    assert harness.TIME_LIMITS["test"] == TASK["test_timeout"]
    assert harness.TIME_LIMITS["benchmark"] == TASK["benchmark_timeout"]
    assert harness.TIME_LIMITS["leaderboard"] == TASK["ranked_timeout"]


# ----------------------------------------------------------------------------- parsing


def test_parse_tests_reads_the_runner_format():
    cases = harness.parse_tests("B: 1; D: 1536; S: 2048; W: 4; seed: 2146\n\nB: 2; D: 3; S: 4; W: 1; seed: -5; fast: true\n")
    assert [c.args for c in cases] == [
        {"B": 1, "D": 1536, "S": 2048, "W": 4, "seed": 2146},
        {"B": 2, "D": 3, "S": 4, "W": 1, "seed": -5, "fast": True}]
    assert cases[0].spec == "B: 1; D: 1536; S: 2048; W: 4; seed: 2146"


@pytest.mark.parametrize("line", ["B: 1; D: x1", "B 1; D: 2", "B: 1.5", "B: 1;; D: 2"])
def test_parse_tests_names_a_bad_line(line):
    with pytest.raises(ValueError, match="invalid test case"):
        harness.parse_tests(line)


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


# ----------------------------------------------------------------------------- fresh processes, deadlines


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


def test_a_crashing_case_is_reported_not_raised(tmp_path):
    path = write_submission(tmp_path, """
        import os
        def custom_kernel(data):
            os._exit(3)
    """)
    case = harness.parse_tests("B: 1; D: 2; S: 8; W: 4; seed: 1")[0]
    outcome = harness.run_in_fresh_process("test", case, path, ROOT, None, time.monotonic() + 120)
    assert not outcome.ok and "crashed (exit code 3)" in outcome.error


def test_a_case_past_the_deadline_is_killed_and_failed(tmp_path):
    path = write_submission(tmp_path, """
        import time
        def custom_kernel(data):
            time.sleep(600)
    """)
    case = harness.parse_tests("B: 1; D: 2; S: 8; W: 4; seed: 1")[0]
    start = time.monotonic()
    outcome = harness.run_in_fresh_process("test", case, path, ROOT, None, time.monotonic() + 8)
    assert not outcome.ok and "time limit exceeded" in outcome.error
    assert time.monotonic() - start < 60


def test_a_submission_that_does_not_import_fails_its_cases(tmp_path):
    path = write_submission(tmp_path, "import not_a_real_module\n")
    case = harness.parse_tests("B: 1; D: 2; S: 8; W: 4; seed: 1")[0]
    outcome = harness.run_in_fresh_process("test", case, path, ROOT, None, time.monotonic() + 120)
    assert not outcome.ok and "could not import the submission" in outcome.error


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


def test_runner_mode_refuses_a_bad_tests_file(tmp_path):
    bad = tmp_path / "tests.txt"
    bad.write_text("B: one\n")
    proc = run_eval(["test", str(bad)], fd_out=[])
    assert proc.returncode == harness.BAD_TESTS_FILE and "invalid test case" in proc.stderr


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU message; this machine has a GPU")
@pytest.mark.parametrize("mode", ["benchmark", "leaderboard", "profile", "both"])
def test_timing_modes_without_a_gpu_say_so_in_one_sentence(mode):
    proc = run_eval([mode])
    assert proc.returncode != 0
    assert "needs a CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU message; this machine has a GPU")
def test_runner_benchmark_without_a_gpu_fails_cleanly(tmp_path):
    tests_file = tmp_path / "b.txt"
    tests_file.write_text("B: 1; D: 4; S: 16; W: 4; seed: 1\n")
    lines = []
    proc = run_eval(["benchmark", str(tests_file)], fd_out=lines)
    assert proc.returncode == harness.FAILED and lines[0].strip().endswith("check: fail")
    assert "needs a CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr


def test_local_report_names_the_failure_and_writes_json(tmp_path):
    problem = tmp_path / "problem"
    problem.mkdir()
    for name in ("reference.py", "utils.py", "task.py"):
        (problem / name).write_text((ROOT / name).read_text())
    task = dict(TASK, tests=[{"B": 1, "D": 4, "S": 16, "W": 4, "seed": 1}])
    (problem / "task.yml").write_text(yaml.safe_dump(task))
    wrong = write_submission(problem, WRONG, "submission.py")
    report = tmp_path / "report.json"
    proc = run_eval(["test", str(problem), "--submission", str(wrong), "--json", str(report)])
    assert proc.returncode == 1
    assert "[FAIL] B: 1; D: 4; S: 16; W: 4; seed: 1" in proc.stdout and "mismatch found" in proc.stdout
    data = json.loads(report.read_text())
    assert data["passed"] is False and data["runs"][0]["cases"][0]["ok"] is False


def test_popcorn_lines_for_timings_and_a_profile():
    lines = io.StringIO()
    reporter = harness.PopcornReporter(lines)
    case = harness.parse_tests("B: 1; D: 4; S: 32; W: 4; seed: 1")[0]
    reporter.begin("benchmark", [case])
    reporter.case("benchmark", 0, case, harness.Outcome(ok=True, stats=harness.calculate_stats([1000.0, 3000.0])))
    reporter.end("benchmark", True)
    assert lines.getvalue().splitlines() == [
        "benchmark-count: 1", "benchmark.0.spec: B: 1; D: 4; S: 32; W: 4; seed: 1", "benchmark.0.runs: 2",
        "benchmark.0.mean: 2000.0", f"benchmark.0.std: {2 ** 0.5 * 1000.0}", "benchmark.0.err: 1000.0",
        "benchmark.0.best: 1000.0", "benchmark.0.worst: 3000.0", "check: pass"]

    outcome = harness.run_case("profile", SMALL, good_kernel, reference)  # the profiler's table, any device
    assert outcome.ok and "Self CPU" in outcome.report
    lines = io.StringIO()
    harness.PopcornReporter(lines).case("profile", 0, case, outcome)
    encoded = lines.getvalue().splitlines()[1].split(": ", 1)[1]
    assert base64.b64decode(encoded).decode() == outcome.report


def test_interpreter_choice_follows_the_submission():
    assert harness.interpreter_env("import helion\nimport torch\n") == {"HELION_INTERPRET": "1"}
    assert harness.interpreter_env("import triton\n") == {"TRITON_INTERPRET": "1"}


# ----------------------------------------------------------------------------- on a GPU


@needs_gpu
def test_a_kernel_that_cannot_be_captured_fails_the_case():
    def syncing_kernel(data):
        out = reference.ref_kernel(data).clone()
        torch.cuda.synchronize()  # illegal inside graph capture
        return out

    with pytest.raises(harness.CaseFailure, match="Failed to capture kernel in CUDA graph"):
        harness.run_case("test", SMALL, syncing_kernel, reference)


@needs_gpu
def test_protocol_timing_gives_ten_positive_samples():
    x = torch.randn(1 << 22, device="cuda")
    stats = harness.time_protocol(x.clone, rep_ms=5)
    assert stats.runs == 10 and 0 < stats.best <= stats.mean <= stats.worst
