"""The way to the leaderboard: directives, the preflight, and the popcorn command.

The preflight judges a file as the KernelBot server and runner would, cheapest checks first and
before any test runs (../shared/POPCORN.md): popcorn-cli on PATH, the directives as popcorn parses
them, the size limit, the forbidden substring, the imports; then the runner's `python3 submission.py`
step in a scratch folder; then the local correctness suite.
"""
import ast
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import eval as harness
from scripts import remote

LEADERBOARD = "causal_conv1d"
LEADERBOARD_GPUS = {"causal_conv1d": ("B200_Nebius",)}
RUNNER_MODULES = {"task", "torch", "triton", "numpy", "helion"}
MODES = harness.MODES
MAX_BYTES = 1_000_000  # the server rejects larger files
FORBIDDEN = "stream"  # the server rejects any file containing it, in any case, comments and strings included
COMPILE_LIMIT_S = 120  # the runner's `python3 submission.py` step
COMPILE_WARN_S = 10
INSTALL_HINT = ("popcorn-cli was not found: install it from the gpu-mode/popcorn-cli releases, put it on PATH "
                "as popcorn-cli or popcorn (or set POPCORN_BIN), then run `popcorn-cli register` once.")


class PreflightError(Exception):
    """The file must not be submitted; the message says why."""


def parse_directives(text: str) -> dict:
    """Directives as popcorn reads them: lines that begin at column 0 with `#!POPCORN` or `//!POPCORN`
    -> {key: value}. More than one GPU is an error, as in popcorn."""
    found, gpus = {}, []
    for line in text.splitlines():
        match = re.match(r"(?:#|//)!POPCORN\s+(\S+)((?:\s+\S+)*)\s*$", line)
        if not match:
            continue
        key, values = match[1], match[2].split()
        if key == "gpu":
            gpus += values
        elif values:
            found[key] = values[0]
    if len(gpus) > 1:
        raise PreflightError(f"the file names {len(gpus)} GPUs ({', '.join(gpus)}); popcorn takes exactly one")
    if gpus:
        found["gpu"] = gpus[0]
    return found


def resolve_target(text: str, leaderboard: str | None, gpu: str | None) -> tuple[str, str, list[str]]:
    """(leaderboard, gpu, notes): flags override the file's directives; a conflict is reported."""
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
    if target_gpu not in LEADERBOARD_GPUS[board]:
        raise PreflightError(f"GPU {target_gpu!r} is not one the {board} leaderboard runs on "
                             f"({', '.join(LEADERBOARD_GPUS[board])})")
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


_CACHE_PATTERNS = [
    # a pointer used as a key: subscripted, looked up, compared, or kept under a key-like name
    (re.compile(r"\[[^\]]*\.data_ptr\s*\(|\.get\([^)]*\.data_ptr\s*\(|\.data_ptr\s*\(\s*\)\s*(==|!=|in\b|not\b)"
                r"|\b\w*(key|cache|seen|last|prev)\w*\s*=\s*[^=\n]*\.data_ptr\s*\("), "keys on a tensor's data_ptr()"),
    (re.compile(r"(?<![\w.])id\s*\("), "keys on id()"),
    (re.compile(r"^\s*global\s+\w+"), "rebinds a global at call time"),
    (re.compile(r"\b\w*(cache|memo)\w*\s*\[[^\]]*\]\s*="), "stores into a cache-like container"),
]


def caching_warnings(text: str) -> list[str]:
    """Lines that look like caching results across calls: warnings for a person to read, not verdicts."""
    warnings = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern, why in _CACHE_PATTERNS:
            if pattern.search(line):
                warnings.append(f"line {number} {why}: {line.strip()}")
    return warnings


def forbidden_lines(text: str) -> list[str]:
    """Every line the server would reject the file for, numbered."""
    return [f"line {n}: {line.strip()[:80]}" for n, line in enumerate(text.splitlines(), start=1)
            if FORBIDDEN in line.lower()]


def compile_step(path: Path, problem_dir: Path) -> str | None:
    """The runner's `python3 submission.py`, beside task.py in a scratch folder: a warning, or None."""
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(path, Path(scratch) / "submission.py")
        shutil.copy(problem_dir / "task.py", Path(scratch) / "task.py")
        start = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "submission.py"], cwd=scratch, capture_output=True, text=True,
                                  timeout=COMPILE_LIMIT_S)
        except subprocess.TimeoutExpired:
            return f"`python3 submission.py` ran past the runner's {COMPILE_LIMIT_S} s limit"
        took = time.monotonic() - start
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"`python3 submission.py` failed on its own (exit {proc.returncode}: {last}); the runner tolerates it"
    if took > COMPILE_WARN_S:
        return (f"`python3 submission.py` took {took:.0f} s: module-level or __main__ work (autotuning?) eats the "
                f"runner's {COMPILE_LIMIT_S} s")
    return None


def preflight(path: Path, leaderboard: str | None, gpu: str | None, run_tests, problem_dir: Path,
              need_popcorn: bool = True, echo=print) -> dict:
    """Everything that must hold before a file leaves the machine; PreflightError on the first refusal.

    run_tests(path) -> (ok, message) runs the local correctness suite. Each step says one line as it starts.
    """
    if need_popcorn:
        echo("preflight: popcorn-cli on PATH")
        if find_popcorn() is None:
            raise PreflightError(INSTALL_HINT)
    echo("preflight: the #!POPCORN directives")
    if not path.is_file():
        raise PreflightError(f"no file at {path}")
    text = path.read_text()
    board, target_gpu, notes = resolve_target(text, leaderboard, gpu)
    echo(f"preflight: size (the server takes at most {MAX_BYTES:,} bytes)")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise PreflightError(f"{path.name} is {size:,} bytes; the server rejects files over {MAX_BYTES:,} bytes")
    echo(f"preflight: no '{FORBIDDEN}' anywhere (the server rejects it in any case, comments included)")
    bad = forbidden_lines(text)
    if bad:
        raise PreflightError(f"{path.name} contains '{FORBIDDEN}', which the server rejects: " + "; ".join(bad))
    echo("preflight: imports the runner has")
    try:
        foreign = foreign_imports(text)
    except SyntaxError as error:
        raise PreflightError(f"{path.name} does not parse: {error}") from None
    if foreign:
        raise PreflightError(f"{path.name} imports {', '.join(foreign)}, which the runner does not have: "
                             "only the submission file travels, so it may import task, torch, triton, numpy, "
                             "helion and the standard library")
    echo(f"preflight: `python3 submission.py` beside task.py, as the runner's compile step ({COMPILE_LIMIT_S} s limit)")
    warnings = [w for w in [compile_step(path, problem_dir)] if w]
    echo("preflight: the local correctness suite")
    ok, message = run_tests(path)
    if not ok:
        raise PreflightError(f"the local correctness suite fails: {message}")
    return {"leaderboard": board, "gpu": target_gpu, "notes": notes, "warnings": warnings,
            "caching": caching_warnings(text)}


def find_popcorn() -> str | None:
    explicit = os.environ.get("POPCORN_BIN")
    if explicit:
        return explicit if shutil.which(explicit) or Path(explicit).is_file() else None
    return shutil.which("popcorn-cli") or shutil.which("popcorn")


def popcorn_command(popcorn: str, leaderboard: str, gpu: str, mode: str, path: Path, output: Path) -> list[str]:
    return [popcorn, "submit", "--no-tui", "--leaderboard", leaderboard, "--gpu", gpu, "--mode", mode,
            str(path), "-o", str(output)]


class Interrupted(Exception):
    """Ctrl-C while popcorn ran; `output` holds what it printed until then."""

    def __init__(self, output: str):
        super().__init__("interrupted")
        self.output = output


def run_echoing(command: list[str], echo=print) -> tuple[int, str]:
    """Run command, echoing its output line by line as it comes; (exit code, all output).
    Ctrl-C ends the command and raises Interrupted with what it printed."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in process.stdout:
            echo(line.rstrip("\n"))
            lines.append(line)
        return process.wait(), "".join(lines)
    except KeyboardInterrupt:
        process.kill()
        process.wait()
        raise Interrupted("".join(lines)) from None


def submit(file: Path, mode: str, checked: dict, output_dir: Path, echo=print) -> dict:
    """Hand the file to popcorn-cli, echoing what it prints, and read its answer: the submit's record.

    The record: file, mode, leaderboard, gpu, output (popcorn's saved text), exit code, status
    (popcorn's job status, "failed" for a non-zero exit, "interrupted" for Ctrl-C) and parsed
    (remote.parse_submit_output of everything popcorn printed).
    """
    popcorn = find_popcorn() or "popcorn-cli"
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    output = output_dir / f"{stamp}.txt"
    output.parent.mkdir(parents=True, exist_ok=True)
    command = popcorn_command(popcorn, checked["leaderboard"], checked["gpu"], mode, file, output)
    interrupted = False
    try:
        code, text = run_echoing(command, echo=echo)
    except Interrupted as stop:
        code, text, interrupted = harness.INTERRUPTED, stop.output, True
    saved = output.read_text() if output.exists() else ""
    if not saved:
        output.write_text(text)
    parsed = remote.parse_submit_output(text + "\n" + saved)
    status = "interrupted" if interrupted else ("failed" if code != 0 and parsed["status"] == "done"
                                                else parsed["status"])
    return {"file": file, "mode": mode, "leaderboard": checked["leaderboard"], "gpu": checked["gpu"],
            "output": output, "code": code, "status": status, "parsed": parsed}
