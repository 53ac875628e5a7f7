"""variants/helion_lanes.py: the layout its shuffles rely on, read from a build for sm_90 (no GPU needed: Triton's
wheel carries ptxas and cuobjdump), and the inputs it leaves to the Helion submission. Its answers under Helion's
interpreter are checked with every kernel file's in tests/test_kernel_files.py."""
import functools
import json
import os
import re
import subprocess
import sys

import pytest
import torch

import eval as harness
from conftest import ROOT

pytest.importorskip("helion", reason="helion is not installed (pip install -r requirements-helion.txt)")

BUILD = r"""
import json, os, sys, tempfile
import helion, torch
import eval as harness
import sm90_build
lanes = harness.load_submission("variants/helion_lanes.py", "helion_lanes_build")
V, NW, halo = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
B, D, S = 1, 4, 128 * V * 2  # two spans a row, so the halo of a row's second span is a real load
config = helion.Config(block_sizes=[NW * 32], num_warps=NW)
source = helion.kernel(lanes.conv1d_lanes, config=config, static_shapes=True).bind(
    (torch.randn(B * D * S // 4, 4), torch.randn(D, 4), torch.randn(D), S // 4, V, halo, False)).to_triton_code(config)
path = os.path.join(tempfile.mkdtemp(), "generated.py")
with open(path, "w") as f:
    f.write(source)
module = harness.load_submission(path, "generated")
fn = next(getattr(module, name) for name in dir(module) if name.startswith("_helion_"))
aligned = {(i,): [["tt.divisibility", 16]] for i in range(len(fn.arg_names))}
print(json.dumps(sm90_build.read(fn, dict.fromkeys(fn.arg_names, "*fp32"), {}, aligned, NW)))
"""


def lane_major(layout: str, NW: int) -> bool:
    """Whether a TTGIR layout of a [T, V] tensor puts element t of T in lane t % 32 of warp t // 32: as a blocked
    layout, or as the linear one Triton writes where V is 1 (lane and warp bits all on T)."""
    if layout.startswith("#ttg.blocked"):
        return f"threadsPerWarp = [32, 1], warpsPerCTA = [{NW}, 1]" in layout
    lanes = "lane=" + str([[1 << b, 0] for b in range(5)])
    warps = "warp=" + str([[32 << b, 0] for b in range(NW.bit_length() - 1)])
    compact = layout.replace(" ", "")
    return lanes.replace(" ", "") in compact and warps.replace(" ", "") in compact


@functools.cache
def lanes_module():
    return harness.load_submission(ROOT / "variants" / "helion_lanes.py", "helion_lanes_under_test")


@pytest.mark.parametrize("V, NW, halo", [(16, 2, "shift"), (4, 8, "shift"), (1, 2, "shift"), (8, 2, "each"),
                                         (2, 4, "each-after")], ids=lambda v: str(v))
def test_the_gpu_build_puts_the_lanes_on_T_and_every_load_before_the_shuffles(V, NW, halo):
    import triton

    if not triton.__version__.startswith(lanes_module().LANE_MAJOR_TRITONS):
        pytest.skip(f"Triton {triton.__version__}: the kernel runs only under the releases whose layout was read "
                    "(LANE_MAJOR_TRITONS; the runner's is 3.6), and this one takes the Helion submission's kernel")
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "HELION_INTERPRET")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", BUILD, str(V), str(NW), halo], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    built = json.loads(done.stdout.strip().splitlines()[-1])
    assert built["operands"], "no shuffle in the build"
    for operand in built["operands"]:
        assert operand.startswith(f"tensor<{NW * 32}x{V}xf32"), f"a shuffle operand is {operand}, not [T, V]"
        layout = built["layouts"][re.search(r"(#\w+)>$", operand).group(1)]
        assert lane_major(layout, NW), f"{operand}: {layout} does not put lane l of T in lane l"
    assert built["shfl"] == 3 * V  # columns 1-3 of the group before, a slot each
    assert built["bar"] == 1
    assert built["vector_loads"] >= V
    assert built["vector_loads_before_first_shfl"] == built["vector_loads"]


def test_other_inputs_and_other_tritons_take_the_helion_submissions_kernel(monkeypatch):
    import triton

    lanes = lanes_module()
    weight4, weight3 = torch.randn(2, 4), torch.randn(2, 3)
    V, *rest = lanes.DEFAULT_CONFIG
    x = torch.randn(1, 2, 2 * 128 * V)  # two whole spans a row at the default
    monkeypatch.setenv("HELION_INTERPRET", "1")
    assert lanes.lanes_config(x, weight4) == lanes.DEFAULT_CONFIG
    assert lanes.lanes_config(torch.randn(1, 2, 384), weight4) == (1, *rest)  # V cut to what the row allows
    assert lanes.lanes_config(x, weight3) is None  # the taps are spelled out for W = 4
    assert lanes.lanes_config(torch.randn(1, 2, 96), weight4) is None  # no whole span of 128 outputs
    unaligned = torch.randn(x.numel() + 1)[1:].view(x.shape)
    assert lanes.lanes_config(unaligned, weight4) is None
    monkeypatch.delenv("HELION_INTERPRET")
    monkeypatch.setattr(triton, "__version__", "3.7.1")
    assert lanes.lanes_config(x, weight4) is None  # 3.7.1 puts the lanes on V
    monkeypatch.setattr(triton, "__version__", "3.6.0")
    assert lanes.lanes_config(x, weight4) == lanes.DEFAULT_CONFIG
