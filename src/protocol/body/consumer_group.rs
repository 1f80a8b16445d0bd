//! consumer_group bodies.
