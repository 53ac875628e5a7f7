"""Run a submission's tests and benchmarks the way the causal_conv1d runner does.

One loop, two ways to report:
  runner mode  `POPCORN_FD=N python eval.py MODE TESTS_FILE [--submission FILE]`: the runner's
               protocol, key: value lines on file descriptor N, exit code 0 or 112.
  local mode   `python eval.py MODE [TESTS_FILE] [--submission FILE] [--json FILE] [--timeout S]`:
               task.yml's cases (or the tests file's), reported for a person: pass/fail, times,
               GB/s, geomean, distance to torch's copy of x. MODE may also be `both` (tests, then benchmarks).

As on the runner, HELION_DISALLOW_AUTOTUNING=1 is set before anything else, and all cases of one run
execute in one spawned worker process, so the submission's module state lives across cases. Better
than the runner, a case that crashes the worker or hangs is reported and a fresh worker takes the
cases after it. Beyond the runner's checks (mismatch, NaN/inf, shape, CUDA-graph capture), a case
fails when the kernel mutates an input or returns an output that aliases one. Without a GPU, tests
run on the CPU under the Triton (or Helion) interpreter, with no graph capture; timing needs a GPU.

This file is part of the contract: it imports nothing from the workspace's tools.
"""
import argparse
import base64
import contextlib
import dataclasses
import errno
import fcntl
import functools
import importlib.metadata
import importlib.util
import json
import math
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The workspace's record of runs, which scripts/history.py appends to: a report is never written over it.
# WORKSPACE_HISTORY points it elsewhere (tests, scratch runs); a blank one names no file ('.', which every
# reader and writer refuses), never a file named by its spaces.
_HISTORY_SETTING = os.environ.get("WORKSPACE_HISTORY")
HISTORY = (HERE / "results" / "history.jsonl" if _HISTORY_SETTING is None
           else Path(_HISTORY_SETTING.strip() and _HISTORY_SETTING))
MODES = ("test", "benchmark", "leaderboard", "profile")
TIMED_MODES = ("benchmark", "leaderboard")
REP_MS = {"benchmark": 100, "leaderboard": 200, "warmup": 20}
RECHECKS = 10
SAMPLES = 10
FLUSH_INT64S = 32 * 1024 * 1024  # 256 MB, zeroed (or read, see FLUSHES) before every timed call to evict x from L2
# How the buffer evicts L2 before a timed call. "memset" is the runner's: it leaves L2 full of the buffer's
# dirty lines, whose write-backs a call pays for as it evicts them. "read" (sums the buffer; not the runner's,
# for the tools only) leaves L2 clean, but the subtraction then charges each call with the write-back of its
# own dirty output during the next read, which the flush-only graph does not pay: every time carries that
# charge (about 2 us on 1x1536x2048, H100, run80-81), the same for any call that writes as much, which by
# arithmetic pulls ratios toward 1. It is the runner's loop after a clean L2, not a kernel's cost in one
# (results/NOTES.md, "the read flush's ratios, timed per call").
FLUSHES = ("memset", "read")
PROFILE_ALTCHARS = b"+*"  # the runner's base64 alphabet for profile reports
REQUIRED_FIELDS = ("B", "D", "S", "W", "seed")
SHAPE_FIELDS = REQUIRED_FIELDS[:4]
SEED_RANGE = (-(2 ** 63), 2 ** 64 - 1)  # what torch.Generator.manual_seed takes
SECRET_RANGE = (0, 2 ** 32 - 1)  # the secret seeds utils.set_seed, and numpy's seed takes no other
MAX_ELEMENTS = 2 ** 61  # a tensor's bytes (4 an fp32 element) must fit torch's signed 64-bit count
FAILED = 112
BAD_TESTS_FILE = 113
USAGE = 2
INTERRUPTED = 130
GPU_NEEDED = ("the {mode} mode measures kernels on the GPU (CUDA events, graphs or the profiler), so it needs a"
              " CUDA GPU; none is visible here.")


class TaskError(Exception):
    """A file the harness needs (task.yml, a tests file, the submission) is missing or malformed."""


# ----------------------------------------------------------------------------- signals and outputs

class Interrupted(KeyboardInterrupt):
    """Ctrl-C, SIGTERM or SIGHUP: raised in the main thread so every `finally` ends the children it started."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP


class Cut(Interrupted):
    """A signal that ended a run after some of its cases finished: `kept` is what the interrupted call would have
    returned, holding those cases (the one under way is dropped whole), with `passed` false and `interrupted`
    naming the signal, so the caller can keep it before passing the signal on."""

    def __init__(self, signum: int, kept):
        super().__init__(signum)
        self.kept = kept


_ending = False  # a signal has set this process ending: later ones are taken and dropped
_held = None  # while a finished run is written (signals_held), the signals that came meanwhile


def _raise_interrupted(signum, frame):
    global _ending
    if _held is not None:
        _held.append(signum)
        return
    if _ending:  # a second Ctrl-C must not cut the first one's cleanup (children ended) and keeping (files written)
        return
    _ending = True
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_held():
    """A finished run's results written whole: a signal that comes meanwhile is raised once they are."""
    global _ending, _held
    outer, _held = _held, []
    try:
        yield
    finally:
        held, _held = _held, outer
    if held and outer is None and not _ending:
        _ending = True
        raise Interrupted(held[0])


def interrupt_on_signals() -> dict:
    """SIGINT, SIGTERM and SIGHUP raise Interrupted here, so a run ends its children, keeps what finished and
    says one line. Only the first does: the ones after it are dropped, so that cleanup and keeping run to
    their end (each is bounded: children get SIGTERM, then SIGKILL; SIGKILL still ends this process). The
    handlers the signals had, to restore."""
    global _ending
    _ending = False
    return {sig: signal.signal(sig, _raise_interrupted) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}


class ReaderGoneStream:
    """stdout or stderr for a run whose reader may quit (`| head`, `2>&1 | head`, a pager closed): the first
    write that finds the pipe closed points the descriptor at /dev/null and, where a notice is given, says it
    once on stderr (which may be the same closed pipe), so the run goes on and is kept (its --json report, its
    history line) instead of dying mid-case on BrokenPipeError."""

    def __init__(self, stream, notice: str | None = None):
        self.stream = stream
        self.notice = notice
        self.gone = False

    def write(self, text):
        if not self.gone:
            try:
                return self.stream.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self):
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self):
        self.gone = True
        try:  # the stream's unwritten bytes, and Python's flush at exit, then go nowhere without an error
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.stream.fileno())
            os.close(null)
        except (OSError, ValueError):  # a stream without a descriptor: its writes are dropped here instead
            pass
        if self.notice:
            try:
                print(self.notice, file=sys.stderr, flush=True)
            except (OSError, ValueError):  # stderr closed too, and not one of these: the notice has no reader
                pass

    def __getattr__(self, name):
        return getattr(self.stream, name)


READER_GONE = "stdout's reader quit (a pipe or a pager closed); the run goes on unseen and is kept as usual"


@contextlib.contextmanager
def output_may_close():
    """sys.stdout and sys.stderr as ReaderGoneStreams while the block runs (stdout's with the notice)."""
    previous = sys.stdout, sys.stderr
    for name, notice in (("stderr", None), ("stdout", READER_GONE)):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ReaderGoneStream):
            setattr(sys, name, ReaderGoneStream(stream, notice))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = previous


def interrupted_of(stop: KeyboardInterrupt) -> Interrupted:
    return stop if isinstance(stop, Interrupted) else Interrupted(signal.SIGINT)


def written_over(path: Path, named) -> str | None:
    """What path is that no run writes over, as the rest of a sentence about it, or None: task.yml or one of the
    named (file, what it is) pairs, whether or not either exists yet, a Python file, a file in git's own folder
    or one git tracks, since a local run never changes tracked files."""
    for given, what in [*named, (HERE / "task.yml", "the task's contract")]:
        same_file = path.exists() and Path(given).exists() and os.path.samefile(path, given)
        if path.resolve() == Path(given).resolve() or same_file:
            return f"is {given}, {what}"
    if path.suffix == ".py":
        return "names a Python file"
    target = path.resolve()  # through links, to the file a write would change
    if ".git" in target.parts:
        return "is inside git's own folder"
    if target.parent.is_dir() and tracked_by_git(target):
        return "is a file git tracks, and a local run never changes tracked files"
    return None


def output_problem(path: Path, flag: str = "--json", inputs=(), history: Path = HISTORY) -> str | None:
    """Why a report cannot be written whole to path (checked before a run starts), or None. The report
    goes to a temporary file beside it, then is renamed, so its folder must take a new file and the
    path, where it exists, must be a regular file (a device or /proc file is refused, not replaced). It
    must not be the history, one of the inputs given (the submission, the tests file) or any other file
    written_over names: the rename would put the report in its place."""
    path = Path(path)
    if path.is_dir():
        return f"{flag} {path} is a folder; give a file name"
    named = [(given, "which this run reads or writes") for given in inputs if given is not None]
    clash = written_over(path, [*named, (history, "the workspace's history of runs")])
    if clash:
        return f"{flag} {path} {clash}; give the report another name"
    if not path.parent.is_dir():
        return f"{flag} {path}: the folder {path.parent} does not exist"
    if path.exists() and not path.is_file():
        return f"{flag} {path} is not a regular file (a device, a pipe or a socket); give a file name"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{flag} {path} cannot be written (no permission)"
    try:
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        return f"{flag} {path}: its folder {path.parent} takes no new file ({error.strerror or error})"
    return None


def tracked_by_git(path: Path) -> bool:
    """Whether git tracks path in the repository around it (False where git is missing or there is none)."""
    try:
        found = subprocess.run(["git", "--literal-pathspecs", "ls-files", "--error-unmatch", "--", path.name],
                               cwd=path.parent, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return found.returncode == 0


def write_whole(path: Path, text: str, flag: str = "--json") -> None:
    """Write text to a temporary file beside path, then rename it over path: a reader sees the old file or
    the whole new one, never a part. TaskError, one sentence, where it cannot be written."""
    path = Path(path)
    tmp = None
    try:
        fd, tmp = create_beside(path)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)  # the old file's permissions, not the umask's
        os.replace(tmp, path)
    except BaseException as error:  # a signal too: no temporary file is left behind
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(error, OSError):
            raise TaskError(f"{flag} {path} could not be written: {error.strerror or error}") from None
        raise


def create_beside(path: Path) -> tuple[int, str]:
    """A new temporary file beside path, open for writing: (descriptor, name). Made as open() makes a file,
    so the umask sets its permissions (mkstemp's are 0600, and every report would have been private)."""
    for _ in range(100):
        name = str(path.parent / f".{path.name}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name beside it")


# ----------------------------------------------------------------------------- the contract's facts

def load_task(problem_dir: Path = HERE) -> dict:
    """task.yml: the cases, the time limits, the ranking."""
    import yaml

    path = problem_dir / "task.yml"
    try:
        task = yaml.safe_load(path.read_bytes().decode("utf-8"))
    except OSError as error:
        raise TaskError(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise TaskError(f"{path} is not UTF-8 text (byte {error.start})") from None
    except yaml.YAMLError as error:
        raise TaskError(f"{path} is not valid YAML: {error}") from None
    except RecursionError:
        raise TaskError(f"{path} nests too deeply to read") from None
    missing = [k for k in ("tests", "benchmarks", *TIMEOUT_KEYS) if not isinstance(task, dict) or k not in task]
    if missing:
        raise TaskError(f"{path} lacks {', '.join(missing)}")
    for key in TIMEOUT_KEYS:
        if timeout_problem(task[key]):
            raise TaskError(f"{path}: {key} is {task[key]!r}; {timeout_problem(task[key])}")
    return task


TIMEOUT_KEYS = ("test_timeout", "benchmark_timeout", "ranked_timeout")
MAX_TIMEOUT_S = 1e6  # about 11 days: past about 2.1e6 s the process waits overflow


def timeout_problem(value) -> str | None:
    """Why value is no time limit (a number of seconds above 0, at most MAX_TIMEOUT_S), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return "a time limit must be a number of seconds above 0"
    if value > MAX_TIMEOUT_S:
        return f"a time limit must be at most {MAX_TIMEOUT_S:.0f} seconds"
    return None


def time_limits(task: dict | None = None) -> dict:
    """Seconds a whole run of each mode may take, from task.yml (profile runs under the benchmark limit)."""
    task = task or load_task()
    return {"test": task["test_timeout"], "benchmark": task["benchmark_timeout"],
            "leaderboard": task["ranked_timeout"], "profile": task["benchmark_timeout"]}


# ----------------------------------------------------------------------------- cases

@dataclasses.dataclass
class Case:
    """One case. `spec` is the runner's line (public seed), echoed back in the results; `args` are
    generate_input's arguments, whose seed is the one timed (the secret-combined one in leaderboard mode)."""
    spec: str
    args: dict
    seed: int | None = None  # the line's own seed, before any secret is combined in

    @property
    def label(self) -> str:
        return case_label(self.args)

    def fields(self) -> dict:
        return case_fields(self.args, self.seed)


def case_label(args: dict) -> str:
    """A case's one text form for people and for the keys of records: BxDxSxW."""
    return "x".join(str(args[k]) for k in SHAPE_FIELDS)


def parse_label(text: str, seed: int = 1234) -> dict:
    """'BxDxSxW' or 'BxDxS' (W defaults to 4) -> generate_input's arguments."""
    parts = text.lower().split("x")
    if len(parts) not in (3, 4) or not all(_INTEGER.fullmatch(p) for p in parts):
        raise ValueError(f"shape {shown(text)} is not BxDxS or BxDxSxW with positive sizes")
    if any(digits(p) > _LONGEST_INTEGER for p in parts):
        raise ValueError(f"shape {shown(text)} has a size of more than {_LONGEST_INTEGER} digits")
    if min(map(int, parts)) < 1:
        raise ValueError(f"shape {shown(text)} is not BxDxS or BxDxSxW with positive sizes")
    B, D, S, *rest = map(int, parts)
    args = {"B": B, "D": D, "S": S, "W": rest[0] if rest else 4, "seed": seed}
    problem = size_problem(args)
    if problem:
        raise ValueError(f"shape {shown(text)}: {problem}")
    return args


def shown(value, limit: int = 80) -> str:
    """value for a one-line message, text quoted and anything else as its repr, at most `limit` characters
    shown (escapes counted: a control character's repr is 4 of them), the full length said where it is cut."""
    text = value if isinstance(value, str) else repr(value)
    form = repr if isinstance(value, str) else str
    if len(form(text)) <= limit:
        return form(text)
    head = text[:limit]
    while len(form(head)) > limit:
        head = head[:-1]
    return f"{form(head)}... ({len(text)} characters)"


def size_problem(args: dict) -> str | None:
    """Why a case's sizes cannot be tensors at all (x of B*D*S or the weight of D*W elements past what torch
    counts), or None. Sizes merely too big for this machine's memory are the run's to find."""
    for name, elements in (("x", args["B"] * args["D"] * args["S"]), ("the weight", args["D"] * args["W"])):
        if elements > MAX_ELEMENTS:
            return f"{name} would hold {elements:.3g} elements, more than a tensor can ({MAX_ELEMENTS:.3g})"
    return None


def case_fields(args: dict, public_seed: int | None = None) -> dict:
    """What a record stores of a case: its sizes, its public seed and the seed actually timed."""
    seed = args.get("seed") if public_seed is None else public_seed
    return {**{k: args.get(k) for k in SHAPE_FIELDS}, "seed": seed, "timed_seed": args.get("seed")}


def combine_seed(seed: int, secret: int) -> int:
    """The runner's secret-seed combination: seed + (seed + secret)(seed + secret + 1) / 2."""
    return seed + (seed + secret) * (seed + secret + 1) // 2


_FIELD = re.compile(r"\s*([A-Za-z_]\w*)\s*:\s*(\S*)\s*")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_LONGEST_INTEGER = 20  # significant digits: every usable size and seed has fewer (int() refuses past 4,300)


def digits(text: str) -> int:
    """The significant digits of an integer as written ('+0042' has 2: int() reads leading zeros as nothing)."""
    return len(text.lstrip("+-").lstrip("0"))


def parse_tests(text: str, secret: int | None = None, required=REQUIRED_FIELDS) -> list[Case]:
    """One case a line, `B: 1; D: 64; S: 64; W: 4; seed: 4242`; TaskError naming the first bad line."""
    cases = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"invalid test case on line {number} ({shown(line.strip())})"
        args = {}
        for part in line.split(";"):
            match = _FIELD.fullmatch(part)
            if match is None:
                raise TaskError(f"{where}: cannot read {shown(part.strip())}; fields are 'name: value' separated by ';'")
            key, value = match.groups()
            if key in args:
                raise TaskError(f"{where}: {key} is given twice")
            if value in ("true", "false"):
                args[key] = value == "true"
            elif _INTEGER.fullmatch(value) and digits(value) > _LONGEST_INTEGER:
                raise TaskError(f"{where}: {key} has {digits(value)} digits, too many for any size or seed")
            elif _INTEGER.fullmatch(value):
                args[key] = int(value)
            else:
                raise TaskError(f"{where}: {key} is {shown(value)}, not an integer")
        missing = [k for k in required if k not in args]
        if missing:
            raise TaskError(f"{where}: it lacks {', '.join(missing)}")
        not_int = [k for k in required if isinstance(args[k], bool)]
        if not_int:
            raise TaskError(f"{where}: {', '.join(not_int)} must be an integer, not true/false")
        small = [k for k in SHAPE_FIELDS if k in args and args[k] < 1]
        if small:
            raise TaskError(f"{where}: {', '.join(small)} must be 1 or more (sizes are counts of elements)")
        public_seed = args.get("seed")
        if secret is not None:
            args["seed"] = combine_seed(args["seed"], secret)
        if "seed" in args and not SEED_RANGE[0] <= args["seed"] <= SEED_RANGE[1]:
            raise TaskError(f"{where}: seed {args['seed']}{' (with the secret seed)' if secret is not None else ''}"
                            f" does not fit torch's 64-bit seed range ({SEED_RANGE[0]} to {SEED_RANGE[1]})")
        cases.append(Case(spec=line.strip(), args=args, seed=public_seed))
    if not cases:
        raise TaskError("the tests file holds no cases")
    return cases


def read_tests_file(path: Path, secret: int | None = None) -> list[Case]:
    """The runner's tests file; only a regular file is read (a FIFO or a device would hang or never end)."""
    if Path(path).exists() and not Path(path).is_file():
        raise TaskError(f"the tests file {path} is not a regular file (a folder, pipe or device); nothing was read")
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except OSError as error:
        raise TaskError(f"cannot read the tests file {path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise TaskError(f"the tests file {path} is not UTF-8 text (byte {error.start}): cases are lines like"
                        f" 'B: 1; D: 64; S: 64; W: 4; seed: 4242'") from None
    try:
        return parse_tests(text, secret)
    except TaskError as error:
        raise TaskError(f"{path}: {error}") from None


def format_spec(args: dict) -> str:
    return "; ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in args.items())


def cases_from_task(key: str, problem_dir: Path = HERE) -> list[Case]:
    """The `tests` or `benchmarks` of task.yml, as the lines the runner would pass."""
    entries = load_task(problem_dir)[key]
    if not isinstance(entries, list) or not all(isinstance(args, dict) for args in entries):
        raise TaskError(f"{problem_dir / 'task.yml'}: {key} must be a list of cases like {{B: 1, D: 64, S: 64, W: 4,"
                        f" seed: 4242}}")
    if not entries:
        raise TaskError(f"{problem_dir / 'task.yml'}: {key} has no cases, so a run would check nothing")
    cases = []
    for number, args in enumerate(entries, start=1):
        try:
            cases += parse_tests(format_spec(args))
        except TaskError as error:
            raise TaskError(f"{problem_dir / 'task.yml'}: {key} case {number}: "
                            f"{str(error).replace('invalid test case on line 1 ', '')}") from None
    return cases


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
    detail: str = ""  # more for a person than the runner's message carries (largest errors)
    ran: bool = True  # False: the case never started (deadline passed, submission did not import)
    stats: Stats | None = None  # nanoseconds per call
    torch_copy: Stats | None = None  # torch's copy of x (x.clone()), timed the same way (local benchmarks)
    report: str = ""  # the profiler's table (profile mode)
    notes: list[str] = dataclasses.field(default_factory=list)
    wall_s: float | None = None


class CaseFailure(Exception):
    """A check failed; the message says which, `detail` says more for a person."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


# ----------------------------------------------------------------------------- checks

def clone_inputs(data):
    """A deep copy of the input tuple: the harness checks against one and hands others to the kernel."""
    if isinstance(data, (tuple, list)):
        return type(data)(clone_inputs(x) for x in data)
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


def largest_errors(output, expected) -> str:
    """Where output is furthest from expected, absolutely and relatively, labelled got and expected."""
    import torch

    if not isinstance(output, torch.Tensor) or output.shape != expected.shape:
        return ""
    got, want = output.detach().double().cpu(), expected.detach().double().cpu()
    diff = (got - want).abs().nan_to_num(nan=math.inf)
    if diff.numel() == 0:
        return ""
    parts = []
    for label, measure in (("absolute", diff), ("relative", diff / want.abs().clamp_min(1e-30))):
        flat = int(measure.flatten().argmax())
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), measure.shape))
        parts.append(f"largest {label} error {measure.flatten()[flat].item():.3g} at {index}: "
                     f"got {got[index].item():.6g}, expected {want[index].item():.6g}")
    return "; ".join(parts)


def check_output(reference, pristine, passed, output) -> None:
    """The runner's check, after ours: inputs untouched and the output a fresh, plain tensor."""
    import torch

    check_untouched(pristine, passed)
    if isinstance(output, torch.Tensor) and type(output) is not torch.Tensor:  # the runner passes one whose
        # own operators fake the comparison (or the alias check); this harness does not
        raise CaseFailure(f"custom_kernel returned a {type(output).__name__}, a subclass of torch.Tensor, whose own"
                          " operators could decide the check; return a plain torch.Tensor")
    check_no_alias(output, passed)
    dtype = getattr(output, "dtype", None)
    if dtype is not None and (dtype.is_complex or not dtype.is_floating_point):
        # the runner fails these too, inside torch's comparison; one sentence says why
        raise CaseFailure(f"the output is {dtype}, not a real floating-point tensor (the task's output is float32)")
    ok, message = reference.check_implementation(pristine, output)
    if not ok:
        raise CaseFailure(message, largest_errors(output, reference.ref_kernel(pristine)))


def named(error: BaseException) -> str:
    """An exception as its type and its message, or its type alone where it has none."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _call(custom_kernel, data):
    try:
        return custom_kernel(data)
    except BaseException as error:  # the kernel's own error, KeyboardInterrupt or SystemExit too, is the case's failure
        raise CaseFailure(f"custom_kernel raised {named(error)}") from None


# ----------------------------------------------------------------------------- a case's phases

def first_call(custom_kernel, data, reference, pristine, on_gpu: bool) -> None:
    """Warm-up: one call on a clone (compilation happens here), synchronized and checked."""
    import torch

    warm = clone_inputs(data)
    output = _call(custom_kernel, warm)
    if on_gpu:
        torch.cuda.synchronize()
    check_output(reference, pristine, warm, output)


class Captured:
    """One call held for replay: a CUDA graph on a GPU, a plain call under the interpreter."""

    def __init__(self, custom_kernel, data, on_gpu: bool):
        import torch

        self.data = data
        self.on_gpu = on_gpu
        self.custom_kernel = custom_kernel
        if on_gpu:
            self.graph = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(self.graph):
                    self.output = custom_kernel(data)
            except BaseException as error:
                raise CaseFailure(f"Failed to capture kernel in CUDA graph: {named(error)}") from None
        self.replay()

    def replay(self):
        import torch

        if self.on_gpu:
            self.graph.replay()
            torch.cuda.synchronize()
        else:
            self.output = _call(self.custom_kernel, self.data)


def recheck(captured: Captured, args: dict, reference) -> dict:
    """Leaderboard mode: fresh inputs copied into the captured tensors, replayed, checked, ten times.
    The case's args with the seed advanced past the rechecks' (the runner times on that seed)."""
    args = dict(args)
    for _ in range(RECHECKS):
        args["seed"] += 13
        fresh = reference.generate_input(**args)
        for target, source in zip(_tensors(captured.data), _tensors(fresh)):
            target.copy_(source)
        captured.replay()
        check_output(reference, fresh, captured.data, captured.output)
    return args


def time_protocol(fn, rep_ms: float, flush: str = "memset") -> Stats:
    """The runner's timing: cold L2 per call, graphs of n calls, flush-only graph subtracted.

    n comes from five (flush; call) pairs timed with events: n = max(1, int(rep_ms / estimate)).
    Each of the ten samples is max(0, full/n - flush/n) in nanoseconds. flush is one of FLUSHES; the
    runner's is "memset".
    """
    import torch

    if flush not in FLUSHES:
        raise ValueError(f"flush must be one of {', '.join(FLUSHES)}, not {flush!r}")
    buffer = torch.empty(FLUSH_INT64S, dtype=torch.int64, device="cuda")
    if flush == "memset":
        evict_l2 = buffer.zero_
    else:
        evict_l2 = functools.partial(torch.sum, buffer, dim=0, out=torch.empty((), dtype=torch.int64, device="cuda"))
    side = torch.cuda.Stream()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
    with torch.cuda.stream(side):
        evict_l2()
        fn()
        events[0].record()
        for _ in range(5):
            evict_l2()
            fn()
        events[1].record()
        side.synchronize()
        n = max(1, int(rep_ms / (events[0].elapsed_time(events[1]) / 5)))
        full, flush_only = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.graph(full, stream=side):
            for _ in range(n):
                evict_l2()
                fn()
        with torch.cuda.graph(flush_only, stream=side):
            for _ in range(n):
                evict_l2()
        samples = []
        for _ in range(SAMPLES):
            events[0].record()
            flush_only.replay()
            events[1].record()
            full.replay()
            events[2].record()
            side.synchronize()
            flush_ms = events[0].elapsed_time(events[1])
            full_ms = events[1].elapsed_time(events[2])
            samples.append(max(0.0, (full_ms - flush_ms) / n) * 1e6)
    del full, flush_only, buffer, evict_l2
    return calculate_stats(samples)


def profile_call(custom_kernel, data, on_gpu: bool) -> str:
    """The PyTorch profiler's table for one call."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with profile(activities=activities) as prof:
        custom_kernel(clone_inputs(data))
        if on_gpu:
            torch.cuda.synchronize()
    return prof.key_averages().table(sort_by="self_cuda_time_total" if on_gpu else "self_cpu_time_total",
                                     row_limit=20)


def run_case(mode: str, args: dict, custom_kernel, reference, measure_torch_copy: bool = False,
             rep_ms: float | None = None) -> Outcome:
    """One case, in this process: check the first call, capture, recheck, then time or profile."""
    import torch

    on_gpu = torch.cuda.is_available()
    outcome = Outcome(ok=True)
    problem = size_problem(args)
    if problem:  # the case fails in one sentence, not a C++ stack; the runner's other cases still run
        raise CaseFailure(problem)
    data = reference.generate_input(**args)
    pristine = clone_inputs(data)
    first_call(custom_kernel, data, reference, pristine, on_gpu)
    captured = Captured(custom_kernel, clone_inputs(data), on_gpu)
    if not on_gpu:
        outcome.notes.append("CPU, under the interpreter: no CUDA-graph capture; the kernel was called directly")
    check_output(reference, pristine, captured.data, captured.output)
    if getattr(captured.output, "dtype", None) != torch.float32:  # the runner's check lets it pass too
        outcome.notes.append(f"the output is {captured.output.dtype}, not the task's float32; the runner's check"
                             " passes it, but it is not the task's output type")
    if mode == "leaderboard":
        args = recheck(captured, args, reference)
    if mode in TIMED_MODES or mode == "warmup":
        # As the runner: timed on an input generated anew from the (by then advanced) seed, not on the
        # captured tensors.
        timed = reference.generate_input(**args)
        rep = rep_ms if rep_ms is not None else REP_MS[mode]
        outcome.stats = time_protocol(lambda: custom_kernel(timed), rep)
        if measure_torch_copy:
            outcome.torch_copy = time_protocol(timed[0].clone, rep)
    elif mode == "profile":
        outcome.report = profile_call(custom_kernel, data, on_gpu)
    return outcome


# ----------------------------------------------------------------------------- the worker process

def check_submission(path: Path) -> None:
    """The submission must be a UTF-8 Python file (.py): TaskError naming the file, and the byte, if not."""
    if not path.is_file():
        raise TaskError(f"no submission file at {path}")
    if path.suffix != ".py":
        raise TaskError(f"the submission {path} does not end in .py; it is imported as a Python module")
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise TaskError(f"the submission {path} is not UTF-8 text (byte {error.start}, 0x{error.object[error.start]:02x})")\
            from None
    except OSError as error:
        raise TaskError(f"cannot read the submission {path}: {error.strerror}") from None


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


def harness_functions(namespaces: dict) -> dict:
    """Every function and class in the namespaces that check a case (label -> the module's own dict, which its
    code looks names up in), with the code each function runs: the check calls them by these names, so a
    submission that swaps one (reference.check_implementation for one that always passes), or its code,
    would judge itself."""
    return {(label, name): (value, getattr(value, "__code__", None)) for label, names in namespaces.items()
            for name, value in names.items() if callable(value) and not isinstance(value, types.ModuleType)}


def replaced_functions(held: dict, namespaces: dict) -> str | None:
    """The held functions the submission replaced since (or whose code it replaced), as one phrase, or None."""
    swapped = [f"{label}.{name}" for (label, name), (value, code) in held.items()
               if namespaces[label].get(name) is not value or getattr(value, "__code__", None) is not code]
    return ", ".join(swapped) or None


TAMPERED = "the submission replaced {names}, which this harness checks cases with; it must leave them alone"


def _worker_main(conn, submission: str, secret):
    """The worker: import the submission once, then run the cases the parent sends until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it ends this process
    # The worker's own copies of stdout and stderr: where their reader quit, a print in the submission is no
    # failure of its case (the runner's reader never quits)
    sys.stdout, sys.stderr = ReaderGoneStream(sys.stdout), ReaderGoneStream(sys.stderr)
    sys.path.insert(0, str(HERE))
    import torch

    if not torch.cuda.is_available():
        chosen = interpreter_env(Path(submission).read_text())
        for name in ("TRITON_INTERPRET", "HELION_INTERPRET"):  # one set by hand too: Helion refuses to run beside
            os.environ.pop(name, None)  # Triton's interpreter, and the file says which one it needs
        os.environ.update(chosen)
    import reference
    import utils

    # globals(), not sys.modules: a worker spawned from `python eval.py` also holds a copy of this file as
    # __mp_main__, whose names its code never reads
    checkers = {"reference": vars(reference), "utils": vars(utils), "eval": globals()}
    held = harness_functions(checkers)
    replaced = replaced_functions  # held here, so that replacing the name does not switch the check off
    try:
        module = load_submission(Path(submission))
    except BaseException as error:
        conn.send(("import-failed", f"could not import the submission: {named(error)}"))
        return
    swapped = replaced(held, checkers)
    if swapped:
        conn.send(("import-failed", TAMPERED.format(names=swapped)))
        return
    if not callable(getattr(module, "custom_kernel", None)):
        conn.send(("import-failed", "the submission defines no custom_kernel function"))
        return
    conn.send(("ready", os.getpid()))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):  # the parent is gone: nothing is left to report to
            return
        if request is None:
            return
        mode, args, measure_torch_copy, rep_ms = request
        held[("utils", "set_seed")][0](secret if secret is not None else 42)
        try:
            outcome = run_case(mode, args, module.custom_kernel, reference, measure_torch_copy, rep_ms)
        except CaseFailure as failure:
            outcome = Outcome(ok=False, error=str(failure), detail=failure.detail)
        except BaseException as error:  # a BaseException the submission raised is this case's failure, named
            outcome = Outcome(ok=False, error=named(error))
        swapped = replaced(held, checkers)  # a swap made inside custom_kernel judged this case
        if swapped:
            outcome = Outcome(ok=False, error=TAMPERED.format(names=swapped))
        try:
            conn.send(outcome)
        except OSError:  # the parent is gone (a signal ended it): end quietly, no BrokenPipeError traceback
            return


class Worker:
    """One spawned process that imports the submission once and runs a run's cases in turn.

    A crash or a hang ends it; `run` then reports the case failed and the next call starts a fresh
    worker, so the remaining cases still run. An import failure is kept and given to every case.
    """

    def __init__(self, submission: Path, secret):
        self.submission, self.secret = str(submission), secret
        self.process = self.conn = None
        self.import_error = None

    def _start(self, deadline: float) -> str | None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child_end = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child_end, self.submission, self.secret), daemon=True)
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited: no child traceback on Ctrl-C
        try:
            self.process.start()
        finally:
            signal.signal(signal.SIGINT, previous)
        child_end.close()
        if not self.conn.poll(max(0.0, deadline - time.monotonic())):
            self.close()
            return "time limit exceeded while the worker imported the submission"
        try:
            kind, value = self.conn.recv()
        except EOFError:
            self.process.join(timeout=30)
            self.import_error = f"the worker process crashed while importing the submission (exit code {self.process.exitcode})"
            self.close()
            return self.import_error
        if kind == "import-failed":
            self.import_error = value
            self.close()
            return value
        return None

    def run(self, mode: str, args: dict, deadline: float, limit_s: float, measure_torch_copy=False, rep_ms=None) -> Outcome:
        if self.import_error:
            return Outcome(ok=False, error=self.import_error, ran=False)
        if self.process is None:
            problem = self._start(deadline)
            if problem:  # this case did try: it fails, and later ones of an unimportable file never run
                return Outcome(ok=False, error=problem)
        self.conn.send((mode, args, measure_torch_copy, rep_ms))
        if not self.conn.poll(max(0.0, deadline - time.monotonic())):
            self.close()
            return Outcome(ok=False, error=f"time limit exceeded: the {mode} run may take {limit_s} s")
        try:
            return self.conn.recv()
        except EOFError:
            self.process.join(timeout=30)
            code = self.process.exitcode
            self.close()
            return Outcome(ok=False, error=f"the worker process crashed during this case (exit code {code});"
                                           " the cases after it run in a fresh worker")

    def close(self, at_once: bool = False) -> None:
        """Tell the worker to stop and wait for it; at_once (a signal ended the run): kill it now."""
        if self.process is None:
            return
        try:
            if self.process.is_alive() and not at_once:
                try:
                    self.conn.send(None)
                except (OSError, ValueError):
                    pass
                self.process.join(timeout=5)
            if self.process.is_alive():
                self.process.kill()
                self.process.join()
        finally:
            self.conn.close()
            self.process = self.conn = None


# ----------------------------------------------------------------------------- the loop: runs are records

def case_bytes(args: dict) -> int:
    """The fewest bytes a case moves: x read once, out written once, weight and bias read once."""
    B, D, S, W = args["B"], args["D"], args["S"], args["W"]
    return 4 * (2 * B * D * S + D * W + D)


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def case_record(case: Case, outcome: Outcome) -> dict:
    """What one case did, as data: reporters print it, tools read it (times in nanoseconds)."""
    record = {"spec": case.spec, "args": dict(case.args), "fields": case.fields(), "ok": outcome.ok, "ran": outcome.ran,
              "error": outcome.error, "detail": outcome.detail, "notes": list(outcome.notes), "wall_s": outcome.wall_s}
    if outcome.stats is not None:
        record["stats_ns"] = dataclasses.asdict(outcome.stats)
        record["gbps"] = case_bytes(case.args) / outcome.stats.mean if outcome.stats.mean > 0 else None
    if outcome.torch_copy is not None:
        record["torch_copy_ns"] = dataclasses.asdict(outcome.torch_copy)
    if outcome.report:
        record["report"] = outcome.report
    return record


def run_record(mode: str, cases: list[dict], passed: bool) -> dict:
    """One run of one mode: its case records, whether all passed and, for a passed timed run, the geomean."""
    run = {"mode": mode, "passed": passed, "cases": cases}
    timed = [c for c in cases if "stats_ns" in c]
    if passed and timed and len(timed) == len(cases) and all(c["stats_ns"]["mean"] > 0 for c in timed):
        run["geomean_us"] = geomean(c["stats_ns"]["mean"] / 1e3 for c in timed)
        if all("torch_copy_ns" in c and c["torch_copy_ns"]["mean"] > 0 for c in timed):
            run["torch_copy_geomean_us"] = geomean(c["torch_copy_ns"]["mean"] / 1e3 for c in timed)
    return run


def cooldown_s() -> float:
    """The runner sleeps 10 s after the warm-up and after each timed case, the last one included;
    EVAL_COOLDOWN_S shortens it for quick local runs."""
    try:
        value = float(os.environ.get("EVAL_COOLDOWN_S", "10"))
    except ValueError:
        raise TaskError(f"EVAL_COOLDOWN_S={os.environ['EVAL_COOLDOWN_S']!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise TaskError(f"EVAL_COOLDOWN_S={os.environ['EVAL_COOLDOWN_S']!r} must be 0 or more seconds")
    return value


def cool_down(deadline: float) -> None:
    """The cool-down, inside the run's time limit as on the runner: it never sleeps past the deadline."""
    time.sleep(min(cooldown_s(), max(0.0, deadline - time.monotonic())))


class SilentReporter:
    """For tools that want the records only."""

    def begin(self, mode, cases):
        pass

    def case(self, mode, index, record):
        pass

    def end(self, run):
        pass


def run_suite(mode, cases, submission, reporter=None, secret=None, measure_torch_copy=False, limit_s=None) -> dict:
    """Every case of one mode in one worker, each handed to the reporter as it ends; the run's record."""
    reporter = reporter or SilentReporter()
    limit_s = limit_s if limit_s is not None else time_limits()[mode]
    deadline = time.monotonic() + limit_s
    worker = Worker(submission, secret)
    reporter.begin(mode, cases)
    records, passed, under_way = [], True, None
    try:
        if mode in TIMED_MODES and cases:
            # The runner warms the GPU and the compilers with a short run of the first case, and cools
            # down after it as after every timed case.
            under_way = f"the warm-up ({cases[0].spec})"
            worker.run("warmup", cases[0].args, deadline, limit_s)
            under_way = None
            cool_down(deadline)
        for index, case in enumerate(cases):
            if time.monotonic() >= deadline:
                outcome = Outcome(ok=False, ran=False, error=f"not run: the {mode} run's {limit_s} s had passed")
            else:
                start, under_way = time.monotonic(), case.spec
                outcome = worker.run(mode, case.args, deadline, limit_s, measure_torch_copy=measure_torch_copy)
                outcome.wall_s = time.monotonic() - start
            records.append(case_record(case, outcome))
            under_way = None
            reporter.case(mode, index, records[-1])
            passed &= outcome.ok
            if not outcome.ok and mode == "leaderboard":
                break
            if mode in TIMED_MODES and outcome.ran:
                cool_down(deadline)
    except KeyboardInterrupt as interrupt:
        worker.close(at_once=True)
        stop = interrupted_of(interrupt)
        raise Cut(stop.signum, {**run_record(mode, records, False), "interrupted": stop.name,
                                "dropped": under_way}) from None
    finally:
        worker.close()
    run = run_record(mode, records, passed)
    reporter.end(run)
    return run


def gpu_available() -> bool:
    import torch

    return torch.cuda.is_available()


def device_name() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


# ============================================================================= THE RUNNER'S SIDE
# What the KernelBot runner runs: `POPCORN_FD=N python eval.py MODE TESTS_FILE`, key: value lines on
# descriptor N, exit 0 or 112.

def _one_line(text: str) -> str:
    return " ".join(text.split())


class PopcornReporter:
    """The runner's key: value lines on POPCORN_FD, printed from the case records."""

    def __init__(self, out):
        self.out = out

    def log(self, key, value):
        print(f"{key}: {value}", file=self.out, flush=True)

    def begin(self, mode, cases):
        self.log("test-count" if mode == "test" else "benchmark-count", len(cases))

    def case(self, mode, index, record):
        prefix = f"{'test' if mode == 'test' else 'benchmark'}.{index}"
        self.log(f"{prefix}.spec", record["spec"])
        if not record["ok"]:
            self.log(f"{prefix}.status", "fail")
            self.log(f"{prefix}.error", _one_line(record["error"]))
        elif mode == "test":
            self.log(f"{prefix}.status", "pass")
        elif mode == "profile":
            report = record.get("report", "").encode()
            self.log(f"{prefix}.report", base64.b64encode(report, altchars=PROFILE_ALTCHARS).decode())
        else:
            for field in dataclasses.fields(Stats):
                self.log(f"{prefix}.{field.name}", record["stats_ns"][field.name])

    def end(self, run):
        self.log("check", "pass" if run["passed"] else "fail")


def runner_main(opts, fd_text: str) -> int:
    if opts.mode == "both" or opts.tests_file is None:
        print("runner mode takes one of test, benchmark, leaderboard, profile and a tests file", file=sys.stderr)
        return USAGE
    local_only = [flag for flag, given in (("--json", opts.json_out), ("--timeout", opts.timeout),
                                           ("--no-torch-copy", opts.no_torch_copy)) if given]
    if local_only:  # the runner passes none of them, and runner mode would ignore them
        print(f"{', '.join(local_only)} apply to local runs only; runner mode (POPCORN_FD set) reports on the"
              f" descriptor under task.yml's time limits", file=sys.stderr)
        return USAGE
    try:
        fd = int(fd_text)
        mode_bits = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except (ValueError, OverflowError, OSError):
        print(f"POPCORN_FD={fd_text!r} does not name an open file descriptor for the results.", file=sys.stderr)
        return USAGE
    if mode_bits == os.O_RDONLY:
        print(f"POPCORN_FD={fd_text!r} is open for reading only; the results need a descriptor open for writing.",
              file=sys.stderr)
        return USAGE
    try:
        check_submission(opts.submission)
    except TaskError as error:
        print(error, file=sys.stderr)
        return USAGE
    seed_text = os.environ.pop("POPCORN_SEED", None)
    try:
        secret = int(seed_text) if seed_text else None
    except ValueError:
        print(f"POPCORN_SEED must be an integer, got {shown(seed_text)}", file=sys.stderr)
        return BAD_TESTS_FILE
    if secret is not None and not SECRET_RANGE[0] <= secret <= SECRET_RANGE[1]:
        print(f"POPCORN_SEED must be {SECRET_RANGE[0]} to {SECRET_RANGE[1]} (the seeds numpy takes),"
              f" got {shown(seed_text)}", file=sys.stderr)
        return BAD_TESTS_FILE
    try:
        cases = read_tests_file(opts.tests_file, secret)
    except TaskError as error:
        print(error, file=sys.stderr)
        return BAD_TESTS_FILE
    try:
        with os.fdopen(fd, "w") as out:
            reporter = PopcornReporter(out)
            if opts.mode != "test" and not gpu_available():
                print(GPU_NEEDED.format(mode=opts.mode), file=sys.stderr)
                reporter.end(run_record(opts.mode, [], False))
                return FAILED
            run = run_suite(opts.mode, cases, opts.submission.resolve(), reporter, secret)
    except OSError as error:  # a full device, a pipe nobody reads: the results cannot be written
        print(f"POPCORN_FD={fd_text!r} takes no results: {error.strerror or error}.", file=sys.stderr)
        return USAGE
    # As the runner's eval.py: leaderboard and profile runs exit 0 even when a case failed (the
    # `check:` line says so); test and benchmark runs exit 112.
    return 0 if run["passed"] or opts.mode in ("leaderboard", "profile") else FAILED


# ============================================================================= THE REPORT FOR A PERSON
# `python eval.py MODE [TESTS_FILE]`: the same loop and records, printed for a person, and the same
# records as JSON for tools.

class HumanReporter:
    """A report a person reads at a glance, printed from the case and run records."""

    def __init__(self, out=None):
        self.out = out if out is not None else sys.stdout  # the run's stdout, which may be a ReaderGoneStream
        self.said = set()
        self.last_reason = None

    def say(self, text=""):
        print(text, file=self.out, flush=True)

    def _once(self, text, prefix):
        if text not in self.said:  # a note shared by every case is said once
            self.said.add(text)
            self.say(prefix + text)

    def _reason(self, text, same_as_above, previous):
        """A failed case always shows its reason: in full, or pointing up when the case just above failed alike."""
        self.say("         " + (same_as_above if text == previous else text))
        self.last_reason = text

    def begin(self, mode, cases):
        self.last_reason = None
        self.say(f"== {mode}: {len(cases)} case{'s' if len(cases) != 1 else ''}")

    def case(self, mode, index, record):
        spec = record["spec"]
        wall = f"  ({record['wall_s']:.1f} s)" if record["wall_s"] is not None else ""
        previous, self.last_reason = self.last_reason, None
        if not record["ran"]:
            self.say(f"  [not run] {spec}")
            self._reason(record["error"], "(the same reason as above)", previous)
            return
        stats = record.get("stats_ns")
        if not record["ok"] or stats is None:
            self.say(f"  [{'pass' if record['ok'] else 'FAIL'}] {spec}{wall}")
            if record["error"]:
                self._reason(record["error"], "(the same error as above)", previous)
            if record["detail"]:
                self.say(f"         {record['detail']}")
            for note in record["notes"]:
                self._once(note, "         note: ")
            if record.get("report"):
                self.say(record["report"])
            return
        gbps = f"{record['gbps']:7.0f} GB/s" if record.get("gbps") else "      - GB/s"
        line = (f"  [pass] {spec:<40} {stats['mean'] / 1e3:8.2f} +- {stats['err'] / 1e3:5.2f} us"
                f"  best {stats['best'] / 1e3:7.2f}  worst {stats['worst'] / 1e3:7.2f}  {gbps}")
        copy = record.get("torch_copy_ns")
        if copy is not None and copy["mean"] > 0:
            line += f"  {stats['mean'] / copy['mean']:5.2f}x torch's copy ({copy['mean'] / 1e3:.2f} us)"
        self.say(line + wall)
        for note in record["notes"]:
            self._once(note, "         note: ")

    def end(self, run):
        if "geomean_us" in run:
            summary = f"  geomean {run['geomean_us']:.2f} us"
            if "torch_copy_geomean_us" in run:
                summary += (f"   torch's copy of x {run['torch_copy_geomean_us']:.2f} us"
                            f"   ratio {run['geomean_us'] / run['torch_copy_geomean_us']:.3f}x torch's copy")
            self.say(summary)
        self.say(f"== {run['mode']}: {'pass' if run['passed'] else 'FAIL'}")


def versions() -> dict:
    found = {}
    for name in ("torch", "triton", "helion"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def describe_machine() -> str:
    """The report's first line: where the kernels run, and with what."""
    v = ", ".join(f"{name} {version or '-'}" for name, version in versions().items())
    if gpu_available():
        return f"GPU: {device_name()} ({v})"
    return (f"CPU: no CUDA device visible, so kernels run under the Triton interpreter (Helion's for a Helion"
            f" file) on CPU tensors; the inputs come from a CPU generator, so their values differ from the"
            f" runner's for the same seeds ({v})")


def run_local(mode: str, submission: Path, tests_file: Path | None = None, limit_s: float | None = None,
              torch_copy: bool = True, reporter=None) -> dict:
    """Local mode's work: the report as a dict (passed, device, versions, runs). Raises TaskError."""
    reporter = reporter or HumanReporter()
    check_submission(submission)
    modes = ["test", "benchmark"] if mode == "both" else [mode]
    on_gpu = gpu_available()
    if not on_gpu and mode != "both" and mode != "test":
        raise TaskError(GPU_NEEDED.format(mode=mode))
    explicit = read_tests_file(tests_file) if tests_file else None
    reporter.say(describe_machine())
    reporter.say(f"submission: {submission}")
    runs = []
    report = {"submission": str(submission), "device": device_name(), "versions": versions()}
    try:
        for run_mode in modes:
            if run_mode != "test" and not on_gpu:
                reporter.say("benchmarks need a CUDA GPU and none is visible here, so only the tests ran.")
                break
            cases = explicit or cases_from_task("tests" if run_mode == "test" else "benchmarks")
            runs.append(run_suite(run_mode, cases, submission, reporter, limit_s=limit_s,
                                  measure_torch_copy=torch_copy and run_mode in TIMED_MODES))
    except KeyboardInterrupt as interrupt:
        stop = interrupted_of(interrupt)
        kept = runs + [stop.kept] if isinstance(stop, Cut) else runs
        if not any(case["ran"] for run in kept for case in run["cases"]):
            raise Interrupted(stop.signum) from None  # nothing finished: nothing to keep
        raise Cut(stop.signum, {**report, "passed": False, "interrupted": stop.name, "runs": kept}) from None
    return {**report, "passed": all(run["passed"] for run in runs), "runs": runs}


def cut_sentence(report: dict, where: str) -> str:
    """The one line for a run a signal ended after some cases: how many finished, what was dropped, and where
    the finished ones are kept."""
    done = sum(case["ran"] for run in report["runs"] for case in run["cases"])
    dropped = next((run["dropped"] for run in report["runs"] if run.get("dropped")), None)
    return (f"interrupted ({report['interrupted']}) after {done} finished case{'s' if done != 1 else ''}, with no"
            f" verdict ({f'{dropped}, under way, was dropped' if dropped else 'no case was under way'});"
            f" they are {where}")


def local_main(opts) -> int:
    problem = opts.json_out and output_problem(opts.json_out, inputs=(opts.submission, opts.tests_file))
    if problem:
        print(f"{problem}; nothing was run", file=sys.stderr)
        return USAGE
    try:
        report = run_local(opts.mode, opts.submission.resolve(), opts.tests_file, opts.timeout, not opts.no_torch_copy)
        if opts.json_out:
            with signals_held():
                write_whole(opts.json_out, json.dumps(report, indent=2))
    except TaskError as error:
        print(error, file=sys.stderr)
        return 1
    except Cut as cut:
        where = "above"
        if opts.json_out:
            try:
                write_whole(opts.json_out, json.dumps(cut.kept, indent=2))
                where = f"above and in {opts.json_out}"
            except TaskError as error:
                where = f"above only ({error})"
        print(cut_sentence(cut.kept, where), file=sys.stderr)
        return cut.exit_code
    return 0 if report["passed"] else 1


# ============================================================================= THE COMMAND LINE

def positive_seconds(text: str) -> float:
    """A time limit: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if timeout_problem(value):
        raise argparse.ArgumentTypeError(f"{text!r}: {timeout_problem(value)}")
    return value


def parser() -> argparse.ArgumentParser:
    """One command line for both modes (runner mode: POPCORN_FD set, a tests file required)."""
    parser = argparse.ArgumentParser(
        prog="eval.py", description="Run the submission's tests and/or benchmarks and report them.")
    parser.add_argument("mode", choices=MODES + ("both",))
    parser.add_argument("tests_file", nargs="?", type=Path,
                        help="cases in the runner's format, one a line (default: task.yml's)")
    parser.add_argument("--submission", type=Path, default=HERE / "submission.py", help="file to evaluate")
    parser.add_argument("--json", dest="json_out", type=Path, help="also write the report to this JSON file")
    parser.add_argument("--timeout", type=positive_seconds, help="seconds a mode's run may take (default: task.yml's)")
    parser.add_argument("--no-torch-copy", action="store_true",
                        help="skip timing torch's copy of x (x.clone()) beside each benchmark")
    return parser


def main(argv=None) -> int:
    os.environ["HELION_DISALLOW_AUTOTUNING"] = "1"  # as the runner: before anything imports helion
    if importlib.util.find_spec("torch") is None:  # every mode needs it: one sentence, not a traceback mid-run
        print(f"torch is not installed for {sys.executable}; install the README's requirements (or activate the"
              f" venv they went into), then run this again", file=sys.stderr)
        return USAGE
    interrupt_on_signals()
    opts = parser().parse_args(sys.argv[1:] if argv is None else argv)
    fd = os.environ.get("POPCORN_FD")
    try:
        cooldown_s()
    except TaskError as error:
        print(error, file=sys.stderr)
        return USAGE
    try:
        if fd is not None:
            return runner_main(opts, fd)
        with output_may_close():
            return local_main(opts)
    except KeyboardInterrupt as stop:
        stop = interrupted_of(stop)
        print(f"interrupted ({stop.name}); the worker was ended", file=sys.stderr)
        return stop.exit_code


if __name__ == "__main__":
    sys.exit(main())
