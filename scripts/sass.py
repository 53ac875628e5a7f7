"""A kernel file's CUDA kernel as SASS, offline: what ptxas did with it, with no GPU.

NVRTC builds the cubin for the named architecture, as torch.cuda._compile_kernel builds it on the GPU
(the device's torch 2.11 is a CUDA 13.0 build); Triton's cuobjdump prints it; the control word of each
instruction says which scoreboard it sets and which it waits on. The record: registers and spills (from
ptxas), the instruction mix, the global loads by the scoreboard each sets, how many have landed by the
first FFMA, and how many FFMAs run after the last one lands (a load has landed at the first instruction
that waits on its scoreboard). On a case of one wave that last number is a tail no other warp hides:
results/NOTES.md v33 found submission.py's CUDA kernel at V = 16 with every load landed before its first
FFMA and so all its FFMAs after the last, at 95 registers, the count ncu reads on the GPU.

NVRTC is found in the nvidia-* packages a CUDA build of torch brings, or in requirements-sass.txt's.
"""
import ctypes
import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

# NVRTC's libraries inside the nvidia-* wheels, newest first; the builtins library must load beside it
NVRTC_WHEEL_LIBS = (("nvidia/cu13/lib", "libnvrtc.so.13", "libnvrtc-builtins.so.13.*"),
                    ("nvidia/cuda_nvrtc/lib", "libnvrtc.so.12", "libnvrtc-builtins.so.12.*"))
NO_SCOREBOARD = 7  # a control word's scoreboard field when the instruction sets none
FMA = "FFMA"
GLOBAL_LOAD = "LDG"


class SassError(RuntimeError):
    """Why a kernel could not be built or read, in one sentence."""


@dataclasses.dataclass(frozen=True)
class Instruction:
    address: int
    opcode: str  # the mnemonic without its modifiers: LDG, FFMA, SHFL
    text: str
    sets: int | None  # the scoreboard a variable-latency result (a load's) releases when it lands
    waits: tuple[int, ...]  # scoreboards this instruction waits on before it issues


def nvrtc_library() -> Path | None:
    """libnvrtc from the nvidia-* wheels on sys.path, newest CUDA first, or None."""
    for folder, name, _ in NVRTC_WHEEL_LIBS:
        for root in sys.path:
            path = Path(root or ".") / folder / name
            if path.is_file():
                return path
    return None


def cuobjdump() -> Path | None:
    """Triton's own cuobjdump, else one on PATH, or None."""
    try:
        import triton.backends.nvidia as nvidia
        bundled = Path(nvidia.__file__).parent / "bin" / "cuobjdump"
        if bundled.is_file():
            return bundled
    except ImportError:
        pass
    found = shutil.which("cuobjdump")
    return Path(found) if found else None


def unavailable() -> str | None:
    """Why sass cannot run here, in one sentence, or None."""
    if nvrtc_library() is None:
        return ("sass builds with NVRTC, and no libnvrtc from the nvidia-* packages is on this Python's path "
                "(pip install -r requirements-sass.txt).")
    if cuobjdump() is None:
        return "sass reads the cubin with cuobjdump, and neither Triton's nor one on PATH was found."
    return None


def load_nvrtc(library: Path):
    for _, name, builtins in NVRTC_WHEEL_LIBS:
        if library.name == name:  # libnvrtc opens its builtins by name: load them first, where it will look
            for path in sorted(library.parent.glob(builtins)):
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(str(library))


def build(source: str, entry: str, arch: str) -> tuple[bytes, str]:
    """(cubin, ptxas's log) of `entry` (a kernel name with its template arguments) from `source`."""
    library = nvrtc_library()
    if library is None:
        raise SassError(unavailable())
    nvrtc = load_nvrtc(library)
    program = ctypes.c_void_p()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"kernel.cu", 0, None, None):
        raise SassError("NVRTC could not take the source")
    try:
        nvrtc.nvrtcAddNameExpression(program, entry.encode())
        options = [f"--gpu-architecture={arch}".encode(), b"-default-device", b"--std=c++17", b"-Xptxas=-v"]
        failed = nvrtc.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        log_text = log.value.decode(errors="replace")
        if failed:
            first = next((line for line in log_text.splitlines() if "error" in line), log_text.strip()[:300])
            raise SassError(f"NVRTC could not build {entry} for {arch}: {first.strip()}")
        nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(size))
        cubin = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetCUBIN(program, cubin)
        return cubin.raw, log_text
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))


def nvrtc_version() -> str:
    major, minor = ctypes.c_int(), ctypes.c_int()
    load_nvrtc(nvrtc_library()).nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


def disassemble(cubin: bytes, folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "kernel.cubin"
    path.write_bytes(cubin)
    done = subprocess.run([str(cuobjdump()), "-sass", str(path)], capture_output=True, text=True)
    if done.returncode:
        raise SassError(f"cuobjdump could not read the cubin: {done.stderr.strip()[:200]}")
    return done.stdout


INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]{16}) \*/")
CONTROL = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/\s*$")


def parse(listing: str) -> list[Instruction]:
    """cuobjdump -sass text (sm_70 and later: each instruction's second 64-bit word on the next line) ->
    instructions. The control field is that word's bits 41 on: stall (4 bits), yield (1), the scoreboard
    a result sets (3), the one a read of sources sets (3), the mask of scoreboards waited on (6)."""
    lines = listing.splitlines()
    found = []
    for line, after in zip(lines, lines[1:] + [""]):
        match, control = INSTRUCTION.search(line), CONTROL.match(after)
        if not (match and control):
            continue
        bits = int(control.group(1), 16) >> 41
        sets = (bits >> 5) & 7
        text = match.group(2)
        mnemonic = re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]
        found.append(Instruction(int(match.group(1), 16), mnemonic.split(".")[0], text,
                                 None if sets == NO_SCOREBOARD else sets,
                                 tuple(board for board in range(6) if (bits >> 11) >> board & 1)))
    return found


def landings(instructions: list[Instruction]) -> list[int]:
    """For each global load, the index of the first later instruction that waits on the scoreboard it sets:
    the point by which it has landed (the end where nothing waits on it)."""
    found = []
    for n, load in enumerate(instructions):
        if load.opcode == GLOBAL_LOAD and load.sets is not None:
            found.append(next((m for m in range(n + 1, len(instructions)) if load.sets in instructions[m].waits),
                              len(instructions)))
    return found


def schedule(instructions: list[Instruction]) -> dict:
    """What the schedule makes a thread wait for: the loads landed before its first FFMA, and the FFMAs
    left to run once its last load has landed."""
    loads = [i for i in instructions if i.opcode == GLOBAL_LOAD]
    fma_at = [n for n, i in enumerate(instructions) if i.opcode == FMA]
    landed = landings(instructions)
    last = max(landed, default=0)
    return {"global_loads": len(loads),
            "loads_by_scoreboard": {str(board): sum(1 for i in loads if i.sets == board)
                                    for board in sorted({i.sets for i in loads if i.sets is not None})},
            "loads_landed_by_first_fma": sum(1 for at in landed if fma_at and at <= fma_at[0]),
            "fmas": len(fma_at),
            "fmas_after_last_load_lands": sum(1 for n in fma_at if n >= last)}


def resources(log: str) -> dict:
    """ptxas -v's registers and spill bytes for the one kernel built."""
    registers = re.search(r"Used (\d+) registers", log)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    return {"registers": int(registers.group(1)) if registers else None,
            "spill_store_bytes": int(spills.group(1)) if spills else None,
            "spill_load_bytes": int(spills.group(2)) if spills else None}


def kernel_entries(source: str) -> list[str]:
    """The __global__ functions of a CUDA source, with their template parameters where they have them."""
    pattern = re.compile(r"(template\s*<([^>]*)>\s*)?__global__\s+void\s+(\w+)")
    return [f"{m.group(3)}<{m.group(2).strip()}>" if m.group(1) else m.group(3) for m in pattern.finditer(source)]


def sass_record(source: str, entry: str, arch: str, folder: Path) -> tuple[dict, str]:
    """(the record, the SASS listing) of one entry of a CUDA source."""
    cubin, log = build(source, entry, arch)
    listing = disassemble(cubin, folder)
    instructions = parse(listing)
    if not instructions:
        raise SassError("cuobjdump printed no instruction this tool can read")
    mix = {}
    for i in instructions:
        mix[i.opcode] = mix.get(i.opcode, 0) + 1
    record = {"entry": entry, "arch": arch, "nvrtc": nvrtc_version(), **resources(log),
              "instructions": len(instructions), "mix": dict(sorted(mix.items(), key=lambda kv: -kv[1])),
              **schedule(instructions)}
    return record, listing


def format_record(record: dict) -> str:
    """The record as a few lines a person reads."""
    top = ", ".join(f"{op} {n}" for op, n in list(record["mix"].items())[:8])
    boards = ", ".join(f"SB{b}: {n}" for b, n in record["loads_by_scoreboard"].items())
    return "\n".join([
        f"{record['entry']} for {record['arch']} (NVRTC {record['nvrtc']})",
        f"  registers {record['registers']}, spills {record['spill_store_bytes']} B stored / "
        f"{record['spill_load_bytes']} B loaded; {record['instructions']} instructions: {top}",
        f"  global loads {record['global_loads']}, by the scoreboard each sets: {boards or 'none'}",
        f"  {record['loads_landed_by_first_fma']} of them have landed by the first FFMA; "
        f"{record['fmas_after_last_load_lands']} of {record['fmas']} FFMAs run after the last one lands"])
