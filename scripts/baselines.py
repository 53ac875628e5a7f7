"""The implementations we measure against, each a function data -> output like custom_kernel.

scripts/registry.py names them and gives each its kind."""
import functools

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

# (elements per program, num_warps) of the plain Triton copies: the fastest of them, case by case,
# is the floor every kernel is held against (4096/4 was the fastest on the H200, 2026-12-02).
COPY_TILES = [(1024, 1), (2048, 2), (4096, 4), (8192, 8)]
# The same copy with x loaded evict-first, at the tiles where it was fastest (H200 run32: 1.4-2.1% under
# the plain copies on the S = 2048 cases, since fewer of the lines the flush left dirty are written back
# inside the call). The floor holds them because a kernel may load x so too (submission.py's cuda-ef).
EVICT_FIRST_COPY_TILES = [(4096, 2), (4096, 4)]


@triton.jit
def _copy_kernel(src, dst, n, BLOCK: tl.constexpr, EVICT_FIRST: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    if EVICT_FIRST:
        values = tl.load(src + offsets, mask=mask, eviction_policy="evict_first")
    else:
        values = tl.load(src + offsets, mask=mask)
    tl.store(dst + offsets, values, mask=mask)


def triton_copy(block: int, num_warps: int, evict_first: bool = False):
    """A Triton copy of x, `block` elements a program: the bytes of the task, none of its arithmetic;
    with evict_first, x's loads carry that L2 eviction hint."""
    def copy(data):
        x = data[0]
        out = torch.empty_like(x)
        _copy_kernel[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block, EVICT_FIRST=evict_first,
                                                      num_warps=num_warps)
        return out
    return copy


@triton.jit
def _tma_copy_kernel(src_desc, dst_desc, chunks_per_row, n_tiles, R: tl.constexpr, BLOCK: tl.constexpr,
                     NUM_STAGES: tl.constexpr):
    for tile in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), num_stages=NUM_STAGES):
        row_block = tile // chunks_per_row
        col = (tile - row_block * chunks_per_row) * BLOCK
        dst_desc.store([row_block * R, col], src_desc.load([row_block * R, col]))


# (R rows, BLOCK columns a tile, num_warps, num_stages, programs a SM) of the TMA copies: tma_staged's
# fastest configs on the H200 (NOTES v9), so its cost splits into the copy engine's and its own.
TMA_COPY_TILES = [(2, 256, 1, 3, 16), (4, 256, 2, 3, 8)]


def tma_copy(rows: int, block: int, num_warps: int, num_stages: int, per_sm: int):
    """A copy of x through the bulk tensor copy engine: tiles of rows x block read into shared memory by
    tensor descriptors in a pipelined persistent loop and written back the same way. Where descriptors
    cannot take x (rows not 16-byte aligned), the plain Triton copy of the same elements a program."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    def copy(data):
        x = data[0]
        out = torch.empty_like(x)
        S = x.shape[-1]
        if S % 4 or x.data_ptr() % 16 or out.data_ptr() % 16:
            return triton_copy(rows * block, num_warps)(data)
        rows_all = x.numel() // S
        width = min(block, max(16, triton.next_power_of_2(S)))
        descs = [TensorDescriptor.from_tensor(t.view(rows_all, S), [rows, width]) for t in (x, out)]
        chunks = triton.cdiv(S, width)
        n_tiles = triton.cdiv(rows_all, rows) * chunks
        programs = per_sm * (torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4)
        _tma_copy_kernel[(min(n_tiles, programs),)](*descs, chunks, n_tiles, R=rows, BLOCK=width,
                                                     NUM_STAGES=num_stages, num_warps=num_warps)
        return out
    return copy


# (threads a block, float4 a thread) of the CUDA copies. On the large shapes a copy gets faster as a
# thread's share shrinks and its block grows: 128x2 was the floor of 8x4096x8192 on the H200 (run43, NOTES
# v25), 512x1 and 1024x1 the floors of both large shapes on an H100 (run45, v26), 0.6-1.5% under the Triton
# copies and 20-35% under torch's copy on the 2 GB shape. The floor holds them since a kernel may lay its
# threads out so. CUDA only: NVRTC has no interpreter.
CUDA_COPY_TILES = [(128, 2), (512, 1), (1024, 1)]
CUDA_COPY_SOURCE = r"""
// U float4 a thread; a block of T threads covers T * U consecutive float4, thread t's u-th at u * T + t.
template <int U>
__global__ void copy_float4(const float4* __restrict__ x, float4* __restrict__ y, unsigned n4) {
  const unsigned base = blockIdx.x * (blockDim.x * U) + threadIdx.x;
  float4 v[U];
#pragma unroll
  for (int u = 0; u < U; ++u) if (base + u * blockDim.x < n4) v[u] = __ldg(x + base + u * blockDim.x);
#pragma unroll
  for (int u = 0; u < U; ++u) if (base + u * blockDim.x < n4) y[base + u * blockDim.x] = v[u];
}
"""


def cuda_copy_available() -> bool:
    return torch.cuda.is_available() and hasattr(torch.cuda, "_compile_kernel")


@functools.lru_cache(maxsize=None)
def _cuda_copy_kernel(device_index: int, per_thread: int):
    with torch.cuda.device(device_index):
        return torch.cuda._compile_kernel(CUDA_COPY_SOURCE, f"copy_float4<{per_thread}>")


def cuda_copy(threads: int, per_thread: int):
    """A CUDA copy of x: blocks of `threads` threads, each thread `per_thread` 16-byte loads and stores.
    Where x is not whole aligned float4 on a GPU (or holds 2^31 float4 or more: the count travels as a C
    int), the Triton copy of the same elements a program."""
    def copy(data):
        x = data[0]
        out = torch.empty_like(x)
        n4 = x.numel() // 4
        if not x.is_cuda or x.numel() % 4 or x.data_ptr() % 16 or out.data_ptr() % 16 or n4 >= 1 << 31:
            return triton_copy(4 * threads * per_thread, max(1, threads // 32))(data)
        if n4:
            _cuda_copy_kernel(x.device.index or 0, per_thread)(
                grid=(-(-n4 // (threads * per_thread)), 1, 1), block=(threads, 1, 1), args=[x, out, n4])
        return out
    return copy


def cuda_copy_name(threads: int, per_thread: int) -> str:
    return f"cuda_copy_{threads}x{per_thread}_float4"


def tma_copy_name(rows: int, block: int, num_warps: int, num_stages: int, per_sm: int) -> str:
    return f"tma_copy_{rows}x{block}_{num_warps}w_{num_stages}s_{per_sm}sm"


def copy_name(block: int, num_warps: int, evict_first: bool = False) -> str:
    return f"triton_copy_{'evict_first_' if evict_first else ''}{block}_{num_warps}"


def torch_copy(data):
    return data[0].clone()


def shifted_sum(data):
    """out = bias + sum_k weight[:, k] * x shifted right by W - 1 - k: the formula torch.compile fuses, and
    the tools' one copy of it. submission.py keeps its own (formula), since it travels alone;
    tests/test_kernel_files.py holds the two equal."""
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


def fla_peers() -> dict:
    """flash-linear-attention's causal conv1d (fla-core, requirements-fla.txt) where it imports, else {}.

    fla's kernels take x as [B, S, D] (channel-last). 'fla_triton' is its Triton kernel on a strided
    [B, S, D] view of our x, so it pays for our layout. 'fla_gluon_channel_last' is its Gluon kernel
    (widths 2-4) on its own layout: the channel-last copy of x is made once per input, before the
    timing, so this times the kernel alone, not what a user of our layout would pay."""
    try:
        from fla.modules.causal_conv1d import causal_conv1d_fwd
    except ImportError:
        return {}
    peers = {"fla_triton": lambda data: causal_conv1d_fwd(
        data[0].transpose(1, 2), data[1], data[2], residual=None)[0].transpose(1, 2)}
    try:
        from fla.modules.causal_conv1d.backends.gluon import causal_conv1d_fwd_gluon
    except ImportError:
        return peers
    channel_last = {}  # the one input seen last: (tensor, its version) -> its [B, S, D] copy

    def gluon_on_channel_last(data):
        x = data[0]
        key = (id(x), x._version, x.data_ptr())
        if channel_last.get("key") != key:  # a new input, or this one written in place: copy it again
            channel_last.update(key=key, x=x.transpose(1, 2).contiguous())
        return causal_conv1d_fwd_gluon(channel_last["x"], data[1], data[2])[0].transpose(1, 2)
    peers["fla_gluon_channel_last"] = gluon_on_channel_last
    return peers

