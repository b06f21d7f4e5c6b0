#!/usr/bin/env python3
"""Four structural rules of ordlab's source, checked from the text of src/:

1. No import cycle between modules. Every `crate::…` and `super::…` path in non-test code is
   an edge from the file's module to the module it names; edges are compared at the level
   where the two modules part (siblings under their nearest common parent), so a child using
   its parent's items is not a cycle, but `labs` → `report` → `labs` is.
2. No non-test function longer than 100 lines (`--warn N` lists those over N as well).
3. No lab kind imports another. The kinds are read from the `lab_families!` invocation
   (`family { Kind(module::Spec) = "name", … }`: the family and the path before the spec type
   are the kind's module, under the module that invokes the macro, so `priority { Zset(zset::
   ZsetSpec) … }` names `labs::priority::zset`), or a flat `lab_kinds!` one; finding no kind
   at all is itself a finding (the rule would check nothing). A file belongs
   to the deepest kind whose module contains it (the kind's own file and its children); any
   `crate::…`/`super::…` path in it, use groups `{a, b::c}` expanded, that names a module of
   another kind is a finding. Shared modules that are no kind (a family's common parts,
   `labs::procedure`) may be imported by every kind.
4. One fault type and one forwarding loop (issue 31). Outside `src/fault/` (and `fault.rs`),
   no struct, enum, type alias or trait whose name ends in `Fault`, `Faults` or `Kill` (the
   old `WorkerFault`, `SinkFault`, `LibraryFault`, `PlannedKill`): a new fault is an arm of
   `fault::Action` or `fault::Trigger`. Outside `src/interposer/forward.rs`, no
   `copy_bidirectional`, `io::copy` or `copy_buf`, and no hand-written forwarding loop: a
   `loop`/`while` that reads from one stream (`x.read…(`) and writes to another (`y.write…(`,
   y not read in that loop) and goes on (the write is not followed by `break`: a handshake
   that passes one message on and leaves the loop, as the PostgreSQL start-up phase does, is
   no forwarding loop). Test code is not checked.

Exit status 1 and one line per finding when a rule is broken; 0 otherwise.
Usage: scripts/check-structure.py [--warn 60] [src dir]
       scripts/check-structure.py --self-test
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


LAB_KINDS = re.compile(r"\blab_kinds!\s*\{")
LAB_FAMILIES = re.compile(r"\blab_families!\s*\{")
FAMILY_BLOCK = re.compile(r"\b([a-z_]\w*)\s*\{")
KIND_LINE = re.compile(r"\b\w+\s*\(\s*((?:\w+\s*::\s*)+)\w+\s*\)\s*=")


def block(text: str, open_at: int) -> str:
    """The text inside the braces that open at `open_at`."""
    depth, j = 1, open_at + 1
    while j < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        j += 1
    return text[open_at + 1:j - 1]


def lab_kinds(src: Path, files):
    """The module of every kind listed in the `lab_kinds!` invocation."""
    kinds = set()
    for f in files:
        text = code_only(strip_tests(f.read_text()))
        for m in LAB_KINDS.finditer(text):
            base = module_of(f, src)
            for line in KIND_LINE.finditer(block(text, m.end() - 1)):
                path = [p.strip() for p in line.group(1).split("::") if p.strip()]
                kinds.add(tuple(base) + tuple(path))
        # `lab_families! { family { Kind(kind::Spec) = "name", … } … }`: kinds inside their family.
        for m in LAB_FAMILIES.finditer(text):
            base = module_of(f, src)
            inner = block(text, m.end() - 1)
            pos = 0
            while (fm := FAMILY_BLOCK.search(inner, pos)):
                body = block(inner, fm.end() - 1)
                for line in KIND_LINE.finditer(body):
                    path = [p.strip() for p in line.group(1).split("::") if p.strip()]
                    kinds.add(tuple(base) + (fm.group(1),) + tuple(path))
                pos = fm.end() + len(body) + 1
    return kinds


IDENT = re.compile(r"\s*([A-Za-z_]\w*)")
SEP = re.compile(r"\s*::")
ALIAS = re.compile(r"\s+as\s+\w+")


def use_tree(text: str, pos: int):
    """The paths of a use tree (or a plain path) at `pos`: `a::b`, `a::{b, c::{self, d}}`,
    `a::*`; returns ([(parts, position of the last name)], position after the tree)."""
    m = IDENT.match(text, pos)
    if m:
        name, at, pos = m.group(1), m.start(1), m.end()
        if (a := ALIAS.match(text, pos)) and name != "as":
            pos = a.end()
        if sep := SEP.match(text, pos):
            sub, after = use_tree(text, sep.end())
            if sub:
                return [([name] + parts, p) for parts, p in sub], after
        return [([name], at)], pos
    m = re.compile(r"\s*\{").match(text, pos)
    if m:
        paths, pos = [], m.end()
        while True:
            sub, pos = use_tree(text, pos)
            paths += sub
            if c := re.compile(r"\s*,").match(text, pos):
                pos = c.end()
                continue
            if c := re.compile(r"\s*\}").match(text, pos):
                pos = c.end()
            return paths, pos
    if m := re.compile(r"\s*\*").match(text, pos):
        return [([], m.start())], m.end()
    return [], pos


def named_paths(me, text: str, modules):
    """Every module a `crate::…` or `super::…` path in `text` names, with its offset."""
    pos = 0
    while m := re.compile(r"\b(crate|super)\s*::").search(text, pos):
        paths, pos = use_tree(text, m.end())
        for parts, at in paths:
            parts = [p for p in parts if p != "self"]
            if m.group(1) == "crate":
                base = []
            else:
                base = list(me[:-1])
                while parts and parts[0] == "super":
                    base, parts = base[:-1], parts[1:]
            yield resolve(base + parts, modules) or tuple(base), at
        pos = max(pos, m.end())


SERDE_PATH = re.compile(r"\b(?:default|with|serialize_with|deserialize_with|skip_serializing_if)\s*=\s*\"((?:crate|super)::[\w:]+)\"")


def serde_paths(me, raw: str, code: str, modules):
    """Paths named in serde attributes (`default = "super::stream::one"`), which are strings:
    a dependency all the same. Only where the attribute is code, not a comment; with the
    line number."""
    lines = code.split("\n")
    for m in SERDE_PATH.finditer(raw):
        line = raw.count("\n", 0, m.start())
        if "serde" in lines[line]:
            for target, _ in named_paths(me, m.group(1), modules):
                yield target, line + 1


def kind_imports(src: Path, files):
    """(importing kind, imported kind, path:line) for every path from one kind to another."""
    kinds = lab_kinds(src, files)
    modules = {module_of(f, src) for f in files}
    owner = lambda mod: max((k for k in kinds if mod[:len(k)] == k), key=len, default=None)
    found = []
    for f in files:
        me = module_of(f, src)
        mine = owner(me)
        if mine is None or f.name == "tests.rs":
            continue
        raw = strip_tests(f.read_text())
        text = code_only(raw)
        seen = set()
        named = [(target, text.count("\n", 0, at) + 1) for target, at in named_paths(me, text, modules)]
        named += serde_paths(me, raw, text, modules)
        for target, line in sorted(named, key=lambda n: n[1]):
            theirs = owner(target)
            if theirs is not None and theirs != mine and (line, theirs) not in seen:
                seen.add((line, theirs))
                found.append((mine, theirs, f"{f}:{line}"))
    label = lambda k: "::".join(k[1:]) if len(k) > 1 else "::".join(k)
    return [(label(a), label(b), where) for a, b, where in found]


FAULT_SHAPE = re.compile(r"\b(struct|enum|type|trait)\s+(\w*(?:Fault|Faults|Kill))\b")
COPY_CALL = re.compile(r"\b(copy_bidirectional|copy_buf|io\s*::\s*copy)\b")
LOOP_HEAD = re.compile(r"\b(?:loop|while\b[^{;]*)\s*\{")
READ_CALL = re.compile(r"\b(\w+)\s*\.\s*(?:read|read_buf|read_exact|read_to_end)\s*\(")
WRITE_CALL = re.compile(r"\b(\w+)\s*\.\s*(?:write|write_all|write_buf)\s*\(")
STATEMENT_END = re.compile(r"[^;{}]*;\s*")


def fault_layer_outside(src: Path, files):
    """Rule 4: (path:line, what) for every fault shape outside src/fault/ and every copy or
    forwarding loop outside src/interposer/forward.rs."""
    out = []
    for f in files:
        mod = module_of(f, src)
        if f.name == "tests.rs":
            continue
        text = code_only(strip_tests(f.read_text()))
        line = lambda at: text.count("\n", 0, at) + 1
        if mod[:1] != ("fault",):
            for m in FAULT_SHAPE.finditer(text):
                out.append((f"{f}:{line(m.start())}", f"{m.group(1)} {m.group(2)} is a fault shape outside src/fault/: make it an arm of fault::Action or fault::Trigger"))
        if mod == ("interposer", "forward"):
            continue
        for m in COPY_CALL.finditer(text):
            out.append((f"{f}:{line(m.start())}", f"{m.group(1)} forwards bytes outside src/interposer/forward.rs: implement a forward::Direction"))
        for m in LOOP_HEAD.finditer(text):
            body = block(text, m.end() - 1)
            readers = {r.group(1) for r in READ_CALL.finditer(body)}
            if not readers:
                continue
            for w in WRITE_CALL.finditer(body):
                if w.group(1) in readers:
                    continue
                rest = body[w.end():]
                depth, j = 1, 0  # the call's closing parenthesis
                while j < len(rest) and depth:
                    depth += {"(": 1, ")": -1}.get(rest[j], 0)
                    j += 1
                after = STATEMENT_END.match(rest, j)
                if after and rest.startswith("break", after.end()):
                    continue
                out.append((f"{f}:{line(m.start())}", f"a loop reads {', '.join(sorted(readers))} and writes {w.group(1)}: a forwarding loop outside src/interposer/forward.rs (implement a forward::Direction)"))
                break
    return out


def findings(src: Path, kinds: bool):
    """One line per broken rule, in the order of the rules."""
    files = sorted(src.rglob("*.rs"))
    out = []
    for parent, comp in cycles(edges(src, files)):
        out.append(f"import cycle under {parent}: {' → '.join(comp)} → {comp[0]}")
    for length, where, name in long_functions(files, MAX_FN_LINES):
        out.append(f"{where}: fn {name} is {length} lines (at most {MAX_FN_LINES})")
    if kinds:
        if not lab_kinds(src, files):
            out.append("no lab kind found (no `lab_families!` or `lab_kinds!` invocation): the kind rule checks nothing")
        for mine, theirs, where in kind_imports(src, files):
            out.append(f"kind {mine} imports kind {theirs} ({where})")
    for where, what in fault_layer_outside(src, files):
        out.append(f"{where}: {what}")
    return out


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        sys.exit(self_test())
    warn, kinds = None, True
    while args[:1] in (["--warn"], ["--kinds"]):
        if args[0] == "--kinds":  # the kind rule is always on; the flag is kept for old callers
            args = args[1:]
        else:
            warn, args = int(args[1]), args[2:]
    src = Path(args[0] if args else "src")
    bad = findings(src, kinds)
    for line in bad:
        print(line)
    if warn is not None:
        for length, where, name in long_functions(sorted(src.rglob("*.rs")), warn):
            if length <= MAX_FN_LINES:
                print(f"note: {where}: fn {name} is {length} lines (aim for {warn})")
    if not bad:
        rules = "no import cycle between modules, no function over " + str(MAX_FN_LINES) + " lines"
        print(f"structure ok: {rules}" + (", no lab kind importing another" if kinds else "")
              + ", one fault layer (src/fault/) and one forwarding loop (src/interposer/forward.rs)")
    sys.exit(1 if bad else 0)


def self_test() -> int:
    """Each rule fires on a hand-written tree that breaks it and stays quiet on a clean one."""
    import shutil
    import tempfile
    import unittest

    labs = """
        macro_rules! lab_kinds { ($($t:tt)*) => {}; }
        lab_kinds! {
            /// One kind in its own file (`//` and "strings" do not confuse the reader).
            Alpha(alpha::AlphaSpec) = "alpha",
            /// Two kinds of one family, in the family's folder.
            Beta(fam::beta::BetaSpec) = "beta",
            Gamma(fam::gamma::GammaSpec) = "gamma",
        }
    """
    clean = {
        "lib.rs": "pub mod labs;\npub mod shared;\n",
        "shared.rs": "pub fn help() {}\n",
        "labs.rs": "pub mod procedure;\n" + labs,
        "labs/procedure.rs": "pub trait LabProcedure {}\n",
        "labs/alpha.rs": "use crate::shared::help;\nuse super::procedure::LabProcedure;\nmod lines;\n",
        "labs/alpha/lines.rs": "use super::super::procedure::LabProcedure;\nuse super::AlphaSpec;\n",
        "labs/fam.rs": "pub mod beta;\npub mod gamma;\npub fn common() {}\n",
        "labs/fam/beta.rs": "use super::common;\nuse crate::labs::{procedure::LabProcedure, fam};\n",
        "labs/fam/gamma.rs": "use super::{common, super::procedure};\n"
        "#[cfg(test)]\nmod tests {\n    use crate::labs::alpha;\n}\n",
    }

    roots = []

    def tree(files):
        root = Path(tempfile.mkdtemp(prefix="check-structure-"))
        roots.append(root)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        return root

    class Rules(unittest.TestCase):
        def test_a_clean_tree_is_quiet(self):
            self.assertEqual(findings(tree(clean), kinds=True), [])

        def test_a_cycle(self):
            files = dict(clean, **{"shared.rs": "use crate::labs::procedure::LabProcedure;\n",
                                   "labs/procedure.rs": "use crate::shared::help;\n"})
            out = findings(tree(files), kinds=False)
            self.assertEqual(out, ["import cycle under crate: labs → shared → labs"])

        def test_a_long_function(self):
            body = "".join(f"    let x{i} = {i};\n" for i in range(MAX_FN_LINES))
            root = tree(dict(clean, **{"shared.rs": "pub fn help() {\n" + body + "}\n"}))
            out = findings(root, kinds=False)
            self.assertEqual(out, [f"{root}/shared.rs:1: fn help is {MAX_FN_LINES + 2} lines (at most {MAX_FN_LINES})"])

        def test_a_kind_importing_another(self):
            files = dict(clean, **{
                "labs/alpha.rs": "use crate::labs::{\n    procedure,\n    fam::gamma::{self, GammaSpec},\n};\nmod lines;\n",
                "labs/alpha/lines.rs": "use super::super::fam::beta::BetaSpec;\n",
                "labs/fam/beta.rs": "use super::{common, gamma};\nfn f() { super::gamma::x(); }\n"
                "// #[serde(default = \"super::gamma::one\")] in a comment is no import\n"
                "#[serde(default = \"super::gamma::one\")]\n",
            })
            root = tree(files)
            self.assertEqual(findings(root, kinds=False), [])
            self.assertCountEqual(findings(root, kinds=True), [
                f"kind alpha imports kind fam::gamma ({root}/labs/alpha.rs:3)",
                f"kind alpha imports kind fam::beta ({root}/labs/alpha/lines.rs:1)",
                f"kind fam::beta imports kind fam::gamma ({root}/labs/fam/beta.rs:1)",
                f"kind fam::beta imports kind fam::gamma ({root}/labs/fam/beta.rs:2)",
                f"kind fam::beta imports kind fam::gamma ({root}/labs/fam/beta.rs:4)",
            ])

        def test_kinds_are_read_from_families(self):
            families = """
                macro_rules! lab_families { ($($t:tt)*) => {}; }
                lab_families! {
                    /// A family: its kinds are modules under it.
                    fam {
                        Beta(beta::BetaSpec) = "beta",
                        Gamma(gamma::GammaSpec) = "gamma",
                    }
                    solo { Alpha(alpha::AlphaSpec) = "alpha", }
                }
            """
            root = tree(dict(clean, **{"labs.rs": "pub mod procedure;\n" + families}))
            files = sorted(root.rglob("*.rs"))
            self.assertEqual(lab_kinds(root, files), {("labs", "solo", "alpha"), ("labs", "fam", "beta"), ("labs", "fam", "gamma")})

        def test_no_kind_found_is_a_finding(self):
            root = tree(dict(clean, **{"labs.rs": "pub mod procedure;\n"}))
            self.assertEqual(findings(root, kinds=True), [
                "no lab kind found (no `lab_families!` or `lab_kinds!` invocation): the kind rule checks nothing"])

        def test_a_second_fault_shape_outside_the_fault_layer(self):
            files = dict(clean, **{
                "fault.rs": "pub mod declare;\n",
                "fault/declare.rs": "pub struct Fault { pub n: u32 }\npub enum Action { Kill }\n",
                "shared.rs": "pub fn help() {}\n// struct OldFault in a comment is no shape\n"
                "pub(crate) enum SinkFault { Refuse }\n"
                "#[cfg(test)]\nmod tests {\n    struct TestFault;\n}\n",
                "labs/alpha.rs": "mod lines;\nstruct PlannedKill { at: u32 }\nstruct Crashed;\n",
            })
            root = tree(files)
            rule = "a fault shape outside src/fault/: make it an arm of fault::Action or fault::Trigger"
            self.assertEqual(findings(root, kinds=True), [
                f"{root}/labs/alpha.rs:2: struct PlannedKill is {rule}",
                f"{root}/shared.rs:3: enum SinkFault is {rule}",
            ])

        def test_a_second_forwarding_loop_outside_forward_rs(self):
            pump = ("async fn pump(mut a: TcpStream, mut b: TcpStream) {\n"
                    "    let mut buf = [0u8; 1024];\n"
                    "    loop {\n"
                    "        let n = a.read(&mut buf).await.unwrap();\n"
                    "        if n == 0 { break; }\n"
                    "        b.write_all(&buf[..n]).await.unwrap();\n"
                    "    }\n"
                    "}\n")
            # A start-up phase: answers on the stream it reads, passes one message on, leaves.
            handshake = ("async fn start(mut client: TcpStream, mut server: TcpStream) -> io::Result<()> {\n"
                         "    loop {\n"
                         "        let n = client.read_buf(&mut pending).await?;\n"
                         "        if ssl { client.write_all(b\"N\").await?; } else {\n"
                         "            server.write_all(&pending).await?;\n"
                         "            break;\n"
                         "        }\n"
                         "    }\n"
                         "}\n")
            files = dict(clean, **{
                "interposer.rs": "pub mod forward;\npub mod proxy;\npub mod link;\n",
                "interposer/forward.rs": pump + "fn both(a: S, b: S) { tokio::io::copy_bidirectional(a, b); }\n",
                "interposer/proxy.rs": handshake + "#[cfg(test)]\nmod tests {\n" + pump + "}\n",
                "interposer/link.rs": "use tokio::io;\n" + pump + "fn both(a: S, b: S) { io::copy(a, b); }\n",
            })
            root = tree(files)
            self.assertEqual(findings(root, kinds=True), [
                f"{root}/interposer/link.rs:10: io::copy forwards bytes outside src/interposer/forward.rs: "
                "implement a forward::Direction",
                f"{root}/interposer/link.rs:4: a loop reads a and writes b: a forwarding loop outside "
                "src/interposer/forward.rs (implement a forward::Direction)",
            ])

        def test_kinds_are_read_from_the_invocation(self):
            root = tree(clean)
            files = sorted(root.rglob("*.rs"))
            self.assertEqual(lab_kinds(root, files), {("labs", "alpha"), ("labs", "fam", "beta"), ("labs", "fam", "gamma")})

    suite = unittest.defaultTestLoader.loadTestsFromTestCase(Rules)
    ok = unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful()
    for root in roots:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    main()
