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
/// The modal pumpkin backend under its earlier path: [`pumpkin::modal`].
#[cfg(feature = "pumpkin")]
pub use pumpkin::modal as pumpkin_modal;

use concerto_rcpsp::{Registry, RegistryError};

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

/// The modal solver (modes and start times together, [`concerto_rcpsp::ModalSolver`])
/// registered under `name`: `pumpkin` (presence literals, see `pumpkin::modal`) or a MILP
/// backend (`microlp`, `highs`, `cbc`: mode binaries, see `milp::modal`). A backend this build
/// lacks is [`RegistryError::NotCompiled`] naming its feature; a solver without a modal
/// encoding (the `sgs` heuristic) or an unknown name is [`RegistryError::Unknown`] listing the
/// modal solvers.
pub fn modal_solver(name: &str) -> Result<Box<dyn concerto_rcpsp::ModalSolver>, RegistryError> {
    #[cfg_attr(
        all(
            feature = "pumpkin",
            feature = "microlp",
            feature = "highs",
            feature = "cbc"
        ),
        allow(unused_variables, reason = "every backend is compiled in")
    )]
    let missing = |feature: &str| RegistryError::NotCompiled {
        name: name.to_string(),
        feature: feature.to_string(),
        crate_name: CRATE.to_string(),
    };
    match name {
        #[cfg(feature = "pumpkin")]
        "pumpkin" => Ok(Box::new(pumpkin::modal::PumpkinModal::default())),
        #[cfg(not(feature = "pumpkin"))]
        "pumpkin" => Err(missing("pumpkin")),
        #[cfg(feature = "microlp")]
        "microlp" => Ok(Box::new(milp::MilpModal::new(milp::Backend::Microlp))),
        #[cfg(not(feature = "microlp"))]
        "microlp" => Err(missing("microlp")),
        #[cfg(feature = "highs")]
        "highs" => Ok(Box::new(milp::MilpModal::new(milp::Backend::Highs))),
        #[cfg(not(feature = "highs"))]
        "highs" => Err(missing("highs")),
        #[cfg(feature = "cbc")]
        "cbc" => Ok(Box::new(milp::MilpModal::new(milp::Backend::Cbc))),
        #[cfg(not(feature = "cbc"))]
        "cbc" => Err(missing("cbc")),
        _ => Err(RegistryError::Unknown {
            name: format!("{name} (as a modal solver for joint mode)"),
            known: ["pumpkin", "microlp", "highs", "cbc"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }),
    }
}
