"""Privacy-preserving stacking (PST; Yao et al., IJCAI 2019): claims, grids and page helpers."""

#: the paper's short name, as the book and the claims' ids use it
NAME = "PST"
#: its place in the book's reading order
ORDER = 1
#: how a table or a heading names it
LABEL = "PST (Yao et al.)"
#: its authors and title
CITATION = "Yao et al., Privacy-preserving stacking with application to cross-organizational diabetes prediction"
#: the pages that check its propositions, theorems and lemmas (each opens with a result box)
THEOREM_PAGES = ("pst_privacy", "pst_sample_complexity", "pst_guarantees")
