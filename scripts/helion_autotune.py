"""Find configs for the Helion submission with Helion's own autotuner, on the GPU at hand.

Behind `python scripts/cli.py helion-tune`. For every benchmark shape (and the test shapes, with
--tests) it autotunes the grouped kernel of submissions/submission_helion.py on that shape's input,
writes the winners to OUT/configs.json with Helion's search log beside it, and puts them into the
file's SHAPE_CONFIGS: the runner forbids autotuning, so they must be hard-coded.

Helion's search is kept; only its stopwatch changes. With --timing runner (the default) every config
that Helion's own benchmark accepts (it compiles, runs, matches the baseline) is then timed the way
the leaderboard times it (eval.time_protocol: cold L2, CUDA graphs, flush subtracted), and that
number ranks it. Helion's own do_bench brackets each Python call with events, without graphs, and
ranks by the median; the picks under it measured 1.19x the Triton submission (results/NOTES.md).
The search's pick is then timed beside a few hand tiles (HAND_TILES) it may never propose, and the
fastest that matches the reference is kept unless the pick is within KEEP_MARGIN of it. With --effort
none there is no search: the file's own config for the shape is timed beside the hand tiles.
"""
import functools
import importlib.metadata
import json
import math
import tempfile
import time
from pathlib import Path

import eval as harness
from scripts import HELION_SUBMISSION, configs

RANK_REP_MS = 10  # per timed graph: ten samples of two graphs, ~0.2 s a config (the runner's 100 ms: ~2 s)
# (rows, groups, warps): hand tiles timed beside the search's pick, which they replace only by KEEP_MARGIN.
# On the H200 Helion's quick search picked 4 rows x 128 groups on 1x1536x2048, 1.066x our Triton tile,
# where the 1 x 512 tile it never proposed read 0.999x (results/NOTES.md v14). The two-row tiles are the
# CUDA kernel's 4096/2 on S = 2048 (a warp a row, two rows a block), the search's pick there.
# The first candidate (the search's pick, or the file's config) stays unless another is this much faster:
# one 10 ms timing a config reads a tile 0.6% ahead that is noise (H100 run54, 1x1536x2048: 2 x 256 / 1 over
# the file's 1 x 512 / 1), and the table should not change on it.
KEEP_MARGIN = 0.01
HAND_TILES = ((1, 128, 1), (1, 256, 1), (1, 512, 1), (1, 512, 2), (1, 1024, 2), (1, 1024, 4),
              (2, 256, 1), (2, 512, 1), (2, 512, 2), (2, 1024, 4), (4, 256, 2))


# conv1d_lanes' candidates on a benchmark shape, after the file's entry: (V slots a lane, NW warps) with x's
# load evicted first or unhinted, the "shift" halo (run115, H100: "each" at V = 16 held 167 registers and ran
# 9.8% behind "shift" on 2,560 rows; level on 1,536), where the row holds whole spans of 32 V groups.
LANES_TILES = ((4, 2), (4, 4), (4, 8), (8, 1), (8, 2), (8, 4), (16, 1), (16, 2), (16, 4))
LANES_EVICTS = ("first", "")


class EffortError(ValueError):
    """An effort and a timing that do not go together."""


class LanesNotServed(ValueError):
    """conv1d_lanes would not run on this input here, so timing its configs would time another kernel."""


def runner_ms(fn, rep_ms: float = RANK_REP_MS) -> float:
    """One call of fn, timed as the leaderboard times it, in milliseconds (Helion's unit)."""
    return harness.time_protocol(fn, rep_ms).mean / 1e6


def rank_by(search, timer):
    """Make a Helion search rank configs by timer(call) where its own benchmark found them usable."""
    helion_benchmark = search.benchmark_function

    def benchmark_function(config, fn):
        ms = helion_benchmark(config, fn)  # compiles, checks accuracy, turns failures into inf
        return timer(functools.partial(fn, *search.args)) if math.isfinite(ms) else ms

    search.benchmark_function = benchmark_function
    return search


def runner_timed_autotuner(bound_kernel, args, **kwargs):
    """Helion's default autotuner (search and cache), ranking by the runner's timing."""
    from helion.runtime.settings import default_autotuner_fn

    tuner = default_autotuner_fn(bound_kernel, args, **kwargs)
    rank_by(tuner.autotuner, runner_ms)
    return tuner


def runner_bench(fns, *, repeat: int, desc=None) -> list:
    """Helion's rebenchmark hook (it re-times its finalists together), with the runner's timing."""
    return [runner_ms(fn) for fn in fns]


def hand_tiles(groups: int) -> list[dict]:
    """HAND_TILES as configs, each no wider than a row of `groups` groups rounded up to a power of two."""
    span = 1 << max(0, groups - 1).bit_length()
    tiles = dict.fromkeys((rows, min(cols, span), warps) for rows, cols, warps in HAND_TILES)
    return [{"block_sizes": [rows, cols], "num_warps": warps} for rows, cols, warps in tiles]


def candidates(first: dict | None, groups: int) -> list[dict]:
    """What is timed on a shape: the search's pick or the file's config (none: the hand tiles alone) first,
    then each hand tile that is not the same config."""
    tiles = [tile for tile in hand_tiles(groups) if tile != first]
    return ([first] if first else []) + tiles


def tile_name(config: dict) -> str:
    rows, cols = config["block_sizes"][:2]
    return f"{rows}x{cols}/{config.get('num_warps', '?')}"


def lanes_name(config) -> str:
    V, num_warps, evict, halo = config
    return f"V{V}/{num_warps} {evict or 'unhinted'} {halo}"


def timed_line(found: dict, name=tile_name) -> str:
    """Every config timed on a shape, fastest first, in microseconds ("failed" where it did not build or match)."""
    timed = sorted(found.get("timed", []), key=lambda entry: entry["ms"] if entry["ms"] is not None else math.inf)
    return "  timed: " + ", ".join(
        f"{name(entry['config'])} {entry['ms'] * 1e3:.2f} us" if entry["ms"] is not None
        else f"{name(entry['config'])} failed" for entry in timed)


def fastest_config(candidates: list[dict], build, check, timer) -> tuple[dict, list]:
    """The first candidate, in the list's order, that builds, passes check and times within KEEP_MARGIN of
    the fastest: build(config) -> a call, check(its output) -> bool, timer(call) -> ms. Returns it (None where
    none built and matched) and every candidate's ms (inf where it failed to build or check)."""
    timed = []
    for config in candidates:
        try:
            call = build(config)
            ms = timer(call) if check(call()) else math.inf
        except Exception:  # as in Helion's own search: a config that fails is never chosen
            ms = math.inf
        timed.append((config, ms))
    fastest = min((ms for _, ms in timed), default=math.inf)
    if not math.isfinite(fastest):
        return None, timed
    return next(config for config, ms in timed if ms <= fastest * (1 + KEEP_MARGIN)), timed


def autotune_shape(module, args: dict, effort: str, timing: str, out_dir: Path, current: dict | None = None) -> dict:
    """Helion's search on one shape's input; {"config": ..., "seconds": ...}. With the runner's timing, its
    pick is timed beside HAND_TILES and kept unless one is KEEP_MARGIN faster ("search_pick" and "timed"
    record how); config None where nothing built and matched. Effort "none" searches nothing: `current`
    (the file's config for the shape, if any) meets the hand tiles, recorded as "file_config"."""
    import helion

    import reference

    B, D, S = args["B"], args["D"], args["S"]
    x, weight, bias = reference.generate_input(**args)
    grouped = (x.view(B * D, S // 4, 4), weight, bias)
    start = time.time()
    if effort == "none":
        config = current
    else:
        hooks = dict(autotuner_fn=runner_timed_autotuner, autotune_benchmark_fn=runner_bench) if timing == "runner" else {}
        kernel = helion.kernel(module.conv1d_groups, static_shapes=True, autotune_effort=effort,
                               autotune_log=str(out_dir / f"search_{harness.case_label(args)}"), **hooks)
        config = dict(kernel.bind(grouped).autotune(grouped, force=True))
    found = {"config": config}
    if timing == "runner":
        def build(candidate):
            built = helion.kernel(module.conv1d_groups, config=helion.Config(**candidate), static_shapes=True)
            return functools.partial(built, *grouped)

        def check(out):
            return reference.check_implementation((x, weight, bias), out.view(B, D, S))[0]

        found["config"], timed = fastest_config(candidates(config, S // 4), build, check, runner_ms)
        found.update({"file_config" if effort == "none" else "search_pick": config},
                     timed=[{"config": c, "ms": ms if math.isfinite(ms) else None} for c, ms in timed])
    return {**found, "seconds": round(time.time() - start, 1)}


def autotune(shapes: list[dict], effort: str, timing: str, out_dir: Path | None, write: bool, echo=print,
             path: Path = HELION_SUBMISSION) -> dict:
    """Every shape in turn; configs.json rewritten and (with write) the file's table updated after each,
    so a search cut short still leaves what it found. out_dir None (a dry run): Helion's logs go to a
    temporary folder that is removed, and nothing is written. Effort "none" times with the runner's timing
    only: it has no search whose pick could stand alone."""
    if effort == "none" and timing != "runner":
        raise EffortError("--effort none times the hand tiles with the runner's timing, so it takes no --timing helion")
    if out_dir is None:
        with tempfile.TemporaryDirectory(prefix="helion-dry-run-") as scratch:
            return _autotune(shapes, effort, timing, Path(scratch), False, echo, path, keep=False)
    return _autotune(shapes, effort, timing, out_dir, write, echo, path, keep=True)


def _autotune(shapes, effort, timing, out_dir: Path, write: bool, echo, path: Path, keep: bool) -> dict:
    module = harness.load_submission(path, "submission_helion")
    current = configs.read_table(path.read_text())[1]
    out_dir.mkdir(parents=True, exist_ok=True)
    found = {}
    for args in shapes:
        shape = tuple(args[k] for k in harness.SHAPE_FIELDS)  # the key of the file's config table
        found[shape] = autotune_shape(module, args, effort, timing, out_dir, current.get(shape))
        echo(f"{harness.case_label(args)}: {found[shape]['config']}  [{found[shape]['seconds']} s]")
        if found[shape].get("timed"):
            echo(timed_line(found[shape]))
        if keep:
            harness.write_whole(out_dir / "configs.json", json.dumps(
                {"device": harness.device_name(), "helion": importlib.metadata.version("helion"),
                 "effort": effort, "timing": timing,
                 "configs": {harness.case_label(dict(zip(harness.SHAPE_FIELDS, k))): v for k, v in found.items()}},
                indent=2), flag="--out")
        if found[shape]["config"] is None:
            echo("  no config built and matched the reference: the file keeps its entry")
        elif write:
            harness.write_whole(path, configs.rewrite(path.read_text(), {shape: found[shape]["config"]}), flag="the Helion file")
    return found


def lanes_candidates(current: tuple | None, S: int) -> list[tuple]:
    """What is timed on a shape: the file's entry first (if any), then LANES_TILES x LANES_EVICTS with the "shift"
    halo where a row of S outputs holds whole spans of V lanes' groups, the file's entry not again."""
    grid = [(V, num_warps, evict, "shift") for V, num_warps in LANES_TILES for evict in LANES_EVICTS
            if S % (128 * V) == 0]
    return ([tuple(current)] if current else []) + [config for config in grid if config != tuple(current or ())]


def lanes_shape(module, args: dict, current: tuple | None) -> dict:
    """conv1d_lanes' candidates on one shape's input, each through the file's custom_kernel (what the runner
    times) at that entry of LANES_CONFIGS, checked against the reference and timed as the runner times; the
    first within KEEP_MARGIN of the fastest is kept. Raises LanesNotServed where the kernel would not run."""
    import reference
    import torch

    key = tuple(args[k] for k in harness.SHAPE_FIELDS)
    try:
        module.LANES_CONFIGS[key] = current or lanes_candidates(None, args["S"])[0]
        if module.lanes_config(torch.empty(key[:3]), torch.empty(key[1], key[3])) is None:
            import triton

            raise LanesNotServed(
                f"conv1d_lanes does not run on {harness.case_label(args)} here (Triton {triton.__version__}, Helion "
                f"{importlib.metadata.version('helion')}): it needs W = 4, rows of whole 128-output spans, and the "
                "Triton and Helion releases whose layout was read (the Helion file's LANE_MAJOR_TRITONS and "
                "LANE_MAJOR_HELIONS)")
        data = reference.generate_input(**args)
        start = time.time()

        def build(candidate):
            module.LANES_CONFIGS[key] = candidate
            return functools.partial(module.custom_kernel, data)

        def check(out):
            return reference.check_implementation(data, out)[0]

        config, timed = fastest_config(lanes_candidates(current, args["S"]), build, check, runner_ms)
    finally:  # the module's table as the file has it, whatever happened
        if current is None:
            module.LANES_CONFIGS.pop(key, None)
        else:
            module.LANES_CONFIGS[key] = current
    return {"config": config, "file_config": current, "seconds": round(time.time() - start, 1),
            "timed": [{"config": c, "ms": ms if math.isfinite(ms) else None} for c, ms in timed]}


def tune_lanes(shapes: list[dict], out_dir: Path | None, write: bool, echo=print, path: Path = HELION_SUBMISSION) -> dict:
    """lanes_shape on every shape in turn; lanes_configs.json under out_dir (None: nothing recorded) and, with
    write, the file's LANES_CONFIGS rewritten after each shape, so a run cut short keeps what it found."""
    import triton

    module = harness.load_submission(path, "submission_helion_lanes")
    current = configs.read_table(path.read_text(), configs.LANES)[1]
    found = {}
    for args in shapes:
        shape = tuple(args[k] for k in harness.SHAPE_FIELDS)
        found[shape] = lanes_shape(module, args, current.get(shape))
        echo(f"{harness.case_label(args)}: {found[shape]['config']}  [{found[shape]['seconds']} s]")
        echo(timed_line(found[shape], lanes_name))
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            harness.write_whole(out_dir / "lanes_configs.json", json.dumps(
                {"device": harness.device_name(), "helion": importlib.metadata.version("helion"),
                 "triton": triton.__version__,
                 "configs": {harness.case_label(dict(zip(harness.SHAPE_FIELDS, k))): v for k, v in found.items()}},
                indent=2), flag="--out")
        if found[shape]["config"] is None:
            echo("  no config built and matched the reference: the file keeps its entry")
        elif write:
            harness.write_whole(path, configs.rewrite(path.read_text(), {shape: tuple(found[shape]["config"])},
                                                      markers=configs.LANES), flag="the Helion file")
    return found
