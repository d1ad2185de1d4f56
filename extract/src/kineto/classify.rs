//! What a traced kernel is: its short name, its compute class, or its collective and bytes.

use concerto_graph::{CollectiveKind, ComputeClass, DType};

use super::events::{GpuOp, Span};

/// Whether the recorded input shapes of a CPU op named `name` are read: a matrix multiply
/// (`aten::mm`, `addmm`, `bmm`, `baddbmm`, `linear`: a GEMM kernel's shape) or a collective
/// (`nccl:*`, `c10d::*`, `record_param_comms`: its bytes). The reader drops the others' shapes.
pub(super) fn keeps_shapes(name: &str) -> bool {
    matches!(
        name,
        "aten::mm" | "aten::addmm" | "aten::bmm" | "aten::baddbmm" | "aten::linear"
    ) || is_collective_span(name)
}

/// Whether a CPU op is one whose first input is a collective's buffer.
fn is_collective_span(name: &str) -> bool {
    name.starts_with("nccl:") || name.starts_with("c10d::") || name == "record_param_comms"
}

/// A kernel's name without `void `, namespaces' template arguments and parameters:
/// `void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)` becomes
/// `at::native::vectorized_elementwise_kernel`.
pub(super) fn short_name(name: &str) -> String {
    let s = name.strip_prefix("void ").unwrap_or(name);
    let cut = s.find(['<', '(']).unwrap_or(s.len());
    let s = s[..cut].trim();
    if s.is_empty() {
        "kernel".into()
    } else {
        s.replace(' ', "_")
    }
}

/// The compute class of a kernel, by its name (cuBLAS, CUTLASS and cuDNN GEMM and convolution
/// kernels, fused attention, normalisation, reductions, elementwise kernels).
pub(super) fn compute_class(name: &str) -> ComputeClass {
    // FBGEMM is a library name: its embedding and permute kernels are no GEMMs.
    let s = short_name(name)
        .to_ascii_lowercase()
        .replace("fbgemm", "fb");
    let has = |xs: &[&str]| xs.iter().any(|x| s.contains(x));
    if has(&["fmha", "flash", "attention", "attn"]) {
        ComputeClass::Attention
    } else if has(&[
        "gemm", "cutlass", "cublas", "matmul", "xmma", "conv", "winograd", "fft", "wgrad", "dgrad",
        "sm80_", "sm90_",
    ]) && !has(&["splitkreduce"])
    {
        ComputeClass::Gemm
    } else if has(&["norm", "bn_fw", "bn_bw"]) {
        ComputeClass::Norm
    } else if has(&[
        "reduce", "softmax", "scan", "sum_", "argmax", "topk", "sort",
    ]) {
        ComputeClass::Reduction
    } else if has(&[
        "elementwise",
        "vectorized",
        "unrolled",
        "fill",
        "copy",
        "pointwise",
    ]) {
        ComputeClass::Elementwise
    } else {
        ComputeClass::Other
    }
}

/// The collective an NCCL kernel name says (`ncclKernel_AllReduce_RING_LL_Sum_float`,
/// `ncclDevKernel_AllGather_RING_LL`); `None` when it names none of them.
pub(super) fn kind_of_name(name: &str) -> Option<CollectiveKind> {
    let s = name.to_ascii_lowercase();
    [
        ("allreduce", CollectiveKind::AllReduce),
        ("allgather", CollectiveKind::AllGather),
        ("reducescatter", CollectiveKind::ReduceScatter),
        ("alltoall", CollectiveKind::AllToAll),
        ("sendrecv", CollectiveKind::SendRecv),
        ("broadcast", CollectiveKind::Broadcast),
    ]
    .into_iter()
    .find(|(k, _)| s.contains(k))
    .map(|(_, kind)| kind)
}

/// The collective of the process group's record (`Collective name` in newer traces), which
/// tells an all-to-all from the send/recv kernels NCCL runs it with.
fn kind_of_record(name: &str) -> Option<CollectiveKind> {
    match name.to_ascii_lowercase().replace(['_', ' '], "").as_str() {
        "allreduce" | "allreducecoalesced" => Some(CollectiveKind::AllReduce),
        "allgather" | "allgatherbase" | "allgatherintotensorcoalesced" => {
            Some(CollectiveKind::AllGather)
        }
        "reducescatter" | "reducescatterbase" | "reducescattertensorcoalesced" => {
            Some(CollectiveKind::ReduceScatter)
        }
        "alltoall" | "alltoallbase" | "alltoallv" => Some(CollectiveKind::AllToAll),
        "send" | "recv" | "sendrecv" => Some(CollectiveKind::SendRecv),
        "broadcast" => Some(CollectiveKind::Broadcast),
        _ => None,
    }
}

/// Element type of a trace's dtype spelling (`Float`, `c10::BFloat16`, `float`, `Half`).
pub(super) fn dtype_of(name: &str) -> DType {
    let s = name.to_ascii_lowercase();
    if s.contains("bfloat16") {
        DType::Bf16
    } else if s.contains("half") || s.contains("float16") {
        DType::F16
    } else if s.contains("double") || s.contains("float64") {
        DType::F64
    } else if s.contains("long") || s.contains("int64") {
        DType::S64
    } else if s.contains("int8") || s.contains("char") || s.contains("byte") || s.contains("bool") {
        DType::S8
    } else if s.contains("int") {
        DType::S32
    } else {
        DType::F32
    }
}

/// The collective an NCCL kernel runs and its result bytes per device, when the trace records
/// them: the kernel's `Out msg nelems` and `dtype` (newer traces), else the first input shape
/// of the recorded op that launched it (`nccl:all_reduce` with `record_shapes`), scaled to the
/// result (all-gather: `group` times the input; reduce-scatter: the input over `group`).
pub(super) fn collective_of(
    g: &GpuOp,
    group: u32,
    around: Option<&Span>,
) -> (CollectiveKind, Option<u64>) {
    let nccl = g.args.nccl.as_deref();
    let record = nccl
        .and_then(|a| a.collective.as_deref())
        .and_then(kind_of_record);
    let from_span = around.and_then(|s| kind_of_record(s.name.trim_start_matches("nccl:")));
    let kind = record
        .or(from_span)
        .or_else(|| kind_of_name(&g.name))
        .unwrap_or(CollectiveKind::AllReduce);
    let dtype = nccl.and_then(|a| a.dtype.as_deref()).map(dtype_of);
    let nelems = nccl.and_then(|a| a.out_nelems.or(a.in_nelems));
    if let (Some(n), Some(t)) = (nelems, dtype) {
        return (kind, Some(n.saturating_mul(t.size())));
    }
    let span = around.filter(|s| is_collective_span(&s.name));
    let bytes = span.and_then(|s| {
        let shapes = s.shapes.as_ref()?;
        let dims = shapes.dims.first()?;
        if dims.is_empty() {
            return None;
        }
        let t = shapes.types.first().map_or(DType::F32, |t| dtype_of(t));
        let input = dims
            .iter()
            .fold(1u64, |a, &x| a.saturating_mul(x))
            .saturating_mul(t.size());
        Some(match kind {
            CollectiveKind::AllGather => input.saturating_mul(u64::from(group)),
            CollectiveKind::ReduceScatter => input / u64::from(group.max(1)),
            _ => input,
        })
    });
    (kind, bytes.filter(|&b| b > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_give_classes() {
        let c = compute_class;
        assert_eq!(c("volta_sgemm_32x128_tn"), ComputeClass::Gemm);
        assert_eq!(
            c("void fbgemm_gpu::permute_indices_weights_kernel<float>(int)"),
            ComputeClass::Other
        );
        assert_eq!(c("fbgemm_gpu::f8f8bf16_rowwise_gemm"), ComputeClass::Gemm);
        assert_eq!(
            c("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>(x)"),
            ComputeClass::Gemm
        );
        assert_eq!(
            c("void splitKreduce_kernel<float, float, float, float>(x)"),
            ComputeClass::Reduction
        );
        assert_eq!(
            c("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32, true, 1>(float)"),
            ComputeClass::Norm
        );
        assert_eq!(
            c("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)"),
            ComputeClass::Elementwise
        );
        assert_eq!(
            c("void at::native::reduce_kernel<512, 1>(x)"),
            ComputeClass::Reduction
        );
        assert_eq!(
            c("fmha_cutlassF_f16_aligned_64x64_rf_sm80"),
            ComputeClass::Attention
        );
        assert_eq!(c("Memcpy DtoD (Device -> Device)"), ComputeClass::Other);
        assert_eq!(
            short_name("void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)"),
            "at::native::reduce_kernel"
        );
        assert_eq!(short_name("Memcpy DtoD (Device -> Device)"), "Memcpy_DtoD");
    }

    #[test]
    fn nccl_names_give_collectives() {
        let k = kind_of_name;
        assert_eq!(
            k("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"),
            Some(CollectiveKind::AllReduce)
        );
        assert_eq!(
            k("ncclDevKernel_AllGather_RING_LL(x)"),
            Some(CollectiveKind::AllGather)
        );
        assert_eq!(
            k("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(x)"),
            Some(CollectiveKind::ReduceScatter)
        );
        assert_eq!(
            k("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"),
            Some(CollectiveKind::SendRecv)
        );
        assert_eq!(
            k("ncclKernel_Broadcast_RING_LL_Sum_int8_t(x)"),
            Some(CollectiveKind::Broadcast)
        );
        assert_eq!(k("ncclKernel_Mystery"), None);
        assert_eq!(kind_of_record("all_to_all"), Some(CollectiveKind::AllToAll));
        assert_eq!(kind_of_record("allreduce"), Some(CollectiveKind::AllReduce));
        assert_eq!(dtype_of("Float"), DType::F32);
        assert_eq!(dtype_of("c10::BFloat16"), DType::Bf16);
    }
}
