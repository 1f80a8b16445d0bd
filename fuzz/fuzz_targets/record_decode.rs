//! The stored-record decoder on arbitrary bytes: never panics, and a record it accepts (with a
//! correct body CRC and the magic the encoder would choose) re-encodes to the same bytes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use ringmq::protocol::message::record::{self, Message, RecordView, StoreFields};
use ringmq::protocol::message::split_records;

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
    let message = Message {
        topic: view.topic().to_owned(),
        queue_id: view.queue_id(),
        flag: view.flag(),
        sys_flag: view.sys_flag(),
        born_timestamp_ms: view.born_timestamp_ms(),
        born_host: view.born_host(),
        reconsume_times: view.reconsume_times(),
        prepared_transaction_offset: view.prepared_transaction_offset(),
        body: view.body(),
        properties: Bytes::copy_from_slice(view.properties().as_bytes()),
    };
    let store = StoreFields {
        queue_offset: view.queue_offset(),
        physical_offset: view.physical_offset(),
        store_timestamp_ms: view.store_timestamp_ms(),
        store_host: view.store_host(),
    };
    assert_eq!(record::encode(&message, &store).expect("limits hold"), bytes);
});
