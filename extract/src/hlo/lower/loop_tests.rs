//! Tests of `while` loops: trip counts read as XLA reads them (every trip-count case of XLA's
//! `xla/hlo/analysis/while_loop_analysis_test.cc`, with its module text and the count
//! XLA's `ComputeWhileLoopTripCount` gives), the reasons a count cannot be read,
//! `ImportOptions::unknown_trip_count`, and loops too long to unroll.

use super::trip_count::Unknown;
use super::unroll::{trip_count, TripCount};
use super::*;
use crate::hlo::export::{export, ExportError};
use crate::hlo::parse;
use concerto_graph::baselines::program_order;
use concerto_graph::{simulate, OpKind};

/// The trip count of the module's first `while` loop, with `options`.
fn count_with(text: &str, options: &ImportOptions) -> Result<TripCount, Unknown> {
    let m = parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let w = m
        .computations
        .iter()
        .flat_map(|c| &c.instructions)
        .find(|i| i.opcode == "while")
        .expect("a while loop");
    let comp = |attr: &str| {
        let name = w.attribute(attr).unwrap().computation().unwrap();
        m.computation(name).unwrap()
    };
    trip_count(&m, options, w, comp("condition"), comp("body"))
}

/// The trip count of the module's first `while` loop, read from the module alone.
fn count(text: &str) -> Result<u64, Unknown> {
    count_with(text, &ImportOptions::default()).map(|t| t.n)
}

/// XLA's `CalculateTripCount` of the same test: the loop run.
fn run_loop(init: i64, limit: i64, step: i64, le: bool) -> u64 {
    let mut n = 0;
    let mut i = init;
    while if le { i <= limit } else { i < limit } {
        n += 1;
        i += step;
    }
    n
}

/// `WhileLoopAnalysisTest.ExactBoundTrivialTripCount`: the closed form of `i < N` and
/// `i <= N` counters, against the loop run.
#[test]
fn exact_bound_trivial_trip_count() {
    let cases = [(0, 42, 1), (0, 42, 2), (0, 42, 5), (0, 40, 5)];
    for le in [false, true] {
        for (init, limit, step) in cases {
            let text = TRIVIAL_TEMPLATE
                .replace("{{INIT}}", &init.to_string())
                .replace("{{LIMIT}}", &limit.to_string())
                .replace("{{STEP}}", &step.to_string())
                .replace("{{COMP_DIR}}", if le { "LE" } else { "LT" });
            let expected = run_loop(init, limit, step, le);
            assert_eq!(count(&text), Ok(expected), "{init} {limit} {step} le={le}");
        }
    }
    // The values XLA's test compares with, spelled out.
    let fill = |limit: i64, step: i64, dir: &str| {
        TRIVIAL_TEMPLATE
            .replace("{{INIT}}", "0")
            .replace("{{LIMIT}}", &limit.to_string())
            .replace("{{STEP}}", &step.to_string())
            .replace("{{COMP_DIR}}", dir)
    };
    assert_eq!(count(&fill(42, 5, "LT")), Ok(9));
    assert_eq!(count(&fill(40, 5, "LE")), Ok(9));
    assert_eq!(count(&fill(42, 1, "LE")), Ok(43));
}

/// The counts XLA's `ComputeWhileLoopTripCount` gives for its tests' modules.
#[test]
fn xla_test_modules_give_xlas_counts() {
    let cases: [(&str, &str, u64); 7] = [
        // Copies of the induction variable are looked through.
        (
            "UpdateOnIndVarCopySuccess",
            UPDATE_ON_IND_VAR_COPY_SUCCESS,
            4,
        ),
        // The initial value through a copy of a constant.
        (
            "IndVarInitialiationNotConstantSuccess",
            IND_VAR_INITIALIATION_NOT_CONSTANT_SUCCESS,
            4,
        ),
        // The update is a fusion of the element and a constant: evaluated.
        ("FusedUpdateOp", FUSED_UPDATE_OP, 4),
        // The condition is a fusion of the element and a constant: evaluated.
        ("FusedConditionOp", FUSED_CONDITION_OP, 4),
        // XLA's test: `MatchTrivialLoopTripCount` with the constant step gives 10.
        (
            "MatchTrivialLoopCountFailsWhenIndvarIsNotIncrementedByConstant",
            MATCH_TRIVIAL_LOOP_COUNT_FAILS_WHEN_INDVAR_IS_NOT_INCREMENTED_BY_CONSTANT,
            10,
        ),
        // XLA's test: the closed form fails on `i + i`; `ComputeWhileLoopTripCount` then
        // evaluates it: 1, 2, 4, 8 are below 10, so 4 iterations.
        (
            "MatchTrivialLoopCountFailsWhenIndvarIsNotIncrementedByConstant (module 2)",
            MATCH_TRIVIAL_LOOP_COUNT_FAILS_WHEN_INDVAR_IS_NOT_INCREMENTED_BY_CONSTANT_2,
            4,
        ),
        // XLA's test: the range is [2, 10] step 1 (`i <= 10` from `add(1, 1)`): 9 iterations.
        (
            "MatchTrivialLoopCountWithSimpleArithmeticOnIndvar",
            MATCH_TRIVIAL_LOOP_COUNT_WITH_SIMPLE_ARITHMETIC_ON_INDVAR,
            9,
        ),
    ];
    for (name, text, n) in cases {
        assert_eq!(count(text), Ok(n), "WhileLoopAnalysisTest.{name}");
    }
}

/// XLA's tests whose loops have no trip count (`ComputeWhileLoopTripCount` gives none), each
/// with why: the reason this importer gives.
#[test]
fn xla_test_modules_without_a_count_say_why() {
    type Check = fn(&Unknown) -> bool;
    let cases: [(&str, &str, Check); 17] = [
        // XLA: the upper bound is 1, the count unknown (the body sets the element to a
        // constant: no induction variable).
        (
            "SingleIterationUpperBound",
            SINGLE_ITERATION_UPPER_BOUND,
            |u| matches!(u, Unknown::UpdateNotInduction { index: 1, at, .. } if at == "const"),
        ),
        (
            "NoUpperBound",
            NO_UPPER_BOUND,
            |u| matches!(u, Unknown::UpdateNotInduction { index: 1, at, .. } if at == "const"),
        ),
        (
            "SimpleLoopWithCustomCall",
            SIMPLE_LOOP_WITH_CUSTOM_CALL,
            |u| matches!(u, Unknown::BodyNotTuple(r) if r == "custom-call.2"),
        ),
        (
            "SimpleLoopWithCustomCallNonTuple",
            SIMPLE_LOOP_WITH_CUSTOM_CALL_NON_TUPLE,
            |u| matches!(u, Unknown::BodyNotTuple(r) if r == "custom-call.2"),
        ),
        // A collective updates the counter.
        (
            "NonScalarUpdateOp",
            NON_SCALAR_UPDATE_OP,
            |u| matches!(u, Unknown::UpdateNotInduction { index: 0, at, .. } if at == "update"),
        ),
        // A collective inside the called condition.
        ("NonScalarConditionOp", NON_SCALAR_CONDITION_OP, |u| {
            matches!(u, Unknown::NoInductionVariable(_))
        }),
        (
            "IndvarWithNonScalarShape",
            INDVAR_WITH_NON_SCALAR_SHAPE,
            |u| matches!(u, Unknown::NoInductionVariable(_)),
        ),
        // The condition reduces a 100,000,000-element array.
        (
            "AvoidBruteForceForHugeParams",
            AVOID_BRUTE_FORCE_FOR_HUGE_PARAMS,
            |u| matches!(u, Unknown::NoInductionVariable(_)),
        ),
        (
            "UpdateIsMultipleOperationsWithConstantOperand",
            UPDATE_IS_MULTIPLE_OPERATIONS_WITH_CONSTANT_OPERAND,
            |u| matches!(u, Unknown::UpdateNotSimple { index: 0, at } if at == "add.2"),
        ),
        (
            "UpdateIsMultipleOperationsWithoutConstantOperand",
            UPDATE_IS_MULTIPLE_OPERATIONS_WITHOUT_CONSTANT_OPERAND,
            |u| matches!(u, Unknown::UpdateNotSimple { index: 0, at } if at == "add.2"),
        ),
        (
            "ConditionIsMultipleOperationsWithConstantOperand",
            CONDITION_IS_MULTIPLE_OPERATIONS_WITH_CONSTANT_OPERAND,
            |u| matches!(u, Unknown::BoundNotConstant { index: 0, at } if at == "compare"),
        ),
        (
            "ConditionIsMultipleOperationsWithoutConstantOperand",
            CONDITION_IS_MULTIPLE_OPERATIONS_WITHOUT_CONSTANT_OPERAND,
            |u| matches!(u, Unknown::BoundNotConstant { index: 0, at } if at == "compare"),
        ),
        // XLA's test finds the induction variable (element 0); the body's update reads it
        // through a fusion, which neither the closed form nor the evaluation follow.
        (
            "GetIndvarIndexShouldWorkWhenParamIsCopied",
            GET_INDVAR_INDEX_SHOULD_WORK_WHEN_PARAM_IS_COPIED,
            |u| matches!(u, Unknown::UpdateNotSimple { index: 0, .. }),
        ),
        (
            "GetIndvarIndexShouldWorkWithMultiOutputFusion",
            GET_INDVAR_INDEX_SHOULD_WORK_WITH_MULTI_OUTPUT_FUSION,
            |u| matches!(u, Unknown::UpdateNotSimple { index: 0, .. }),
        ),
        (
            "GetIndvarIndexShouldWorkWithNestedFusions",
            GET_INDVAR_INDEX_SHOULD_WORK_WITH_NESTED_FUSIONS,
            |u| matches!(u, Unknown::UpdateNotSimple { index: 0, .. }),
        ),
        // XLA's test finds no induction variable: a collective in the fusion, an array in
        // the intermediate tuple.
        (
            "GetIndvarIndexShouldFailWithNonScalarOpInMultiOutputFusion",
            GET_INDVAR_INDEX_SHOULD_FAIL_WITH_NON_SCALAR_OP_IN_MULTI_OUTPUT_FUSION,
            |u| matches!(u, Unknown::UpdateNotInduction { index: 0, .. }),
        ),
        (
            "GetIndvarIndexShouldFailWhenIntermediateTupleHasNonScalarOperand",
            GET_INDVAR_INDEX_SHOULD_FAIL_WHEN_INTERMEDIATE_TUPLE_HAS_NON_SCALAR_OPERAND,
            |u| matches!(u, Unknown::UpdateNotInduction { index: 0, .. }),
        ),
    ];
    for (name, text, check) in cases {
        match count(text) {
            Ok(n) => panic!("WhileLoopAnalysisTest.{name}: counted {n}"),
            Err(u) => assert!(check(&u), "WhileLoopAnalysisTest.{name}: {u:?}"),
        }
    }
    // XLA's test finds element 0 as the induction variable, then its initial value is a
    // fusion of a non-constant: not evaluated without recursion, as in XLA.
    let u = count(LOOP_FUSION_FOR_LOOP_VARIABLE).unwrap_err();
    assert!(
        matches!(&u, Unknown::InitNotConstant { index: 0, at, .. } if at == "c.0.loop_double_buffer_peeled"),
        "{u:?}"
    );
}

/// A counter loop over an `f32[8,8]` state with a dot and an all-reduce in its body:
/// `%start` is `START` (an instruction of the entry, `%p2` an `s32[]` parameter), the update
/// `%next` is `NEXT` (`%i` the counter, `%c` the constant `STEP`), the condition's root
/// `%go` is `GO` (`%b` the constant `BOUND`).
const COUNTER: &str = r#"HloModule counter

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%body (s: (s32[], f32[8,8])) -> (s32[], f32[8,8]) {
  %s = (s32[], f32[8,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %c = s32[] constant(STEP)
  %next = NEXT
  %x = f32[8,8]{1,0} get-tuple-element(%s), index=1
  %y = f32[8,8]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %ar = f32[8,8]{1,0} all-reduce(%y), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add
  ROOT %out = (s32[], f32[8,8]{1,0}) tuple(%next, %ar)
}

%cond (s: (s32[], f32[8,8])) -> pred[] {
  %s = (s32[], f32[8,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %b = s32[] constant(BOUND)
  ROOT %go = GO
}

ENTRY %main (p: f32[8,8], p2: s32[]) -> f32[8,8] {
  %p = f32[8,8]{1,0} parameter(0)
  %p2 = s32[] parameter(1)
  %start = START
  %init = (s32[], f32[8,8]{1,0}) tuple(%start, %p)
  %loop = (s32[], f32[8,8]{1,0}) while(%init), condition=%cond, body=%body
  ROOT %r = f32[8,8]{1,0} get-tuple-element(%loop), index=1
}
"#;

/// [`COUNTER`] from `start` by `step` (`add`) while `compare(%i, %b)` holds in direction `dir`.
fn counter(start: i64, step: i64, dir: &str, bound: i64) -> String {
    counter_with(
        &format!("s32[] constant({start})"),
        "s32[] add(%i, %c)",
        step,
        &format!("pred[] compare(%i, %b), direction={dir}"),
        bound,
    )
}

/// [`COUNTER`] with its placeholders filled.
fn counter_with(start: &str, next: &str, step: i64, go: &str, bound: i64) -> String {
    COUNTER
        .replace("START", start)
        .replace("NEXT", next)
        .replace("STEP", &step.to_string())
        .replace("GO", go)
        .replace("BOUND", &bound.to_string())
}

/// The import's error on `text`, as text.
fn import_error(text: &str, options: &ImportOptions) -> String {
    let m = parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    lower(&m, options).unwrap_err().to_string()
}

#[test]
fn evaluated_loops_count_any_direction_and_step() {
    // Closed forms: LT and LE, far beyond the evaluation's 128.
    assert_eq!(count(&counter(0, 1, "LT", 1_000_000)), Ok(1_000_000));
    assert_eq!(count(&counter(3, 4, "LE", 1_000)), Ok(250));
    assert_eq!(count(&counter(10, 1, "LT", 5)), Ok(0));
    // XLA's closed form returns 3 here (a count not below the bound); the loop runs
    // -10, -7, -4, -1: 4 times.
    assert_eq!(count(&counter(-10, 3, "LT", 1)), Ok(4));
    // Evaluated: a negative step, GT, GE, NE.
    assert_eq!(count(&counter(10, -1, "GT", 0)), Ok(10));
    assert_eq!(count(&counter(20, -3, "GE", 5)), Ok(6));
    assert_eq!(count(&counter(0, 1, "NE", 7)), Ok(7));
    // A subtract, and the constant on the left of the comparison.
    let sub = counter_with(
        "s32[] constant(10)",
        "s32[] subtract(%i, %c)",
        2,
        "pred[] compare(%i, %b), direction=GT",
        0,
    );
    assert_eq!(count(&sub), Ok(5));
    let left = counter_with(
        "s32[] constant(0)",
        "s32[] add(%c, %i)",
        1,
        "pred[] compare(%b, %i), direction=GT",
        5,
    );
    assert_eq!(count(&left), Ok(5));
    // The initial value: one op of constants is evaluated, a copy looked through.
    let start = counter_with(
        "s32[] copy(s32[] constant(4))",
        "s32[] add(%i, %c)",
        1,
        "pred[] compare(%i, %b), direction=LT",
        10,
    );
    assert_eq!(count(&start), Ok(6));
    // Evaluated up to 128 iterations (XLA's limit), not beyond.
    assert_eq!(count(&counter(0, 1, "NE", 128)), Ok(128));
    let u = count(&counter(0, 1, "NE", 129)).unwrap_err();
    assert_eq!(
        u,
        Unknown::BeyondEvaluation {
            index: 0,
            init: 0,
            last: 129
        }
    );
    assert!(u.to_string().contains("runs longer, or never ends"), "{u}");
}

#[test]
fn constant_conditions_and_loops_that_never_end() {
    let never = counter_with(
        "s32[] constant(0)",
        "s32[] add(%i, %c)",
        1,
        "pred[] constant(false)",
        0,
    );
    assert_eq!(count(&never), Ok(0));
    let forever = never.replace("constant(false)", "constant(true)");
    assert_eq!(count(&forever), Err(Unknown::AlwaysTrue));
    let e = import_error(&forever, &ImportOptions::default());
    assert!(
        e.contains("while loop `%loop` has no known trip count: its condition is `constant(true)`: it never ends"),
        "{e}"
    );
    // A step of 0: the counter comes back to 0 while `0 < 10`.
    assert_eq!(
        count(&counter(0, 0, "LT", 10)),
        Err(Unknown::NeverEnds { index: 0, value: 0 })
    );
    // 0, 1, 2, 0, ...: a cycle below the bound (the update a fusion of `(i + 1) % 3`).
    let cycle = counter_with(
        "s32[] constant(0)",
        "s32[] fusion(%i, %c), kind=kLoop, calls=%inc_mod",
        3,
        "pred[] compare(%i, %b), direction=LT",
        10,
    )
    .replace("%body (s:", INC_MOD);
    assert_eq!(
        count(&cycle),
        Err(Unknown::NeverEnds { index: 0, value: 0 })
    );
    let e = import_error(&cycle, &ImportOptions::default());
    assert!(
        e.contains("it never ends: its induction variable (state element 0) comes back to 0"),
        "{e}"
    );
}

/// `(a + 1) % m`, and the start of [`COUNTER`]'s body after it.
const INC_MOD: &str = r#"%inc_mod (a: s32[], m: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %m = s32[] parameter(1)
  %one = s32[] constant(1)
  %a1 = s32[] add(%a, %one)
  ROOT %r = s32[] remainder(%a1, %m)
}

%body (s:"#;

#[test]
fn loops_without_a_count_say_why() {
    // The initial value is a parameter of the step.
    let text = counter_with(
        "s32[] copy(%p2)",
        "s32[] add(%i, %c)",
        1,
        "pred[] compare(%i, %b), direction=LT",
        10,
    );
    let e = import_error(&text, &ImportOptions::default());
    assert!(
        e.contains(
            "while loop `%loop` has no known trip count: the initial value of its induction \
             variable (state element 0), `%p2`, is not a constant: `%p2` is a parameter of \
             `%main`"
        ),
        "{e}"
    );
    assert!(
        e.contains("`--trip-count loop=N`") && e.contains("`--unknown-trip-count N`"),
        "{e}"
    );
    // The bound is carried in the loop.
    assert_eq!(count(CARRIED), Err(Unknown::SeveralElements(vec![0, 1])));
    let e = import_error(CARRIED, &ImportOptions::default());
    assert!(
        e.contains("a bound carried in the loop is not a constant"),
        "{e}"
    );
    // The condition is a flag the body computes from the data.
    let u = count(FLAG).unwrap_err();
    assert!(
        matches!(&u, Unknown::DataDependent { index: Some(0), why } if why.contains("`%go`")),
        "{u:?}"
    );
    let e = import_error(FLAG, &ImportOptions::default());
    assert!(
        e.contains("its condition is data-dependent: state element 0"),
        "{e}"
    );
    // The state is no tuple: XLA's analysis reads none.
    let e = import_error(NOT_TUPLE, &ImportOptions::default());
    assert!(
        e.contains("its initial state `%x` is not a `tuple` instruction"),
        "{e}"
    );
}

/// `i < n` with `n` carried in the loop state.
const CARRIED: &str = r#"HloModule carried

%body (s: (s32[], s32[])) -> (s32[], s32[]) {
  %s = (s32[], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %out = (s32[], s32[]) tuple(%next, %n)
}

%cond (s: (s32[], s32[])) -> pred[] {
  %s = (s32[], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] get-tuple-element(%s), index=1
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (n: s32[]) -> (s32[], s32[]) {
  %n = s32[] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], s32[]) tuple(%zero, %n)
  ROOT %loop = (s32[], s32[]) while(%init), condition=%cond, body=%body
}
"#;

/// Runs while the body's sum of squares stays above 1: the condition is a flag in the state.
const FLAG: &str = r#"HloModule flag

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%body (s: (pred[], f32[8])) -> (pred[], f32[8]) {
  %s = (pred[], f32[8]{0}) parameter(0)
  %v = f32[8]{0} get-tuple-element(%s), index=1
  %sq = f32[8]{0} multiply(%v, %v)
  %zero = f32[] constant(0)
  %sum = f32[] reduce(%sq, %zero), dimensions={0}, to_apply=%add
  %tol = f32[] constant(1)
  %go = pred[] compare(%sum, %tol), direction=GT
  ROOT %out = (pred[], f32[8]{0}) tuple(%go, %sq)
}

%cond (s: (pred[], f32[8])) -> pred[] {
  %s = (pred[], f32[8]{0}) parameter(0)
  ROOT %go = pred[] get-tuple-element(%s), index=0
}

ENTRY %main (p: f32[8]) -> (pred[], f32[8]) {
  %p = f32[8]{0} parameter(0)
  %t = pred[] constant(true)
  %init = (pred[], f32[8]{0}) tuple(%t, %p)
  ROOT %loop = (pred[], f32[8]{0}) while(%init), condition=%cond, body=%body
}
"#;

/// A loop whose state is one scalar, not a tuple.
const NOT_TUPLE: &str = r#"HloModule scalar_state

%body (i: s32[]) -> s32[] {
  %i = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %next = s32[] add(%i, %one)
}

%cond (i: s32[]) -> pred[] {
  %i = s32[] parameter(0)
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main () -> s32[] {
  %x = s32[] constant(0)
  ROOT %loop = s32[] while(%x), condition=%cond, body=%body
}
"#;

#[test]
fn unknown_trip_count_counts_every_unread_loop_and_warns() {
    let options = ImportOptions {
        unknown_trip_count: Some(3),
        ..ImportOptions::default()
    };
    let m = parse(FLAG).unwrap();
    let (g, report) = lower(&m, &options).unwrap();
    assert!(g.find("loop.it2.sq").is_some() && g.find("loop.it3.sq").is_none());
    let warning = report
        .warnings
        .iter()
        .find(|w| w.contains("`%loop`"))
        .unwrap_or_else(|| panic!("{:?}", report.warnings));
    assert!(
        warning.contains("has no known trip count (its condition is data-dependent")
            && warning.contains("counted as 3 iteration(s)"),
        "{warning}"
    );
    // A count given by name wins, and warns of nothing.
    let named = ImportOptions {
        trip_counts: [("loop".to_string(), 1)].into(),
        ..options.clone()
    };
    let (g, report) = lower(&m, &named).unwrap();
    assert!(g.find("loop.it0.sq").is_some() && g.find("loop.it1.sq").is_none());
    assert!(report.warnings.iter().all(|w| !w.contains("`%loop`")));
    // A count read from the loop wins too.
    let text = counter(0, 1, "LT", 2);
    let t = count_with(&text, &options).unwrap();
    assert_eq!((t.n, t.unread), (2, None));
    // Without the option the loop is the error.
    let e = import_error(FLAG, &ImportOptions::default());
    assert!(e.contains("has no known trip count"), "{e}");
}

#[test]
fn a_loop_too_long_to_unroll_is_kept_and_costed_n_times() {
    let unrolled = parse(&counter(0, 1, "LT", 2)).unwrap();
    let (small, _) = lower(&unrolled, &ImportOptions::default()).unwrap();
    let long = parse(&counter(0, 1, "LT", 1_000_000)).unwrap();
    let (g, report) = lower(&long, &ImportOptions::default()).unwrap();
    // One iteration's ops: the counter's add, the dot and the all-reduce.
    assert_eq!(
        g.len(),
        3,
        "{:?}",
        g.ops().map(|o| &o.name).collect::<Vec<_>>()
    );
    let one = |name: &str| small.op(small.find(name).unwrap()).kind.clone();
    let kept = |name: &str| g.op(g.find(name).unwrap()).kind.clone();
    match (one("loop.it0.y"), kept("loop.body.y")) {
        (
            OpKind::Compute {
                flops: f1,
                bytes: b1,
                ..
            },
            OpKind::Compute { flops, bytes, .. },
        ) => assert_eq!((flops, bytes), (f1 * 1_000_000, b1 * 1_000_000)),
        other => panic!("{other:?}"),
    }
    match (one("loop.it0.ar"), kept("loop.body.ar")) {
        (OpKind::Collective { bytes: b1, .. }, OpKind::Collective { bytes, .. }) => {
            assert_eq!(bytes, b1 * 1_000_000)
        }
        other => panic!("{other:?}"),
    }
    assert!(g
        .predecessors(g.find("loop.body.ar").unwrap())
        .contains(&g.find("loop.body.y").unwrap()));
    let warning = report
        .warnings
        .iter()
        .find(|w| w.contains("`%loop`"))
        .unwrap_or_else(|| panic!("{:?}", report.warnings));
    assert!(
        warning.contains("runs 1000000 iterations")
            && warning.contains("`loop.body.*`, 3 ops, 1 of them collectives")
            && warning.contains("cost 1000000 times theirs"),
        "{warning}"
    );
    // The limit decides: 10 iterations of 8 instructions pass 40.
    let ten = parse(&counter(0, 1, "LT", 10)).unwrap();
    let tight = ImportOptions {
        max_unrolled: 40,
        ..ImportOptions::default()
    };
    let (g10, _) = lower(&ten, &tight).unwrap();
    assert!(g10.find("loop.body.y").is_some() && g10.find("loop.it0.y").is_none());
    let (g10, _) = lower(&ten, &ImportOptions::default()).unwrap();
    assert!(g10.find("loop.it9.y").is_some() && g10.find("loop.body.y").is_none());
}

#[test]
fn the_exporter_refuses_a_kept_loop() {
    let long = parse(&counter(0, 1, "LT", 1_000_000)).unwrap();
    let options = ImportOptions::default();
    let (g, _) = lower(&long, &options).unwrap();
    let plan = program_order(&g).unwrap();
    let timeline = simulate(&g, &plan, &vec![100; g.len()], 1.1).unwrap();
    let e = export(&long, &g, &plan, &timeline, &options).unwrap_err();
    match &e {
        ExportError::Unsupported {
            instruction,
            reason,
        } => {
            assert_eq!(instruction, "loop");
            assert!(
                reason.contains("keeps this while loop of 1000000 iterations")
                    && reason.contains("the exporter writes unrolled loops only"),
                "{reason}"
            );
        }
        other => panic!("{other}"),
    }
    // The same loop short enough to unroll exports.
    let short = parse(&counter(0, 1, "LT", 3)).unwrap();
    let (g, _) = lower(&short, &options).unwrap();
    let plan = program_order(&g).unwrap();
    let timeline = simulate(&g, &plan, &vec![100; g.len()], 1.1).unwrap();
    let written = export(&short, &g, &plan, &timeline, &options).unwrap();
    assert!(written.entry_instructions > 0);
}

// ---- The modules of XLA's `xla/hlo/analysis/while_loop_analysis_test.cc`, verbatim.

/// The module of XLA's `WhileLoopAnalysisTest::MakeWhileLoopAndGetTripCount`, with
/// `{{INIT}}`, `{{LIMIT}}`, `{{STEP}}` and `{{COMP_DIR}}` to fill.
const TRIVIAL_TEMPLATE: &str = r#"
  HloModule ModuleWithWhile

    body {
      p_body = (f32[2], s32[]) parameter(0)
      val = f32[2] get-tuple-element(p_body), index=0
      index = s32[] get-tuple-element(p_body), index=1
      one = s32[] constant({{STEP}})
      inc = s32[] add(index, one)
      ROOT root = (f32[2], s32[]) tuple(val, inc)
    }

    condition {
      p_cond = (f32[2], s32[]) parameter(0)
      gte = s32[] get-tuple-element(p_cond), index=1
      const = s32[] constant({{LIMIT}})
      ROOT result = pred[] compare(gte, const), direction={{COMP_DIR}}
    }

    ENTRY entry {
      param.0 = f32[2] parameter(0)
      param.1 = s32[] constant({{INIT}})
      while_init = (f32[2], s32[]) tuple(param.0, param.1)
      ROOT while = (f32[2], s32[]) while(while_init), condition=condition, body=body
    }
  "#;

/// XLA's `WhileLoopAnalysisTest.SingleIterationUpperBound`.
const SINGLE_ITERATION_UPPER_BOUND: &str = r#"
    HloModule ModuleWithWhile

    body {
      p_body = (f32[2], s32[]) parameter(0)
      val = f32[2] get-tuple-element(p_body), index=0
      const = s32[] constant(-1)
      ROOT root = (f32[2], s32[]) tuple(val, const)
    }

    condition {
      p_cond = (f32[2], s32[]) parameter(0)
      gte = s32[] get-tuple-element(p_cond), index=1
      const = s32[] constant(42)
      ROOT result = pred[] compare(gte, const), direction=EQ
    }

    ENTRY entry {
      param.0 = f32[2] parameter(0)
      param.1 = s32[] parameter(1)
      while_init = (f32[2], s32[]) tuple(param.0, param.1)
      ROOT while = (f32[2], s32[]) while(while_init), condition=condition, body=body
    }"#;

/// XLA's `WhileLoopAnalysisTest.SimpleLoopWithCustomCallNonTuple`.
const SIMPLE_LOOP_WITH_CUSTOM_CALL_NON_TUPLE: &str = r#"
  HloModule SimpleLoop
  SimpleLoop.body {
    loop_var.1 = (s32[]{:T(128)}, s32[3]{0}) parameter(0)
    custom-call.1 = (s32[]{:T(128)}, s32[3]{0}) custom-call(loop_var.1), custom_call_target="CustomCallStart"
    get-tuple-element.1 = s32[]{:T(128)} get-tuple-element(custom-call.1), index=0
    constant.1 = s32[]{:T(128)} constant(1)
    idx = s32[]{:T(128)} add(get-tuple-element.1, constant.1)
    get-tuple-element.2 = s32[3]{0} get-tuple-element(custom-call.1), index=1
    output = s32[3]{0} add(get-tuple-element.2, get-tuple-element.2)
    ROOT custom-call.2 = (s32[]{:T(128)}, s32[3]{0}) custom-call(idx, output), custom_call_target="CustomCallEnd"
  }
  SimpleLoop.condition {
    loop_var.2 = (s32[]{:T(128)}, s32[3]{0}) parameter(0)
    get-tuple-element.5 = s32[] get-tuple-element(loop_var.2), index=0
    constant.2 = s32[]{:T(128)} constant(5)
    ROOT less-than = pred[] compare(get-tuple-element.5, constant.2), direction=LT
  }
  ENTRY SimpleLoop {
    constant.3 = s32[]{:T(128)} constant(0)
    constant.4 = s32[3]{0} constant({0, 1, 2})
    tuple.1 = (s32[]{:T(128)}, s32[3]{0}) tuple(constant.3, constant.4)
    ROOT while = (s32[]{:T(128)}, s32[3]{0}) while(tuple.1), condition=
      SimpleLoop.condition, body=SimpleLoop.body
  }
  "#;

/// XLA's `WhileLoopAnalysisTest.SimpleLoopWithCustomCall`.
const SIMPLE_LOOP_WITH_CUSTOM_CALL: &str = r#"
  HloModule SimpleLoop
  SimpleLoop.body {
    loop_var.1 = (s32[]{:T(128)}, s32[3]{0}) parameter(0)
    custom-call.1 = (s32[]{:T(128)}, s32[3]{0}) custom-call(loop_var.1), custom_call_target="CustomCallStart"
    get-tuple-element.1 = s32[]{:T(128)} get-tuple-element(custom-call.1), index=0
    constant.1 = s32[]{:T(128)} constant(1)
    idx = s32[]{:T(128)} add(get-tuple-element.1, constant.1)
    get-tuple-element.2 = s32[3]{0} get-tuple-element(custom-call.1), index=1
    output = s32[3]{0} add(get-tuple-element.2, get-tuple-element.2)
    tuple = (s32[]{:T(128)}, s32[3]{0}) tuple(idx, output)
    ROOT custom-call.2 = (s32[]{:T(128)}, s32[3]{0}) custom-call(tuple), custom_call_target="CustomCallEnd"
  }
  SimpleLoop.condition {
    loop_var.2 = (s32[]{:T(128)}, s32[3]{0}) parameter(0)
    get-tuple-element.3 = s32[] get-tuple-element(loop_var.2), index=0
    constant.2 = s32[]{:T(128)} constant(5)
    ROOT less-than = pred[] compare(get-tuple-element.3, constant.2), direction=LT
  }
  ENTRY SimpleLoop {
    constant.3 = s32[]{:T(128)} constant(0)
    constant.4 = s32[3]{0} constant({0, 1, 2})
    tuple.1 = (s32[]{:T(128)}, s32[3]{0}) tuple(constant.3, constant.4)
    ROOT while = (s32[]{:T(128)}, s32[3]{0}) while(tuple.1), condition=
      SimpleLoop.condition, body=SimpleLoop.body
  }
  "#;

/// XLA's `WhileLoopAnalysisTest.NoUpperBound`.
const NO_UPPER_BOUND: &str = r#"
    HloModule ModuleWithWhile

    body {
      p_body = (f32[2], s32[]) parameter(0)
      val = f32[2] get-tuple-element(p_body), index=0
      const = s32[] constant(42)
      ROOT root = (f32[2], s32[]) tuple(val, const)
    }

    condition {
      p_cond = (f32[2], s32[]) parameter(0)
      gte = s32[] get-tuple-element(p_cond), index=1
      const = s32[] constant(42)
      ROOT result = pred[] compare(gte, const), direction=EQ
    }

    ENTRY entry {
      param.0 = f32[2] parameter(0)
      param.1 = s32[] parameter(1)
      while_init = (f32[2], s32[]) tuple(param.0, param.1)
      ROOT while = (f32[2], s32[]) while(while_init), condition=condition, body=body
    }"#;

/// XLA's `WhileLoopAnalysisTest.NonScalarUpdateOp`.
const NON_SCALAR_UPDATE_OP: &str = r#"
    HloModule test, replica_count=2
    add {
      param.3 = s32[] parameter(0)
      param.4 = s32[] parameter(1)
      ROOT add = add(param.3, param.4)
    }
    body {
      param.0 = (s32[], s32[]) parameter(0)
      p0.1 = s32[] get-tuple-element(param.0), index=0
      p1.1 = s32[] get-tuple-element(param.0), index=1
      update = s32[] all-reduce(p0.1), replica_groups={{0,1}}, to_apply=add
      ROOT tuple = (s32[], s32[]) tuple(update, p1.1)
    }
    condition {
      param.2 = (s32[], s32[]) parameter(0)
      p0.2 = s32[] get-tuple-element(param.2), index=0
      c4 = s32[] constant(4)
      ROOT compare = pred[] compare(p0.2, c4), direction=LT
    }
    ENTRY entry {
      c0 = s32[] constant(0)
      data = s32[] parameter(0)
      tuple = (s32[], s32[]) tuple(c0, data)
      ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
    }
  "#;

/// XLA's `WhileLoopAnalysisTest.UpdateOnIndVarCopySuccess`.
const UPDATE_ON_IND_VAR_COPY_SUCCESS: &str = r#"
    HloModule test, replica_count=2
    body {
      param.0 = (s32[], s32[]) parameter(0)
      p0.1 = s32[] get-tuple-element(param.0), index=0
      p1.1 = s32[] get-tuple-element(param.0), index=1
      copy0.1 = s32[] copy(p0.1)
      const = s32[] constant(1)
      add = s32[] add(copy0.1, const)
      ROOT tuple = (s32[], s32[]) tuple(add, p1.1)
    }
    condition {
      param.2 = (s32[], s32[]) parameter(0)
      p0.2 = s32[] get-tuple-element(param.2), index=0
      c4 = s32[] constant(4)
      ROOT compare = pred[] compare(p0.2, c4), direction=LT
    }
    ENTRY entry {
      c0 = s32[] constant(0)
      data = s32[] parameter(0)
      tuple = (s32[], s32[]) tuple(c0, data)
      ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
    }
  "#;

/// XLA's `WhileLoopAnalysisTest.IndVarInitialiationNotConstantSuccess`.
const IND_VAR_INITIALIATION_NOT_CONSTANT_SUCCESS: &str = r#"
    HloModule test, replica_count=2
    body {
      param.0 = (s32[], s32[]) parameter(0)
      p0.1 = s32[] get-tuple-element(param.0), index=0
      p1.1 = s32[] get-tuple-element(param.0), index=1
      const = s32[] constant(1)
      add = s32[] add(p0.1, const)
      ROOT tuple = (s32[], s32[]) tuple(add, p1.1)
    }
    condition {
      param.2 = (s32[], s32[]) parameter(0)
      p0.2 = s32[] get-tuple-element(param.2), index=0
      c4 = s32[] constant(4)
      ROOT compare = pred[] compare(p0.2, c4), direction=LT
    }
    ENTRY entry {
      c0 = s32[] constant(0)
      copy0.0 = s32[] copy(c0)
      data = s32[] parameter(0)
      tuple = (s32[], s32[]) tuple(copy0.0, data)
      ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
    }
  "#;

/// XLA's `WhileLoopAnalysisTest.FusedUpdateOp`.
const FUSED_UPDATE_OP: &str = r#"
  HloModule test, replica_count=2
  add {
    param.3 = s32[] parameter(0)
    param.4 = s32[] parameter(1)
    ROOT add = add(param.3, param.4)
  }
  body {
    param.0 = (s32[], s32[]) parameter(0)
    p0.1 = s32[] get-tuple-element(param.0), index=0
    p1.1 = s32[] get-tuple-element(param.0), index=1
    c1 = s32[] constant(1)
    update = s32[] fusion(p0.1, c1), kind=kInput, calls=add
    ROOT tuple = (s32[], s32[]) tuple(update, p1.1)
  }
  condition {
    param.2 = (s32[], s32[]) parameter(0)
    p0.2 = s32[] get-tuple-element(param.2), index=0
    c4 = s32[] constant(4)
    ROOT compare = pred[] compare(p0.2, c4), direction=LT
  }
  ENTRY entry {
    c0 = s32[] constant(0)
    data = s32[] parameter(0)
    tuple = (s32[], s32[]) tuple(c0, data)
    ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
  }
  "#;

/// XLA's `WhileLoopAnalysisTest.NonScalarConditionOp`.
const NON_SCALAR_CONDITION_OP: &str = r#"
    HloModule test, replica_count=2
    add {
      param.3 = s32[] parameter(0)
      param.4 = s32[] parameter(1)
      ROOT add = add(param.3, param.4)
    }
    body {
      param.0 = (s32[], s32[]) parameter(0)
      p0.1 = s32[] get-tuple-element(param.0), index=0
      p1.1 = s32[] get-tuple-element(param.0), index=1
      c1 = s32[] constant(1)
      update = s32[] add(p0.1, c1)
      ROOT tuple = (s32[], s32[]) tuple(update, p1.1)
    }
    fused_computation {
      param.5 = s32[] parameter(0)
      param.6 = s32[] parameter(1)
      all-reduce.1 = s32[] all-reduce(param.5), replica_groups={{0,1}}, to_apply=add
      ROOT compare = pred[] compare(all-reduce.1, param.6), direction=LT
    }
    condition {
      param.2 = (s32[], s32[]) parameter(0)
      p0.2 = s32[] get-tuple-element(param.2), index=0
      c4 = s32[] constant(4)
      ROOT compare = pred[] call(p0.2, c4), to_apply=fused_computation
    }
    ENTRY entry {
      c0 = s32[] constant(0)
      data = s32[] parameter(0)
      tuple = (s32[], s32[]) tuple(c0, data)
      ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
    }
  "#;

/// XLA's `WhileLoopAnalysisTest.IndvarWithNonScalarShape`.
const INDVAR_WITH_NON_SCALAR_SHAPE: &str = r#"
  HloModule test

  loop.body {
    loop_var.1 = (s32[2]{0:T(128)}, s32[1,1,1,4,3,5]{5,4,3,2,1,0}) parameter(0)
    get-tuple-element.1 = s32[2]{0:T(128)} get-tuple-element(loop_var.1), index=0
    get-tuple-element.2 = s32[1,1,1,4,3,5]{5,4,3,2,1,0} get-tuple-element(loop_var.1), index=1
    iota = s32[4,3,5]{2,1,0} iota(), iota_dimension=0
    bitcast.12855 = s32[1,1,1,4,3,5]{5,4,3,2,1,0} bitcast(iota)
    add.40974 = s32[1,1,1,4,3,5]{5,4,3,2,1,0} add(get-tuple-element.2, bitcast.12855)
    constant.1 = s32[2]{0:T(128)} constant({1, 1})
    idx = s32[2]{0:T(128)} add(get-tuple-element.1, constant.1)
    ROOT tuple = (s32[2]{0:T(128)}, s32[1,1,1,4,3,5]{5,4,3,2,1,0}) tuple(idx, add.40974)
  }

  loop.condition {
    loop_var.2 = (s32[2]{0:T(128)}, s32[1,1,1,4,3,5]{5,4,3,2,1,0}) parameter(0)
    get-tuple-element.3 = s32[2]{0:T(128)} get-tuple-element(loop_var.2), index=0
    slice = s32[1]{0:T(128)} slice(get-tuple-element.3), slice={[0:1]}
    constant.2 = s32[1]{0:T(128)} constant({4})
    less-than = pred[1]{0:T(128)} compare(slice, constant.2), direction=LT
    ROOT bitcast = pred[]{:T(128)} bitcast(less-than)
  }

  ENTRY %main {
    first_idx = s32[2]{0:T(128)} constant({0, 1})
    zeros32 = s32[]{:T(128)} constant(0)
    broadcast = s32[1,1,1,4,3,5]{5,4,3,2,1,0} broadcast(zeros32)
    input = (s32[2]{0:T(128)}, s32[1,1,1,4,3,5]{5,4,3,2,1,0}) tuple(first_idx, broadcast)
    ROOT while = (s32[2]{0:T(128)}, s32[1,1,1,4,3,5]{5,4,3,2,1,0}) while(input), condition=loop.condition, body=loop.body
  }
  "#;

/// XLA's `WhileLoopAnalysisTest.FusedConditionOp`.
const FUSED_CONDITION_OP: &str = r#"
  HloModule test, replica_count=2
  add {
    param.3 = s32[] parameter(0)
    param.4 = s32[] parameter(1)
    ROOT add = add(param.3, param.4)
  }
  body {
    param.0 = (s32[], s32[]) parameter(0)
    p0.1 = s32[] get-tuple-element(param.0), index=0
    p1.1 = s32[] get-tuple-element(param.0), index=1
    c1 = s32[] constant(1)
    update = s32[] add(p0.1, c1)
    ROOT tuple = (s32[], s32[]) tuple(update, p1.1)
  }
  fused_computation {
    param.5 = s32[] parameter(0)
    param.6 = s32[] parameter(1)
    ROOT compare = pred[] compare(param.5, param.6), direction=LT
  }
  condition {
    param.2 = (s32[], s32[]) parameter(0)
    p0.2 = s32[] get-tuple-element(param.2), index=0
    c4 = s32[] constant(4)
    ROOT compare = pred[] fusion(p0.2, c4), kind=kInput, calls=fused_computation
  }
  ENTRY entry {
    c0 = s32[] constant(0)
    data = s32[] parameter(0)
    tuple = (s32[], s32[]) tuple(c0, data)
    ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
  }
  "#;

/// XLA's `WhileLoopAnalysisTest.AvoidBruteForceForHugeParams`.
const AVOID_BRUTE_FORCE_FOR_HUGE_PARAMS: &str = r#"
  HloModule test
  fused_comp {
    p.0 = pred[100000000]{0} parameter(0)
    p.1 = s32[] parameter(1)
    dynamic-slice = pred[1]{0} constant({false})
    ROOT dus = pred[100000000]{0} dynamic-update-slice(p.0, dynamic-slice, p.1)
  }
  body {
    param.2 = (pred[100000000], s32[]) parameter(0)
    gte.1 = pred[100000000] get-tuple-element(param.2), index=0
    iter = s32[] get-tuple-element(param.2), index=1
    fusion = pred[100000000] call(gte.1,iter), to_apply=fused_comp
    c.1 = s32[] constant(1)
    add = s32[] add(iter, c.1)
    ROOT tuple = tuple(fusion, add)
  }
  or {
    x = pred[] parameter(0)
    y = pred[] parameter(1)
    ROOT res = pred[] or(x, y)
  }
  condition {
    param.1 = (pred[100000000], s32[]) parameter(0)
    gte = pred[100000000] get-tuple-element(param.1), index=0
    false.1 = pred[] constant(false)
    ROOT any = pred[] reduce(gte, false.1), dimensions={0}, to_apply=or
  }

  ENTRY main {
    true.1 = pred[] constant(true)
    param.0 = pred[100000000] broadcast(true.1)
    c.0 = s32[] constant(0)
    tuple = tuple(param.0, c.0)
    while = while(tuple), body=body, condition=condition
    ROOT iter = s32[] get-tuple-element(while), index=1
  }"#;

/// XLA's `WhileLoopAnalysisTest.LoopFusionForLoopVariable`.
const LOOP_FUSION_FOR_LOOP_VARIABLE: &str = r#"
  HloModule test
  fused_add.11 {
    param_0.968 = s32[] parameter(0)
    constant_1239_1 = s32[] constant(1)
    ROOT add.1041.1 = s32[] add(param_0.968, constant_1239_1)
  }
  fused_add.11.clone.2 {
    param_0.2169 = s32[] parameter(0)
    constant_1239_4 = s32[] constant(1)
    ROOT add.1041.4 = s32[] add(param_0.2169, constant_1239_4)
  }
  body {
    param.1 = (s32[], s32[]) parameter(0)
    loop_iter = s32[] get-tuple-element(param.1), index=0
    data = s32[] get-tuple-element(param.1), index=1
    loop_add_fusion.11 = s32[] fusion(loop_iter), kind=kLoop, calls=fused_add.11
    loop_add_fusion.11.double_buffer_clone = s32[] fusion(loop_add_fusion.11), kind=kLoop, calls=fused_add.11.clone.2
    ROOT tuple = (s32[], s32[]) tuple(loop_add_fusion.11.double_buffer_clone, data)
  }
  fused_compare {
    param_0.987 = s32[] parameter(0)
    constant_1238_1 = s32[] constant(7)
    ROOT compare.98.1 = pred[] compare(param_0.987, constant_1238_1), direction=LT
  }
  condition {
    param.2 = (s32[], s32[]) parameter(0)
    loop_iter = s32[] get-tuple-element(param.2), index=0
    ROOT loop_compare_fusion = pred[] fusion(loop_iter), kind=kLoop, calls=fused_compare
  }
  fused_add.12 {
    param_0.968 = s32[] parameter(0)
    constant_1239_1 = s32[] constant(1)
    ROOT add.1041.1 = s32[] add(param_0.968, constant_1239_1)
  }
  ENTRY main {
    data = s32[] parameter(0)
    c.0 = s32[] constant(0)
    c.1 = s32[] constant(1)
    add.1 = s32[] add(c.0, c.1)
    c.0.loop_double_buffer_peeled = s32[] fusion(add.1), kind=kLoop, calls=fused_add.12
    tuple = (s32[], s32[]) tuple(c.0.loop_double_buffer_peeled, data)
    ROOT while = while(tuple), body=body, condition=condition
  }"#;

/// XLA's `WhileLoopAnalysisTest.UpdateIsMultipleOperationsWithConstantOperand`.
const UPDATE_IS_MULTIPLE_OPERATIONS_WITH_CONSTANT_OPERAND: &str = r#"
  HloModule test
  body {
    param.1 = (s32[], s32[8,8]) parameter(0)
    iter.1 = s32[] get-tuple-element(param.1), index=0
    c.1 = s32[] constant(1)
    add.1 = s32[] add(iter.1, c.1)
    add.2 = s32[] add(add.1, c.1)
    data.1 = s32[8,8] get-tuple-element(param.1), index=1
    ROOT tuple = (s32[], s32[8,8]) tuple(add.2, data.1)
  }
  condition {
    param = (s32[], s32[8,8]) parameter(0)
    iter = s32[] get-tuple-element(param), index=0
    c.10 = s32[] constant(10)
    ROOT compare = pred[] compare(iter, c.10), direction=LT
  }
  ENTRY main {
    c.0 = s32[] constant(0)
    data = s32[8,8] parameter(0)
    tuple = tuple(c.0, data)
    ROOT while = while(tuple), body=body, condition=condition
  }"#;

/// XLA's `WhileLoopAnalysisTest.UpdateIsMultipleOperationsWithoutConstantOperand`.
const UPDATE_IS_MULTIPLE_OPERATIONS_WITHOUT_CONSTANT_OPERAND: &str = r#"
  HloModule test
  body {
    param.1 = (s32[], s32[8,8]) parameter(0)
    iter.1 = s32[] get-tuple-element(param.1), index=0
    c.1 = s32[] constant(1)
    add.1 = s32[] add(c.1, c.1)
    add.2 = s32[] add(iter.1, add.1)
    data.1 = s32[8,8] get-tuple-element(param.1), index=1
    ROOT tuple = (s32[], s32[8,8]) tuple(add.2, data.1)
  }
  condition {
    param = (s32[], s32[8,8]) parameter(0)
    iter = s32[] get-tuple-element(param), index=0
    c.10 = s32[] constant(10)
    ROOT compare = pred[] compare(iter, c.10), direction=LT
  }
  ENTRY main {
    c.0 = s32[] constant(0)
    data = s32[8,8] parameter(0)
    tuple = tuple(c.0, data)
    ROOT while = while(tuple), body=body, condition=condition
  }"#;

/// XLA's `WhileLoopAnalysisTest.ConditionIsMultipleOperationsWithConstantOperand`.
const CONDITION_IS_MULTIPLE_OPERATIONS_WITH_CONSTANT_OPERAND: &str = r#"
  HloModule test
  body {
    param.1 = (s32[], s32[8,8]) parameter(0)
    iter.1 = s32[] get-tuple-element(param.1), index=0
    c.1 = s32[] constant(1)
    add.1 = s32[] add(iter.1, c.1)
    data.1 = s32[8,8] get-tuple-element(param.1), index=1
    ROOT tuple = (s32[], s32[8,8]) tuple(add.1, data.1)
  }
  condition {
    param = (s32[], s32[8,8]) parameter(0)
    iter = s32[] get-tuple-element(param), index=0
    c.10 = s32[] constant(10)
    add.10 = s32[] add(iter, c.10)
    ROOT compare = pred[] compare(add.10, c.10), direction=LT
  }
  ENTRY main {
    c.0 = s32[] constant(0)
    data = s32[8,8] parameter(0)
    tuple = tuple(c.0, data)
    ROOT while = while(tuple), body=body, condition=condition
  }"#;

/// XLA's `WhileLoopAnalysisTest.ConditionIsMultipleOperationsWithoutConstantOperand`.
const CONDITION_IS_MULTIPLE_OPERATIONS_WITHOUT_CONSTANT_OPERAND: &str = r#"
  HloModule test
  body {
    param.1 = (s32[], s32[8,8]) parameter(0)
    iter.1 = s32[] get-tuple-element(param.1), index=0
    c.1 = s32[] constant(1)
    add.1 = s32[] add(iter.1, c.1)
    data.1 = s32[8,8] get-tuple-element(param.1), index=1
    ROOT tuple = (s32[], s32[8,8]) tuple(add.1, data.1)
  }
  condition {
    param = (s32[], s32[8,8]) parameter(0)
    iter = s32[] get-tuple-element(param), index=0
    c.5 = s32[] constant(5)
    add.10 = s32[] add(c.5, c.5)
    ROOT compare = pred[] compare(iter, add.10), direction=LT
  }
  ENTRY main {
    c.0 = s32[] constant(0)
    data = s32[8,8] parameter(0)
    tuple = tuple(c.0, data)
    ROOT while = while(tuple), body=body, condition=condition
  }"#;

/// XLA's `WhileLoopAnalysisTest.GetIndvarIndexShouldWorkWhenParamIsCopied`.
const GET_INDVAR_INDEX_SHOULD_WORK_WHEN_PARAM_IS_COPIED: &str = r#"
    HloModule test

    fused_copy {
      param.1 = (s32[],s32[]) parameter(0)
      ROOT copy = (s32[], s32[]) copy(param.1)
    }

    body {
      param.1 = (s32[], s32[]) parameter(0)
      copy_fusion = (s32[], s32[]) fusion(param.1), kind=kInput, calls=fused_copy
      iter.1 = s32[] get-tuple-element(copy_fusion), index=0
      c.1 = s32[] constant(1)
      add.1 = s32[] add(iter.1, c.1)
      data.1 = s32[] get-tuple-element(copy_fusion), index=1
      ROOT tuple = (s32[], s32[]) tuple(add.1, data.1)
    }

    condition {
      param = (s32[], s32[]) parameter(0)
      iter = s32[] get-tuple-element(param), index=0
      c.10 = s32[] constant(10)
      ROOT compare = pred[] compare(iter, c.10), direction=LT
    }

    ENTRY main {
      c0 = s32[] constant(0)
      data = s32[] parameter(0)
      tuple = (s32[], s32[]) tuple(c0, data)
      ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
    }
  "#;

/// XLA's `WhileLoopAnalysisTest.MatchTrivialLoopCountFailsWhenIndvarIsNotIncrementedByConstant` (module 1).
const MATCH_TRIVIAL_LOOP_COUNT_FAILS_WHEN_INDVAR_IS_NOT_INCREMENTED_BY_CONSTANT: &str = r#"
  HloModule test
  body {
    param.1 = (s32[], s32[]) parameter(0)
    iter.1 = s32[] get-tuple-element(param.1), index=0
    data.1 = s32[] get-tuple-element(param.1), index=1
    c.1 = s32[] constant(1)
    add.1 = s32[] add(iter.1, c.1)
    ROOT tuple = (s32[], s32[]) tuple(add.1, data.1)
  }
  condition {
    param = (s32[], s32[]) parameter(0)
    iter = s32[] get-tuple-element(param), index=0
    c.10 = s32[] constant(10)
    ROOT compare = pred[] compare(iter, c.10), direction=LT
  }
  ENTRY main {
    c0 = s32[] constant(0)
    data = s32[] parameter(0)
    tuple = (s32[], s32[]) tuple(c0, data)
    ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
  }"#;

/// XLA's `WhileLoopAnalysisTest.MatchTrivialLoopCountFailsWhenIndvarIsNotIncrementedByConstant` (module 2).
const MATCH_TRIVIAL_LOOP_COUNT_FAILS_WHEN_INDVAR_IS_NOT_INCREMENTED_BY_CONSTANT_2: &str = r#"
  HloModule test
  body {
    param.1 = (s32[], s32[]) parameter(0)
    iter.1 = s32[] get-tuple-element(param.1), index=0
    data.1 = s32[] get-tuple-element(param.1), index=1
    add.1 = s32[] add(iter.1, iter.1)
    ROOT tuple = (s32[], s32[]) tuple(add.1, data.1)
  }
  condition {
    param = (s32[], s32[]) parameter(0)
    iter = s32[] get-tuple-element(param), index=0
    c.10 = s32[] constant(10)
    ROOT compare = pred[] compare(iter, c.10), direction=LT
  }
  ENTRY main {
    c1 = s32[] constant(1)
    data = s32[] parameter(0)
    tuple = (s32[], s32[]) tuple(c1, data)
    ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
  }"#;

/// XLA's `WhileLoopAnalysisTest.MatchTrivialLoopCountWithSimpleArithmeticOnIndvar`.
const MATCH_TRIVIAL_LOOP_COUNT_WITH_SIMPLE_ARITHMETIC_ON_INDVAR: &str = r#"
HloModule ModuleWithWhile
body {
  p_body = (f32[2], s32[]) parameter(0)
  val = f32[2] get-tuple-element(p_body), index=0
  index = s32[] get-tuple-element(p_body), index=1
  one = s32[] constant(1)
  inc = s32[] add(index, one)
  ROOT root = (f32[2], s32[]) tuple(val, inc)
}
condition {
  p_cond = (f32[2], s32[]) parameter(0)
  gte = s32[] get-tuple-element(p_cond), index=1
  const = s32[] constant(10)
  ROOT result = pred[] compare(gte, const), direction=LE
}
ENTRY entry {
  param.0 = f32[2] parameter(0)
  const.0 = s32[] constant(1)
  const.1 = s32[] constant(1)
  add.0 = s32[] add(const.0, const.1)
  while_init = (f32[2], s32[]) tuple(param.0, add.0)
  ROOT while = (f32[2], s32[]) while(while_init), condition=condition, body=body
}
  "#;

/// XLA's `WhileLoopAnalysisTest.GetIndvarIndexShouldWorkWithMultiOutputFusion`.
const GET_INDVAR_INDEX_SHOULD_WORK_WITH_MULTI_OUTPUT_FUSION: &str = r#"
    HloModule test
    fused_multi_output {
      p0 = s32[] parameter(0)
      c1 = s32[] constant(1)
      add = s32[] add(p0, c1)
      sub = s32[] subtract(p0, c1)
      ROOT root = (s32[], s32[]) tuple(add, sub)
    }

    body {
      param.1 = (s32[], s32[]) parameter(0)
      iter = s32[] get-tuple-element(param.1), index=0
      fusion = (s32[], s32[]) fusion(iter), kind=kLoop, calls=fused_multi_output
      new_iter = s32[] get-tuple-element(fusion), index=0
      data = s32[] get-tuple-element(param.1), index=1
      ROOT root = (s32[], s32[]) tuple(new_iter, data)
    }

    condition {
      param.2 = (s32[], s32[]) parameter(0)
      iter.2 = s32[] get-tuple-element(param.2), index=0
      limit = s32[] constant(10)
      ROOT cond = pred[] compare(iter.2, limit), direction=LT
    }

    ENTRY test_computation {
      c0 = s32[] constant(0)
      data = s32[] parameter(0)
      tuple = (s32[], s32[]) tuple(c0, data)
      ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
    }
  "#;

/// XLA's `WhileLoopAnalysisTest.GetIndvarIndexShouldWorkWithNestedFusions`.
const GET_INDVAR_INDEX_SHOULD_WORK_WITH_NESTED_FUSIONS: &str = r#"
    HloModule test
    inner_computation {
      inner_p0 = s32[] parameter(0)
      inner_c1 = s32[] constant(1)
      ROOT inner_add = s32[] add(inner_p0, inner_c1)
    }

    outer_fusion {
      outer_p0 = s32[] parameter(0)
      call_inner = s32[] fusion(outer_p0), kind=kLoop, calls=inner_computation
      ROOT root = (s32[]) tuple(call_inner)
    }

    body {
      param.1 = (s32[], s32[]) parameter(0)
      iter = s32[] get-tuple-element(param.1), index=0
      fusion = (s32[]) fusion(iter), kind=kLoop, calls=outer_fusion
      new_iter = s32[] get-tuple-element(fusion), index=0
      data = s32[] get-tuple-element(param.1), index=1
      ROOT root = (s32[], s32[]) tuple(new_iter, data)
    }

    condition {
      param.2 = (s32[], s32[]) parameter(0)
      iter.2 = s32[] get-tuple-element(param.2), index=0
      limit = s32[] constant(10)
      ROOT cond = pred[] compare(iter.2, limit), direction=LT
    }

    ENTRY test_computation {
      c0 = s32[] constant(0)
      data = s32[] parameter(0)
      tuple = (s32[], s32[]) tuple(c0, data)
      ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
    }
  "#;

/// XLA's `WhileLoopAnalysisTest.GetIndvarIndexShouldFailWithNonScalarOpInMultiOutputFusion`.
const GET_INDVAR_INDEX_SHOULD_FAIL_WITH_NON_SCALAR_OP_IN_MULTI_OUTPUT_FUSION: &str = r#"
    HloModule test
    add {
      param.0 = s32[] parameter(0)
      param.1 = s32[] parameter(1)
      ROOT add = s32[] add(param.0, param.1)
    }

    fused_multi_output {
      p0 = s32[] parameter(0)
      c1 = s32[] constant(1)
      add_val = s32[] add(p0, c1)
      all_reduce = s32[] all-reduce(add_val), replica_groups={{0,1}}, to_apply=add
      ROOT root = (s32[]) tuple(all_reduce)
    }

    body {
      param.1 = (s32[], s32[]) parameter(0)
      iter = s32[] get-tuple-element(param.1), index=0
      fusion = (s32[]) fusion(iter), kind=kLoop, calls=fused_multi_output
      new_iter = s32[] get-tuple-element(fusion), index=0
      data = s32[] get-tuple-element(param.1), index=1
      ROOT root = (s32[], s32[]) tuple(new_iter, data)
    }

    condition {
      param.2 = (s32[], s32[]) parameter(0)
      iter.2 = s32[] get-tuple-element(param.2), index=0
      limit = s32[] constant(10)
      ROOT cond = pred[] compare(iter.2, limit), direction=LT
    }

    ENTRY test_computation {
      c0 = s32[] constant(0)
      data = s32[] parameter(0)
      tuple = (s32[], s32[]) tuple(c0, data)
      ROOT while = (s32[], s32[]) while(tuple), body=body, condition=condition
    }
  "#;

/// XLA's `WhileLoopAnalysisTest.GetIndvarIndexShouldFailWhenIntermediateTupleHasNonScalarOperand`.
const GET_INDVAR_INDEX_SHOULD_FAIL_WHEN_INTERMEDIATE_TUPLE_HAS_NON_SCALAR_OPERAND: &str = r#"
    HloModule test
    body {
      param.1 = (s32[], f32[10]) parameter(0)
      iter = s32[] get-tuple-element(param.1), index=0
      c1 = s32[] constant(1)
      tensor = f32[10] get-tuple-element(param.1), index=1
      intermediate_tuple = (s32[], f32[10]) tuple(iter, tensor)
      iter_from_tuple = s32[] get-tuple-element(intermediate_tuple), index=0
      new_iter = s32[] add(iter_from_tuple, c1)
      ROOT root = (s32[], f32[10]) tuple(new_iter, tensor)
    }

    condition {
      param.2 = (s32[], f32[10]) parameter(0)
      iter.2 = s32[] get-tuple-element(param.2), index=0
      limit = s32[] constant(10)
      ROOT cond = pred[] compare(iter.2, limit), direction=LT
    }

    ENTRY test_computation {
      c0 = s32[] constant(0)
      data = f32[10] parameter(0)
      tuple = (s32[], f32[10]) tuple(c0, data)
      ROOT while = (s32[], f32[10]) while(tuple), body=body, condition=condition
    }
  "#;
