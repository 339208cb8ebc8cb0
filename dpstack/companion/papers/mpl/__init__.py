"""Learning privately from multiparty data (MPL; Hamm, Cao & Belkin, ICML 2016): claims, grids and page helpers."""
