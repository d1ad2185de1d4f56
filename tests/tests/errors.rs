//! Every way an input can be rejected, table-driven: malformed PSPLIB `.sm`, Patterson `.rcp`
//! and JSON texts, invalid problems built in code, and bad solve requests. Each case asserts
//! the specific error variant (with its fields) and that the message names the offending item
//! (and, for text files, its line and column).

use std::time::Duration;

use concerto_rcpsp::io::{json, patterson, psplib};
use concerto_rcpsp::{
    Heuristic, Limits, Problem, ProblemBuilder, ProblemError, ReadError, Registry, RegistryError,
    Schedule, SolveError, Solver, Violation,
};

/// A valid single-mode PSPLIB instance in the layout of `j301_1.sm`: five jobs (source 1,
/// sink 5), two renewable resources of capacity 2, precedences 1 -> {2, 3}, 2 -> 4, 3 -> 5,
/// 4 -> 5.
const SMALL_SM: &str = r"************************************************************************
file with basedata            : small.bas
initial value random generator: 1
************************************************************************
projects                      :  1
jobs (incl. supersource/sink ):  5
horizon                       :  9
RESOURCES
  - renewable                 :  2   R
  - nonrenewable              :  0   N
  - doubly constrained        :  0   D
************************************************************************
PROJECT INFORMATION:
pronr.  #jobs rel.date duedate tardcost  MPM-Time
    1      3      0        5        1        5
************************************************************************
PRECEDENCE RELATIONS:
jobnr.    #modes  #successors   successors
   1        1          2           2   3
   2        1          1           4
   3        1          1           5
   4        1          1           5
   5        1          0
************************************************************************
REQUESTS/DURATIONS:
jobnr. mode duration  R 1  R 2
------------------------------------------------------------------------
  1      1     0       0    0
  2      1     3       2    0
  3      1     4       1    1
  4      1     2       0    2
  5      1     0       0    0
************************************************************************
RESOURCEAVAILABILITIES:
  R 1  R 2
    2    2
************************************************************************
";

/// A valid Patterson instance: 4 activities, one resource of capacity 2.
const SMALL_RCP: &str = "4 1
2
0 0 2 2 3
3 1 1 4
2 2 1 4
0 0 0
";

/// A valid JSON problem that the schedule cases refer to.
const SMALL_JSON: &str = r#"{
  "resources": [{"name": "gpu", "capacity": 1}],
  "activities": [
    {"name": "a", "duration": 2, "demands": {"gpu": 1}},
    {"name": "b", "duration": 3, "demands": {"gpu": 1}}
  ],
  "precedences": [{"from": "a", "to": "b"}]
}"#;

/// The 1-based number of the only line of `text` equal to `line`.
fn line_number(text: &str, line: &str) -> usize {
    let hits: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| *l == line)
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(hits.len(), 1, "`{line}` must occur exactly once");
    hits[0]
}

/// `SMALL_SM` with its line `old` replaced by `new`, and the number of that line.
fn sm_edit(old: &str, new: &str) -> (String, usize) {
    let at = line_number(SMALL_SM, old);
    let text: Vec<&str> = SMALL_SM
        .lines()
        .enumerate()
        .map(|(i, l)| if i + 1 == at { new } else { l })
        .collect();
    (text.join("\n") + "\n", at)
}

/// `SMALL_SM` cut after its line `last`, and the number of that line.
fn sm_until(last: &str) -> (String, usize) {
    let at = line_number(SMALL_SM, last);
    let text: Vec<&str> = SMALL_SM.lines().take(at).collect();
    (text.join("\n") + "\n", at)
}

/// The 1-based column of the first occurrence of `token` in `line`.
fn column(line: &str, token: &str) -> usize {
    line.find(token).expect("token in line") + 1
}

/// What a case feeds to which entry point.
enum Input {
    /// A PSPLIB `.sm` text, parsed as `small.sm`.
    Sm(String),
    /// A Patterson `.rcp` text, parsed as `small.rcp`.
    Rcp(String),
    /// A JSON problem, parsed as `problem.json`.
    Json(String),
    /// A JSON schedule of `SMALL_JSON`, parsed as `schedule.json`.
    ScheduleJson(String),
    /// A builder, built.
    Builder(ProblemBuilder),
}

/// The error an input produced.
#[derive(Debug)]
enum Failure {
    Read(ReadError),
    Build(ProblemError),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Read(e) => e.fmt(f),
            Failure::Build(e) => e.fmt(f),
        }
    }
}

impl Input {
    /// Runs the input through its entry point; `None` when it was (wrongly) accepted.
    fn failure(self) -> Option<Failure> {
        let read = match self {
            Input::Sm(text) => psplib::parse(&text, "small.sm").map(drop),
            Input::Rcp(text) => patterson::parse(&text, "small.rcp").map(drop),
            Input::Json(text) => json::parse_problem(&text, "problem.json").map(drop),
            Input::ScheduleJson(text) => {
                let problem = small_json_problem();
                concerto_rcpsp::io::schedule_from_json(&problem, &text, "schedule.json").map(drop)
            }
            Input::Builder(b) => return b.build().err().map(Failure::Build),
        };
        read.err().map(Failure::Read)
    }
}

fn small_json_problem() -> Problem {
    json::parse_problem(SMALL_JSON, "small.json").expect("SMALL_JSON is valid")
}

/// One row of the table.
struct Case {
    name: &'static str,
    input: Input,
    /// Whether the failure is the expected variant with the expected fields.
    expect: Box<dyn Fn(&Failure) -> bool>,
    /// Texts the error message must contain: the offending item, the file position.
    mentions: Vec<String>,
}

fn case(
    name: &'static str,
    input: Input,
    expect: impl Fn(&Failure) -> bool + 'static,
    mentions: &[&str],
) -> Case {
    Case {
        name,
        input,
        expect: Box::new(expect),
        mentions: mentions.iter().map(|s| s.to_string()).collect(),
    }
}

/// A `Syntax` error at `line:column` of `file` whose `found` is `found`.
fn syntax_at(f: &Failure, file: &str, line: usize, column: usize, found: &str) -> bool {
    matches!(f, Failure::Read(ReadError::Syntax { file: fl, line: l, column: c, found: fd, .. })
        if fl == file && *l == line && *c == column && fd == found)
}

fn sm_cases() -> Vec<Case> {
    let mut cases = Vec::new();

    let (text, _) = sm_edit("PRECEDENCE RELATIONS:", "PRECEDENCES:");
    cases.push(case(
        "sm: missing PRECEDENCE RELATIONS section",
        Input::Sm(text),
        |f| {
            matches!(f, Failure::Read(ReadError::MissingSection { file, section })
                if file == "small.sm" && *section == "PRECEDENCE RELATIONS:")
        },
        &["small.sm", "`PRECEDENCE RELATIONS:`"],
    ));

    let bad = "   2        1          x           4";
    let (text, line) = sm_edit("   2        1          1           4", bad);
    let col = column(bad, "x");
    cases.push(case(
        "sm: a word where a successor count is expected",
        Input::Sm(text),
        move |f| {
            syntax_at(f, "small.sm", line, col, "`x`")
                && matches!(f, Failure::Read(ReadError::Syntax { expected, .. }) if expected.contains("successor count"))
        },
        &[&format!("small.sm:{line}:{col}:"), "successor count", "`x`"],
    ));

    // A successor count larger than the successors listed is reported on the job's own line,
    // at its end, not on the next job's line.
    let short = "   2        1          2           4";
    let (text, line) = sm_edit("   2        1          1           4", short);
    let end = short.chars().count() + 1;
    cases.push(case(
        "sm: fewer successors than the count says",
        Input::Sm(text),
        move |f| {
            syntax_at(f, "small.sm", line, end, "end of line")
                && matches!(f, Failure::Read(ReadError::Syntax { expected, .. }) if expected.contains("successor 2 of 2 of job 2"))
        },
        &[&format!("small.sm:{line}:{end}:"), "successor 2 of 2 of job 2", "end of line"],
    ));

    let bad = "   4        1          1           9";
    let (text, line) = sm_edit("   4        1          1           5", bad);
    let col = column(bad, "9");
    cases.push(case(
        "sm: successor out of range",
        Input::Sm(text),
        move |f| {
            syntax_at(f, "small.sm", line, col, "`9`")
                && matches!(f, Failure::Read(ReadError::Syntax { expected, .. }) if expected.contains("1 to 5"))
        },
        &[&format!("small.sm:{line}:{col}:"), "`9`", "1 to 5"],
    ));

    let (text, line) = sm_edit(
        "   3        1          1           5",
        "   4        1          1           5",
    );
    cases.push(case(
        "sm: job numbers out of order",
        Input::Sm(text),
        move |f| {
            syntax_at(f, "small.sm", line, 4, "`4`")
                && matches!(f, Failure::Read(ReadError::Syntax { expected, .. }) if expected.contains("job number 3"))
        },
        &[&format!("small.sm:{line}:4:"), "job number 3", "`4`"],
    ));

    let (text, line) = sm_edit(
        "   2        1          1           4",
        "   2        2          1           4",
    );
    cases.push(case(
        "sm: multi-mode job",
        Input::Sm(text),
        move |f| {
            matches!(f, Failure::Read(ReadError::Unsupported { line: l, what, .. })
                if *l == line && what.contains("job 2 with 2 modes"))
        },
        &[&format!("small.sm:{line}:"), "job 2 with 2 modes"],
    ));

    let (text, line) = sm_edit(
        "  - nonrenewable              :  0   N",
        "  - nonrenewable              :  1   N",
    );
    cases.push(case(
        "sm: non-renewable resources",
        Input::Sm(text),
        move |f| {
            matches!(f, Failure::Read(ReadError::Unsupported { line: l, what, .. })
                if *l == line && what.contains("1 nonrenewable"))
        },
        &[&format!("small.sm:{line}:"), "nonrenewable"],
    ));

    let (text, line) = sm_until("  3      1     4       1    1");
    cases.push(case(
        "sm: REQUESTS/DURATIONS truncated",
        Input::Sm(text),
        // The section ends after job 3: the fourth job line was expected on the next line.
        move |f| {
            syntax_at(f, "small.sm", line + 1, 1, "3 job line(s)")
                && matches!(f, Failure::Read(ReadError::Syntax { expected, .. })
                    if expected.contains("5 job lines") && expected.contains("REQUESTS/DURATIONS:"))
        },
        &[
            &format!("small.sm:{}:1:", line + 1),
            "5 job lines",
            "found 3 job line(s)",
        ],
    ));

    let (text, _) = sm_edit(
        "   4        1          1           5",
        "   4        1          2           5   2",
    );
    cases.push(case(
        "sm: precedence cycle 2 -> 4 -> 2",
        Input::Sm(text),
        |f| {
            matches!(f, Failure::Read(ReadError::Invalid { file, source: ProblemError::Cycle { activities } })
                if file == "small.sm" && {
                    let mut sorted = activities.clone();
                    sorted.sort();
                    sorted == ["2", "4"]
                })
        },
        &["small.sm", "cycle", "`2`", "`4`"],
    ));

    let (text, _) = sm_edit(
        "  3      1     4       1    1",
        "  3      1     4       3    1",
    );
    cases.push(case(
        "sm: demand over capacity",
        Input::Sm(text),
        |f| {
            matches!(f, Failure::Read(ReadError::Invalid { source: ProblemError::DemandOverCapacity {
                    activity, resource, demand: 3, capacity: 2 }, .. })
                if activity == "3" && resource == "R1")
        },
        &["small.sm", "`3`", "`R1`"],
    ));

    let (text, line) = sm_edit(
        "jobs (incl. supersource/sink ):  5",
        "jobs (incl. supersource/sink ):  five",
    );
    let col = column("jobs (incl. supersource/sink ):  five", "five");
    cases.push(case(
        "sm: job count not a number",
        Input::Sm(text),
        move |f| syntax_at(f, "small.sm", line, col, "`five`"),
        &[&format!("small.sm:{line}:{col}:"), "`five`"],
    ));
    cases
}

fn rcp_cases() -> Vec<Case> {
    let mut cases = vec![case(
        "rcp: zero activities",
        Input::Rcp("0 1\n2\n".into()),
        |f| {
            syntax_at(f, "small.rcp", 1, 1, "`0`")
                && matches!(f, Failure::Read(ReadError::Syntax { expected, .. }) if expected.contains("positive number of activities"))
        },
        &["small.rcp:1:1:", "positive number of activities"],
    )];

    let truncated: String = SMALL_RCP
        .lines()
        .take(5)
        .map(|l| format!("{l}\n"))
        .collect();
    // End of input is reported just after the last character of the last line.
    let end_column = truncated.lines().nth(4).map_or(0, |l| l.chars().count()) + 1;
    cases.push(case(
        "rcp: truncated before the last activity",
        Input::Rcp(truncated),
        move |f| {
            syntax_at(f, "small.rcp", 5, end_column, "end of input")
                && matches!(f, Failure::Read(ReadError::Syntax { expected, .. }) if expected.contains("duration of activity 4"))
        },
        &[&format!("small.rcp:5:{end_column}:"), "activity 4", "end of input"],
    ));

    cases.push(case(
        "rcp: trailing garbage",
        Input::Rcp(format!("{SMALL_RCP}  7 oops\n")),
        |f| {
            syntax_at(f, "small.rcp", 7, 3, "`7`")
                && matches!(f, Failure::Read(ReadError::Syntax { expected, .. }) if expected.contains("after 4 activities"))
        },
        &["small.rcp:7:3:", "`7`"],
    ));

    cases.push(case(
        "rcp: successor out of range",
        Input::Rcp(SMALL_RCP.replace("3 1 1 4", "3 1 1 5")),
        |f| {
            syntax_at(f, "small.rcp", 4, 7, "`5`")
                && matches!(f, Failure::Read(ReadError::Syntax { expected, .. })
                    if expected.contains("successor index of activity 2") && expected.contains("1 to 4"))
        },
        &["small.rcp:4:7:", "activity 2", "`5`"],
    ));
    cases
}

/// A JSON problem with one resource `gpu` of capacity 1, the given activities and
/// precedences (JSON array bodies).
fn problem_json(activities: &str, precedences: &str) -> String {
    format!(
        r#"{{"resources": [{{"name": "gpu", "capacity": 1}}],
 "activities": [{activities}],
 "precedences": [{precedences}]}}"#
    )
}

fn invalid(f: &Failure) -> Option<&ProblemError> {
    match f {
        Failure::Read(ReadError::Invalid { file, source }) if file == "problem.json" => {
            Some(source)
        }
        _ => None,
    }
}

fn json_cases() -> Vec<Case> {
    let ab = r#"{"name": "a", "duration": 1}, {"name": "b", "duration": 2}"#;
    vec![
        case(
            "json: missing comma",
            Input::Json("{\"activities\": [\n  {\"name\": \"a\" \"duration\": 1}\n]}".into()),
            |f| {
                matches!(f, Failure::Read(ReadError::Json { file, line: 2, column: 16, .. })
                    if file == "problem.json")
            },
            &["problem.json:2:16:"],
        ),
        case(
            "json: unknown field",
            Input::Json(problem_json(
                r#"{"name": "a", "duration": 1, "duraton": 2}"#,
                "",
            )),
            |f| {
                matches!(f, Failure::Read(ReadError::Json { line: 2, message, .. })
                    if message.contains("unknown field `duraton`"))
            },
            &["problem.json:2:", "`duraton`"],
        ),
        case(
            "json: a resource named twice in demands",
            Input::Json(problem_json(
                r#"{"name": "a", "duration": 1, "demands": {"gpu": 1, "gpu": 5}}"#,
                "",
            )),
            |f| {
                matches!(f, Failure::Read(ReadError::Json { line: 2, message, .. })
                    if message.contains("resource `gpu` appears twice"))
            },
            &["problem.json:2:", "`gpu` appears twice"],
        ),
        case(
            "json: unknown resource in demands",
            Input::Json(problem_json(
                r#"{"name": "a", "duration": 1, "demands": {"tpu": 1}}"#,
                "",
            )),
            |f| {
                matches!(invalid(f), Some(ProblemError::UnknownResource { name, activity })
                    if name == "tpu" && activity == "a")
            },
            &["problem.json", "`tpu`", "`a`"],
        ),
        case(
            "json: unknown activity in a precedence",
            Input::Json(problem_json(ab, r#"{"from": "a", "to": "zz"}"#)),
            |f| {
                matches!(invalid(f), Some(ProblemError::UnknownActivity { name, context })
                    if name == "zz" && context.contains("precedence 1"))
            },
            &["problem.json", "`zz`", "precedence 1"],
        ),
        case(
            "json: duplicate activity name",
            Input::Json(problem_json(
                r#"{"name": "a", "duration": 1}, {"name": "a", "duration": 2}"#,
                "",
            )),
            |f| matches!(invalid(f), Some(ProblemError::DuplicateActivity { name }) if name == "a"),
            &["problem.json", "`a`", "twice"],
        ),
        case(
            "json: negative duration",
            Input::Json(problem_json(r#"{"name": "late", "duration": -3}"#, "")),
            |f| {
                matches!(invalid(f), Some(ProblemError::NegativeDuration { activity, duration: -3 })
                    if activity == "late")
            },
            &["problem.json", "`late`", "-3"],
        ),
        case(
            "json: negative lag",
            Input::Json(problem_json(ab, r#"{"from": "a", "to": "b", "lag": -1}"#)),
            |f| {
                matches!(invalid(f), Some(ProblemError::NegativeLag { from, to, lag: -1 })
                    if from == "a" && to == "b")
            },
            &["problem.json", "`a`", "`b`", "-1"],
        ),
        case(
            "json: wrong format value",
            Input::Json(
                r#"{"format": "concerto-schedule", "activities": [{"name": "a", "duration": 1}]}"#
                    .into(),
            ),
            |f| {
                syntax_at(f, "problem.json", 1, 1, "\"concerto-schedule\"")
                    && matches!(f, Failure::Read(ReadError::Syntax { expected, .. }) if expected.contains("concerto-rcpsp"))
            },
            &["problem.json:1:1:", "concerto-schedule", "concerto-rcpsp"],
        ),
        case(
            "json: unsupported version",
            Input::Json(r#"{"version": 7, "activities": [{"name": "a", "duration": 1}]}"#.into()),
            |f| matches!(f, Failure::Read(ReadError::Unsupported { line: 1, what, .. }) if what.contains("version 7")),
            &["problem.json:1:", "version 7"],
        ),
        case(
            "json: no activities",
            Input::Json(problem_json("", "")),
            |f| matches!(invalid(f), Some(ProblemError::Empty)),
            &["problem.json", "no activities"],
        ),
    ]
}

fn schedule_cases() -> Vec<Case> {
    vec![
        case(
            "schedule: unknown activity",
            Input::ScheduleJson(
                r#"{"starts": [{"activity": "a", "start": 0}, {"activity": "b", "start": 2}, {"activity": "c", "start": 5}]}"#.into(),
            ),
            |f| {
                matches!(f, Failure::Read(ReadError::UnknownActivity { file, name })
                    if file == "schedule.json" && name == "c")
            },
            &["schedule.json", "`c`"],
        ),
        case(
            "schedule: repeated activity",
            Input::ScheduleJson(
                r#"{"starts": [{"activity": "a", "start": 0}, {"activity": "b", "start": 2}, {"activity": "a", "start": 5}]}"#.into(),
            ),
            |f| matches!(f, Failure::Read(ReadError::RepeatedActivity { name, .. }) if name == "a"),
            &["schedule.json", "`a`", "two start times"],
        ),
        case(
            "schedule: missing start",
            Input::ScheduleJson(r#"{"starts": [{"activity": "a", "start": 0}]}"#.into()),
            |f| matches!(f, Failure::Read(ReadError::MissingStarts { missing, .. }) if missing == &["b"]),
            &["schedule.json", "b"],
        ),
        case(
            "schedule: a problem file given as a schedule",
            Input::ScheduleJson(SMALL_JSON.into()),
            |f| matches!(f, Failure::Read(ReadError::Json { line: 2, message, .. }) if message.contains("`resources`")),
            &["schedule.json:2:", "`resources`"],
        ),
    ]
}

fn builder_cases() -> Vec<Case> {
    let mut overflow = ProblemBuilder::new();
    overflow.activity("first", i64::MAX / 2 + 1);
    overflow.activity("second", i64::MAX / 2 + 1);
    let mut lag_overflow = ProblemBuilder::new();
    let x = lag_overflow.activity("x", 1);
    let y = lag_overflow.activity("y", 1);
    lag_overflow.precedence_with_lag(x, y, i64::MAX);
    let mut unnamed = ProblemBuilder::new();
    unnamed.activity("named", 1);
    unnamed.activity("", 1);
    let mut unnamed_resource = ProblemBuilder::new();
    unnamed_resource.resource("", 1);
    unnamed_resource.activity("a", 1);
    let mut bad_id = ProblemBuilder::new();
    let a = bad_id.activity("a", 1);
    bad_id.precedence(a, concerto_rcpsp::ActivityId(5));
    vec![
        case(
            "builder: durations overflow the horizon",
            Input::Builder(overflow),
            |f| matches!(f, Failure::Build(ProblemError::HorizonOverflow { activity }) if activity == "second"),
            &["`second`", "overflows"],
        ),
        case(
            "builder: a lag overflows the horizon",
            Input::Builder(lag_overflow),
            |f| matches!(f, Failure::Build(ProblemError::HorizonOverflow { activity }) if activity == "x"),
            &["`x`", "overflows"],
        ),
        case(
            "builder: empty activity name",
            Input::Builder(unnamed),
            |f| {
                matches!(
                    f,
                    Failure::Build(ProblemError::EmptyName {
                        kind: "activity",
                        index: 1
                    })
                )
            },
            &["activity number 1"],
        ),
        case(
            "builder: empty resource name",
            Input::Builder(unnamed_resource),
            |f| {
                matches!(
                    f,
                    Failure::Build(ProblemError::EmptyName {
                        kind: "resource",
                        index: 0
                    })
                )
            },
            &["resource number 0"],
        ),
        case(
            "builder: precedence to an id it did not return",
            Input::Builder(bad_id),
            |f| {
                matches!(f, Failure::Build(ProblemError::UnknownActivity { name, context })
                    if name == "#5" && context.contains("precedence 1 (to)"))
            },
            &["`#5`", "precedence 1 (to)"],
        ),
    ]
}

#[test]
fn the_valid_inputs_the_cases_start_from_are_accepted() {
    let sm = psplib::parse(SMALL_SM, "small.sm").expect("SMALL_SM is valid");
    assert_eq!(sm.len(), 5);
    assert_eq!(sm.resources().len(), 2);
    assert_eq!(sm.precedences().len(), 5);
    let rcp = patterson::parse(SMALL_RCP, "small.rcp").expect("SMALL_RCP is valid");
    assert_eq!(rcp.len(), 4);
    assert_eq!(small_json_problem().len(), 2);
}

#[test]
fn every_malformed_input_gets_its_specific_error() {
    let cases: Vec<Case> = [
        sm_cases(),
        rcp_cases(),
        json_cases(),
        schedule_cases(),
        builder_cases(),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(cases.len() >= 16);
    let mut failed = Vec::new();
    for Case {
        name,
        input,
        expect,
        mentions,
    } in cases
    {
        let Some(failure) = input.failure() else {
            failed.push(format!("{name}: accepted"));
            continue;
        };
        let message = failure.to_string();
        if !expect(&failure) {
            failed.push(format!("{name}: unexpected error {failure:?}"));
        }
        for m in &mentions {
            if !message.contains(m.as_str()) {
                failed.push(format!(
                    "{name}: message `{message}` does not mention `{m}`"
                ));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} case(s) failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// One unit resource used by `a` then `b` (`a -> b`).
fn two_on_one() -> Problem {
    small_json_problem()
}

#[test]
fn zero_time_limit_is_refused() {
    let limits = Limits {
        time_limit: Some(Duration::ZERO),
        ..Limits::default()
    };
    let err = Heuristic::default()
        .solve(&two_on_one(), &limits)
        .unwrap_err();
    assert!(matches!(err, SolveError::ZeroTimeLimit), "{err:?}");
    assert!(err.to_string().contains("time limit"), "{err}");
}

#[test]
fn zero_threads_are_refused() {
    let limits = Limits {
        threads: 0,
        ..Limits::default()
    };
    let err = Heuristic::default()
        .solve(&two_on_one(), &limits)
        .unwrap_err();
    assert!(
        matches!(&err, SolveError::InvalidLimits { reason } if reason.contains("threads")),
        "{err:?}"
    );
}

#[test]
fn invalid_initial_schedule_is_refused() {
    // `b` starts at 1, before `a` finishes at 2, and both use the unit resource at once.
    let limits = Limits::default().initial(Schedule::new(vec![0, 1]));
    let err = Heuristic::default()
        .solve(&two_on_one(), &limits)
        .unwrap_err();
    let SolveError::InvalidInitial { violations } = &err else {
        panic!("expected InvalidInitial, got {err:?}");
    };
    assert!(violations.0.contains(&Violation::Precedence {
        from: "a".into(),
        to: "b".into(),
        lag: 0,
        earliest: 2,
        start: 1,
    }));
    assert!(violations
        .0
        .iter()
        .any(|v| matches!(v, Violation::OverCapacity { resource, from: 1, until: 2, .. } if resource == "gpu")));
    let message = err.to_string();
    assert!(
        message.contains("`a` -> `b`") && message.contains("`gpu`"),
        "{message}"
    );
}

#[test]
fn initial_schedule_of_the_wrong_length_is_refused() {
    let limits = Limits::default().initial(Schedule::new(vec![0]));
    let err = Heuristic::default()
        .solve(&two_on_one(), &limits)
        .unwrap_err();
    assert!(
        matches!(&err, SolveError::InvalidInitial { violations }
            if violations.0.contains(&Violation::MissingActivity { activity: "b".into() })),
        "{err:?}"
    );
}

#[test]
fn unknown_solver_lists_the_known_ones() {
    let mut registry = Registry::with_builtin();
    registry.register_missing("highs", "HiGHS MILP", "concerto-backends", "highs");
    let Err(err) = registry.get("gurobi") else {
        panic!("`gurobi` is not registered");
    };
    assert!(
        matches!(&err, RegistryError::Unknown { name, known }
            if name == "gurobi" && known == &["highs", "sgs"]),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("`gurobi`") && message.contains("highs, sgs"),
        "{message}"
    );
    let Err(err) = registry.get("highs") else {
        panic!("`highs` is not compiled in");
    };
    assert!(
        matches!(&err, RegistryError::NotCompiled { feature, crate_name, .. }
            if feature == "highs" && crate_name == "concerto-backends"),
        "{err:?}"
    );
    assert_eq!(
        registry
            .get("sgs")
            .map(|s| s.name().to_owned())
            .ok()
            .as_deref(),
        Some("sgs")
    );
}

/// A schedule whose finish overflows `Time` reads fine from a JSON file; `check` must report
/// it (it once panicked in debug builds and accepted it with makespan 0 in release builds).
#[test]
fn check_rejects_a_schedule_that_ends_past_the_time_range() {
    let problem = small_json_problem();
    let text = format!(
        r#"{{"starts": [{{"activity": "a", "start": 0}}, {{"activity": "b", "start": {}}}]}}"#,
        i64::MAX - 1
    );
    let schedule = concerto_rcpsp::io::schedule_from_json(&problem, &text, "schedule.json")
        .expect("every activity has one start");
    let result = std::panic::catch_unwind(|| concerto_rcpsp::check(&problem, &schedule));
    match result {
        Err(_) => panic!("check panicked on a schedule ending past i64::MAX"),
        Ok(Ok(makespan)) => {
            panic!("check accepted a schedule ending past i64::MAX, makespan {makespan}")
        }
        Ok(Err(violations)) => assert!(
            violations.0.iter().any(|v| matches!(
                v,
                Violation::FinishOverflow { activity, start } if activity == "b" && *start == i64::MAX - 1
            )),
            "{violations}"
        ),
    }
}
