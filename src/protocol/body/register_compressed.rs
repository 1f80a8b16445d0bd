//! The compressed form of `RegisterBrokerBody` (header `compressed=true`; REMOTING.md §4.8):
//! a zlib stream of length-prefixed sections,
//! `[i32 len][DataVersion JSON] [i32 n]{[i32 len][TopicConfig text]}ⁿ [i32 len][filter server
//! list JSON]` and, from brokers of version 5.0.0 on,
//! `[i32 m]{[i32 len][TopicQueueMappingInfo JSON]}ᵐ`.
//! A topic config's text is `name read write perm filterType attributesJSON`, space-separated.
//! Java brokers set `compressed=false` even when they compress, but a NameServer must still
//! read the form when a broker sends it.

use super::register::{RegisterBrokerBody, TopicConfig, TopicFilterType};
use crate::protocol::fastjson::{self, FastjsonError};
use serde_json::Value;

/// Inflated size a compressed body may reach. A broker with 100k topics sends ~25 MB of JSON;
/// the bound stops a small hostile body from inflating without end.
pub const INFLATED_BODY_BYTES_MAX: usize = 64 << 20;

/// The first broker version (`MQVersion.V5_0_0`) whose compressed body carries the mapping section.
const MAPPING_SECTION_SINCE_VERSION: i32 = 413;

/// Java's `Deflater.BEST_COMPRESSION`.
const COMPRESSION_LEVEL: u8 = 9;

#[derive(Debug, thiserror::Error)]
pub enum CompressedBodyError {
    #[error("not a zlib stream, or inflates beyond {INFLATED_BODY_BYTES_MAX} bytes")]
    Inflate,
    #[error("compressed body ends inside {0}")]
    Truncated(&'static str),
    #[error("negative length or count in {0}")]
    NegativeLength(&'static str),
    #[error("topic config text {0:?} is not `name read write perm filterType [attributes]`")]
    TopicConfig(String),
    #[error(transparent)]
    Json(#[from] FastjsonError),
}

/// Reads a compressed register body sent by a broker of `broker_version`.
pub fn decode_compressed(
    body: &[u8],
    broker_version: i32,
) -> Result<RegisterBrokerBody, CompressedBodyError> {
    let inflated =
        miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(body, INFLATED_BODY_BYTES_MAX)
            .map_err(|_| CompressedBodyError::Inflate)?;
    let mut sections = Sections { bytes: &inflated };
    let mut out = RegisterBrokerBody::default();
    let wrapper = &mut out.topic_config_serialize_wrapper;
    wrapper.data_version = fastjson::from_slice(sections.chunk("dataVersion")?)?;
    for _ in 0..sections.count("topic config count")? {
        let text = String::from_utf8_lossy(sections.chunk("topic config")?).into_owned();
        let config = decode_topic_config(&text)?;
        wrapper
            .topic_config_table
            .insert(config.topic_name.clone(), config);
    }
    out.filter_server_list = fastjson::from_slice(sections.chunk("filter server list")?)?;
    if broker_version >= MAPPING_SECTION_SINCE_VERSION {
        for _ in 0..sections.count("mapping count")? {
            let info: Value = fastjson::parse(sections.chunk("topic queue mapping")?)?;
            let topic = info
                .get("topic")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            wrapper.topic_queue_mapping_info_map.insert(topic, info);
        }
    }
    Ok(out)
}

/// Writes `body` in the compressed form (what a Java broker with `compressedRegister=true` sends).
pub fn encode_compressed(body: &RegisterBrokerBody) -> Result<Vec<u8>, FastjsonError> {
    let wrapper = &body.topic_config_serialize_wrapper;
    let mut plain = Vec::new();
    put_chunk(&mut plain, &super::encode(&wrapper.data_version)?);
    put_i32(&mut plain, wrapper.topic_config_table.len());
    for config in wrapper.topic_config_table.values() {
        put_chunk(&mut plain, encode_topic_config(config)?.as_bytes());
    }
    put_chunk(&mut plain, &super::encode(&body.filter_server_list)?);
    put_i32(&mut plain, wrapper.topic_queue_mapping_info_map.len());
    for info in wrapper.topic_queue_mapping_info_map.values() {
        put_chunk(&mut plain, &super::encode(info)?);
    }
    Ok(miniz_oxide::deflate::compress_to_vec_zlib(
        &plain,
        COMPRESSION_LEVEL,
    ))
}

struct Sections<'a> {
    bytes: &'a [u8],
}

impl<'a> Sections<'a> {
    fn count(&mut self, what: &'static str) -> Result<usize, CompressedBodyError> {
        let (head, rest) = self
            .bytes
            .split_first_chunk::<4>()
            .ok_or(CompressedBodyError::Truncated(what))?;
        self.bytes = rest;
        usize::try_from(i32::from_be_bytes(*head))
            .map_err(|_| CompressedBodyError::NegativeLength(what))
    }

    fn chunk(&mut self, what: &'static str) -> Result<&'a [u8], CompressedBodyError> {
        let len = self.count(what)?;
        if len > self.bytes.len() {
            return Err(CompressedBodyError::Truncated(what));
        }
        let (chunk, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(chunk)
    }
}

fn put_i32(out: &mut Vec<u8>, value: usize) {
    out.extend_from_slice(&(value as i32).to_be_bytes());
}

fn put_chunk(out: &mut Vec<u8>, chunk: &[u8]) {
    put_i32(out, chunk.len());
    out.extend_from_slice(chunk);
}

/// `TopicConfig.decode`: as in Java, attributes that fail to parse (their JSON may hold spaces,
/// which the split cuts) are ignored.
fn decode_topic_config(text: &str) -> Result<TopicConfig, CompressedBodyError> {
    let bad = || CompressedBodyError::TopicConfig(text.to_owned());
    let parts: Vec<&str> = text.split(' ').collect();
    let [name, read, write, perm, filter, rest @ ..] = parts.as_slice() else {
        return Err(bad());
    };
    let topic_filter_type = match *filter {
        "SINGLE_TAG" => TopicFilterType::SingleTag,
        "MULTI_TAG" => TopicFilterType::MultiTag,
        _ => return Err(bad()),
    };
    Ok(TopicConfig {
        topic_name: (*name).to_owned(),
        read_queue_nums: read.parse().map_err(|_| bad())?,
        write_queue_nums: write.parse().map_err(|_| bad())?,
        perm: perm.parse().map_err(|_| bad())?,
        topic_filter_type,
        attributes: rest
            .first()
            .and_then(|json| fastjson::from_slice(json.as_bytes()).ok())
            .unwrap_or_default(),
        ..TopicConfig::default()
    })
}

/// `TopicConfig.encode`.
fn encode_topic_config(config: &TopicConfig) -> Result<String, FastjsonError> {
    let filter = match config.topic_filter_type {
        TopicFilterType::SingleTag => "SINGLE_TAG",
        TopicFilterType::MultiTag => "MULTI_TAG",
    };
    let attributes = String::from_utf8_lossy(&super::encode(&config.attributes)?).into_owned();
    Ok(format!(
        "{} {} {} {} {filter} {attributes}",
        config.topic_name, config.read_queue_nums, config.write_queue_nums, config.perm
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::{DataVersion, TopicConfigSerializeWrapper};

    fn sample() -> RegisterBrokerBody {
        let mut t1 = TopicConfig::new("T1", 4);
        t1.attributes
            .insert("+message.type".into(), "NORMAL".into());
        let mut t2 = TopicConfig::new("T2", 2);
        t2.perm = 7;
        t2.topic_filter_type = TopicFilterType::MultiTag;
        RegisterBrokerBody {
            filter_server_list: vec![],
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                data_version: DataVersion {
                    counter: 3,
                    state_version: 1,
                    timestamp: 1_700_000_000_000,
                },
                topic_config_table: [("T1".to_string(), t1), ("T2".to_string(), t2)].into(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn round_trips_the_compressed_form() {
        let body = sample();
        let compressed = encode_compressed(&body).unwrap();
        assert_eq!(decode_compressed(&compressed, 479).unwrap(), body);
        // A 4.x broker's body has no mapping section; reading it as 4.x ignores the trailing count.
        assert_eq!(decode_compressed(&compressed, 409).unwrap(), body);
    }

    #[test]
    fn topic_config_text_matches_java() {
        let text =
            encode_topic_config(&sample().topic_config_serialize_wrapper.topic_config_table["T2"])
                .unwrap();
        assert_eq!(text, "T2 2 2 7 MULTI_TAG {}");
        assert!(matches!(
            decode_topic_config("T2 2 2"),
            Err(CompressedBodyError::TopicConfig(_))
        ));
        assert!(matches!(
            decode_topic_config("T2 2 2 x SINGLE_TAG"),
            Err(CompressedBodyError::TopicConfig(_))
        ));
        assert!(matches!(
            decode_topic_config("T2 2 2 6 ODD_TAG"),
            Err(CompressedBodyError::TopicConfig(_))
        ));
        // Attributes with a space are cut by the split and ignored, as in Java.
        let config = decode_topic_config(r#"T 1 1 6 SINGLE_TAG {"a":"x y"}"#).unwrap();
        assert!(config.attributes.is_empty());
    }

    #[test]
    fn rejects_garbage_truncation_and_bombs_with_typed_errors() {
        assert!(matches!(
            decode_compressed(b"not zlib", 479),
            Err(CompressedBodyError::Inflate)
        ));
        let truncated = miniz_oxide::deflate::compress_to_vec_zlib(&[0, 0, 0, 50, b'{'], 6);
        assert!(matches!(
            decode_compressed(&truncated, 479),
            Err(CompressedBodyError::Truncated("dataVersion"))
        ));
        let negative = miniz_oxide::deflate::compress_to_vec_zlib(&[0xFF, 0xFF, 0xFF, 0xFF], 6);
        assert!(matches!(
            decode_compressed(&negative, 479),
            Err(CompressedBodyError::NegativeLength(_))
        ));
        let bomb =
            miniz_oxide::deflate::compress_to_vec_zlib(&vec![0u8; INFLATED_BODY_BYTES_MAX + 1], 1);
        assert!(matches!(
            decode_compressed(&bomb, 479),
            Err(CompressedBodyError::Inflate)
        ));
    }
}
