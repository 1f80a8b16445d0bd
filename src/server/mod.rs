//! The remoting server loop shared by the NameServer and (later) the broker.

/// Identifies one accepted connection for the life of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionId(pub u64);
