"""Every implementation the tools time or record, with its kind: the one list compare, tune, history
and the plots read.

Kinds:
  submission  a file that goes to the leaderboard (submission.py, submissions/*.py)
  variant     an experiment kept in variants/, found there without a list to maintain
  copy        a copy of x: the bytes of the task and none of its arithmetic (the floor is the fastest)
  baseline    another way to compute the task that we hold ourselves against (torch.compile)
  peer        someone else's kernel (Dao-AILab's causal-conv1d, flash-linear-attention's, where installed)
  reference   the task's reference.py

The seam: what the tools may ask of a kernel file (submission.py, submissions/*.py, variants/*.py not
starting with '_'). A kernel file must define custom_kernel; it may offer any name of SEAM_OFFERS, each
meaning what SEAM_OFFERS says; tools and variants use no other name of it, and no private (underscore)
one (tests/test_kernel_files.py checks both). The kernel file stays self-contained, since only it
travels to the runner, so what the tools need of it is public there.
"""
import contextlib
import dataclasses
import os
import threading
from pathlib import Path
from typing import Callable

import eval as harness
from scripts import ROOT, SUBMISSION

SEAM_REQUIRES = {"custom_kernel": "custom_kernel(data) -> output: the task's function, all the runner calls"}
SEAM_OFFERS = {
    "launch": "launch(x, weight, bias, out, *config): the kernel at one config of CONFIG_SPACE (tiles, tune)",
    "CONFIG_SPACE": "list of every config launch is built for (tiles, tune)",
    "CONFIGS": "dict (gpu, B, D, S, W) -> (BLOCK, num_warps): the measured table tune rewrites and sweeps through",
    "tile_for": "tile_for(data) -> (BLOCK, num_warps) custom_kernel launches there (compare's same-tile copy); "
                "None in a file that launches no tiled kernel (plain torch), which then gets no same-tile copy",
    "heuristic_config": "heuristic_config(B, D, S, W) -> (BLOCK, num_warps) where no table entry or search applies",
    "gpu_key": "gpu_key(device_index) -> the config tables' name of a GPU",
    "gpu_of": "gpu_of(x) -> the config tables' name of the device x lives on",
    "validate": "validate(data): ValueError naming what is wrong with an input",
    "choose": "choose(gpu, x, weight, bias) -> the config custom_kernel launches",
    "tuned": "dict key -> config: the first-call search's picks, kept for the process",
    "searchable": "searchable(x) -> whether a first call on x searches (None: cannot tell a capture)",
    "capturing": "capturing(device) -> True inside a CUDA-graph capture, False outside, None where unknown",
    "formula": "formula(x, weight, bias) -> the task's formula in torch, what a search candidate must match",
    "search_record": "search_record(key, x, weight, bias, timer) -> the search's record (pick, timed, retimed, dropped)",
    "pick_line": "pick_line(record) -> the search's one line",
    "graph_timer": "graph_timer(device) -> timed_us(runs, calls=100, samples=6) -> [us a run]: the search's copy of the leaderboard's timing",
    "TUNE_ENV": "the environment variable that switches the first-call search off (0)",
    "TUNE_MARGIN": "fraction a candidate must beat every earlier one by to be picked (search), and a tile the heuristic by to be written (tune)",
    "TUNE_MIN_OUTPUTS": "outputs below which a first call does not search",
    "columns": "columns(group) -> an [N, 4] group's four columns: a Triton helper the variants build on",
    "add_taps": "add_taps(acc, cols, w_row, W, q, j) -> acc plus one group's taps: a Triton helper the variants build on",
    "CUDA_SOURCE": "the CUDA C++ source its CUDA builds compile (sass builds it offline)",
    "SHAPE_CONFIGS": "Helion: dict (B, D, S, W) -> config, the measured table",
    "conv1d_groups": "conv1d_groups(...): Helion's kernel body, the one helion-tune autotunes",
    "LANES_CONFIGS": "Helion: dict (B, D, S, W) -> (V, num_warps, evict, halo), the lane-shuffle kernel's measured "
                     "table; the shapes it holds take that kernel where its Triton and Helion releases allow, the "
                     "others conv1d_groups",
    "lanes_config": "Helion: lanes_config(x, weight) -> the LANES_CONFIGS entry the lane-shuffle kernel runs at, None "
                    "where conv1d_groups serves the input",
}

KINDS = ("submission", "variant", "copy", "baseline", "peer", "reference")
OURS = ("submission", "variant")
VARIANTS = ROOT / "variants"
SUBMISSIONS = ROOT / "submissions"
TORCH_COPY = "copy"  # torch's clone of x


@dataclasses.dataclass(frozen=True)
class Impl:
    name: str
    kind: str
    make: Callable[[], Callable]  # builds fn(data) -> output when it is needed (imports, compiles)
    file: Path | None = None  # where the code lives, for ours


class _EndedWhileImporting(BaseException):
    """A kernel file called os._exit or os.abort while it was imported."""


@contextlib.contextmanager
def _no_process_exit():
    """os._exit and os.abort raise while a kernel file is imported: they would end the tool at once, past every
    handler, with no word (os._exit(0) even with exit 0). sys.exit needs no guard: it raises SystemExit. Only
    in this process's importing thread and only during the import: a child forked meanwhile, another thread,
    or a library that kept a reference calls the real function."""
    owner, active = (os.getpid(), threading.get_ident()), [True]

    def refused(name, real):
        def call(*args):
            if active[0] and (os.getpid(), threading.get_ident()) == owner:
                raise _EndedWhileImporting(f"os.{name}({', '.join(map(repr, args))})")
            return real(*args)
        return call

    saved = os._exit, os.abort
    os._exit, os.abort = refused("_exit", saved[0]), refused("abort", saved[1])
    try:
        yield
    finally:
        active[0] = False  # a guard that outlives its import (threads restoring out of order) calls the real one
        os._exit, os.abort = saved


def load_kernel_file(path: Path, module_name: str):
    """A kernel file imported under its own module name; ValueError, in one sentence, where it does not import
    (it is the user's code: whatever its import raises, or a call that would end the process) or lacks what
    the seam requires."""
    import eval as harness

    try:
        with _no_process_exit():
            module = harness.load_submission(path, module_name)
    except SystemExit as stop:  # the file's own sys.exit: a kernel file that ends the tool is still one not loaded
        raise ValueError(f"{Path(path).name} did not load: it called sys.exit({stop.code!r}) while importing") from None
    except _EndedWhileImporting as stop:
        raise ValueError(f"{Path(path).name} did not load: it called {stop} while importing") from None
    except Exception as error:
        raise ValueError(f"{Path(path).name} did not load: {harness.named(error)}") from None
    missing = [name for name in SEAM_REQUIRES if not callable(getattr(module, name, None))]
    if missing:
        raise ValueError(f"{path} defines no {', '.join(missing)}")
    _loaded[module.custom_kernel] = module
    return module


_loaded = {}  # custom_kernel -> its module, for each kernel file loaded here


def seam_of(fn, name: str):
    """What the kernel file whose custom_kernel is fn offers as `name` (one of SEAM_OFFERS), else None."""
    if name not in SEAM_OFFERS:
        raise ValueError(f"{name} is not part of the kernel files' seam (registry.SEAM_OFFERS)")
    return getattr(_loaded.get(fn), name, None)


def kernel_file(path: Path, kind: str, name: str | None = None) -> Impl:
    """A submission-style file (it defines custom_kernel), imported under its own module name."""
    name = name or ("submission" if Path(path).resolve() == SUBMISSION else Path(path).stem)
    module = "submission" if name == "submission" else f"{kind}_{name}"
    return Impl(name, kind, lambda: load_kernel_file(Path(path), module).custom_kernel, Path(path))


def variant_files(folder: Path = VARIANTS) -> list[Path]:
    """Every variant in the folder: each .py file whose name does not start with '_' (helpers do)."""
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def submission_files() -> list[Path]:
    return [SUBMISSION, *sorted(SUBMISSIONS.glob("*.py"))]


def copies() -> list[Impl]:
    from scripts import baselines

    found = [Impl(TORCH_COPY, "copy", lambda: baselines.torch_copy)]
    found += [Impl(baselines.copy_name(block, warps), "copy", lambda b=block, w=warps: baselines.triton_copy(b, w))
              for block, warps in baselines.COPY_TILES]
    found += [Impl(baselines.copy_name(block, warps, True), "copy", lambda b=block, w=warps: baselines.triton_copy(b, w, True))
              for block, warps in baselines.EVICT_FIRST_COPY_TILES]
    found += [Impl(baselines.tma_copy_name(*tile), "copy", lambda t=tile: baselines.tma_copy(*t))
              for tile in baselines.TMA_COPY_TILES]
    if baselines.cuda_copy_available():
        found += [Impl(baselines.cuda_copy_name(*tile), "copy", lambda t=tile: baselines.cuda_copy(*t))
                  for tile in baselines.CUDA_COPY_TILES]
    return found


def others(reference_too: bool = True) -> list[Impl]:
    """The reference, the baselines and the peers that are importable here."""
    from scripts import baselines

    found = []
    if reference_too:
        found.append(Impl("reference", "reference", lambda: __import__("reference").ref_kernel))
    found.append(Impl("torch_compile", "baseline", lambda: baselines.torch_compile))
    if baselines.dao_causal_conv1d() is not None:
        found.append(Impl("dao_causal_conv1d", "peer", baselines.dao_causal_conv1d))
    found += [Impl(name, "peer", lambda fn=fn: fn) for name, fn in baselines.fla_peers().items()]
    return found


def for_compare(submission: Path, variants: list[Path], reference_too: bool = True) -> list[Impl]:
    """What `compare` times: the copies and the others first, the submission and the variants last."""
    ours = [kernel_file(submission, "submission", "submission")]
    ours += [kernel_file(path, "submission" if path.resolve() in map(Path.resolve, submission_files()) else "variant")
             for path in variants]
    names = [impl.name for impl in ours]
    if len(set(names)) != len(names):
        raise ValueError(f"two files share a name ({', '.join(names)}): rename one, since rows are named by file")
    return copies() + others(reference_too) + ours
