"""Sweep submission.py's (BLOCK, num_warps) per shape on this GPU and rewrite its config table.

The submission's CONFIGS dict is the interface: a candidate is tried by setting its entry, and the
winners are written back between the `# <tune:configs>` markers as plain data. The rewrite keeps
every other line (comments, other GPUs' entries) as it was.
"""
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import eval as harness  # noqa: E402

# Every thread owns 2 to 16 groups of 4 (8 to 64 outputs): fewer starves the loads in flight,
# more spills nothing but leaves too few programs for 132 SMs on the small cases.
SEARCH_SPACE = [(block, warps) for block in (256, 512, 1024, 2048, 4096) for warps in (1, 2, 4, 8)
                if 8 <= block // (32 * warps) <= 64]
BEGIN, END = "# <tune:configs>", "# </tune:configs>"
_ENTRY = re.compile(r'^(\s*)\("(?P<gpu>[^"]+)", (?P<shape>\d+, \d+, \d+, \d+)\): \((?P<cfg>\d+, \d+)\),(?P<tail>.*)$')


def sweep(module, gpu: str, cases: list[dict], space, rep_ms: float, rounds: int = 1, progress=None) -> dict:
    """{(B, D, S, W): {(BLOCK, num_warps): microseconds}}: each config timed `rounds` times, best kept."""
    import reference

    results = {}
    saved = dict(module.CONFIGS)
    try:
        for args in cases:
            shape = (args["B"], args["D"], args["S"], args["W"])
            data = reference.generate_input(**args)
            timings = results.setdefault(shape, {})
            for _ in range(rounds):
                for config in space:
                    module.CONFIGS[(gpu, *shape)] = config
                    us = harness.time_protocol(lambda: module.custom_kernel(data), rep_ms).mean / 1e3
                    timings[config] = min(us, timings.get(config, float("inf")))
                    if progress:
                        progress(1)
    finally:
        module.CONFIGS.clear()
        module.CONFIGS.update(saved)
    return results


def best_configs(results: dict) -> dict:
    return {shape: min(timings, key=timings.get) for shape, timings in results.items()}


def rewrite_configs(text: str, gpu: str, best: dict) -> str:
    """The submission's text with (gpu, shape) entries set to `best`; new ones go before the closing brace."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"the submission has no config table between {BEGIN!r} and {END!r}")
    head, rest = text.split(BEGIN, 1)
    block, tail = rest.split(END, 1)
    lines = block.split("\n")
    pending = dict(best)
    for i, line in enumerate(lines):
        match = _ENTRY.match(line)
        if match and match["gpu"] == gpu:
            shape = tuple(int(v) for v in match["shape"].split(", "))
            if shape in pending:
                block_, warps = pending.pop(shape)
                lines[i] = f'{match.group(1)}("{gpu}", {match["shape"]}): ({block_}, {warps}),{match["tail"]}'
    if pending:
        close = max(i for i, line in enumerate(lines) if line.strip() == "}")
        new = [f'    ("{gpu}", {", ".join(map(str, shape))}): ({cfg[0]}, {cfg[1]}),' for shape, cfg in sorted(pending.items())]
        lines[close:close] = new
    return head + BEGIN + "\n".join(lines) + END + tail


def diff(old: str, new: str, name: str = "submission.py") -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}"))


def apply_safely(path: Path, new_text: str, check) -> tuple[bool, str]:
    """Write new_text, run check(path) -> (ok, message); put the old file back unless it passes."""
    old_text = path.read_text()
    path.write_text(new_text)
    try:
        ok, message = check(path)
    except Exception as error:
        ok, message = False, f"{type(error).__name__}: {error}"
    if not ok:
        path.write_text(old_text)
    return ok, message
