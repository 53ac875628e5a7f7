"""Does the submission's first-call search pick well, and the same way each time, on this GPU?

On the runner the search runs once per process, with the config table empty for a GPU nobody here
has measured. So for each case the search runs as that first call would, in several fresh
processes, and in this process tune's sweep times every tile the kernel is built for under the
runner's timing. The sweep's best is the lowest of many noisy times, so it reads low: on the H200
(run37) it put a tile 3.5% ahead of the search's pick that, re-timed beside it, was within 0.5%
(results/NOTES.md v22). So the sweep's FINALISTS fastest and the processes' picks are timed again,
together, over CONFIRM_ROUNDS rounds, and the verdict takes their medians. The search holds on a case
when every process picked the same config and that config is within the submission's TUNE_MARGIN of
the re-timed best.
"""
import json
import os
import statistics
import subprocess
import sys

from scripts import ROOT, SUBMISSION, configs, registry, whole_cases

FINALISTS = 3  # the sweep's fastest, re-timed beside the picks
CONFIRM_ROUNDS = 5  # rounds of that re-timing; the median of each is kept

# The child: the search on one case's input, as submission.choose runs it on a first call; its record on stdout.
_CHILD = """
import json, sys
from scripts import search_check
print(json.dumps(search_check.search_once(json.loads(sys.argv[1]))))
"""


def search_once(args: dict) -> dict:
    """The submission's search on the input generate_input(**args), in this process: its record, as JSON data."""
    import reference

    module = registry.load_kernel_file(SUBMISSION, "submission")
    x, weight, bias = reference.generate_input(**args)
    key = (module.gpu_of(x), *x.shape, weight.shape[1])
    record = module.search_record(key, x, weight, bias, module.graph_timer(x.device))
    return {"pick": list(record["pick"]), "line": module.pick_line(record),
            "timed": [[list(config), us] for config, us in record["timed"]],
            "retimed": [[list(config), us] for config, us in record["retimed"]],
            "dropped": [[list(config), reason] for config, reason in record["dropped"]],
            "acf_files": record["acf_files"], "seconds": record["seconds"]}


def fresh_searches(args: dict, processes: int, switch: str, timeout_s: float = 300) -> list[dict]:
    """The search's record from each of `processes` new Python processes, with the environment variable
    `switch` (the submission's TUNE_ENV) unset, as on the runner; RuntimeError naming a process that failed."""
    env = {name: value for name, value in os.environ.items() if name != switch}
    records = []
    for index in range(processes):
        proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(args)], cwd=ROOT, env=env, timeout=timeout_s,
                              capture_output=True, text=True, errors="replace")
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the search's process {index + 1} of {processes} failed (exit {proc.returncode}): {tail}")
        records.append(json.loads(lines[-1]))
    return records


def verdict(picks: list, timed_us: dict, margin: float) -> dict:
    """picks: each process's (BLOCK, num_warps, build); timed_us: {config: us} of the configs timed beside
    them, a Triton tile as (BLOCK, num_warps), another build with its third entry. Whether the picks
    agree, each one's time over the best (None for a pick that was not timed: a control file), and
    whether the search holds."""
    best = min(timed_us, key=timed_us.get)
    ratios = [timed_us[k] / timed_us[best] if k in timed_us else None for k in map(sweep_key, picks)]
    agree = len({tuple(p) for p in picks}) == 1
    return {"picks": [list(p) for p in picks], "agree": agree, "best": list(best), "best_us": timed_us[best],
            "pick_vs_best": ratios, "holds": agree and all(r is not None and r <= 1 + margin for r in ratios)}


def sweep_key(pick) -> tuple:
    """A pick as the sweep names it: (1024, 1, None) -> (1024, 1); (4096, 2, 'cuda') stays."""
    return tuple(entry for entry in pick if entry is not None)


def finalists(sweep_us: dict, picks: list, space) -> list:
    """The sweep's FINALISTS fastest, then each pick the sweep can time, once each."""
    fastest = sorted(sweep_us, key=sweep_us.get)[:FINALISTS]
    timeable = set(map(tuple, space))
    return list(dict.fromkeys(fastest + [key for key in map(sweep_key, picks) if key in timeable]))


def check(cases: list[dict], processes: int, rounds: int, rep_ms: float, progress=None) -> whole_cases.CasesRun:
    """Per case, the verdict plus the processes' pick lines, the sweep and the re-timing: the searches first,
    then the sweep, then its finalists and the picks timed together. A signal keeps the cases that finished."""
    from scripts import tune

    module = registry.load_kernel_file(SUBMISSION, "submission")
    gpu = module.gpu_key(0)

    def check_case(args: dict) -> dict:
        records = fresh_searches(args, processes, module.TUNE_ENV)
        picks = [record["pick"] for record in records]
        sweep_us = next(iter(tune.sweep(module, gpu, [args], module.CONFIG_SPACE, rep_ms, rounds, progress).values()))
        retimed = next(iter(tune.sweep(module, gpu, [args], finalists(sweep_us, picks, module.CONFIG_SPACE), rep_ms,
                                       CONFIRM_ROUNDS, statistic=statistics.median).values()))
        entry = verdict(picks, retimed, module.TUNE_MARGIN)
        entry["lines"] = [record["line"] for record in records]
        entry["timed"] = [{configs.tile_label(config): us for config, us in record["timed"]} for record in records]
        entry["sweep_us"] = {configs.tile_label(tile): us for tile, us in sorted(sweep_us.items(), key=lambda kv: kv[1])}
        entry["retimed_us"] = {configs.tile_label(tile): us for tile, us in sorted(retimed.items(), key=lambda kv: kv[1])}
        entry["timed_vs_sweep"] = [timed_vs_sweep(timed, entry["sweep_us"]) for timed in entry["timed"]]
        return entry

    return whole_cases.run_cases(cases, check_case)


def timed_vs_sweep(timed: dict, sweep_us: dict) -> dict:
    """One process's timings (label -> us, in the order it timed them) over the sweep's: the ratio of the
    first one the sweep also timed, and the median of the rest's. Where the two differ, the search times
    its candidates unlike one another, whatever their speed (run26: the first 0.97-1.00, the rest 1.02-1.04)."""
    ratios = [us / sweep_us[label] for label, us in timed.items() if label in sweep_us]
    return {"first": ratios[0] if ratios else None, "rest": statistics.median(ratios[1:]) if len(ratios) > 1 else None}


def format_table(results: dict, margin: float) -> str:
    header = ("case", "picks (one a process)", "best, re-timed", "pick / best", "verdict")
    rows = [header]
    for case, entry in results.items():
        why = ("holds" if entry["holds"] else
               "MISSED: the processes disagree" if not entry["agree"] else f"MISSED: over {1 + margin:.2f}x the best")
        rows.append((case, ", ".join(configs.tile_label(p) for p in entry["picks"]), configs.tile_label(entry["best"]),
                     ", ".join(f"{r:.3f}" if r else "-" for r in entry["pick_vs_best"]), why))
    # Each column as wide as its longest cell: three picks of a named build (4096/2 cuda-ef) run to 46 characters.
    widths = [max(len(row[i]) for row in rows) + 2 for i in range(len(header) - 1)]
    lines = ["".join(cell.ljust(w) for cell, w in zip(row, widths)) + row[-1] for row in rows]
    drift = [(case, entry["timed_vs_sweep"]) for case, entry in results.items() if entry.get("timed_vs_sweep")]
    if drift:
        lines.append("each process's timings over the sweep's, its first candidate / the median of the rest:")
        lines.extend(f"  {case:<14}" + ", ".join(f"{_ratio(d['first'])} / {_ratio(d['rest'])}" for d in per_process)
                     for case, per_process in drift)
    lines.append(f"the search holds on a case when every process picked the same config and it is within "
                 f"{margin:.0%} of the best of the sweep's {FINALISTS} fastest and the picks, re-timed together "
                 f"(medians of {CONFIRM_ROUNDS} rounds, the runner's timing, same call)")
    return "\n".join(lines)


def _ratio(value) -> str:
    return f"{value:.3f}" if value is not None else "-"
