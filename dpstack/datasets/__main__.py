"""Data home from the command line.

    python -m dpstack.datasets status                 # what is present, what is missing, where it goes
    python -m dpstack.datasets fetch [NAME ...]       # download missing files (pinned sha256)
    python -m dpstack.datasets fetch --missing-ok ... # report failures (e.g. offline) but exit 0

Nothing is downloaded except by ``fetch``; ``make book`` calls it because building
the whole companion is an explicit request for its data. CI never does.
"""

from __future__ import annotations

import argparse
import sys

from ._home import REGISTRY, data_home, dataset_status, fetch, plain_http_mirrors


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m dpstack.datasets", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="list present and missing files")
    get = sub.add_parser("fetch", help="download missing files of the named datasets")
    get.add_argument("names", nargs="*", help=f"datasets (default: all of {', '.join(REGISTRY)})")
    get.add_argument("--missing-ok", action="store_true", help="exit 0 even if some files could not be fetched")
    args = parser.parse_args(argv)

    status = dataset_status()
    if args.command == "status":
        print(f"data home: {data_home()}")
        for name, part in status.groupby("dataset", sort=False):
            missing = part[~part.present]
            print(
                f"  {name:9s} {len(part) - len(missing)}/{len(part)} files present"
                + (f"; missing e.g. {missing.file.iloc[0]}" if len(missing) else "")
            )
        plain = plain_http_mirrors()
        print(f"plain-http mirrors ({len(plain)}; fetch tries https first and warns when it uses one):")
        for name, what, url in plain:
            print(f"  {name:9s} {what}: {url}")
        return 0

    names = args.names or list(REGISTRY)
    unknown = sorted(set(names) - set(REGISTRY))
    if unknown:
        parser.error(f"unknown dataset(s) {unknown}; known: {sorted(REGISTRY)}")
    failed = []
    for name in names:
        missing = status[(status.dataset == name) & ~status.present]
        if missing.empty:
            print(f"{name}: complete in {data_home()}")
            continue
        print(f"{name}: fetching {len(missing)} missing file(s) into {data_home()}")
        try:
            fetch(name)
        except Exception as exc:  # noqa: BLE001 - offline, checksum mismatch, read-only data home: say which
            failed.append(name)
            print(f"{name}: could not fetch ({type(exc).__name__}: {exc})", file=sys.stderr)
    if failed:
        print(f"not fetched: {', '.join(failed)}; their pages will say the data is absent", file=sys.stderr)
        return 0 if args.missing_ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
