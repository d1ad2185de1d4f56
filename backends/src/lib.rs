//! # concerto-backends
//!
//! Exact RCPSP solvers behind the [`concerto_rcpsp::Solver`] trait, one module per backend,
//! each behind its own cargo feature:
//!
//! | name | feature | kind |
//! |---|---|---|
//! | `pumpkin` | `pumpkin` (default) | lazy-clause-generation CP (pure Rust) |
//! | `microlp` | `microlp` (default) | MILP through good_lp, pure Rust |
//! | `highs` | `highs` | MILP through good_lp, HiGHS built from C++ |
//! | `cbc` | `cbc` | MILP through good_lp, the system CBC, serialised |
//!
//! [`registry`] finds any of them by name; a program built without a backend's feature that
//! asks for it gets [`concerto_rcpsp::RegistryError::NotCompiled`] naming the feature.

#[cfg(feature = "milp")]
pub mod milp;
#[cfg(feature = "pumpkin")]
pub mod pumpkin;

use concerto_rcpsp::Registry;

/// The crate that owns the backend features, named in "rebuild with feature ..." errors.
pub const CRATE: &str = "concerto-backends";

/// Every solver: the heuristic `sgs` of `concerto-rcpsp`, and the backends of this crate,
/// compiled in or registered as missing with the feature that enables them.
pub fn registry() -> Registry {
    let mut r = Registry::with_builtin();
    let describe_pumpkin = "constraint programming with lazy clause generation (pumpkin), exact";
    #[cfg(feature = "pumpkin")]
    r.register("pumpkin", describe_pumpkin, || {
        Box::new(pumpkin::Pumpkin::default())
    });
    #[cfg(not(feature = "pumpkin"))]
    r.register_missing("pumpkin", describe_pumpkin, CRATE, "pumpkin");

    let describe_microlp = "MILP (time-indexed or sequencing formulation) solved by microlp, exact";
    #[cfg(feature = "microlp")]
    r.register("microlp", describe_microlp, || {
        Box::new(milp::Milp::new(milp::Backend::Microlp))
    });
    #[cfg(not(feature = "microlp"))]
    r.register_missing("microlp", describe_microlp, CRATE, "microlp");

    let describe_highs = "MILP (time-indexed or sequencing formulation) solved by HiGHS, exact";
    #[cfg(feature = "highs")]
    r.register("highs", describe_highs, || {
        Box::new(milp::Milp::new(milp::Backend::Highs))
    });
    #[cfg(not(feature = "highs"))]
    r.register_missing("highs", describe_highs, CRATE, "highs");

    let describe_cbc =
        "MILP (time-indexed or sequencing formulation) solved by CBC, exact, serialised";
    #[cfg(feature = "cbc")]
    r.register("cbc", describe_cbc, || {
        Box::new(milp::Milp::new(milp::Backend::Cbc))
    });
    #[cfg(not(feature = "cbc"))]
    r.register_missing("cbc", describe_cbc, CRATE, "cbc");
    r
}
