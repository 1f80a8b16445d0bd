//! `RemotingCommand`: one request or response of the remoting protocol, independent of how its
//! header was serialized on the wire (REMOTING.md §1.3). Framing lives in `frame.rs`.

use bytes::Bytes;

pub use super::ext_fields::{ExtFields, Text};
use super::header::{CommandHeader, HeaderError};

/// ExtFields from literal pairs (tests, hand-built requests).
pub fn ext_fields(pairs: &[(&str, &str)]) -> ExtFields {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

/// The `version` this side puts in what it sends: `MQVersion.V5_3_3`. Clients gate features on
/// the broker's version (SQL92 pulls need ≥ 232), so it must look like a modern broker.
pub const CURRENT_VERSION: i32 = 479;

/// Flag bit 0: the command is a response.
pub const FLAG_RESPONSE: i32 = 1;
/// Flag bit 1: the requester expects no response.
pub const FLAG_ONEWAY: i32 = 2;

/// How a command's header is serialized; the high byte of the frame's header-length word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SerializeType {
    Json = 0,
    RocketMq = 1,
}

impl SerializeType {
    /// The serialize type for a frame's type byte, `None` when RocketMQ defines none.
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Self::Json),
            1 => Some(Self::RocketMq),
            _ => None,
        }
    }
}

/// The sender's language (REMOTING.md §1.7); only informative, never acted on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LanguageCode {
    Java,
    Cpp,
    Dotnet,
    Python,
    Delphi,
    Erlang,
    Ruby,
    Other,
    Http,
    Go,
    Php,
    Oms,
    Rust,
    NodeJs,
}

/// Every language with its wire byte and JSON name, in wire-byte order.
const LANGUAGES: [(LanguageCode, &str); 14] = [
    (LanguageCode::Java, "JAVA"),
    (LanguageCode::Cpp, "CPP"),
    (LanguageCode::Dotnet, "DOTNET"),
    (LanguageCode::Python, "PYTHON"),
    (LanguageCode::Delphi, "DELPHI"),
    (LanguageCode::Erlang, "ERLANG"),
    (LanguageCode::Ruby, "RUBY"),
    (LanguageCode::Other, "OTHER"),
    (LanguageCode::Http, "HTTP"),
    (LanguageCode::Go, "GO"),
    (LanguageCode::Php, "PHP"),
    (LanguageCode::Oms, "OMS"),
    (LanguageCode::Rust, "RUST"),
    (LanguageCode::NodeJs, "NODE_JS"),
];

impl LanguageCode {
    /// The byte of the binary header.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The enum name of the JSON header.
    pub fn name(self) -> &'static str {
        LANGUAGES[self as usize].1
    }

    /// The language for a binary-header byte; an unknown byte is `Other` (the sender's language
    /// changes nothing, so a newer client must not be refused for it).
    pub fn from_code(code: u8) -> Self {
        LANGUAGES
            .get(code as usize)
            .map_or(Self::Other, |(lang, _)| *lang)
    }

    /// The language for a JSON-header name; an unknown name is `Other`.
    pub fn from_name(name: &str) -> Self {
        LANGUAGES
            .iter()
            .find(|(_, n)| *n == name)
            .map_or(Self::Other, |(lang, _)| *lang)
    }
}

/// One request or response.
#[derive(Clone, Debug, PartialEq)]
pub struct RemotingCommand {
    /// Request code (`codes::request`) or response code (`codes::response`).
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    /// Request id chosen by the requester; a response carries its request's opaque.
    pub opaque: i32,
    /// `FLAG_RESPONSE` | `FLAG_ONEWAY` bits.
    pub flag: i32,
    pub remark: Option<String>,
    pub ext_fields: ExtFields,
    /// How the header is (to be) serialized on the wire.
    pub serialize_type: SerializeType,
    pub body: Bytes,
}

impl RemotingCommand {
    /// A new request: language JAVA (old clients only know the Java peers' values), version
    /// `CURRENT_VERSION`, JSON header. The requester sets `opaque`.
    pub fn request(code: i32) -> Self {
        Self {
            code,
            language: LanguageCode::Java,
            version: CURRENT_VERSION,
            opaque: 0,
            flag: 0,
            remark: None,
            ext_fields: ExtFields::new(),
            serialize_type: SerializeType::Json,
            body: Bytes::new(),
        }
    }

    /// Marks a request as oneway: the peer will not answer it.
    pub fn oneway(mut self) -> Self {
        self.flag |= FLAG_ONEWAY;
        self
    }

    /// The response to `request`: echoes its opaque (clients match responses by it), sets the
    /// response flag (without it the peer would take the frame for a new request) and uses the
    /// request's serialize type, which every client decodes.
    pub fn response_to(request: &RemotingCommand, code: i32, remark: Option<String>) -> Self {
        Self {
            code,
            opaque: request.opaque,
            flag: FLAG_RESPONSE,
            remark,
            serialize_type: request.serialize_type,
            ..Self::request(code)
        }
    }

    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Adds the fields of a typed header to `ext_fields`.
    pub fn with_header<H: CommandHeader>(mut self, header: &H) -> Self {
        header.encode(&mut self.ext_fields);
        self
    }

    /// Reads a typed header out of `ext_fields`. An error here is the request's fault, not
    /// the connection's: answer it with SYSTEM_ERROR and the error text as remark.
    pub fn decode_header<H: CommandHeader>(&self) -> Result<H, HeaderError> {
        H::decode(&self.ext_fields)
    }

    pub fn ext(&self, key: &str) -> Option<&str> {
        self.ext_fields.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::codes::{request, response};

    #[test]
    fn language_codes_and_names_agree_with_the_java_enum() {
        assert_eq!(LanguageCode::from_code(9), LanguageCode::Go);
        assert_eq!(LanguageCode::from_code(13), LanguageCode::NodeJs);
        assert_eq!(LanguageCode::from_code(200), LanguageCode::Other);
        assert_eq!(LanguageCode::from_name("CPP"), LanguageCode::Cpp);
        assert_eq!(LanguageCode::from_name("COBOL"), LanguageCode::Other);
        for (i, (lang, name)) in LANGUAGES.iter().enumerate() {
            assert_eq!(lang.code() as usize, i);
            assert_eq!(lang.name(), *name);
        }
    }

    #[test]
    fn response_echoes_opaque_sets_flag_and_mirrors_serialize_type() {
        let mut req = RemotingCommand::request(request::HEART_BEAT).oneway();
        req.opaque = 77;
        req.serialize_type = SerializeType::RocketMq;
        assert!(req.is_oneway() && !req.is_response());

        let resp = RemotingCommand::response_to(&req, response::SUCCESS, None);
        assert_eq!(resp.opaque, 77);
        assert!(resp.is_response() && !resp.is_oneway());
        assert_eq!(resp.serialize_type, SerializeType::RocketMq);
        assert_eq!(resp.version, CURRENT_VERSION);
        assert_eq!(resp.language, LanguageCode::Java);
    }
}
