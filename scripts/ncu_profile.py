"""Nsight Compute on one leaderboard case: a kernel file beside the fastest copy of x, side by side.

`profile_side_by_side` times the Triton copies (the fastest one is the floor of that case), then runs
ncu twice on this module as a target program (`python -m scripts.ncu_profile FILE B D S W SEED`), which
warms the kernel up and calls it once inside an NVTX range: ncu profiles only that range, with its
clocks left as they are. The metrics are summed over the kernels in the range.
"""
import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path

import eval as harness
from scripts import ROOT

RANGE = "measured"
METRICS = {  # ncu metric -> (column, how to combine several kernels)
    "gpu__time_duration.sum": ("duration us", "sum"),
    "dram__bytes_read.sum": ("DRAM read MB", "sum"),
    "dram__bytes_write.sum": ("DRAM write MB", "sum"),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("DRAM % of peak", "max"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("achieved occupancy %", "max"),
    "launch__registers_per_thread": ("registers/thread", "max"),
}
SCALE = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "nsecond": 1e-3, "msecond": 1e3, "byte": 1e-6, "Kbyte": 1e-3,
         "Mbyte": 1.0, "Gbyte": 1e3, "KB": 1e-3, "MB": 1.0, "GB": 1e3}


def unavailable() -> str | None:
    """Why ncu cannot run here, in one sentence, or None."""
    if shutil.which("ncu") is None:
        return "profile runs Nsight Compute, and ncu is not on PATH here."
    if not harness.gpu_available():
        return "profile runs Nsight Compute on the GPU, and no CUDA GPU is visible here."
    return None


def ncu_command(target: list[str], csv_out: Path) -> list[str]:
    return ["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", f"{RANGE}/", "--csv", "--page", "raw",
            "--metrics", ",".join(METRICS), "--log-file", str(csv_out), *target]


def raw_rows(text: str) -> tuple[list, list, list]:
    """ncu's raw page -> (metric names, their units, one row per kernel in launch order)."""
    rows = list(csv.reader(io.StringIO(text[text.index('"ID"'):] if '"ID"' in text else text)))
    if len(rows) < 3:
        raise ValueError("ncu profiled no kernel in the measured range")
    return rows[0], rows[1], rows[2:]


def parse_raw_csv(text: str) -> dict:
    """ncu's raw page (a header row, a units row, one row per kernel) -> {column: value over the kernels}."""
    header, units, kernels = raw_rows(text)
    found = {}
    for metric, (column, combine) in METRICS.items():
        if metric not in header:
            continue
        i = header.index(metric)
        scale = SCALE.get(units[i], 1.0) if column != "registers/thread" and "%" not in column else 1.0
        values = [float(row[i].replace(",", "")) * scale for row in kernels if row[i].strip()]
        found[column] = sum(values) if combine == "sum" else max(values)
    found["kernels"] = len(kernels)
    return found


def format_side_by_side(results: dict) -> str:
    names = list(results)
    columns = [c for c, _ in METRICS.values()] + ["kernels"]
    lines = [f"{'':<24}" + "".join(f"{n:>24}" for n in names)]
    for column in columns:
        cells = "".join(f"{results[n].get(column, float('nan')):>24.2f}" for n in names)
        lines.append(f"{column:<24}{cells}")
    return "\n".join(lines)


def fastest_copy(args: dict) -> tuple[int, int]:
    """The Triton copy tile that is fastest on this case, under the leaderboard's timing."""
    import reference
    from scripts import baselines

    data = reference.generate_input(**args)
    timings = {tile: harness.time_protocol(lambda: baselines.triton_copy(*tile)(data), 20).mean
               for tile in baselines.COPY_TILES}
    return min(timings, key=timings.get)


def profile_side_by_side(file: Path, args: dict, out_dir: Path, echo=print) -> str:
    from scripts import baselines

    out_dir.mkdir(parents=True, exist_ok=True)
    block, warps = fastest_copy(args)
    shape = [str(args[k]) for k in harness.REQUIRED_FIELDS]
    label = harness.case_label(args)
    targets = {Path(file).stem: [str(Path(file).resolve())],
               baselines.copy_name(block, warps): [f"copy:{block}:{warps}"]}
    results = {}
    for name, spec in targets.items():
        csv_out = out_dir / f"{name}_{label}.csv"
        echo(f"ncu: {name} on {label}")
        proc = subprocess.run(ncu_command([sys.executable, "-m", "scripts.ncu_profile", *spec, *shape], csv_out),
                              cwd=ROOT, capture_output=True, text=True)
        text = csv_out.read_text() if csv_out.exists() else ""
        if '"ID"' not in text:  # some ncu releases print the page on stdout despite --log-file
            text = proc.stdout
            csv_out.write_text(text)
        if proc.returncode != 0 or '"ID"' not in text:
            raise RuntimeError(f"ncu failed on {name} (exit {proc.returncode}): "
                               f"{(proc.stderr.strip() or text.strip())[-500:]}")
        results[name] = parse_raw_csv(text)
    table = format_side_by_side(results)
    (out_dir / f"profile_{label}.txt").write_text(table + "\n")
    return table


# The sections whose metrics the tile table reads: ncu's own names for what a kernel pays over a copy.
TILE_SECTIONS = ["SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "MemoryWorkloadAnalysis",
                 "InstructionStats"]
TILE_COLUMNS = {  # column -> ncu metric (raw page)
    "us": "gpu__time_duration.sum",
    "DRAM %": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "regs": "launch__registers_per_thread",
    "theor. occ %": "sm__maximum_warps_per_active_cycle_pct",
    "achieved occ %": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "inst/output": "smsp__inst_executed.sum",  # warp instructions x 32 / outputs: a thread's per output
    "L1 hit %": "l1tex__t_sector_hit_rate.pct",
    "L2 hit %": "lts__t_sector_hit_rate.pct",
    "LSU pipe %": "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed",
}
STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"


def tile_specs(files: list, tiles: list[tuple[int, int]]) -> list[str]:
    """One target spec a kernel launch: the copy and each file, at each tile, in launch order. A file
    named 'PATH+BUILD' launches with that build as its config's third entry (submission.py+cuda)."""
    def spec(file, block, warps):
        path, _, build = str(file).partition("+")
        return f"{Path(path).resolve()}@{block}:{warps}" + (f":{build}" if build else "")
    return [s for block, warps in tiles for s in [f"copy:{block}:{warps}"] + [spec(f, block, warps) for f in files]]


def tile_row(header: list, units: list, kernel: list, outputs: int) -> dict:
    """One kernel's row of the tile table: the TILE_COLUMNS and every stall reason, cycles per issue."""
    row = {}
    for column, metric in TILE_COLUMNS.items():
        if metric in header and kernel[header.index(metric)].strip():
            i = header.index(metric)
            value = float(kernel[i].replace(",", ""))
            value *= SCALE.get(units[i], 1.0) if column == "us" else 1.0
            row[column] = value * 32 / outputs if column == "inst/output" else value
    for i, metric in enumerate(header):
        if metric.startswith(STALL_PREFIX) and metric.endswith(STALL_SUFFIX) and kernel[i].strip():
            row["stall " + metric[len(STALL_PREFIX):-len(STALL_SUFFIX)]] = float(kernel[i].replace(",", ""))
    return row


def profile_tiles(files: list[Path], args: dict, tiles: list[tuple[int, int]], out_dir: Path, echo=print) -> list[dict]:
    """Each file's kernel and a Triton copy at each tile on one case, in one ncu process (cold L2 each
    launch, ncu's clocks left alone): one record per launch, the spec, the tile, and tile_row's columns."""
    out_dir.mkdir(parents=True, exist_ok=True)
    shape = [str(args[k]) for k in harness.REQUIRED_FIELDS]
    specs = tile_specs(files, tiles)
    csv_out = out_dir / f"tiles_{harness.case_label(args)}_{len(specs)}_launches.csv"  # one file a run: two runs of a case keep both
    command = ["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", f"{RANGE}/", "--csv", "--page", "raw",
               *[a for section in TILE_SECTIONS for a in ("--section", section)], "--log-file", str(csv_out),
               sys.executable, "-m", "scripts.ncu_profile", ",".join(specs), *shape]
    echo(f"ncu: {len(specs)} launches on {harness.case_label(args)}")
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    text = csv_out.read_text() if csv_out.exists() else proc.stdout
    if proc.returncode != 0 or '"ID"' not in text:
        raise RuntimeError(f"ncu failed (exit {proc.returncode}): {(proc.stderr.strip() or text.strip())[-500:]}")
    return tile_records(text, files, args, tiles)


def tile_records(text: str, files: list[Path], args: dict, tiles: list[tuple[int, int]]) -> list[dict]:
    """ncu's raw page of one profile_tiles run -> its records (also to re-read a recorded CSV)."""
    specs = tile_specs(files, tiles)
    header, units, kernels = raw_rows(text)
    if len(kernels) != len(specs):
        raise RuntimeError(f"ncu profiled {len(kernels)} kernels for {len(specs)} launches")
    outputs = args["B"] * args["D"] * args["S"]
    return [{"spec": spec.split("/")[-1], "tile": f"{block}/{warps}", **tile_row(header, units, kernel, outputs)}
            for spec, kernel, (block, warps) in zip(specs, kernels, [t for t in tiles for _ in range(len(files) + 1)])]


def format_tiles(records: list[dict]) -> str:
    columns = list(TILE_COLUMNS) + sorted({c for r in records for c in r if c.startswith("stall ")},
                                          key=lambda c: -max(r.get(c, 0) for r in records))[:6]
    lines = [f"{'launch':<34}" + "".join(f"{c[:14]:>15}" for c in columns)]
    for r in records:
        lines.append(f"{r['spec'][:33]:<34}" + "".join(f"{r.get(c, float('nan')):>15.2f}" for c in columns))
    return "\n".join(lines)


def launcher(spec: str):
    """A target spec -> a function data -> None that makes exactly one kernel launch."""
    import torch

    from scripts import baselines, registry

    if spec.startswith("copy:"):
        copy = baselines.triton_copy(*map(int, spec.split(":")[1:]))
        return lambda data: copy(data)
    if "@" in spec:
        path, config = spec.rsplit("@", 1)
        module = registry.load_kernel_file(Path(path), f"ncu_{Path(path).stem}")
        block, warps, *build = config.split(":")
        config = (int(block), int(warps), *build)
        outs = {}  # one output buffer a spec, made before the measured range

        def run(data):
            module.launch(*data, outs.setdefault("out", torch.empty_like(data[0])), *config)
        return run
    return registry.load_kernel_file(Path(spec), "submission").custom_kernel


def target(specs: str, B: int, D: int, S: int, W: int, seed: int) -> None:
    """The program ncu runs: warm every spec up, then each once inside the measured NVTX range, in order
    (ncu's default cache control flushes the caches before each profiled kernel: a cold L2 each)."""
    import torch

    import reference

    data = reference.generate_input(B=B, D=D, S=S, W=W, seed=seed)
    runs = [launcher(spec) for spec in specs.split(",")]
    for run in runs:
        for _ in range(3):
            run(data)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(RANGE)
    for run in runs:
        run(data)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


if __name__ == "__main__":
    target(sys.argv[1], *map(int, sys.argv[2:7]))
