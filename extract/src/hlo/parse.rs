//! The HLO text parser: a byte-level scanner and a recursive-descent parser for the module
//! grammar that XLA's `HloModule::ToString` prints and that XLA's own tests write by hand
//! (reference: `xla/hlo/parser/hlo_parser.cc`).
//!
//! ```text
//! module      ::= 'HloModule' name ':'? (',' attribute)* (computation | table)*
//! computation ::= 'ENTRY'? name ('(' (param (',' param)*)? ')' '->' shape)? '{' instruction+ '}'
//!                 (',' attribute)*
//! param       ::= name ':'? shape
//! instruction ::= 'ROOT'? name '=' rhs (',' attribute)*
//! rhs         ::= shape? opcode '(' operands ')'        -- no shape: inferred, as XLA does
//! operands    ::= (operand (',' operand)*)?             -- raw text for constant, parameter, iota
//! operand     ::= shape? name | rhs                     -- a nested instruction, no attributes
//!               | shape                                 -- no name: dropped, as XLA drops it
//! attribute   ::= ident '=' value                       -- value: raw text, brackets balanced
//!               | ident '=' '{' instruction+ '}'        -- a computation written inline
//! shape       ::= '(' (shape (',' shape)*)? ')' | 'token[]' | 'b(' shape ')'
//!               | dtype '[' (dim (',' dim)*)? ']' layout?
//! dim         ::= '<='? u64
//! layout      ::= '{' (u64 (',' u64)*)? (':' balanced-text)? '}'   -- directly after ']'
//! table       ::= ('FileNames' | 'FunctionNames' | 'FileLocations' | 'StackFrames') (u64 value)*
//! name        ::= '%' [A-Za-z0-9_.-]+ | [A-Za-z_] [A-Za-z0-9_.-]*
//! ```
//!
//! What XLA's parser accepts beyond what its printer writes, and this parser too: a module
//! without `ENTRY` (the last computation is the entry); an instruction without a result
//! shape for the opcodes whose shape XLA infers (`tuple`, `get-tuple-element`, `copy`,
//! elementwise ops, `dot`, `convolution`, `call`, `while`, ...: the shape is inferred from
//! the operands, attributes and called computations, and [`Instruction::shape_text`] holds
//! it printed); instructions nested as operands, `add(f32[] constant(1), maximum(x, y))`
//! (each becomes an instruction of its own before its user, named `opcode.anon`,
//! `opcode.anon.1`, ... as XLA names them); newer XLA's operand shorthand `%t#k` for element
//! `k` of a tuple (hoisted the same way, as `get-tuple-element(%t), index=k`); header
//! attributes over several lines; a
//! parameter without `:`; spaces in `s32 [4]` and before an instruction's layout; buffer
//! shapes `b(f32[2])` (read as the shape they hold); a custom-call's `literal=s32[] 1`;
//! computations written inline where a computation's name would be, `to_apply={ ... }` or
//! `branch_computations={%a, { ... }}` (each becomes a computation of the module, see
//! `inline.rs`); an operand that is a shape without a name, which XLA's parser skips with
//! an error it never reports (`add(%a, f32[], %b)` is `add(%a, %b)` to XLA, and here).
//!
//! [`Instruction::shape_text`]: crate::hlo::Instruction::shape_text
//!
//! Whitespace, newlines, `/* ... */` and `// ...` comments separate tokens anywhere, except
//! that an attribute value outside brackets ends at the end of its line. An attribute value extends to the next comma, whitespace, comment or unmatched
//! closing bracket outside brackets and strings; inside brackets, newlines are whitespace.
//!
//! The parser never panics, runs in time linear in the input, bounds its recursion (tuple
//! shapes, brackets and nested instructions deeper than [`MAX_DEPTH`] are errors), and checks
//! integers and shape sizes for overflow: every parsed shape's [`Shape::bytes`] and
//! [`Shape::elements`] fit in a `u64`. Inferred shapes are bounded too: all of them together
//! hold at most [`INFER_BUDGET`] times the input's length in tuple elements and arrays (so a
//! chain of `t2 = tuple(t1, t1)` cannot grow exponentially).
//!
//! [`Shape::bytes`]: crate::hlo::Shape::bytes
//! [`Shape::elements`]: crate::hlo::Shape::elements

mod computations;
mod infer;
mod inline;
#[cfg(test)]
mod inline_tests;
mod instructions;
mod lexer;
mod shapes;
#[cfg(test)]
mod tests;

use crate::hlo::ast::{Instruction, Module, Pos};
use crate::hlo::HloError;

/// The deepest nesting of tuple shapes, or of brackets in one value, that the parser accepts.
const MAX_DEPTH: usize = 256;

/// Shape nodes (arrays, tuples, tokens) that inferred shapes may hold in all, per byte of
/// input (see the module docs).
const INFER_BUDGET: usize = 16;

/// Opcodes whose parenthesised text is kept raw as [`Instruction::literal`] instead of being
/// read as operands.
///
/// [`Instruction::literal`]: crate::hlo::Instruction::literal
const LITERAL_OPCODES: [&str; 3] = ["constant", "parameter", "iota"];

/// The first character of the provisional name of an instruction nested in another's
/// operands (no name in the text has it); the computation renames it `opcode.anon`.
const NESTED: char = '\u{0}';

/// Keywords that open the stack-frame tables newer XLA versions print between the header and
/// the computations.
const TABLES: [&str; 4] = ["FileNames", "FunctionNames", "FileLocations", "StackFrames"];

/// Parses an HLO text module, as XLA's `HloModule::ToString` prints it (the files that
/// `XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text` writes).
///
/// Checks the syntax, that exactly one computation is `ENTRY`, that computation names are
/// unique in the module and instruction names unique in their computation, and that at most
/// one instruction per computation is `ROOT`. Attribute values are kept as source text (see
/// [`Attribute`]). Errors are [`HloError::Syntax`] with the 1-based line and column of the
/// offending token. Linear time; never panics.
///
/// [`Attribute`]: crate::hlo::Attribute
pub fn parse(text: &str) -> Result<Module, HloError> {
    parse_with(text, &ParseOptions::default())
}

/// What [`parse_with`] may accept beyond [`parse`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// The size an unbounded dynamic dimension (`f32[?,8]`, StableHLO's unbounded
    /// dynamism) is read as. `None` (the default): such a dimension is an error, since no
    /// cost can be computed without a size. The shape's text keeps the `?`.
    pub unbounded_dim_size: Option<u64>,
}

/// [`parse`] with `options`.
pub fn parse_with(text: &str, options: &ParseOptions) -> Result<Module, HloError> {
    let mut parser = Parser::new(text);
    parser.unbounded = options.unbounded_dim_size;
    parser.module()
}

/// Results of the parser.
type PResult<T> = Result<T, HloError>;

/// Whether `c` may appear in a name after its first character.
fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
}

/// Whether `c` may start a name without `%`, a keyword or an attribute name.
fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

/// Whether `dtype` has the syntax of an element type: `[a-z][a-z0-9]*`.
fn is_dtype(dtype: &str) -> bool {
    let mut bytes = dtype.bytes();
    bytes.next().is_some_and(|c| c.is_ascii_lowercase())
        && bytes.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// The closing bracket of an opening one.
fn closer(open: u8) -> u8 {
    match open {
        b'{' => b'}',
        b'[' => b']',
        _ => b')',
    }
}

/// `text`, shortened to about `max` characters for a message.
fn abbreviate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", text.get(..cut).unwrap_or_default()),
        None => text.to_string(),
    }
}

/// The parser's state: the text and a cursor into it.
struct Parser<'a> {
    /// The whole text.
    src: &'a str,
    /// The same, as bytes.
    bytes: &'a [u8],
    /// The cursor: a byte offset, always on a character boundary.
    at: usize,
    /// The last offset converted to a position, and that position (positions are mostly
    /// asked for in increasing order, so converting them costs linear time in all).
    cache: (usize, Pos),
    /// Where the text starts: after a byte-order mark, if any, which takes no column.
    origin: usize,
    /// The opening bracket of the first attribute value of the current computation that
    /// spans several lines: the likely culprit when the computation is not closed.
    multiline: Option<usize>,
    /// Instructions nested in the operands of the instruction being parsed, innermost first,
    /// each with whether its shape is left to infer; named `NESTED` + their index here.
    hoisted: Vec<(Instruction, bool)>,
    /// Nested instructions seen so far in the current computation (their provisional names
    /// count them).
    nested: usize,
    /// Shape nodes that inferred shapes may still hold (see [`INFER_BUDGET`]).
    budget: usize,
    /// Computations written inline in attributes (`to_apply={ ... }`).
    inline: inline::InlineState,
    /// The size of an unbounded dimension `?` ([`ParseOptions::unbounded_dim_size`]).
    unbounded: Option<u64>,
}

impl<'a> Parser<'a> {
    /// A parser at the start of `src` (after a byte-order mark, if any).
    fn new(src: &'a str) -> Self {
        let origin = if src.starts_with('\u{feff}') { 3 } else { 0 };
        Parser {
            src,
            bytes: src.as_bytes(),
            at: origin,
            cache: (origin, Pos { line: 1, column: 1 }),
            origin,
            multiline: None,
            hoisted: Vec::new(),
            nested: 0,
            budget: src.len().saturating_mul(INFER_BUDGET).saturating_add(4096),
            inline: inline::InlineState::default(),
            unbounded: None,
        }
    }
}
