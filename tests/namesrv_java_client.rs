//! Apache RocketMQ's own Java classes (rocketmq-client 5.3.3) against the real `ringmq
//! namesrv`: broker registration built by the Java body/header classes in both header
//! serializations, then routes and cluster info read by `DefaultMQProducer` and
//! `MQClientAPIImpl` (see tests/namesrv_java/NamesrvCompat.java for the checks).
//!
//! Needs Java 17+ and Maven with rocketmq-client 5.3.3 in the local repository (offline), so
//! it is ignored by default: `cargo test -p ringmq --test namesrv_java_client -- --ignored`.

mod namesrv_support;

use namesrv_support::*;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The Java program starts a JVM and a producer; it finishes in seconds when all is well.
const JAVA_RUN_TIME_MAX: Duration = Duration::from_secs(120);

fn java_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/namesrv_java")
}

#[test]
#[ignore = "needs java and rocketmq-client 5.3.3 in ~/.m2; run with --ignored"]
fn the_official_java_client_registers_and_reads_routes() {
    let ns = NameServerProcess::start(None);
    let mut java = Command::new("java")
        .arg("-cp")
        .arg(maven_classpath("namesrv_java"))
        .arg(java_dir().join("NamesrvCompat.java"))
        .arg(&ns.addr)
        .stdout(Stdio::piped())
        .spawn()
        .expect("run java");
    let stdout = java.stdout.take().unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let output = std::io::read_to_string(stdout).unwrap_or_default();
        let _ = done_tx.send(output);
    });
    let output = done_rx.recv_timeout(JAVA_RUN_TIME_MAX);
    let _ = java.kill();
    let status = java.wait().expect("java exit status");
    let output = output.expect("java finished in time");
    println!("{output}");
    assert!(
        status.success() && output.contains("ALL CHECKS PASSED"),
        "{output}"
    );
}
