"""Run a submission's tests and benchmarks the way the causal_conv1d runner does.

Two ways in, one loop:
  runner mode  `POPCORN_FD=N python eval.py MODE TESTS_FILE`: the runner's protocol, key: value lines
               on file descriptor N, exit code 0 or 112.
  local mode   `python eval.py MODE [PROBLEM_DIR] [--submission FILE] [--json OUT]`: the cases of
               task.yml, reported for a person: pass/fail, times, GB/s, geomean, distance to a copy of x.
MODE is test, benchmark, leaderboard or profile (local mode also takes `both`: tests, then benchmarks).

Each case runs in a freshly spawned process, so a crash or a leak stays in that case; a case that
outlives the mode's time limit is killed and reported failed. Beyond the runner's checks (mismatch,
NaN/inf, shape, CUDA-graph capture), a case fails when the kernel mutates an input or returns an output
that aliases one. Without a GPU, tests run on the CPU under the Triton (and Helion) interpreter, with
no graph capture; timing needs a CUDA GPU.
"""
import argparse
import base64
import dataclasses
import importlib.util
import json
import math
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("test", "benchmark", "leaderboard", "profile")
# Seconds per mode, as task.yml says (tests check that these match it).
TIME_LIMITS = {"test": 180, "benchmark": 180, "leaderboard": 420, "profile": 180}
REP_MS = {"benchmark": 100, "leaderboard": 200, "warmup": 20}
RECHECKS = 10
SAMPLES = 10
FLUSH_INT64S = 32 * 1024 * 1024  # 256 MB, zeroed before every timed call so L2 starts cold
FAILED = 112
BAD_TESTS_FILE = 113
GPU_NEEDED = ("the {mode} mode measures kernels on the GPU (CUDA events, graphs or the profiler), so it needs a"
              " CUDA GPU; none is visible here.")


# ----------------------------------------------------------------------------- cases

@dataclasses.dataclass
class Case:
    spec: str  # the line as the tests file gives it, echoed back in the results
    args: dict


def combine_seed(seed: int, secret: int) -> int:
    """The runner's secret-seed combination: seed + (seed + secret)(seed + secret + 1) / 2."""
    return seed + (seed + secret) * (seed + secret + 1) // 2


_FIELD = re.compile(r"\s*([A-Za-z_]\w*)\s*:\s*([+-]?\d+|true|false)\s*")


def parse_tests(text: str, secret: int | None = None) -> list[Case]:
    """One case a line, `B: 1; D: 64; S: 64; W: 4; seed: 4242`; ValueError naming a bad line."""
    cases = []
    for line in text.splitlines():
        if not line.strip():
            continue
        args = {}
        for part in line.split(";"):
            match = _FIELD.fullmatch(part)
            if match is None:
                raise ValueError(f"invalid test case {line!r}: cannot read {part!r}")
            key, value = match.groups()
            args[key] = {"true": True, "false": False}.get(value, None)
            if args[key] is None:
                args[key] = int(value)
        if secret is not None and "seed" in args:
            args["seed"] = combine_seed(args["seed"], secret)
        cases.append(Case(spec=line.strip(), args=args))
    return cases


def format_spec(args: dict) -> str:
    return "; ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in args.items())


def cases_from_task(problem_dir: Path, key: str) -> list[Case]:
    """The `tests` or `benchmarks` of task.yml, as the lines the runner would pass."""
    import yaml

    task = yaml.safe_load((problem_dir / "task.yml").read_text())
    return parse_tests("\n".join(format_spec(args) for args in task[key]))


# ----------------------------------------------------------------------------- outcomes

@dataclasses.dataclass
class Stats:
    runs: int
    mean: float
    std: float
    err: float
    best: float
    worst: float


def calculate_stats(samples: list[float]) -> Stats:
    runs = len(samples)
    mean = sum(samples) / runs
    std = math.sqrt(sum((s - mean) ** 2 for s in samples) / (runs - 1)) if runs > 1 else 0.0
    return Stats(runs, mean, std, std / math.sqrt(runs), float(min(samples)), float(max(samples)))


@dataclasses.dataclass
class Outcome:
    ok: bool
    error: str = ""
    stats: Stats | None = None  # nanoseconds per call
    floor: Stats | None = None  # a copy of x, timed the same way (local benchmarks)
    report: str = ""  # the profiler's table (profile mode)
    notes: list[str] = dataclasses.field(default_factory=list)


class CaseFailure(Exception):
    """A check failed; the message says which."""


# ----------------------------------------------------------------------------- inside a case

def _clone(data):
    if isinstance(data, (tuple, list)):
        return type(data)(_clone(x) for x in data)
    return data.clone() if hasattr(data, "clone") else data


def _tensors(data):
    return [t for t in (data if isinstance(data, (tuple, list)) else [data]) if hasattr(t, "data_ptr")]


def _same_bits(a, b) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def check_untouched(pristine, passed) -> None:
    """The tensors handed to the kernel must still hold, bit for bit, what they held before."""
    names = ("x", "weight", "bias")
    for i, (before, after) in enumerate(zip(_tensors(pristine), _tensors(passed))):
        if not _same_bits(before, after):
            name = names[i] if i < len(names) else f"input {i}"
            raise CaseFailure(f"the kernel mutated its input {name}: it must leave its inputs unchanged")


def check_no_alias(output, inputs) -> None:
    """The output must not share memory with any input."""
    if not hasattr(output, "untyped_storage"):
        raise CaseFailure(f"custom_kernel returned {type(output).__name__}, not a tensor")
    storage = output.untyped_storage()
    lo, hi = storage.data_ptr(), storage.data_ptr() + storage.nbytes()
    for name, tensor in zip(("x", "weight", "bias"), _tensors(inputs)):
        s = tensor.untyped_storage()
        if s.nbytes() and lo < s.data_ptr() + s.nbytes() and s.data_ptr() < hi:
            raise CaseFailure(f"the output aliases the input {name}: it must be freshly allocated")


def check_output(check_implementation, pristine, passed, output) -> None:
    check_untouched(pristine, passed)
    check_no_alias(output, passed)
    ok, message = check_implementation(pristine, output)
    if not ok:
        raise CaseFailure(message)


def _call(custom_kernel, data):
    try:
        return custom_kernel(data)
    except Exception as error:  # the kernel's own error is the case's failure, not ours
        raise CaseFailure(f"custom_kernel raised {type(error).__name__}: {error}") from None


def time_protocol(fn, rep_ms: float) -> Stats:
    """The runner's timing: cold L2 per call, graphs of n calls, flush-only graph subtracted.

    n comes from five (flush; call) pairs timed with events: n = max(1, int(rep_ms / estimate)).
    Each of the ten samples is max(0, full/n - flush/n) in nanoseconds.
    """
    import torch

    flush = torch.empty(FLUSH_INT64S, dtype=torch.int64, device="cuda")
    stream = torch.cuda.Stream()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
    with torch.cuda.stream(stream):
        flush.zero_()
        fn()
        events[0].record()
        for _ in range(5):
            flush.zero_()
            fn()
        events[1].record()
        stream.synchronize()
        n = max(1, int(rep_ms / (events[0].elapsed_time(events[1]) / 5)))
        full, flush_only = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.graph(full, stream=stream):
            for _ in range(n):
                flush.zero_()
                fn()
        with torch.cuda.graph(flush_only, stream=stream):
            for _ in range(n):
                flush.zero_()
        samples = []
        for _ in range(SAMPLES):
            events[0].record()
            flush_only.replay()
            events[1].record()
            full.replay()
            events[2].record()
            stream.synchronize()
            flush_ms = events[0].elapsed_time(events[1])
            full_ms = events[1].elapsed_time(events[2])
            samples.append(max(0.0, (full_ms - flush_ms) / n) * 1e6)
    del full, flush_only, flush
    return calculate_stats(samples)


def run_case(mode: str, args: dict, custom_kernel, reference, measure_floor: bool = False,
             rep_ms: float | None = None) -> Outcome:
    """One case, in this process: generate, warm up, capture, check, recheck, time or profile."""
    import torch

    on_gpu = torch.cuda.is_available()
    outcome = Outcome(ok=True)
    args = dict(args)
    data = reference.generate_input(**args)
    pristine = _clone(data)

    warm = _clone(data)
    output = _call(custom_kernel, warm)
    if on_gpu:
        torch.cuda.synchronize()
    check_output(reference.check_implementation, pristine, warm, output)

    graph_data = _clone(data)
    if on_gpu:
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                graph_output = custom_kernel(graph_data)
        except Exception as error:
            raise CaseFailure(f"Failed to capture kernel in CUDA graph: {type(error).__name__}: {error}") from None
        graph.replay()
        torch.cuda.synchronize()
        run_again = graph.replay
    else:
        outcome.notes.append("CPU, under the interpreter: no CUDA-graph capture; the kernel was called directly")
        graph_output = _call(custom_kernel, graph_data)

        def run_again():
            nonlocal graph_output
            graph_output = _call(custom_kernel, graph_data)
    check_output(reference.check_implementation, pristine, graph_data, graph_output)

    if mode == "leaderboard":
        for _ in range(RECHECKS):
            args["seed"] += 13
            fresh = reference.generate_input(**args)
            for target, source in zip(_tensors(graph_data), _tensors(fresh)):
                target.copy_(source)
            run_again()
            if on_gpu:
                torch.cuda.synchronize()
            check_output(reference.check_implementation, fresh, graph_data, graph_output)

    if mode in ("benchmark", "leaderboard", "warmup"):
        rep = rep_ms if rep_ms is not None else REP_MS[mode]
        outcome.stats = time_protocol(lambda: custom_kernel(graph_data), rep)
        if measure_floor:
            x = graph_data[0]
            outcome.floor = time_protocol(x.clone, rep)
    elif mode == "profile":
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
        with profile(activities=activities) as prof:
            custom_kernel(_clone(data))
            if on_gpu:
                torch.cuda.synchronize()
        sort_by = "self_cuda_time_total" if on_gpu else "self_cpu_time_total"
        outcome.report = prof.key_averages().table(sort_by=sort_by, row_limit=20)
    return outcome


def load_submission(path: Path, module_name: str = "submission"):
    """Import a submission-style file under `module_name` (the runner names it `submission`)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def interpreter_env(source: str) -> dict:
    """The one interpreter a CPU run needs: Helion's for a Helion file (it refuses to run beside
    Triton's), else Triton's."""
    uses_helion = re.search(r"^\s*(import|from)\s+helion\b", source, re.MULTILINE)
    return {"HELION_INTERPRET": "1"} if uses_helion else {"TRITON_INTERPRET": "1"}


def _case_worker(conn, mode, args, submission, problem_dir, secret, measure_floor, rep_ms):
    """The body of a case's spawned process: everything it knows arrives as arguments."""
    try:
        sys.path.insert(0, str(problem_dir))
        import torch

        if not torch.cuda.is_available():
            os.environ.update(interpreter_env(Path(submission).read_text()))
        import reference
        from utils import set_seed

        set_seed(secret if secret is not None else 42)
        try:
            module = load_submission(Path(submission))
        except Exception as error:
            raise CaseFailure(f"could not import the submission: {type(error).__name__}: {error}") from None
        if not hasattr(module, "custom_kernel"):
            raise CaseFailure("the submission defines no custom_kernel")
        outcome = run_case(mode, args, module.custom_kernel, reference, measure_floor, rep_ms)
    except CaseFailure as failure:
        outcome = Outcome(ok=False, error=str(failure))
    except Exception as error:
        outcome = Outcome(ok=False, error=f"{type(error).__name__}: {error}")
    conn.send(outcome)
    conn.close()


def run_in_fresh_process(mode, case, submission, problem_dir, secret, deadline, measure_floor=False,
                         rep_ms=None) -> Outcome:
    """Run one case in a spawned process; a crash or the deadline makes it a failed case."""
    ctx = multiprocessing.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_case_worker, daemon=True,
                          args=(sender, mode, case.args, str(submission), str(problem_dir), secret,
                                measure_floor, rep_ms))
    process.start()
    sender.close()
    remaining = deadline - time.monotonic()
    if receiver.poll(max(0.0, remaining)):
        try:
            outcome = receiver.recv()
        except EOFError:
            outcome = None
        process.join(timeout=30)
        if outcome is not None:
            return outcome
        return Outcome(ok=False, error=f"the case's process crashed (exit code {process.exitcode})")
    if process.is_alive():
        process.kill()
        process.join()
        return Outcome(ok=False, error=f"time limit exceeded: the {mode} run may take {TIME_LIMITS.get(mode, '?')} s")
    process.join()
    return Outcome(ok=False, error=f"the case's process crashed (exit code {process.exitcode})")


# ----------------------------------------------------------------------------- reporting

def case_bytes(args: dict) -> int:
    """The fewest bytes a case moves: x read once, out written once, weight and bias read once."""
    B, D, S, W = args["B"], args["D"], args["S"], args["W"]
    return 4 * (2 * B * D * S + D * W + D)


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


class PopcornReporter:
    """The runner's key: value lines on POPCORN_FD."""

    def __init__(self, stream):
        self.stream = stream

    def log(self, key, value):
        print(f"{key}: {value}", file=self.stream, flush=True)

    def begin(self, mode, cases):
        self.log("test-count" if mode == "test" else "benchmark-count", len(cases))

    def case(self, mode, index, case, outcome):
        prefix = f"{'test' if mode == 'test' else 'benchmark'}.{index}"
        self.log(f"{prefix}.spec", case.spec)
        if not outcome.ok:
            self.log(f"{prefix}.status", "fail")
            self.log(f"{prefix}.error", " ".join(outcome.error.split()))
        elif mode == "test":
            self.log(f"{prefix}.status", "pass")
        elif mode == "profile":
            self.log(f"{prefix}.report", base64.b64encode(outcome.report.encode()).decode())
        else:
            for field in dataclasses.fields(Stats):
                self.log(f"{prefix}.{field.name}", getattr(outcome.stats, field.name))

    def end(self, mode, passed):
        self.log("check", "pass" if passed else "fail")


class HumanReporter:
    """A report a person reads at a glance, and the same facts as JSON for tools."""

    def __init__(self, stream=sys.stdout):
        self.stream = stream
        self.runs = []
        self.notes_said = set()

    def say(self, text=""):
        print(text, file=self.stream, flush=True)

    def begin(self, mode, cases):
        self.runs.append({"mode": mode, "cases": []})
        self.say(f"== {mode}: {len(cases)} case{'s' if len(cases) != 1 else ''}")

    def case(self, mode, index, case, outcome):
        entry = {"spec": case.spec, "ok": outcome.ok, "error": outcome.error, "notes": outcome.notes}
        if outcome.stats is not None:
            entry["stats_ns"] = dataclasses.asdict(outcome.stats)
            entry["gbps"] = case_bytes(case.args) / outcome.stats.mean
        if outcome.floor is not None:
            entry["copy_ns"] = dataclasses.asdict(outcome.floor)
        self.runs[-1]["cases"].append(entry)
        status = "pass" if outcome.ok else "FAIL"
        if not outcome.ok or outcome.stats is None:
            self.say(f"  [{status}] {case.spec}")
            if outcome.error:
                self.say(f"         {outcome.error}")
            for note in outcome.notes:
                if note not in self.notes_said:  # the same note for every case is said once
                    self.notes_said.add(note)
                    self.say(f"         note: {note}")
            if outcome.report:
                self.say(outcome.report)
            return
        s = outcome.stats
        line = (f"  [{status}] {case.spec:<40} {s.mean / 1e3:8.2f} +- {s.err / 1e3:5.2f} us"
                f"  best {s.best / 1e3:7.2f}  worst {s.worst / 1e3:7.2f}  {entry['gbps']:7.0f} GB/s")
        if outcome.floor is not None:
            line += f"  {s.mean / outcome.floor.mean:5.2f}x copy ({outcome.floor.mean / 1e3:.2f} us)"
        self.say(line)

    def end(self, mode, passed):
        run = self.runs[-1]
        run["passed"] = passed
        timed = [c for c in run["cases"] if "stats_ns" in c]
        if timed and len(timed) == len(run["cases"]) and passed:
            run["geomean_us"] = geomean(c["stats_ns"]["mean"] / 1e3 for c in timed)
            summary = f"  geomean {run['geomean_us']:.2f} us"
            if all("copy_ns" in c for c in timed):
                run["copy_geomean_us"] = geomean(c["copy_ns"]["mean"] / 1e3 for c in timed)
                summary += (f"   copy of x {run['copy_geomean_us']:.2f} us"
                            f"   ratio {run['geomean_us'] / run['copy_geomean_us']:.3f}x the copy floor")
            self.say(summary)
        self.say(f"== {mode}: {'pass' if passed else 'FAIL'}")


# ----------------------------------------------------------------------------- the loop

def run_suite(mode, cases, submission, problem_dir, reporter, secret=None, measure_floor=False) -> bool:
    """Run every case of one mode in its own process and report each; True when all passed."""
    deadline = time.monotonic() + TIME_LIMITS[mode]
    if mode in ("benchmark", "leaderboard") and cases:
        # The runner warms the GPU and the compilers with a short run of the first case.
        run_in_fresh_process("warmup", cases[0], submission, problem_dir, secret, deadline)
    reporter.begin(mode, cases)
    passed = True
    for index, case in enumerate(cases):
        if time.monotonic() >= deadline:
            outcome = Outcome(ok=False, error=f"time limit exceeded: the {mode} run may take {TIME_LIMITS[mode]} s")
        else:
            outcome = run_in_fresh_process(mode, case, submission, problem_dir, secret, deadline,
                                           measure_floor=measure_floor)
        reporter.case(mode, index, case, outcome)
        passed &= outcome.ok
        if not outcome.ok and mode == "leaderboard":
            break
        if mode in ("benchmark", "leaderboard") and index + 1 < len(cases):
            time.sleep(cooldown_s())
    reporter.end(mode, passed)
    return passed


def cooldown_s() -> float:
    """The runner sleeps 10 s after each timed case; EVAL_COOLDOWN_S shortens it for quick local runs."""
    return float(os.environ.get("EVAL_COOLDOWN_S", "10"))


def gpu_available() -> bool:
    import torch

    return torch.cuda.is_available()


def runner_main(argv, fd: int) -> int:
    parser = argparse.ArgumentParser(prog="eval.py")
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("tests_file")
    parser.add_argument("--submission", default=str(HERE / "submission.py"))
    opts = parser.parse_args(argv)
    secret = os.environ.pop("POPCORN_SEED", None)
    secret = int(secret) if secret else None
    try:
        cases = parse_tests(Path(opts.tests_file).read_text(), secret)
    except (OSError, ValueError) as error:
        print(f"could not read the tests file: {error}", file=sys.stderr)
        return BAD_TESTS_FILE
    with os.fdopen(fd, "w") as stream:
        reporter = PopcornReporter(stream)
        if opts.mode != "test" and not gpu_available():
            print(GPU_NEEDED.format(mode=opts.mode), file=sys.stderr)
            reporter.end(opts.mode, False)
            return FAILED
        passed = run_suite(opts.mode, cases, Path(opts.submission), HERE, reporter, secret)
    return 0 if passed else FAILED


def local_main(argv) -> int:
    parser = argparse.ArgumentParser(
        prog="eval.py", description="Run the submission's tests and/or benchmarks and report them.")
    parser.add_argument("mode", choices=MODES + ("both",))
    parser.add_argument("problem_dir", nargs="?", default=str(HERE),
                        help="folder holding task.yml, reference.py, utils.py and task.py")
    parser.add_argument("--submission", help="file to evaluate instead of PROBLEM_DIR/submission.py")
    parser.add_argument("--json", dest="json_out", help="also write the report to this JSON file")
    parser.add_argument("--no-floor", action="store_true", help="skip timing a copy of x beside each benchmark")
    opts = parser.parse_args(argv)
    problem_dir = Path(opts.problem_dir).resolve()
    submission = Path(opts.submission).resolve() if opts.submission else problem_dir / "submission.py"
    if not submission.is_file():
        print(f"no submission file at {submission}", file=sys.stderr)
        return 2
    modes = ["test", "benchmark"] if opts.mode == "both" else [opts.mode]
    if any(m != "test" for m in modes) and not gpu_available():
        print(GPU_NEEDED.format(mode=opts.mode), file=sys.stderr)
        return 1
    reporter = HumanReporter()
    reporter.say(f"submission: {submission}")
    passed = True
    for mode in modes:
        cases = cases_from_task(problem_dir, "tests" if mode == "test" else "benchmarks")
        passed &= run_suite(mode, cases, submission, problem_dir, reporter,
                            measure_floor=not opts.no_floor and mode in ("benchmark", "leaderboard"))
    report = {"submission": str(submission), "device": device_name(), "passed": passed, "runs": reporter.runs}
    if opts.json_out:
        Path(opts.json_out).write_text(json.dumps(report, indent=2))
    record_history(report, submission)
    return 0 if passed else 1


def device_name() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def record_history(report: dict, submission: Path) -> None:
    """Local benchmark runs go into results/history.jsonl when the workspace's scripts are here."""
    timed = [run for run in report["runs"] if run["mode"] != "test"]
    if not timed:
        return
    try:
        from scripts import history
    except ImportError:
        return
    for run in timed:
        history.append_entry(history.entry_from_eval(run, submission, report["device"]))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    fd = os.environ.get("POPCORN_FD")
    return runner_main(argv, int(fd)) if fd else local_main(argv)


if __name__ == "__main__":
    sys.exit(main())
