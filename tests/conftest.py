"""Test setup: the workspace root on sys.path, and the Triton interpreter when there is no GPU.

TRITON_INTERPRET must be set before triton.jit runs, so before any kernel module is imported.
Helion's interpreter refuses to run beside Triton's, so Helion tests run in their own processes.
"""
import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = "cuda" if HAS_GPU else "cpu"
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU (graph capture and timing); none is visible")


def make_inputs(B, D, S, W, seed=0, device=DEVICE):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(B, D, S, generator=gen)
    weight = torch.randn(D, W, generator=gen)
    bias = torch.randn(D, generator=gen)
    return x.to(device), weight.to(device), bias.to(device)


def conv_float64(x, weight, bias):
    """The definition, term by term, in float64 on the CPU: independent of F.conv1d."""
    x, weight, bias = (t.detach().cpu().double() for t in (x, weight, bias))
    B, D, S = x.shape
    W = weight.shape[1]
    out = bias[None, :, None].expand(B, D, S).clone()
    for k in range(W):
        shift = W - 1 - k  # tap k reads x[t - shift]
        if shift < S:
            out[:, :, shift:] += weight[None, :, k, None] * x[:, :, : S - shift]
    return out
