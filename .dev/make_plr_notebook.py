"""Generates notebooks/plr.ipynb (kept so the notebook's source is reviewable as plain Python)."""
import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
md(r"""# Private logistic regression (PLR)

Every method in this book is built from one brick: **PLR**, logistic regression made
ε-differentially private by *objective perturbation* {cite}`chaudhuri2011differentially`, stated
as Algorithm 1 of the stacking paper {cite}`yao2019privacy`. This page states it, shows how its
two calibration constants behave, checks its privacy claim exactly, and illustrates its
sample complexity.

**What it protects:** one sample. Two datasets are neighbours if they differ in one record
(replace-one). PLR is ε-DP provided λ, the norm bound and the regulariser are fixed without
looking at the private data. The code is {class}`dpstack.PrivateLogisticRegression`; the
calibration is {func}`dpstack.mechanisms.objective_perturbation_calibration`."""),
md(r"""## Algorithm 1

Given a privacy budget $\epsilon$, $n$ samples $(\mathbf{x}_i, y_i)$ with $y_i\in\{-1,+1\}$ and
$\lambda>0$:

1. $\epsilon' = \epsilon - \log\left(1 + \frac{1}{2n\lambda} + \frac{1}{16n^2\lambda^2}\right)$;
2. if $\epsilon' > 0$: $\Delta = 0$; else $\Delta = \frac{1}{4n(e^{\epsilon/4}-1)} - \lambda$ and $\epsilon' = \epsilon/2$;
3. bring every row under $\|\mathbf{x}\| \le 1$ — by **clipping to a public bound**
   ({func}`dpstack.mechanisms.clip_rows`), not by dividing by the data's largest norm, which
   would depend on one person's record;
4. draw $\mathbf{b}$ with density $h(\mathbf{b}) \propto \exp(-\epsilon'\|\mathbf{b}\|/2)$, i.e.
   $\|\mathbf{b}\| \sim \mathrm{Gamma}(d, 2/\epsilon')$ with a uniform direction (the papers print
   $\exp(+\epsilon'\|\mathbf{b}\|/2)$, a sign typo: see the errata);
5. return the exact minimiser of

   $$
   \min_{\mathbf{w}} \frac{1}{n}\sum_{i=1}^n \log\left(1+e^{-y_i\mathbf{w}^\top\mathbf{x}_i}\right)
    + \frac{\mathbf{b}^\top\mathbf{w}}{n} + \frac{\Delta}{2}\|\mathbf{w}\|^2 + \lambda g(\mathbf{w}),
   $$

   with $g$ 1-strongly convex; here $g(\mathbf{w}) = \frac12\|\mathbf{w}-\mathbf{w}_0\|^2$
   ($\mathbf{w}_0=\mathbf{0}$ for plain PLR, a source model for transfer learning).

**Proposition 1** {cite}`chaudhuri2011differentially`. *If $g$ is strongly convex, Algorithm 1 is
$\epsilon$-differentially private.*

**Proposition 2.** *With $g=\frac12\|\cdot\|^2$ and a reference model $\mathbf{v}$, there is a
constant $C_1$ such that when*
$n > C_1 \max\left(\frac{\|\mathbf{v}\|^2\log(1/\delta)}{\epsilon_g^2},
\frac{d\log(d/\delta)\|\mathbf{v}\|}{\epsilon_g\epsilon}, \frac{\|\mathbf{v}\|^2}{\epsilon_g\epsilon}\right)$,
*the output satisfies $L(\mathbf{w}) \le L(\mathbf{v}) + \epsilon_g$ with probability $1-\delta$.*
The privacy terms grow like $1/\epsilon$: halving $\epsilon$ doubles the samples needed."""),
code(r"""# Parameters (papermill): change them with  -p name value
epsilons = [0.1, 0.5, 1.0, 5.0, float("inf")]   # ε grid of the AUC experiment (inf = non-private)
n_grid = [25, 50, 100, 150, 250]                  # training-set sizes
n_repeats = 10                                    # random splits per (n, ε)
lam = 0.01                                        # λ, fixed in advance (not tuned on the data)
n_draws = 300                                     # outputs drawn per neighbouring pair
seed = 0""", metadata={"tags": ["parameters"]}),
code(r"""import numpy as np
import matplotlib.pyplot as plt
import pandas as pd

from dpstack.experiments.plr import auc_vs_n, calibration_grid, privacy_loss_draws
from dpstack.plotting import plot_mean_with_spread, plot_privacy_loss_histogram, style

style()
pd.set_option("display.precision", 4)"""),
md(r"""## ε′ and Δ as functions of n, λ and ε

The term $\log(1 + \frac{1}{2n\lambda} + \frac{1}{16n^2\lambda^2}) = 2\log(1+\frac{1}{4n\lambda})$
is what the *Jacobian* of the map $\mathbf{b}\mapsto\mathbf{w}$ can change between neighbours; it
is paid out of ε before the noise gets its share ε′. When $n\lambda$ is small that cost exceeds ε,
and Algorithm 1 switches branch: it adds the extra ridge Δ, which shrinks the Jacobian term to
exactly ε/2, and gives the noise the other half."""),
code(r"""ns = np.unique(np.round(np.logspace(1, 4.5, 60)).astype(int))
cal = calibration_grid([0.1, 0.5, 1.0, 5.0], ns, [lam])
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
for eps, part in cal.groupby("epsilon"):
    axes[0].plot(part.n, part.epsilon_noise / eps, label=f"ε = {eps:g}")
    axes[1].plot(part.n, part.delta, label=f"ε = {eps:g}")
axes[0].set(xscale="log", xlabel="n", ylabel="ε′ / ε", title=f"share of ε left for the noise (λ = {lam:g})")
axes[1].set(xscale="log", yscale="symlog", xlabel="n", ylabel="Δ", title="extra ridge Δ (0 when ε′ > 0)")
axes[1].set_ylim(bottom=0)
axes[0].axhline(0.5, color="k", lw=0.8, ls=":")
axes[0].legend(); plt.tight_layout(); plt.show()"""),
md(r"""*Left: the fraction of ε the noise receives. Below the switch point (the kink) the Δ > 0
branch gives the noise exactly ε/2; above it ε′ climbs towards ε as $n\lambda$ grows. Right: Δ is
positive only left of the switch, and vanishes at it.* A few values, computed by
{func}`~dpstack.mechanisms.objective_perturbation_calibration`:"""),
code(r"""calibration_grid([0.1, 1.0], [50, 100, 1000, 10000], [1e-3, lam]).round(4)"""),
md(r"""## Proposition 1, checked exactly

For objective perturbation the density of the output is known in closed form. The minimiser
satisfies $\nabla J(\mathbf{w}) = 0$, so the noise that produced a given $\mathbf{w}$ is
$\mathbf{b}(\mathbf{w}; D) = -n\nabla\big(\text{loss} + \lambda g\big)(\mathbf{w}) - n\Delta\mathbf{w}$,
a bijection, and

$$p(\mathbf{w}\mid D) = h\big(\mathbf{b}(\mathbf{w}; D)\big)\,\big|\det \partial_{\mathbf{w}}\mathbf{b}(\mathbf{w}; D)\big|.$$

So the privacy loss $\log p(\mathbf{w}\mid D) - \log p(\mathbf{w}\mid D')$ can be computed exactly
at any $\mathbf{w}$ ({func}`dpstack.audit.exact_privacy_loss`). We take $n$ digits (0 vs 8, see
below), build neighbouring pairs that differ in one record placed at the norm bound — label flipped,
mirrored, orthogonal to the data, removed (zero), or far outside the bound before clipping
({func}`dpstack.audit.worst_case_neighbours`) — draw PLR's output many times on $D$, and evaluate
the loss at each draw, in both branches."""),
code(r"""loss = pd.concat([privacy_loss_draws(1.0, 300, lam=lam, n_draws=n_draws, seed=seed),
                  privacy_loss_draws(0.1, 100, lam=lam, n_draws=n_draws, seed=seed)])
summary = (loss.assign(abs_loss=loss.loss.abs())
               .groupby(["epsilon", "n", "branch", "pair"]).abs_loss.max().rename("max |loss|").reset_index())
summary["≤ ε"] = summary["max |loss|"] <= summary.epsilon
summary.round(4)"""),
code(r"""fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
for ax, (eps, part) in zip(axes, loss.groupby("epsilon")):
    plot_privacy_loss_histogram(ax, part.loss, eps)
    ax.set_title(f"ε = {eps:g}, n = {part.n.iloc[0]}, branch {part.branch.iloc[0]}")
plt.tight_layout(); plt.show()
print("every loss within ±ε:", bool((loss.loss.abs() <= loss.epsilon).all()))"""),
md(r"""*The privacy loss of every draw, all five neighbour types pooled; dashed lines at ±ε. Look at
where the mass sits: well inside the band.* The guarantee is a worst case over all outputs and
all neighbours; at typical outputs the loss is a small fraction of ε. The {doc}`audit` chapter
runs the same check on every mechanism, adds a statistical lower bound on ε, and shows that
deliberately broken variants (noise for 10ε, a skipped Δ branch, data-dependent rescaling)
exceed ε and are caught."""),
md(r"""## Proposition 2, illustrated: test AUC against n and ε

scikit-learn's bundled 8×8 digits, 0 vs 8 (352 images, offline). Pixels are divided by the public
constant 128, which puts every row inside the unit ball *by construction* (64 pixels in [0, 1]
have norm ≤ 8), so no data-dependent scaling is involved. For each repeat, 100 images are held out
for testing and the first $n$ of the rest train PLR at each ε; ε = ∞ is the non-private model
with the same λ. λ is fixed, not tuned."""),
code(r"""auc = auc_vs_n(n_grid, epsilons, n_repeats=n_repeats, lam=lam, seed=seed)
auc["method"] = np.where(np.isinf(auc.epsilon), "non-private", "PLR ε = " + auc.epsilon.map("{:g}".format))
fig, ax = plt.subplots()
plot_mean_with_spread(ax, auc, "n", "auc", "method")
ax.set(xlabel="training samples n", ylabel="test AUC", title="PLR on digits 0 vs 8 (mean ± s.d.)")
ax.legend(fontsize=8, ncol=2); plt.show()"""),
md(r"""*Each line is one ε; the band is ±1 s.d. over repeats. Look at how far right each private
curve must go to reach a given AUC: roughly 1/ε further for each step down in ε, as Proposition 2's
$d\log(d/\delta)\|\mathbf{v}\|/(\epsilon_g\epsilon)$ term predicts, while the non-private model is
near-perfect already at n = 25.*"""),
code(r"""table = auc.pivot_table(index="method", columns="n", values="auc", aggfunc="mean")
table.round(3)"""),
md(r"""## Summary

- PLR spends ε in two places: the Jacobian of the noise-to-output map (a cost that depends only
  on $n\lambda$) and the noise itself (ε′). When $n\lambda$ is small the extra ridge Δ caps the
  first at ε/2.
- The exact privacy loss never exceeded ε at any draw, for any of the worst-case neighbours, in
  either branch (table above).
- Utility: at a fixed AUC, the required $n$ grows roughly like $1/\epsilon$."""),
]
nb = nbf.v4.new_notebook(cells=cells, metadata={
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"}})
nbf.write(nb, "notebooks/plr.ipynb")
