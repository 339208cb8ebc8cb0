"""Privacy-preserving stacking (PST; Yao et al., IJCAI 2019): claims, grids and page helpers."""
