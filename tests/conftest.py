"""Test-session setup: caches go to a temporary folder, and the data home must come out untouched.

The data home (``DPSTACK_DATA``, in CI the shared read-only data folder) is input only.
Every cache the suite fills (parsed datasets, preprocessed tasks, experiment results) goes
to a fresh temporary ``DPSTACK_CACHE``; at the end the session fails if any file or folder
in the data home was added, removed or modified, whoever the user (root ignores the
read-only permission bits, so they alone would not catch a write).
The key that authenticates cache entries (``DPSTACK_CACHE_KEY``) goes to another fresh
temporary folder, outside the cache, so the suite never creates or reads the user's key.
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

try:  # the property-based suite's profile: fixed examples, no database, no deadline (CI is deterministic)
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "dpstack",
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    settings.load_profile(os.environ.get("DPSTACK_HYPOTHESIS_PROFILE", "dpstack"))
except ImportError:  # hypothesis is a dev dependency; tests/test_properties.py skips without it
    pass

_STATE = {}


def _snapshot(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def pytest_configure(config):
    tmp = tempfile.mkdtemp(prefix="dpstack-test-cache-")
    _STATE["cache"] = tmp
    _STATE["previous_cache"] = os.environ.get("DPSTACK_CACHE")
    os.environ["DPSTACK_CACHE"] = tmp
    key_dir = tempfile.mkdtemp(prefix="dpstack-test-key-")
    _STATE["key_dir"] = key_dir
    _STATE["previous_key"] = os.environ.get("DPSTACK_CACHE_KEY")
    os.environ["DPSTACK_CACHE_KEY"] = str(Path(key_dir) / "cache.key")
    home = os.environ.get("DPSTACK_DATA")
    if home and Path(home).is_dir():
        _STATE["home"] = Path(home)
        _STATE["before"] = _snapshot(home)


def pytest_sessionfinish(session, exitstatus):
    home = _STATE.get("home")
    if home is not None:
        after = _snapshot(home)
        before = _STATE["before"]
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if changed:
            session.config._dpstack_data_home_changed = changed
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    shutil.rmtree(_STATE.get("cache", ""), ignore_errors=True)
    shutil.rmtree(_STATE.get("key_dir", ""), ignore_errors=True)
    if _STATE.get("previous_key") is None:
        os.environ.pop("DPSTACK_CACHE_KEY", None)
    else:
        os.environ["DPSTACK_CACHE_KEY"] = _STATE["previous_key"]
    if _STATE.get("previous_cache") is None:
        os.environ.pop("DPSTACK_CACHE", None)
    else:
        os.environ["DPSTACK_CACHE"] = _STATE["previous_cache"]


@pytest.fixture
def replay_report(request):
    """A list the replay tests append one line to per committed result (what the replay proved on
    this numerical platform); the lines are printed at the end of the session."""
    if not hasattr(request.config, "_dpstack_replay_report"):
        request.config._dpstack_replay_report = []
    return request.config._dpstack_replay_report


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    report = getattr(config, "_dpstack_replay_report", None)
    if report:
        from dpstack.provenance import numerical_platform, platform_summary

        terminalreporter.section(f"replay of the committed results on {platform_summary(numerical_platform())}")
        for line in sorted(report):
            terminalreporter.write_line(line)
    changed = getattr(config, "_dpstack_data_home_changed", None)
    if changed:
        terminalreporter.write_line(
            f"FAILED: the tests wrote into the data home {_STATE['home']} (read-only input): "
            f"{', '.join(changed[:10])}{' ...' if len(changed) > 10 else ''}",
            red=True,
            bold=True,
        )
