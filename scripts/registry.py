"""Every implementation the tools time or record, with its kind: the one list compare, tune, history
and the plots read.

Kinds:
  submission  a file that goes to the leaderboard (submission.py, submissions/*.py)
  variant     an experiment kept in variants/, found there without a list to maintain
  copy        a copy of x: the bytes of the task and none of its arithmetic (the floor is the fastest)
  baseline    another way to compute the task that we hold ourselves against (torch.compile)
  peer        someone else's kernel (Dao-AILab's causal-conv1d, flash-linear-attention's, where installed)
  reference   the task's reference.py
"""
import dataclasses
from pathlib import Path
from typing import Callable

from scripts import ROOT, SUBMISSION

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


def kernel_file(path: Path, kind: str, name: str | None = None) -> Impl:
    """A submission-style file (it defines custom_kernel), imported under its own module name."""
    from scripts import baselines

    name = name or ("submission" if Path(path).resolve() == SUBMISSION else Path(path).stem)
    module = "submission" if name == "submission" else f"{kind}_{name}"
    return Impl(name, kind, lambda: baselines.load_kernel_file(Path(path), module).custom_kernel, Path(path))


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
    found += [Impl(baselines.tma_copy_name(*tile), "copy", lambda t=tile: baselines.tma_copy(*t))
              for tile in baselines.TMA_COPY_TILES]
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
