//! JSON bodies of NameServer and registration requests (REMOTING.md §5.2).
//!
//! Fields are declared in alphabetical order because that is the order fastjson writes them
//! and serde writes declaration order. Every struct decodes leniently (missing fields take
//! Java's defaults, numbers may come as strings); read them with [`decode`], write them with
//! [`encode`] or [`crate::protocol::fastjson::to_vec`] when the style matters.

pub mod check_client;
pub mod consumer_group;
pub mod heartbeat;
mod lists;
pub mod lock;
mod register;
mod register_compressed;
mod route;
pub mod stats;
pub mod subscription_group;

pub use lists::{KvTable, TopicList};
pub use register::{
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper, TopicFilterType,
};
pub use register_compressed::{
    decode_compressed, encode_compressed, CompressedBodyError, INFLATED_BODY_BYTES_MAX,
};
pub use route::{
    BrokerData, ClusterInfo, QueueData, TopicRouteData, MASTER_ID, PERM_INHERIT, PERM_READ,
    PERM_WRITE,
};

use crate::protocol::fastjson::{self, FastjsonError, JsonStyle};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Reads a body sent by any RocketMQ peer (fastjson quirks included).
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, FastjsonError> {
    fastjson::from_slice(body)
}

/// Writes a body as standard JSON, which every client version parses.
pub fn encode<T: Serialize>(body: &T) -> Result<Vec<u8>, FastjsonError> {
    fastjson::to_vec(body, JsonStyle::Standard)
}
