//! # concerto
//!
//! Schedule distributed deep-learning training steps as exact optimisation problems.
