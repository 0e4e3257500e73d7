"""SUNMMIO's DMA into WSRAM needs a ZZ-like DRAM layout: a T.copy from a T.MeshTensor
kept in a ZN layout into WSRAM (a shared.wsram buffer, or T.gemm's B operand of the
default scope) is refused, as the fork's compiler refuses it; into ASRAM it runs (the
fork stages it through RSRAM), and so does a ZZ layout."""
import pytest

pytest.importorskip("tilelang")
import tilelang.language as T  # noqa: E402

from meshtensor.tilelang import prepare_tilelang_mesh  # noqa: E402
from meshtensor.tilelang import tilelang_mesh as tm  # noqa: E402


@pytest.fixture(autouse=True)
def _mesh():
    tm.enable(mesh=(2, 2))
    yield
    tm.enable(mesh=(4, 4))


def _kernel(layout: str, scope: str | None, gemm: bool):
    from tilelang.layout import make_zn_layout, make_zz_layout
    make = {"zn": make_zn_layout, "zz": make_zz_layout}[layout]
    policy = T.MeshShardingPolicy(y=0, x=1)
    B_t = T.MeshTensor((64, 64), policy, (2, 2), "float16",
                       layout=make((64, 64), [0, 1], (32, 32)))
    C_t = T.MeshTensor((64, 64), policy, (2, 2), "float32")
    kw = {} if scope is None else {"scope": scope}

    @T.prim_func
    def k(B: B_t, C: C_t):
        with T.Kernel() as cid:
            A_s = T.alloc_shared((32, 32), "float16", scope="shared.asram")
            B_s = T.alloc_shared((32, 32), "float16", **kw)
            C_s = T.alloc_shared((32, 32), "float32", scope="shared.rsram")
            T.clear(C_s)
            T.copy(B[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            if gemm:
                T.gemm(A_s, B_s, C_s)
            T.copy(C_s, C[0, 0])
            C[0, 0] = C[0, 0] + cid

    return k


@pytest.mark.parametrize("scope, gemm", [("shared.wsram", False), (None, True)])
def test_a_zn_dram_layout_into_wsram_is_refused(scope, gemm):
    where = r"in WSRAM \(T.gemm's B operand\)" if scope is None else r"in WSRAM,"
    with pytest.raises(ValueError, match=r"T.copy\(B -> B_s\): B is kept in DRAM in layout "
                                         r"zn\(shape=\(64, 64\).*SUNMMIO's DMA writes B_s, "
                                         + where):
        prepare_tilelang_mesh(_kernel("zn", scope, gemm))


@pytest.mark.parametrize("layout, scope, gemm", [
    ("zn", "shared.rsram", False),   # RSRAM takes any layout
    ("zn", None, False),             # default scope, no T.gemm reads it as B
    ("zz", "shared.wsram", True),    # ZZ-like
])
def test_other_copies_from_a_blocked_dram_layout_run(layout, scope, gemm):
    prepare_tilelang_mesh(_kernel(layout, scope, gemm))  # the A_s (ASRAM) copy too


def _padded_kernel(rows: int, cols: int, dram_padded: bool = False):
    from tilelang.layout import make_aligned_row_major, make_row_major
    policy = T.MeshShardingPolicy(replicate=T.MeshReplicationType.ALL)
    dram = (make_aligned_row_major((rows, cols), "float16", 64) if dram_padded
            else make_row_major((rows, cols)))
    A_t = T.MeshTensor((rows, cols), policy, (2, 2), "float16", layout=dram)

    @T.prim_func
    def k(A: A_t, B: A_t):
        with T.Kernel(1) as bx:
            X = T.alloc_shared((rows, cols), "float16", scope="shared.rsram")
            T.annotate_layout({X: make_aligned_row_major((rows, cols), "float16", 64)})
            T.copy(A, X)
            T.copy(X, B)

    return k


def test_a_padded_copy_past_32_rows_is_refused():
    """SUNMMIO's pad/unpad transform (unpadded DRAM <-> alignment-padded RSRAM) moves at
    most 32 rows; its compiler refuses more (the upstream's test_layout_transform.py)."""
    with pytest.raises(ValueError, match=r"T.copy\(A -> X\): X is laid out padded row-major "
                                         r"\(40 columns at a pitch of 64\).*at most 32, here "
                                         r"33"):
        prepare_tilelang_mesh(_padded_kernel(33, 40))


@pytest.mark.parametrize("rows, cols, dram_padded", [(32, 40, False), (40, 64, False),
                                                   (40, 40, True)])
def test_padded_copies_within_the_limit_run(rows, cols, dram_padded):
    """32 rows is the limit; 64 float16 columns are already aligned (no padding); a DRAM
    tensor padded alike is copied without the pad/unpad transform."""
    prepare_tilelang_mesh(_padded_kernel(rows, cols, dram_padded))
