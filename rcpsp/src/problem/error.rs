//! Why a problem could not be built.

use super::Time;

/// Why a problem could not be built. Every variant names the offending item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProblemError {
    /// The problem has no activity at all.
    #[error("the problem has no activities")]
    Empty,
    /// An activity or resource was given an empty name.
    #[error("{kind} number {index} has an empty name")]
    EmptyName {
        /// `"activity"` or `"resource"`.
        kind: &'static str,
        /// Its position in the order it was added.
        index: usize,
    },
    /// Two activities share a name.
    #[error("activity name `{name}` is used twice")]
    DuplicateActivity {
        /// The repeated name.
        name: String,
    },
    /// Two resources share a name.
    #[error("resource name `{name}` is used twice")]
    DuplicateResource {
        /// The repeated name.
        name: String,
    },
    /// A precedence or demand refers to an activity that does not exist.
    #[error("unknown activity `{name}` in {context}")]
    UnknownActivity {
        /// The name (or `#index`) that was not found.
        name: String,
        /// Where it was referred to, for example `precedence 3 (from)`.
        context: String,
    },
    /// A demand refers to a resource that does not exist.
    #[error("unknown resource `{name}` in the demands of activity `{activity}`")]
    UnknownResource {
        /// The name (or `#index`) that was not found.
        name: String,
        /// The activity whose demand names it.
        activity: String,
    },
    /// An activity has a negative duration.
    #[error("activity `{activity}` has a negative duration {duration}")]
    NegativeDuration {
        /// The activity.
        activity: String,
        /// Its duration.
        duration: Time,
    },
    /// An activity has a negative release date.
    #[error("activity `{activity}` has a negative release date {release}")]
    NegativeRelease {
        /// The activity.
        activity: String,
        /// The release date given.
        release: Time,
    },
    /// An activity's deadline leaves no room for it after its release date.
    #[error(
        "activity `{activity}` cannot run between its release {release} and its deadline {deadline} (duration {duration})"
    )]
    EmptyTimeWindow {
        /// The activity.
        activity: String,
        /// Its release date.
        release: Time,
        /// Its deadline.
        deadline: Time,
        /// Its duration.
        duration: Time,
    },
    /// A precedence has a negative lag (only finish-to-start with non-negative lags are
    /// modelled).
    #[error("precedence `{from}` -> `{to}` has a negative lag {lag}")]
    NegativeLag {
        /// The predecessor.
        from: String,
        /// The successor.
        to: String,
        /// The lag given.
        lag: Time,
    },
    /// An activity needs more of a resource than the resource has: no schedule exists.
    #[error(
        "activity `{activity}` demands {demand} of resource `{resource}`, whose capacity is {capacity}"
    )]
    DemandOverCapacity {
        /// The activity.
        activity: String,
        /// The resource.
        resource: String,
        /// The demand.
        demand: u32,
        /// The capacity.
        capacity: u32,
    },
    /// The precedences contain a cycle, so no schedule exists.
    #[error("the precedences contain a cycle: {}", cycle_text(.activities))]
    Cycle {
        /// The activities on one cycle, in order; the last one precedes the first.
        activities: Vec<String>,
    },
    /// The sum of all durations and lags does not fit in a [`Time`], so schedules could not be
    /// represented.
    #[error("the sum of durations and lags overflows a 64-bit time at activity `{activity}`")]
    HorizonOverflow {
        /// The activity at which the running sum overflowed.
        activity: String,
    },
}

fn cycle_text(activities: &[String]) -> String {
    let mut text = activities
        .iter()
        .map(|a| format!("`{a}`"))
        .collect::<Vec<_>>()
        .join(" -> ");
    if let Some(first) = activities.first() {
        text.push_str(&format!(" -> `{first}`"));
    }
    text
}
