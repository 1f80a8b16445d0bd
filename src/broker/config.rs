//! The broker's configuration: flags and RocketMQ's broker.conf keys.
