"""``python -m benchmarks [name ...]``: run every ``benchmarks/bench_*.py`` (or the named ones).

``python -m benchmarks plr multiparty`` runs ``bench_plr`` and ``bench_multiparty``;
``python -m benchmarks --list`` shows the names.
"""

import importlib
import pkgutil
import sys
import time

import benchmarks


def available():
    return sorted(
        m.name[len("bench_") :] for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_")
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    names = available()
    if argv[:1] == ["--list"]:
        print("\n".join(names))
        return 0
    chosen = [a.removeprefix("bench_").removesuffix(".py") for a in argv] or names
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {names}", file=sys.stderr)
        return 2
    print(f"machine: {benchmarks.machine_summary()}\n", flush=True)
    for name in chosen:
        print(f"## bench_{name}", flush=True)
        start = time.perf_counter()
        importlib.import_module(f"benchmarks.bench_{name}").main()
        print(f"(bench_{name}: {time.perf_counter() - start:.0f} s)\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
