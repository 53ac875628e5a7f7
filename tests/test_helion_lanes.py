"""The Helion submission's lane-shuffle kernel (conv1d_lanes): its answers at every halo build, in a child process
(under Helion's interpreter on the CPU, on the GPU where there is one); the layout its shuffles rely on, read from
builds for sm_90 and sm_100 (no GPU needed: Triton's wheel carries ptxas and cuobjdump); and the inputs it leaves to
conv1d_groups."""
import functools
import json
import os
import re
import subprocess
import sys

import pytest
import torch

import eval as harness
from conftest import HAS_GPU, ROOT
from test_helion import HELION_FILE, child_env

pytest.importorskip("helion", reason="helion is not installed (pip install -r requirements-helion.txt)")

BUILD = r"""
import json, os, sys, tempfile
import helion, torch
import eval as harness
import offline_build
lanes = harness.load_submission("submissions/submission_helion.py", "helion_lanes_build")
V, NW, halo, arch = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
B, D, S = 1, 4, 128 * V * 2  # two spans a row, so the halo of a row's second span is a real load
config = helion.Config(**lanes.lanes_kernel_config(NW, "first"))  # the eviction policy the table ships
source = helion.kernel(lanes.conv1d_lanes, config=config, static_shapes=True).bind(
    (torch.randn(B * D * S // 4, 4), torch.randn(D, 4), torch.randn(D), S // 4, V, halo, False)).to_triton_code(config)
path = os.path.join(tempfile.mkdtemp(), "generated.py")
with open(path, "w") as f:
    f.write(source)
module = harness.load_submission(path, "generated")
fn = next(getattr(module, name) for name in dir(module) if name.startswith("_helion_"))
aligned = {(i,): [["tt.divisibility", 16]] for i in range(len(fn.arg_names))}
print(json.dumps(offline_build.read(fn, dict.fromkeys(fn.arg_names, "*fp32"), {}, aligned, NW, arch)))
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
    return harness.load_submission(HELION_FILE, "helion_lanes_under_test")


ANSWERS = r"""
import json, sys
import torch
import eval as harness
module = harness.load_submission(sys.argv[1], "helion_lanes_answers")
device = "cuda" if torch.cuda.is_available() else "cpu"
served = sys.argv[3] == "served"


def not_this_kernel(*args):
    raise AssertionError("a case meant for conv1d_lanes reached another kernel")


if served:  # so an answer can only be conv1d_lanes'
    module.conv1d_groups = module.conv1d_shifted = not_this_kernel
records = []
for B, D, S, V, NW, evict, halo in json.loads(sys.argv[2]):
    module.LANES_CONFIGS[(B, D, S, 4)] = (V, NW, evict, halo)
    gen = torch.Generator().manual_seed(B * 1000 + D * 10 + S + V)
    x, w, b = torch.randn(B, D, S, generator=gen), torch.randn(D, 4, generator=gen), torch.randn(D, generator=gen)
    data = (x.to(device), w.to(device), b.to(device))
    out = module.custom_kernel(data).cpu().double()
    ref = torch.nn.functional.conv1d(torch.nn.functional.pad(x.double(), (3, 0)), w.double().unsqueeze(1),
                                     b.double(), groups=D)
    records.append({"case": [B, D, S, V, NW, evict, halo], "lanes": module.lanes_config(data[0], data[1]) is not None,
                    "error": (out - ref).abs().max().item() if out.shape == ref.shape else float("inf")})
print(json.dumps({"records": records}))
"""
# (B, D, S, V, NW, evict, halo): one span a row and several, rows that cross a program, every halo build; then the
# shipped table's own entries at their shapes.
LANES_CASES = [(1, 2, 128, 1, 1, "", "shift"), (2, 3, 256, 1, 2, "first", "shift"), (1, 2, 1024, 4, 1, "", "shift"),
               (3, 2, 1024, 8, 2, "first", "shift"), (1, 1, 4096, 16, 2, "first", "shift"),
               (2, 2, 512, 2, 2, "first", "each"), (1, 3, 1024, 4, 4, "", "each-after")]


def test_the_lane_kernel_matches_the_reference_at_every_halo_build_and_every_shipped_config():
    """Where conv1d_lanes serves (Helion's interpreter, or a GPU under the Triton and Helion releases read), the
    child swaps the other kernels for one that raises, so each answer is conv1d_lanes'."""
    lanes = lanes_module()
    cases = LANES_CASES + [(*shape[:3], *config) for shape, config in lanes.LANES_CONFIGS.items()]
    import triton

    served = not HAS_GPU or (triton.__version__.startswith(lanes.LANE_MAJOR_TRITONS)
                             and lanes.helion_release().startswith(lanes.LANE_MAJOR_HELIONS))
    done = subprocess.run([sys.executable, "-c", ANSWERS, str(HELION_FILE), json.dumps(cases),
                           "served" if served else "not served"], cwd=ROOT, env=child_env(), capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert [record["case"] for record in result["records"]] == [list(case) for case in cases]
    for record in result["records"]:
        assert record["lanes"] == served, record
        assert record["error"] < 1e-4, record


@pytest.mark.parametrize("V, NW, halo, arch", [(16, 2, "shift", 90), (4, 8, "shift", 90), (1, 2, "shift", 90),
                                               (8, 2, "each", 90), (2, 4, "each-after", 90),
                                               (16, 2, "shift", 100), (4, 8, "shift", 100)], ids=lambda v: str(v))
def test_the_gpu_build_puts_the_lanes_on_T_and_every_load_before_the_shuffles(V, NW, halo, arch):
    """sm_90 for the H100 and H200 we measure on, sm_100 for the B200 the leaderboard runs on."""
    import triton

    if not triton.__version__.startswith(lanes_module().LANE_MAJOR_TRITONS):
        pytest.skip(f"Triton {triton.__version__}: the kernel runs only under the releases whose layout was read "
                    "(LANE_MAJOR_TRITONS; the runner's is 3.6), and this one takes conv1d_groups")
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "HELION_INTERPRET")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", BUILD, str(V), str(NW), halo, str(arch)], cwd=ROOT, env=env,
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


def test_other_inputs_and_other_tritons_take_conv1d_groups(monkeypatch):
    import triton

    lanes = lanes_module()
    shape, config = next(iter(lanes.LANES_CONFIGS.items()))
    B, D, S, W = shape
    x, weight = torch.empty(B, D, S), torch.empty(D, W)
    monkeypatch.setenv("HELION_INTERPRET", "1")
    assert lanes.lanes_config(x, weight) == config
    assert lanes.lanes_config(torch.empty(B, D, S + 128), weight) is None  # a shape the table does not hold
    assert lanes.lanes_config(x, torch.empty(D, 3)) is None
    unaligned = torch.empty(x.numel() + 1)[1:].view(x.shape)
    assert lanes.lanes_config(unaligned, weight) is None
    monkeypatch.setitem(lanes.LANES_CONFIGS, (1, 2, 384, 4), (4, 1, "", "shift"))
    assert lanes.lanes_config(torch.empty(1, 2, 384), torch.empty(2, 4)) is None  # 384 is no whole span of 512
    monkeypatch.setitem(lanes.LANES_CONFIGS, (1, 2, 384, 3), (1, 1, "", "shift"))
    assert lanes.lanes_config(torch.empty(1, 2, 384), torch.empty(2, 3)) is None  # the taps are spelled for W = 4
    monkeypatch.delenv("HELION_INTERPRET")
    monkeypatch.setattr(lanes, "helion_release", lambda: "0.3.3")
    monkeypatch.setattr(triton, "__version__", "3.7.1")
    assert lanes.lanes_config(x, weight) is None  # 3.7.1 puts the lanes on V
    monkeypatch.setattr(triton, "__version__", "3.6.0")
    assert lanes.lanes_config(x, weight) == config
    monkeypatch.setattr(lanes, "helion_release", lambda: "0.4.0")
    assert lanes.lanes_config(x, weight) is None  # code generated by a Helion whose indexing was not read


LOADS_CHILD = r"""
import sys
import torch, helion
import eval as harness
lanes = harness.load_submission(sys.argv[1], "helion_lanes_loads")
config = helion.Config(**lanes.lanes_kernel_config(2, "first"))
S = 128 * 4 * 2
code = helion.kernel(lanes.conv1d_lanes, config=config, static_shapes=True).bind(
    (torch.randn(S, 4), torch.randn(4, 4), torch.randn(4), S // 4, 4, "shift", False)).to_triton_code(config)
print("\n".join(line.strip() for line in code.splitlines() if "tl.load(" in line))
"""


def test_the_eviction_policy_lands_on_the_slot_load():
    """LANES_LOADS and the policy's place follow Helion's numbering of the loads, read from its generated code (no
    GPU needed): as many loads as LANES_LOADS, and x's slot load the one evicted first."""
    lanes = lanes_module()
    done = subprocess.run([sys.executable, "-c", LOADS_CHILD, str(HELION_FILE)], cwd=ROOT,
                          env={**child_env(), "HELION_INTERPRET": "0"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loads = done.stdout.splitlines()
    assert len(loads) == lanes.LANES_LOADS, loads
    hinted = [line for line in loads if "eviction_policy" in line]
    assert len(hinted) == 1 and hinted[0].startswith("slots = tl.load(x4 + ") and "'evict_first'" in hinted[0], loads


def test_every_benchmark_shape_has_a_lanes_config():
    """The benchmark shapes are the ones the lane kernel was measured on; a new benchmark shape needs its own."""
    from conftest import task_shapes

    lanes = lanes_module()
    assert set(lanes.LANES_CONFIGS) == set(task_shapes("benchmarks"))
    for (B, D, S, W), (V, NW, evict, halo) in lanes.LANES_CONFIGS.items():
        assert W == 4 and S % (128 * V) == 0 and NW in (1, 2, 4, 8) and evict in ("", "first", "last")
        assert halo in lanes.HALOS
