#!/usr/bin/env python3
"""The library matrix: results/libraries.md from the reports `ordlab run library-* --out DIR` wrote.

Rows are library@version, columns the faults; each cell names the variants that placed that
fault on that library with the counts the tool measured (its `measured (run N): …` lines,
summed over runs), and a fault no variant placed on a library says "not run". Nothing here judges a run: the verdicts are ordlab's.

Usage: scripts/library-matrix.py DIR > results/libraries.md   (DIR: an --out directory; `just libraries`)
"""

import gzip
import json
import re
import sys
from pathlib import Path

# The columns: the fault kinds of issue 32's matrix, then the lab's other steps.
COLUMNS = [
    ("kill-after-fetch", "SIGKILL at a command's reply (after fetch)"),
    ("kill-at-send", "SIGKILL as a command is sent"),
    ("stop-mid-handler", "SIGTERM / SIGKILL mid-handler"),
    ("pause", "pause (SIGSTOP) in the handler"),
    ("held", "a command held, another process's step"),
    ("lost-reply", "lost reply"),
    ("reset", "connection reset"),
    ("restart", "server restart"),
    ("none", "no fault (configuration, timing)"),
]
COUNTED = ["lost", "duplicate", "stuck", "disagreement", "failed", "once"]


def column_of(procedure):
    """The column of a variant, from what its workers were given: (column, what was hit)."""
    for w in procedure.get("workers", []):
        for f in w.get("faults", []):
            action = f.get("action")
            if isinstance(action, dict) and "pause_ms" in action:
                return "pause", f"{action['pause_ms']:g} ms at {f.get('event', '?')} {f.get('job', '')}".strip()
            if action in ("lose-reply", "apply-then-fail"):
                return "lost-reply", f.get("command", "")
            if action == "restart":
                return "restart", f.get("command", "")
            if action == "reset":
                return "reset", f.get("command", "")
            if f.get("command") and action == "kill":
                return ("kill-after-fetch" if f.get("at", "reply") == "reply" else "kill-at-send"), f["command"]
            if f.get("event") and action == "kill":
                return "stop-mid-handler", f"SIGKILL at {f['event']} {f.get('job', '')}".strip()
        if w.get("on_start"):
            s = w["on_start"]
            return "stop-mid-handler", f"SIG{s.get('signal', '?').upper()} at {s.get('job', '?')}'s start"
        if w.get("hold"):
            h = w["hold"]
            return "held", f"{h.get('command', '?')} after {h.get('after', '?')}"
    return "none", ""


def measured(text):
    """{variant id: (runs, {count: sum})} from a text report's `### id:` and `measured` lines."""
    out, current = {}, None
    for line in text.splitlines():
        m = re.match(r"### ([\w.-]+): ", line)
        if m:
            current = m.group(1)
            out.setdefault(current, (0, {k: 0 for k in COUNTED}))
            continue
        m = re.match(r"\s+measured \(run \d+\): (.*)", line)
        if m and current:
            pairs = dict(p.split("=") for p in m.group(1).split(", "))
            runs, sums = out[current]
            dup = int(pairs["duplicate_sequential"]) + int(pairs["duplicate_overlapping"])
            for k in COUNTED:
                sums[k] += dup if k == "duplicate" else int(pairs[k])
            out[current] = (runs + 1, sums)
    return out


def cell(runs, sums, hit):
    words = f"lost {sums['lost']} · dup {sums['duplicate']} · stuck {sums['stuck']}"
    for k in ("disagreement", "failed"):
        if sums[k]:
            words += f" · {k} {sums[k]}"
    return f"{hit + ': ' if hit else ''}{words} ({runs} run{'s' if runs != 1 else ''})"


def main(directory):
    d = Path(directory)
    rows, environment = [], None
    for path in sorted((d / "records").glob("*.json.gz")):
        record = json.loads(gzip.open(path).read())
        report = record.get("report", record)
        if report["variants"] and report["variants"][0]["procedure"].get("kind") != "library":
            continue
        lab = report["lab"]["id"]
        text = (d / f"{lab}.txt").read_text(errors="replace")
        environment = environment or text.splitlines()[0]
        counts = measured(text)
        for v in report["variants"]:
            p = v["procedure"]
            library = f"{p['library']['name']}@{p['library']['version']}"
            column, hit = column_of(p)
            runs, sums = counts.get(v["id"], (0, None))
            value = cell(runs, sums, hit) if runs else "no measured line"
            rows.append((library, lab, v["id"], column, value, v.get("outcome", "?")))
    if not rows:
        sys.exit(f"library-matrix: no library lab's record in {d}/records: run `just libraries` (ordlab run library-… --out {d})")
    print("# Job-queue libraries under faults (generated: `just libraries`; never edited by hand)\n")
    print(f"{environment}\n")
    print("Rows are the libraries at their versions, columns the faults; each cell names the variants")
    print("that placed that fault on that library (linked to their report, where the configuration")
    print("is in the variant's title) and the jobs lost, run more than once (dup: sequential +")
    print("overlapping) and stuck, summed over its runs, as ordlab's job-queue checker judged them.")
    print("\"not run\": no variant places that fault on that library yet.\n")
    libraries = sorted({r[0] for r in rows})
    head = ["library"] + [name for _, name in COLUMNS]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for library in libraries:
        cells = []
        for key, _ in COLUMNS:
            here = [f"[{vid}](libraries/{lab}.txt): {value}" for lib, lab, vid, column, value, _ in rows
                    if lib == library and column == key]
            cells.append("<br>".join(here) if here else "not run")
        print(f"| {library} | " + " | ".join(cells) + " |")
    print("\n## Each variant\n")
    print("| library | variant | fault | measured | outcome |")
    print("|---|---|---|---|---|")
    names = dict(COLUMNS)
    for library, lab, vid, column, value, outcome in rows:
        print(f"| {library} | [{vid}](libraries/{lab}.txt) | {names[column]} | {value} | {outcome} |")
    names_only = sorted({r[0].split("@")[0] for r in rows})
    placed = {r[3] for r in rows}
    missing = [name for key, name in COLUMNS if key not in placed]
    print(f"\n{len(names_only)} libraries ({', '.join(names_only)}), {len(rows)} variants.", end="")
    if missing:
        print(f" Faults no variant places yet: {', '.join(missing)}.")
    else:
        print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1])
