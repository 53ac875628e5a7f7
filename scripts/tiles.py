"""The kernel beside a copy of x at the same tile, at every tile it is built for.

A causal conv1d moves a copy's bytes, so at a given tile (BLOCK outputs, num_warps) a Triton copy
with the same tile is what the kernel could cost at best: the faster of a plain one and one that
loads x evict-first (a kernel may load so too). Timing both at every tile shows two
things apart: what the kernel pays over a copy (its own overhead), and what the tile costs (the
copy at that tile against the fastest copy, the floor).

A kernel file takes part by defining CONFIG_SPACE (configs whose first two entries are BLOCK and
num_warps) and launch(x, weight, bias, out, *config).
"""
import statistics

import eval as harness
from scripts import baselines, configs, whole_cases

EVICT_FIRST = "evict_first"  # a copy's key's third entry: x loaded with that hint


def load_modules(files: list) -> dict:
    """{name: module} for each kernel file; ValueError for one that offers no CONFIG_SPACE and launch."""
    from scripts import registry

    modules = {}
    for path in files:
        impl = registry.kernel_file(path, "variant")
        module = registry.load_kernel_file(path, f"tiles_{impl.name}")
        if not hasattr(module, "CONFIG_SPACE") or not hasattr(module, "launch"):
            raise ValueError(f"{path} defines no CONFIG_SPACE and launch(x, weight, bias, out, *config)")
        # Records key each config by its label: two configs with one label would leave one row for both.
        labels = [configs.tile_label(config) for config in module.CONFIG_SPACE]
        shared = sorted({label for label in labels if labels.count(label) > 1})
        if shared:
            raise ValueError(f"{path}: more than one config of CONFIG_SPACE reads {', '.join(shared)}")
        modules[impl.name] = module
    return modules


def timings_count(modules: dict, cases: list[dict], rounds: int) -> int:
    """How many timings sweep makes: every config of every module, and two copies at each distinct tile."""
    tiles = {tuple(config[:2]) for module in modules.values() for config in module.CONFIG_SPACE}
    return rounds * len(cases) * (2 * len(tiles) + sum(len(module.CONFIG_SPACE) for module in modules.values()))


def sweep(modules: dict, cases: list[dict], rounds: int, rep_ms: float, progress=None,
          flush: str = "memset") -> whole_cases.CasesRun:
    """Per case, {"copies": {(block, warps[, "evict_first"]): us}, name: {config: us}, "errors": {"name config": why}}:
    medians over interleaved rounds, each timing after `flush` (eval.FLUSHES; the runner's is "memset"). A config
    that fails the check on a case is left out of it, with why under "errors". A signal keeps the cases that finished."""
    import reference
    import torch

    tiles = sorted({tuple(config[:2]) for module in modules.values() for config in module.CONFIG_SPACE})
    copy_fns = {tile: baselines.triton_copy(*tile) for tile in tiles}
    copy_fns.update({(*tile, EVICT_FIRST): baselines.triton_copy(*tile, True) for tile in tiles})

    def sweep_case(args: dict) -> dict:
        data = reference.generate_input(**args)
        out = torch.empty_like(data[0])
        pristine = harness.clone_inputs(data)
        timings = {"copies": {tile: [] for tile in copy_fns}, "errors": {}}
        runs = {("copies", tile): (lambda fn=fn: fn(data)) for tile, fn in copy_fns.items()}
        for name, module in modules.items():
            timings[name] = {}
            for config in module.CONFIG_SPACE:
                launch = (lambda m=module, c=config: m.launch(*data, out, *c))
                problem = _check(launch, out, reference, pristine, data)
                if problem:
                    timings["errors"][f"{name} {config}"] = problem
                    continue
                timings[name][tuple(config)] = []
                runs[(name, tuple(config))] = launch
        for _ in range(rounds):
            for (group, key), run in runs.items():
                timings[group][key].append(harness.time_protocol(run, rep_ms, flush=flush).mean / 1e3)
                if progress:
                    progress(1)
        return {group: ({key: statistics.median(values) for key, values in entries.items()} if group != "errors"
                        else entries) for group, entries in timings.items()}

    return whole_cases.run_cases(cases, sweep_case)


def _check(launch, out, reference, pristine, data) -> str:
    """'' when the config computes the task on this case, else why not."""
    import torch

    out.fill_(float("nan"))  # poisoned: an element the config does not write fails the check
    try:
        launch()
        torch.cuda.synchronize()
        harness.check_output(reference, pristine, data, out.clone())
    except harness.CaseFailure as failure:
        return str(failure)
    except Exception as error:  # a config that does not build or launch
        return harness.named(error)
    return ""


def summarize(results: dict) -> dict:
    """Per case and kernel: its best config, that config's ratio to the same-tile copy and to the floor,
    and the kernel's ratio to the same-tile copy at every config."""
    summary = {}
    for case, groups in results.items():
        copies = groups["copies"]
        floor = min(copies.values())
        same_tile = {}  # (block, warps) -> the faster of its two copies
        for tile, us in copies.items():
            same_tile[tile[:2]] = min(us, same_tile.get(tile[:2], us))
        per_case = {"floor_us": floor, "floor_tile": min(copies, key=copies.get), "kernels": {}}
        for name, timings in groups.items():
            if name in ("copies", "errors") or not timings:
                continue
            best = min(timings, key=timings.get)
            per_case["kernels"][name] = {
                "best": list(best), "best_us": timings[best], "best_vs_floor": timings[best] / floor,
                "best_vs_same_tile_copy": timings[best] / same_tile[best[:2]],
                "configs": {configs.tile_label(c): {"us": us, "vs_same_tile_copy": us / same_tile[c[:2]], "vs_floor": us / floor}
                            for c, us in sorted(timings.items(), key=lambda kv: kv[1])}}
        per_case["copies"] = {configs.tile_label(tile): us for tile, us in sorted(copies.items(), key=lambda kv: kv[1])}
        per_case["errors"] = groups["errors"]
        summary[case] = per_case
    return summary


def format_table(summary: dict, top: int = 5) -> str:
    """Per case: the floor, then each kernel's fastest configs with the same-tile copy beside them."""
    lines = []
    for case, entry in summary.items():
        lines.append(f"{case}: floor {entry['floor_us']:.2f} us (copy {configs.tile_label(entry['floor_tile'])})")
        for name, kernel in entry["kernels"].items():
            for config, row in list(kernel["configs"].items())[:top]:
                lines.append(f"  {name:<16}{config:<18}{row['us']:8.2f} us  {row['vs_same_tile_copy']:6.3f}x same-tile copy"
                             f"  {row['vs_floor']:6.3f}x floor")
        for label, problem in entry["errors"].items():
            lines.append(f"  failed check (not timed): {label}: {problem[:120]}")
    return "\n".join(lines)
