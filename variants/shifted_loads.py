"""Variant kept for comparison: the peers' approach, one shifted 4-byte load per tap.

Same grid and tile as submission.py; only the way the neighbours are fetched differs, so the
difference between the two is the cost of the shifted scalar loads.
"""
import torch
import triton
import triton.language as tl

from task import input_t, output_t


@triton.jit
def shifted_loads_kernel(x_ptr, w_ptr, b_ptr, out_ptr, D, S, chunks_per_row,
                         W: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    row = pid // chunks_per_row
    chunk = pid - row * chunks_per_row
    d = row % D
    row_start = row.to(tl.int64) * S
    t = chunk * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32) + tl.load(b_ptr + d)
    for k in tl.static_range(W):
        src = t - (W - 1 - k)
        acc += tl.load(w_ptr + d * W + k) * tl.load(x_ptr + row_start + src, mask=(src >= 0) & (src < S), other=0.0)
    tl.store(out_ptr + row_start + t, acc, mask=t < S)


def tile_for(data) -> tuple[int, int]:
    """(BLOCK, num_warps) custom_kernel launches for this input."""
    return min(2048, triton.next_power_of_2(data[0].shape[-1])), 4


def custom_kernel(data: input_t) -> output_t:
    x, weight, bias = (t.contiguous() for t in data)
    B, D, S = x.shape
    out = torch.empty_like(x)
    block, warps = tile_for(data)
    chunks = triton.cdiv(S, block)
    shifted_loads_kernel[(B * D * chunks,)](x, weight, bias, out, D, S, chunks, W=weight.shape[1], BLOCK=block,
                                            num_warps=warps)
    return out
