"""Every kernel file we keep, submissions and variants alike, passes the task's tests through eval.py.

The list comes from scripts/registry.py, which finds the variants in variants/ by themselves, so a new
variant is checked the day it is added. Each file runs in its own eval.py process: a Helion file needs
Helion's interpreter on the CPU, which refuses to run beside the Triton interpreter this process holds.
"""
import ast
import importlib.util
import os
import subprocess
import sys

import pytest

import eval as harness
from conftest import ROOT
from scripts import configs, registry

HAS_HELION = importlib.util.find_spec("helion") is not None
KERNEL_FILES = registry.submission_files() + registry.variant_files()


def source(path) -> str:
    """The file's text; bytes that are not UTF-8 read as U+FFFD, so such a file fails its own tests (eval.py
    names the byte) instead of stopping the suite at collection."""
    return path.read_bytes().decode("utf-8", errors="replace")


def uses_helion(path) -> bool:
    return "HELION_INTERPRET" in harness.interpreter_env(source(path))


def test_the_registry_finds_every_variant_and_skips_helpers():
    names = {path.name for path in registry.variant_files()}
    on_disk = {path.name for path in (ROOT / "variants").glob("*.py") if not path.name.startswith("_")}
    assert names == on_disk and "no_search.py" in names and "_helion_tile.py" not in names


def test_every_helion_variant_runs_under_helions_interpreter():
    """A variant built on the Helion submission must say so by importing helion, or eval.py would run
    it under Triton's interpreter on the CPU, where Helion refuses to run."""
    for path in registry.variant_files():
        if "_helion_tile" in source(path):
            assert uses_helion(path), path.name


def test_no_variant_imports_the_tools():
    for path in sorted((ROOT / "variants").glob("*.py")):  # the helpers (_*.py) too
        text = source(path)
        assert "from scripts" not in text and "import scripts" not in text, path.name


@pytest.mark.parametrize("path", KERNEL_FILES, ids=[str(p.relative_to(ROOT)) for p in KERNEL_FILES])
def test_every_kernel_file_passes_the_task_tests(path):
    if uses_helion(path) and not HAS_HELION:
        pytest.skip("helion is not installed (pip install -r requirements-helion.txt)")
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "POPCORN_FD")}
    proc = subprocess.run([sys.executable, "eval.py", "test", "--submission", str(path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("[pass]") == 5


TILED = [path for path in KERNEL_FILES if not uses_helion(path) and "CONFIG_SPACE" in source(path)]
# Rows that do not fill a tile, S not a multiple of any BLOCK (and, for TMA and CUDA, of 4: their fallback),
# D*B odd, W 2 to 13 (a halo of one, two and three groups of 4).
ODD_SHAPES = [(1, 3, 300, 4), (2, 5, 36, 3), (1, 3, 37, 4), (1, 2, 64, 8), (1, 2, 136, 13)]


@pytest.mark.parametrize("path", TILED, ids=[str(p.relative_to(ROOT)) for p in TILED])
def test_every_config_of_a_tiled_kernel_is_right_on_odd_shapes(path):
    """`tiles` and `tune` launch every config in CONFIG_SPACE; each must compute the task, not just the default.
    A file whose launch() serves only some inputs says which with launch_serves(x, weight, out)."""
    import torch

    from conftest import conv_float64, make_inputs

    module = harness.load_submission(path, f"tiled_{path.stem}")
    for B, D, S, W in ODD_SHAPES:
        x, weight, bias = make_inputs(B, D, S, W, seed=S)
        expected = conv_float64(x, weight, bias)
        for config in module.CONFIG_SPACE:
            out = torch.full_like(x, float("nan"))
            if getattr(module, "launch_serves", lambda x, weight, out: True)(x, weight, out):
                module.launch(x, weight, bias, out, *config)
            else:
                out = module.custom_kernel((x, weight, bias))
            torch.testing.assert_close(out.double().cpu(), expected, rtol=1e-4, atol=1e-4,
                                       msg=lambda m: f"{path.name} {config} on {harness.case_label(dict(zip('BDSW', (B, D, S, W))))}: {m}")


@pytest.mark.parametrize("path", KERNEL_FILES, ids=[str(p.relative_to(ROOT)) for p in KERNEL_FILES])
def test_every_kernel_file_is_right_on_an_input_that_is_not_16_byte_aligned(path):
    """x a contiguous view that starts one element into its storage: a kernel that loads 16 bytes at a
    time must notice and take a path that does not assume alignment."""
    if uses_helion(path):
        pytest.skip("the Helion files run under Helion's interpreter in their own process (the test above)")
    import torch

    from conftest import conv_float64, make_inputs

    module = harness.load_submission(path, f"aligned_{path.stem}")
    big, weight, bias = make_inputs(1, 3, 65, 4, seed=7)
    x = big.flatten()[1:193].view(1, 3, 64)  # 195 elements; from the second, 3 rows of 64
    assert x.is_contiguous() and x.data_ptr() % 16
    out = module.custom_kernel((x, weight, bias))
    torch.testing.assert_close(out.double().cpu(), conv_float64(x, weight, bias), rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- the seam (scripts/registry.py)

SEAM = set(registry.SEAM_REQUIRES) | set(registry.SEAM_OFFERS)
TRITON_FILES = [path for path in KERNEL_FILES if not uses_helion(path)]


def parsed(path) -> ast.Module | None:
    """The file's syntax tree, or None where it does not parse: the file's own tests fail and name it, while
    the names gathered across all files at collection skip it, so one broken variant cannot stop the suite."""
    try:
        return ast.parse(source(path), filename=str(path))
    except SyntaxError:  # a NUL byte too, on Python 3.11
        return None


def top_level_names(path) -> set[str]:
    """Every name a file binds at its top level: functions, classes, assignments (tuples unpacked)."""
    names = set()
    tree = parsed(path)
    for node in tree.body if tree else []:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


KERNEL_NAMES = {name for path in KERNEL_FILES for name in top_level_names(path)}
PRIVATE_KERNEL_NAMES = {name for name in KERNEL_NAMES if name.startswith("_") and not name.startswith("__")}
OUTSIDE_KERNEL_FILES = sorted(set(ROOT.glob("*.py")) | set(ROOT.glob("scripts/*.py")) | set(ROOT.glob("tests/*.py"))
                              | set(ROOT.glob("variants/_*.py")) - set(KERNEL_FILES))


@pytest.mark.parametrize("path", KERNEL_FILES, ids=[str(p.relative_to(ROOT)) for p in KERNEL_FILES])
def test_every_kernel_file_defines_what_the_seam_requires(path):
    try:
        ast.parse(source(path), filename=str(path))
    except SyntaxError as error:
        pytest.fail(f"{path.name} does not parse: {error.msg} (line {error.lineno})")
    names = top_level_names(path)
    assert set(registry.SEAM_REQUIRES) <= names, f"{path.name} lacks {set(registry.SEAM_REQUIRES) - names}"
    if not uses_helion(path):  # a Triton or CUDA tile: compare times a copy at it beside the kernel
        assert "tile_for" in names, (f"{path.name} offers no tile_for, so compare gives it no same-tile column "
                                     "(a file that launches no tiled kernel says so with tile_for = None)")


@pytest.mark.parametrize("path", TRITON_FILES, ids=[str(p.relative_to(ROOT)) for p in TRITON_FILES])
def test_what_a_kernel_file_offers_is_what_the_seam_says_and_compare_gets_its_tile(path):
    """A seam name the seam writes as a call is a function; compare's same-tile column reaches tile_for
    through the registry, for variants built on the shared frame too."""
    from scripts import compare as cmp

    impl = registry.kernel_file(path, "variant", f"seam_{path.stem}")
    fn = impl.make()
    for name, meaning in registry.SEAM_OFFERS.items():
        offered = registry.seam_of(fn, name)
        if offered is not None:
            assert callable(offered) == meaning.startswith(f"{name}("), f"{path.name}: {name} is not {meaning}"
    case = harness.parse_label("1x3x40x4")
    ran = cmp.add_same_tile_copies({impl.name: (impl.kind, fn)}, [case])
    if registry.seam_of(fn, "tile_for") is None:  # declared tile-less: no tile, so no copy beside it
        assert impl.name not in ran
        return
    block, warps = ran[impl.name][harness.case_label(case)]
    assert isinstance(block, int) and isinstance(warps, int)


PLAIN_TORCH = """
import torch
import torch.nn.functional as F

tile_for = None  # plain torch: no tile, so compare sets no same-tile copy beside it


def custom_kernel(data):
    x, weight, bias = data
    W = weight.shape[1]
    return F.conv1d(F.pad(x, (W - 1, 0)), weight.unsqueeze(1), bias, groups=x.shape[1])
"""


def test_a_plain_torch_kernel_file_declares_it_has_no_tile_and_passes_the_seam(tmp_path):
    path = tmp_path / "plain_torch.py"
    path.write_text(PLAIN_TORCH)
    test_every_kernel_file_defines_what_the_seam_requires(path)
    test_what_a_kernel_file_offers_is_what_the_seam_says_and_compare_gets_its_tile(path)
    path.write_text(PLAIN_TORCH.replace("tile_for = None", "TILE = None"))
    with pytest.raises(AssertionError, match="plain_torch.py offers no tile_for, .* tile_for = None"):
        test_every_kernel_file_defines_what_the_seam_requires(path)


def test_a_kernel_file_that_does_not_parse_fails_its_own_seam_test_and_adds_no_names(tmp_path):
    """Collection gathers every kernel file's names; a SyntaxError there once stopped the whole suite."""
    broken = tmp_path / "broken.py"
    broken.write_text("def custom_kernel(data):\n    return (\n")
    assert parsed(broken) is None and top_level_names(broken) == set()
    with pytest.raises(pytest.fail.Exception, match=r"broken.py does not parse: '\(' was never closed \(line 2\)"):
        test_every_kernel_file_defines_what_the_seam_requires(broken)
    latin = tmp_path / "latin.py"  # not UTF-8: eval.py refuses it by name; collection reads past it
    latin.write_bytes(b"# caf\xe9\ndef custom_kernel(data):\n    return data\n")
    assert not uses_helion(latin) and top_level_names(latin) == {"custom_kernel"}


def test_tools_and_variants_use_no_name_of_a_kernel_file_outside_the_seam():
    """Attribute names the tools and the variants use that a kernel file defines: each is the seam's."""
    used = {}
    for path in sorted(ROOT.glob("scripts/*.py")) + sorted(ROOT.glob("variants/*.py")):
        tree = parsed(path)  # a variant that does not parse fails its own tests above, by name
        for node in ast.walk(tree) if tree else []:
            if isinstance(node, ast.Attribute) and node.attr in KERNEL_NAMES and node.attr not in SEAM:
                used.setdefault(node.attr, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not used, f"names outside registry.SEAM_OFFERS: {used}"


@pytest.mark.parametrize("path", OUTSIDE_KERNEL_FILES, ids=[str(p.relative_to(ROOT)) for p in OUTSIDE_KERNEL_FILES])
def test_no_file_outside_a_kernel_file_reaches_its_private_names(path):
    """Neither as an attribute (module._name) nor as a name handed to getattr or monkeypatch."""
    reached = [f"{node.lineno}: {ast.unparse(node)}" for node in ast.walk(ast.parse(path.read_text()))
               if (isinstance(node, ast.Attribute) and node.attr in PRIVATE_KERNEL_NAMES)
               or (isinstance(node, ast.Constant) and node.value in PRIVATE_KERNEL_NAMES)]
    assert not reached, reached


@pytest.mark.parametrize("W", [1, 2, 4, 5])
def test_the_submissions_formula_is_the_tools_shifted_sum(W):
    """submission.py keeps its own copy of the formula (it travels alone); it must stay the tools' one."""
    import torch

    from conftest import make_inputs
    from scripts import baselines

    x, weight, bias = make_inputs(2, 3, 37, W, seed=W)
    formula = registry.load_kernel_file(ROOT / "submission.py", "submission_formula").formula
    assert torch.equal(formula(x, weight, bias), baselines.shifted_sum((x, weight, bias)))


def test_tiles_loads_the_tiled_kernel_files_counts_their_timings_and_refuses_one_that_offers_no_space():
    from scripts import tiles

    modules = tiles.load_modules([ROOT / "submission.py"])
    space = modules["submission"].CONFIG_SPACE
    # a plain copy and an evict-first one at each distinct tile, then every config
    assert tiles.timings_count(modules, [{}, {}], rounds=3) == 3 * 2 * (2 * len({c[:2] for c in space}) + len(space))
    with pytest.raises(ValueError, match="no_search.py defines no CONFIG_SPACE"):
        tiles.load_modules([ROOT / "variants" / "no_search.py"])


def test_every_tiled_kernel_file_gives_each_config_its_own_label():
    """tiles.json keys configs by label: lane_shuffle's evict-first flag once read as nothing, so of each tile's
    two configs the record kept one (run97)."""
    from scripts import tiles

    files = [p for p in [ROOT / "submission.py", *registry.variant_files()] if "CONFIG_SPACE" in source(p)]
    assert len(files) >= 5
    for name, module in tiles.load_modules(files).items():
        labels = [configs.tile_label(config) for config in module.CONFIG_SPACE]
        assert len(set(labels)) == len(labels), name


def test_tiles_refuses_a_kernel_file_whose_configs_a_label_cannot_tell_apart(tmp_path):
    from scripts import tiles

    body = "def custom_kernel(data): pass\ndef launch(*args): pass\nCONFIG_SPACE = {}\n"
    flagged = tmp_path / "flagged.py"
    flagged.write_text(body.format("[(1024, 1, False), (1024, 1, True)]"))
    with pytest.raises(ValueError, match=r"config \(1024, 1, False\) has entries a label cannot show"):
        tiles.load_modules([flagged])
    twice = tmp_path / "twice.py"
    twice.write_text(body.format("[(1024, 1, 'cuda'), (2048, 2), (1024, 1, 'cuda')]"))
    with pytest.raises(ValueError, match="twice.py: more than one config of CONFIG_SPACE reads 1024/1 cuda"):
        tiles.load_modules([twice])


def test_tiles_holds_each_config_against_the_faster_of_its_two_same_tile_copies_and_the_floor_against_all():
    from scripts import tiles

    results = {"1x2x40x4": {"copies": {(1024, 1): 10.0, (1024, 1, tiles.EVICT_FIRST): 9.0, (4096, 2): 8.0,
                                       (4096, 2, tiles.EVICT_FIRST): 8.8},
                            "errors": {}, "submission": {(1024, 1, None): 9.9, (4096, 2, "cuda-ef"): 8.4}}}
    entry = tiles.summarize(results)["1x2x40x4"]
    assert entry["floor_us"] == 8.0 and entry["floor_tile"] == (4096, 2)
    kernel = entry["kernels"]["submission"]
    assert kernel["best"] == [4096, 2, "cuda-ef"] and kernel["best_vs_same_tile_copy"] == pytest.approx(8.4 / 8.0)
    assert kernel["configs"]["1024/1"]["vs_same_tile_copy"] == pytest.approx(9.9 / 9.0)  # the evict-first copy was faster
    assert entry["copies"]["1024/1 evict_first"] == 9.0 and "floor 8.00 us (copy 4096/2)" in tiles.format_table({"c": entry})
