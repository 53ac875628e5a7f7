"""Side-by-side timing of the submission, its peers and variant files under the leaderboard's timing.

All implementations run in one process, in interleaved rounds (every implementation on every case,
then again), so drift in clocks or temperature lands on all of them alike. A case's time for an
implementation is the median over rounds of the protocol's mean. Every time is given against two
copies of x: torch's copy, its clone ('vs copy'), and the floor, the fastest copy of that case in the same run
('vs floor'), since a causal conv1d moves exactly a copy's bytes.
"""
import json
import statistics
from pathlib import Path
from typing import NamedTuple

import eval as harness  # the leaderboard's timing
from scripts import baselines, configs, history, registry

SHAPE_SETS = {
    "large": ["4x2560x4096x4", "8x4096x8192x4"],
    "small": ["1x768x512x4"],
}
FLOOR = "floor"  # the row of per-case minima over the copies: the fastest copy of x of each case in this run


def resolve_cases(shapes: list[str]) -> list[dict]:
    """The leaderboard's benchmark cases, then any named set ('large', 'small') or explicit shapes."""
    cases = [c.args for c in harness.cases_from_task("benchmarks")]
    for item in shapes:
        for shape in SHAPE_SETS.get(item, [item]):
            cases.append(harness.parse_label(shape))
    return cases


def build_impls(impls: list) -> dict:
    """registry Impls -> {name: (kind, function(data) -> output)}, in the same order."""
    return {impl.name: (impl.kind, impl.make()) for impl in impls}


def check_impl(fn, args: dict) -> str:
    """'' when fn matches the reference on this case, else why not. Copies are not expected to match."""
    import reference

    data = reference.generate_input(**args)
    pristine = harness.clone_inputs(data)
    try:
        out = fn(data)
        harness.check_output(reference, pristine, data, out)
    except harness.CaseFailure as failure:
        return str(failure)
    except Exception as error:
        return harness.named(error)
    return ""


def add_same_tile_copies(impls: dict, cases: list[dict]) -> dict:
    """{name: {case: (BLOCK, num_warps)}} for each of ours whose file offers tile_for(data), the tile its
    kernel launches there (tile_for makes the choice a first call makes, search included); Triton copies
    at each such tile, plain and with x loaded evict-first, join `impls` (kind copy) unless there, so they
    are timed in the same rounds; the faster of the two is the same-tile copy."""
    import reference

    ran = {}
    for name, (kind, fn) in list(impls.items()):
        tile_for = registry.seam_of(fn, "tile_for")
        if kind not in registry.OURS or tile_for is None:
            continue
        for args in cases:
            data = reference.generate_input(**args)
            try:
                tile = tuple(tile_for(data))
            except Exception:  # its check reports the failure; no tile to set beside it
                continue
            ran.setdefault(name, {})[harness.case_label(args)] = tile
            for evict_first in (False, True):
                impls.setdefault(baselines.copy_name(*tile, evict_first), ("copy", baselines.triton_copy(*tile, evict_first)))
    return ran


class CompareRun(NamedTuple):
    """What run_compare measured: results {impl: {case: {"us": median, "rounds_us": [...]} or {"error": ...}}},
    the whole rounds in them, and the Interrupted that ended the run early (None where every round ran)."""
    results: dict
    rounds_done: int
    stop: harness.Interrupted | None = None


def run_compare(impls: dict, cases: list[dict], rounds: int, rep_ms: float, progress=None) -> CompareRun:
    """Check each implementation on each case, then time them in interleaved rounds. Ctrl-C, SIGTERM or
    SIGHUP after a whole round keeps the whole rounds and drops the one under way, so every implementation
    keeps the same rounds (a device call cut off by its time limit still has its comparison); before the
    first round ends, the interrupt goes on up, since nothing was compared yet."""
    import reference

    results = {name: {} for name in impls}
    inputs = {harness.case_label(a): reference.generate_input(**a) for a in cases}
    for name, (kind, fn) in impls.items():
        for args in cases:
            if kind == "copy":  # a copy is not expected to match
                continue
            problem = check_impl(fn, args)
            if problem:
                results[name][harness.case_label(args)] = {"error": problem}
    rounds_done, stop = 0, None
    try:
        for _ in range(rounds):
            for args in cases:
                key = harness.case_label(args)
                for name, (_, fn) in impls.items():
                    entry = results[name].setdefault(key, {"rounds_us": []})
                    if "error" not in entry:
                        data = inputs[key]
                        entry["rounds_us"].append(harness.time_protocol(lambda: fn(data), rep_ms).mean / 1e3)
                    if progress:
                        progress(1)
            rounds_done += 1
    except KeyboardInterrupt as interrupt:
        if not rounds_done:
            raise
        stop = harness.interrupted_of(interrupt)
    for per_case in results.values():
        for entry in per_case.values():
            if "rounds_us" in entry:
                del entry["rounds_us"][rounds_done:]
            if entry.get("rounds_us"):
                entry["us"] = statistics.median(entry["rounds_us"])
    return CompareRun(results, rounds_done, stop)


def _ratios(per_case_us: dict, against: dict) -> dict:
    return {k: (v / against[k] if v and against.get(k) else None) for k, v in per_case_us.items()}


def summarize(results: dict, cases: list[dict], impls: dict, ran: dict | None = None) -> dict:
    """The compare.json 'impls' block: kind, per-case microseconds, geomean, ratios to torch's copy and the floor,
    and for each of ours in `ran` (add_same_tile_copies) its time over the copy at the tile it ran.
    `impls` is build_impls' {name: (kind, function)}."""
    kinds = {name: kind for name, (kind, _) in impls.items()}
    leaderboard = [harness.case_label(c.args) for c in harness.cases_from_task("benchmarks")]
    per_case = {name: {k: v.get("us") for k, v in entries.items()} for name, entries in results.items()}
    labels = [harness.case_label(a) for a in cases]
    # (microseconds, copy) of each case's fastest copy. Which copy it is gets recorded: the same-tile copies
    # of this run's picks join the set, so two runs' floors are alike only over the copies both timed.
    fastest = {label: min(((times[label], name) for name, times in per_case.items()
                           if kinds[name] == "copy" and times.get(label)), default=(None, None)) for label in labels}
    per_case[FLOOR] = {label: us for label, (us, _) in fastest.items()}
    floor_copy = {label: name for label, (_, name) in fastest.items()}
    kinds = dict(kinds, **{FLOOR: "copy"})
    torch_copy = per_case.get(registry.TORCH_COPY, {})

    def geo(times):
        values = [times.get(k) for k in leaderboard]
        return harness.geomean(values) if all(values) else None

    rows = {}
    for name, times in per_case.items():
        g = geo(times)
        rows[name] = {"kind": kinds[name], "per_case_us": times, "geomean_us": g,
                       "vs_copy": g / geo(torch_copy) if g and geo(torch_copy) else None,
                       "vs_floor": g / geo(per_case[FLOOR]) if g and geo(per_case[FLOOR]) else None,
                       "per_case_vs_copy": _ratios(times, torch_copy),
                       "per_case_vs_floor": _ratios(times, per_case[FLOOR])}
        if name == FLOOR:
            rows[name]["copy_per_case"] = floor_copy
        same_tile = {}
        for case, tile in (ran or {}).get(name, {}).items():
            copy_us = min((us for us in (per_case.get(baselines.copy_name(*tile, ef), {}).get(case) for ef in (False, True))
                           if us), default=None)
            same_tile[case] = {"tile": list(tile), "copy_us": copy_us,
                               "vs_same_tile_copy": times[case] / copy_us if times.get(case) and copy_us else None}
        if same_tile:
            rows[name]["same_tile"] = same_tile
        errors = {k: v["error"] for k, v in results.get(name, {}).items() if "error" in v}
        if errors:
            rows[name]["errors"] = errors
    return rows


def _same_tile_cell(cell) -> str:
    if not cell:
        return "-"
    tile = configs.tile_label(cell["tile"])
    return f"{tile} {cell['vs_same_tile_copy']:.3f}" if cell["vs_same_tile_copy"] else f"{tile} -"


def format_table(impls: dict, cases: list[dict]) -> str:
    """Microseconds per case with the ratio to the floor beside each, fastest implementation first."""
    names = [harness.case_label(a) for a in cases]
    width = max(len(n) for n in impls) + 2

    def number(value, spec):
        return format(value, spec) if value else "-"

    def cell(entry, case):
        us, ratio = entry["per_case_us"].get(case), entry["per_case_vs_floor"].get(case)
        return f"{us:.2f} ({ratio:.3f})" if us and ratio else (f"{us:.2f}" if us else "FAIL")

    lines = [f"{'implementation':<{width}}" + "".join(f"{n:>20}" for n in names)
             + f"{'geomean':>10}{'vs copy':>9}{'vs floor':>10}"]
    for name, entry in sorted(impls.items(), key=lambda kv: kv[1]["geomean_us"] or float("inf")):
        cells = "".join(f"{cell(entry, n):>20}" for n in names)
        lines.append(f"{name:<{width}}{cells}{number(entry['geomean_us'], '.2f'):>10}"
                     f"{number(entry['vs_copy'], '.3f'):>9}{number(entry['vs_floor'], '.3f'):>10}")
    lines.append("microseconds (in brackets: over the floor, the fastest copy of x of that case in this run); "
                 "geomean over the leaderboard cases; 'vs copy' and 'vs floor': geomean over torch's copy's and "
                 "the floor's")
    floor_copy = impls.get(FLOOR, {}).get("copy_per_case")
    if floor_copy:
        lines.append("the floor's copy: " + ", ".join(f"{case} {floor_copy.get(case) or '-'}" for case in names))
    ours = [(name, entry["same_tile"]) for name, entry in impls.items() if entry.get("same_tile")]
    if ours:
        lines.append("at the tile each ran, over a Triton copy at that tile (what the kernel pays over a copy):")
        for name, same_tile in ours:
            cells = "".join(f"{_same_tile_cell(same_tile.get(case)):>20}" for case in names)
            lines.append(f"{name:<{width}}{cells}")
    errors = [f"  {name} {case}: {msg}" for name, e in impls.items() for case, msg in e.get("errors", {}).items()]
    if errors:
        lines.append("failed checks (not timed):")
        lines.extend(errors)
    return "\n".join(lines)


def write_results(impls: dict, cases: list[dict], device: str, commit: str, date: str, out_dir: Path,
                  rounds: dict | None = None) -> Path:
    """compare.json and compare.png in out_dir; rounds {"asked", "done", "interrupted"} says how many rounds
    the medians are of, and which signal ended a run early."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "compare.json"
    harness.write_whole(path, json.dumps({"device": device, "commit": commit, "date": date, "rounds": rounds,
                                          "cases": [harness.case_label(a) for a in cases], "impls": impls}, indent=2),
                        flag="--out")
    plot_bars(impls, cases, out_dir / "compare.png", f"{device}, commit {commit}, {date}")
    return path


def plot_bars(impls: dict, cases: list[dict], out: Path, subtitle: str) -> bool:
    """Grouped bars of time relative to the copy of x; False (and no file) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [harness.case_label(a) for a in cases]
    order = [n for n, e in sorted(impls.items(), key=lambda kv: kv[1]["geomean_us"] or float("inf"))]
    fig, ax = plt.subplots(figsize=(min(16, max(8, 0.25 * len(names) * len(order))), 4.5))
    width = 0.8 / len(order)
    for i, name in enumerate(order):
        ratios = [impls[name]["per_case_vs_floor"].get(n) or 0 for n in names]
        ax.bar([j + i * width for j in range(len(names))], ratios, width, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(names))], names)
    ax.set_ylabel("time / fastest copy of x")
    ax.set_yscale("log")
    ax.set_title(f"causal_conv1d against the fastest copy of x\n{subtitle}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return True


def record_ours(listed: list, summary: dict, cases: list[dict], device: str) -> int:
    """One history line per file of ours (the registry's OURS kinds) in a compare run: how many were written."""
    ours = [impl for impl in listed if impl.kind in registry.OURS]
    for impl in ours:
        history.append_entry(history.compare_entry(impl.name, impl.kind, impl.file, summary[impl.name], cases, device))
    return len(ours)
