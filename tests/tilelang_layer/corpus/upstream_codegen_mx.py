"""Kernels of the current SUNMMIO/Tilelang codegen test
``testing/python/sunmmio/codegen/test_mx_quant_dequant_opt_validate.py`` that use the
MX block-scaled kinds (``T.mxfp8``, ``T.mxfp4``, ``T.mx_pack``, ``T.mx_unpack``) and
declare ``T.MeshTensor`` parameters, verbatim, read at the commit named below. Import
lines only differ: ``target`` (the tests' ``@target("Sunmmio")``) comes from the corpus
harness; ``make_tileview`` (the upstream's ``tilelang.tileview``) from
``tilelang.layout``, where ``tm.enable`` installs it with the layout makers and
``get_mx_scale_shape``. The tests' codegen checks are not ported: the corpus runs the
kernels.
"""
# flake8: noqa
import importlib.util
import pathlib
import sys

import tilelang.language as T
from tilelang.language.mesh_tensor import MeshReplicationType
from tilelang.layout import make_tileview
from tilelang.layout import (
    get_mx_scale_shape,
    # make_aligned_row_major,
    make_mxznz_layout,
    make_mxzz_layout,
    make_zz_layout,
)

_h = sys.modules.get("tm_corpus_harness")
if _h is None:  # loaded on its own
    _spec = importlib.util.spec_from_file_location(
        "tm_corpus_harness", pathlib.Path(__file__).parent / "harness.py")
    _h = importlib.util.module_from_spec(_spec)
    sys.modules["tm_corpus_harness"] = _h
    _spec.loader.exec_module(_h)
target = _h.target


# ---- testing/python/sunmmio/codegen/test_mx_quant_dequant_opt_validate.py
# @ 6b3a471cf5c6fc91bae46fee8bc89f4c5deb8aa5

def _int_shape(shape):
    return tuple(int(x) for x in shape)


# A4E converts E8M0 through BF16; the stored E8M0 value is the scale source of truth.
def _to_e8m0_scale(x):
    return T.Cast("float8_e8m0fnu", x)


def _e8m0_scale_to_fp32(x):
    return T.Cast("float32", T.Cast("bfloat16", x))


@target("Sunmmio")
def mx_ocp_quant_dequant_full_chain_kernel_for_debug(mx_dtype, data_dtype, data_dtype_name, data_max):
    shape = (32, 32)
    shard_policy = T.MeshShardingPolicy(replicate=MeshReplicationType.ALL)
    tensor_layout = make_zz_layout(shape, axes=[0, 1], block_shape=(32, 32))
    mx_layout = make_mxzz_layout(shape, dtype=mx_dtype)
    scale_shape = _int_shape(get_mx_scale_shape(mx_layout, mx_dtype))
    data_max_inv = 1.0 / data_max

    @T.prim_func
    def main(
        A: T.MeshTensor(shape, shard_policy, T.bfloat16, layout=tensor_layout),  # type: ignore
        Y: T.MeshTensor(shape, shard_policy, T.bfloat16, layout=tensor_layout),  # type: ignore
    ):
        with T.Kernel():
            a_rsram = T.alloc_shared(shape, T.bfloat16)
            amax = T.alloc_shared((64,), T.float32)
            data = T.alloc_shared(shape, data_dtype)
            scale = T.alloc_shared(scale_shape, T.float8_e8m0fnu)
            scale_bf16_vec = T.alloc_shared((64,), T.bfloat16)
            scale_fp32_vec = T.alloc_shared((64,), T.float32)
            mx = T.alloc_shared(shape, mx_dtype)
            unpacked_data = T.alloc_shared(shape, data_dtype)
            unpacked_scale = T.alloc_shared(scale_shape, T.float8_e8m0fnu)
            unpacked_scale_fp32_vec = T.alloc_shared((64,), T.float32)
            y_rsram = T.alloc_shared(shape, T.bfloat16)

            T.copy(A, a_rsram)

            # OCP MX quantization: each logical row is one 32-element scale
            # group in this 32x32 test block.
            T.fill(amax, T.float32(1e-4))
            T.reduce_absmax(a_rsram, amax[0:32], dim=1, clear=True)
            for j in T.Tiles([scale_shape[1]]):
                safe_amax = T.max(amax[j], T.float32(1e-4))
                scale_bf16_vec[j] = T.Cast("bfloat16", safe_amax * T.float32(data_max_inv))
            for j in T.Tiles([scale_shape[1]]):
                scale[0, j] = _to_e8m0_scale(scale_bf16_vec[j])
            for j in T.Tiles([scale_shape[1]]):
                scale_fp32_vec[j] = _e8m0_scale_to_fp32(scale[0, j])

            T.annotate_tileview(
                {
                    a_rsram: make_tileview(a_rsram, (8, 32), (-2, -1)),
                    data: make_tileview(data, (8, 32), (-2, -1)),
                }
            )
            for row, col in T.Tiles(data):
                raw = T.Cast("float32", a_rsram[row, col]) / scale_fp32_vec[row]
                clamped = T.min(T.max(raw, T.float32(-data_max)), T.float32(data_max))
                data[row, col] = T.Cast(data_dtype_name, clamped)

            T.mx_pack(data, scale, mx)
            T.mx_unpack(mx, unpacked_data, unpacked_scale)

            for j in T.Tiles([scale_shape[1]]):
                unpacked_scale_fp32_vec[j] = _e8m0_scale_to_fp32(unpacked_scale[0, j])

            T.annotate_tileview(
                {
                    unpacked_data: make_tileview(unpacked_data, (8, 32), (-2, -1)),
                    y_rsram: make_tileview(y_rsram, (8, 32), (-2, -1)),
                }
            )
            for row, col in T.Tiles(y_rsram):
                q = T.Cast("float32", unpacked_data[row, col])
                y_rsram[row, col] = T.Cast("bfloat16", q * unpacked_scale_fp32_vec[row])

            T.copy(y_rsram, Y)

    return main


@target("Sunmmio")
def mx_ocp_quant_dequant_full_chain_kernel_original(mx_dtype, data_dtype, data_dtype_name, data_max):
    shape = (32, 32)
    shard_policy = T.MeshShardingPolicy(replicate=MeshReplicationType.ALL)
    tensor_layout = make_zz_layout(shape, axes=[0, 1], block_shape=(32, 32))
    mx_layout = make_mxzz_layout(shape, dtype=mx_dtype)
    scale_shape = _int_shape(get_mx_scale_shape(mx_layout, mx_dtype))
    data_max_inv = 1.0 / data_max

    @T.prim_func
    def main(
        A: T.MeshTensor(shape, shard_policy, T.bfloat16, layout=tensor_layout),  # type: ignore
        Y: T.MeshTensor(shape, shard_policy, T.bfloat16, layout=tensor_layout),  # type: ignore
    ):
        with T.Kernel():
            a_rsram = T.alloc_shared(shape, T.bfloat16)
            amax = T.alloc_shared((64,), T.float32)
            data = T.alloc_shared(shape, data_dtype)
            scale = T.alloc_shared(scale_shape, T.float8_e8m0fnu)
            scale_bf16_vec = T.alloc_shared((64,), T.bfloat16)
            scale_fp32_vec = T.alloc_shared((64,), T.float32)
            mx = T.alloc_shared(shape, mx_dtype)
            unpacked_data = T.alloc_shared(shape, data_dtype)
            unpacked_scale = T.alloc_shared(scale_shape, T.float8_e8m0fnu)
            unpacked_scale_fp32_vec = T.alloc_shared((64,), T.float32)
            y_rsram = T.alloc_shared(shape, T.bfloat16)

            T.copy(A, a_rsram)

            # OCP MX quantization: each logical row is one 32-element scale
            # group in this 32x32 test block.
            T.fill(amax, T.float32(1e-4))
            T.reduce_absmax(a_rsram, amax[0:32], dim=1, clear=True)
            for j in T.Tiles([scale_shape[1]]):
                safe_amax = T.max(amax[j], T.float32(1e-4))
                scale_bf16_vec[j] = T.Cast("bfloat16", safe_amax * T.float32(data_max_inv))

            for j in T.Tiles([scale_shape[1]]):
                scale[0, j] = _to_e8m0_scale(scale_bf16_vec[j])

            for j in T.Tiles([scale_shape[1]]):
                scale_fp32_vec[j] = _e8m0_scale_to_fp32(scale[0, j])

            for row, col in T.Tiles(data):
                raw = T.Cast("float32", a_rsram[row, col]) / scale_fp32_vec[row]
                clamped = T.min(T.max(raw, T.float32(-data_max)), T.float32(data_max))
                data[row, col] = T.Cast(data_dtype_name, clamped)

            T.mx_pack(data, scale, mx)
            T.mx_unpack(mx, unpacked_data, unpacked_scale)

            for j in T.Tiles([scale_shape[1]]):
                unpacked_scale_fp32_vec[j] = _e8m0_scale_to_fp32(unpacked_scale[0, j])

            for row, col in T.Tiles(y_rsram):
                q = T.Cast("float32", unpacked_data[row, col])
                y_rsram[row, col] = T.Cast("bfloat16", q * unpacked_scale_fp32_vec[row])

            T.copy(y_rsram, Y)

    return main
