"""The PLR page's privacy losses are the same on every BLAS kernel and solver path.

The audit's worst-case neighbours put the changed record along the direction the other rows
cover least. On the digits several directions tie for that (every pixel that is 0 in all rows),
and an SVD returns an arbitrary basis of such a tie, with arbitrary signs, that changes with the
BLAS kernels: the records, and so the maximum loss on the PLR page, moved in the second decimal
between machines. These tests pin that the records depend only on the data.

Nothing here is timed.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpstack.audit import worst_case_neighbours
from dpstack.companion.chapters.plr import load_digits_pair


def _digits_sample(n=300, seed=0):
    """The rows the PLR page audits: n digits 0/8 drawn as in ``privacy_loss_draws``."""
    X, y = load_digits_pair((0, 8))
    idx = np.random.default_rng(seed).choice(len(y), size=n, replace=False)
    return X[idx], y[idx]


def _gaussian_sample(n=60, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) / np.sqrt(p)
    return X, (X[:, 0] > 0).astype(int)


def _records(X, y, **kw):
    """Every changed record of every pair (row 0 of D and of D')."""
    pairs = worst_case_neighbours(X, y, **kw)
    return np.array([np.r_[XD[0], XP[0]] for XD, _, XP, _ in pairs.values()])


def _other_svd_basis(seed):
    """np.linalg.svd as another LAPACK build may return it: any basis of each tied singular
    subspace (a random rotation within it) and any sign on every singular vector."""
    svd = np.linalg.svd
    rng = np.random.default_rng(seed)

    def other_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
        if not compute_uv:
            return svd(a, full_matrices=full_matrices, compute_uv=False, hermitian=hermitian)
        U, s, Vt = svd(a, full_matrices=full_matrices, hermitian=hermitian)
        p = Vt.shape[0]
        energy = np.r_[s, np.zeros(p - s.size)]
        Vt = Vt.copy()
        start = 0
        while start < p:  # groups of exactly tied (to rounding) singular values
            stop = start + 1
            while stop < p and abs(energy[stop] - energy[start]) <= 1e-12 * energy.max():
                stop += 1
            Q, _ = np.linalg.qr(rng.normal(size=(stop - start, stop - start)))
            Vt[start:stop] = Q @ Vt[start:stop]
            start = stop
        Vt *= rng.choice([-1.0, 1.0], size=(p, 1))
        return U, s, Vt  # U is not consistent with Vt any more; the neighbours only read s and Vt

    return other_svd


@pytest.mark.parametrize("data", ["digits", "digits_small", "gaussian", "gaussian_blocks"])
def test_worst_case_records_do_not_depend_on_the_basis_the_svd_returns(data, monkeypatch):
    kw = {}
    if data == "digits":
        X, y = _digits_sample()
    elif data == "digits_small":
        X, y = _digits_sample(n=40)  # fewer rows than pixels: 24+ uncovered directions
    else:
        X, y = _gaussian_sample()
        if data == "gaussian_blocks":
            kw = dict(groups=[[0, 1], [2], [3, 4]], importance=[0.6, 0.3, 0.1])
    reference = _records(X, y, **kw)
    for seed in range(3):
        monkeypatch.setattr(np.linalg, "svd", _other_svd_basis(seed))
        np.testing.assert_allclose(_records(X, y, **kw), reference, rtol=0, atol=1e-10)
        monkeypatch.undo()


def test_worst_case_records_ignore_rounding_level_changes_of_the_data():
    # 1e-15 on every entry, the empty pixels included: their tie is then broken by noise alone.
    # The tied subspace itself moves by about ‖noise‖/gap ≈ 1.4e-13/5e-3 ≈ 3e-11 (the next
    # singular value is 5e-3), so the records may move that much, and no more.
    X, y = _digits_sample()
    reference = _records(X, y)
    noise = np.random.default_rng(1).normal(size=X.shape)
    np.testing.assert_allclose(_records(X + 1e-15 * noise, y), reference, rtol=0, atol=1e-9)
    # the records still lie where the other rows put no energy, at the norm bound
    r = reference[:, : X.shape[1]]
    assert np.abs(np.delete(X, 0, axis=0) @ r.T).max() < 1e-12
    np.testing.assert_allclose(np.linalg.norm(r, axis=1), 1.0)


_RUN = """
import json
from dpstack.companion.chapters.plr import privacy_loss_draws
print(json.dumps(privacy_loss_draws(1.0, 300, lam=0.01, n_draws=20, seed=0).loss.tolist()))
"""


def test_privacy_loss_draws_agree_across_blas_kernels_and_solver_paths():
    # Two fresh interpreters (the kernel is picked when numpy loads): OpenBLAS's Haswell kernels
    # with the compiled solver pass, and the host's own kernels with the numpy pass. On a host
    # whose own choice is Haswell the two differ only by the solver path.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "OPENBLAS_CORETYPE", "DPSTACK_FUSED")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    envs = [dict(env, OPENBLAS_CORETYPE="Haswell"), dict(env, DPSTACK_FUSED="0")]
    procs = [
        subprocess.Popen([sys.executable, "-c", _RUN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
        for e in envs
    ]
    outputs = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    haswell, native = (np.array(json.loads(out)) for out, _ in outputs)
    assert haswell.shape == native.shape == (5 * 20,)
    np.testing.assert_allclose(native, haswell, rtol=0, atol=1e-9 * np.abs(haswell).max())
