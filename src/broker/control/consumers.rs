//! consumers (control plane table).
