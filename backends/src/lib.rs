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
//! [`registry`] finds any of them by name, as an RCPSP solver or as a modal solver (modes and
//! start times together, for joint mode); a program built without a backend's feature that
//! asks for it gets [`concerto_rcpsp::RegistryError::NotCompiled`] naming the feature.
//! [`default_selector`] is the best decomposition selector of this build.

#[cfg(feature = "milp")]
pub mod milp;
#[cfg(feature = "pumpkin")]
pub mod pumpkin;
/// The modal pumpkin backend under its earlier path: [`pumpkin::modal`].
#[cfg(feature = "pumpkin")]
pub use pumpkin::modal as pumpkin_modal;

use concerto_rcpsp::{ModalSolver, Registry, RegistryError, Selector};

/// The crate that owns the backend features, named in "rebuild with feature ..." errors.
pub const CRATE: &str = "concerto-backends";

/// Every solver: the heuristic `sgs` of `concerto-rcpsp`, and the backends of this crate,
/// compiled in or registered as missing with the feature that enables them; and the modal
/// solvers (modes and start times together, [`Registry::modal`]): `pumpkin` (presence
/// literals, see [`pumpkin::modal`]) and the MILP backends (mode binaries, see
/// `milp::MilpModal`).
pub fn registry() -> Registry {
    let mut r = Registry::with_builtin();
    let describe_pumpkin = "constraint programming with lazy clause generation (pumpkin), exact";
    let describe_pumpkin_modal =
        "modes and start times together by lazy clause generation (pumpkin, presence literals), exact";
    #[cfg(feature = "pumpkin")]
    {
        r.register("pumpkin", describe_pumpkin, || {
            Box::new(pumpkin::Pumpkin::default())
        });
        r.register_modal("pumpkin", describe_pumpkin_modal, || {
            Box::new(pumpkin::modal::PumpkinModal::default())
        });
    }
    #[cfg(not(feature = "pumpkin"))]
    {
        r.register_missing("pumpkin", describe_pumpkin, CRATE, "pumpkin");
        r.register_modal_missing("pumpkin", describe_pumpkin_modal, CRATE, "pumpkin");
    }

    let describe_microlp = "MILP (time-indexed or sequencing formulation) solved by microlp, exact";
    let describe_microlp_modal =
        "modal MILP (mode binaries, time-indexed) solved by microlp, exact";
    #[cfg(feature = "microlp")]
    {
        r.register("microlp", describe_microlp, || {
            Box::new(milp::Milp::new(milp::Backend::Microlp))
        });
        r.register_modal("microlp", describe_microlp_modal, || {
            Box::new(milp::MilpModal::new(milp::Backend::Microlp))
        });
    }
    #[cfg(not(feature = "microlp"))]
    {
        r.register_missing("microlp", describe_microlp, CRATE, "microlp");
        r.register_modal_missing("microlp", describe_microlp_modal, CRATE, "microlp");
    }

    let describe_highs = "MILP (time-indexed or sequencing formulation) solved by HiGHS, exact";
    let describe_highs_modal = "modal MILP (mode binaries, time-indexed) solved by HiGHS, exact";
    #[cfg(feature = "highs")]
    {
        r.register("highs", describe_highs, || {
            Box::new(milp::Milp::new(milp::Backend::Highs))
        });
        r.register_modal("highs", describe_highs_modal, || {
            Box::new(milp::MilpModal::new(milp::Backend::Highs))
        });
    }
    #[cfg(not(feature = "highs"))]
    {
        r.register_missing("highs", describe_highs, CRATE, "highs");
        r.register_modal_missing("highs", describe_highs_modal, CRATE, "highs");
    }

    let describe_cbc =
        "MILP (time-indexed or sequencing formulation) solved by CBC, exact, serialised";
    let describe_cbc_modal =
        "modal MILP (mode binaries, time-indexed) solved by CBC, exact, serialised";
    #[cfg(feature = "cbc")]
    {
        r.register("cbc", describe_cbc, || {
            Box::new(milp::Milp::new(milp::Backend::Cbc))
        });
        r.register_modal("cbc", describe_cbc_modal, || {
            Box::new(milp::MilpModal::new(milp::Backend::Cbc))
        });
    }
    #[cfg(not(feature = "cbc"))]
    {
        r.register_missing("cbc", describe_cbc, CRATE, "cbc");
        r.register_modal_missing("cbc", describe_cbc_modal, CRATE, "cbc");
    }
    r
}

/// The modal solver registered under `name` in [`registry`] ([`Registry::modal`]): a backend
/// this build lacks is [`RegistryError::NotCompiled`] naming its feature; a solver without a
/// modal encoding (the `sgs` heuristic) or an unknown name is [`RegistryError::UnknownModal`]
/// listing the modal solvers.
pub fn modal_solver(name: &str) -> Result<Box<dyn ModalSolver>, RegistryError> {
    registry().modal(name)
}

/// The selector of decomposition choices ([`Selector`]) this build does best: the MILP of
/// [`milp::default_backend`] (HiGHS, else CBC, else microlp) when a MILP feature is on, else
/// the exact enumeration of `concerto-rcpsp` ([`concerto_rcpsp::Enumeration`]).
pub fn default_selector() -> Box<dyn Selector> {
    #[cfg(feature = "milp")]
    return Box::new(milp::Milp::new(milp::default_backend()));
    #[cfg(not(feature = "milp"))]
    return Box::new(concerto_rcpsp::Enumeration);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_lists_and_makes_modal_solvers() {
        let r = registry();
        for name in ["pumpkin", "microlp", "highs", "cbc"] {
            let info = r
                .list()
                .into_iter()
                .find(|i| i.name == name)
                .unwrap_or_else(|| panic!("{name} is listed"));
            assert!(info.solver && info.modal, "{name}");
            match r.modal(name) {
                Ok(solver) => {
                    assert_eq!(solver.name(), name);
                    assert!(info.missing_feature.is_none());
                }
                Err(RegistryError::NotCompiled { feature, .. }) => {
                    assert_eq!(feature, name);
                    assert!(info.missing_feature.is_some());
                }
                Err(e) => panic!("{name}: {e}"),
            }
        }
        let sgs = r.list().into_iter().find(|i| i.name == "sgs").expect("sgs");
        assert!(sgs.solver && !sgs.modal);
        assert!(matches!(
            modal_solver("sgs"),
            Err(RegistryError::UnknownModal { .. })
        ));
    }

    #[test]
    fn the_default_selector_is_exact_on_a_small_selection() {
        let s = concerto_rcpsp::Selection {
            weights: vec![5, 4, 3],
            groups: vec![vec![0, 1]],
            conflicts: vec![(1, 2)],
        };
        // {0, 2} = 8 beats {1} = 4 and {0} = 5.
        let chosen = default_selector()
            .select(&s, Some(std::time::Duration::from_secs(10)))
            .expect("selects");
        assert_eq!(chosen.items, vec![0, 2]);
        assert_eq!(chosen.value, 8);
        assert!(chosen.optimal);
    }
}
