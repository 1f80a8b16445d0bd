//! What shards ask of each other through the router, and what they answer.

use super::control_plane::{ControlOp, ControlReply, ControlSnapshot};
use crate::protocol::command::RemotingCommand;
use crate::protocol::message::record::Message;
use crate::server::ConnectionId;
use std::net::SocketAddr;
use std::sync::Arc;

/// Where a client request came from: the shard and connection that will write its response.
#[derive(Clone, Copy, Debug)]
pub struct Origin {
    pub shard: usize,
    pub connection: ConnectionId,
    pub peer: SocketAddr,
}

/// A unit of work for another shard.
pub enum Work {
    /// A client request for a queue (or part of the broker) the receiving shard owns; it
    /// serves it as if the client were connected to it.
    Client {
        origin: Origin,
        request: RemotingCommand,
    },
    /// A control-plane change or question, for shard 0.
    Control(ControlOp),
    /// A newer control-plane snapshot, from shard 0.
    Snapshot(Arc<ControlSnapshot>),
    /// Store `message` in the receiving shard's queue (a consumer's send-back to its group's
    /// retry or dead-letter topic); answered with [`Reply::Done`].
    Store(Message),
    /// Send `request` (oneway) to one of the receiving shard's connections, e.g.
    /// NOTIFY_CONSUMER_IDS_CHANGED decided on shard 0 for a client connected elsewhere.
    Notify {
        connection: ConnectionId,
        request: RemotingCommand,
    },
}

/// The answer to a [`Work`].
pub enum Reply {
    Command(RemotingCommand),
    Control(ControlReply),
    Done,
}
