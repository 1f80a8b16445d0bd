//! RocketMQ remoting protocol: frames, codes, headers, bodies, message formats.
//! This module knows bytes and RocketMQ's codes; it knows nothing of shards or disks.

pub mod acl;
pub mod body;
pub mod codes;
pub mod command;
pub mod ext_fields;
pub mod fastjson;
pub mod frame;
pub mod header;
pub mod message;
