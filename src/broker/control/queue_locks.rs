//! queue_locks (control plane table).
