"""Prints a previous benchmark run's figures next to a new run's, so that a regression shows.
Reads the results.json that bench/experiments/run.py and bench/real/run.py write (and the
copies kept in bench/results/): every table row is matched by its first cell, every number in
it by its column's name.

usage: compare.py OLD.json NEW.json [--all | --over PCT]
  Without --all, only the figures that moved by more than 5 % (PCT %) are printed. For a
  regression check, make OLD and NEW the same day (bench/ab.sh builds a reference commit and runs
  both): between days this machine moves figures by more than 5 %."""
import json, re, sys

NUMBER = re.compile(r"^[-+]?[\d,]*\.?\d+")


def number(cell):
    """The leading number of a table cell ("45.90", "16%", "15.24×", "5125 (22.8%)"), or None."""
    found = NUMBER.match(str(cell).strip())
    return float(found.group().replace(",", "")) if found else None


def figures(results, headers):
    """{(experiment, row label, column name): (text, number)} for every numeric cell."""
    out = {}
    for experiment, rows in results.get("experiments", {}).items():
        if not isinstance(rows, list) or not rows or not isinstance(rows[0], list):
            continue
        header = headers.get(experiment)
        for row in rows:
            for column, cell in enumerate(row[1:], start=1):
                value = number(cell)
                if value is not None:
                    name = header[column] if header and column < len(header) else f"column {column + 1}"
                    out[(experiment, str(row[0]), name)] = (str(cell), value)
    return out


def main():
    over = 5.0
    if "--over" in sys.argv:
        at = sys.argv.index("--over")
        over = float(sys.argv[at + 1])
        del sys.argv[at:at + 2]
    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(arguments) != 2:
        sys.exit(__doc__)
    old_results, new_results = (json.load(open(path)) for path in arguments)
    # Each run's own column names (a table may have gained columns), else the other run's (the
    # oldest results kept only the rows).
    old_headers, new_headers = old_results.get("headers", {}), new_results.get("headers", {})
    old = figures(old_results, {**new_headers, **old_headers})
    new = figures(new_results, {**old_headers, **new_headers})
    if old_results.get("scale") != new_results.get("scale"):
        print("warning: the runs used different scales (--quick is 1/8): compare like with like")
    print(f"old: {arguments[0]} ({old_results.get('date', '?')}, {old_results.get('machine', '?')})")
    print(f"new: {arguments[1]} ({new_results.get('date', '?')}, {new_results.get('machine', '?')})")
    shown = 0
    experiment = None
    for key in sorted(set(old) & set(new), key=lambda k: list(new).index(k)):
        (old_text, old_value), (new_text, new_value) = old[key], new[key]
        change = (new_value - old_value) / abs(old_value) if old_value else (0.0 if new_value == 0 else float("inf"))
        if "--all" not in sys.argv and abs(change) <= over / 100:
            continue
        if key[0] != experiment:
            experiment = key[0]
            print(f"\n{experiment}")
        print(f"  {key[1][:44]:44}  {key[2][:28]:28}  {old_text:>14} -> {new_text:<14} {100 * change:+6.1f} %")
        shown += 1
    only_old = sorted({k[0] for k in old} - {k[0] for k in new})
    only_new = sorted({k[0] for k in new} - {k[0] for k in old})
    if only_old:
        print(f"\nonly in the old run: {', '.join(only_old)}")
    if only_new:
        print(f"only in the new run: {', '.join(only_new)}")
    print(f"\n{shown} figure(s) shown of {len(set(old) & set(new))} in both runs"
          + ("" if "--all" in sys.argv else f" (moved by more than {over:g} %; --all shows every one)"))


if __name__ == "__main__":
    main()
