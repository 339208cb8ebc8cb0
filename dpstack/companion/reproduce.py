"""Recompute the book's registered experiments and commit their tables with provenance.

Usage::

    python -m dpstack.companion reproduce                        # every registered page, paper profile
    python -m dpstack.companion reproduce mpl_kdd mpl_mnist10 --profile paper --n-jobs 2
    python -m dpstack.companion list                             # pages, data and committed results
    python -m dpstack.companion check                            # verify every committed result
    python -m dpstack.companion replay 2 --seed 7                # recompute 2 random cells of each, compare
    python -m dpstack.companion reproduce pst_fig2_groups --dask tcp://scheduler:8786   # on a cluster

Each experiment runs through :func:`dpstack.companion.runner.run_cells` with the disk cache
on, so an interrupted run resumes where it stopped (cells already computed by the same code are
read back); cells run in parallel (``--n-jobs``) and a progress bar shows on a terminal. The
table and its provenance are written by :func:`dpstack.companion.results.save` (temporary
files renamed into place). One line per experiment gives its wall time. A page whose data is
absent is skipped with a message when every page is run, and is an error when named.
``make reproduce`` runs this with ``--profile paper --n-jobs 2``, then re-executes the pages
(``--pages`` lists their notebooks).
"""

from __future__ import annotations

import argparse
import contextlib
import time
import zlib

from dpstack.companion import results
from dpstack.provenance import numerical_platform, platform_summary

__all__ = ["main"]


def _list(profile):
    for name in results.experiments():
        exp = results.get(name)
        status = exp.status() if exp.status is not None else None
        try:
            prov = results.provenance(name, profile)
            committed = f"committed {prov['date']} ({prov['n_rows']} rows, {results.wall_time_text(prov)})"
        except results.ResultError as err:
            committed = "not committed" if isinstance(err, results.MissingResultError) else f"unreadable: {err}"
        print(
            f"{name:<16} data {'present' if status is None else 'ABSENT '}  {profile}: {committed}  — {exp.description}"
        )
    return 0


def _check(profile):
    bad = 0
    for name in results.experiments():
        try:
            prov = results.check(name, profile)
            print(f"ok      {name} ({profile}): {prov['n_rows']} rows, computed {prov['date']}")
        except results.MissingResultError:
            print(f"absent  {name} ({profile})")
        except results.ResultError as err:
            bad += 1
            print(f"FAILED  {name} ({profile}): {err}")
    return 1 if bad else 0


def _replay(names, profile, n_cells, seed, n_jobs):
    """Replay ``n_cells`` random cells of each committed result; one line each, what it proved."""

    print(f"replaying {n_cells} cell(s) of each committed result on {platform_summary(numerical_platform())}")
    bad = 0
    for name in names:
        exp = results.get(name)
        if exp.status is not None and exp.status() is not None:
            print(f"{name}/{profile}: data absent, not replayed")
            continue
        try:
            out = results.replay(name, profile, n_cells=n_cells, rng=[seed, zlib.crc32(name.encode())], n_jobs=n_jobs)
        except results.MissingResultError:
            continue
        except results.ResultError as err:
            bad += 1
            print(f"FAILED  {name}/{profile}: {err}")
            continue
        print(results.replay_summary(name, profile, out), flush=True)
        for r in out:
            if not r["ok"]:
                bad += 1
                print(f"    cell {r['index']}: {r['first_difference']}")
    return 1 if bad else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m dpstack.companion reproduce", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="pages to recompute (default: every registered one)")
    parser.add_argument("--profile", default="paper", help="profile to run (default: paper)")
    parser.add_argument("--n-jobs", type=int, default=1, help="cells run at once (default: 1)")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="root seed (default: each result's own: 0, or 1 for the 'another seed' protocol variants); "
        "with --replay, the seed that draws the cells to recompute (default 0)",
    )
    parser.add_argument("--no-cache", action="store_true", help="do not reuse or store cells in the runner's cache")
    parser.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run the cells on a dask.distributed cluster: a scheduler address (tcp://host:8786), or 'local' "
        "for a local cluster of --n-jobs single-threaded workers (results are the same as without it)",
    )
    parser.add_argument("--list", action="store_true", help="list the registered pages and exit")
    parser.add_argument("--check", action="store_true", help="verify the committed results and exit")
    parser.add_argument(
        "--replay",
        type=int,
        metavar="N",
        help="recompute N random cells (drawn from --seed) of each named (default: every) committed result, "
        "compare them by the replay's rules (bit for bit on the same numerical platform, within the stated "
        "tolerance on another) and print what each proved; exit 1 if any cell is outside the rules",
    )
    parser.add_argument(
        "--pages",
        action="store_true",
        help="print the notebooks of the named (default: every registered) pages and exit",
    )
    args = parser.parse_args(argv)
    if args.list:
        return _list(args.profile)
    if args.pages:
        root = results.results_dir().parent
        names = args.names or results.experiments()
        pages = dict.fromkeys(results.get(n).page for n in names if n in results.experiments())
        print(" ".join(f"notebooks/{p}.ipynb" for p in pages if (root / "notebooks" / f"{p}.ipynb").is_file()))
        return 0
    if args.check:
        return _check(args.profile)
    known = results.experiments()
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"unknown page(s) {', '.join(unknown)}; registered: {', '.join(known)}")
    names = args.names or known
    if args.replay is not None:
        if args.replay < 1:
            parser.error(f"--replay must be a number of cells >= 1, got {args.replay}")
        return _replay(names, args.profile, args.replay, args.seed or 0, args.n_jobs)
    with _backend(args.dask, args.n_jobs):
        return _run(names, args)


@contextlib.contextmanager
def _backend(address, n_jobs):
    """joblib's dask backend on the cluster at ``address`` (``"local"``: a LocalCluster), or nothing."""
    if not address:
        yield
        return
    from dask.distributed import Client, LocalCluster
    from joblib import parallel_config

    if address == "local":
        with LocalCluster(n_workers=max(1, n_jobs), threads_per_worker=1, dashboard_address=None) as cluster:
            with Client(cluster) as client, parallel_config(backend="dask"):
                print(f"dask: local cluster, {len(client.scheduler_info()['workers'])} workers", flush=True)
                yield
        return
    with Client(address) as client, parallel_config(backend="dask"):
        print(f"dask: {address}, {len(client.scheduler_info()['workers'])} workers", flush=True)
        yield


def _run(names, args):
    failed, t_all = [], time.perf_counter()
    for name in names:
        exp = results.get(name)
        status = exp.status() if exp.status is not None else None
        if status is not None:
            print(f"skipped {name}: {status}", flush=True)
            if args.names:
                failed.append(name)
            continue
        print(f"running {name} ({args.profile} profile, n_jobs={args.n_jobs}) …", flush=True)
        frame = results.compute(name, args.profile, seed=args.seed, n_jobs=args.n_jobs, cache=not args.no_cache)
        csv_path, json_path = results.save(frame)
        prov = frame.attrs["provenance"]
        print(
            f"done    {name}: {len(frame)} rows from {len(prov['cells'])} cells, wall time {results.wall_time_text(prov)} "
            f"→ {csv_path.parent.name}/{csv_path.name} + {json_path.name}",
            flush=True,
        )
    print(
        f"reproduce: {len(names) - len(failed)} of {len(names)} page(s) in {time.perf_counter() - t_all:.1f} s",
        flush=True,
    )
    return 1 if failed else 0
