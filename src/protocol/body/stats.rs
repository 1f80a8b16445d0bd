//! stats bodies.
