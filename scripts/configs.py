"""The config table inside a submission: read and rewritten between its markers, nothing else touched.

Both submissions hold a table as plain data, `NAME = {key: value, ...}`, between the lines
`# <configs>` and `# </configs>`; the Helion submission holds a second, its lane kernel's, between
`# <lanes-configs>` and `# </lanes-configs>` (LANES). Keys are tuples; values are tuples (Triton: BLOCK,
num_warps; Helion's lane kernel: V, num_warps, evict, halo) or dicts (Helion configs, one key per line), so a
change to one entry is one line in a diff.
"""
import ast
import difflib
import os

BEGIN, END = "# <configs>", "# </configs>"
MAIN = (BEGIN, END)
LANES = ("# <lanes-configs>", "# </lanes-configs>")


def _split(text: str, markers: tuple[str, str]) -> tuple[str, str, str]:
    begin, end = markers
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"the file has no config table between one {begin!r} line and one {end!r} line")
    head, rest = text.split(begin, 1)
    block, tail = rest.split(end, 1)
    return head, block, tail


def read_table(text: str, markers: tuple[str, str] = MAIN) -> tuple[str, dict]:
    """(the table's name, its entries) from a submission's text."""
    _, block, _ = _split(text, markers)
    body = [node for node in ast.parse(block).body if isinstance(node, ast.Assign)]
    if len(body) != 1 or not isinstance(body[0].targets[0], ast.Name):
        raise ValueError("the config table must be one assignment, NAME = {...}")
    return body[0].targets[0].id, ast.literal_eval(body[0].value)


def tile_label(config) -> str:
    """A tile's or config's one text form: its numbers joined by '/' (1024/1, 2048/4/8), then how it is
    built, where the config says: 'cuda' as itself, a control file by its name (1024/1 +a.acf).
    Records hold the config itself, as a list. A flag (True/False) has no text form here, so two configs
    apart only by one would share a label: a kernel file says such a choice as text (its build or hint)."""
    flags = [v for v in config if isinstance(v, bool) or not isinstance(v, (int, str, type(None)))]
    if flags:
        raise ValueError(f"config {tuple(config)} has entries a label cannot show ({flags}): "
                         "give each choice as a number or as text")
    numbers = "/".join(str(v) for v in config if isinstance(v, int))
    return numbers + "".join(f" {build_label(v)}" for v in config if isinstance(v, str) and v)


def build_label(build: str) -> str:
    """A config's build entry in short: ptxas options that apply a control file by the file's name, '+name'."""
    words = build.split()
    if len(words) == 2 and words[0] == "--apply-controls":
        return "+" + os.path.basename(words[1])
    return build


WIDTH = 110


def _wrapped(value, indent: str, used: int) -> str:
    """repr(value), a long flat list broken over lines of at most WIDTH characters (`used` stand before it)."""
    text = repr(value)
    if used + len(text) + 1 <= WIDTH or not isinstance(value, list):
        return text
    lines, line = [], ""
    for item in map(repr, value):
        if line and len(indent) + 4 + len(line) + len(item) + 2 > WIDTH:
            lines.append(line.rstrip())
            line = ""
        line += item + ", "
    lines.append(line.rstrip())
    return "[\n" + "".join(f"{indent}    {part}\n" for part in lines) + f"{indent}]"


def format_value(value) -> str:
    if isinstance(value, dict):
        inner = "".join(f"        {key!r}: {_wrapped(item, '        ', len(f'        {key!r}: '))},\n"
                        for key, item in value.items())
        return "{\n" + inner + "    }"
    return repr(value)


def format_table(name: str, table: dict) -> str:
    if not table:
        return f"{name} = {{}}"
    lines = [f"{name} = {{"]
    lines += [f"    {key!r}: {format_value(table[key])}," for key in sorted(table)]
    return "\n".join(lines + ["}"])


def rewrite(text: str, updates: dict | None = None, remove=(), markers: tuple[str, str] = MAIN) -> str:
    """The text with the table's entries updated and `remove`d; everything outside the markers kept."""
    head, _, tail = _split(text, markers)
    name, table = read_table(text, markers)
    table.update(updates or {})
    for key in remove:
        table.pop(key, None)
    return f"{head}{markers[0]}\n{format_table(name, table)}\n{markers[1]}{tail}"


def diff(old: str, new: str, name: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}"))
