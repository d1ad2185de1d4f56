//! The Concerto JSON formats for problems and schedules.
//!
//! A problem (`format` and `version` are optional on input, always written):
//!
//! ```json
//! {
//!   "format": "concerto-rcpsp", "version": 1,
//!   "resources": [{"name": "gpu", "capacity": 1}],
//!   "activities": [
//!     {"name": "load", "duration": 3, "demands": {"gpu": 1}},
//!     {"name": "gemm", "duration": 5, "demands": {"gpu": 1}}
//!   ],
//!   "precedences": [{"from": "load", "to": "gemm", "lag": 0}]
//! }
//! ```
//!
//! `demands` may omit zero entries; `lag` defaults to 0; an activity may have a `release`
//! (earliest start, default 0) and a `deadline` (latest finish). A schedule:
//!
//! ```json
//! {"format": "concerto-schedule", "version": 1, "makespan": 8,
//!  "starts": [{"activity": "load", "start": 0}, {"activity": "gemm", "start": 3}]}
//! ```
//!
//! `makespan` is informative (recomputed on reading). Unknown fields are errors, so that a
//! typo is not silently ignored.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{read_text, ReadError};
use crate::problem::{Problem, ProblemBuilder, Time};
use crate::schedule::Schedule;

/// The `format` value of problem files.
pub const PROBLEM_FORMAT: &str = "concerto-rcpsp";
/// The `format` value of schedule files.
pub const SCHEDULE_FORMAT: &str = "concerto-schedule";
/// The version this crate writes and reads.
pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProblemFile {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    version: Option<u32>,
    #[serde(default)]
    resources: Vec<ResourceEntry>,
    activities: Vec<ActivityEntry>,
    #[serde(default)]
    precedences: Vec<PrecedenceEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceEntry {
    name: String,
    capacity: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActivityEntry {
    name: String,
    duration: Time,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "unique_demands"
    )]
    demands: BTreeMap<String, u32>,
    #[serde(default, skip_serializing_if = "is_zero")]
    release: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deadline: Option<Time>,
}

fn is_zero(t: &Time) -> bool {
    *t == 0
}

/// A `demands` object in which a resource named twice is an error, not "the last one wins".
fn unique_demands<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, u32>, D::Error> {
    struct Unique;
    impl<'de> serde::de::Visitor<'de> for Unique {
        type Value = BTreeMap<String, u32>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object from resource name to demand")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((name, amount)) = map.next_entry::<String, u32>()? {
                if out.contains_key(&name) {
                    return Err(serde::de::Error::custom(format!(
                        "resource `{name}` appears twice in `demands`"
                    )));
                }
                out.insert(name, amount);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Unique)
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PrecedenceEntry {
    from: String,
    to: String,
    #[serde(default)]
    lag: Time,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleFile {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    version: Option<u32>,
    #[serde(default)]
    makespan: Option<Time>,
    starts: Vec<StartEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StartEntry {
    activity: String,
    start: Time,
}

fn json_error(file: &str, e: &serde_json::Error) -> ReadError {
    // serde_json appends " at line L column C"; the error shows the position once, up front.
    let text = e.to_string();
    let message = match text.rfind(" at line ") {
        Some(k) => text[..k].to_owned(),
        None => text,
    };
    ReadError::Json {
        file: file.to_owned(),
        line: e.line(),
        column: e.column(),
        message,
    }
}

fn check_header(
    file: &str,
    format: Option<&str>,
    version: Option<u32>,
    expected: &str,
) -> Result<(), ReadError> {
    if let Some(f) = format {
        if f != expected {
            return Err(ReadError::Syntax {
                file: file.to_owned(),
                line: 1,
                column: 1,
                expected: format!("\"format\": \"{expected}\""),
                found: format!("\"{f}\""),
            });
        }
    }
    if let Some(v) = version {
        if v != VERSION {
            return Err(ReadError::Unsupported {
                file: file.to_owned(),
                line: 1,
                what: format!("{expected} version {v} (this build reads version {VERSION})"),
            });
        }
    }
    Ok(())
}

/// Parses a problem from JSON; `file` names it in errors.
pub fn parse_problem(text: &str, file: &str) -> Result<Problem, ReadError> {
    let pf: ProblemFile = serde_json::from_str(text).map_err(|e| json_error(file, &e))?;
    from_file(pf, file)
}

/// The problem a parsed file describes, validated; `file` names it in errors.
fn from_file(pf: ProblemFile, file: &str) -> Result<Problem, ReadError> {
    check_header(file, pf.format.as_deref(), pf.version, PROBLEM_FORMAT)?;
    let mut b = ProblemBuilder::new();
    for r in &pf.resources {
        b.resource(r.name.clone(), r.capacity);
    }
    for a in &pf.activities {
        let id = b.activity(a.name.clone(), a.duration);
        b.release(id, a.release);
        if let Some(d) = a.deadline {
            b.deadline(id, d);
        }
    }
    for a in &pf.activities {
        for (r, &q) in &a.demands {
            b.demand_by_name(&a.name, r, q);
        }
    }
    for p in &pf.precedences {
        b.precedence_by_name(&p.from, &p.to, p.lag);
    }
    b.build().map_err(|source| ReadError::Invalid {
        file: file.to_owned(),
        source,
    })
}

/// Writes a problem as pretty JSON.
pub fn problem_to_json(problem: &Problem) -> String {
    serde_json::to_string_pretty(&to_file(problem)).expect("a problem always serialises")
}

/// The file form of a problem.
fn to_file(problem: &Problem) -> ProblemFile {
    ProblemFile {
        format: Some(PROBLEM_FORMAT.into()),
        version: Some(VERSION),
        resources: problem
            .resources()
            .iter()
            .map(|r| ResourceEntry {
                name: r.name.clone(),
                capacity: r.capacity,
            })
            .collect(),
        activities: problem
            .activities()
            .iter()
            .map(|a| ActivityEntry {
                name: a.name.clone(),
                duration: a.duration,
                demands: a
                    .demands
                    .iter()
                    .zip(problem.resources())
                    .filter(|(&q, _)| q > 0)
                    .map(|(&q, r)| (r.name.clone(), q))
                    .collect(),
                release: a.release,
                deadline: a.deadline,
            })
            .collect(),
        precedences: problem
            .precedences()
            .iter()
            .map(|p| PrecedenceEntry {
                from: problem.activity(p.from).name.clone(),
                to: problem.activity(p.to).name.clone(),
                lag: p.lag,
            })
            .collect(),
    }
}

/// A [`Problem`] serialises as its JSON file (see the module docs), with any serde format.
#[cfg(feature = "serde")]
impl Serialize for Problem {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        to_file(self).serialize(serializer)
    }
}

/// A [`Problem`] deserialises from its JSON file form and is validated: an invalid one is an
/// error naming the offending item (see [`crate::ProblemError`]).
#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for Problem {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pf = ProblemFile::deserialize(deserializer)?;
        from_file(pf, "the serialised problem").map_err(serde::de::Error::custom)
    }
}

/// Writes a schedule of `problem` as pretty JSON, activities in problem order.
pub fn schedule_to_json(problem: &Problem, schedule: &Schedule) -> String {
    let sf = ScheduleFile {
        format: Some(SCHEDULE_FORMAT.into()),
        version: Some(VERSION),
        makespan: Some(schedule.makespan(problem)),
        starts: problem
            .activities()
            .iter()
            .zip(schedule.starts())
            .map(|(a, &s)| StartEntry {
                activity: a.name.clone(),
                start: s,
            })
            .collect(),
    };
    serde_json::to_string_pretty(&sf).expect("a schedule always serialises")
}

/// Parses a schedule of `problem` from JSON; `file` names it in errors. Every activity must
/// have exactly one start and every name must be known.
pub fn schedule_from_json(
    problem: &Problem,
    text: &str,
    file: &str,
) -> Result<Schedule, ReadError> {
    let sf: ScheduleFile = serde_json::from_str(text).map_err(|e| json_error(file, &e))?;
    check_header(file, sf.format.as_deref(), sf.version, SCHEDULE_FORMAT)?;
    let mut starts: Vec<Option<Time>> = vec![None; problem.len()];
    for e in &sf.starts {
        let a = problem
            .find(&e.activity)
            .ok_or_else(|| ReadError::UnknownActivity {
                file: file.to_owned(),
                name: e.activity.clone(),
            })?;
        if starts[a.index()].replace(e.start).is_some() {
            return Err(ReadError::RepeatedActivity {
                file: file.to_owned(),
                name: e.activity.clone(),
            });
        }
    }
    let missing: Vec<String> = problem
        .activities()
        .iter()
        .zip(&starts)
        .filter(|(_, s)| s.is_none())
        .map(|(a, _)| a.name.clone())
        .collect();
    if !missing.is_empty() {
        return Err(ReadError::MissingStarts {
            file: file.to_owned(),
            missing,
        });
    }
    Ok(Schedule::new(
        starts.into_iter().map(|s| s.unwrap_or(0)).collect(),
    ))
}

/// Reads a schedule file of `problem`.
pub fn read_schedule(problem: &Problem, path: impl AsRef<Path>) -> Result<Schedule, ReadError> {
    let path = path.as_ref();
    let text = read_text(path)?;
    schedule_from_json(problem, &text, &path.display().to_string())
}

#[cfg(all(test, feature = "serde"))]
mod tests {
    use super::*;

    #[test]
    fn a_problem_serialises_as_its_json_file_and_is_validated_on_the_way_in() {
        let problem = crate::generate::project(&crate::generate::Project::with_size(12, 4));
        let text = serde_json::to_string(&problem).expect("serialises");
        let back: Problem = serde_json::from_str(&text).expect("deserialises");
        assert_eq!(back.activities(), problem.activities());
        assert_eq!(back.resources(), problem.resources());
        assert_eq!(back.precedences(), problem.precedences());
        // The same text as the file format.
        let file = parse_problem(&problem_to_json(&problem), "file").expect("parses");
        assert_eq!(serde_json::to_string(&file).unwrap(), text);
        // A cycle is an error that names it.
        let bad = r#"{"activities": [{"name": "x", "duration": 1}, {"name": "y", "duration": 1}],
            "precedences": [{"from": "x", "to": "y"}, {"from": "y", "to": "x"}]}"#;
        let err = serde_json::from_str::<Problem>(bad).expect_err("a cycle");
        assert!(err.to_string().contains("`x`"), "{err}");
    }
}
