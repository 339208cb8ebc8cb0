"""Privacy-preserving transfer learning (PPTL; Guo et al.): claims, grids and page helpers."""

#: the paper's short name, as the book and the claims' ids use it
NAME = "PPTL"
#: its place in the book's reading order
ORDER = 2
#: how a table or a heading names it
LABEL = "PPTL (Guo et al.)"
#: its authors and title
CITATION = "Guo et al., Privacy-preserving transfer learning for knowledge sharing"
#: the pages that check its propositions, theorems and lemmas (each opens with a result box)
THEOREM_PAGES = ()
