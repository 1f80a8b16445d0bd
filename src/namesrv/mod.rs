//! The NameServer: brokers register here, clients ask it where topics live.

pub mod kv_config;
pub mod route_table;
