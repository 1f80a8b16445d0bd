//! heartbeat bodies.
