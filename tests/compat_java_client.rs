//! The official Java client, rocketmq-client 4.9.8, against a real `ringmq standalone` with 2
//! shards, one broker per test:
//! - sync, async, oneway and batch sends consumed intact by a clustering push consumer with a
//!   tag subscription, then found by offsetMsgId, key and msgId; the same over the VIP channel;
//! - messages and consumer offsets across a clean restart (SIGTERM) and a crash (SIGKILL after
//!   SEND_OK under SYNC_FLUSH);
//! - two consumers of a group splitting the queues, one taking over when the other stops;
//! - an orderly consumer (queue locks) getting each order in sequence; a lite pull consumer
//!   polling, committing and seeking; broadcasting consumers each getting every message;
//! - RECONSUME_LATER redelivered through the retry topic after its delay; a message failed
//!   past maxReconsumeTimes consumed from the DLQ; a level 2 message 5 ± 1 s after its send;
//!   delayed messages pending across a restart; orderly consumers keeping each key's order
//!   while a third joins and leaves; SUSPEND_CURRENT_QUEUE_A_MOMENT retrying in place, then
//!   the client's own send putting the message in the DLQ;
//! - on a topic whose first segments retention removed, a lagging group moved to the min
//!   (OFFSET_TOO_SMALL) and new groups with each CONSUME_FROM_* getting what Apache gives;
//! - transactional messages delivered only when committed: the compatibility matrix's
//!   `transaction` scenario (MatrixDriver), run here as the matrix runs it;
//!
//! and rocketmq-client 5.3.3 with tests/java-client/src-5.x, the API 4.9.8 lacks: 5.x timer
//! messages at a 100 ms timerPrecisionMs (delivery error printed with --nocapture) and pending
//! over a SIGKILL. The rest of the transactions (a kill between half and commit) and timers at
//! the default precision are scenarios of the compatibility matrix only (tests/matrix:
//! `transaction-crash`, `timer`), with both clients and the Go, C++ and Rust ones.
//!
//! The checks are in tests/java-client (built by its build.sh), one scenario per subcommand of
//! RingmqCompat or phase of MatrixDriver; tests/java-client/compat-against-apache.sh runs the
//! compat scenarios against Apache RocketMQ (the timer ones with APACHE=5.3.3), `matrix.py
//! --against` the matrix's. Needs Java 17+ and Maven with rocketmq-client 4.9.8 and 5.3.3 in
//! the local repository (offline: scripts/fetch-deps.sh), so these are ignored by default:
//! `cargo test -p ringmq --test compat_java_client -- --ignored --test-threads=1`.

mod broker_support;

use broker_support::process_support::{run_with_limit, TempDir};
use broker_support::Standalone;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One scenario run: a JVM, clients converging in about a second, a few hundred messages;
/// it bounds its own waits, this catches a JVM that hangs regardless.
const JAVA_RUN_TIME_MAX: Duration = Duration::from_secs(300);

/// Shards of the broker under test: queues of one topic live on both, so sends, pulls and
/// offsets cross the shard router.
const SHARDS: usize = 2;

/// The broker name `ringmq standalone` registers by default (MATRIX_BROKER_NAME).
const BROKER_NAME: &str = "broker-a";

/// Queues of a matrix scenario's topic (tests/matrix/README.md: 4 read, 4 write).
const MATRIX_QUEUES: u32 = 4;

/// transactionCheckMax of the transaction test's broker, told to the scenario as
/// MATRIX_TRANSACTION_CHECK_MAX: the matrix's (tests/matrix/broker.py TRANSACTION_CHECK).
const TRANSACTION_CHECK_MAX: &str = "15";

/// `--flush-disk-type SYNC_FLUSH`: SEND_OK only once the message is on disk.
const SYNC_FLUSH: &[&str] = &["--flush-disk-type", "SYNC_FLUSH"];

/// Which official client a scenario runs with.
#[derive(Clone, Copy)]
enum Client {
    /// rocketmq-client 4.9.8: tests/java-client/src, main class RingmqCompat.
    V4,
    /// rocketmq-client 5.3.3: tests/java-client/src and src-5.x (the 5.x-only API), main class
    /// RingmqCompat5 (which runs src's scenarios too).
    V5,
}

impl Client {
    /// The client version tests/java-client/build.sh builds against.
    fn version(self) -> &'static str {
        match self {
            Client::V4 => "4.9.8",
            Client::V5 => "5.3.3",
        }
    }

    fn main_class(self) -> &'static str {
        match self {
            Client::V4 => "RingmqCompat",
            Client::V5 => "RingmqCompat5",
        }
    }
}

/// The Java scenarios built once per test (tests/java-client/build.sh), with the client's
/// classpath.
struct JavaScenarios {
    classpath: String,
    main_class: &'static str,
    work: TempDir,
}

impl JavaScenarios {
    fn compile(client: Client) -> Self {
        let work = TempDir::new("compat-java");
        let build = work.path().join("build");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/java-client/build.sh");
        let status = Command::new("bash")
            .arg(&script)
            .args(["--offline", client.version()])
            .arg(&build)
            .status()
            .expect("run tests/java-client/build.sh");
        assert!(
            status.success(),
            "{} {} failed",
            script.display(),
            client.version()
        );
        let client_classpath =
            std::fs::read_to_string(build.join("classpath")).expect("classpath built");
        JavaScenarios {
            classpath: format!("{}:{client_classpath}", build.join("classes").display()),
            main_class: client.main_class(),
            work,
        }
    }

    /// `java` with the client's classpath, logs in the work directory and a rebalance every
    /// second instead of every 20 s.
    fn java(&self) -> Command {
        let mut java = Command::new("java");
        java.arg("-Xmx256m")
            .arg("-Drocketmq.client.rebalance.waitInterval=1000")
            .arg(format!(
                "-Drocketmq.client.logRoot={}",
                self.work.path().join("client-logs").display()
            ))
            .arg("-cp")
            .arg(&self.classpath);
        java
    }

    /// Runs `scenario` against `broker`'s NameServer; fails the test unless every check held.
    fn run(&self, scenario: &str, broker: &Standalone, names: &RunNames, extra: &[&str]) {
        let mut java = self.java();
        java.arg(self.main_class)
            .arg(scenario)
            .args(["--namesrv", &broker.namesrv_addr])
            .args(["--topic", &names.topic, "--group", &names.group])
            .args(extra);
        let (status, output) = run_with_limit(java, JAVA_RUN_TIME_MAX);
        assert!(
            status.is_some_and(|status| status.success()) && output.contains("ALL CHECKS PASSED"),
            "{scenario} against ringmq standalone failed:\n{output}"
        );
        // what the scenario measured (e.g. timers' delivery error), shown with --nocapture
        for line in output.lines().filter(|line| line.starts_with("info ")) {
            println!("{scenario}: {line}");
        }
    }

    /// Runs phase `phase` of the compatibility matrix's Java driver (MatrixDriver,
    /// tests/matrix/README.md) against `broker`, with the environment the matrix gives a phase
    /// and `env` besides; fails the test unless the phase ends with `RESULT PASS`.
    fn run_matrix_phase(
        &self,
        phase: &str,
        broker: &Standalone,
        names: &RunNames,
        env: &[(&str, &str)],
    ) {
        let state = self.work.path().join("matrix-state");
        std::fs::create_dir_all(&state).expect("create the phase's state directory");
        let mut java = self.java();
        java.arg(format!(
            "-Drocketmq.client.localOffsetStoreDir={}",
            state.join("client-offsets").display()
        ))
        .args(["MatrixDriver", phase])
        .env("MATRIX_NAMESRV", &broker.namesrv_addr)
        .env("MATRIX_BROKER_NAME", BROKER_NAME)
        .env("MATRIX_TOPIC", &names.topic)
        .env("MATRIX_GROUP", &names.group)
        .env("MATRIX_GROUP2", format!("{}_2", names.group))
        .env("MATRIX_STATE", &state)
        .envs(env.iter().copied());
        let (status, output) = run_with_limit(java, JAVA_RUN_TIME_MAX);
        let passed = output.lines().any(|line| line.starts_with("RESULT PASS"));
        assert!(
            status.is_some_and(|status| status.success()) && passed,
            "matrix phase {phase} against ringmq standalone failed:\n{output}"
        );
    }

    fn state_file(&self) -> String {
        self.work.path().join("restart.state").display().to_string()
    }
}

/// A topic and group no other run uses, so runs never see each other's messages or offsets.
struct RunNames {
    topic: String,
    group: String,
}

impl RunNames {
    fn new(scenario: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock after 1970")
            .as_nanos();
        let unique = format!("{scenario}_{}_{nanos}", std::process::id());
        RunNames {
            topic: format!("CompatTopic_{unique}"),
            group: format!("CompatGroup_{unique}"),
        }
    }
}

/// Creates `topic` with [`MATRIX_QUEUES`] queues on `broker`, as the matrix does for each of
/// its scenarios (`ringmq admin updateTopic`, answered once the NameServer has the route).
fn create_topic(broker: &Standalone, topic: &str) {
    let queues = MATRIX_QUEUES.to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_ringmq"))
        .args(["admin", "updateTopic", "-b", &broker.broker_addr])
        .args(["-n", &broker.namesrv_addr, "-t", topic])
        .args(["-r", &queues, "-w", &queues])
        .output()
        .expect("run ringmq admin");
    assert!(
        output.status.success(),
        "updateTopic {topic} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs `scenario` against a `ringmq standalone` of its own, with a topic and group of its own.
fn scenario_on_a_fresh_broker(scenario: &str, extra: &[&str]) {
    scenario_with(Client::V4, scenario, extra);
}

/// As [`scenario_on_a_fresh_broker`], with `client`.
fn scenario_with(client: Client, scenario: &str, extra: &[&str]) {
    let java = JavaScenarios::compile(client);
    let broker = Standalone::start(SHARDS);
    java.run(scenario, &broker, &RunNames::new(scenario), extra);
}

/// Phase 1 (sends, consumes, sends more), the broker stopped by `stop`, started again on the
/// same data, phase 2 (same queues, offsets and messages).
fn restart_scenario(args: &[&str], stop: impl FnOnce(&mut Standalone), crash: bool) {
    let phases = Phases {
        names: RunNames::new(if crash { "crash" } else { "restart" }),
        first: "restart-phase1",
        second: "restart-phase2",
        second_extra: if crash { &["--crash"] } else { &[] },
        client: Client::V4,
    };
    phases.run_around_a_restart(args, stop);
}

/// A scenario in two phases with the broker restarted between them; they share a state file.
struct Phases {
    names: RunNames,
    first: &'static str,
    second: &'static str,
    second_extra: &'static [&'static str],
    client: Client,
}

impl Phases {
    fn run_around_a_restart(self, args: &[&str], stop: impl FnOnce(&mut Standalone)) {
        let java = JavaScenarios::compile(self.client);
        let mut broker = Standalone::start_with(SHARDS, args);
        let state = java.state_file();
        java.run(self.first, &broker, &self.names, &["--state", &state]);
        stop(&mut broker);
        broker.start_again();
        let mut second = vec!["--state", state.as_str()];
        second.extend_from_slice(self.second_extra);
        java.run(self.second, &broker, &self.names, &second);
    }
}

/// SIGTERM, which must be a clean stop.
fn clean_stop(broker: &mut Standalone) {
    let status = broker.stop();
    assert!(status.success(), "SIGTERM is a clean stop, got {status}");
}

#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn sync_async_oneway_and_batch_sends_reach_a_tag_subscribed_push_consumer_intact() {
    scenario_on_a_fresh_broker("produce-consume", &[]);
}

#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn messages_and_consumer_offsets_survive_a_clean_restart() {
    restart_scenario(&[], clean_stop, false);
}

#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn messages_acknowledged_under_sync_flush_survive_a_kill() {
    restart_scenario(SYNC_FLUSH, Standalone::kill, true);
}

#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn clients_with_the_vip_channel_send_and_consume_on_the_port_below() {
    scenario_on_a_fresh_broker("produce-consume", &["--vip"]);
}

/// RECONSUME_LATER: the message comes back through `%RETRY%group` at delay level 3 (10 s).
#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn reconsume_later_redelivers_through_the_retry_topic_after_the_delay() {
    scenario_on_a_fresh_broker("retry", &[]);
}

/// maxReconsumeTimes 1: the second failure lands in `%DLQ%group`, consumed and queried intact.
#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn a_message_failed_past_max_reconsume_times_is_consumed_from_the_dlq() {
    scenario_on_a_fresh_broker("dlq", &[]);
}

/// setDelayTimeLevel(2): delivered 5 ± 1 s after the send returned.
#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn a_level_2_message_arrives_five_seconds_after_its_send() {
    scenario_on_a_fresh_broker("delay-level", &[]);
}

/// Level 4 (30 s) messages pending across a clean restart are delivered after it, once each.
#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn delayed_messages_pending_at_a_restart_are_delivered_after_it() {
    let phases = Phases {
        names: RunNames::new("delay_restart"),
        first: "delay-restart-phase1",
        second: "delay-restart-phase2",
        second_extra: &[],
        client: Client::V4,
    };
    phases.run_around_a_restart(&[], clean_stop);
}

/// 5.x timers (rocketmq-client 5.3.3) with timerPrecisionMs 100: 1 s and 5 s ones due at the
/// end of a 100 ms slot (the delivery error is printed), ones an hour ahead held. At the
/// default precision the matrix's `timer` scenario checks them (tests/matrix).
#[test]
#[ignore = "needs java and rocketmq-client 5.3.3 in ~/.m2; run with --ignored"]
fn timer_messages_at_100_ms_precision_arrive_within_it() {
    let dir = TempDir::new("compat-timer-conf");
    let conf = dir.path().join("broker.conf");
    std::fs::write(&conf, "timerPrecisionMs=100\n").expect("write broker.conf");
    let java = JavaScenarios::compile(Client::V5);
    let broker = Standalone::start_with(SHARDS, &["-c", &conf.display().to_string()]);
    let names = RunNames::new("timer_100ms");
    java.run("timer", &broker, &names, &["--precision-ms", "100"]);
}

/// 20 s timers pending over a SIGKILL (SYNC_FLUSH) are delivered after the restart, once,
/// not before their time; the far one stays held.
#[test]
#[ignore = "needs java and rocketmq-client 5.3.3 in ~/.m2; run with --ignored"]
fn timer_messages_pending_at_a_kill_are_delivered_after_the_restart() {
    let phases = Phases {
        names: RunNames::new("timer_restart"),
        first: "timer-restart-phase1",
        second: "timer-restart-phase2",
        second_extra: &[],
        client: Client::V5,
    };
    phases.run_around_a_restart(SYNC_FLUSH, Standalone::kill);
}

/// The matrix's `transaction` scenario with the 4.9.8 client: half messages held until
/// END_TRANSACTION. Committed at the send or by the check-back (after UNKNOWN), each is
/// consumed once, intact, with the producer's msgId, none before its first check; rolled back
/// at the send or by the check-back, none ever; never answered, checked exactly 1..15 times,
/// then in TRANS_CHECK_MAX_TIME_TOPIC once; the topic's queues hold the committed ones only.
/// A broker delivering halves before their decision fails it: rolled-back ones delivered,
/// committed ones twice or before their check, and (halves not held are never checked) the
/// check-back's waits run out.
#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn transactional_messages_reach_consumers_only_when_committed() {
    let dir = TempDir::new("compat-txn-conf");
    let conf = dir.path().join("broker.conf");
    // the matrix's check-back: the first check 1 s after a half was stored, a round a second
    let text = format!(
        "transactionTimeOut=1000\ntransactionCheckInterval=1000\n\
         transactionCheckMax={TRANSACTION_CHECK_MAX}\n"
    );
    std::fs::write(&conf, text).expect("write broker.conf");
    let java = JavaScenarios::compile(Client::V4);
    let broker = Standalone::start_with(SHARDS, &["-c", &conf.display().to_string()]);
    let names = RunNames::new("transaction");
    create_topic(&broker, &names.topic);
    let env = [("MATRIX_TRANSACTION_CHECK_MAX", TRANSACTION_CHECK_MAX)];
    java.run_matrix_phase("transaction", &broker, &names, &env);
}

#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn broadcasting_consumers_of_one_group_each_get_every_message() {
    scenario_on_a_fresh_broker("broadcast", &[]);
}

#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn an_orderly_consumer_locks_its_queues_and_gets_each_order_in_sequence() {
    scenario_on_a_fresh_broker("orderly", &[]);
}

/// SUSPEND_CURRENT_QUEUE_A_MOMENT: the queue waits, the message comes again, past the
/// maximum the client's own send puts it in `%DLQ%group`.
#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn an_orderly_consumer_suspending_a_message_retries_it_in_place_then_dead_letters_it() {
    scenario_on_a_fresh_broker("orderly-suspend", &[]);
}

/// 1 000 messages over 10 keys, two orderly consumers, a third joining then leaving.
#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn orderly_consumers_keep_each_keys_order_while_a_third_joins_and_leaves() {
    scenario_on_a_fresh_broker("orderly-rebalance", &[]);
}

#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn a_lite_pull_consumer_polls_commits_and_seeks() {
    scenario_on_a_fresh_broker("lite-pull", &[]);
}

#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn two_consumers_split_the_queues_and_one_takes_over_when_the_other_stops() {
    scenario_on_a_fresh_broker("rebalance", &[]);
}

/// Commit-log segment size of the retention scenario's broker (broker.conf and the scenario
/// agree on it; compat-against-apache.sh gives Apache the same).
const RETENTION_SEGMENT_BYTES: &str = "131072";

/// A topic whose first segments were removed: new groups with CONSUME_FROM_FIRST_OFFSET,
/// _LAST_OFFSET and _TIMESTAMP, and a group whose committed offset fell below the min offset
/// (PULL_OFFSET_MOVED), each consume what they would on Apache RocketMQ.
#[test]
#[ignore = "needs java and rocketmq-client 4.9.8 in ~/.m2; run with --ignored"]
fn consume_from_and_offset_moved_on_a_topic_whose_first_segments_were_removed() {
    let java = JavaScenarios::compile(Client::V4);
    let conf = TempDir::new("retention-conf");
    let path = conf.path().join("broker.conf");
    let text = format!(
        "mappedFileSizeCommitLog={RETENTION_SEGMENT_BYTES}\nfileReservedTime=0\n\
         cleanResourceInterval=1000\n"
    );
    std::fs::write(&path, text).expect("write broker.conf");
    let broker = Standalone::start_with(SHARDS, &["-c", path.to_str().expect("UTF-8 path")]);
    let names = RunNames::new("retention");
    java.run(
        "retention",
        &broker,
        &names,
        &["--segment-bytes", RETENTION_SEGMENT_BYTES],
    );
}
