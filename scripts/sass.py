"""A kernel file's CUDA kernel as SASS, offline: what ptxas did with it, with no GPU.

NVRTC builds the cubin for the named architecture with the options torch.cuda._compile_kernel passes it on
the GPU (its include paths aside); cuobjdump prints that one kernel; the control word of each instruction
says which scoreboard it sets and which it waits on. The record: registers and spills (ptxas's), the
instruction mix, the global loads by the scoreboard each sets, and the FFMAs placed after the point where
the last load is first waited for. On a case of one wave those FFMAs are a tail no other warp hides:
results/NOTES.md v33 found submission.py's CUDA kernel at 16 groups a thread with all 256 of its FFMAs
there, at 95 registers, the count ncu reads on the GPU.

The reading is static, in address order, and follows no branch. It counts LDG, each waited for at the
first later instruction that waits on its scoreboard, and LDGSTS (cp.async), each in the commit group of
the next LDGDEPBAR and waited for at the first DEPBAR.LE on that scoreboard that leaves fewer groups pending
than were committed from its group on (the groups complete in order, as cp.async.wait_group counts them).
Where the listing has a backward branch (a loop), a DEPBAR it does not follow, a predicated commit, copies
no DEPBAR.LE waits for, or bulk or tensor copies, the record says so under "caveats", and its counts are a
lower bound on what the thread waits for.

NVRTC comes with a CUDA build of torch (the nvidia-* packages it brings) or from requirements-sass.txt.
"""
import ctypes
import dataclasses
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

# NVRTC inside the nvidia-* wheels, newest first: (folder under the nvidia package, library, its builtins)
NVRTC_WHEEL_LIBS = (("cu13/lib", "libnvrtc.so.13", "libnvrtc-builtins.so.13.*"),
                    ("cuda_nvrtc/lib", "libnvrtc.so.12", "libnvrtc-builtins.so.12.*"))
NVRTC_BY_NAME = ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so")  # a system CUDA's, as torch finds it
ARCH = re.compile(r"sm_\d+[a-z]?")
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]{16}) \*/")
CONTROL = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/\s*$")
BRANCH_TARGET = re.compile(r"\bBRA\b.*?(0x[0-9a-f]+)")
NO_SCOREBOARD = 7  # a control word's scoreboard field where the instruction sets none
FMA = "FFMA"
GLOBAL_LOAD = "LDG"
ASYNC_COPY = "LDGSTS"  # cp.async: global memory to shared, its count kept by the commit groups
COMMIT = "LDGDEPBAR"  # cp.async.commit_group: closes a group, counted on the scoreboard it sets
DEPBAR_LE = re.compile(r"DEPBAR\.LE\s+SB(\d),\s*(0x[0-9a-f]+|\d+)")  # whole text: that count at most N
BULK_COPIES = ("UBLKCP", "UTMALDG")  # cp.async.bulk and the tensor copies: counted by mbarriers, not read here


class SassError(RuntimeError):
    """Why a kernel could not be built or read, in one sentence."""


@dataclasses.dataclass(frozen=True)
class Instruction:
    address: int
    opcode: str  # the mnemonic without its modifiers: LDG, FFMA, SHFL
    text: str
    sets: int | None  # the scoreboard a variable-latency result (a load's) releases when it is written
    waits: tuple[int, ...]  # scoreboards this instruction waits on before it issues


def wheel_nvrtc() -> tuple[Path, list[Path]] | None:
    """(libnvrtc, its builtins) from the nvidia-* wheels this Python imports from, newest CUDA first."""
    spec = importlib.util.find_spec("nvidia")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for sub, name, builtins in NVRTC_WHEEL_LIBS:
            path = Path(folder).resolve() / sub / name
            if path.is_file():
                return path, sorted(path.parent.glob(builtins))
    return None


def load_nvrtc():
    """NVRTC as a ctypes library: the wheels' (its builtins loaded first, as it opens them by name and
    has no RUNPATH), else one the dynamic loader finds. SassError where there is none."""
    try:
        found = wheel_nvrtc()
        if found:
            library, builtins = found
            for path in builtins:
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            return ctypes.CDLL(str(library))
        for name in NVRTC_BY_NAME:
            try:
                return ctypes.CDLL(name)
            except OSError:
                continue
    except OSError as error:
        raise SassError(f"NVRTC did not load: {error}") from None
    raise SassError("sass builds with NVRTC, and none is installed for this Python "
                    "(pip install -r requirements-sass.txt).")


def cuobjdump() -> Path | None:
    """Triton's own cuobjdump, else one on PATH, or None."""
    spec = importlib.util.find_spec("triton")
    if spec and spec.submodule_search_locations:
        bundled = Path(spec.submodule_search_locations[0]) / "backends" / "nvidia" / "bin" / "cuobjdump"
        if bundled.is_file():
            return bundled
    found = shutil.which("cuobjdump")
    return Path(found) if found else None


def unavailable() -> str | None:
    """Why sass cannot run here, in one sentence, or None."""
    try:
        load_nvrtc()
    except SassError as error:
        return str(error)
    if cuobjdump() is None:
        return "sass reads the cubin with cuobjdump, and neither Triton's nor one on PATH was found."
    return None


def nvrtc_options(arch: str) -> list[bytes]:
    """torch.cuda._compile_kernel's options (its include paths aside), and ptxas's resource report."""
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS

    flags = [flag for flag in COMMON_NVCC_FLAGS if flag != "--expt-relaxed-constexpr"]  # as torch filters them
    return [f"--gpu-architecture={arch}".encode(), *(flag.encode() for flag in flags), b"-Xptxas=-v"]


def build(source: str, entry: str, arch: str) -> tuple[bytes, str, str]:
    """(cubin, ptxas's report for the entry, the entry's mangled name) of `entry`, a kernel name with its
    template arguments, from `source`."""
    nvrtc = load_nvrtc()
    nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(result: int, doing: str) -> None:
        if result:
            raise SassError(f"NVRTC could not {doing}: {nvrtc.nvrtcGetErrorString(result).decode()}")

    program = ctypes.c_void_p()
    check(nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"kernel.cu", 0, None, None),
          "take the source")
    try:
        check(nvrtc.nvrtcAddNameExpression(program, entry.encode()), f"take the entry {entry}")
        options = nvrtc_options(arch)
        failed = nvrtc.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
        size = ctypes.c_size_t()
        check(nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "report its log")
        log = ctypes.create_string_buffer(size.value)
        check(nvrtc.nvrtcGetProgramLog(program, log), "report its log")
        log_text = log.value.decode(errors="replace")
        if failed:
            first = next((line for line in log_text.splitlines() if "error" in line), log_text.strip()[:300])
            raise SassError(f"NVRTC could not build {entry} for {arch}: {first.strip()}")
        mangled = ctypes.c_char_p()
        check(nvrtc.nvrtcGetLoweredName(program, entry.encode(), ctypes.byref(mangled)), f"name {entry}")
        mangled_name = mangled.value.decode()
        check(nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(size)), "size the cubin")
        cubin = ctypes.create_string_buffer(size.value)
        check(nvrtc.nvrtcGetCUBIN(program, cubin), "hand over the cubin")
        return cubin.raw, entry_report(log_text, mangled_name), mangled_name
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))


def entry_report(log: str, mangled: str) -> str:
    """ptxas's -v lines for one kernel: from its 'Compiling entry function' line to the next kernel's."""
    start = log.find(f"Compiling entry function '{mangled}'")
    if start < 0:
        return ""
    end = log.find("Compiling entry function", start + 1)
    return log[start:end if end >= 0 else len(log)]


def nvrtc_version() -> str:
    major, minor = ctypes.c_int(), ctypes.c_int()
    load_nvrtc().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


def disassemble(cubin: bytes, mangled: str, folder: Path) -> str:
    """cuobjdump -sass of the one kernel `mangled` in the cubin (written into folder)."""
    path = folder / "kernel.cubin"
    path.write_bytes(cubin)
    tool = cuobjdump()
    if tool is None:
        raise SassError(unavailable())
    try:
        done = subprocess.run([str(tool), "-sass", "-fun", mangled, str(path)], capture_output=True, text=True)
    except OSError as error:
        raise SassError(f"cuobjdump did not run: {error}") from None
    if done.returncode:
        raise SassError(f"cuobjdump could not read the cubin: {done.stderr.strip()[:200]}")
    return done.stdout


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


def count_wait(i: Instruction) -> tuple[int, int] | None:
    """(scoreboard, pending count) of an unpredicated DEPBAR.LE with nothing more to wait on, else None."""
    match = DEPBAR_LE.fullmatch(i.text)
    if not match:
        return None
    count = match.group(2)
    return int(match.group(1)), int(count, 16) if count.startswith("0x") else int(count)


def copy_first_wait(instructions: list[Instruction], n: int) -> int | None:
    """For the LDGSTS at n: the index of the first DEPBAR.LE, on the scoreboard of the commit that closes its
    group, that leaves fewer of that scoreboard's groups pending than were committed from its group on.
    None where no DEPBAR.LE does (no commit closes it, or something else waits for it: an mbarrier)."""
    closing = next((m for m in range(n + 1, len(instructions)) if instructions[m].opcode == COMMIT), None)
    if closing is None or instructions[closing].sets is None:
        return None
    board = instructions[closing].sets

    def commits(i: Instruction) -> bool:
        return i.opcode == COMMIT and i.sets == board
    committed_before = sum(1 for i in instructions[:n] if commits(i))
    committed = committed_before
    for m in range(n + 1, len(instructions)):
        committed += commits(instructions[m])
        wait = count_wait(instructions[m])
        if wait and wait[0] == board and committed - wait[1] > committed_before:
            return m
    return None


def first_waits(instructions: list[Instruction]) -> list[int | None]:
    """For each global load (LDG) and async copy (LDGSTS), the index of the instruction where the thread
    first stops until it is written: for a load the end where nothing waits on it, for a copy None where
    no DEPBAR.LE does."""
    found = []
    for n, load in enumerate(instructions):
        if load.opcode == GLOBAL_LOAD and load.sets is not None:
            found.append(next((m for m in range(n + 1, len(instructions)) if load.sets in instructions[m].waits),
                              len(instructions)))
        elif load.opcode == ASYNC_COPY:
            found.append(copy_first_wait(instructions, n))
    return found


def caveats(instructions: list[Instruction]) -> list[str]:
    """What this address-order reading does not follow, where the listing has it."""
    commit_boards = {i.sets for i in instructions if i.opcode == COMMIT and i.sets is not None}
    unfollowed = [i for i in instructions if i.opcode == "DEPBAR" and (count_wait(i) or (None,))[0] not in commit_boards]
    said = [f"a DEPBAR this reading does not follow at 0x{unfollowed[0].address:04x} ({unfollowed[0].text})"] if unfollowed else []
    predicated = next((i for i in instructions if i.opcode == COMMIT and i.text.startswith("@")), None)
    if predicated:
        said.append(f"a commit under a predicate at 0x{predicated.address:04x}: read as if it always runs")
    bulk = sorted({i.opcode for i in instructions if i.opcode in BULK_COPIES})
    if bulk:
        said.append(f"bulk or tensor copies ({', '.join(bulk)}) are not counted")
    for i in instructions:
        target = BRANCH_TARGET.search(i.text)
        if target and int(target.group(1), 16) < i.address:
            said.append(f"a backward branch at 0x{i.address:04x} (a loop): the counts are one pass through it")
            break
    return said


def schedule(instructions: list[Instruction]) -> dict:
    """The global loads by the scoreboard each sets, the async copies and their commit groups, and the FFMAs
    placed after the point where the last load or copy is first waited for (None where there is none)."""
    loads = [i for i in instructions if i.opcode == GLOBAL_LOAD]
    fma_at = [n for n, i in enumerate(instructions) if i.opcode == FMA]
    waited = first_waits(instructions)
    last_waited = max((at for at in waited if at is not None), default=None)
    unwaited = sum(1 for at in waited if at is None)
    said = caveats(instructions) + ([f"{unwaited} async copies that no DEPBAR.LE waits for (an mbarrier may): "
                                     "not in the FFMA count"] if unwaited else [])
    return {"global_loads": len(loads),
            "loads_by_scoreboard": {str(board): sum(1 for i in loads if i.sets == board)
                                    for board in sorted({i.sets for i in loads if i.sets is not None})},
            "async_copies": sum(1 for i in instructions if i.opcode == ASYNC_COPY),
            "commit_groups": sum(1 for i in instructions if i.opcode == COMMIT),
            "fmas": len(fma_at),
            "fmas_after_last_load_waited": None if last_waited is None else sum(1 for n in fma_at if n >= last_waited),
            "caveats": said}


def resources(report: str) -> dict:
    """ptxas -v's registers and spill bytes, from one kernel's report."""
    registers = re.search(r"Used (\d+) registers", report)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    return {"registers": int(registers.group(1)) if registers else None,
            "spill_store_bytes": int(spills.group(1)) if spills else None,
            "spill_load_bytes": int(spills.group(2)) if spills else None}


def kernel_entries(source: str) -> list[str]:
    """The __global__ functions of a CUDA source, templates with their parameters' names: NAME<W, V, EF>."""
    pattern = re.compile(r"(?:template\s*<([^>]*)>\s*)?__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)")
    entries = []
    for params, name in pattern.findall(source):
        names = [p.split()[-1] for p in params.split(",") if p.strip()]
        entries.append(f"{name}<{', '.join(names)}>" if names else name)
    return entries


def sass_record(source: str, entry: str, arch: str, folder: Path) -> tuple[dict, str]:
    """(the record, the SASS listing) of one entry of a CUDA source; the cubin is left in folder."""
    if not ARCH.fullmatch(arch):
        raise SassError(f"--arch {arch!r} is not a GPU architecture such as sm_90 (the H100, H200) or sm_100 (the B200)")
    cubin, report, mangled = build(source, entry, arch)
    listing = disassemble(cubin, mangled, folder)
    instructions = parse(listing)
    if not instructions:
        raise SassError(f"cuobjdump printed no instruction of {entry} that this reading knows (sm_70 and later)")
    mix = {}
    for i in instructions:
        mix[i.opcode] = mix.get(i.opcode, 0) + 1
    record = {"entry": entry, "mangled": mangled, "arch": arch, "nvrtc": nvrtc_version(), **resources(report),
              "instructions": len(instructions), "mix": dict(sorted(mix.items(), key=lambda kv: -kv[1])),
              **schedule(instructions)}
    return record, listing


def format_record(record: dict) -> str:
    """The record as a few lines a person reads."""
    top = ", ".join(f"{op} {n}" for op, n in list(record["mix"].items())[:8])
    boards = ", ".join(f"SB{b}: {n}" for b, n in record["loads_by_scoreboard"].items())
    after = record["fmas_after_last_load_waited"]
    lines = [
        f"{record['entry']} for {record['arch']} (NVRTC {record['nvrtc']})",
        f"  registers {record['registers']}, spills {record['spill_store_bytes']} B stored / "
        f"{record['spill_load_bytes']} B loaded; {record['instructions']} instructions: {top}",
        f"  global loads {record['global_loads']}, by the scoreboard each sets: {boards or 'none'}"]
    if record["async_copies"]:
        groups = record["commit_groups"]
        lines.append(f"  async copies (cp.async) {record['async_copies']}, in {groups} commit group{'s' * (groups != 1)}")
    lines.append(f"  FFMAs after the last load or copy is first waited for: {after} of {record['fmas']}"
                 if after is not None else f"  no global load, so no FFMA waits behind one ({record['fmas']} FFMAs)")
    return "\n".join(lines + [f"  caveat: {why}" for why in record["caveats"]])
