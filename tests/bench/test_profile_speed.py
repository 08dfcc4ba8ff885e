"""profile_speed's kinds and its kernel accounting, on the CPU's operators."""

import torch

from bench.profile_speed import kernel_ms, kind_of


def test_kernels_are_sorted_into_kinds_by_name():
    assert kind_of("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == "matmul"
    assert kind_of("aten::addmm") == "matmul"
    assert kind_of("cudnn_generated_fort_native_sdpa_sm90_flash_fprop") == "attention"
    assert kind_of("triton_per_fused_add_mul_native_layer_norm_0") == "fused_triton"
    assert kind_of("void at::native::(anonymous)::vectorized_layer_norm_kernel<float>") == "norm"
    assert kind_of("void at::native::unrolled_elementwise_kernel<copy_kernel>") == "copy"
    assert kind_of("aten::convolution") == "convolution"
    assert kind_of("void at::native::vectorized_elementwise_kernel<4, sin_kernel>") == "elementwise"


def test_kernel_time_is_split_by_kind_and_adds_up():
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    spent = kernel_ms(lambda: (a @ b).sin().to(torch.float64), torch.device("cpu"))
    assert {"matmul", "elementwise", "copy"} <= set(spent)
    assert all(ms >= 0 for ms in spent.values())
    assert abs(spent["total"] - sum(ms for kind, ms in spent.items() if kind != "total")) < 0.01
