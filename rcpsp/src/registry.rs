//! Finding solvers by name.
//!
//! A [`Registry`] maps names to constructors, of RCPSP solvers ([`Solver`], [`Registry::get`])
//! and of modal solvers ([`ModalSolver`]: modes and start times together, for joint mode;
//! [`Registry::modal`]). One name may have both (`pumpkin` does). Backends that were not
//! compiled in are registered as missing with the cargo feature that enables them, so that
//! asking for one says what to rebuild with instead of "unknown solver".

use std::collections::BTreeMap;

use crate::modal::ModalSolver;
use crate::search::Heuristic;
use crate::solver::Solver;

type Make = Box<dyn Fn() -> Box<dyn Solver> + Send + Sync>;
type MakeModal = Box<dyn Fn() -> Box<dyn ModalSolver> + Send + Sync>;

/// A registered constructor, or the feature that would compile it in.
enum Entry<M> {
    Available {
        description: String,
        make: M,
    },
    Missing {
        description: String,
        feature: String,
        crate_name: String,
    },
}

impl<M> Entry<M> {
    fn missing(description: &str, crate_name: &str, feature: &str) -> Self {
        Entry::Missing {
            description: description.to_owned(),
            feature: feature.to_owned(),
            crate_name: crate_name.to_owned(),
        }
    }

    fn description(&self) -> &str {
        match self {
            Entry::Available { description, .. } | Entry::Missing { description, .. } => {
                description
            }
        }
    }

    /// `(crate, feature)` of a missing entry.
    fn missing_feature(&self) -> Option<(String, String)> {
        match self {
            Entry::Available { .. } => None,
            Entry::Missing {
                feature,
                crate_name,
                ..
            } => Some((crate_name.clone(), feature.clone())),
        }
    }

    /// The constructor, or [`RegistryError::NotCompiled`] naming the feature.
    fn make(&self, name: &str) -> Result<&M, RegistryError> {
        match self {
            Entry::Available { make, .. } => Ok(make),
            Entry::Missing {
                feature,
                crate_name,
                ..
            } => Err(RegistryError::NotCompiled {
                name: name.to_owned(),
                feature: feature.clone(),
                crate_name: crate_name.clone(),
            }),
        }
    }
}

/// One line of [`Registry::list`]: a name and what it can make.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SolverInfo {
    /// The name to ask for.
    pub name: String,
    /// What it is (the RCPSP solver's description when the name has both kinds).
    pub description: String,
    /// `None` when compiled in; else the cargo feature (of `crate_name`) that enables it, as
    /// `(crate_name, feature)`.
    pub missing_feature: Option<(String, String)>,
    /// Whether [`Registry::get`] knows the name: an RCPSP [`Solver`].
    pub solver: bool,
    /// Whether [`Registry::modal`] knows the name: a [`ModalSolver`] (modes and start times
    /// together, for joint mode).
    pub modal: bool,
}

/// Why a solver could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The solver exists but this program was built without it. The message says which
    /// cargo feature to enable: on the `concerto` crate (or on `crate_name`, for a program
    /// that depends on it directly), and only then how to rebuild the `concerto` command line.
    #[error(
        "solver `{name}` is not compiled into this program: enable the cargo feature `{feature}` of the `concerto` crate (or of `{crate_name}` when depending on it directly: `features = [\"{feature}\"]` on the dependency); for the `concerto` command line, rebuild it with `cargo build --release -p concerto-cli --features {feature}`"
    )]
    NotCompiled {
        /// The name asked for.
        name: String,
        /// The feature that enables it.
        feature: String,
        /// The crate that has the feature.
        crate_name: String,
    },
    /// No solver has this name.
    #[error("unknown solver `{name}`; known solvers: {}", .known.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
        /// Every registered name.
        known: Vec<String>,
    },
    /// No modal solver has this name (it may still be an RCPSP solver, such as `sgs`, which
    /// has no modal encoding).
    #[error(
        "no modal solver `{name}` (modes and start times together, for joint mode); modal solvers: {}",
        .known.join(", ")
    )]
    UnknownModal {
        /// The name asked for.
        name: String,
        /// Every name registered as a modal solver.
        known: Vec<String>,
    },
}

/// Solvers by name. See the module docs.
#[derive(Default)]
pub struct Registry {
    entries: BTreeMap<String, Entry<Make>>,
    modal: BTreeMap<String, Entry<MakeModal>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("solvers", &self.entries.keys().collect::<Vec<_>>())
            .field("modal", &self.modal.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The solvers of this crate: `sgs`, the heuristic of [`crate::search`].
    pub fn with_builtin() -> Self {
        let mut r = Self::new();
        r.register(
            "sgs",
            "schedule-generation heuristic: priority rules, sampling and a genetic algorithm with justification",
            || Box::new(Heuristic::default()),
        );
        r
    }

    /// Registers a compiled-in solver (replacing one of the same name).
    pub fn register(
        &mut self,
        name: &str,
        description: &str,
        make: impl Fn() -> Box<dyn Solver> + Send + Sync + 'static,
    ) {
        self.entries.insert(
            name.to_owned(),
            Entry::Available {
                description: description.to_owned(),
                make: Box::new(make),
            },
        );
    }

    /// Registers a solver that exists behind a cargo feature not enabled in this build.
    pub fn register_missing(
        &mut self,
        name: &str,
        description: &str,
        crate_name: &str,
        feature: &str,
    ) {
        self.entries.insert(
            name.to_owned(),
            Entry::missing(description, crate_name, feature),
        );
    }

    /// Registers a compiled-in modal solver (replacing one of the same name).
    pub fn register_modal(
        &mut self,
        name: &str,
        description: &str,
        make: impl Fn() -> Box<dyn ModalSolver> + Send + Sync + 'static,
    ) {
        self.modal.insert(
            name.to_owned(),
            Entry::Available {
                description: description.to_owned(),
                make: Box::new(make),
            },
        );
    }

    /// Registers a modal solver that exists behind a cargo feature not enabled in this build.
    pub fn register_modal_missing(
        &mut self,
        name: &str,
        description: &str,
        crate_name: &str,
        feature: &str,
    ) {
        self.modal.insert(
            name.to_owned(),
            Entry::missing(description, crate_name, feature),
        );
    }

    /// Makes the solver called `name`: [`RegistryError::NotCompiled`] when this build lacks
    /// its feature, [`RegistryError::Unknown`] (listing the known names) when no solver has
    /// the name.
    pub fn get(&self, name: &str) -> Result<Box<dyn Solver>, RegistryError> {
        match self.entries.get(name) {
            Some(entry) => entry.make(name).map(|make| make()),
            None => Err(RegistryError::Unknown {
                name: name.to_owned(),
                known: self.entries.keys().cloned().collect(),
            }),
        }
    }

    /// Makes the modal solver called `name`: [`RegistryError::NotCompiled`] when this build
    /// lacks its feature, [`RegistryError::UnknownModal`] (listing the modal solvers) when no
    /// modal solver has the name.
    pub fn modal(&self, name: &str) -> Result<Box<dyn ModalSolver>, RegistryError> {
        match self.modal.get(name) {
            Some(entry) => entry.make(name).map(|make| make()),
            None => Err(RegistryError::UnknownModal {
                name: name.to_owned(),
                known: self.modal.keys().cloned().collect(),
            }),
        }
    }

    /// Every registered name, sorted, once each, with what it can make ([`SolverInfo::solver`],
    /// [`SolverInfo::modal`]) and whether this build lacks it.
    pub fn list(&self) -> Vec<SolverInfo> {
        let mut names: Vec<&String> = self.entries.keys().chain(self.modal.keys()).collect();
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .map(|name| {
                let solver = self.entries.get(name);
                let modal = self.modal.get(name);
                let description = solver
                    .map(Entry::description)
                    .or(modal.map(Entry::description))
                    .unwrap_or_default()
                    .to_owned();
                SolverInfo {
                    name: name.clone(),
                    description,
                    missing_feature: solver
                        .and_then(Entry::missing_feature)
                        .or_else(|| modal.and_then(Entry::missing_feature)),
                    solver: solver.is_some(),
                    modal: modal.is_some(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_solver_names_its_feature() {
        let mut r = Registry::with_builtin();
        r.register_missing("highs", "HiGHS MILP", "concerto-backends", "highs");
        assert_eq!(r.get("sgs").unwrap().name(), "sgs");
        let err = r.get("highs").err().unwrap();
        let text = err.to_string();
        assert!(text.contains("`highs`"), "{err}");
        // A library user is told about the crate feature first, the command line second.
        let library = text
            .find("feature `highs` of the `concerto` crate")
            .expect("crate");
        let cli = text.find("--features highs").expect("command line");
        assert!(library < cli, "{err}");
        assert!(text.contains("`concerto-backends`"), "{err}");
        assert!(
            matches!(err, RegistryError::NotCompiled { ref feature, .. } if feature == "highs")
        );
        let err = r.get("gurobi").err().unwrap();
        assert!(err.to_string().contains("highs, sgs"), "{err}");
    }

    /// A modal solver by enumeration: every mode choice solved by the heuristic.
    struct Enumerate;

    impl ModalSolver for Enumerate {
        fn name(&self) -> &str {
            "enumerate"
        }

        fn solve_modal(
            &self,
            problem: &crate::ModalProblem,
            limits: &crate::Limits,
            _initial: Option<&crate::ModalSolution>,
        ) -> Result<crate::ModalOutcome, crate::SolveError> {
            crate::brute_force(problem, &Heuristic::default(), limits)
        }
    }

    #[test]
    fn modal_solvers_are_found_listed_and_named_when_missing() {
        let mut r = Registry::with_builtin();
        r.register_modal("enumerate", "every mode choice", || Box::new(Enumerate));
        r.register_missing("highs", "HiGHS MILP", "concerto-backends", "highs");
        r.register_modal_missing("highs", "HiGHS modal MILP", "concerto-backends", "highs");
        assert_eq!(r.modal("enumerate").unwrap().name(), "enumerate");
        let err = r.modal("highs").err().unwrap();
        assert!(
            matches!(err, RegistryError::NotCompiled { ref feature, .. } if feature == "highs"),
            "{err}"
        );
        // `sgs` is an RCPSP solver, not a modal one.
        let err = r.modal("sgs").err().unwrap();
        assert!(
            matches!(err, RegistryError::UnknownModal { ref known, .. }
                if known == &["enumerate", "highs"]),
            "{err}"
        );
        assert!(err.to_string().contains("`sgs`"), "{err}");
        let list = r.list();
        let names: Vec<_> = list
            .iter()
            .map(|i| (i.name.as_str(), i.solver, i.modal))
            .collect();
        assert_eq!(
            names,
            [
                ("enumerate", false, true),
                ("highs", true, true),
                ("sgs", true, false)
            ]
        );
        assert_eq!(list[0].description, "every mode choice");
        assert_eq!(
            list[1].missing_feature,
            Some(("concerto-backends".into(), "highs".into()))
        );
    }
}
