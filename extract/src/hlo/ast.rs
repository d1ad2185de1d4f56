//! The syntax tree of an HLO text module, as [`parse`](super::parse) returns it.
//!
//! It keeps what the text says, with positions, and interprets little: attribute values are
//! kept as their source text, and typed accessors ([`Attribute::dims`],
//! [`Attribute::replica_groups`], [`Attribute::computation`], ...) read them on demand with
//! errors that name the attribute's line and column.

mod replica_groups;

use crate::hlo::HloError;

pub use replica_groups::{MeshAxis, ReplicaGroups};

/// A 1-based line and column in the source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
}

/// An HLO module.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// The name after `HloModule`.
    pub name: String,
    /// Header attributes (`entry_computation_layout={...}`, `input_output_alias=...`), raw.
    pub attributes: Vec<Attribute>,
    /// Every computation, in file order.
    pub computations: Vec<Computation>,
    /// Index of the `ENTRY` computation in `computations`.
    pub entry: usize,
    /// The stack-frame tables newer XLA versions print before the computations (`FileNames`,
    /// `FunctionNames`, `FileLocations`, `StackFrames`), each as its source text from the
    /// keyword on: instructions' `metadata={... stack_frame_id=N}` refers to them.
    pub tables: Vec<String>,
}

impl Module {
    /// The computation named `name` (without `%`).
    pub fn computation(&self, name: &str) -> Option<&Computation> {
        self.computations.iter().find(|c| c.name == name)
    }

    /// The entry computation.
    pub fn entry(&self) -> &Computation {
        &self.computations[self.entry]
    }
}

/// A computation: parameters, instructions and a root.
#[derive(Clone, Debug, PartialEq)]
pub struct Computation {
    /// Its name, without `%`.
    pub name: String,
    /// Whether it is the `ENTRY` computation.
    pub is_entry: bool,
    /// Instructions in text order.
    pub instructions: Vec<Instruction>,
    /// Index of the `ROOT` instruction (the last one when none is marked).
    pub root: usize,
    /// Where its header starts.
    pub pos: Pos,
    /// The source text between its name and the `{` of its body: the parameter list and
    /// result shape, `(p: f32[2]) -> f32[2]`, trimmed (empty when the text gives neither).
    pub signature: String,
    /// Attributes after the closing `}` (`execution_thread="..."`), raw.
    pub attributes: Vec<Attribute>,
}

/// The shape of a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// An array: element type, dimensions and optional layout.
    Array {
        /// Element type as written (`f32`, `bf16`, `s32`, `pred`, `u8`, `f8e4m3fn`, ...).
        dtype: String,
        /// Dimensions (a `<=` bound on a dynamic dimension is kept as its bound).
        dims: Vec<u64>,
        /// Layout `{minor_to_major...}` as written (tiling and memory-space suffixes dropped).
        layout: Option<Vec<u64>>,
    },
    /// A tuple of shapes.
    Tuple(Vec<Shape>),
    /// `token[]`.
    Token,
}

impl Shape {
    /// Bytes of the value (tuples: the sum of their elements; tokens: 0). Unknown element
    /// types count 4 bytes; sub-byte types (`s4`, `u4`) round up to one byte per element.
    pub fn bytes(&self) -> u64 {
        match self {
            Shape::Array { dtype, dims, .. } => dims
                .iter()
                .product::<u64>()
                .saturating_mul(element_bytes(dtype)),
            Shape::Tuple(v) => v.iter().map(Shape::bytes).sum(),
            Shape::Token => 0,
        }
    }

    /// Elements of an array (tuples: the sum; tokens: 0).
    pub fn elements(&self) -> u64 {
        match self {
            Shape::Array { dims, .. } => dims.iter().product(),
            Shape::Tuple(v) => v.iter().map(Shape::elements).sum(),
            Shape::Token => 0,
        }
    }

    /// The element type of an array (the first element's for a tuple).
    pub fn dtype(&self) -> Option<&str> {
        match self {
            Shape::Array { dtype, .. } => Some(dtype),
            Shape::Tuple(v) => v.first().and_then(Shape::dtype),
            Shape::Token => None,
        }
    }

    /// Dimensions of an array (empty for tuples and tokens).
    pub fn dims(&self) -> &[u64] {
        match self {
            Shape::Array { dims, .. } => dims,
            _ => &[],
        }
    }
}

/// Bytes per element of an HLO primitive type.
pub fn element_bytes(dtype: &str) -> u64 {
    match dtype {
        "pred" | "s8" | "u8" | "s4" | "u4" | "s2" | "u2" => 1,
        t if t.starts_with("f8") || t.starts_with("f4") || t.starts_with("f6") => 1,
        "s16" | "u16" | "f16" | "bf16" => 2,
        "s32" | "u32" | "f32" => 4,
        "s64" | "u64" | "f64" | "c64" => 8,
        "c128" => 16,
        _ => 4,
    }
}

/// One instruction: `[ROOT] %name = shape opcode(operands), attributes`.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// Its name, without `%`.
    pub name: String,
    /// Its result shape.
    pub shape: Shape,
    /// The result shape's source text, exactly (layouts with tiling or memory-space suffixes
    /// included), for writing the instruction back.
    pub shape_text: String,
    /// The opcode (`dot`, `all-gather-start`, `fusion`, ...).
    pub opcode: String,
    /// Operand names, without `%` (shape prefixes such as `f32[2] %x` dropped).
    pub operands: Vec<String>,
    /// The text inside the parentheses when it is not a list of operands: the literal of a
    /// `constant`, the number of a `parameter`.
    pub literal: Option<String>,
    /// Attributes after the operands, in order.
    pub attributes: Vec<Attribute>,
    /// Whether it is marked `ROOT`.
    pub is_root: bool,
    /// Where the instruction starts.
    pub pos: Pos,
}

impl Instruction {
    /// The attribute called `name`.
    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }
}

/// `name=value`, with the value kept as source text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribute {
    /// The name.
    pub name: String,
    /// The value's source text, exactly (balanced braces, brackets and parentheses; a quoted
    /// string keeps its quotes). It ends at the first comma or whitespace outside brackets,
    /// except for the mesh form of replica groups, which runs through its axis list:
    /// `mesh['x'=2,'y'=4], device_ids=(3,1,0,2,7,5,4,6) {'y'}`.
    pub value: String,
    /// Where the value starts.
    pub pos: Pos,
}

impl Attribute {
    fn error(&self, message: impl Into<String>) -> HloError {
        HloError::Syntax {
            line: self.pos.line,
            column: self.pos.column,
            message: format!("attribute `{}`: {}", self.name, message.into()),
        }
    }

    /// A list of integers `{0,1,2}` (also `{}`).
    pub fn dims(&self) -> Result<Vec<i64>, HloError> {
        let v = self.value.trim();
        let inner = v
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .ok_or_else(|| self.error(format!("expected `{{i,j,...}}`, found `{v}`")))?;
        inner
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<i64>()
                    .map_err(|_| self.error(format!("`{s}` is not an integer")))
            })
            .collect()
    }

    /// An integer.
    pub fn integer(&self) -> Result<i64, HloError> {
        self.value
            .trim()
            .parse()
            .map_err(|_| self.error(format!("`{}` is not an integer", self.value)))
    }

    /// A computation reference `%name` (returned without `%`).
    pub fn computation(&self) -> Result<&str, HloError> {
        let v = self.value.trim();
        let name = v.strip_prefix('%').unwrap_or(v);
        if name.is_empty() || name.contains(|c: char| c.is_whitespace() || ",{}()".contains(c)) {
            return Err(self.error(format!("expected a computation name, found `{v}`")));
        }
        Ok(name)
    }

    /// A list of computation references `{%a, %b}` (`branch_computations`, `called_computations`).
    pub fn computations(&self) -> Result<Vec<&str>, HloError> {
        let v = self.value.trim();
        let inner = v
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .ok_or_else(|| self.error(format!("expected `{{%a, %b}}`, found `{v}`")))?;
        Ok(inner
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.strip_prefix('%').unwrap_or(s))
            .collect())
    }

    /// A quoted string, unescaped (`backend_config="..."`, `custom_call_target="..."`); a
    /// value without quotes is returned as is.
    pub fn string(&self) -> Result<String, HloError> {
        let v = self.value.trim();
        let Some(inner) = v.strip_prefix('"') else {
            return Ok(v.to_string());
        };
        let inner = inner
            .strip_suffix('"')
            .ok_or_else(|| self.error("unterminated string"))?;
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other) => out.push(other),
                    None => return Err(self.error("string ends in a backslash")),
                }
            } else {
                out.push(c);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(name: &str, value: &str) -> Attribute {
        Attribute {
            name: name.into(),
            value: value.into(),
            pos: Pos { line: 3, column: 7 },
        }
    }

    #[test]
    fn typed_accessors() {
        assert_eq!(attr("dimensions", "{0,2}").dims().unwrap(), vec![0, 2]);
        assert_eq!(attr("dimensions", "{}").dims().unwrap(), Vec::<i64>::new());
        assert_eq!(
            attr("to_apply", "%add.clone").computation().unwrap(),
            "add.clone"
        );
        assert_eq!(
            attr("backend_config", r#""{\"n\":\"3\"}""#)
                .string()
                .unwrap(),
            r#"{"n":"3"}"#
        );
        assert!(attr("dimensions", "0,1").dims().is_err());
        assert_eq!(
            Shape::Array {
                dtype: "bf16".into(),
                dims: vec![4, 8],
                layout: None
            }
            .bytes(),
            64
        );
    }
}
