"""The way to the leaderboard: directives, preflight checks, and the popcorn command."""
import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import eval as harness

LEADERBOARD = "causal_conv1d"
LEADERBOARD_GPUS = {"causal_conv1d": ("B200_Nebius",)}
RUNNER_MODULES = {"task", "torch", "triton", "numpy", "helion"}
MODES = harness.MODES
INSTALL_HINT = ("popcorn-cli was not found: install it from the gpu-mode/popcorn-cli releases, put it on PATH "
                "as popcorn-cli or popcorn (or set POPCORN_BIN), then run `popcorn-cli register` once.")


class PreflightError(Exception):
    """The file must not be submitted; the message says why."""


def parse_directives(text: str) -> dict:
    """`#!POPCORN key value` lines -> {key: value}."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"#!POPCORN\s+(\S+)\s+(\S+)", line.strip())
        if match:
            found[match[1]] = match[2]
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
    (re.compile(r"\.data_ptr\s*\("), "keys on a tensor's data_ptr()"),
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


def preflight(path: Path, leaderboard: str | None, gpu: str | None, run_tests) -> dict:
    """Everything that must hold before a file leaves the machine; PreflightError on the first refusal.

    run_tests(path) -> (ok, message) runs the local correctness suite.
    """
    if not path.is_file():
        raise PreflightError(f"no file at {path}")
    text = path.read_text()
    board, target_gpu, notes = resolve_target(text, leaderboard, gpu)
    try:
        foreign = foreign_imports(text)
    except SyntaxError as error:
        raise PreflightError(f"{path.name} does not parse: {error}") from None
    if foreign:
        raise PreflightError(f"{path.name} imports {', '.join(foreign)}, which the runner does not have: "
                             "only the submission file travels, so it may import task, torch, triton, numpy, "
                             "helion and the standard library")
    ok, message = run_tests(path)
    if not ok:
        raise PreflightError(f"the local correctness suite fails: {message}")
    return {"leaderboard": board, "gpu": target_gpu, "notes": notes, "warnings": caching_warnings(text)}


def find_popcorn() -> str | None:
    explicit = os.environ.get("POPCORN_BIN")
    if explicit:
        return explicit if shutil.which(explicit) or Path(explicit).is_file() else None
    return shutil.which("popcorn-cli") or shutil.which("popcorn")


def popcorn_command(popcorn: str, leaderboard: str, gpu: str, mode: str, path: Path, output: Path) -> list[str]:
    return [popcorn, "submit", "--no-tui", "--leaderboard", leaderboard, "--gpu", gpu, "--mode", mode,
            str(path), "-o", str(output)]


def run_echoing(command: list[str], echo=print) -> tuple[int, str]:
    """Run command, echoing its output line by line as it comes; (exit code, all output)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in process.stdout:
        echo(line.rstrip("\n"))
        lines.append(line)
    return process.wait(), "".join(lines)


_MEAN = re.compile(r"benchmark\.(\d+)\.mean:\s*([\d.eE+-]+)")


def parse_means_us(output: str) -> dict:
    """benchmark.i.mean lines (nanoseconds) in popcorn's output -> {case index: microseconds}."""
    return {int(i): float(v) / 1e3 for i, v in _MEAN.findall(output)}
