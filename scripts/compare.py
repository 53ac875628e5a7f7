"""Side-by-side timing of the submission, its peers and variant files under the leaderboard's timing.

All implementations run in one process, in interleaved rounds (every implementation on every case,
then again), so drift in clocks or temperature lands on all of them alike. A case's time for an
implementation is the median over rounds of the protocol's mean.
"""
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import eval as harness  # noqa: E402  (the workspace's eval.py: its timing is the leaderboard's)

SHAPE_SETS = {
    "large": ["4x2560x4096x4", "8x4096x8192x4"],
    "small": ["1x768x512x4"],
}
FLOOR = "copy"


def parse_shape(text: str, seed: int = 1234) -> dict:
    """'BxDxS' or 'BxDxSxW' (W defaults to 4) -> generate_input's arguments."""
    parts = [int(p) for p in text.lower().split("x")]
    if len(parts) not in (3, 4) or min(parts) < 1:
        raise ValueError(f"shape {text!r} is not BxDxS or BxDxSxW with positive sizes")
    B, D, S = parts[:3]
    return {"B": B, "D": D, "S": S, "W": parts[3] if len(parts) == 4 else 4, "seed": seed}


def case_name(args: dict) -> str:
    return f"{args['B']}x{args['D']}x{args['S']}" + (f"/W{args['W']}" if args["W"] != 4 else "")


def resolve_cases(shapes: list[str]) -> list[dict]:
    """The leaderboard's benchmark cases, then any named set ('large', 'small') or explicit shapes."""
    cases = [c.args for c in harness.cases_from_task(ROOT, "benchmarks")]
    for item in shapes:
        for shape in SHAPE_SETS.get(item, [item]):
            cases.append(parse_shape(shape))
    return cases


def build_impls(submission: Path, variants: list[Path], reference_too: bool = True) -> dict:
    """name -> function(data) -> output, peers first, the submission and variants last."""
    from scripts import baselines
    import reference

    impls = {}
    if reference_too:
        impls["reference"] = reference.ref_kernel
    impls[FLOOR] = baselines.torch_copy
    impls["triton_copy"] = baselines.triton_copy
    impls["torch_compile"] = baselines.torch_compile
    dao = baselines.dao_causal_conv1d()
    if dao is not None:
        impls["dao_causal_conv1d"] = dao
    impls["submission"] = baselines.load_kernel_file(submission, "submission").custom_kernel
    for path in variants:
        impls[path.stem] = baselines.load_kernel_file(path, f"variant_{path.stem}").custom_kernel
    return impls


def check_impl(fn, args: dict) -> str:
    """'' when fn matches the reference on this case, else why not. Copies are not expected to match."""
    import reference

    data = reference.generate_input(**args)
    pristine = harness._clone(data)
    try:
        out = fn(data)
        harness.check_output(reference.check_implementation, pristine, data, out)
    except harness.CaseFailure as failure:
        return str(failure)
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return ""


def run_compare(impls: dict, cases: list[dict], rounds: int, rep_ms: float, progress=None) -> dict:
    """{impl: {case: {"us": median, "rounds_us": [...]} or {"error": ...}}}."""
    import reference

    results = {name: {} for name in impls}
    inputs = {case_name(a): reference.generate_input(**a) for a in cases}
    for name, fn in impls.items():
        for args in cases:
            if name in (FLOOR, "triton_copy"):
                continue
            problem = check_impl(fn, args)
            if problem:
                results[name][case_name(args)] = {"error": problem}
    for _ in range(rounds):
        for args in cases:
            key = case_name(args)
            for name, fn in impls.items():
                entry = results[name].setdefault(key, {"rounds_us": []})
                if "error" not in entry:
                    data = inputs[key]
                    entry["rounds_us"].append(harness.time_protocol(lambda: fn(data), rep_ms).mean / 1e3)
                if progress:
                    progress(1)
    for per_case in results.values():
        for entry in per_case.values():
            if entry.get("rounds_us"):
                entry["us"] = statistics.median(entry["rounds_us"])
    return results


def summarize(results: dict, cases: list[dict]) -> dict:
    """The compare.json 'impls' block: per-case microseconds, geomean, ratio to the copy of x."""
    leaderboard = [case_name(c.args) for c in harness.cases_from_task(ROOT, "benchmarks")]
    floor = results.get(FLOOR, {})
    impls = {}
    for name, per_case in results.items():
        per_case_us = {k: v.get("us") for k, v in per_case.items()}
        errors = {k: v["error"] for k, v in per_case.items() if "error" in v}
        lb = [per_case_us.get(k) for k in leaderboard]
        geo = harness.geomean(lb) if all(lb) else None
        floor_lb = [floor.get(k, {}).get("us") for k in leaderboard]
        ratio = geo / harness.geomean(floor_lb) if geo and all(floor_lb) else None
        impls[name] = {"per_case_us": per_case_us, "geomean_us": geo, "vs_copy": ratio,
                       "per_case_vs_copy": {k: (v / floor[k]["us"] if v and floor.get(k, {}).get("us") else None)
                                            for k, v in per_case_us.items()}}
        if errors:
            impls[name]["errors"] = errors
    return impls


def format_table(impls: dict, cases: list[dict]) -> str:
    names = [case_name(a) for a in cases]
    width = max(len(n) for n in impls) + 2
    lines = [f"{'implementation':<{width}}" + "".join(f"{n:>16}" for n in names) + f"{'geomean':>10}{'vs copy':>9}"]
    for name, entry in sorted(impls.items(), key=lambda kv: kv[1]["geomean_us"] or float("inf")):
        cells = "".join(f"{(f'{v:.2f}' if v else 'FAIL'):>16}" for v in (entry["per_case_us"].get(n) for n in names))
        geo = entry["geomean_us"]
        ratio = entry["vs_copy"]
        lines.append(f"{name:<{width}}{cells}{(f'{geo:.2f}' if geo else '-'):>10}{(f'{ratio:.3f}' if ratio else '-'):>9}")
    lines.append("microseconds; geomean over the leaderboard cases; 'vs copy' = geomean / the copy of x's geomean")
    errors = [f"  {name} {case}: {msg}" for name, e in impls.items() for case, msg in e.get("errors", {}).items()]
    if errors:
        lines.append("failed checks (not timed):")
        lines.extend(errors)
    return "\n".join(lines)


def write_results(impls: dict, cases: list[dict], device: str, commit: str, date: str, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "compare.json"
    path.write_text(json.dumps({"device": device, "commit": commit, "date": date,
                                "cases": [case_name(a) for a in cases], "impls": impls}, indent=2))
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
    names = [case_name(a) for a in cases]
    order = [n for n, e in sorted(impls.items(), key=lambda kv: kv[1]["geomean_us"] or float("inf"))]
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(names) * len(order) / 3), 4.5))
    width = 0.8 / len(order)
    for i, name in enumerate(order):
        ratios = [impls[name]["per_case_vs_copy"].get(n) or 0 for n in names]
        ax.bar([j + i * width for j in range(len(names))], ratios, width, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(names))], names)
    ax.set_ylabel("time / copy of x")
    ax.set_yscale("log")
    ax.set_title(f"causal_conv1d vs a copy of x\n{subtitle}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return True
