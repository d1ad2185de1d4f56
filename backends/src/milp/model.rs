//! The model a formulation builds and a backend consumes, and what a backend reports back.

use std::time::Duration;

use concerto_rcpsp::Time;
use good_lp::{Constraint, Expression, ProblemVariables, Variable};

/// A model ready for a backend: variables (with warm-start values when there is an
/// incumbent), the objective (the makespan variable), and the rows. A backend consumes it.
#[derive(Clone)]
pub(crate) struct Model {
    pub(crate) vars: ProblemVariables,
    pub(crate) objective: Variable,
    pub(crate) constraints: Vec<Constraint>,
    /// Every variable, in creation order (good_lp's index order).
    pub(crate) all: Vec<Variable>,
    /// Warm-start value of every variable, by index (meaningful when `warm`).
    pub(crate) initial: Vec<f64>,
    /// Whether every variable has a warm-start value.
    pub(crate) warm: bool,
}

/// The step variables of one activity: `(ES, LS, [(t, position of Z(t))])`.
pub(crate) type Steps = (Time, Time, Vec<(Time, usize)>);

/// How a formulation encodes start times, by variable position (creation order).
pub(crate) enum StartsFrom {
    /// One integer variable per activity.
    Variables(Vec<usize>),
    /// Per activity `(ES, LS, [(t, Z(t))])`: the start is the first `t` with `Z(t) = 1`, or
    /// `LS` if none.
    Steps(Vec<Steps>),
}

/// What a backend reports, before interpretation.
#[derive(Debug)]
pub(crate) struct RawResult {
    pub(crate) status: RawStatus,
    /// Values of all variables by index, when the backend has a solution.
    pub(crate) values: Option<Vec<f64>>,
    /// The proven bound on the objective, when the backend gives one.
    pub(crate) bound: Option<f64>,
    /// Branch-and-bound nodes.
    pub(crate) nodes: u64,
}

/// A backend's status, mapped faithfully.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    not(any(feature = "highs", feature = "cbc")),
    allow(dead_code, reason = "only HiGHS and CBC take a node limit")
)]
pub(crate) enum RawStatus {
    /// Proven optimal (within the requested gap: see `gap_reached`).
    Optimal,
    /// Stopped at the requested relative gap.
    GapReached,
    /// Stopped by the clock (with or without a solution).
    TimeLimit,
    /// Stopped by the work limit (HiGHS `mip_max_nodes`, CBC `maxNodes`), with or without a
    /// solution.
    WorkLimit,
    /// Proven infeasible.
    Infeasible,
}

/// Options every backend receives (microlp is sequential and deterministic: it ignores the
/// threads, the seed and the work limit).
#[derive(Clone, Debug)]
#[cfg_attr(
    not(any(feature = "highs", feature = "cbc")),
    allow(
        dead_code,
        reason = "only HiGHS and CBC take threads, a seed and a node limit"
    )
)]
pub(crate) struct RunOptions {
    pub(crate) time_limit: Option<Duration>,
    pub(crate) threads: usize,
    pub(crate) seed: u64,
    pub(crate) mip_gap: f64,
    /// Branch-and-bound nodes (HiGHS, CBC; microlp has no such limit).
    pub(crate) work_limit: Option<u64>,
}

impl Model {
    /// A model whose only variable is the makespan, in `[lower, upper]`, which is the
    /// objective; `initial` is its warm-start value.
    pub(crate) fn new(lower: Time, upper: Time, initial: Option<Time>) -> Self {
        let mut vars = ProblemVariables::new();
        let def = good_lp::variable().min(lower as f64).max(upper as f64);
        let objective = vars.add(match initial {
            Some(m) => def.initial(m as f64),
            None => def,
        });
        Self {
            vars,
            objective,
            constraints: Vec::new(),
            all: vec![objective],
            initial: vec![initial.unwrap_or(0) as f64],
            warm: initial.is_some(),
        }
    }

    /// Adds a row.
    pub(crate) fn add(&mut self, c: Constraint) {
        self.constraints.push(c);
    }

    /// Adds a variable, with its warm-start value if any (a model is warm only if every
    /// variable has one).
    pub(crate) fn var(
        &mut self,
        def: good_lp::VariableDefinition,
        initial: Option<f64>,
    ) -> Variable {
        let def = match initial {
            Some(v) => def.initial(v),
            None => {
                self.warm = false;
                def
            }
        };
        let v = self.vars.add(def);
        self.all.push(v);
        self.initial.push(initial.unwrap_or(0.0));
        v
    }

    /// Position (creation order, which is good_lp's column order) of the last variable added.
    pub(crate) fn last(&self) -> usize {
        self.all.len() - 1
    }

    /// Values of every variable by position, from a solution.
    pub(crate) fn values(all: &[Variable], value: impl Fn(Variable) -> f64) -> Vec<f64> {
        all.iter().map(|&v| value(v)).collect()
    }

    /// An expression `sum coef * var`.
    pub(crate) fn sum(terms: impl IntoIterator<Item = (f64, Variable)>) -> Expression {
        let mut e = Expression::with_capacity(8);
        for (c, v) in terms {
            e.add_mul(c, v);
        }
        e
    }
}

impl StartsFrom {
    /// Reads start times from variable values; `None` if a value is not integral.
    pub(crate) fn read(&self, values: &[f64]) -> Option<Vec<Time>> {
        const TOLERANCE: f64 = 1e-5;
        match self {
            StartsFrom::Variables(s) => s
                .iter()
                .map(|&v| {
                    let x = values[v];
                    let r = x.round();
                    ((x - r).abs() <= TOLERANCE).then_some(r as Time)
                })
                .collect(),
            StartsFrom::Steps(per_activity) => per_activity
                .iter()
                .map(|(_, ls, steps)| {
                    let mut start = None;
                    for &(t, v) in steps {
                        let x = values[v];
                        let r = x.round();
                        if (x - r).abs() > TOLERANCE || !(r == 0.0 || r == 1.0) {
                            return None;
                        }
                        match (start, r == 1.0) {
                            (None, true) => start = Some(t),
                            // Once started, an activity stays started.
                            (Some(_), false) => return None,
                            _ => {}
                        }
                    }
                    Some(start.unwrap_or(*ls))
                })
                .collect(),
        }
    }
}
