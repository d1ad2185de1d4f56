//! Criterion benches of Concerto live in `benches/`; this library is empty on purpose (the
//! package exists to hold them).
