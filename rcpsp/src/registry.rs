//! Finding solvers by name.
//!
//! A [`Registry`] maps names to constructors. Backends that were not compiled in are
//! registered as missing with the cargo feature that enables them, so that asking for one
//! says what to rebuild with instead of "unknown solver".

use std::collections::BTreeMap;

use crate::search::Heuristic;
use crate::solver::Solver;

type Make = Box<dyn Fn() -> Box<dyn Solver> + Send + Sync>;

enum Entry {
    Available {
        description: String,
        make: Make,
    },
    Missing {
        description: String,
        feature: String,
        crate_name: String,
    },
}

/// One line of [`Registry::list`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SolverInfo {
    /// The name to ask for.
    pub name: String,
    /// What it is.
    pub description: String,
    /// `None` when compiled in; else the cargo feature (of `crate_name`) that enables it.
    pub missing_feature: Option<(String, String)>,
}

/// Why a solver could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The solver exists but this program was built without it.
    #[error(
        "solver `{name}` is not compiled into this program: rebuild with the cargo feature `{feature}` of `{crate_name}` (for the command line: `cargo build --release -p concerto-cli --features {feature}`)"
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
}

/// Solvers by name. See the module docs.
#[derive(Default)]
pub struct Registry {
    entries: BTreeMap<String, Entry>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries.keys()).finish()
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
            Entry::Missing {
                description: description.to_owned(),
                feature: feature.to_owned(),
                crate_name: crate_name.to_owned(),
            },
        );
    }

    /// Makes the solver called `name`.
    pub fn get(&self, name: &str) -> Result<Box<dyn Solver>, RegistryError> {
        match self.entries.get(name) {
            Some(Entry::Available { make, .. }) => Ok(make()),
            Some(Entry::Missing {
                feature,
                crate_name,
                ..
            }) => Err(RegistryError::NotCompiled {
                name: name.to_owned(),
                feature: feature.clone(),
                crate_name: crate_name.clone(),
            }),
            None => Err(RegistryError::Unknown {
                name: name.to_owned(),
                known: self.entries.keys().cloned().collect(),
            }),
        }
    }

    /// Every registered solver, by name.
    pub fn list(&self) -> Vec<SolverInfo> {
        self.entries
            .iter()
            .map(|(name, e)| match e {
                Entry::Available { description, .. } => SolverInfo {
                    name: name.clone(),
                    description: description.clone(),
                    missing_feature: None,
                },
                Entry::Missing {
                    description,
                    feature,
                    crate_name,
                } => SolverInfo {
                    name: name.clone(),
                    description: description.clone(),
                    missing_feature: Some((crate_name.clone(), feature.clone())),
                },
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
        assert!(err.to_string().contains("`highs`"), "{err}");
        assert!(
            matches!(err, RegistryError::NotCompiled { ref feature, .. } if feature == "highs")
        );
        let err = r.get("gurobi").err().unwrap();
        assert!(err.to_string().contains("highs, sgs"), "{err}");
    }
}
