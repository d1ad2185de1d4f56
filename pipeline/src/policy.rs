//! The pipeline's one rule for keeping a transformed graph.
//!
//! A rewrite (decompositions, a joint choice, fused collectives) is kept only when its
//! simulated makespan is not longer than the plan it would replace; on a tie the rewrite is
//! kept (it was chosen for a reason the makespan does not show, and it is never worse). Every
//! step of [`crate::Pipeline`] applies this function and nothing else, so the report's
//! invariants hold by construction: joint <= S+AD <= S and fused <= S.

/// Whether a candidate of makespan `candidate_ns` replaces an incumbent of `incumbent_ns`.
pub fn keep(candidate_ns: u64, incumbent_ns: u64) -> bool {
    candidate_ns <= incumbent_ns
}

#[cfg(test)]
mod tests {
    use super::keep;

    #[test]
    fn ties_keep_the_rewrite_and_longer_never() {
        assert!(keep(10, 10));
        assert!(keep(9, 10));
        assert!(!keep(11, 10));
    }
}
