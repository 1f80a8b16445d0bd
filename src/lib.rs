//! ringmq: a thread-per-core broker speaking Apache RocketMQ's remoting protocol.
pub mod protocol;
