"""The compiled value-and-gradient pass (dpstack/_fused.c) against the numpy pass it replaces.

Both compute Σ ℓ(m_i) and Σ ℓ'(m_i) y_i z_i over the rows; they round differently (BLAS against
the compiled loop's order of sums), so they agree to rounding, not bit for bit.
"""

import math
import os
import platform
import shutil
import subprocess
import sys

import numpy as np
import pytest

from dpstack import solvers
from dpstack.mechanisms import clip_rows, clipped_rows

fused = pytest.mark.skipif(not solvers.FUSED, reason="the compiled pass is not built or not supported here")


def _buildable():
    """Whether pip should have built the compiled pass here (x86-64 Linux, glibc ≥ 2.35, a C compiler, AVX2/FMA)."""
    if platform.machine() != "x86_64" or platform.system() != "Linux":
        return False
    libc, version = platform.libc_ver()
    if libc != "glibc" or tuple(int(p) for p in version.split(".")[:2]) < (2, 35):
        return False
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = next(line for line in cpuinfo if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return False
    return "avx2" in flags and "fma" in flags and any(shutil.which(cc) for cc in ("cc", "gcc"))


def test_the_compiled_pass_is_built_and_used_where_it_can_be():
    # a silent build failure (optional=True in setup.py) would otherwise leave every fit on the numpy pass
    if not _buildable():
        pytest.skip("this machine cannot build the compiled pass; the numpy pass is used")
    assert solvers._fused is not None and solvers._fused.supported()
    if os.environ.get("DPSTACK_FUSED", "1").strip() != "0":
        assert solvers.FUSED


def _problem(n, k, seed, clipped=0.2, intercept=None, order="C", scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, k)) * np.geomspace(0.05, 3.0, k) / np.sqrt(k)
    X[rng.random(n) < clipped] *= 4.0  # rows beyond the bound of 1
    X = np.asarray(X, order=order)
    y = np.where(rng.random(n) < 0.5, -1, 1).astype(np.int8)
    found = clipped_rows(X, 1.0)
    d = k + (intercept is not None)
    b, w0 = rng.standard_normal(d), rng.standard_normal(d)
    w = rng.standard_normal(d) * scale
    return X, y, found, b, w0, w


SHAPES = [(1, 1), (2, 3), (3, 4), (5, 5), (7, 8), (9, 9), (13, 12), (17, 16), (31, 17), (64, 100), (257, 33)]


@fused
@pytest.mark.parametrize(("n", "k"), SHAPES)
@pytest.mark.parametrize("intercept", [None, 0.5])
def test_the_compiled_pass_equals_the_numpy_pass(n, k, intercept):
    # n not a multiple of 4 (the last group of rows), k not a multiple of 8 or 4 (the dot's and the update's tails)
    X, y, found, b, w0, w = _problem(n, k, seed=n * 100 + k, intercept=intercept)
    problem = solvers._Problem(X, y, 1e-2, b, 0.1, w0, found, intercept)
    assert problem.fused
    loss_f, grad_f = problem._loss_sums_fused(w)
    loss_n, grad_n = problem._loss_sums(w)
    assert loss_f == pytest.approx(loss_n, rel=1e-13, abs=1e-13)
    np.testing.assert_allclose(grad_f, grad_n, rtol=1e-12, atol=1e-13 * max(1.0, np.max(np.abs(grad_n))))


@fused
@pytest.mark.parametrize("scale", [1e-3, 30.0, 1e3])
def test_the_compiled_pass_is_stable_at_any_margin(scale):
    # margins from ±1e-3 to ±1e3: e^{−|m|} underflows to 0 at the large ones, and ℓ(m) = −m there
    X, y, found, b, w0, w = _problem(200, 10, seed=4, scale=scale)
    problem = solvers._Problem(X, y, 1e-2, b, 0.0, w0, found)
    (loss_f, grad_f), (loss_n, grad_n) = problem._loss_sums_fused(w), problem._loss_sums(w)
    assert np.isfinite(loss_f) and np.all(np.isfinite(grad_f))
    assert loss_f == pytest.approx(loss_n, rel=1e-13)
    np.testing.assert_allclose(grad_f, grad_n, rtol=1e-12, atol=1e-12 * np.max(np.abs(grad_n)))
    # and the exact loss on the clipped copy, summed in extended precision
    Z = clip_rows(X, 1.0)
    m = y * np.longdouble(Z @ w[:10])
    exact = np.sum(np.logaddexp(np.longdouble(0), -m))
    assert loss_f == pytest.approx(float(exact), rel=1e-12)


@fused
def test_the_compiled_pass_in_several_calls_is_the_pass_in_one(monkeypatch):
    # calls of a few rows each, with clipped rows in some calls and not others: the calls' local row numbers
    X, y, found, b, w0, w = _problem(1000, 7, seed=5, clipped=0.05, intercept=0.25)
    whole = solvers._Problem(X, y, 1e-2, b, 0.1, w0, found, 0.25)
    v_whole, g_whole = whole.value_grad(w)
    monkeypatch.setattr(solvers, "_FUSED_BLOCK_BYTES", 37 * 8 * 7)
    monkeypatch.setattr(solvers, "_MIN_BLOCK_ROWS", 1)
    split = solvers._Problem(X, y, 1e-2, b, 0.1, w0, found, 0.25)
    v_split, g_split = split.value_grad(w)
    assert v_split == pytest.approx(v_whole, rel=1e-14)
    np.testing.assert_allclose(g_split, g_whole, rtol=1e-13, atol=1e-15)
    # on the clipped copy with the constant column appended, through the numpy pass
    Z = np.hstack([clip_rows(X, 1.0), np.full((1000, 1), 0.25)])
    monkeypatch.setattr(solvers, "FUSED", False)
    copy = solvers._Problem(Z, y, 1e-2, b, 0.1, w0)
    assert not copy.fused
    v_copy, g_copy = copy.value_grad(w)
    assert v_split == pytest.approx(v_copy, rel=1e-13)
    np.testing.assert_allclose(g_split, g_copy, rtol=1e-12, atol=1e-14)


@fused
def test_a_fortran_ordered_x_takes_the_numpy_pass_and_a_memory_map_the_compiled_one(tmp_path):
    X, y, found, b, w0, w = _problem(300, 6, seed=6)
    assert not solvers._Problem(np.asfortranarray(X), y, 1e-2, b, 0.0, w0, found).fused
    path = tmp_path / "X.npy"
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")  # read-only
    problem = solvers._Problem(mapped, y, 1e-2, b, 0.0, w0, found)
    assert problem.fused
    np.testing.assert_allclose(
        problem.value_grad(w)[1], solvers._Problem(X, y, 1e-2, b, 0.0, w0, found).value_grad(w)[1]
    )


@fused
def test_the_compiled_pass_refuses_buffers_of_the_wrong_size():
    X = np.ones((4, 3))
    args = (np.ones(3), np.ones(4, np.int8), np.empty(0, np.int64), np.empty(0), 0.0, np.zeros(3))
    with pytest.raises(ValueError, match="sizes do not match"):
        solvers._fused.logistic_pass(X, 5, 3, *args)  # n beyond X
    with pytest.raises(ValueError, match="sizes do not match"):
        solvers._fused.logistic_pass(X, 4, 3, np.ones(2), *args[1:])  # w too short
    with pytest.raises(ValueError, match="sizes do not match"):
        solvers._fused.logistic_pass(X, 4, 3, *args[:2], np.zeros(1, np.int64), np.empty(0), *args[4:])
    with pytest.raises(TypeError):
        solvers._fused.logistic_pass(X, 4, 3, *args[:-1], np.zeros(3).tobytes())  # grad must be writable


def test_dpstack_fused_0_switches_the_compiled_pass_off():
    code = "from dpstack import solvers; print(solvers.FUSED)"
    env = dict(os.environ, DPSTACK_FUSED="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_signed_int8_labels_are_used_without_a_copy():
    X = np.ones((4, 2))
    y = np.array([1, -1, -1, 1], dtype=np.int8)
    assert solvers._Problem(X, y, 1.0, None, 0.0, None).sign is y
    # any other labels are turned into signs (y < 0 → −1), never used as given
    for other in (np.array([1, 0, 0, 1], dtype=np.int8), y.astype(float), np.array([2, -1, -3, 1], dtype=np.int8)):
        sign = solvers._Problem(X, other, 1.0, None, 0.0, None).sign
        assert sign is not other and sign.dtype == np.int8
        np.testing.assert_array_equal(sign, np.where(other < 0, -1, 1))


@fused
def test_the_compiled_loss_is_summed_to_a_few_ulps():
    """J's value decides the line searches to within 64·eps·(1 + |J|): a plain running sum of the
    rows' losses drifts by more over ten thousand rows (a RUIJIN fit with one feature and λ = 1e4
    failed its Newton line search at ‖∇J‖∞ = 1.3e-7 that way). Against math.fsum of the rows' losses."""
    rng = np.random.default_rng(12)
    n = 40_000
    X = rng.uniform(-1.0, 1.0, (n, 1))
    y = np.where(rng.random(n) < 0.5, -1, 1).astype(np.int8)
    problem = solvers._Problem(X, y, 1e4, None, 0.0, None)
    for w in (np.array([1.5e-9]), np.array([0.7])):
        exact = math.fsum(np.logaddexp(0.0, -(y * (X[:, 0] * w[0]))).tolist())
        loss, _ = problem._loss_sums_fused(w)
        assert abs(loss - exact) <= 8 * np.finfo(float).eps * exact, (loss - exact) / exact
