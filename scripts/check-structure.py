#!/usr/bin/env python3
"""Two structural rules of ordlab's source, checked from the text of src/:

1. No import cycle between modules. Every `crate::…` and `super::…` path in non-test code is
   an edge from the file's module to the module it names; edges are compared at the level
   where the two modules part (siblings under their nearest common parent), so a child using
   its parent's items is not a cycle, but `labs` → `report` → `labs` is.
2. No non-test function longer than 100 lines (`--warn N` lists those over N as well).

Exit status 1 and one line per finding when a rule is broken; 0 otherwise.
Usage: scripts/check-structure.py [--warn 60] [src dir]
"""
import re
import sys
from pathlib import Path

MAX_FN_LINES = 100


def module_of(path: Path, src: Path):
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def strip_tests(text: str) -> str:
    """Drop `#[cfg(test)] mod tests { … }` blocks and `#[cfg(test)] mod tests;` lines."""
    out, i = [], 0
    pattern = re.compile(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*(\{|;)")
    while True:
        m = pattern.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i:m.start()])
        if m.group(1) == ";":
            i = m.end()
            continue
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    return "".join(out)


CHAR_LITERAL = re.compile(r"'(?:\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^'\\\n])'")
RAW_STRING = re.compile(r'b?r(#*)"')


def code_only(text: str) -> str:
    """Blank out comments, string and char literals so paths and braces inside them do not
    count. One pass from left to right, so `//` inside a string ("redis://…") is not taken for
    a comment; newlines inside blanked text are kept, so line numbers stay true."""
    out, i, n = [], 0, len(text)
    keep_lines = lambda s: "\n" * s.count("\n")
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(keep_lines(text[i:j]))
            i = j
        elif (m := RAW_STRING.match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            end = text.find(close, m.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + keep_lines(text[i:end]))
            i = end
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + keep_lines(text[i:j + 1]))
            i = j + 1
        elif text[i] == "'" and (m := CHAR_LITERAL.match(text, i)):
            out.append("' '")
            i = m.end()
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def resolve(path, modules):
    """The longest existing module that prefixes `path`."""
    for n in range(len(path), 0, -1):
        if tuple(path[:n]) in modules:
            return tuple(path[:n])
    return None


def edges(src: Path, files):
    modules = {module_of(f, src) for f in files}
    found = set()
    for f in files:
        me = module_of(f, src)
        if f.name == "tests.rs":
            continue
        text = code_only(strip_tests(f.read_text()))
        for m in re.finditer(r"\b(crate|super)((?:::\w+)+)", text):
            parts = m.group(2).strip(":").split("::")
            if m.group(1) == "crate":
                target = resolve(parts, modules)
            else:
                base = list(me[:-1])
                while parts and parts[0] == "super":
                    base, parts = base[:-1], parts[1:]
                target = resolve(base + parts, modules) or tuple(base)
            if target is not None and target != me:
                found.add((me, target))
        # `use {a::b, c}` groups under crate:: are covered by the regex for the first name only.
        for m in re.finditer(r"\bcrate::\{([^}]*)\}", text):
            for name in re.split(r"[,\s]+", m.group(1)):
                name = name.split("::")[0]
                if name and (name,) in modules:
                    found.add((me, (name,)))
    return found


def cycles(found):
    """Cycles among siblings: an edge a::x → a::y::z counts as x → y under a."""
    graphs = {}
    for a, b in found:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        if n == len(a) or n == len(b):
            continue  # an ancestor and its descendant
        graphs.setdefault(a[:n], {}).setdefault(a[n], set()).add(b[n])
    out = []
    for parent, g in sorted(graphs.items()):
        index, low, stack, on, counter = {}, {}, [], set(), [0]

        def strong(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in g.get(v, ()):
                if w not in index:
                    strong(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(("::".join(parent) or "crate", sorted(comp)))

        for v in sorted(g):
            if v not in index:
                strong(v)
    return out


def long_functions(files, limit):
    out = []
    for f in files:
        if f.name == "tests.rs":
            continue
        lines = code_only(strip_tests(f.read_text())).split("\n")
        for i, line in enumerate(lines):
            m = re.match(r"\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)", line)
            if not m:
                continue
            depth, started, j = 0, False, i
            while j < len(lines):
                for c in lines[j]:
                    if c == "{":
                        depth, started = depth + 1, True
                    elif c == "}":
                        depth -= 1
                if started and depth == 0:
                    break
                if not started and lines[j].rstrip().endswith(";"):
                    break
                j += 1
            length = j - i + 1
            if started and length > limit:
                out.append((length, f"{f}:{i + 1}", m.group(6)))
    return sorted(out, reverse=True)


def main():
    args = sys.argv[1:]
    warn = None
    if args[:1] == ["--warn"]:
        warn, args = int(args[1]), args[2:]
    src = Path(args[0] if args else "src")
    files = sorted(src.rglob("*.rs"))
    bad = False
    for parent, comp in cycles(edges(src, files)):
        print(f"import cycle under {parent}: {' → '.join(comp)} → {comp[0]}")
        bad = True
    for length, where, name in long_functions(files, MAX_FN_LINES):
        print(f"{where}: fn {name} is {length} lines (at most {MAX_FN_LINES})")
        bad = True
    if warn is not None:
        for length, where, name in long_functions(files, warn):
            if length <= MAX_FN_LINES:
                print(f"note: {where}: fn {name} is {length} lines (aim for {warn})")
    if not bad:
        print(f"structure ok: no import cycle between modules, no function over {MAX_FN_LINES} lines")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
