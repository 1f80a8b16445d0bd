//! extFields values as the JSON decoder takes them: borrowed where it can, escapes resolved
//! as JSON defines them, and bad escapes refused rather than guessed.

use super::*;

fn ext_of(header: &str) -> Result<ExtFields, FrameError> {
    decode(Bytes::copy_from_slice(header.as_bytes()), Bytes::new()).map(|cmd| cmd.ext_fields)
}

#[test]
fn escaped_values_resolve_to_their_text_and_long_plain_ones_point_into_the_header() {
    let header = Bytes::from_static(
        br#"{"code":310,"extFields":{"i":"TAGS\u0001a\u0002KEYS\u0001k \"q\" \\ \/ \n\t\u00e9\ud83d\ude00\u0002","b":"TopicTest-named-longer-than-an-inline-text","c":"TBW102"}}"#,
    );
    let ext = decode(header.clone(), Bytes::new()).unwrap().ext_fields;
    assert_eq!(
        ext.get("i"),
        Some("TAGS\u{1}a\u{2}KEYS\u{1}k \"q\" \\ / \n\té\u{1F600}\u{2}")
    );
    let topic = ext.get("b").unwrap();
    assert!(header.as_ptr_range().contains(&topic.as_ptr()), "no copy");
    // A short one is copied inline (no count on the header's buffer).
    let short = ext.get("c").unwrap();
    assert_eq!(short, "TBW102");
    assert!(!header.as_ptr_range().contains(&short.as_ptr()));
}

#[test]
fn numbers_booleans_and_nested_values_become_their_json_text_and_null_is_absent() {
    let ext = ext_of(
        r#"{"code":1,"extFields":{"q":1,"n":-7,"b":true,"f":1.50,"o":{"a": [1, 2]},"z":null}}"#,
    )
    .unwrap();
    assert_eq!(ext.get("q"), Some("1"));
    assert_eq!(ext.get("n"), Some("-7"));
    assert_eq!(ext.get("b"), Some("true"));
    assert_eq!(ext.get("f"), Some("1.5"));
    assert_eq!(ext.get("o"), Some(r#"{"a":[1,2]}"#));
    assert!(!ext.contains_key("z"));
}

#[test]
fn a_lone_surrogate_is_refused() {
    for bad in [r#"\ud83d"#, r#"\ud83dx"#, r#"\ud83d\u0041"#] {
        let header = format!(r#"{{"code":1,"extFields":{{"k":"a{bad}"}}}}"#);
        assert!(ext_of(&header).is_err(), "{bad}");
    }
}

#[test]
fn unescape_handles_every_json_escape() {
    assert_eq!(
        unescape(r#"\"\\\/\b\f\n\r\t\u0041"#).as_deref(),
        Some("\"\\/\u{8}\u{c}\n\r\tA")
    );
    assert_eq!(unescape("plain").as_deref(), Some("plain"));
    assert_eq!(unescape(r#"\x"#), None);
    assert_eq!(unescape(r#"\u12"#), None);
}
