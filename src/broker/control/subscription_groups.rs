//! subscription_groups (control plane table).
