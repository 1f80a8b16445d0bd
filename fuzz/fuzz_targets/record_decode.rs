//! The stored-record decoder on arbitrary bytes: never panics, and a record it accepts (with a
//! correct body CRC and the magic the encoder would choose) re-encodes to the same bytes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use ringmq::protocol::message::record::{self, RecordView};
use ringmq::protocol::message::{record_parts, split_records};

fuzz_target!(|data: &[u8]| {
    let bytes = Bytes::copy_from_slice(data);
    for view in split_records(bytes.clone()).flatten() {
        assert!(view.as_bytes().len() <= data.len());
    }
    let Ok(view) = RecordView::parse(bytes.clone()) else {
        return;
    };
    let long_topic = view.topic().len() > record::TOPIC_V1_BYTES_MAX;
    if !view.body_crc_ok() || (view.magic() == record::MAGIC_V2) != long_topic {
        return;
    }
    let (message, store) = record_parts(&view);
    assert_eq!(
        record::encode(&message, &store).expect("limits hold"),
        bytes
    );
});
