"""The Helion submission's lane-shuffle kernel (conv1d_lanes): its answers at every halo build, in a child process
(under Helion's interpreter on the CPU, on the GPU where there is one); the layout its shuffles rely on, read from
builds for sm_90 and sm_100 (no GPU needed: Triton's wheel carries ptxas and cuobjdump); and the inputs it leaves to
conv1d_groups."""
import functools
import json
import re
import subprocess
import sys

import pytest
import torch

import eval as harness
import offline_build
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
    built = offline_build.run(BUILD, V, NW, halo, arch)
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


# ----------------------------------------------------------------------------- helion-tune-lanes (the GPU times; here its bookkeeping)
class FakeLanesFile:
    """The Helion file's lane seam (LANES_CONFIGS, lanes_config, custom_kernel) without Helion: custom_kernel
    answers with the reference, wrongly at `wrong`, and says which entry it ran at."""

    def __init__(self, served=True, wrong=None):
        self.LANES_CONFIGS, self.served, self.wrong, self.ran = {}, served, wrong, []

    def lanes_config(self, x, weight):
        return self.LANES_CONFIGS.get((*x.shape, weight.shape[1])) if self.served else None

    def custom_kernel(self, data):
        import reference

        entry = self.LANES_CONFIGS[(*data[0].shape, data[1].shape[1])]
        self.ran.append(entry)
        out = reference.ref_kernel(data)
        return out + 1 if entry == self.wrong else out


def test_lanes_candidates_start_with_the_files_entry_and_fit_the_row():
    from scripts import helion_autotune

    current = (4, 8, "first", "shift")
    listed = helion_autotune.lanes_candidates(current, 1024)
    assert listed[0] == current and listed.count(current) == 1
    assert all(1024 % (128 * V) == 0 and halo in lanes_module().HALOS for V, _, _, halo in listed)
    assert {V for V, *_ in listed} == {4, 8}  # V = 16 needs rows of 2048
    assert (16, 2, "first", "shift") in helion_autotune.lanes_candidates(None, 2048)


def test_lanes_shape_runs_each_candidate_through_custom_kernel_and_keeps_the_fastest_that_matches(monkeypatch):
    from scripts import helion_autotune

    args = {"B": 1, "D": 2, "S": 1024, "W": 4, "seed": 5}
    current = (4, 8, "first", "shift")
    fastest, wrong = (8, 2, "first", "shift"), (8, 1, "first", "shift")
    module = FakeLanesFile(wrong=wrong)
    times = {fastest: 0.5, wrong: 0.1}  # the wrong one would be fastest: it must not be kept
    monkeypatch.setattr(helion_autotune, "runner_ms", lambda call: times.get(module.ran[-1], 1.0))
    found = helion_autotune.lanes_shape(module, args, current)
    assert found["config"] == fastest and found["file_config"] == current
    assert [entry["config"] for entry in found["timed"]] == helion_autotune.lanes_candidates(current, 1024)
    assert next(entry["ms"] for entry in found["timed"] if entry["config"] == wrong) is None
    assert module.LANES_CONFIGS == {(1, 2, 1024, 4): current}  # the file's table as it was
    times[current] = 0.502  # within KEEP_MARGIN of the fastest: the file's entry stays
    assert helion_autotune.lanes_shape(module, args, current)["config"] == current


def test_lanes_shape_refuses_where_the_lane_kernel_would_not_run():
    from scripts import helion_autotune

    module = FakeLanesFile(served=False)
    with pytest.raises(helion_autotune.LanesNotServed, match=r"conv1d_lanes does not run on 1x2x1024x4 here \(Triton"):
        helion_autotune.lanes_shape(module, {"B": 1, "D": 2, "S": 1024, "W": 4, "seed": 5}, None)
    assert module.ran == [] and module.LANES_CONFIGS == {}  # nothing timed, the table as it was


def test_helion_tune_lanes_writes_each_pick_into_the_lane_table_only(tmp_path, monkeypatch):
    from scripts import configs, helion_autotune
    from conftest import task_shapes

    copy = tmp_path / "submission_helion.py"
    copy.write_text(HELION_FILE.read_text())
    shipped = configs.read_table(HELION_FILE.read_text(), configs.LANES)[1]
    first, second = task_shapes("benchmarks")[:2]
    picks = iter([(8, 4, "", "shift"), None])
    given = []
    monkeypatch.setattr(helion_autotune, "lanes_shape", lambda module, args, current: given.append(current) or {
        "config": next(picks), "file_config": current, "seconds": 1.0, "timed": []})
    said = []
    shapes = [dict(zip("BDSW", shape)) for shape in (first, second)]
    helion_autotune.tune_lanes(shapes, tmp_path / "out", write=True, echo=said.append, path=copy)
    assert given == [shipped[first], shipped[second]]  # each shape starts from the file's entry
    table = configs.read_table(copy.read_text(), configs.LANES)[1]
    assert table == {**shipped, first: (8, 4, "", "shift")}  # the second found nothing: its entry stays
    assert any("file keeps its entry" in line for line in said)
    assert configs.read_table(copy.read_text())[1] == configs.read_table(HELION_FILE.read_text())[1]
    before, after = HELION_FILE.read_text().split(configs.LANES[0]), copy.read_text().split(configs.LANES[0])
    assert before[0] == after[0] and before[1].split(configs.LANES[1])[1] == after[1].split(configs.LANES[1])[1]
    recorded = json.loads((tmp_path / "out" / "lanes_configs.json").read_text())
    assert recorded["configs"][harness.case_label(dict(zip("BDSW", first)))]["config"] == [8, 4, "", "shift"]


def test_helion_tune_lanes_cli_dry_run_writes_nothing_and_a_refusal_is_one_sentence(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from scripts import cli, helion_autotune
    from conftest import task_shapes

    monkeypatch.setattr(cli.harness, "gpu_available", lambda: True)
    monkeypatch.setattr(helion_autotune.harness, "load_submission", lambda path, name: FakeLanesFile())
    monkeypatch.setattr(helion_autotune, "lanes_shape", lambda module, args, current: {
        "config": (8, 2, "first", "shift"), "file_config": current, "seconds": 1.0, "timed": []})
    before = HELION_FILE.read_bytes()
    result = CliRunner().invoke(cli.cli, ["helion-tune-lanes", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output.count("(8, 2, 'first', 'shift')") == len(task_shapes("benchmarks"))
    assert "updated" not in result.output and HELION_FILE.read_bytes() == before
    refused = CliRunner().invoke(cli.cli, ["helion-tune-lanes", "--dry-run", "--out", str(tmp_path / "o")])
    assert refused.exit_code != 0 and "takes no --out" in refused.output and not (tmp_path / "o").exists()

    def not_served(module, args, current):
        raise helion_autotune.LanesNotServed("conv1d_lanes does not run on 1x1536x2048x4 here (Triton 3.7.1)")

    monkeypatch.setattr(helion_autotune, "lanes_shape", not_served)
    refused = CliRunner().invoke(cli.cli, ["helion-tune-lanes", "--dry-run"])
    assert refused.exit_code == 1 and refused.output.strip() == \
        "Error: conv1d_lanes does not run on 1x1536x2048x4 here (Triton 3.7.1)"
