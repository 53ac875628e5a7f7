"""The implementations we measure against, each a function data -> output like custom_kernel.

scripts/registry.py names them and gives each its kind."""
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

import eval as harness

# (elements per program, num_warps) of the plain Triton copies: the fastest of them, case by case,
# is the floor every kernel is held against (ANCHORS.md: 4096/4 was the fastest on the H200).
COPY_TILES = [(1024, 1), (2048, 2), (4096, 4), (8192, 8)]


@triton.jit
def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


def triton_copy(block: int, num_warps: int):
    """A plain Triton copy of x, `block` elements a program: the bytes of the task, none of its arithmetic."""
    def copy(data):
        x = data[0]
        out = torch.empty_like(x)
        _copy_kernel[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block, num_warps=num_warps)
        return out
    return copy


def copy_name(block: int, num_warps: int) -> str:
    return f"triton_copy_{block}_{num_warps}"


def torch_copy(data):
    return data[0].clone()


def shifted_sum(data):
    """out = bias + sum_k weight[:, k] * x shifted right by W - 1 - k: the formula torch.compile fuses."""
    x, weight, bias = data
    W, S = weight.shape[1], x.shape[-1]
    padded = F.pad(x, (W - 1, 0))
    out = bias[:, None] + weight[:, 0, None] * padded[..., 0:S]
    for k in range(1, W):
        out = out + weight[:, k, None] * padded[..., k:k + S]
    return out


_compiled = None


def torch_compile(data):
    global _compiled
    if _compiled is None:
        _compiled = torch.compile(shifted_sum, dynamic=False)
    return _compiled(data)


def dao_causal_conv1d():
    """Dao-AILab's causal_conv1d_fn when the package is importable, else None."""
    try:
        from causal_conv1d import causal_conv1d_fn
    except ImportError:
        return None
    return lambda data: causal_conv1d_fn(data[0], data[1], data[2])


def load_kernel_file(path: Path, module_name: str):
    """A submission-style file imported under its own module name; ValueError without custom_kernel."""
    module = harness.load_submission(path, module_name)
    if not hasattr(module, "custom_kernel"):
        raise ValueError(f"{path} defines no custom_kernel")
    return module
