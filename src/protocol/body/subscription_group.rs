//! subscription_group bodies.
