"""The companion's one command line: ``python -m dpstack.companion COMMAND …``.

Commands::

    run NAME [--knob value …]   one experiment grid with its knobs → a tidy CSV and its provenance
    run --list                  the experiments, their pages and knobs
    reproduce [NAME …]          recompute registered results and commit them (make reproduce)
    list                        the registered results, their data and what is committed
    check                       verify every committed result (checksum, staleness)
    replay N [NAME …]           recompute N random cells of each committed result and compare them
    pages [NAME …]              the notebooks that render the named results
    summaries                   write the book's findings summaries from the committed results
    verdicts [--check]          judge every claim on the committed results into results/verdicts.json
    audit-tables                recompute the audit chapter's stored tables
    demo                        the offline demonstration (bundled digits, RUIJIN-like cohort)

``python -m dpstack.companion COMMAND --help`` gives each command's options. The datasets have
their own command line, ``python -m dpstack.datasets``.
"""

from __future__ import annotations

import sys

__all__ = ["main", "COMMANDS"]


def _run(argv):
    from dpstack.companion import run

    return run.main(argv)


def _reproduce(flag):
    def command(argv):
        from dpstack.companion import reproduce

        return reproduce.main(([flag] if flag else []) + list(argv))

    return command


def _replay(argv):
    from dpstack.companion import reproduce

    if not argv or argv[0].startswith("-"):
        print("usage: python -m dpstack.companion replay N [NAME …] [--seed S] [--n-jobs J]", file=sys.stderr)
        return 2
    return reproduce.main(["--replay", *argv])


def _summaries(argv):
    from dpstack.companion import show

    if argv:
        print("usage: python -m dpstack.companion summaries (no options)", file=sys.stderr)
        return 2
    show.main()
    return 0


def _verdicts(argv):
    from dpstack.companion import verdict_store

    return verdict_store.main(argv)


def _audit_tables(argv):
    from dpstack.audit import stored

    stored.main(argv)
    return 0


def _demo(argv):
    from dpstack.companion.chapters import demo

    return demo.main(argv)


#: command → (function of the remaining arguments returning an exit status, one line of help)
COMMANDS = {
    "run": (_run, "one experiment grid with its knobs → a tidy CSV and its provenance (run --list)"),
    "reproduce": (_reproduce(None), "recompute registered results and commit them"),
    "list": (_reproduce("--list"), "the registered results, their data and what is committed"),
    "check": (_reproduce("--check"), "verify every committed result (checksum, staleness)"),
    "replay": (_replay, "recompute N random cells of each committed result and compare them"),
    "pages": (_reproduce("--pages"), "the notebooks that render the named results"),
    "summaries": (_summaries, "write the book's findings summaries from the committed results"),
    "verdicts": (
        _verdicts,
        "judge every claim on the committed results into results/verdicts.json (--check: is it fresh)",
    ),
    "audit-tables": (_audit_tables, "recompute the audit chapter's stored tables"),
    "demo": (_demo, "the offline demonstration"),
}


def _usage():
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    return "usage: python -m dpstack.companion COMMAND [options]\n\ncommands:\n" + "\n".join(lines)


def main(argv=None):
    """Dispatch ``argv`` (default: ``sys.argv[1:]``) to its command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    status = COMMANDS[name][0](rest)
    return 0 if status is None else int(status)
