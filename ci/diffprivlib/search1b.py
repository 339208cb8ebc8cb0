import numpy as np
from search1 import search
for eps, C in [(1.0, 1.0), (0.5, 1.0)]:
    for n in [3, 4]:
        L, (labels, v) = search(eps, C, 4.0, n=n, starts=80, seed=1)
        print(eps, C, n, round(L, 5), labels, np.round(v, 4).tolist(), flush=True)
