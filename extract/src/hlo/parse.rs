//! The HLO text parser: a byte-level scanner and a recursive-descent parser for the module
//! grammar that XLA's `HloModule::ToString` prints (reference: `xla/hlo/parser/hlo_parser.cc`).
//!
//! ```text
//! module      ::= 'HloModule' name (',' attribute)* END-OF-LINE (computation | table)*
//! computation ::= 'ENTRY'? name ('(' (param (',' param)*)? ')' '->' shape)? '{' instruction+ '}'
//!                 (',' attribute)*
//! param       ::= name ':' shape
//! instruction ::= 'ROOT'? name '=' shape opcode '(' operands ')' (',' attribute)*
//! operands    ::= (shape? name (',' shape? name)*)?     -- raw text for constant, parameter, iota
//! attribute   ::= ident '=' value                       -- value: raw text, brackets balanced
//! shape       ::= '(' (shape (',' shape)*)? ')' | 'token[]' | dtype '[' (dim (',' dim)*)? ']' layout?
//! dim         ::= '<='? u64
//! layout      ::= '{' (u64 (',' u64)*)? (':' balanced-text)? '}'   -- directly after ']'
//! table       ::= ('FileNames' | 'FunctionNames' | 'FileLocations' | 'StackFrames') (u64 value)*
//! name        ::= '%' [A-Za-z0-9_.-]+ | [A-Za-z_] [A-Za-z0-9_.-]*
//! ```
//!
//! Whitespace, newlines, `/* ... */` and `// ...` comments separate tokens anywhere, except
//! that the module header, and an attribute value outside brackets, end at the end of their
//! line. An attribute value extends to the next comma, whitespace, comment or unmatched
//! closing bracket outside brackets and strings; inside brackets, newlines are whitespace.
//!
//! The parser never panics, runs in time linear in the input, bounds its recursion (tuple
//! shapes and brackets nested deeper than [`MAX_DEPTH`] are errors), and checks integers and
//! shape sizes for overflow: every parsed shape's [`Shape::bytes`] and [`Shape::elements`]
//! fit in a `u64`.
//!
//! [`Shape::bytes`]: crate::hlo::Shape::bytes
//! [`Shape::elements`]: crate::hlo::Shape::elements

mod computations;
mod instructions;
mod lexer;
mod shapes;
#[cfg(test)]
mod tests;

use crate::hlo::ast::{Module, Pos};
use crate::hlo::HloError;

/// The deepest nesting of tuple shapes, or of brackets in one value, that the parser accepts.
const MAX_DEPTH: usize = 256;

/// Opcodes whose parenthesised text is kept raw as [`Instruction::literal`] instead of being
/// read as operands.
///
/// [`Instruction::literal`]: crate::hlo::Instruction::literal
const LITERAL_OPCODES: [&str; 3] = ["constant", "parameter", "iota"];

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
    Parser::new(text).module()
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
        }
    }
}
