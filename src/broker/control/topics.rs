//! topics (control plane table).
