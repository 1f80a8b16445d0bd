//! Codec throughput, measured, not asserted (ignored by default; run in release):
//! `cargo test --release -p ringmq --test protocol_codec_throughput -- --ignored --nocapture`.
//! Each loop runs a fixed count; results are checked so the work cannot be optimised away.

mod protocol_support;

use std::hint::black_box;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use protocol_support::vector_bytes;
use ringmq::protocol::command::{RemotingCommand, SerializeType};
use ringmq::protocol::frame::{decode_frame, encode_frame};
use ringmq::protocol::header::{SendMessageRequestHeader, SendMessageResponseHeader};
use ringmq::protocol::message::record::RecordView;
use ringmq::protocol::message::{decode_batch, encode_batch, BatchEntry, MessageLimits};

/// Iterations per measurement: enough for a stable rate, bounded so a run takes seconds.
const ITERATIONS: u32 = 200_000;

fn measure(what: &str, bytes_per_op: usize, mut op: impl FnMut() -> usize) {
    let start = Instant::now();
    let mut checksum = 0usize;
    for _ in 0..ITERATIONS {
        checksum = checksum.wrapping_add(op());
    }
    let secs = start.elapsed().as_secs_f64();
    let per_sec = f64::from(ITERATIONS) / secs;
    println!(
        "{what:<44} {:>9.0} ops/s {:>8.1} MiB/s {:>6.2} µs/op",
        per_sec,
        per_sec * bytes_per_op as f64 / f64::from(1 << 20),
        1e6 / per_sec
    );
    assert!(black_box(checksum) > 0);
}

#[test]
#[ignore = "a measurement; run in release with --ignored --nocapture"]
fn codec_throughput() {
    let v1 = vector_bytes("v1_send_message_v2_request.hex");
    measure("decode V1 JSON send request (267 B)", v1.len(), || {
        decode_frame(&v1).unwrap().unwrap().1
    });
    let (request, _) = decode_frame(&v1).unwrap().unwrap();
    measure("decode V1 + typed send header", v1.len(), || {
        let (cmd, n) = decode_frame(&v1).unwrap().unwrap();
        SendMessageRequestHeader::decode_from(&cmd)
            .unwrap()
            .queue_id as usize
            + n
    });

    let mut binary = request.clone();
    binary.serialize_type = SerializeType::RocketMq;
    let mut v1_binary = BytesMut::new();
    encode_frame(&binary, &mut v1_binary);
    measure(
        "decode V1 as binary header (ROCKETMQ)",
        v1_binary.len(),
        || decode_frame(&v1_binary).unwrap().unwrap().1,
    );

    for st in [SerializeType::Json, SerializeType::RocketMq] {
        let mut req = request.clone();
        req.serialize_type = st;
        let response =
            RemotingCommand::response_to(&req, 0, None).with_header(&SendMessageResponseHeader {
                msg_id: "7F00000100002A9F0000000000000000".into(),
                queue_id: 0,
                queue_offset: 12345,
                transaction_id: Some("C0A80002123400000000000000000001".into()),
                msg_region: Some("DefaultRegion".into()),
                trace_on: Some("true".into()),
                ..Default::default()
            });
        let mut out = BytesMut::with_capacity(1 << 20);
        let len = {
            encode_frame(&response, &mut out);
            out.len()
        };
        measure(
            &format!("encode send response ({st:?}, {len} B)"),
            len,
            || {
                out.clear();
                encode_frame(&response, &mut out);
                out.len()
            },
        );
    }

    let record = Bytes::from(vector_bytes("v4_stored_record.hex"));
    measure("parse V4 stored record (115 B)", record.len(), || {
        RecordView::parse(record.clone()).unwrap().total_size() as usize
    });

    let entries: Vec<BatchEntry> = (0..32)
        .map(|i| BatchEntry {
            flag: i,
            body: Bytes::from(vec![b'x'; 1024]),
            properties: Bytes::from_static(
                b"UNIQ_KEY\x01C0A80002123400000000000000000001\x02WAIT\x01true\x02",
            ),
        })
        .collect();
    let mut batch = BytesMut::new();
    encode_batch(&entries, &mut batch).unwrap();
    let batch = batch.freeze();
    measure("decode batch body (32 x 1 KiB)", batch.len(), || {
        decode_batch(batch.clone(), &MessageLimits::default())
            .unwrap()
            .len()
    });
}
