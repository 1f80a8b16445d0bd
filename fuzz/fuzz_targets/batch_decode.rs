//! The SEND_BATCH_MESSAGE body decoder on arbitrary bytes: never panics, and a body it accepts
//! re-encodes to entries that decode the same.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use ringmq::protocol::message::{decode_batch, encode_batch, MessageLimits};

fuzz_target!(|data: &[u8]| {
    let limits = MessageLimits::default();
    let Ok(entries) = decode_batch(Bytes::copy_from_slice(data), &limits) else {
        return;
    };
    let mut again = BytesMut::new();
    encode_batch(&entries, &mut again).expect("decoded entries fit the format");
    assert_eq!(
        decode_batch(again.freeze(), &limits).expect("re-decodes"),
        entries
    );
});
