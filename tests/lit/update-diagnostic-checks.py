#!/usr/bin/env python3
"""Pins orchc's diagnostics for .orch golden tests, like LLVM's update_test_checks.py.

Usage: tests/lit/update-diagnostic-checks.py build/bin/orchc tests/lit/orchc/names/*.orch

Each file gets a RUN line (unless it has one) and, at its end, CHECK lines holding exactly what
`orchc --check` prints now: every diagnostic with its source line and caret. Review the diff
before committing: the point of a golden test is that a person has read the output.
"""
import pathlib
import subprocess
import sys

RUN = ("// RUN: not orchc --check %s 2>&1 | FileCheck %s --strict-whitespace --match-full-lines"
       " --implicit-check-not=error: --implicit-check-not=warning: --implicit-check-not=note:")


def checkout_of(path: pathlib.Path) -> pathlib.Path:
    """The checkout a test file is in: the folder above its `tests` folder."""
    for folder in path.resolve().parents:
        if folder.name == "tests":
            return folder.parent
    return path.resolve().parent


def update(orchc: str, path: pathlib.Path) -> None:
    lines = [line for line in path.read_text().splitlines()
             if not line.startswith("// CHECK")]
    while lines and not lines[-1].strip():
        lines.pop()
    if not any("RUN:" in line for line in lines):
        lines.insert(0, RUN)
    path.write_text("\n".join(lines) + "\n")
    result = subprocess.run([orchc, "--check", str(path)], capture_output=True, text=True,
                            env={"NO_COLOR": "1"})
    if result.returncode == 0:
        sys.exit(f"{path}: orchc accepted it; a diagnostic test needs an error")
    checks = []
    for line in result.stderr.splitlines():
        if line.startswith(str(path) + ":"):
            line = "{{.*}}" + path.name + line[len(str(path)):]
        # An absolute path inside a message (a declared operator's script) differs by checkout.
        line = line.replace(str(checkout_of(path)) + "/", "{{.*}}/")
        checks.append(("// CHECK:" if not checks else "// CHECK-NEXT:") + line)
    path.write_text("\n".join(lines) + "\n\n" + "\n".join(checks) + "\n")


def main() -> None:
    orchc, *files = sys.argv[1:]
    for name in files:
        update(orchc, pathlib.Path(name))


if __name__ == "__main__":
    main()
