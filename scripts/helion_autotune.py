"""Find configs for the Helion submission with Helion's own autotuner, on the GPU at hand.

    python scripts/helion_autotune.py [--effort quick|full] [--tests] [--out results/helion]

For every benchmark shape (and, with --tests, every test shape) it autotunes the grouped kernel of
submissions/submission_helion.py on that shape's input, then writes the winners to OUT/configs.json
and Helion's search log beside it. Paste the winners into the file's SHAPE_CONFIGS: the runner
forbids autotuning, so they must be hard-coded.
"""
import argparse
import importlib.metadata
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--effort", default="quick", choices=("quick", "full"))
    parser.add_argument("--tests", action="store_true", help="also tune the test shapes")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "helion")
    parser.add_argument("--write", action="store_true", help="write the winners into the submission's SHAPE_CONFIGS")
    opts = parser.parse_args(argv)

    import helion
    import torch

    import eval as harness
    import reference
    from scripts.baselines import load_kernel_file

    module = load_kernel_file(ROOT / "submissions" / "submission_helion.py", "submission_helion")
    opts.out.mkdir(parents=True, exist_ok=True)
    shapes = [c.args for c in harness.cases_from_task(ROOT, "benchmarks")]
    if opts.tests:
        shapes += [c.args for c in harness.cases_from_task(ROOT, "tests")]
    found = {}
    for args in shapes:
        B, D, S, W = args["B"], args["D"], args["S"], args["W"]
        x, weight, bias = reference.generate_input(**args)
        kernel = helion.kernel(module.conv1d_groups, static_shapes=True, autotune_effort=opts.effort,
                               autotune_log=str(opts.out / f"search_{B}x{D}x{S}x{W}"))
        start = time.time()
        config = kernel.bind((x.view(B * D, S // 4, 4), weight, bias)).autotune(
            (x.view(B * D, S // 4, 4), weight, bias), force=True)
        found[f"{B},{D},{S},{W}"] = {"config": dict(config), "seconds": round(time.time() - start, 1)}
        print(f"({B}, {D}, {S}, {W}): {dict(config)}  [{found[f'{B},{D},{S},{W}']['seconds']} s]", flush=True)
        (opts.out / "configs.json").write_text(json.dumps(
            {"device": torch.cuda.get_device_name(), "helion": importlib.metadata.version("helion"), "effort": opts.effort,
             "configs": found}, indent=2))
        if opts.write:  # shape by shape, so a search cut short still leaves what it found
            path = ROOT / "submissions" / "submission_helion.py"
            key = f"{B},{D},{S},{W}"
            path.write_text(write_configs(path.read_text(), {key: found[key]["config"]}))
    return 0


def write_configs(text: str, configs: dict) -> str:
    """Replace the SHAPE_CONFIGS lines of the shapes in `configs` ('B,D,S,W' -> config dict)."""
    lines = text.split("\n")
    for key, config in configs.items():
        shape = "(" + ", ".join(key.split(",")) + "):"
        body = ", ".join(f"{name}={value!r}" for name, value in config.items())
        matches = [i for i, line in enumerate(lines) if line.strip().startswith(shape)]
        if not matches:
            raise ValueError(f"SHAPE_CONFIGS has no line for {shape}")
        lines[matches[0]] = f"    {shape} dict({body}),"
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
