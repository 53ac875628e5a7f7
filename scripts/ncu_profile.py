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


def parse_raw_csv(text: str) -> dict:
    """ncu's raw page (a header row, a units row, one row per kernel) -> {column: value over the kernels}."""
    rows = list(csv.reader(io.StringIO(text[text.index('"ID"'):] if '"ID"' in text else text)))
    if len(rows) < 3:
        raise ValueError("ncu profiled no kernel in the measured range")
    header, units, kernels = rows[0], rows[1], rows[2:]
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
    out_dir.mkdir(parents=True, exist_ok=True)
    block, warps = fastest_copy(args)
    shape = [str(args[k]) for k in ("B", "D", "S", "W", "seed")]
    targets = {Path(file).stem: [str(Path(file).resolve())], f"triton_copy_{block}_{warps}": [f"copy:{block}:{warps}"]}
    results = {}
    for name, spec in targets.items():
        csv_out = out_dir / f"{name}_{'x'.join(shape[:4])}.csv"
        echo(f"ncu: {name} on {'x'.join(shape[:4])}")
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
    (out_dir / f"profile_{'x'.join(shape[:4])}.txt").write_text(table + "\n")
    return table


def target(spec: str, B: int, D: int, S: int, W: int, seed: int) -> None:
    """The program ncu runs: warm up, flush L2, then one call inside the measured NVTX range."""
    import torch

    import reference
    from scripts import baselines

    if spec.startswith("copy:"):
        kernel = baselines.triton_copy(*map(int, spec.split(":")[1:]))
    else:
        kernel = baselines.load_kernel_file(Path(spec), "submission").custom_kernel
    data = reference.generate_input(B=B, D=D, S=S, W=W, seed=seed)
    for _ in range(3):
        kernel(data)
    torch.empty(harness.FLUSH_INT64S, dtype=torch.int64, device="cuda").zero_()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(RANGE)
    kernel(data)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


if __name__ == "__main__":
    target(sys.argv[1], *map(int, sys.argv[2:7]))
