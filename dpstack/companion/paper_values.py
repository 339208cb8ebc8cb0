"""The numbers and claims the PST, PPTL and MPL papers report, transcribed with their sources.

Tables are copied digit for digit (mean ± s.d. over the papers' repeats). Where a
paper only *plots* a result (PST Figures 1-4, PPTL Figure 4) no number is
transcribed: reading values off a plot would invent precision. For those the
papers' verbal claims are recorded instead, in :data:`PST_CLAIMS` and
:data:`PPTL_CLAIMS`, and the notebooks test each claim on our numbers.

Sources (section + table/figure is the locator; figure numbers of PST are those of
its IJCAI 2019 version unless the arXiv number is given):

* PST = Yao et al., IJCAI 2019, §4.
* PPTL = Guo et al., §4.
* MPL = Hamm, Cao & Belkin, ICML 2016, §6 (:data:`MPL_HAR`, :data:`MPL_CLAIMS`).

PST Table 2 and PPTL Table 4 are one experiment under two sets of names
(:ref:`erratum 12 <erratum-names>`): PST branch #b = PPTL centre b + 2; PST-H(W) = PPTL-FS(W),
PST-H(U) = PPTL-FS(R), PPHTL = SimComb, PLR(target) = Direct. PPTL Table 2 is
PPTL centre 3 (= PST branch #1) against ε.
"""

from __future__ import annotations

import pandas as pd

__all__ = [
    "PPTL_TABLE1",
    "PPTL_TABLE2",
    "PPTL_TABLE3",
    "PPTL_TABLE4",
    "centre_sizes_frame",
    "PST_TABLE2",
    "PST_MAIN_CENTRE_PLR",
    "PST_TABLE1_SIZES",
    "PST_MNIST_SPLIT_TEXT",
    "PPTL_RUIJIN_DATA",
    "PST_CLAIMS",
    "PPTL_CLAIMS",
    "PST_TO_PPTL",
    "table_frame",
]

EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)

#: PPTL §4.3, Table 1 (= Figure 3a): test AUC, MNIST transfer 0/8 → 0/9, ε_s = ε_t = ε.
PPTL_TABLE1 = {
    "source": "PPTL §4.3, Table 1 (plotted again in Figure 3a)",
    "epsilons": EPSILONS,
    "rows": {
        "PPTL-FS(W)": [(0.9007, 0.0391), (0.9500, 0.0204), (0.9825, 0.0051), (0.9895, 0.0019), (0.9921, 0.0017)],
        "PPTL-FS(R)": [(0.7687, 0.0998), (0.8459, 0.0701), (0.9361, 0.0214), (0.9761, 0.0095), (0.9964, 0.0004)],
        "SimComb": [(0.7005, 0.0613), (0.8088, 0.0812), (0.9642, 0.0073), (0.9906, 0.0018), (0.9943, 0.0009)],
        "SourceD": [(0.6527, 0.0927), (0.7510, 0.0854), (0.8806, 0.0431), (0.9401, 0.0180), (0.9523, 0.0088)],
        "Direct": [(0.6467, 0.0787), (0.6978, 0.0651), (0.8657, 0.0429), (0.9632, 0.0117), (0.9877, 0.0039)],
    },
}

#: PPTL §4.3, Table 2 (= Figure 3b): test AUC on RUIJIN centre 3 (= PST branch #1) against ε.
PPTL_TABLE2 = {
    "source": "PPTL §4.3, Table 2 (plotted again in Figure 3b); centre 3 = PST branch #1",
    "epsilons": EPSILONS,
    "rows": {
        "PPTL-FS(W)": [(0.7108, 0.0611), (0.7469, 0.0319), (0.7649, 0.0255), (0.7581, 0.0392), (0.7564, 0.0362)],
        "PPTL-FS(R)": [(0.6235, 0.0732), (0.6778, 0.0495), (0.7107, 0.0474), (0.7372, 0.0337), (0.7226, 0.0397)],
        "SimComb": [(0.5570, 0.1134), (0.6023, 0.0854), (0.6255, 0.0763), (0.6416, 0.0706), (0.7386, 0.0311)],
        "SourceD": [(0.6067, 0.0678), (0.6298, 0.0420), (0.6546, 0.0330), (0.6489, 0.0462), (0.7349, 0.0320)],
        "Direct": [(0.5112, 0.0733), (0.5476, 0.0882), (0.6216, 0.0815), (0.6649, 0.0552), (0.7231, 0.0381)],
    },
}

#: PPTL §4.1, Table 3: sample sizes of the 18 RUIJIN centres, as printed. Centres 1 and 2 together
#: are the source (the main centre of PST, 7,882 + 4,820 = 12,702); centres 3-18 are the targets,
#: PST branches #1-#16 (PST Table 4 prints the same sizes under those names).
PPTL_TABLE3 = {
    "source": "PPTL §4.1, Table 3 (sample sizes of the RUIJIN centres; centres 1-2 = source, 3-18 = PST branches #1-#16)",
    "centres": tuple(range(1, 19)),
    "sizes": (
        7882,
        4820,
        4334,
        4739,
        6121,
        2327,
        5619,
        6360,
        4966,
        5793,
        6215,
        3659,
        5579,
        2316,
        4285,
        6017,
        6482,
        4493,
    ),
}

#: PPTL §4.3, Table 4: test AUC on centres 3-18 at ε_s = ε_t = 1 (keys: PST branch numbers 1-16).
PPTL_TABLE4 = {
    "source": "PPTL §4.3, Table 4 (centres 3-18 = PST branches #1-#16)",
    "branches": tuple(range(1, 17)),
    "rows": {
        "PPTL-FS(W)": [
            (0.7469, 0.0321),
            (0.7360, 0.0317),
            (0.7395, 0.0400),
            (0.7143, 0.0397),
            (0.7664, 0.0388),
            (0.7072, 0.0169),
            (0.7205, 0.0464),
            (0.7529, 0.0417),
            (0.7010, 0.0233),
            (0.6983, 0.0361),
            (0.7357, 0.0462),
            (0.7384, 0.0451),
            (0.7459, 0.0520),
            (0.6614, 0.0942),
            (0.6968, 0.0233),
            (0.6039, 0.0124),
        ],
        "PPTL-FS(R)": [
            (0.6778, 0.0495),
            (0.7237, 0.0373),
            (0.6517, 0.1026),
            (0.7081, 0.0329),
            (0.6529, 0.0697),
            (0.6627, 0.0365),
            (0.6817, 0.0336),
            (0.6916, 0.0444),
            (0.6346, 0.0267),
            (0.6437, 0.0499),
            (0.6350, 0.0536),
            (0.6452, 0.0610),
            (0.7177, 0.0647),
            (0.6435, 0.0439),
            (0.6470, 0.0619),
            (0.5667, 0.0362),
        ],
        "SimComb": [
            (0.6023, 0.0853),
            (0.6080, 0.0782),
            (0.5279, 0.0623),
            (0.5632, 0.0670),
            (0.5776, 0.0750),
            (0.6012, 0.0307),
            (0.5804, 0.0708),
            (0.5827, 0.0566),
            (0.5468, 0.0665),
            (0.5167, 0.0747),
            (0.5652, 0.0587),
            (0.5469, 0.0893),
            (0.5917, 0.0806),
            (0.6152, 0.0708),
            (0.5583, 0.0652),
            (0.5239, 0.0269),
        ],
        "SourceD": [
            (0.6298, 0.0420),
            (0.6151, 0.0661),
            (0.5270, 0.0565),
            (0.5743, 0.0631),
            (0.5592, 0.0690),
            (0.6017, 0.0308),
            (0.5757, 0.0769),
            (0.5362, 0.0768),
            (0.5465, 0.0476),
            (0.5351, 0.0585),
            (0.5625, 0.0582),
            (0.5463, 0.0712),
            (0.5554, 0.0830),
            (0.6068, 0.0916),
            (0.5515, 0.0620),
            (0.5274, 0.0246),
        ],
        "Direct": [
            (0.5476, 0.0882),
            (0.6203, 0.0556),
            (0.6355, 0.0458),
            (0.5788, 0.0749),
            (0.5327, 0.0575),
            (0.6132, 0.0350),
            (0.5609, 0.0764),
            (0.5842, 0.0450),
            (0.5151, 0.0652),
            (0.5546, 0.0608),
            (0.5531, 0.0659),
            (0.5203, 0.0889),
            (0.6193, 0.0701),
            (0.5634, 0.0259),
            (0.5578, 0.0602),
            (0.5169, 0.0527),
        ],
    },
    "averaged_ranking": {"PPTL-FS(W)": 1, "PPTL-FS(R)": 2, "SimComb": 3.81, "SourceD": 3.93, "Direct": 4.18},
}

#: PST §4.2, Table 2: test AUC on the 16 RUIJIN branches at ε_src = ε_tgt = 1 (PST names).
#: Every entry equals the matching PPTL Table 4 entry (centre b + 2) to within 0.001; the
#: test-suite checks that.
PST_TABLE2 = {
    "source": "PST §4.2, Table 2",
    "branches": tuple(range(1, 17)),
    "rows": {
        "PST-H(W)": [
            (0.747, 0.032),
            (0.736, 0.032),
            (0.740, 0.040),
            (0.714, 0.040),
            (0.766, 0.039),
            (0.707, 0.017),
            (0.721, 0.0464),
            (0.753, 0.042),
            (0.701, 0.023),
            (0.698, 0.036),
            (0.736, 0.046),
            (0.738, 0.045),
            (0.746, 0.0520),
            (0.661, 0.094),
            (0.697, 0.023),
            (0.604, 0.012),
        ],
        "PST-H(U)": [
            (0.678, 0.049),
            (0.724, 0.037),
            (0.652, 0.103),
            (0.708, 0.033),
            (0.653, 0.070),
            (0.663, 0.036),
            (0.682, 0.0336),
            (0.692, 0.044),
            (0.635, 0.026),
            (0.644, 0.050),
            (0.635, 0.054),
            (0.645, 0.061),
            (0.718, 0.0647),
            (0.644, 0.044),
            (0.647, 0.061),
            (0.567, 0.036),
        ],
        "PPHTL": [
            (0.602, 0.085),
            (0.608, 0.078),
            (0.528, 0.062),
            (0.563, 0.067),
            (0.577, 0.075),
            (0.601, 0.031),
            (0.580, 0.0708),
            (0.583, 0.056),
            (0.547, 0.066),
            (0.517, 0.075),
            (0.565, 0.059),
            (0.547, 0.089),
            (0.592, 0.0806),
            (0.615, 0.071),
            (0.558, 0.065),
            (0.524, 0.027),
        ],
        "PLR(target)": [
            (0.548, 0.088),
            (0.620, 0.055),
            (0.636, 0.046),
            (0.579, 0.075),
            (0.533, 0.058),
            (0.613, 0.035),
            (0.561, 0.0764),
            (0.584, 0.045),
            (0.515, 0.065),
            (0.555, 0.061),
            (0.553, 0.066),
            (0.520, 0.088),
            (0.619, 0.0701),
            (0.563, 0.026),
            (0.558, 0.060),
            (0.517, 0.053),
        ],
    },
}

#: PST Table 2's caption: PLR on the main centre.
PST_MAIN_CENTRE_PLR = {"source": "PST §4.2, Table 2 caption", "auc": (0.668, 0.026)}

#: PST §4.1, Table 1: data set sizes.
PST_TABLE1_SIZES = {
    "source": "PST §4.1, Table 1",
    "MNIST": {"train": 3000, "test": 2000, "features": 100},
    "NEWS20": {"train": 4321, "test": 643, "features": 100},
}

#: PST §4.1 text: the MNIST split as worded, "60% for training (1/3 of it for validation) and the
#: remaining 20% for testing", which does not add up; Table 1's sizes are used (erratum 6).
PST_MNIST_SPLIT_TEXT = {"source": "PST §4.1 text (MNIST)", "train": 0.60, "validation_of_train": 1 / 3, "test": 0.20}

#: PPTL §4.1's description of the RUIJIN data: 18 of the 22 centres are used, with 52 features
#: (PST §4.2 describes the same data with 50 features).
PPTL_RUIJIN_DATA = {"source": "PPTL §4.1 text", "centres_used": 18, "centres_total": 22, "features": 52}

#: PST names → PPTL names (the book's errata page, item "Names").
PST_TO_PPTL = {"PST-H(W)": "PPTL-FS(W)", "PST-H(U)": "PPTL-FS(R)", "PPHTL": "SimComb", "PLR(target)": "Direct"}

#: How many times each paper repeats its experiments, as it states (PST §4.1; PPTL §4.3, its Figure 4
#: 30 times; MPL §6: 10 trials for non-private algorithms, 100 for private ones). The book's prose may
#: attribute only these counts to a paper.
PAPER_REPEATS = {"PST": (10,), "PPTL": (10, 30), "MPL": (10, 100)}


#: PST's claims, quoted verbatim from the IJCAI text (math as Unicode; "[…]" marks a cut), keyed by
#: figure (arXiv numbering, IJCAI in brackets in the source) or table; the pages quote them beside the
#: test of each (:mod:`dpstack.companion.papers.pst.pages`).
PST_CLAIMS = {
    "fig1": {
        "source": "PST §4.1 'Varying Privacy Budget ε', Figure 1 (plot only; ε = ∞ plotted)",
        "claims": [
            "the AUCs for all methods improve when the privacy requirement is relaxed (ε is large and less noise "
            "is added)",
            "PST-S can be inferior to PLR, due to insufficient training samples caused by SP",
            "Both PST-F(W) and PST-F(U) have better AUCs than PST-S and PLR",
            "In particular, PST-F(W) is the best as it can utilize feature importance",
        ],
    },
    "fig2": {
        "source": "PST §4.1 'Varying Number of Partitions K', Figure 2 [IJCAI Fig. 2(a)-(b)] (plot only), ε = 1",
        "claims": [
            "when K is very small, ensemble learning is not effective. When K is too large, a lot of feature "
            "correlation information is lost and the testing AUC also decreases"
        ],
    },
    "fig3": {
        "source": "PST §4.1 'Changing the Feature Importance', Figure 3 [IJCAI Fig. 2(c)-(d)] (plot only)",
        "claims": [
            "with proper assigned weights (i.e., α < 1 and more important features have larger qₖ’s), the "
            "testing AUC can get higher",
            "If less important features are more valued, the testing AUC decreases and may not be better than "
            "PST-F(U), which uses uniform weights",
            "PST-F(W) is not sensitive to the weights once they are properly assigned",
        ],
    },
    "fig4": {
        "source": "PST §4.1 'Choice of High-Level Model', Figure 4 [IJCAI Fig. 3] (plot only), NEWS20, ε = 1",
        "claims": [
            "C-0 in Figure 3(b) has the best performance among all single low-level models, as it contains the "
            "most important features",
            "stacking (i.e., C-hl), is the best way to combine predictions from C-{0-4}",
            "[stacking (i.e., C-hl)] also offers better performance than any single low-level models",
        ],
    },
    "table2": {
        "source": "PST §4.2, Table 2",
        "claims": [
            "PPHTL may not have better performance than PLR(target), which is perhaps due to noise introduced in "
            "features",
            "PST-F(U) improves over PPHTL by feature splitting",
            "[PST-F(U)] consistently outperforms PLR(target)",
            "PST-F(W), which considers features importance, is the best",
        ],
    },
}

#: PPTL's claims, quoted verbatim (math as Unicode; "[…]" marks a cut or an editor's insertion), quoted
#: beside their tests (:mod:`dpstack.companion.papers.pptl.pages`).
PPTL_CLAIMS = {
    "table1": {
        "source": "PPTL §4.3 'MNIST', Table 1 / Figure 3a",
        "claims": [
            "when ϵ gets smaller, AUC of all methods decrease",
            "SimComb consistently gets better performance than SourceD and Direct",
            "when ϵ gets smaller, PPTL-FS(R) can get better performance than SimComb",
            "PPTL-FS(W) is the best method",
        ],
    },
    "table4": {
        "source": "PPTL §4.3 'RUIJIN', Table 4",
        "claims": [
            "SimComb may not get better performance than SourceD and Direct, which is perhaps due to the noise "
            "introduced in features",
            "EtransR [PPTL-FS(R)] improves over SimComb by feature splitting, and consistently gets better "
            "performance than SourceD, Direct and SimComb",
            "PPTL-FS(W), which considers features importance, is the best method",
        ],
    },
    "table2": {
        "source": "PPTL §4.3, Table 2 / Figure 3b (centre 3)",
        "claims": [
            "Testing AUC of all methods get lower with smaller ϵ",
            "PPTL-FS(W) is the best (compared with methods having the privacy guarantee)",
        ],
    },
    "fig4": {
        "source": "PPTL §4.3 'Influence of the splitting size K', Figure 4 (plot only), ε = 1, 30 repeats",
        "claims": [
            "there is a peak of K for our proposed method in both datasets",
            "the peak of K of PPTL-FS(W) is smaller than that of PPTL-FS(R)",
            "for all K's in both datasets, the performance of PPTL-FS(R) is not better than PPTL-FS(W) with a "
            "significance level 0.05",
        ],
    },
}


def centre_sizes_frame(table=None):
    """PPTL Table 3 as a tidy DataFrame: ``centre`` (PPTL's id), ``branch`` (PST's number; 0 for the two
    source centres), ``paper_n`` (the printed size) and ``source``."""
    table = PPTL_TABLE3 if table is None else table
    return pd.DataFrame(
        [
            dict(centre=c, branch=max(c - 2, 0), paper_n=n, source=table["source"])
            for c, n in zip(table["centres"], table["sizes"])
        ]
    )


def table_frame(table, column="epsilon"):
    """A transcribed table as a tidy DataFrame: method, ``column`` value, mean, sd, source."""
    keys = table.get("epsilons", table.get("branches"))
    rows = [
        dict(method=m, **{column: k}, paper_mean=mu, paper_sd=sd, source=table["source"])
        for m, values in table["rows"].items()
        for k, (mu, sd) in zip(keys, values)
    ]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------
# MPL = Hamm, Cao & Belkin, ICML 2016, §6. Figures 2-4 are plots; the only numbers are those of the
# §6.1 text (HAR), printed with two decimals. Everything else the paper says is a verbal claim.
# ---------------------------------------------------------------------------------------------------

#: MPL §6.1 (text beside Figure 2): test accuracy on UCI HAR, M = 1,000 parties of 6 samples.
#: Keys: (method, 1/ε) with 1/ε = 0 for a release without noise (batch and indiv are non-private).
MPL_HAR = {
    "source": "MPL §6.1 (text beside Figure 2)",
    "values": {
        ("batch", 0.0): 0.90,
        ("indiv", 0.0): 0.47,
        ("vote", 0.0): 0.79,
        ("soft", 0.0): 0.76,
        ("avg", 0.0): 0.67,
    },
}

#: The verbal claims of MPL §6, one entry per page, each claim with an id the page's checks use.
MPL_CLAIMS = {
    "har": {
        "source": "MPL §6.1, Figure 2",
        "claims": {
            "values": "batch ≈ 0.90, indiv ≈ 0.47; at 1/ε = 0 vote 0.79, soft 0.76, avg 0.67",
            "vote_useless": "vote becomes useless even at 1/ε = 0.1",
            "soft_avg_above_indiv": "soft and avg are better than indiv until 1/ε = 1",
        },
    },
    "kdd": {
        "source": "MPL §6.2, Figure 3",
        "claims": {
            "between": "for a small 1/ε, private algorithms perform roughly in between batch and indiv",
            "worse_than_indiv": "as 1/ε increases private algorithms start to perform worse than indiv",
            "large_M": "When M is large (e.g., M = 20K), private algorithms soft and avg hold their accuracy better "
            "than when M is small (e.g., M = 5K.)",
            "soft_near_batch": "In particular, soft performs nearly as well as the non-private batch until around "
            "1/ε = 10 compared to avg.",
        },
    },
    "url": {
        "source": "MPL §6.3, Figure 4",
        "claims": {
            "gap_larger": "the gap between batch and the other algorithms is larger than for KDD-99",
            "between": "the overall tendency is very similar to the previous experiments",
        },
    },
}

__all__ += ["MPL_HAR", "MPL_CLAIMS"]
