//! Cross-crate integration and property tests of Concerto live in `tests/`; this library is
//! empty on purpose (the package exists to hold them).
