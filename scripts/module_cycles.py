#!/usr/bin/env python3
"""Import cycles among a crate's modules: which top-level module of src/ names which other
(`crate::x` in code; comments, #[cfg(test)] modules and `crate::x!` macros ignored). A file importing from a file
that imports it is an anti-pattern of STYLE.md; this keeps the crates that are free of it free.

    scripts/module_cycles.py crates/producer [crates/consumer ...]   # exit 1 on a cycle
    scripts/module_cycles.py --graph crates/producer                 # print the graph too
"""
import glob
import os
import re
import sys


def graph(crate):
    src = os.path.join(crate, "src")
    mods = {}
    for path in glob.glob(os.path.join(src, "**", "*.rs"), recursive=True):
        top = os.path.relpath(path, src).split(os.sep)[0].removesuffix(".rs")
        if top in ("lib", "main", "bin"):
            continue
        text = open(path, encoding="utf-8").read()
        cut = text.find("#[cfg(test)]\nmod tests")
        if cut >= 0:
            text = text[:cut]
        code = "\n".join(l for l in text.split("\n") if not l.strip().startswith("//"))
        # `crate::name!` is an exported macro, which lives at the crate's root, not in a module.
        deps = set(re.findall(r"\bcrate::([a-z_][a-z0-9_]*)\b(?!!)", code)) - {top}
        mods.setdefault(top, set()).update(deps)
    return {m: {d for d in deps if d in mods} for m, deps in mods.items()}


def cycles(mods):
    state, found = {}, []

    def visit(u, stack):
        state[u] = 1
        stack.append(u)
        for v in sorted(mods[u]):
            if state.get(v) == 1:
                found.append(stack[stack.index(v):] + [v])
            elif v not in state:
                visit(v, stack)
        stack.pop()
        state[u] = 2

    for m in sorted(mods):
        if m not in state:
            visit(m, [])
    return found


def main(argv):
    show = "--graph" in argv
    crates = [a for a in argv if a != "--graph"]
    bad = False
    for crate in crates:
        mods = graph(crate)
        if show:
            for m in sorted(mods):
                print(f"  {m} -> {', '.join(sorted(mods[m])) or '(none)'}")
        found = cycles(mods)
        for c in found:
            print(f"{crate}: import cycle {' -> '.join(c)}", file=sys.stderr)
        bad |= bool(found)
        print(f"{crate}: {len(mods)} modules, {'no cycle' if not found else f'{len(found)} cycles'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
