//! Helpers shared by the `protocol_*` tests: reading the test vectors kept in `tests/vectors/`.

use std::path::PathBuf;

fn vector_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors")
        .join(name)
}

/// The text of a vector file.
pub fn vector_text(name: &str) -> String {
    std::fs::read_to_string(vector_path(name)).expect("vector file")
}

/// The bytes of a hex-dump vector (`offset  16 hex bytes  ascii` per line), checking that each
/// line's offset matches the bytes read so far, so a mistyped dump fails loudly.
#[allow(dead_code)] // each test binary uses its own subset of these helpers
pub fn vector_bytes(name: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    for line in vector_text(name).lines().filter(|l| !l.trim().is_empty()) {
        let (offset, rest) = line.split_once("  ").expect("offset column");
        assert_eq!(
            usize::from_str_radix(offset, 16).unwrap(),
            bytes.len(),
            "{line}"
        );
        // The hex column ends at the first double space (the ASCII column follows).
        let hex = rest.split("  ").next().unwrap();
        bytes.extend(
            hex.split(' ')
                .map(|h| u8::from_str_radix(h, 16).expect(line)),
        );
    }
    bytes
}

/// A frame around a JSON header text and a body, built by hand (not by the codec under test).
#[allow(dead_code)]
pub fn json_frame(header: &str, body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend(((4 + header.len() + body.len()) as u32).to_be_bytes());
    frame.extend((header.len() as u32).to_be_bytes()); // type byte 0 = JSON
    frame.extend(header.as_bytes());
    frame.extend(body);
    frame
}

/// The raw bytes of a binary vector file.
#[allow(dead_code)]
pub fn vector_raw(name: &str) -> Vec<u8> {
    std::fs::read(vector_path(name)).expect("vector file")
}
