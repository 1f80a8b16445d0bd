//! JSON bodies (to be written)
