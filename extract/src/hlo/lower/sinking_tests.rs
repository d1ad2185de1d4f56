//! Trip counts beyond the plain counter: loops whose bound or step is carried in the state
//! from a constant, what XLA's `ComputeWhileLoopTripCount` reads once
//! `WhileLoopConstantSinking` has made that element a constant in the condition and the body
//! (`xla/service/while_loop_constant_sinking.cc`), and only then; and counters the body sets
//! to a constant.

use super::trip_count::Unknown;
use super::unroll::trip_count;
use super::*;
use crate::hlo::parse;

/// A loop over state `(i, n, step)`: `BODY` is the body's new `(i, n, step)`, `GO` the
/// condition over `%i` and `%n`, `INIT` the initial state's three operands.
const LOOP: &str = r#"HloModule sink

%body (s: (s32[], s32[], s32[])) -> (s32[], s32[], s32[]) {
  %s = (s32[], s32[], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] get-tuple-element(%s), index=1
  %step = s32[] get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %next = s32[] NEXT
  %n2 = s32[] subtract(%n, %one)
  ROOT %out = (s32[], s32[], s32[]) tuple(BODY)
}

%cond (s: (s32[], s32[], s32[])) -> pred[] {
  %s = (s32[], s32[], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] get-tuple-element(%s), index=1
  %k = s32[] constant(4)
  ROOT %go = pred[] GO
}

ENTRY %main (p: s32[]) -> (s32[], s32[], s32[]) {
  %p = s32[] parameter(0)
  %c0 = s32[] constant(0)
  %c3 = s32[] constant(3)
  %c7 = s32[] constant(7)
  %c10 = s32[] constant(10)
  %copy7 = s32[] copy(%c7)
  %c9 = s32[] multiply(%c3, %c3)
  %c12 = s32[] add(%c9, %c3)
  %init = (s32[], s32[], s32[]) tuple(INIT)
  ROOT %loop = (s32[], s32[], s32[]) while(%init), condition=%cond, body=%body
}
"#;

fn module(next: &str, body: &str, go: &str, init: &str) -> String {
    LOOP.replace("NEXT", next)
        .replace("BODY", body)
        .replace("GO", go)
        .replace("INIT", init)
}

/// The trip count of the module's loop.
fn count(text: &str) -> Result<u64, Unknown> {
    let m = parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let w = m.computations.last().unwrap().instructions.last().unwrap();
    let c = |name: &str| m.computation(name).unwrap();
    trip_count(&m, &ImportOptions::default(), w, c("cond"), c("body")).map(|t| t.n)
}

#[test]
fn a_bound_carried_from_a_constant_is_that_constant() {
    let lt = "compare(%i, %n), direction=LT";
    // The closed form: 0, 1, ... 6 while below 7.
    let text = module("add(%i, %one)", "%next, %n, %step", lt, "%c0, %c7, %c3");
    assert_eq!(count(&text), Ok(7));
    // A step carried too: 0, 3, 6 while below 7.
    let text = module("add(%i, %step)", "%next, %n, %step", lt, "%c0, %c7, %c3");
    assert_eq!(count(&text), Ok(3));
    // The bounded evaluation (`GT`, a `subtract`): down from 10 by 3 while above 3: 10, 7, 4.
    let gt = "compare(%i, %n), direction=GT";
    let text = module(
        "subtract(%i, %step)",
        "%next, %n, %step",
        gt,
        "%c10, %c3, %c3",
    );
    assert_eq!(count(&text), Ok(3));
    // A bound from a copy of a constant or from one op of constants: XLA's GPU pipeline
    // removes the copy and folds the op (algebraic simplifier and constant folding, in the
    // same fixed-point "simplification" pipeline as constant sinking, `gpu_compiler.cc`).
    let text = module("add(%i, %one)", "%next, %n, %step", lt, "%c0, %copy7, %c3");
    assert_eq!(count(&text), Ok(7));
    let text = module("add(%i, %one)", "%next, %n, %step", lt, "%c0, %c9, %c3");
    assert_eq!(count(&text), Ok(9));
}

#[test]
fn only_what_xla_sinks_is_a_constant() {
    let lt = "compare(%i, %n), direction=LT";
    // The body changes the bound: no constant.
    let text = module("add(%i, %one)", "%next, %n2, %step", lt, "%c0, %c7, %c3");
    assert_eq!(count(&text), Err(Unknown::SeveralElements(vec![0, 1])));
    // The bound starts from a parameter of the step.
    let text = module("add(%i, %one)", "%next, %n, %step", lt, "%c0, %p, %c3");
    assert_eq!(count(&text), Err(Unknown::SeveralElements(vec![0, 1])));
    // Two ops of constants: XLA's fixed-point simplification would fold them; here, as in
    // step 2, one op of constants is evaluated and no more.
    let text = module("add(%i, %one)", "%next, %n, %step", lt, "%c0, %c12, %c3");
    assert_eq!(count(&text), Err(Unknown::SeveralElements(vec![0, 1])));
    // A step that is no constant leaves the update reading two elements.
    let text = module("add(%i, %step)", "%next, %n, %next", lt, "%c0, %c7, %c3");
    assert!(
        matches!(
            count(&text),
            Err(Unknown::UpdateNotInduction { index: 0, .. })
        ),
        "{:?}",
        count(&text)
    );
}

#[test]
fn a_condition_on_sunk_constants_alone_runs_zero_times_or_never_ends() {
    let text = module(
        "add(%i, %one)",
        "%next, %n, %step",
        "compare(%n, %k), direction=LT",
        "%c0, %c7, %c3",
    );
    assert_eq!(count(&text), Ok(0));
    let text = module(
        "add(%i, %one)",
        "%next, %n, %step",
        "compare(%n, %k), direction=LT",
        "%c0, %c3, %c3",
    );
    let e = count(&text).unwrap_err();
    assert_eq!(e, Unknown::Invariant(vec![1]));
    assert!(e.to_string().starts_with("it never ends"), "{e}");
}

#[test]
fn a_pred_constant_written_as_a_number_is_true_or_false() {
    for (literal, want) in [("0", Ok(0)), ("1", Err(Unknown::AlwaysTrue))] {
        let text = module(
            "add(%i, %one)",
            "%next, %n, %step",
            &format!("constant({literal})"),
            "%c0, %c7, %c3",
        );
        assert_eq!(count(&text), want, "pred[] constant({literal})");
    }
}

/// A body that sets the counter to a constant: 0 iterations, 1, or never ending, by the
/// condition on the initial value and on that constant (XLA bounds such a loop by one
/// iteration and reads no count).
#[test]
fn a_counter_set_to_a_constant_runs_zero_times_once_or_for_ever() {
    let below_k = "compare(%i, %k), direction=LT";
    let set_5 = "constant(5)";
    let body = "%next, %n, %step";
    assert_eq!(count(&module(set_5, body, below_k, "%c0, %c7, %c3")), Ok(1));
    assert_eq!(
        count(&module(set_5, body, below_k, "%c10, %c7, %c3")),
        Ok(0)
    );
    let below_n = "compare(%i, %n), direction=LT";
    assert_eq!(
        count(&module(set_5, body, below_n, "%c0, %c7, %c3")),
        Err(Unknown::NeverEnds { index: 0, value: 5 })
    );
    // From a parameter, the first test is unknown: no count, as before.
    assert!(matches!(
        count(&module(set_5, body, below_k, "%p, %c7, %c3")),
        Err(Unknown::UpdateNotInduction { index: 0, .. })
    ));
}
