"""Privacy-preserving transfer learning (PPTL; Guo et al.): claims, grids and page helpers."""
