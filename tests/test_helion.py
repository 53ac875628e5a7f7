"""submissions/submission_helion.py under Helion's interpreter (HELION_INTERPRET=1) on the CPU.

Helion's interpreter refuses to run beside Triton's, and this test process runs Triton's, so every
kernel call here happens in a child process with HELION_INTERPRET=1 and no TRITON_INTERPRET.
"""
import importlib.util
import json
import math
import os
import re
import subprocess
import sys

import pytest

import eval as harness
from conftest import HAS_GPU, ROOT, task_shapes
from scripts import configs
from test_submission import RANDOM_SHAPES, TASK_TESTS

HELION_FILE = ROOT / "submissions" / "submission_helion.py"
pytestmark = pytest.mark.skipif(importlib.util.find_spec("helion") is None,
                                reason="helion is not installed (pip install -r requirements-helion.txt)")

CHILD = r"""
import json, sys
import torch
import eval as harness
from scripts.registry import load_kernel_file
module = load_kernel_file(__import__("pathlib").Path(sys.argv[1]), "submission_helion")
device = "cuda" if torch.cuda.is_available() else "cpu"
errors = {}
for B, D, S, W in json.loads(sys.argv[2]):
    gen = torch.Generator().manual_seed(B * 1000 + D * 10 + S)
    x, w, b = torch.randn(B, D, S, generator=gen), torch.randn(D, W, generator=gen), torch.randn(D, generator=gen)
    out = module.custom_kernel((x.to(device), w.to(device), b.to(device))).cpu().double()
    ref = torch.nn.functional.conv1d(torch.nn.functional.pad(x.double(), (W - 1, 0)), w.double().unsqueeze(1),
                                     b.double(), groups=D)
    label = harness.case_label({"B": B, "D": D, "S": S, "W": W})
    errors[label] = (out - ref).abs().max().item() if out.shape == ref.shape else float("inf")
bad = []
for name, data in (("dtype", (torch.zeros(1, 2, 8, dtype=torch.float64), torch.zeros(2, 4), torch.zeros(2))),
                   ("D", (torch.zeros(1, 2, 8), torch.zeros(3, 4), torch.zeros(2))),
                   ("W", (torch.zeros(1, 2, 8), torch.zeros(2, 0), torch.zeros(2)))):
    try:
        module.custom_kernel(data)
        bad.append(f"{name}: accepted")
    except ValueError as error:
        bad.append(f"{name}: {error}")
print(json.dumps({"errors": errors, "bad": bad}))
"""

# The Triton kernel's shapes, plus rows of a length that is a multiple of 4 for the grouped path.
SHAPES = TASK_TESTS + RANDOM_SHAPES + [(2, 3, 40, 4), (1, 2, 48, 16), (1, 1, 2052, 4)]


def child_env():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if not HAS_GPU:
        env["HELION_INTERPRET"] = "1"
    env["HELION_DISALLOW_AUTOTUNING"] = "1"  # as the runner sets it: nothing may autotune
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))  # keep where helion may live
    return env


def test_helion_kernel_is_right_on_varied_shapes_and_refuses_bad_input():
    proc = subprocess.run([sys.executable, "-c", CHILD, str(HELION_FILE), json.dumps(SHAPES)],
                          env=child_env(), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(result["errors"]) == {harness.case_label(dict(zip("BDSW", shape))) for shape in SHAPES}
    for shape, error in result["errors"].items():
        assert error < 1e-4, (shape, error)
    assert result["bad"][0] == "dtype: x must be float32, got torch.float64"
    assert result["bad"][1] == "D: weight is [3, W] but x has D = 2 channels"
    assert result["bad"][2] == "W: weight width W must be >= 1, got 0"


def test_every_task_shape_has_a_hard_coded_config_and_nothing_autotunes():
    text = HELION_FILE.read_text()
    name, table = configs.read_table(text)
    assert name == "SHAPE_CONFIGS" and set(table) == set(task_shapes("tests") + task_shapes("benchmarks"))
    assert all(config.get("block_sizes") for config in table.values())
    calls = re.findall(r"helion\.kernel\(([^)]*)\)", text)
    assert calls and all("config=" in call for call in calls)
    assert "autotune" not in text.split("def conv1d_groups")[1]


def test_the_input_checks_are_the_triton_submissions_word_for_word():
    """Each submission must be self-contained, so validate is written twice: keep the copies equal."""
    import ast

    def validate_source(path):
        text = path.read_text()
        node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "validate")
        return ast.get_source_segment(text, node)

    helion_copy = validate_source(HELION_FILE).replace("HELION_INTERPRET", "TRITON_INTERPRET")
    assert helion_copy == validate_source(ROOT / "submission.py")


def test_the_autotuner_ranks_usable_configs_by_the_given_timer_and_keeps_failures_out():
    from scripts import helion_autotune

    class FakeSearch:  # the two attributes of Helion's BaseSearch that rank_by relies on
        args = ("x", "w", "b")

        def benchmark_function(self, config, fn):
            return float("inf") if config == "broken" else 0.5

    timed = []
    search = helion_autotune.rank_by(FakeSearch(), lambda call: timed.append(call()) or 0.007)
    assert search.benchmark_function("good", lambda *args: args) == 0.007
    assert timed == [("x", "w", "b")]  # the timer ran the compiled config on the search's own inputs
    assert search.benchmark_function("broken", lambda *args: args) == float("inf")
    assert len(timed) == 1  # a config Helion rejected is never timed, never ranked


def test_helion_tune_writes_each_pick_into_the_table_and_configs_json(tmp_path, monkeypatch):
    """The search itself needs a GPU; its bookkeeping does not: each shape's pick lands in the file's
    table (and nowhere else in it) and in configs.json, shape by shape."""
    from scripts import helion_autotune

    copy = tmp_path / "submission_helion.py"
    copy.write_text(HELION_FILE.read_text())
    monkeypatch.setattr(helion_autotune.harness, "load_submission", lambda path, name: object())
    picks = iter([{"block_sizes": [2, 64], "num_warps": 4}, {"block_sizes": [1, 128], "num_warps": 1}])
    given = []
    monkeypatch.setattr(helion_autotune, "autotune_shape", lambda module, args, effort, timing, out, current:
                        given.append(current) or {"config": next(picks), "seconds": 1.0})
    shapes = [dict(zip("BDSW", shape)) for shape in task_shapes("benchmarks")[:2]]
    said = []
    found = helion_autotune.autotune(shapes, "quick", "runner", tmp_path / "out", write=True, echo=said.append,
                                     path=copy)
    assert len(found) == 2 and len(said) == 2
    file_table = configs.read_table(HELION_FILE.read_text())[1]
    assert given == [file_table[shape] for shape in task_shapes("benchmarks")[:2]]  # each search is handed the file's config
    table = configs.read_table(copy.read_text())[1]
    assert table[task_shapes("benchmarks")[0]] == {"block_sizes": [2, 64], "num_warps": 4}
    assert table[task_shapes("benchmarks")[2]] == configs.read_table(HELION_FILE.read_text())[1][task_shapes("benchmarks")[2]]
    recorded = json.loads((tmp_path / "out" / "configs.json").read_text())
    assert set(recorded["configs"]) == {harness.case_label(dict(zip("BDSW", s))) for s in task_shapes("benchmarks")[:2]}
    assert copy.read_text().split(configs.BEGIN)[0] == HELION_FILE.read_text().split(configs.BEGIN)[0]


def test_helion_tune_dry_run_writes_nothing(tmp_path, monkeypatch):
    """Driven through the CLI: the picks are printed, Helion's logs go to a folder that is removed,
    and neither the Helion submission nor results/helion/ changes."""
    from click.testing import CliRunner

    from scripts import cli, helion_autotune

    logs = []

    def search(module, args, effort, timing, out_dir, current):
        (out_dir / f"search_{harness.case_label(args)}").write_text("Helion's log")  # what Helion's search leaves
        logs.append(out_dir)
        return {"config": {"block_sizes": [2, 64], "num_warps": 4}, "seconds": 1.0}

    monkeypatch.setattr(cli.harness, "gpu_available", lambda: True)
    monkeypatch.setattr(helion_autotune.harness, "load_submission", lambda path, name: object())
    monkeypatch.setattr(helion_autotune, "autotune_shape", search)
    before = HELION_FILE.read_bytes()
    results = ROOT / "results" / "helion"
    listed = sorted(results.rglob("*")) if results.exists() else []
    result = CliRunner().invoke(cli.cli, ["helion-tune", "--dry-run", "--tests"])
    assert result.exit_code == 0, result.output
    assert len(logs) == len(task_shapes("benchmarks")) + len(task_shapes("tests")) and "updated" not in result.output
    assert not logs[0].exists()  # the scratch folder is gone
    assert HELION_FILE.read_bytes() == before
    assert (sorted(results.rglob("*")) if results.exists() else []) == listed
    refused = CliRunner().invoke(cli.cli, ["helion-tune", "--dry-run", "--out", str(tmp_path / "o")])
    assert refused.exit_code != 0 and "takes no --out" in refused.output and not (tmp_path / "o").exists()
    refused = CliRunner().invoke(cli.cli, ["helion-tune", "--dry-run", "--effort", "none", "--timing", "helion"])
    assert refused.exit_code != 0 and "takes no --timing helion" in refused.output


@pytest.mark.parametrize("groups, widest", [(16, 16), (128, 128), (300, 512), (512, 512), (1024, 1024), (2048, 1024)])
def test_hand_tiles_fit_the_row_rounded_up_to_a_power_of_two(groups, widest):
    from scripts import helion_autotune

    tiles = helion_autotune.hand_tiles(groups)
    assert tiles and max(tile["block_sizes"][1] for tile in tiles) == widest
    assert {tile["block_sizes"][0] for tile in tiles} == {1, 2, 4}  # one-row tiles and the CUDA kernel's multi-row ones
    assert len({str(tile) for tile in tiles}) == len(tiles)  # a narrow row folds the wider tiles into one


@pytest.mark.parametrize("first, count", [(None, 0), ({"block_sizes": [1, 512], "num_warps": 1}, 0),
                                          ({"block_sizes": [8, 8], "num_warps": 2}, 1)])
def test_the_candidates_are_the_first_config_then_every_other_hand_tile(first, count):
    """The file's config (or the search's pick) goes first; where it is a hand tile it is timed once, where
    it is not it adds one; with none the hand tiles alone."""
    from scripts import helion_autotune

    tiles = helion_autotune.hand_tiles(512)
    listed = helion_autotune.candidates(first, 512)
    assert listed[0] == (first or tiles[0]) and len(listed) == len(tiles) + count
    assert all(tile in listed for tile in tiles)


def test_the_timed_line_lists_every_config_fastest_first_and_names_failures():
    from scripts import helion_autotune

    found = {"timed": [{"config": {"block_sizes": [1, 512], "num_warps": 1}, "ms": 0.0125},
                       {"config": {"block_sizes": [2, 512], "num_warps": 2}, "ms": None},
                       {"config": {"block_sizes": [2, 256], "num_warps": 1}, "ms": 0.0121}]}
    assert helion_autotune.timed_line(found) == "  timed: 2x256/1 12.10 us, 1x512/1 12.50 us, 2x512/2 failed"


def test_the_fastest_config_that_builds_and_checks_is_kept():
    """The search's pick is kept only where the hand tiles do not beat it by the margin; a config that fails to build or to
    match is timed as inf and never chosen, however fast its timer would say it is."""
    from scripts import helion_autotune

    speed = {"pick": 2.0, "broken": 0.1, "wrong": 0.2, "row": 1.5, "slow": 3.0}

    def build(config):
        if config["name"] == "broken":
            raise RuntimeError("does not compile")
        return lambda: config["name"]

    best, timed = helion_autotune.fastest_config(
        [{"name": name} for name in speed], build, check=lambda out: out != "wrong", timer=lambda call: speed[call()])
    assert best == {"name": "row"}
    assert [ms for _, ms in timed] == [2.0, math.inf, math.inf, 1.5, 3.0]
    alone, _ = helion_autotune.fastest_config([{"name": "pick"}], build, check=lambda out: True,
                                              timer=lambda call: speed[call()])
    assert alone == {"name": "pick"}


def test_where_nothing_builds_or_matches_no_config_is_chosen():
    from scripts import helion_autotune

    best, timed = helion_autotune.fastest_config([{"name": "a"}, {"name": "b"}], lambda config: lambda: 0,
                                                 check=lambda out: False, timer=lambda call: 1.0)
    assert best is None and [ms for _, ms in timed] == [math.inf, math.inf]


def test_helion_tune_keeps_the_files_entry_where_no_config_built(tmp_path, monkeypatch):
    from scripts import helion_autotune

    copy = tmp_path / "submission_helion.py"
    copy.write_text(HELION_FILE.read_text())
    monkeypatch.setattr(helion_autotune.harness, "load_submission", lambda path, name: object())
    monkeypatch.setattr(helion_autotune, "autotune_shape", lambda module, args, effort, timing, out, current:
                        {"config": None, "seconds": 1.0, "timed": [{"config": current, "ms": None}]})
    said = []
    helion_autotune.autotune([dict(zip("BDSW", task_shapes("benchmarks")[0]))], "none", "runner", tmp_path / "out",
                             write=True, echo=said.append, path=copy)
    assert copy.read_text() == HELION_FILE.read_text()
    assert any("the file keeps its entry" in line for line in said) and any("failed" in line for line in said)
    with pytest.raises(ValueError, match="runner's timing"):
        helion_autotune.autotune([], "none", "helion", None, write=False, path=copy)


@pytest.mark.parametrize("tile_ms, kept", [(0.995, "pick"), (0.989, "tile")])
def test_the_first_candidate_stays_unless_another_beats_it_by_the_margin(tile_ms, kept):
    """A hand tile 0.5% ahead in one timing is noise (run54): the first candidate, the search's pick or the
    file's config, stays; 1.1% ahead, past KEEP_MARGIN (1%), the tile is taken."""
    from scripts import helion_autotune

    speed = {"pick": 1.0, "tile": tile_ms, "slow": 1.2}
    best, _ = helion_autotune.fastest_config([{"name": name} for name in speed], lambda config: lambda: config["name"],
                                             check=lambda out: True, timer=lambda call: speed[call()])
    assert best == {"name": kept}


CODEGEN_CHILD = r"""
import sys
import torch, helion
import eval as harness
from variants import _helion_tile
module = harness.load_submission(_helion_tile.HELION_SUBMISSION, "submission_helion")
bound = helion.kernel(module.conv1d_groups, static_shapes=True).bind(
    (torch.randn(64, 512, 4), torch.randn(64, 4), torch.randn(64)))
policies = [""] * _helion_tile.LOADS_AT_W4
policies[_helion_tile.X_GROUP], policies[_helion_tile.X_GROUP_BEFORE] = "first", "last"
code = bound.to_triton_code(helion.Config(block_sizes=[1, 512], num_warps=1, load_eviction_policies=policies))
print("\n".join(line.strip() for line in code.splitlines() if "tl.load(" in line))
"""


def test_the_helion_variants_load_numbering_is_helions():
    """variants/_helion_tile.py names x's two loads by their place in Helion's list of loads; Helion's own
    generated code (no GPU needed) must put the policies there, and the list must be that long."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "HELION_INTERPRET")}
    proc = subprocess.run([sys.executable, "-c", CODEGEN_CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loads = proc.stdout.splitlines()
    from variants import _helion_tile
    assert len(loads) == _helion_tile.LOADS_AT_W4, loads
    hinted = [(index, line) for index, line in enumerate(loads) if "eviction_policy" in line]
    assert [(index, line.split("(")[1].split(" ")[0], line.split("eviction_policy=")[1]) for index, line in hinted] == [
        (_helion_tile.X_GROUP, "x4", "'evict_first')"), (_helion_tile.X_GROUP_BEFORE, "x4", "'evict_last')")], hinted
