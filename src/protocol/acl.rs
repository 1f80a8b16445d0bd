//! ACL 1.0 request signing, as Apache RocketMQ's `AclClientRPCHook` does it (REMOTING.md §11):
//! a client with credentials adds `AccessKey` (and `SecurityToken`) to a request's extFields and
//! signs the values of all extFields, in ascending key order, followed by the body, with
//! HmacSHA1 under the secret key. Brokers and NameServers without ACL ignore the extra keys.

use super::command::{ExtFields, RemotingCommand};
use base64::Engine;
use hmac::{Hmac, Mac};
use sha1::Sha1;

pub const ACCESS_KEY: &str = "AccessKey";
pub const SECURITY_TOKEN: &str = "SecurityToken";
pub const SIGNATURE: &str = "Signature";

/// A client's ACL credentials (Java's `SessionCredentials`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
    pub security_token: Option<String>,
}

/// Signs `request` in place: adds the access key (and token) and then the signature over them,
/// the other extFields and the body.
pub fn sign(request: &mut RemotingCommand, credentials: &Credentials) {
    let ext = &mut request.ext_fields;
    ext.insert(ACCESS_KEY, credentials.access_key.clone());
    if let Some(token) = &credentials.security_token {
        ext.insert(SECURITY_TOKEN, token.clone());
    }
    let signature = signature(&credentials.secret_key, ext, &request.body);
    request.ext_fields.insert(SIGNATURE, signature);
}

/// `Base64(HmacSHA1(secret, values of ext except Signature in key order ‖ body))`. Keys are
/// ordered as Java's `TreeMap<String, String>` orders them: by UTF-16 code units.
pub fn signature(secret_key: &str, ext: &ExtFields, body: &[u8]) -> String {
    let mut fields: Vec<(&str, &str)> = ext.iter().filter(|(key, _)| *key != SIGNATURE).collect();
    fields.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
    let mut mac = Hmac::<Sha1>::new_from_slice(secret_key.as_bytes())
        .expect("HMAC takes a key of any length");
    for (_, value) in fields {
        mac.update(value.as_bytes());
    }
    mac.update(body);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::codes::request;
    use crate::protocol::command::ext_fields as ext;

    /// VECTORS.md V7, computed independently with openssl.
    #[test]
    fn signatures_match_vector_v7() {
        let route = ext(&[("AccessKey", "rocketmq2"), ("topic", "TopicTest")]);
        assert_eq!(
            signature("12345678", &route, b""),
            "GeeGoP9mRvDhoVp4PD5omX0prgE="
        );
        let heartbeat = ext(&[("AccessKey", "rocketmq2")]);
        assert_eq!(
            signature("12345678", &heartbeat, br#"{"clientID":"c1"}"#),
            "QR9hAD56dIUZLomQ+TNsim3F/8M="
        );
        let minimal = ext(&[("AccessKey", "ak"), ("topic", "T")]);
        assert_eq!(
            signature("sk", &minimal, b""),
            "vX6jW2Q9g11lvMjNC+gReuZ8fTQ="
        );
    }

    #[test]
    fn sign_adds_the_keys_and_an_old_signature_is_not_signed() {
        let credentials = Credentials {
            access_key: "rocketmq2".into(),
            secret_key: "12345678".into(),
            security_token: None,
        };
        let mut req = RemotingCommand::request(request::GET_ROUTEINFO_BY_TOPIC);
        req.ext_fields = ext(&[("topic", "TopicTest"), ("Signature", "stale")]);
        sign(&mut req, &credentials);
        assert_eq!(req.ext(ACCESS_KEY), Some("rocketmq2"));
        assert_eq!(req.ext(SIGNATURE), Some("GeeGoP9mRvDhoVp4PD5omX0prgE="));
        // A token is signed too: it sorts between AccessKey and topic.
        let mut req = RemotingCommand::request(request::GET_ROUTEINFO_BY_TOPIC);
        req.ext_fields = ext(&[("topic", "T")]);
        sign(
            &mut req,
            &Credentials {
                security_token: Some("tok".into()),
                ..credentials
            },
        );
        let expected = signature(
            "12345678",
            &ext(&[
                ("AccessKey", "rocketmq2"),
                ("SecurityToken", "tok"),
                ("topic", "T"),
            ]),
            b"",
        );
        assert_eq!(req.ext(SIGNATURE), Some(expected.as_str()));
    }

    #[test]
    fn keys_order_as_java_treemap_uppercase_first() {
        let a = ext(&[("a", "1"), ("B", "2")]);
        let b_then_a = {
            let mut mac = Hmac::<Sha1>::new_from_slice(b"k").unwrap();
            mac.update(b"21");
            base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
        };
        assert_eq!(signature("k", &a, b""), b_then_a);
    }
}
