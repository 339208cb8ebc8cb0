"""The pages beyond the papers' figures, one module each.

The ablation of the stacked methods' open choices, the end-to-end private protocol, the
methods on one's own data, PLR, the datasets chapter and the offline demonstration.
"""
