//! The syntax tree of an HLO text module, as [`parse`](super::parse) returns it.
//!
//! It keeps what the text says, with positions, and interprets little: attribute values are
//! kept as their source text, and typed accessors ([`Attribute::dims`],
//! [`Attribute::replica_groups`], [`Attribute::computation`], ...) read them on demand with
//! errors that name the attribute's line and column.

use crate::hlo::HloError;

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

/// Replica groups, in any of the three forms XLA prints and parses
/// (`ParseCollectiveDeviceListBase` in XLA's `xla/hlo/parser/hlo_parser.cc`).
///
/// The ids are what the list form's ids would be: replica, partition or global device ids,
/// depending on the instruction's `channel_id` and `use_global_device_ids`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplicaGroups {
    /// `{{0,1},{2,3}}` (`{}`: no list, which XLA reads as one group of every device).
    Explicit(Vec<Vec<u64>>),
    /// `[G,S]<=[d0,d1,...]` optionally followed by `T(p0,p1,...)`: G groups of S devices, the
    /// devices being iota over the reshape dims, transposed by the permutation, then
    /// flattened.
    Iota {
        /// Number of groups.
        groups: u64,
        /// Devices per group.
        size: u64,
        /// The reshape dimensions of the iota.
        reshape: Vec<u64>,
        /// The permutation applied after the reshape (identity when absent).
        transpose: Option<Vec<usize>>,
    },
    /// The mesh form (XLA's `MeshAxesReplicaGroupList`, which JAX 0.10 writes):
    /// `mesh['axis_0'=8,'axis_1'=1] {'axis_0'}`,
    /// `mesh['a'=2,'b'=4], device_ids=([2,4]T(1,0)) {'a','b':(1)2}`,
    /// `maximal_mesh[device_id=3] {}`.
    ///
    /// The devices form an array over the mesh axes, row-major (the first axis most major).
    /// A group fixes the position on every axis it does not list and spans the listed
    /// (sub-)axes, the first listed being the most major inside the group; the groups come in
    /// row-major order of the positions on the unlisted axes. See [`ReplicaGroups::expand`].
    Mesh {
        /// The mesh axes, major to minor: name and size. None for `maximal_mesh[...]` and
        /// `mesh[]`.
        axes: Vec<(String, u64)>,
        /// The device at each position of the mesh, row-major over `axes`: `None` for
        /// `0..N` (no `device_ids=`); otherwise the `device_ids=(d0,d1,...)` list, or its iota
        /// form `[r0,r1,...]T(p...)` expanded; `[N]` for `maximal_mesh[device_id=N]`.
        devices: Option<Vec<u64>>,
        /// The (sub-)axes each group spans, in the order listed.
        over: Vec<MeshAxis>,
    },
}

/// One entry of a mesh form's axis list: a whole axis `'x'` or a sub-axis `'x':(pre)size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeshAxis {
    /// The index of the axis in the mesh.
    pub axis: usize,
    /// For a sub-axis `'x':(pre)size`, `(pre, size)`: the axis, of size n, is viewed as the
    /// dimensions `[pre, size, n / (pre * size)]` (major to minor), and the groups span the
    /// middle one.
    pub sub: Option<(u64, u64)>,
}

/// The most devices a replica-group form may describe (16 M), so that expanding one stays
/// cheap.
const MAX_DEVICES: u64 = 1 << 24;

/// The linear (row-major) index into an array of dimensions `dims` of each element of its
/// transpose by `perm`, in the transpose's row-major order: `iota(prod dims).reshape(dims)
/// .transpose(perm)` flattened. Empty when `perm` is not a permutation of the dimensions.
/// O(product of dims * dims).
fn transposed(dims: &[u64], perm: &[usize]) -> Vec<u64> {
    let n = dims.len();
    let mut sorted = perm.to_vec();
    sorted.sort_unstable();
    if sorted != (0..n).collect::<Vec<_>>() {
        return Vec::new();
    }
    let total: u64 = dims.iter().product();
    // Row-major strides of `dims`, then walk the permuted dims.
    let mut stride = vec![1u64; n];
    for i in (0..n.saturating_sub(1)).rev() {
        stride[i] = stride[i + 1] * dims[i + 1];
    }
    let pdims: Vec<u64> = perm.iter().map(|&p| dims[p]).collect();
    let mut out = Vec::with_capacity(total as usize);
    let mut idx = vec![0u64; n];
    for _ in 0..total {
        out.push((0..n).map(|k| idx[k] * stride[perm[k]]).sum());
        for k in (0..n).rev() {
            idx[k] += 1;
            if idx[k] < pdims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

impl ReplicaGroups {
    /// The device ids of each group. O(devices * mesh axes).
    ///
    /// The mesh form follows XLA's `MeshAxesReplicaGroupList::flattened_replica_groups`
    /// (`xla/hlo/ir/replica_group.cc`): each mesh axis is reshaped so that every listed
    /// sub-axis is a dimension of its own (`'a':(pre)size` on an axis of size n gives
    /// `[pre, size, n / (pre * size)]`; several sub-axes of one axis are sorted by `pre`,
    /// with padding dimensions between them), the device array is transposed so that the
    /// unlisted dimensions come first (in mesh order) and the listed ones last (in the order
    /// listed), and the result is cut into groups of the listed dimensions' product. A mesh
    /// form that [`Attribute::replica_groups`] did not check may expand to no group.
    pub fn expand(&self) -> Vec<Vec<u64>> {
        match self {
            ReplicaGroups::Explicit(g) => g.clone(),
            ReplicaGroups::Iota {
                groups,
                size,
                reshape,
                transpose,
            } => {
                let ids: Vec<u64> = match transpose {
                    None => (0..reshape.iter().product()).collect(),
                    Some(perm) => transposed(reshape, perm),
                };
                ids.chunks(*size.max(&1) as usize)
                    .take(*groups as usize)
                    .map(<[u64]>::to_vec)
                    .collect()
            }
            ReplicaGroups::Mesh {
                axes,
                devices,
                over,
            } => mesh_groups(axes, devices.as_deref(), over).unwrap_or_default(),
        }
    }
}

/// The groups of a mesh form (see [`ReplicaGroups::expand`]); `None` when the form is
/// inconsistent (sizes that do not divide, a device list of the wrong length).
fn mesh_groups(
    axes: &[(String, u64)],
    devices: Option<&[u64]>,
    over: &[MeshAxis],
) -> Option<Vec<Vec<u64>>> {
    if axes.is_empty() {
        // `maximal_mesh[device_id=N] {}`: one group of its device; `mesh[] {}`: no device.
        return match devices {
            Some(d) if over.is_empty() && d.len() == 1 => Some(vec![d.to_vec()]),
            Some(_) => None,
            None => Some(Vec::new()),
        };
    }
    // The reshaped dimensions, and the dimension of each listed (sub-)axis.
    let mut dims: Vec<u64> = Vec::new();
    let mut grouped: Vec<Option<usize>> = vec![None; over.len()];
    for (a, &(_, n)) in axes.iter().enumerate() {
        let refs: Vec<usize> = (0..over.len()).filter(|&k| over[k].axis == a).collect();
        match refs.as_slice() {
            [] => dims.push(n),
            [k] => match over[*k].sub {
                None => {
                    grouped[*k] = Some(dims.len());
                    dims.push(n);
                }
                Some((pre, size)) => {
                    let inner = pre.checked_mul(size).filter(|&p| p > 0 && n % p == 0)?;
                    grouped[*k] = Some(dims.len() + 1);
                    dims.extend([pre, size, n / inner]);
                }
            },
            _ => {
                let mut sorted = refs.clone();
                sorted.sort_by_key(|&k| over[k].sub.map_or(0, |s| s.0));
                let mut prefix = 1u64;
                for k in sorted {
                    let (pre, size) = over[k].sub?;
                    if pre != prefix {
                        if prefix == 0 || pre % prefix != 0 {
                            return None;
                        }
                        dims.push(pre / prefix);
                        prefix = pre;
                    }
                    grouped[k] = Some(dims.len());
                    dims.push(size);
                    prefix = prefix.checked_mul(size)?;
                }
                if prefix == 0 || n % prefix != 0 {
                    return None;
                }
                if prefix != n {
                    dims.push(n / prefix);
                }
            }
        }
    }
    let grouped: Vec<usize> = grouped.into_iter().collect::<Option<_>>()?;
    let total = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&t| t <= MAX_DEVICES)?;
    let n: u64 = axes.iter().map(|a| a.1).product();
    if total != n || devices.is_some_and(|d| d.len() as u64 != n) {
        return None;
    }
    let per_group: u64 = grouped.iter().map(|&g| dims[g]).product();
    let mut perm: Vec<usize> = (0..dims.len()).filter(|d| !grouped.contains(d)).collect();
    perm.extend(&grouped);
    let positions = transposed(&dims, &perm);
    if positions.len() as u64 != total || per_group == 0 {
        return None;
    }
    let ids: Vec<u64> = match devices {
        None => positions,
        Some(d) => positions.iter().map(|&p| d[p as usize]).collect(),
    };
    Some(
        ids.chunks(per_group as usize)
            .map(<[u64]>::to_vec)
            .collect(),
    )
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

    /// Replica groups in any of the three forms (see [`ReplicaGroups`]), checked as XLA's
    /// parser and `Mesh`/`AxisRef` validation check them: counts that match, permutations,
    /// known axes, sub-axes that divide their axis and do not overlap.
    pub fn replica_groups(&self) -> Result<ReplicaGroups, HloError> {
        let trimmed = self.value.trim_start();
        if trimmed.starts_with("mesh") || trimmed.starts_with("maximal_mesh") {
            return MeshText {
                attr: self,
                text: trimmed,
                at: 0,
            }
            .groups();
        }
        let v: String = self.value.chars().filter(|c| !c.is_whitespace()).collect();
        if let Some(rest) = v.strip_prefix('[') {
            // [G,S]<=[dims]T(perm)
            let (gs, rest) = rest
                .split_once("]<=[")
                .ok_or_else(|| self.error(format!("expected `[G,S]<=[d...]`, found `{v}`")))?;
            let (dims, tail) = rest
                .split_once(']')
                .ok_or_else(|| self.error("unterminated reshape dims"))?;
            let nums = |s: &str| -> Result<Vec<u64>, HloError> {
                s.split(',')
                    .filter(|x| !x.is_empty())
                    .map(|x| {
                        x.parse::<u64>()
                            .map_err(|_| self.error(format!("`{x}` is not a count")))
                    })
                    .collect()
            };
            let gs = nums(gs)?;
            let reshape = nums(dims)?;
            let (groups, size) = match gs.as_slice() {
                [g, s] => (*g, *s),
                [g] => (*g, 1),
                _ => return Err(self.error("expected two counts `[G,S]`")),
            };
            let transpose = if tail.is_empty() {
                None
            } else {
                let perm = tail
                    .strip_prefix("T(")
                    .and_then(|s| s.strip_suffix(')'))
                    .ok_or_else(|| self.error(format!("expected `T(p...)`, found `{tail}`")))?;
                let perm: Vec<usize> = nums(perm)?.into_iter().map(|p| p as usize).collect();
                let mut sorted = perm.clone();
                sorted.sort_unstable();
                if sorted != (0..reshape.len()).collect::<Vec<_>>() {
                    return Err(self.error("the transpose is not a permutation of the dims"));
                }
                Some(perm)
            };
            let total: u64 = reshape
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .ok_or_else(|| self.error("too many devices"))?;
            if groups.checked_mul(size) != Some(total) || total > 1 << 24 {
                return Err(self.error(format!(
                    "{groups} groups of {size} devices do not match {total} devices"
                )));
            }
            return Ok(ReplicaGroups::Iota {
                groups,
                size,
                reshape,
                transpose,
            });
        }
        let inner = v
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .ok_or_else(|| {
                self.error(format!(
                    "expected `{{{{0,1}},...}}` or `[G,S]<=[N]`, found `{v}`"
                ))
            })?;
        if inner.is_empty() {
            return Ok(ReplicaGroups::Explicit(Vec::new()));
        }
        let mut groups = Vec::new();
        for part in inner.split("},") {
            let g = part.trim_start_matches('{').trim_end_matches('}');
            let ids = g
                .split(',')
                .filter(|x| !x.is_empty())
                .map(|x| {
                    x.parse::<u64>()
                        .map_err(|_| self.error(format!("`{x}` is not a device id")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            groups.push(ids);
        }
        Ok(ReplicaGroups::Explicit(groups))
    }
}

/// A cursor over the mesh form of replica groups, for [`Attribute::replica_groups`]. The
/// grammar follows XLA's `ParseMesh` and `ParseAxisRefList`:
///
/// ```text
/// mesh-form ::= mesh '{' (axis-ref (',' axis-ref)*)? '}'
/// mesh      ::= 'mesh' '[' (name '=' int (',' name '=' int)*)? ']'
///                 (',' 'device_ids' '=' '(' ('[' ints ']' ('T' '(' ints ')')? | ints?) ')')?
///             | 'maximal_mesh' '[' 'device_id' '=' int ']'
/// axis-ref  ::= name (':' '(' int ')' int)?        -- a quoted axis name, or its index
/// name      ::= "'" chars "'" | '"' chars '"'
/// ```
///
/// Whitespace may separate any two tokens.
struct MeshText<'a> {
    /// The attribute, for errors.
    attr: &'a Attribute,
    /// The value, from `mesh` or `maximal_mesh` on.
    text: &'a str,
    /// The cursor: a byte offset into `text`, on a character boundary.
    at: usize,
}

impl<'a> MeshText<'a> {
    fn error(&self, message: impl Into<String>) -> HloError {
        self.attr.error(message)
    }

    /// The text after the cursor.
    fn rest(&self) -> &'a str {
        self.text.get(self.at..).unwrap_or_default()
    }

    /// Skips whitespace.
    fn ws(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    /// "expected WHAT, found ..." at the cursor.
    fn expected(&self, what: &str) -> HloError {
        let rest = self.rest();
        let found = match rest.char_indices().nth(24) {
            _ if rest.is_empty() => "the end of the value".to_string(),
            Some((cut, _)) => format!("`{}...`", rest.get(..cut).unwrap_or_default()),
            None => format!("`{rest}`"),
        };
        self.error(format!("expected {what}, found {found}"))
    }

    /// Skips whitespace, then eats `token` when it comes next.
    fn eat(&mut self, token: &str) -> bool {
        self.ws();
        let next = self.rest().starts_with(token);
        if next {
            self.at += token.len();
        }
        next
    }

    /// Eats `token` or fails with "expected WHAT".
    fn expect(&mut self, token: &str, what: &str) -> Result<(), HloError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// An unsigned decimal integer.
    fn int(&mut self, what: &str) -> Result<u64, HloError> {
        self.ws();
        let rest = self.rest();
        let len = rest.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return Err(self.expected(what));
        }
        let digits = rest.get(..len).unwrap_or_default();
        let value = digits
            .parse()
            .map_err(|_| self.error(format!("{what} `{digits}` does not fit in 64 bits")))?;
        self.at += len;
        Ok(value)
    }

    /// `int (',' int)*`, or nothing when `close` comes next (which is not eaten).
    fn ints(&mut self, close: &str, what: &str) -> Result<Vec<u64>, HloError> {
        let mut out = Vec::new();
        self.ws();
        if self.rest().starts_with(close) {
            return Ok(out);
        }
        loop {
            out.push(self.int(what)?);
            if !self.eat(",") {
                return Ok(out);
            }
        }
    }

    /// A name in single or double quotes (a backslash escapes the next character).
    fn name(&mut self, what: &str) -> Result<String, HloError> {
        self.ws();
        let rest = self.rest();
        let Some(quote) = rest.chars().next().filter(|&c| c == '\'' || c == '"') else {
            return Err(self.expected(what));
        };
        let mut out = String::new();
        let mut chars = rest.char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            if c == quote {
                self.at += i + 1;
                return Ok(out);
            }
            if c == '\\' {
                match chars.next() {
                    Some((_, escaped)) => out.push(escaped),
                    None => break,
                }
            } else {
                out.push(c);
            }
        }
        Err(self.error(format!("unterminated quote in {what}")))
    }

    /// A permutation `T(p0,p1,...)` of `n` dimensions (after the `T`).
    fn permutation(&mut self, n: usize) -> Result<Vec<usize>, HloError> {
        self.expect("(", "`(` after `T`")?;
        let perm = self.ints(")", "a dimension index")?;
        self.expect(")", "`,` or `)` to end the permutation")?;
        let perm: Vec<usize> = perm.into_iter().map(|p| p as usize).collect();
        let mut sorted = perm.clone();
        sorted.sort_unstable();
        if sorted != (0..n).collect::<Vec<_>>() {
            return Err(self.error(format!(
                "`T({})` is not a permutation of the {n} device_ids dimensions",
                perm.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )));
        }
        Ok(perm)
    }

    /// `mesh[...]` with its optional `device_ids=(...)`, or `maximal_mesh[device_id=N]`: the
    /// axes and the device array.
    #[allow(clippy::type_complexity)]
    fn mesh(&mut self) -> Result<(Vec<(String, u64)>, Option<Vec<u64>>), HloError> {
        if self.eat("maximal_mesh") {
            self.expect("[", "`[` after `maximal_mesh`")?;
            self.expect("device_id", "`device_id=N` in `maximal_mesh[...]`")?;
            self.expect("=", "`=` after `device_id`")?;
            let id = self.int("a device id")?;
            self.expect("]", "`]` to end `maximal_mesh[...]`")?;
            return Ok((Vec::new(), Some(vec![id])));
        }
        self.expect("mesh", "`mesh[...]` or `maximal_mesh[...]`")?;
        self.expect("[", "`[` after `mesh`")?;
        let mut axes: Vec<(String, u64)> = Vec::new();
        self.ws();
        if !self.rest().starts_with(']') {
            loop {
                let name = self.name("a mesh axis (`'name'=size`)")?;
                self.expect("=", "`=` after the axis name")?;
                let size = self.int("an axis size")?;
                if size == 0 {
                    return Err(self.error(format!("mesh axis '{name}' has size 0")));
                }
                if axes.iter().any(|(a, _)| *a == name) {
                    return Err(self.error(format!("mesh axis '{name}' appears twice")));
                }
                axes.push((name, size));
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.expect("]", "`,` or `]` in the mesh axes")?;
        let n = axes
            .iter()
            .try_fold(1u64, |acc, &(_, s)| acc.checked_mul(s))
            .filter(|&n| n <= MAX_DEVICES)
            .ok_or_else(|| self.error(format!("the mesh has more than {MAX_DEVICES} devices")))?;
        // XLA reads `device_ids` only after a mesh with axes.
        if axes.is_empty() || !self.eat(",") {
            return Ok((axes, None));
        }
        self.expect("device_ids", "`device_ids=(...)` after the mesh")?;
        self.expect("=", "`=` after `device_ids`")?;
        self.expect("(", "`(` after `device_ids=`")?;
        let devices = if self.eat("[") {
            // The iota form: iota(prod r).reshape(r).transpose(p), flattened.
            let reshape = self.ints("]", "a dimension")?;
            self.expect("]", "`,` or `]` in the device_ids dimensions")?;
            let product = reshape
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d))
                .filter(|&p| p <= MAX_DEVICES);
            if product != Some(n) {
                return Err(self.error(format!(
                    "device_ids dimensions {reshape:?} do not hold the mesh's {n} devices"
                )));
            }
            let perm = if self.eat("T") {
                self.permutation(reshape.len())?
            } else {
                (0..reshape.len()).collect()
            };
            transposed(&reshape, &perm)
        } else {
            let ids = self.ints(")", "a device id")?;
            if ids.len() as u64 != n {
                return Err(self.error(format!(
                    "expected {n} device ids (the product of the mesh axis sizes), found {}",
                    ids.len()
                )));
            }
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            if sorted.iter().copied().ne(0..n) {
                return Err(self.error(format!("device_ids are not a permutation of 0..{n}")));
            }
            ids
        };
        self.expect(")", "`,` or `)` to end `device_ids=(...)`")?;
        Ok((axes, Some(devices)))
    }

    /// The whole mesh form.
    fn groups(mut self) -> Result<ReplicaGroups, HloError> {
        let (axes, devices) = self.mesh()?;
        self.expect("{", "`{` and the axes the groups span after the mesh")?;
        let mut over: Vec<MeshAxis> = Vec::new();
        self.ws();
        if !self.rest().starts_with('}') {
            loop {
                let name = self.name("an axis of the mesh (`'name'`)")?;
                let axis = axes
                    .iter()
                    .position(|(a, _)| *a == name)
                    .or_else(|| name.parse::<usize>().ok())
                    .filter(|&k| k < axes.len())
                    .ok_or_else(|| self.error(format!("'{name}' is not an axis of the mesh")))?;
                let size = axes[axis].1;
                let sub = if self.eat(":") {
                    self.expect("(", "`(` after `:` (a sub-axis `'x':(pre)size`)")?;
                    let pre = self.int("a sub-axis pre-size")?;
                    self.expect(")", "`)` after the sub-axis pre-size")?;
                    let sub = self.int("a sub-axis size")?;
                    let next = pre.checked_mul(sub).unwrap_or(0);
                    if pre == 0 || sub == 0 || next == 0 || size % next != 0 || sub >= size {
                        return Err(self.error(format!(
                            "sub-axis '{name}':({pre}){sub} does not fit axis '{name}' of size \
                             {size} (pre-size times size must divide it, size below it)"
                        )));
                    }
                    Some((pre, sub))
                } else {
                    None
                };
                over.push(MeshAxis { axis, sub });
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.expect("}", "`,` or `}` in the axis list")?;
        self.ws();
        if !self.rest().is_empty() {
            return Err(self.expected("the end of the value after the axis list"));
        }
        for (a, (name, _)) in axes.iter().enumerate() {
            let mut subs: Vec<Option<(u64, u64)>> =
                over.iter().filter(|r| r.axis == a).map(|r| r.sub).collect();
            if subs.len() < 2 {
                continue;
            }
            if subs.contains(&None) {
                return Err(self.error(format!("axis '{name}' is listed more than once")));
            }
            subs.sort_unstable();
            let mut prefix = 1u64;
            for (pre, size) in subs.into_iter().flatten() {
                if pre % prefix != 0 {
                    return Err(self.error(format!("sub-axes of '{name}' overlap")));
                }
                prefix = pre.saturating_mul(size);
            }
        }
        Ok(ReplicaGroups::Mesh {
            axes,
            devices,
            over,
        })
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
    fn replica_groups_in_both_forms() {
        let e = attr("replica_groups", "{{0,1},{2,3}}")
            .replica_groups()
            .unwrap();
        assert_eq!(e.expand(), vec![vec![0, 1], vec![2, 3]]);
        let i = attr("replica_groups", "[1,8]<=[8]")
            .replica_groups()
            .unwrap();
        assert_eq!(i.expand(), vec![(0..8).collect::<Vec<u64>>()]);
        let t = attr("replica_groups", "[2,4]<=[4,2]T(1,0)")
            .replica_groups()
            .unwrap();
        assert_eq!(t.expand(), vec![vec![0, 2, 4, 6], vec![1, 3, 5, 7]]);
        let err = attr("replica_groups", "[3,4]<=[8]")
            .replica_groups()
            .unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
        assert!(attr("replica_groups", "{{0,x}}").replica_groups().is_err());
        assert!(attr("replica_groups", "[2,4]<=[4,2]T(0,0)")
            .replica_groups()
            .is_err());
    }

    fn groups(value: &str) -> Vec<Vec<u64>> {
        attr("replica_groups", value)
            .replica_groups()
            .unwrap_or_else(|e| panic!("{value}: {e}"))
            .expand()
    }

    /// The examples of XLA's `xla/hlo/ir/replica_group_test.cc`
    /// (`MeshAxesReplicaGroupListTest.MaterializedReplicaGroups*`).
    #[test]
    fn mesh_form_expands_as_xla_does() {
        // A 2x2 mesh: a group spans the listed axes and fixes the others.
        assert_eq!(groups("mesh['x'=2,'y'=2] {'x'}"), [[0, 2], [1, 3]]);
        assert_eq!(groups("mesh['x'=2,'y'=2] {'y'}"), [[0, 1], [2, 3]]);
        assert_eq!(groups("mesh['x'=2,'y'=2] {'x','y'}"), [[0, 1, 2, 3]]);
        // The first listed axis is the most major inside a group.
        assert_eq!(groups("mesh['x'=2,'y'=2] {'y','x'}"), [[0, 2, 1, 3]]);
        // What JAX 0.10 writes for 8 devices: one group of all of them, or groups of one.
        assert_eq!(
            groups("mesh['axis_0'=8,'axis_1'=1] {'axis_0'}"),
            [(0..8).collect::<Vec<u64>>()]
        );
        assert_eq!(
            groups("mesh['axis_0'=8,'axis_1'=1] {'axis_1'}"),
            (0..8).map(|d| vec![d]).collect::<Vec<_>>()
        );
        // Sub-axes of a 6x6 mesh.
        let a_1_2: Vec<Vec<u64>> = (0..18).map(|d| vec![d, d + 18]).collect();
        assert_eq!(groups("mesh['a'=6,'b'=6] {'a':(1)2}"), a_1_2);
        let a_1_3: Vec<Vec<u64>> = (0..12).map(|d| vec![d, d + 12, d + 24]).collect();
        assert_eq!(groups("mesh['a'=6,'b'=6] {'a':(1)3}"), a_1_3);
        let a_3_2: Vec<Vec<u64>> = [0, 12, 24]
            .iter()
            .flat_map(|&base| (0..6).map(move |d| vec![base + d, base + d + 6]))
            .collect();
        assert_eq!(groups("mesh['a'=6,'b'=6] {'a':(3)2}"), a_3_2);
        let b_1_3: Vec<Vec<u64>> = (0..6)
            .flat_map(|row| {
                (0..2).map(move |d| vec![row * 6 + d, row * 6 + d + 2, row * 6 + d + 4])
            })
            .collect();
        assert_eq!(groups("mesh['a'=6,'b'=6] {'b':(1)3}"), b_1_3);
        assert_eq!(
            groups("mesh['a'=6,'b'=6] {'a':(1)2,'b':(1)2}")[..3],
            [[0, 3, 18, 21], [1, 4, 19, 22], [2, 5, 20, 23]]
        );
        assert_eq!(
            groups("mesh['a'=6,'b'=6] {'a':(1)3,'b':(1)3}")[0],
            [0, 2, 4, 12, 14, 16, 24, 26, 28]
        );
        // Listed the other way round: the same devices, `b` now most major.
        assert_eq!(
            groups("mesh['a'=6,'b'=6] {'b':(1)3,'a':(1)3}")[0],
            [0, 12, 24, 2, 14, 26, 4, 16, 28]
        );
        assert_eq!(
            groups("mesh['a'=6,'b'=6] {'a':(3)2,'b':(3)2}")[..2],
            [[0, 1, 6, 7], [2, 3, 8, 9]]
        );
        // A non-iota device order: the groups take the devices at the mesh positions.
        assert_eq!(
            groups("mesh['x'=2,'y'=2], device_ids=(3,1,0,2) {'x'}"),
            [[3, 0], [1, 2]]
        );
        assert_eq!(
            groups("mesh['x'=2,'y'=2], device_ids=(3,1,0,2) {'y'}"),
            [[3, 1], [0, 2]]
        );
        // Device ids in the iota form: iota(4).reshape(2,2).transpose(1,0) = 0,2,1,3.
        assert_eq!(
            groups("mesh['x'=2,'y'=2], device_ids=([2,2]T(1,0)) {'y'}"),
            [[0, 2], [1, 3]]
        );
        // A maximal mesh is one device; an empty mesh has none.
        assert_eq!(groups("maximal_mesh[device_id=5] {}"), [[5]]);
        assert!(groups("mesh[] {}").is_empty());
        // Whitespace and double quotes are accepted, as XLA's lexer accepts them.
        assert_eq!(
            groups(" mesh [ \"x\" = 2 , 'y'=2 ]\n { \"x\" } "),
            [[0, 2], [1, 3]]
        );
        // An axis may be named by its index.
        assert_eq!(groups("mesh['x'=2,'y'=2] {'1'}"), [[0, 1], [2, 3]]);
    }

    /// XLA's `MaterializedReplicaGroupsMatchExpectedV2`: a sub-axis of `mesh['a'=8]` equals
    /// an iota form.
    #[test]
    fn mesh_sub_axes_match_the_iota_form() {
        for (mesh, iota) in [
            ("{'a':(1)2}", "[4,2]<=[2,4]T(1,0)"),
            ("{'a':(1)4}", "[2,4]<=[4,2]T(1,0)"),
            ("{'a':(2)2}", "[4,2]<=[2,2,2]T(0,2,1)"),
            ("{'a':(2)4}", "[2,4]<=[8]"),
            ("{'a':(4)2}", "[4,2]<=[8]"),
            ("{'a':(1)2,'a':(4)2}", "[2,4]<=[2,2,2]T(1,0,2)"),
            ("{'a':(4)2,'a':(1)2}", "[2,4]<=[2,2,2]T(1,2,0)"),
            ("{'a'}", "[1,8]<=[8]"),
        ] {
            assert_eq!(
                groups(&format!("mesh['a'=8] {mesh}")),
                groups(iota),
                "{mesh} vs {iota}"
            );
        }
        // The printer's examples from `MeshAxesToString` parse and expand to whole groups.
        for (value, count, size) in [
            ("mesh['u'=10,'v'=12,'w'=15] {'u','v'}", 15, 120),
            (
                "mesh['a'=2,'b'=4,'c'=4,'d'=2], device_ids=([4,16]T(1,0)) {'a','b':(1)2,'d'}",
                8,
                8,
            ),
            (
                "mesh['ooo'=10], device_ids=(8,3,7,5,4,2,6,0,1,9) {'ooo':(5)2}",
                5,
                2,
            ),
            ("mesh['X'=21,'Y'=10] {'X':(3)7,'Y':(1)5}", 6, 35),
            (
                "mesh['U'=40,'Q'=6,'V'=210] {'U','V':(1)21,'Q':(2)3,'V':(21)10}",
                2,
                25200,
            ),
        ] {
            let g = groups(value);
            assert_eq!((g.len(), g[0].len()), (count, size), "{value}");
            let mut all: Vec<u64> = g.concat();
            all.sort_unstable();
            assert!(all.iter().copied().eq(0..(count * size) as u64), "{value}");
        }
        // `'ooo':(5)2` views the axis as [5, 2, 1]: a group is two neighbouring positions of
        // the device list.
        assert_eq!(
            groups("mesh['ooo'=10], device_ids=(8,3,7,5,4,2,6,0,1,9) {'ooo':(5)2}"),
            [[8, 3], [7, 5], [4, 2], [6, 0], [1, 9]]
        );
    }

    /// The all-gather of each replica's id over mesh-form groups, as XLA (jaxlib 0.10.2, CPU,
    /// 8 replicas) computed it at run time with `fixtures/hlo/xla_groups.py`: replica r's
    /// result is its group, in group order; here the distinct results, sorted. (Forms with
    /// `device_ids=` are left out: that script's conversion drops the device ids.)
    #[test]
    fn mesh_groups_match_xla_at_run_time() {
        let cases = [
            ("mesh['x'=2,'y'=4] {'x'}", "0,4 1,5 2,6 3,7"),
            ("mesh['x'=2,'y'=4] {'y'}", "0,1,2,3 4,5,6,7"),
            ("mesh['x'=2,'y'=4] {'x','y'}", "0,1,2,3,4,5,6,7"),
            ("mesh['x'=2,'y'=4] {'y','x'}", "0,4,1,5,2,6,3,7"),
            ("mesh['x'=2,'y'=4] {'y':(1)2}", "0,2 1,3 4,6 5,7"),
            ("mesh['x'=2,'y'=4] {'y':(2)2}", "0,1 2,3 4,5 6,7"),
            ("mesh['x'=2,'y'=4] {'x','y':(2)2}", "0,1,4,5 2,3,6,7"),
            ("mesh['x'=2,'y'=4] {'y':(2)2,'x'}", "0,4,1,5 2,6,3,7"),
            ("mesh['x'=2,'y'=4] {'y':(1)2,'x'}", "0,4,2,6 1,5,3,7"),
            ("mesh['a'=8] {'a':(1)2}", "0,4 1,5 2,6 3,7"),
            ("mesh['a'=8] {'a':(2)2}", "0,2 1,3 4,6 5,7"),
            ("mesh['a'=8] {'a':(4)2}", "0,1 2,3 4,5 6,7"),
            ("mesh['a'=8] {'a':(1)4}", "0,2,4,6 1,3,5,7"),
            ("mesh['a'=8] {'a':(2)4}", "0,1,2,3 4,5,6,7"),
            ("mesh['a'=8] {'a':(1)2,'a':(4)2}", "0,1,4,5 2,3,6,7"),
            ("mesh['a'=8] {'a':(4)2,'a':(1)2}", "0,4,1,5 2,6,3,7"),
            ("mesh['x'=2,'y'=2,'z'=2] {'z','x'}", "0,4,1,5 2,6,3,7"),
            ("mesh['x'=2,'y'=2,'z'=2] {'y'}", "0,2 1,3 4,6 5,7"),
            ("mesh['axis_0'=8,'axis_1'=1] {'axis_0'}", "0,1,2,3,4,5,6,7"),
        ];
        for (value, expected) in cases {
            let mut ours: Vec<String> = groups(value)
                .iter()
                .map(|g| g.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
                .collect();
            ours.sort_unstable();
            assert_eq!(ours.join(" "), expected, "{value}");
        }
    }

    #[test]
    fn malformed_mesh_forms_are_errors_naming_the_attribute() {
        for (value, fragment) in [
            ("mesh['x'=2,'y'=2] {'z'}", "'z' is not an axis"),
            ("mesh['x'=2,'y'=2] {'2'}", "'2' is not an axis"),
            ("mesh['x'=2,'y'=2]", "expected `{`"),
            ("mesh['x'=2,'y'=2] {'x'} junk", "expected the end"),
            ("mesh['x'=2,'x'=2] {'x'}", "appears twice"),
            ("mesh['x'=0] {}", "size 0"),
            (
                "mesh['x'=4], device_ids=(0,1,2) {'x'}",
                "expected 4 device ids",
            ),
            (
                "mesh['x'=4], device_ids=(0,1,2,2) {'x'}",
                "not a permutation",
            ),
            ("mesh['x'=4], device_ids=([2,3]) {'x'}", "do not hold"),
            (
                "mesh['x'=4], device_ids=([2,2]T(0,0)) {'x'}",
                "not a permutation",
            ),
            ("mesh['x'=4], device_ds=(0,1,2,3) {'x'}", "device_ids"),
            ("mesh['x'=6] {'x':(4)2}", "does not fit"),
            ("mesh['x'=6] {'x':(1)6}", "does not fit"),
            ("mesh['x'=8] {'x':(1)4,'x':(2)2}", "overlap"),
            ("mesh['x'=8] {'x','x':(2)2}", "more than once"),
            ("mesh['x=2] {}", "unterminated"),
            ("maximal_mesh[device_id=1] {'x'}", "not an axis"),
            ("maximal_mesh[id=1] {}", "device_id"),
            ("mesh['x'=99999999999] {}", "more than"),
            (
                "mesh['x'=99999999999999999999] {}",
                "does not fit in 64 bits",
            ),
        ] {
            let e = attr("replica_groups", value).replica_groups().unwrap_err();
            let m = e.to_string();
            assert!(
                m.contains(fragment)
                    && m.contains("line 3, column 7")
                    && m.contains("replica_groups"),
                "{value}: {m}"
            );
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
