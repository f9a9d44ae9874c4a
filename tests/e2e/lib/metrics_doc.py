#!/usr/bin/python3
"""Checks docs/observability.md's table of metrics fields against real metrics files.

usage: metrics_doc.py OBSERVABILITY.md METRICS.json [METRICS.json ...]

Both ways: every field the files have is documented, with the type they have; every documented
field without a `?` is in every file that has what holds it (the object, or members of the
list); every key of a `counts` object is named in its row. Prints each difference; exits 1 if any.
"""
import json
import re
import sys

TYPES = {"int", "float", "string", "bool", "list", "object", "counts", "pairs"}


def documented(markdown):
    section = markdown.split("## `--metrics FILE.json`", 1)[1].split("\n## ", 1)[0]
    fields = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        kind = cells[1]
        optional = kind.endswith("?")
        kind = kind.rstrip("?")
        if kind not in TYPES:
            raise SystemExit("unknown type %r in the row of %s" % (cells[1], cells[0]))
        named = set(re.findall(r"`([^`]+)`", cells[2]))
        for path in re.findall(r"`([^`]+)`", cells[0]):
            fields[path] = (kind, optional, named)
    return fields


def kind_of(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def walk(value, path, found, docs):
    """Records (path -> set of kinds) of every field, descending into lists' objects (whose
    members are recorded as "list[]", without a kind)."""
    if path.endswith("[]"):
        found.setdefault(path, set())
    elif path:
        found.setdefault(path, set()).add(kind_of(value))
    if isinstance(value, dict):
        if path in docs and docs[path][0] == "counts":
            for key, count in value.items():
                found.setdefault(path + "." + key, set()).add("count:" + kind_of(count))
            return
        for key, sub in value.items():
            walk(sub, (path + "." if path else "") + key, found, docs)
    elif isinstance(value, list):
        for sub in value:
            if isinstance(sub, dict):
                walk(sub, path + "[]", found, docs)


def main():
    docs = documented(open(sys.argv[1], encoding="utf-8").read())
    problems = []
    for name in sys.argv[2:]:
        found = {}
        walk(json.load(open(name)), "", found, docs)
        for path, kinds in sorted(found.items()):
            parent = path.rsplit(".", 1)[0]
            if parent in docs and docs[parent][0] == "counts" and path not in docs:
                key = path.rsplit(".", 1)[1]
                if key not in docs[parent][2]:
                    problems.append("%s: %s has the key %r, which its row does not name"
                                    % (name, parent, key))
                if kinds != {"count:int"}:
                    problems.append("%s: %s is %s, not an int" % (name, path, kinds))
                continue
            if path.endswith("[]"):
                continue
            if path not in docs:
                problems.append("%s: %s (%s) is not documented" % (name, path, "/".join(kinds)))
                continue
            want = docs[path][0]
            allowed = {"pairs": {"list"}, "counts": {"object"}}.get(want, {want})
            # A float that happens to be whole is written with a point, so ints never pass as
            # floats; an empty list says nothing about its members.
            if not kinds <= allowed:
                problems.append("%s: %s is %s; the documentation says %s"
                                % (name, path, "/".join(sorted(kinds)), want))
        # A documented field must be there wherever what holds it is (a list's members when it
        # has any, an object when it is there).
        for path, (kind, optional, _) in docs.items():
            container = path.rsplit(".", 1)[0] if "." in path else ""
            if optional or (container and container not in found):
                continue
            if path not in found:
                problems.append("%s: the documented %s is missing" % (name, path))
    for problem in problems:
        print(problem)
    print("%d documented fields, %d files: %d problem(s)"
          % (len(docs), len(sys.argv) - 2, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
