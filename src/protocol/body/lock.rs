//! lock bodies.
