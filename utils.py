"""Helpers the runner supplies beside the reference: seeding, tolerant comparison, determinism."""
import os
import random

import numpy as np
import torch


def set_seed(seed: int = 42) -> None:
    """Seed every random generator the runner seeds: Python, NumPy, torch and CUDA."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


@torch.no_grad()
def verbose_allclose(received, expected, rtol: float, atol: float, max_print: int = 5) -> list[str]:
    """Reasons `received` is not within atol + rtol * |expected| of `expected`; empty when it is.

    NaN or +-inf in one tensor where the other has none counts as a mismatch.
    """
    if not isinstance(received, torch.Tensor):
        return [f"OUTPUT IS NOT A TENSOR: got {type(received).__name__}"]
    if received.shape != expected.shape:
        return [f"SIZE MISMATCH: got {tuple(received.shape)}, expected {tuple(expected.shape)}"]
    received = received.to(expected.device)
    diff = (received - expected).abs()
    mismatched = diff > atol + rtol * expected.abs()
    mismatched |= torch.isnan(received) ^ torch.isnan(expected)
    mismatched |= torch.isposinf(received) ^ torch.isposinf(expected)
    mismatched |= torch.isneginf(received) ^ torch.isneginf(expected)
    count = int(mismatched.count_nonzero())
    if count == 0:
        return []
    reasons = [f"Number of mismatched elements: {count}"]
    for index in torch.nonzero(mismatched)[:max_print]:
        i = tuple(index.tolist())
        reasons.append(f"ERROR AT {i}: {received[i].item()} {expected[i].item()}")
    if count > max_print:
        reasons.append(f"... and {count - max_print} more mismatched elements.")
    return reasons


def match_reference(data, output, reference, rtol: float, atol: float) -> tuple[bool, str]:
    """The runner's default check: (True, '') or (False, a message naming the mismatches)."""
    reasons = verbose_allclose(output, reference(data), rtol=rtol, atol=atol)
    if reasons:
        return False, "mismatch found! custom implementation doesn't match reference: " + " ".join(reasons)
    return True, ""


def make_match_reference(reference, **tolerances):
    def check(data, output):
        return match_reference(data, output, reference=reference, **tolerances)
    return check


class DeterministicContext:
    """cuDNN deterministic and TF32 off inside the block, restored after."""

    def __enter__(self):
        self._saved = (
            torch.backends.cudnn.allow_tf32,
            torch.backends.cudnn.deterministic,
            os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        )
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.deterministic = True
        torch.use_deterministic_algorithms(True)
        return self

    def __exit__(self, *exc):
        allow_tf32, deterministic, cublas = self._saved
        torch.backends.cudnn.allow_tf32 = allow_tf32
        torch.backends.cudnn.deterministic = deterministic
        torch.use_deterministic_algorithms(False)
        if cublas is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        else:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = cublas
        return False
