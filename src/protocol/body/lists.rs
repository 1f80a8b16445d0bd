//! Small list and table bodies: `TopicList` and `KVTable`.

use crate::protocol::fastjson::lenient;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Body of GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_TOPICS_BY_CLUSTER and
/// GET_SYSTEM_TOPIC_LIST_FROM_NS; `brokerAddr` only in the last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicList {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_list: Vec<String>,
}

/// `KVTable`: one KV-config namespace (GET_KVLIST_BY_NAMESPACE, REGISTER_BROKER response).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KvTable {
    #[serde(deserialize_with = "lenient::or_default")]
    pub table: BTreeMap<String, String>,
}
