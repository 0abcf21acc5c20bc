"""The zoo's table: one entry per trained model (architecture config + training recipe + card).

``arch`` is what ``attnscope.models.zoo.build.build_model`` takes and what the manifest stores; ``train`` is
the recipe ``attnscope.pipelines.train`` follows. Widths are small on purpose: ``make zoo`` retrains everything
on 2 CPU cores.
"""

from __future__ import annotations

CORDONNIER = (
    "Cordonnier, Loukas & Jaggi 2020, On the Relationship between Self-Attention and Convolutional Layers "
    "(ICLR, arXiv 1911.03584)"
)
VIT = "Dosovitskiy et al. 2021, An Image is Worth 16x16 Words (ICLR, arXiv 2010.11929)"
EA = "Wang et al. 2021, Evolving Attention with Residual Convolutions (ICML, arXiv 2102.12895)"
HA = (
    "Varma T. & Prabhu 2021, [Re] On the Relationship between Self-Attention and Convolutional Layers "
    "(ReScience C), hierarchical attention"
)
SAN = "Zhao, Jia & Koltun 2020, Exploring Self-attention for Image Recognition (CVPR, arXiv 2004.13621)"
ANDREOLI = "Andreoli 2019, Convolution, attention and structure embedding (arXiv 1905.01289)"
VASWANI = "Vaswani et al. 2017, Attention Is All You Need (arXiv 1706.03762)"

VISION_TRAIN = {"epochs": 10, "batch": 128, "lr": 2e-3, "weight_decay": 0.05, "warmup": 0.05, "shift": 2}
FINE_TRAIN = {**VISION_TRAIN, "epochs": 4}  # 14x14 grids cost ~10x more per epoch than 7x7
TEXT_TRAIN = {"epochs": 3, "batch": 256, "lr": 2e-3, "weight_decay": 0.01, "warmup": 0.05}

# Every vision classifier reads the flattened grid ("pool": "flatten"): at this size and budget mean
# pooling stayed far below the floor (gauss9-iso, 2 layers, one epoch: 26% mean-pooled vs 86% flattened).
# 14x14 grid (2x2 space-to-depth, Cordonnier's set-up) for the flagship Gaussian models; 7x7 (4x4) elsewhere
# (a 14x14 grid costs ~10x more per epoch; 2 CPU cores bound the budget).
_FINE = {"kind": "vision", "patch": 2, "dim": 32, "depth": 2, "mlp": 64, "heads": 9, "head_dim": 4, "pool": "flatten"}
_GAUSS = {"kind": "vision", "patch": 4, "dim": 32, "depth": 3, "mlp": 64, "heads": 9, "head_dim": 8, "pool": "flatten"}
_VIT = {
    "kind": "vision",
    "attention": "content",
    "patch": 4,
    "dim": 48,
    "depth": 3,
    "heads": 4,
    "mlp": 96,
    "cls": True,
    "abs_pos": True,
    "pool": "flatten",
}
_SAN = {
    "kind": "vision",
    "patch": 4,
    "dim": 32,
    "depth": 2,
    "mlp": 64,
    "heads": 4,
    "kernel": 3,
    "rel_dim": 16,
    "pool": "flatten",
}
_TEXT = {
    "kind": "text",
    "attention": "content",
    "dim": 64,
    "depth": 2,
    "heads": 4,
    "mlp": 128,
    "max_len": 64,
    "dropout": 0.1,
}

ZOO: dict[str, dict] = {
    "gauss9-iso": {
        "family": "cordonnier-gaussian",
        "modality": "vision",
        "paper": CORDONNIER,
        "description": "9 content-free Gaussian heads (isotropic spread) per layer, "
        "14x14 grid after 2x2 space-to-depth",
        "arch": {**_FINE, "attention": "gaussian"},
        "train": FINE_TRAIN,
    },
    "gauss9-full": {
        "family": "cordonnier-gaussian",
        "modality": "vision",
        "paper": CORDONNIER,
        "description": "9 content-free Gaussian heads (full covariance) per layer, 14x14 grid after 2x2 space-to-depth",
        "arch": {**_FINE, "attention": "gaussian-full"},
        "train": FINE_TRAIN,
    },
    "gauss16-iso": {
        "family": "cordonnier-gaussian",
        "modality": "vision",
        "paper": CORDONNIER,
        "description": "16 content-free Gaussian heads (isotropic) per layer (Cordonnier's many-heads run), 7x7 grid",
        "arch": {**_GAUSS, "attention": "gaussian", "heads": 16},
        "train": VISION_TRAIN,
    },
    "learned2d": {
        "family": "cordonnier-learned2d",
        "modality": "vision",
        "paper": CORDONNIER,
        "description": "learned 2-D relative positional attention, no content, 7x7 grid",
        "arch": {**_GAUSS, "attention": "learned2d", "content": False, "pos_dim": 32},
        "train": VISION_TRAIN,
    },
    "learned2d-content": {
        "family": "cordonnier-learned2d",
        "modality": "vision",
        "paper": CORDONNIER,
        "description": "learned 2-D relative positional attention plus content scores, 7x7 grid",
        "arch": {**_GAUSS, "attention": "learned2d", "content": True, "pos_dim": 32, "head_dim": 8},
        "train": VISION_TRAIN,
    },
    "vit": {
        "family": "vit",
        "modality": "vision",
        "paper": VIT,
        "description": "ViT: 4x4 patches, CLS, learned absolute positions (the vanilla twin of ea-vit)",
        "arch": _VIT,
        "train": VISION_TRAIN,
    },
    "ea-vit": {
        "family": "evolving-attention",
        "modality": "vision",
        "paper": EA,
        "description": "Evolving Attention ViT (alpha 0.5, beta 0.3, 3x3 conv on logits), trained like vit",
        "arch": {**_VIT, "ea": {"alpha": 0.5, "beta": 0.3}},
        "train": VISION_TRAIN,
    },
    "ha-vit": {
        "family": "hierarchical-attention",
        "modality": "vision",
        "paper": HA,
        "description": "ViT with one shared block applied 3 times, keys fixed from the first pass",
        "arch": {**_VIT, "hierarchical": True},
        "train": VISION_TRAIN,
    },
    "ha-learned2d-content": {
        "family": "hierarchical-attention",
        "modality": "vision",
        "paper": HA,
        "description": "learned-2D + content attention, one shared block applied 3 times, keys fixed",
        "arch": {
            **_GAUSS,
            "attention": "learned2d",
            "content": True,
            "pos_dim": 32,
            "head_dim": 8,
            "hierarchical": True,
        },
        "train": VISION_TRAIN,
    },
    "san-pairwise": {
        "family": "san",
        "modality": "vision",
        "paper": SAN,
        "description": "pairwise (subtraction) self-attention in a 3x3 window, 7x7 grid",
        "arch": {**_SAN, "attention": "san-pairwise"},
        "train": FINE_TRAIN,
    },
    "san-patchwise": {
        "family": "san",
        "modality": "vision",
        "paper": SAN,
        "description": "patchwise self-attention (weights from the whole 3x3 patch), 7x7 grid",
        "arch": {**_SAN, "attention": "san-patchwise"},
        "train": FINE_TRAIN,
    },
    "ha-san-pairwise": {
        "family": "hierarchical-attention",
        "modality": "vision",
        "paper": HA,
        "description": "SAN pairwise, one shared block applied 2 times, key side psi(x) fixed from the first pass",
        "arch": {**_SAN, "attention": "san-pairwise", "hierarchical": True},
        "train": FINE_TRAIN,
    },
    "conv-attention": {
        "family": "conv-as-attention",
        "modality": "vision",
        "paper": CORDONNIER,
        "description": "demo: a trained CNN whose first 3x3 conv is replaced by the 9-head quadratic-encoding "
        "attention layer built from its kernel (alpha 30); heads = kernel taps, on the zero-padded grid",
        "arch": {
            "kind": "vision",
            "attention": "conv-as-attention",
            "patch": 2,
            "channels": [16, 32],
            "alpha": 30.0,
            "heads": 9,
            "depth": 1,
        },
        "train": {**VISION_TRAIN, "epochs": 6},
    },
    "text-vanilla": {
        "family": "transformer",
        "modality": "text",
        "paper": VASWANI,
        "description": "2-layer encoder classifier on SST-2 (the vanilla twin of text-ea)",
        "arch": _TEXT,
        "train": TEXT_TRAIN,
    },
    "text-ea": {
        "family": "evolving-attention",
        "modality": "text",
        "paper": EA,
        "description": "Evolving Attention encoder (alpha 0.5, beta 0.3) on SST-2, trained like text-vanilla",
        "arch": {**_TEXT, "ea": {"alpha": 0.5, "beta": 0.3}},
        "train": TEXT_TRAIN,
    },
    "text-ha": {
        "family": "hierarchical-attention",
        "modality": "text",
        "paper": HA,
        "description": "one shared encoder block applied twice, keys fixed from the first pass, on SST-2",
        "arch": {**_TEXT, "hierarchical": True},
        "train": TEXT_TRAIN,
    },
    "text-shift": {
        "family": "andreoli-shift",
        "modality": "text",
        "paper": ANDREOLI,
        "description": "no positional encoding: content scores plus a learnable mixture of shift "
        "matrices S_delta, delta in [-2, 2], per head",
        "arch": {**_TEXT, "attention": "shift", "radius": 2, "content": True},
        "train": TEXT_TRAIN,
    },
}
