"""Sweep submission.py's (BLOCK, num_warps) per shape on this GPU and rewrite its config table.

The submission's CONFIGS dict is the interface: a candidate is tried by setting its entry, so the
first-call search stays out of the sweep. The table keeps only the shapes where the winner beats the
heuristic's pick by more than the submission's TUNE_MARGIN (scripts/configs.py rewrites it between its markers and nothing else).
"""
import eval as harness
from scripts import configs

def sweep(module, gpu: str, cases: list[dict], space, rep_ms: float, rounds: int = 1, progress=None,
          statistic=min) -> dict:
    """{(B, D, S, W): {config: microseconds}}: each config of space timed once a round, each round
    starting one config later, and statistic (the best, by default) of its rounds kept."""
    import reference

    results = {}
    saved = dict(module.CONFIGS)
    space = list(space)
    try:
        for args in cases:
            shape = (args["B"], args["D"], args["S"], args["W"])
            data = reference.generate_input(**args)
            timings = {config: [] for config in space}
            for round_index in range(rounds):
                start = round_index % max(1, len(space))
                for config in space[start:] + space[:start]:
                    module.CONFIGS[(gpu, *shape)] = config
                    timings[config].append(harness.time_protocol(lambda: module.custom_kernel(data), rep_ms).mean / 1e3)
                    if progress:
                        progress(1)
            results[shape] = {config: statistic(us) for config, us in timings.items()}
    finally:
        module.CONFIGS.clear()
        module.CONFIGS.update(saved)
    return results


def table_changes(module, gpu: str, results: dict) -> tuple[dict, list]:
    """(entries to set, keys to drop). A shape gets an entry only when its winner beats the heuristic by
    more than the submission's TUNE_MARGIN, the margin its first-call search holds a candidate to;
    otherwise the heuristic serves it and any old entry goes."""
    updates, remove = {}, []
    for shape, timings in results.items():
        key = (gpu, *shape)
        best = min(timings, key=timings.get)
        heuristic_us = timings.get(tuple(module.heuristic_config(*shape)))
        if heuristic_us is not None and timings[best] >= heuristic_us * (1 - module.TUNE_MARGIN):
            remove.append(key)
        else:
            updates[key] = tuple(best)
    return updates, remove


def apply_safely(path, new_text: str, check) -> tuple[bool, str]:
    """Write new_text, run check(path) -> (ok, message); put the old file back unless it passes."""
    old_text = path.read_text()
    path.write_text(new_text)
    ok = False
    try:
        ok, message = check(path)
    except Exception as error:
        message = harness.named(error)
    finally:  # a signal during the check too: the file is never left holding an unchecked rewrite
        if not ok:
            path.write_text(old_text)
    return ok, message


def rewrite(text: str, module, gpu: str, results: dict) -> str:
    updates, remove = table_changes(module, gpu, results)
    return configs.rewrite(text, updates, remove)
