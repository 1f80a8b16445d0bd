//! ringmq: a thread-per-core broker speaking Apache RocketMQ's remoting protocol.
pub mod admin;
pub mod broker;
pub mod client;
pub mod namesrv;
pub mod persist;
pub mod protocol;
pub mod server;
