"""Causal depthwise conv1d: the inputs, the reference and the check, as the runner defines them.

x [B, D, S], weight [D, W], bias [D], all fp32; out [B, D, S] with
out[b, d, t] = bias[d] + sum_k weight[d, k] * x[b, d, t - W + 1 + k], x = 0 at negative times.
"""
import torch
import torch.nn.functional as F

from task import input_t, output_t
from utils import DeterministicContext, make_match_reference

RTOL = 1e-3
ATOL = 1e-3


def generate_input(B: int, D: int, S: int, W: int, seed: int) -> input_t:
    """x, then weight, then bias from one generator seeded with `seed`, fp32 and contiguous.

    On the GPU this is the runner's stream exactly. Without a GPU the same draws come from a
    CPU generator: CPU and CUDA random streams differ, so the values differ from the runner's
    for the same seed, but the shapes, order and distribution are the same.
    """
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    x = torch.randn(B, D, S, dtype=torch.float32, device=device, generator=gen).contiguous()
    weight = torch.randn(D, W, dtype=torch.float32, device=device, generator=gen).contiguous()
    bias = torch.randn(D, dtype=torch.float32, device=device, generator=gen).contiguous()
    return x, weight, bias


def ref_kernel(data: input_t) -> output_t:
    """F.conv1d with groups=D on x padded with W-1 zeros on the left, deterministic, no TF32."""
    x, weight, bias = data
    with DeterministicContext():
        x_padded = F.pad(x, (weight.shape[1] - 1, 0))
        return F.conv1d(x_padded, weight.unsqueeze(1), bias=bias, groups=x.shape[1])


check_implementation = make_match_reference(ref_kernel, rtol=RTOL, atol=ATOL)
