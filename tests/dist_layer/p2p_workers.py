"""Worker for test_point_to_point.py (importable by the spawned ranks): the collectives
the engine runs point-to-point, on uneven shapes, several dtypes, both gather dims."""
import numpy as np

# (local shape, gather or scatter dim): 7 rows split 4 + 3, 5 columns split 3 + 2, an
# empty piece (1 row over 2 members).
CASES = [((7, 5), 0), ((7, 5), 1), ((1, 4), 0)]
DTYPES = ["float32", "float64", "int32", "int64", "int16"]
REDUCTIONS = ["sum", "prod", "max"]


def terms(shape, dtype, rank):
    """Small values whose sums and products are exact in every dtype of DTYPES."""
    v = np.random.default_rng(rank * 7 + shape[0]).integers(-5, 6, size=shape)
    return (v * 1.5 if dtype.startswith("float") else v).astype(dtype)


def blocks(shape, dtype, rank):
    return (np.arange(int(np.prod(shape))).reshape(shape) + 100 * rank).astype(dtype)


def point_to_point(dm):
    import torch
    out = {}
    for shape, ax in CASES:
        for dt in DTYPES:
            for red in REDUCTIONS:
                t = torch.from_numpy(terms(shape, dt, dm.rank))
                out[shape, ax, dt, red] = dm.reduce_scatter(t, [0], ax, red).numpy()
            g = torch.from_numpy(blocks(shape, dt, dm.rank))
            out[shape, ax, dt, "gather"] = dm.all_gather(g, [0], ax).numpy()
            out[shape, ax, dt, "gather_yx"] = dm.all_gather(g, [1, 0], ax).numpy()
    return out
