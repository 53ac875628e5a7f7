"""The way to the leaderboard: the server's word on the board, the preflight, and the popcorn command.

The preflight judges a file as the KernelBot server and runner would, cheapest checks first and
before any test runs (popcorn-cli v1.3.23, 2026-06, and kernelbot, 2026-07): popcorn-cli on PATH, the board's deadline as the server
states it, the server's rules on the file (name, size, UTF-8, the directives of the first comment
block, the forbidden substring), the imports a submission may make, KernelGuard (the server's hack
detector), the runner's `python3 submission.py` step in a scratch folder, then the local tests.
"""
import ast
import datetime
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import eval as harness
from scripts import history, remote

LEADERBOARD = "causal_conv1d"
LEADERBOARD_GPUS = {"causal_conv1d": ("B200_Nebius",)}  # where the server's own list cannot be had
# The deadline the server gave when last asked (GET /leaderboards); said where the server cannot be asked.
LAST_KNOWN_DEADLINE = {"causal_conv1d": "2026-03-15 01:00 UTC"}
RUNNER_MODULES = {"task", "torch", "triton", "numpy", "helion"}
# Modules the runner has that a submission still may not import, each with why (the project's
# shared/PROTOCOL.md, "The runner's image": the harness's files are written beside the submission; helion,
# flash-linear-attention and Dao-AILab's causal-conv1d are installed), as the words after the module names.
NOT_ITS_OWN = {
    **dict.fromkeys(("reference", "utils", "eval"), " (the harness's own files, written beside the submission on"
                    " the runner: a kernel that calls them is judged by the code it is judged against)"),
    **dict.fromkeys(("fla", "causal_conv1d"), " (others' kernels, installed on the runner: the leaderboard asks"
                    " for the submission's own work)"),
}
ABSENT = ", which the runner does not have: only the submission file travels"
MODES = harness.MODES
MAX_BYTES = 1_000_000  # the server rejects larger files
FORBIDDEN = "stream"  # the server rejects any file containing it, in any case, comments and strings included
DIRECTIVE_KEYS = ("gpu", "gpus", "leaderboard")  # the only keys the server accepts
COMPILE_LIMIT_S = 120  # the runner's `python3 submission.py` step
COMPILE_WARN_S = 10
KERNELGUARD_LIMIT_S = 120
INSTALL_HINT = ("popcorn-cli was not found: install it from the gpu-mode/popcorn-cli releases, put it on PATH "
                "as popcorn-cli or popcorn (or set POPCORN_BIN), then run `popcorn-cli register` once.")
KERNELGUARD_HINT = ("KernelGuard, the server's hack detector, is not installed, so the file was not screened the way"
                    " the server screens it: pip install -r requirements-guard.txt")


class PreflightError(Exception):
    """The file must not be submitted; the message says why."""


def _directive(line: str):
    """(key, values) of a `#!POPCORN KEY VALUE...` or `//!POPCORN ...` line at column 0, else None."""
    match = re.match(r"(?:#|//)!POPCORN(?:\s+(.*?))?\s*$", line)
    if match is None:
        return None
    words = (match[1] or "").split()
    return (words[0].lower() if words else "", words[1:])


def parse_directives(text: str) -> dict:
    """Directives as popcorn reads them: every line that begins at column 0 with `#!POPCORN` or
    `//!POPCORN`, the key in any case, the last one winning -> {key: value}. More than one GPU on a
    line is an error, as in popcorn."""
    found = {}
    for line in text.splitlines():
        parsed = _directive(line)
        if parsed is None or not parsed[1]:
            continue
        key, values = parsed
        if key in ("gpu", "gpus"):
            if len(values) > 1:
                raise PreflightError(f"the file names {len(values)} GPUs ({', '.join(values)}); popcorn takes exactly one")
            found["gpu"] = values[0]
        else:
            found[key] = values[0]
    return found


def first_comment_block(text: str) -> list[tuple[int, str]]:
    """The lines the server reads directives from: from the top, each line starting with `#` or `//`,
    up to the first that does not (a blank line ends the block)."""
    block = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith(("#", "//")):
            break
        block.append((number, line))
    return block


def server_directives(text: str) -> dict:
    """The directives as the server reads them: {key: (values, line)}; PreflightError naming the rule and line."""
    found = {}
    for number, line in first_comment_block(text):
        parsed = _directive(line)
        if parsed is None:
            continue
        key, values = parsed
        if not key:
            raise PreflightError(f"line {number}: '#!POPCORN' with no key; the server refuses it (missing argument)")
        if key not in DIRECTIVE_KEYS:
            raise PreflightError(f"line {number}: '#!POPCORN {key}' is not a directive the server knows (only "
                                 f"{', '.join(DIRECTIVE_KEYS)}); it refuses the file (Invalid !POPCORN directive)")
        if not values:
            raise PreflightError(f"line {number}: '#!POPCORN {key}' has no value; the server refuses it (missing argument)")
        if key in found:
            raise PreflightError(f"line {number}: '#!POPCORN {key}' repeats line {found[key][1]}; the server refuses"
                                 " a directive given twice")
        found[key] = (values, number)
    if "gpu" in found and "gpus" in found:
        raise PreflightError(f"lines {found['gpu'][1]} and {found['gpus'][1]}: both 'gpu' and 'gpus'; the server"
                             " takes one or the other")
    return found


def unseen_directives(text: str) -> list[str]:
    """Directive lines popcorn reads but the server does not: below the first comment block."""
    in_block = {number for number, _ in first_comment_block(text)}
    return [f"line {number}: {line.strip()}" for number, line in enumerate(text.splitlines(), start=1)
            if number not in in_block and _directive(line) is not None]


def resolve_target(text: str, leaderboard: str | None, gpu: str | None,
                   listed_gpus=None) -> tuple[str, str, list[str]]:
    """(leaderboard, gpu, notes): flags override the file's directives; the server's rules on the
    directives hold; a conflict is reported. listed_gpus: the board's GPUs as the server lists them."""
    server = server_directives(text)
    directives = parse_directives(text)
    notes = []
    for key, flag in (("leaderboard", leaderboard), ("gpu", gpu)):
        if flag and key in directives and directives[key] != flag:
            notes.append(f"--{key} {flag} overrides the file's '#!POPCORN {key} {directives[key]}'")
    board = leaderboard or directives.get("leaderboard")
    target_gpu = gpu or directives.get("gpu")
    if not board:
        raise PreflightError("no leaderboard: add '#!POPCORN leaderboard causal_conv1d' or pass --leaderboard")
    if not target_gpu:
        raise PreflightError("no GPU: add '#!POPCORN gpu B200_Nebius' or pass --gpu")
    if board != LEADERBOARD:
        raise PreflightError(f"leaderboard {board!r} is not {LEADERBOARD!r}, the one this workspace is for")
    if "leaderboard" in server and server["leaderboard"][0][0] != board:
        values, number = server["leaderboard"]
        raise PreflightError(f"line {number}: the file names leaderboard {values[0]!r} but goes to {board!r}; the"
                             " server refuses the mismatch")
    listed = tuple(listed_gpus) if listed_gpus else LEADERBOARD_GPUS[board]
    if target_gpu not in listed:
        raise PreflightError(f"GPU {target_gpu!r} is not one the {board} leaderboard runs on ({', '.join(listed)})")
    return board, target_gpu, notes


def foreign_imports(text: str) -> list[str]:
    """Top-level modules the file imports that the runner does not have (beyond task, torch, ...)."""
    tree = ast.parse(text)
    foreign = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")] if node.level else [node.module]
        else:
            continue
        for name in names:
            root = name.split(".")[0] if not name.startswith(".") else name
            if root not in RUNNER_MODULES and root not in sys.stdlib_module_names and root not in foreign:
                foreign.append(root)
    return foreign


def import_reasons(foreign: list[str]) -> str:
    """The refused modules grouped by why, as one clause: 'reference, utils (why); mylib, which the runner
    does not have: ...'."""
    reasons = {}
    for name in foreign:
        reasons.setdefault(NOT_ITS_OWN.get(name, ABSENT), []).append(name)
    return "; ".join(f"{', '.join(names)}{why}" for why, names in reasons.items())


# KernelGuard (0.3.1) flags pointer and id() keys and output caches itself; what it does not flag is a
# global rebound at call time, the usual shape of a last-call cache, so that stays a warning of ours.
_GLOBAL_REBIND = re.compile(r"^\s*global\s+\w+")


def caching_warnings(text: str) -> list[str]:
    """Lines that look like caching results across calls that KernelGuard does not flag: warnings, not verdicts."""
    return [f"line {number} rebinds a global at call time: {line.strip()}"
            for number, line in enumerate(text.splitlines(), start=1) if _GLOBAL_REBIND.search(line)]


def forbidden_lines(text: str) -> list[str]:
    """Every line the server would reject the file for, numbered."""
    return [f"line {n}: {line.strip()[:80]}" for n, line in enumerate(text.splitlines(), start=1)
            if FORBIDDEN in line.lower()]


def server_file_rules(path: Path) -> str:
    """The server's checks on the file itself, cheapest first: its text, or PreflightError naming the rule."""
    if not path.is_file():
        raise PreflightError(f"no file at {path}")
    if path.suffix != ".py":
        raise PreflightError(f"{path.name} does not end in .py; the server takes a Python leaderboard's file only as .py")
    raw = path.read_bytes()
    if not raw.strip():
        raise PreflightError(f"{path.name} is empty; the server refuses an empty file (HTTP 400)")
    if len(raw) > MAX_BYTES:
        raise PreflightError(f"{path.name} is {len(raw):,} bytes; the server rejects files over {MAX_BYTES:,} bytes"
                             " (HTTP 413)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise PreflightError(f"{path.name} is not valid UTF-8 (line {line}, byte {error.start}); the server refuses"
                             " it (HTTP 400)") from None
    if text.startswith("\ufeff"):
        raise PreflightError(f"{path.name} starts with a UTF-8 byte-order mark, so its first line does not begin with"
                             " '#!POPCORN' for popcorn or the server: save it without the mark")
    return text


def kernelguard_command() -> list[str] | None:
    """`kernelguard` beside this Python (a venv's bin) or on PATH, or None."""
    beside = Path(sys.executable).parent / "kernelguard"
    found = str(beside) if beside.is_file() else shutil.which("kernelguard")
    return [found, "--api-mode"] if found else None


def kernelguard(text: str) -> dict | None:
    """KernelGuard's verdict on the code, run as the server runs it (`kernelguard --api-mode`, code on
    stdin, JSON on stdout): {classification, should_filter, matched_patterns, ...}; None if not installed."""
    command = kernelguard_command()
    if command is None:
        return None
    try:
        proc = subprocess.run(command, input=text.encode(), capture_output=True, timeout=KERNELGUARD_LIMIT_S)
        verdict = json.loads(proc.stdout.decode("utf-8", "replace"))
    except subprocess.TimeoutExpired:
        raise PreflightError(f"KernelGuard ran past {KERNELGUARD_LIMIT_S} s on the file") from None
    except ValueError:
        last = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
        raise PreflightError(f"KernelGuard answered no verdict (exit {proc.returncode}: {last})") from None
    if not isinstance(verdict, dict) or "classification" not in verdict:
        raise PreflightError("KernelGuard answered something that is not a verdict")
    return verdict


def describe_patterns(verdict: dict) -> str:
    return "; ".join(f"{p.get('pattern')} ({p.get('severity')}): {p.get('evidence')}"
                     for p in verdict.get("matched_patterns") or [] if isinstance(p, dict)) or "no pattern named"


RUNNER_FILES = ("task.py", "utils.py", "reference.py", "eval.py", "task.yml")  # what the runner writes beside it


def stage_folder(path: Path, problem_dir: Path, folder: Path) -> Path:
    """Write the runner's files and the submission, renamed submission.py, into folder: what a job sees."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in RUNNER_FILES:
        shutil.copy(problem_dir / name, folder / name)
    shutil.copy(path, folder / "submission.py")
    return folder


def run_compile_step(path: Path, problem_dir: Path, folder: Path | None = None) -> dict:
    """The runner's `python3 submission.py` beside its files (POPCORN_SEED=1, no Helion flag, 120 s):
    {code, took_s, timed_out, tail}. A failure is the runner's to tolerate, so it is data, not an error."""
    with tempfile.TemporaryDirectory() as scratch:
        where = stage_folder(path, problem_dir, Path(folder or scratch))
        env = {k: v for k, v in os.environ.items() if k not in ("HELION_DISALLOW_AUTOTUNING", "POPCORN_FD")}
        env["POPCORN_SEED"] = "1"
        start = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "submission.py"], cwd=where, capture_output=True, env=env,
                                  timeout=COMPILE_LIMIT_S)
            code, output = proc.returncode, proc.stdout + proc.stderr
            timed_out = False
        except subprocess.TimeoutExpired as stop:
            code, output, timed_out = None, (stop.stdout or b"") + (stop.stderr or b""), True
        took = time.monotonic() - start
    lines = output.decode("utf-8", "replace").strip().splitlines()
    return {"code": code, "took_s": took, "timed_out": timed_out, "tail": lines[-1] if lines else "no output"}


def compile_step(path: Path, problem_dir: Path) -> str | None:
    """The compile step's warning for a person, or None."""
    step = run_compile_step(path, problem_dir)
    if step["timed_out"]:
        return f"`python3 submission.py` ran past the runner's {COMPILE_LIMIT_S} s limit"
    if step["code"] != 0:
        return (f"`python3 submission.py` failed on its own (exit {step['code']}: {step['tail']}); the runner"
                " tolerates it")
    if step["took_s"] > COMPILE_WARN_S:
        return (f"`python3 submission.py` took {step['took_s']:.0f} s: module-level or __main__ work (autotuning?)"
                f" eats the runner's {COMPILE_LIMIT_S} s")
    return None


def ask_board(leaderboard: str = LEADERBOARD, environ=None, home: Path | None = None) -> tuple[dict | None, str]:
    """The server's word on the board (GET /leaderboards, as popcorn would ask): (board or None, what it answered)."""
    environ = os.environ if environ is None else environ
    api_url, cli_id = remote.popcorn_settings(environ, home or Path.home())  # RemoteError: settings popcorn can't use
    if not api_url:
        known = LAST_KNOWN_DEADLINE.get(leaderboard)
        return None, ("POPCORN_API_URL is not set, so the server was not asked about the deadline"
                      + (f" (when last asked, {leaderboard} closed on {known}; boards can be reopened, so only the"
                         f" server's answer counts)" if known else ""))
    try:
        board = remote.fetch_board(api_url, leaderboard, cli_id)
    except remote.RemoteError as error:
        return None, f"{error} The deadline was not checked; popcorn will say what the server says"
    if board.get("deadline_text") is not None:
        return board, (f"warning: the server gives {leaderboard} a deadline that is not a date"
                       f" ({board['deadline_text'][:40]!r}), so the deadline was not checked; popcorn will say what the"
                       " server says")
    if board["deadline"] is None:
        return board, f"the server lists {leaderboard} with no deadline"
    return board, f"the server says {leaderboard} closes {board['deadline'].strftime('%Y-%m-%d %H:%M UTC')}"


def preflight(path: Path, leaderboard: str | None, gpu: str | None, run_tests, problem_dir: Path,
              need_popcorn: bool = True, echo=print, ask_server=None) -> dict:
    """Everything that must hold before a file leaves the machine; PreflightError on the first refusal.

    run_tests(path) -> (ok, message) runs the local correctness suite. ask_server() -> (board, said)
    asks the server about the board (None: not asked). Each step says one line as it starts.
    """
    if need_popcorn:
        echo("preflight: popcorn-cli on PATH")
        check_popcorn()
    board_info = None
    if ask_server is not None:
        echo("preflight: the board's deadline, asked of the server")
        try:
            board_info, said = ask_server()
        except remote.RemoteError as error:
            raise PreflightError(str(error)) from None
        echo(f"  {said}")
        if board_info is not None and remote.deadline_passed(board_info):
            raise PreflightError(remote.closed_sentence(board_info))
    echo(f"preflight: the server's rules on the file (.py, not empty, at most {MAX_BYTES:,} bytes, UTF-8)")
    text = server_file_rules(path)
    echo("preflight: the #!POPCORN directives, as popcorn and the server read them")
    board, target_gpu, notes = resolve_target(text, leaderboard, gpu, (board_info or {}).get("gpu_types"))
    warnings = [f"{line} is below the first comment block, where the server does not read directives"
                for line in unseen_directives(text)]
    echo(f"preflight: no '{FORBIDDEN}' anywhere (the server rejects it in any case, comments included)")
    bad = forbidden_lines(text)
    if bad:
        raise PreflightError(f"{path.name} contains '{FORBIDDEN}', which the server rejects: " + "; ".join(bad))
    echo("preflight: imports a submission may make (task, torch, triton, numpy, helion, the standard library)")
    try:
        foreign = foreign_imports(text)
    except SyntaxError as error:
        raise PreflightError(f"{path.name} does not parse: {error}") from None
    if foreign:
        raise PreflightError(f"{path.name} imports {import_reasons(foreign)}; a submission may import task, torch,"
                             " triton, numpy, helion and the standard library")
    echo("preflight: KernelGuard, the server's hack detector (kernelguard --api-mode)")
    verdict = kernelguard(text)
    if verdict is None:
        warnings.append(KERNELGUARD_HINT)
    elif verdict.get("should_filter"):
        raise PreflightError(f"KernelGuard classifies {path.name} {verdict.get('classification')} and the server would"
                             f" reject it: {describe_patterns(verdict)}")
    elif verdict.get("classification") != "valid":
        warnings.append(f"KernelGuard classifies {path.name} {verdict.get('classification')} (not filtered):"
                        f" {describe_patterns(verdict)}")
    echo(f"preflight: `python3 submission.py` beside task.py, as the runner's compile step ({COMPILE_LIMIT_S} s limit)")
    warnings += [w for w in [compile_step(path, problem_dir)] if w]
    echo("preflight: the local correctness suite")
    ok, message = run_tests(path)
    if not ok:
        raise PreflightError(f"the local correctness suite fails: {message}")
    return {"leaderboard": board, "gpu": target_gpu, "notes": notes, "warnings": warnings,
            "caching": caching_warnings(text), "kernelguard": verdict, "board": board_info}


def find_popcorn() -> str | None:
    explicit = os.environ.get("POPCORN_BIN")
    if explicit:
        return explicit if shutil.which(explicit) or Path(explicit).is_file() else None
    return shutil.which("popcorn-cli") or shutil.which("popcorn")


def check_popcorn() -> str:
    """popcorn-cli's path, checked before anything runs: found, executable, and where it starts with `#!`,
    naming an interpreter that exists; PreflightError naming the problem."""
    popcorn = find_popcorn()
    if popcorn is None and os.environ.get("POPCORN_BIN"):
        raise PreflightError(f"POPCORN_BIN={os.environ['POPCORN_BIN']} is not an executable file (point it at"
                             " popcorn-cli)")
    if popcorn is None:
        raise PreflightError(INSTALL_HINT)
    path = Path(shutil.which(popcorn) or popcorn)
    if not os.access(path, os.X_OK) or path.is_dir():
        raise PreflightError(f"popcorn-cli at {path} is not an executable file (chmod +x it, or set POPCORN_BIN to one)")
    try:
        with open(path, "rb") as binary:
            head = binary.readline(256)
    except OSError as error:
        raise PreflightError(f"popcorn-cli at {path} cannot be read: {error.strerror}") from None
    if head.startswith(b"#!"):
        words = head[2:].decode("utf-8", "replace").split()
        if not words or not os.access(words[0], os.X_OK):
            raise PreflightError(f"popcorn-cli at {path} starts with '#!{' '.join(words)}', an interpreter that is not"
                                 " there to run it")
    return str(path)


def popcorn_command(popcorn: str, leaderboard: str, gpu: str, mode: str, path: Path, output: Path) -> list[str]:
    return [popcorn, "submit", "--no-tui", "--leaderboard", leaderboard, "--gpu", gpu, "--mode", mode,
            str(path), "-o", str(output)]


class Interrupted(Exception):
    """Ctrl-C, SIGTERM or SIGHUP while popcorn ran; `output` holds what it printed until then."""

    def __init__(self, output: str, stop: harness.Interrupted):
        super().__init__("interrupted")
        self.output = output
        self.signal_name = stop.name
        self.exit_code = stop.exit_code


def _drain(fds: dict, sink, limit_s: float = 2.0) -> None:
    """What the pipes still hold once the command has ended (up to limit_s), handed to sink(fd, chunk)."""
    end = time.monotonic() + limit_s
    while fds and time.monotonic() < end:
        ready, _, _ = select.select(list(fds), [], [], max(0.0, end - time.monotonic()))
        for fd in ready:
            chunk = os.read(fd, 65536)
            if chunk:
                sink(fd, chunk)
            else:
                del fds[fd]


def ask_popcorn(args: list[str]) -> tuple[str, Path]:
    """popcorn-cli's answer to `args`, decoded leniently, and where its raw bytes were saved as they arrived.
    PreflightError where popcorn is missing or answers with a non-zero exit; Interrupted on a signal, with
    `saved`, where the bytes so far are."""
    popcorn = check_popcorn()
    saved = history.remote_output_path("-".join(args[:2]))
    try:
        code, stdout, everything = run_saving([popcorn, *args], saved, merge=False)
    except Interrupted as stop:
        stop.saved = saved  # for the one line that says where the bytes so far are
        raise
    if code != 0:
        text = everything.decode("utf-8", "replace").strip() or "no output"
        raise PreflightError(f"popcorn-cli {' '.join(args[:2])} failed (exit {code}): {text.splitlines()[-1]}")
    return stdout.decode("utf-8", "replace"), saved


def merge_answer(entries: list[dict], saved: Path) -> int:
    """Merge popcorn's parsed answer into the history; how many entries were new. A history that cannot take
    them is one HistoryError naming where popcorn's answer is kept."""
    try:
        return history.merge_remote(entries)
    except history.HistoryError as error:
        raise history.HistoryError(f"{error}; popcorn's answer is saved in {saved}; nothing was recorded") from None


def run_saving(command: list[str], raw_log: Path, echo=None, merge: bool = True) -> tuple[int, bytes, bytes]:
    """Run command, appending its bytes to raw_log as they arrive (not lines: a last line with no newline
    yet is kept too) and echoing whole lines; (exit code, its stdout, everything it printed). merge: stderr
    into stdout, as a terminal shows them. Ctrl-C, SIGTERM and SIGHUP end the command and raise Interrupted
    with what it printed: nothing it said is lost."""
    previous = harness.interrupt_on_signals()
    process, stdout, everything, pending = None, bytearray(), bytearray(), bytearray()
    fds, out_fd = {}, None
    try:
        with open(raw_log, "ab") as log:
            def sink(fd, chunk):
                log.write(chunk)
                log.flush()
                everything.extend(chunk)
                if fd == out_fd:
                    stdout.extend(chunk)
                if echo is not None:
                    pending.extend(chunk)
                    *lines, rest = bytes(pending).split(b"\n")
                    pending[:] = rest
                    for line in lines:
                        echo(line.decode("utf-8", "replace"))

            try:
                process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT if merge else subprocess.PIPE)
                out_fd = process.stdout.fileno()
                fds = {out_fd: "stdout"} if merge else {out_fd: "stdout", process.stderr.fileno(): "stderr"}
                while fds:
                    for fd in select.select(list(fds), [], [])[0]:
                        chunk = os.read(fd, 65536)
                        if chunk:
                            sink(fd, chunk)
                        else:
                            del fds[fd]
                code = process.wait()
            except KeyboardInterrupt as stop:
                if process is not None:
                    process.kill()
                    process.wait()
                    _drain(dict(fds), sink)
                raise Interrupted(bytes(everything).decode("utf-8", "replace"), harness.interrupted_of(stop)) from None
            finally:
                if echo is not None and pending:
                    echo(bytes(pending).decode("utf-8", "replace"))
                for pipe in (process.stdout, process.stderr) if process is not None else ():
                    if pipe is not None:
                        pipe.close()
        return code, bytes(stdout), bytes(everything)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def submit(file: Path, mode: str, checked: dict, output_dir: Path, echo=print) -> dict:
    """Hand the file to popcorn-cli, echoing what it prints, and read its answer: the submit's record.

    The record: file, mode, leaderboard, gpu, output (popcorn's text, saved as it streamed), exit
    code, status (popcorn's job status, "refused" for an HTTP refusal, "failed" for another non-zero
    exit, "interrupted" for Ctrl-C, SIGTERM or SIGHUP) and parsed (remote.parse_submit_output).
    """
    popcorn = find_popcorn() or "popcorn-cli"
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    output_dir.mkdir(parents=True, exist_ok=True)
    output = output_dir / f"{stamp}.txt"  # what popcorn printed, raw, as it came
    written = output_dir / f"{stamp}.o.txt"  # popcorn's own -o file
    command = popcorn_command(popcorn, checked["leaderboard"], checked["gpu"], mode, file, written)
    interrupted = None
    try:
        code, _, raw = run_saving(command, output, echo=echo)
        text = raw.decode("utf-8", "replace")
    except Interrupted as stop:
        code, text, interrupted = stop.exit_code, stop.output, stop.signal_name
    saved = written.read_bytes().decode("utf-8", "replace") if written.exists() else ""
    parsed = remote.parse_submit_output(text + "\n" + saved)
    if interrupted:
        status = "interrupted"
    elif code != 0 and parsed["status"] in ("done", "no score found"):
        status = "failed"
        parsed["message"] = parsed["message"] or _last_words(text) or f"popcorn exited with {code}"
    else:
        status = parsed["status"]
    return {"file": file, "mode": mode, "leaderboard": checked["leaderboard"], "gpu": checked["gpu"],
            "output": output, "code": code, "status": status, "parsed": parsed, "signal": interrupted}


def recorded_line(submitted: dict) -> str:
    """One line for a person: the submission's id, its status and each ranked run's score or verdict."""
    parsed = submitted["parsed"]
    runs = "".join(f", {run['mode']} {'secret' if run['secret'] else 'public'} "
                   + (f"{run['score_us']:.2f} us" if run["score_us"] is not None else
                      ("passed" if run["passed"] else "failed")) + f" on {run['runner']}"
                   for run in history.ranked_runs(parsed))
    return f"recorded: submission {parsed['submission_id'] or '(no id)'}, {submitted['status']}{runs}"


def submit_failure(submitted: dict) -> tuple[int, str] | None:
    """(exit code, why) when a submit did not end well, else None: interrupted exits with 128 + the signal,
    every other failure with 1."""
    parsed, status, output, code = submitted["parsed"], submitted["status"], submitted["output"], submitted["code"]
    if status == "interrupted":
        return code, f"interrupted ({submitted['signal']}); popcorn's output so far is saved in {output}"
    if status == "refused":
        return 1, f"refused, {parsed['message']} popcorn's output is saved in {output}"
    if status == "no score found":
        return 1, f"no score found in popcorn's output (exit {code}): it is saved in {output}"
    if code != 0 or status in ("failed", "timed_out", "hacked", "unranked", "invalid score", "partial"):
        return 1, f"popcorn exited with {code}, {status}: {parsed['message'] or 'see'} ({output})"
    return None


def _last_words(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
