"""Learning privately from multiparty data (MPL; Hamm, Cao & Belkin, ICML 2016): claims, grids and page helpers."""

#: the paper's short name, as the book and the claims' ids use it
NAME = "MPL"
#: its place in the book's reading order
ORDER = 3
#: how a table or a heading names it
LABEL = "MPL (Hamm, Cao & Belkin)"
#: its authors and title
CITATION = "Hamm, Cao & Belkin, Learning privately from multiparty data (ICML 2016)"
#: the pages that check its propositions, theorems and lemmas (each opens with a result box)
THEOREM_PAGES = ("mpl_sensitivity", "mpl_lemma2", "mpl_theorem4")
