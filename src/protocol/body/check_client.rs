//! CHECK_CLIENT_CONFIG's body (`CheckClientRequestBody`): the subscription a consumer is
//! about to start with, sent so the broker can refuse an expression it cannot serve.

use super::heartbeat::SubscriptionData;
use crate::protocol::fastjson::lenient;
use serde::Deserialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CheckClientRequestBody {
    #[serde(deserialize_with = "lenient::or_default")]
    pub client_id: String,
    #[serde(deserialize_with = "lenient::or_default")]
    pub group: String,
    #[serde(deserialize_with = "lenient::or_default")]
    pub subscription_data: Option<SubscriptionData>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_java_body() {
        let body = br#"{"clientId":"10.0.0.1@1","group":"G","subscriptionData":{"classFilterMode":false,"codeSet":[],"expressionType":"SQL92","subString":"a > 1","subVersion":1700000000000,"tagsSet":[],"topic":"T"}}"#;
        let read: CheckClientRequestBody = crate::protocol::body::decode(body).unwrap();
        assert_eq!(read.group, "G");
        let sub = read.subscription_data.unwrap();
        assert_eq!(
            (sub.expression_type.as_str(), sub.sub_string.as_str()),
            ("SQL92", "a > 1")
        );
        let empty: CheckClientRequestBody = crate::protocol::body::decode(b"{}").unwrap();
        assert_eq!(empty.subscription_data, None);
    }
}
